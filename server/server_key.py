"""The server's own key, which signs what an export says of a pre-registered study's conduct
(game/export_signature.py): made once, kept in Redis (every web process and `exag export` read the same), and
written to DATA_DIR/server.key (readable by its owner only) so that an export file can be verified later:
`exag analyze --data EXPORT --server-key data/server/server.key`."""
from __future__ import annotations

import os
import secrets
from pathlib import Path

REDIS_KEY = "exag:server-key"
FILE_NAME = "server.key"


def server_key(redis) -> bytes:
    """The key kept in Redis (the first process to ask makes it)."""
    redis.set(REDIS_KEY, secrets.token_hex(32), nx=True)
    value = redis.get(REDIS_KEY)
    return (value.decode() if isinstance(value, bytes) else value).encode()


def write_key_file(data_dir: Path, key: bytes) -> Path:
    """DATA_DIR/server.key with the key, mode 0600, unless it holds it already."""
    path = Path(data_dir) / FILE_NAME
    if path.is_file() and path.read_bytes().strip() == key:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as f:
        f.write(key + b"\n")
    return path


def read_key_file(path: Path) -> bytes:
    """The key in a server.key file (or the file in a server data directory). ValueError when there is none."""
    path = Path(path)
    if path.is_dir():
        path = path / FILE_NAME
    if not path.is_file():
        raise ValueError(f"no server key at {path}: pass the server's DATA_DIR/server.key")
    key = path.read_bytes().strip()
    if not key:
        raise ValueError(f"{path} is empty: pass the server's DATA_DIR/server.key")
    return key
