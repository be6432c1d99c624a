"""How the attention kind's masks and grids travel to a player's page: run lengths and percent grids
packed as text (frontend/js/explanations/rle.js and attention.js unpack them). Lossless for the masks;
the grid is already at display precision (whole percent) when it is packed."""
from __future__ import annotations

import base64
import functools

import numpy as np

DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"   # base64url: nothing to escape in JSON
DIGIT_BITS, MORE = 5, 32  # each digit carries 5 bits of a number; MORE marks "another digit follows"
PACKED_MASKS = 8192      # masks whose packed text is remembered (~1,500 pool images x ~5 proposals)
_DIGIT_BYTES = np.frombuffer(DIGITS.encode("ascii"), dtype=np.uint8)


def pack_counts(counts: list[int]) -> str:
    """See _pack_counts; a mask is the same whatever the question, so its text is remembered (by its counts)."""
    return _pack_counts(tuple(counts))


@functools.lru_cache(maxsize=PACKED_MASKS)
def _pack_counts(counts: tuple[int, ...]) -> str:
    """Run lengths as text (frontend/js/explanations/rle.js unpacks): each count minus the count two
    before it (the same boundary one row up, so mostly small), zigzag-signed, written 5 bits a digit
    (least significant first, MORE set on all but the last). Lossless. Vectorised: a 20-image round
    packs ~40,000 counts."""
    counts = np.asarray(counts, dtype=np.int64)
    if not counts.size:
        return ""
    before = np.concatenate([np.zeros(min(2, counts.size), np.int64), counts[:-2]])
    delta = counts - before
    value = np.where(delta >= 0, 2 * delta, -2 * delta - 1)
    n_digits = np.ones(value.size, np.int64)
    rest = value >> DIGIT_BITS
    while rest.any():
        n_digits += rest > 0
        rest >>= DIGIT_BITS
    owner = np.repeat(np.arange(value.size), n_digits)                       # the value each digit writes
    place = np.arange(owner.size) - np.repeat(np.cumsum(n_digits) - n_digits, n_digits)   # its place in it
    digits = (value[owner] >> (DIGIT_BITS * place)) & (MORE - 1)
    digits |= np.where(place < n_digits[owner] - 1, MORE, 0)
    return _DIGIT_BYTES[digits].tobytes().decode("ascii")


def unpack_counts(text: str) -> list[int]:
    """The inverse of pack_counts."""
    counts, value, shift = [], 0, 0
    for char in text:
        digit = DIGITS.index(char)
        value |= (digit & (MORE - 1)) << shift
        shift += DIGIT_BITS
        if not digit & MORE:
            delta = value >> 1 if not value & 1 else -((value + 1) >> 1)
            counts.append(delta + (counts[-2] if len(counts) >= 2 else 0))
            value, shift = 0, 0
    return counts


def pack_grid(percent) -> dict:
    """A grid of whole percents (0-100) as {"rows", "cols", "percent": base64 of one byte a cell, row-major}."""
    percent = np.asarray(percent, dtype=np.uint8)
    rows, cols = (percent.shape if percent.ndim == 2 else (len(percent), 0))
    data = bytes(percent.ravel()) if rows and cols else b""
    return {"rows": rows, "cols": cols, "percent": base64.b64encode(data).decode("ascii")}


def unpack_grid(grid: dict) -> list[list[float]]:
    """The grid's cells as shares (0-1, 2 decimals), as the page reads them."""
    data = base64.b64decode(grid["percent"])
    return [[data[r * grid["cols"] + c] / 100 for c in range(grid["cols"])] for r in range(grid["rows"])]
