"""What a player's page is sent of an explanation: the fields its renderer shows (frontend/js/explanations/),
at the precision it shows them, and nothing else.

The explainers' payloads carry the agent's outputs at full precision; the event log keeps them so. Sent
as they are, they would let a participant who replays the public agent checkpoint on the shown images
match the exact floats of the "about the secret image" payloads and find the secret (Issue 10). So
every payload is projected here, in one place, per `kind`:

- attention: the heatmap grid as shares of its largest cell in whole percent (the heatmap draws
  value / max), packed as one byte a cell in base64 (`pack_grid`); object boxes in whole pixels, object
  weights in whole percent (labels use percent()); masks exact (their outlines are drawn) but packed:
  run lengths as delta-coded variable-length digits in a URL-safe base64 alphabet (`pack_counts`, 3-4x
  smaller than the JSON list);
- words (ObjScene): word, p(word | image) in whole percent, the relevance score to 3 significant digits
  (the tooltip's toPrecision(3)); no distances, anchor or basis;
- qa_pairs (RelQA): question, answer, the agent's confidence in whole percent (the tooltip); no distances;
- text (NLE, introspect): the sentence only.

A kind the page has no renderer for is sent with an empty payload. A new renderer that shows more gets
its projection here (and docs/protocol.md says what each kind carries).
"""
from __future__ import annotations

import base64
import functools
import math

import numpy as np

PERCENT_DECIMALS = 2     # a share shown as a whole percent (frontend/js/dom.js percent()) needs 2 decimals
SCORE_DIGITS = 3         # significant digits of ObjScene's score in the words renderer's tooltip
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


def share(value) -> float | None:
    """A probability or weight at whole-percent precision."""
    return round(float(value), PERCENT_DECIMALS) if _finite(value) else None


def significant(value, digits: int = SCORE_DIGITS) -> float | None:
    return float(f"{float(value):.{digits}g}") if _finite(value) else None


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _attention(payload: dict) -> dict:
    grid = np.array(payload.get("grid") or [], dtype=float)        # a non-finite cell arrives as None: nan
    grid[~np.isfinite(grid)] = np.nan
    largest = np.nanmax(grid) if grid.size and not np.isnan(grid).all() else 0.0
    percent = np.zeros(grid.shape, np.uint8) if not largest > 0 else \
        np.rint(100 * np.nan_to_num(np.maximum(grid, 0.0)) / largest).astype(np.uint8)
    objects = [{"box": [int(round(v)) for v in o["box"]], "weight": share(o["weight"]),
                "mask": {"size": list(o["mask"]["size"]), "rle": pack_counts(o["mask"]["counts"])}}
               for o in payload.get("objects", [])]
    return {"grid": pack_grid(percent), "objects": objects}


def _words(payload: dict) -> dict:
    return {"words": [{"word": w["word"], "probability": share(w["probability"]), "score": significant(w["score"])}
                      for w in payload.get("words", [])]}


def _qa_pairs(payload: dict) -> dict:
    return {"pairs": [{"question": p["question"], "answer": p["answer"], "probability": share(p["probability"])}
                      for p in payload.get("pairs", [])]}


def _text(payload: dict) -> dict:
    return {"text": payload.get("text", "")}


PROJECTIONS = {"attention": _attention, "words": _words, "qa_pairs": _qa_pairs, "text": _text}


def for_player(explanation) -> dict:
    """An Explanation as the player's page receives it."""
    project = PROJECTIONS.get(explanation.kind)
    return {"explainer": explanation.explainer, "kind": explanation.kind,
            "payload": project(explanation.payload) if project else {}}
