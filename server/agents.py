"""The agents a server's games are played with, as a web process knows them (it loads none: the inference
workers do, server/worker.py): the server's own (ServerConfig.agent), and any agent a study names
(StudyConfig.agent: a shipped name or a checkpoint directory), checked to exist on first use. A round names
its study's agent; a worker loads it on first use, with its own explainers.

A participant can replay a public checkpoint on the images they are shown (README, "Threat model"); a
paid study that must rule that out names a private checkpoint, and its rounds are answered by it.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import threading
from pathlib import Path

from explainers import EXPLAINER_NAMES

from .rounds import RoundQueue

log = logging.getLogger(__name__)
CHECKPOINT_DIR = Path(__file__).resolve().parent.parent / "vqa_agent" / "checkpoints"   # shipped agents
DEFAULT_AGENT = "medium"                                                              # what "default" means
CHECKPOINT_FILES = ("config.json", "vocabulary.json", "model.safetensors")


class AgentUnavailable(ValueError):
    """A study's agent could not be loaded; the text says why."""


def agent_key(name: str | Path) -> str:
    """One key per agent however it is named: a checkpoint directory by its resolved path, else the name."""
    name = str(name)
    path = Path(name)
    return str(path.resolve()) if name and path.exists() else name


def checkpoint_dir(name: str | Path) -> Path:
    """The agent's checkpoint directory, by the rules of vqa_agent.agent.resolve_agent_path (without
    importing torch): a directory with config.json, or a shipped agent's name ("default" = DEFAULT_AGENT)."""
    path = Path(name)
    if (path / "config.json").exists():
        return path
    shipped = CHECKPOINT_DIR / (DEFAULT_AGENT if str(name) == "default" else str(name))
    if (shipped / "config.json").exists():
        return shipped
    raise FileNotFoundError(f"no agent at {str(name)!r}: not a directory with config.json, nor a shipped agent")


def is_shipped(name: str | Path) -> bool:
    """Whether the agent is one of the shipped (public) checkpoints, whose replay the threat model warns of."""
    try:
        return checkpoint_dir(name).resolve().is_relative_to(CHECKPOINT_DIR.resolve())
    except FileNotFoundError:
        return False


def checkpoint_fingerprint(name: str | Path) -> str:
    """A short hash of the checkpoint's files (configuration, vocabulary, weights)."""
    path = checkpoint_dir(name).resolve()
    stamps = tuple((f, (path / f).stat().st_mtime_ns, (path / f).stat().st_size) for f in CHECKPOINT_FILES)
    return _fingerprint(path, stamps)


@functools.lru_cache(maxsize=32)
def _fingerprint(path: Path, stamps: tuple) -> str:
    digest = hashlib.blake2b(digest_size=8)
    for name, _, _ in stamps:
        digest.update(name.encode())
        digest.update((path / name).read_bytes())
    return digest.hexdigest()


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
        self._server_key = agent_key(server_agent)
        self._handles: dict[str, AgentHandle] = {}
        self._lock = threading.Lock()

    def worker(self, name: str = "") -> AgentHandle:
        """The agent `name` ("" = the server's); AgentUnavailable when it has no checkpoint here."""
        key = agent_key(name) if name else self._server_key
        if key == self._server_key:
            return self.server_worker
        with self._lock:
            if key not in self._handles:
                try:
                    for file in CHECKPOINT_FILES:
                        if not (checkpoint_dir(name) / file).exists():
                            raise FileNotFoundError(f"the checkpoint has no {file}")
                except OSError as error:   # a missing checkpoint: tried again next time
                    log.warning("agent %r could not be loaded: %s", name, error)
                    raise AgentUnavailable(f"the agent {name!r} could not be loaded on this server: "
                                           f"{type(error).__name__}: {error}"[:500]) from error
                self._handles[key] = AgentHandle(name, self.queue)
            return self._handles[key]

    @property
    def workers(self) -> list[AgentHandle]:
        return [self.server_worker, *self._handles.values()]

    def close(self) -> None:
        pass
