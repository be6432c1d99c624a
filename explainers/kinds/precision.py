"""The precision at which a player's page is sent numbers: what its renderers print, and no more (a
payload at full precision would let a program that replays the public agent match the exact floats of
the explanations "about the secret image" and find it; Issue 10)."""
from __future__ import annotations

import math

PERCENT_DECIMALS = 2     # a share shown as a whole percent (frontend/js/dom.js percent()) needs 2 decimals
SCORE_DIGITS = 3         # significant digits of ObjScene's score in the words renderer's tooltip


def share(value) -> float | None:
    """A probability or weight at whole-percent precision."""
    return round(float(value), PERCENT_DECIMALS) if finite(value) else None


def significant(value, digits: int = SCORE_DIGITS) -> float | None:
    return float(f"{float(value):.{digits}g}") if finite(value) else None


def finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
