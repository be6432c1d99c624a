"""The agents a server's games are played with: the server's own (ServerConfig.agent), and any agent a
study names (StudyConfig.agent: a shipped name or a checkpoint directory on the server), each loaded once,
on first use, with its own inference worker and explainers.

A participant can replay a public checkpoint on the images they are shown (README, "Threat model"); a
paid study that must rule that out names a private checkpoint, and its rounds are answered by it.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Callable

from .inference import InferenceWorker

log = logging.getLogger(__name__)


class AgentUnavailable(ValueError):
    """A study's agent could not be loaded; the text says why."""


def agent_key(name: str | Path) -> str:
    """One key per agent however it is named: a checkpoint directory by its resolved path, else the name."""
    name = str(name)
    path = Path(name)
    return str(path.resolve()) if name and path.exists() else name


class Agents:
    def __init__(self, server_agent: str | Path, server_worker: InferenceWorker,
                 load: Callable[[str], InferenceWorker]) -> None:
        """load(name) -> a started InferenceWorker for that agent; it raises when the agent cannot be loaded."""
        self.server_worker = server_worker
        self._server_key = agent_key(server_agent)
        self._load = load
        self._workers: dict[str, InferenceWorker] = {}
        self._lock = threading.Lock()

    def worker(self, name: str = "") -> InferenceWorker:
        """The worker of the agent `name` ("" = the server's), loading it on first use."""
        key = agent_key(name) if name else self._server_key
        if key == self._server_key:
            return self.server_worker
        worker = self._workers.get(key)
        if worker is not None:
            return worker
        with self._lock:            # one load per agent, however many joins ask for it at once
            if key not in self._workers:
                try:
                    self._workers[key] = self._load(name)
                except Exception as error:   # a missing or broken checkpoint: tried again next time
                    log.warning("agent %r could not be loaded: %s", name, error)
                    raise AgentUnavailable(f"the agent {name!r} could not be loaded on this server: "
                                           f"{type(error).__name__}: {error}"[:500]) from error
                log.info("agent %r loaded with its own inference worker", name)
            return self._workers[key]

    @property
    def workers(self) -> list[InferenceWorker]:
        return [self.server_worker, *self._workers.values()]

    def close(self) -> None:
        with self._lock:
            for worker in self.workers:
                worker.close()
