"""JSON text as the server stores, queues and sends it, by orjson. py-spy of a web process under 200 players
found a quarter of its Python time in the standard library's json (participants and games read and written,
each state sent), and a tenth of a worker's (each result written); orjson encodes 7x and decodes 3x faster.

The text is what `json.dumps(value, separators=(",", ":"))` writes, except that non-ASCII characters are
UTF-8 rather than \\u escapes and NaN and infinities are null (the page's JSON.parse could not read them).
Both fall back to the standard library for what orjson refuses: a lone surrogate (a player may type one; it
is written \ud800 as before), NaN in text written before.
"""
from __future__ import annotations

import json
from typing import Any, Callable

import orjson


def dumps(value: Any, default: Callable[[Any], Any] | None = None) -> str:
    """Compact JSON text; dataclasses as their fields, non-string keys as strings (as json.dumps does)."""
    try:
        return orjson.dumps(value, default=default, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:      # what orjson refuses (a lone surrogate, an integer past 64 bits)
        return json.dumps(value, separators=(",", ":"), default=default)


def loads(text: str | bytes) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)
