"""The agents a server's games are played with, as a web process knows them (it loads none: the inference
workers do, server/worker.py): the server's own (ServerConfig.agent), and any agent a study names
(StudyConfig.agent: a shipped name or a checkpoint directory), checked to exist on first use. A round names
its study's agent; a worker loads it on first use, with its own explainers.

An agent is proven before players meet it (`prove_agent`): a worker loads it and answers one warm-up
question on the pool's first images, through the same streams as a game's rounds. The admin form proves a
study's agent before it creates the study, `exag serve` the server's and every study file's before it says
ready; a broken agent refuses the study with the worker's reason.

A participant can replay a public checkpoint on the images they are shown (docs/threat-model.md); a
paid study that must rule that out names a private checkpoint, and its rounds are answered by it.
"""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from explainers import EXPLAINER_NAMES
from game.study import missing_checkpoint

from .rounds import RoundError, RoundQueue, RoundTimeout, warmup_job

log = logging.getLogger(__name__)


WARMUP_TIMEOUT_S = 120.0     # a cold load of a study's agent on a busy worker (a transformers model: ~10-30 s)


class AgentUnavailable(ValueError):
    """A study's agent could not be loaded; the text says why."""


def prove_agent(queue: RoundQueue, agent: str, timeout_s: float = WARMUP_TIMEOUT_S) -> float:
    """Seconds until a worker answered one warm-up question with `agent` ("" = the server's), loading it
    first if it must; AgentUnavailable with the worker's reason (or none answering) when it did not."""
    started = time.monotonic()
    job = warmup_job(agent)
    named = f"the agent {agent!r}" if agent else "the server's agent"
    try:
        queue.submit(job, timeout_s=timeout_s)
    except RoundTimeout:
        raise AgentUnavailable(f"no inference worker answered a warm-up question of {named} within {timeout_s:.0f} s "
                               "(are workers running? `exag worker`, docs/operations.md)") from None
    except RoundError as error:
        raise AgentUnavailable(f"{named} could not answer a warm-up question on this server: "
                               f"{getattr(error, 'why', error)}"[:500]) from None
    return time.monotonic() - started


def agent_key(name: str | Path) -> str:
    """One key per agent however it is named: a checkpoint directory by its resolved path, else the name."""
    name = str(name)
    path = Path(name)
    return str(path.resolve()) if name and path.exists() else name


class AgentHandle:
    """An agent as the web process sees it: its name (what rounds carry) and the explainers the workers
    that loaded it could not load (published by the workers; until one has, every explainer counts)."""

    def __init__(self, name: str, queue: RoundQueue) -> None:
        self.name, self._queue = name, queue

    @property
    def unavailable(self) -> dict[str, str]:
        return self._queue.unavailable(self.name)

    @property
    def explainers(self) -> list[str]:
        missing = self.unavailable
        return [n for n in EXPLAINER_NAMES if n not in missing]


class Agents:
    def __init__(self, server_agent: str | Path, queue: RoundQueue) -> None:
        self.queue = queue
        self.server_worker = AgentHandle("", queue)
        self.server_agent, self._server_key = str(server_agent), agent_key(server_agent)
        self._handles: dict[str, AgentHandle] = {}
        self._proven: set[str] = set()
        self._lock = threading.Lock()

    def worker(self, name: str = "") -> AgentHandle:
        """The agent `name` ("" = the server's); AgentUnavailable when it has no checkpoint here."""
        key = agent_key(name) if name else self._server_key
        if key == self._server_key:
            return self.server_worker
        with self._lock:
            if key not in self._handles:
                why = missing_checkpoint(name)
                if why:                    # a missing checkpoint: tried again next time
                    log.warning("agent %r could not be loaded: %s", name, why)
                    raise AgentUnavailable(f"the agent {name!r} could not be loaded on this server: {why}"[:500])
                self._handles[key] = AgentHandle(name, self.queue)
            return self._handles[key]

    def prove(self, name: str = "", timeout_s: float = WARMUP_TIMEOUT_S) -> None:
        """The agent `name` answered a warm-up question on a worker (once per web process); AgentUnavailable
        says why not."""
        handle = self.worker(name)
        if handle.name not in self._proven:
            prove_agent(self.queue, handle.name, timeout_s)
            self._proven.add(handle.name)

    def starting(self, name: str = "") -> bool:
        """Whether no live worker has answered a warm-up question with the agent `name` yet, so a question
        for it waits in the queue (what workers published, read at most once a second: RoundQueue.published)."""
        return self.readiness([name])[name] == "starting"

    def all_warm(self) -> bool:
        """Whether every agent this process has met is warm on a live worker (no Redis read: what workers
        published, cached): the common case, in which no question needs its study looked up."""
        warm = self._warm_names()
        return all(handle.name in warm for handle in self.workers)

    def _warm_names(self) -> set[str]:
        return {name for worker in self.queue.published().values()
                for name, agent in worker.get("agents", {}).items() if agent.get("warm")}

    def readiness(self, names: list[str]) -> dict[str, str]:
        """Of the server's agent ("") and each of `names`: "ready" once a live worker answered a warm-up
        question with it, "starting" until then, "unavailable" when it has no checkpoint here."""
        warm = self._warm_names()
        found = {}
        for name in ["", *names]:
            try:
                found[name] = "ready" if self.worker(name).name in warm else "starting"
            except AgentUnavailable:
                found[name] = "unavailable"
        return found

    @property
    def workers(self) -> list[AgentHandle]:
        with self._lock:          # another thread may be adding one
            return [self.server_worker, *self._handles.values()]

    def close(self) -> None:
        pass
