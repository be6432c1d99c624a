"""Where an agent's checkpoint is, and a short hash of it, without importing torch: the web process (which
checks a study's agent and keys the pool's embeddings by it), the world builder and the agent itself look
checkpoints up here.

    path = resolve_agent_path("default")        # a shipped agent by name, or a directory with config.json
    key = checkpoint_fingerprint("default")     # changes whenever the checkpoint's files do
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path

CHECKPOINT_DIR = Path(__file__).resolve().parent / "checkpoints"   # agents shipped with the package, by name
DEFAULT_AGENT = "medium"                                           # what "default" means
CHECKPOINT_FILES = ("config.json", "vocabulary.json", "model.safetensors")


def resolve_agent_path(name_or_path) -> Path:
    """A directory holding an agent, or the name of a shipped agent ("default" or a preset)."""
    path = Path(name_or_path)
    if (path / "config.json").exists():
        return path
    name = DEFAULT_AGENT if str(name_or_path) == "default" else str(name_or_path)
    shipped = CHECKPOINT_DIR / name
    if (shipped / "config.json").exists():
        return shipped
    available = sorted(p.name for p in CHECKPOINT_DIR.glob("*") if (p / "config.json").exists())
    raise FileNotFoundError(f"no agent at {name_or_path!r}: not a directory with config.json, nor a shipped agent "
                            f"(shipped: {', '.join(['default'] + available) if available else 'none yet'})")


def is_shipped(name: str | Path) -> bool:
    """Whether the agent is one of the shipped (public) checkpoints, whose replay the threat model warns of."""
    try:
        return resolve_agent_path(name).resolve().is_relative_to(CHECKPOINT_DIR)
    except FileNotFoundError:
        return False


def checkpoint_fingerprint(name: str | Path) -> str:
    """A short hash of the checkpoint's files (configuration, vocabulary, weights)."""
    path = resolve_agent_path(name).resolve()
    stamps = tuple((f, (path / f).stat().st_mtime_ns, (path / f).stat().st_size) for f in CHECKPOINT_FILES)
    return _fingerprint(path, stamps)


@functools.lru_cache(maxsize=32)
def _fingerprint(path: Path, stamps: tuple) -> str:
    # keyed by the files' times and sizes too, so a checkpoint rewritten in place is hashed again
    digest = hashlib.blake2b(digest_size=8)
    for name, _, _ in stamps:
        digest.update(name.encode())
        digest.update((path / name).read_bytes())
    return digest.hexdigest()
