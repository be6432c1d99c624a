"""The server's signature over what an export says of a pre-registered study's conduct: its registration's hash,
every look at its outcomes and what the server ran it with. Without it, emptying an export's `looks` cell hid an
early look, and editing `ran_with` hid another agent, pool, plugin or code version.

    row["signature"] = sign(key, row)          # game/export.py, on a server (it holds the key)
    why = failure(key, row)                    # experiments/analysis/preregistered.py: None when it verifies

The key is the server's own (`server_key`: made once and kept in its Redis, which every web process and `exag
export` read, and written to DATA_DIR/server.key, readable by its owner only, for analysing an export file: `exag
analyze --server-key data/server/server.key`). An HMAC-SHA256: anyone with the key can sign, so the key stays
with whoever runs the server, never in an export.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

SIGNED = ("study", "preregistration_sha256", "looks", "ran_with")     # the cells of the studies row it covers
REDIS_KEY, FILE_NAME = "exag:server-key", "server.key"


def server_key(redis) -> bytes:
    """The server's key, kept in its Redis (the first process to ask makes it)."""
    redis.set(REDIS_KEY, secrets.token_hex(32), nx=True)
    value = redis.get(REDIS_KEY)
    return (value.decode() if isinstance(value, bytes) else value).encode()


def write_key_file(data_dir: Path, key: bytes) -> Path:
    """DATA_DIR/server.key with the key, mode 0600, unless it holds it already."""
    path = Path(data_dir) / FILE_NAME
    if not (path.is_file() and path.read_bytes().strip() == key):
        path.parent.mkdir(parents=True, exist_ok=True)
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
            f.write(key + b"\n")
    return path


def read_key_file(path: Path) -> bytes:
    """The key in a server.key file (or the one in a server data directory). ValueError when there is none."""
    path = Path(path) / FILE_NAME if Path(path).is_dir() else Path(path)
    key = path.read_bytes().strip() if path.is_file() else b""
    if not key:
        raise ValueError(f"no server key at {path}: pass the server's DATA_DIR/server.key")
    return key


def _cells(row: dict) -> bytes:
    def parsed(value):
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                return value
        return None if value is None or value != value else value     # NaN (an empty CSV cell) is no value

    return json.dumps({k: parsed(row.get(k)) if k in ("looks", "ran_with") else row.get(k) for k in SIGNED},
                      sort_keys=True, ensure_ascii=False).encode("utf-8")


def sign(key: bytes, row: dict) -> str:
    return hmac.new(key, b"exag-export:" + _cells(row), hashlib.sha256).hexdigest()


def failure(key: bytes | None, row: dict) -> str | None:
    """Why a registered study's row does not carry the server's signature over SIGNED, or None."""
    signature = row.get("signature")
    if not isinstance(signature, str) or not signature:
        return ("its looks at outcomes and what it ran with are not signed by the server (an export made without "
                "the server, or the signature removed)")
    if key is None:
        return ("its looks at outcomes and what it ran with are signed, and cannot be verified without the server's "
                "key: pass --server-key (the server's DATA_DIR/server.key), or analyse on the server (--data "
                "data/server or --redis-url)")
    if not hmac.compare_digest(signature, sign(key, row)):
        return ("its looks at outcomes or what it ran with differ from what the server signed (a look removed or "
                "edited, or ran_with edited)")
    return None
