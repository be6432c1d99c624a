"""Checks of a payload's fields, for the kinds' `check` (what a kind's renderer and projection rely on):
each raises ValueError naming the field, what it must be and what it was, so that a third-party
explainer's author reads what to fix."""
from __future__ import annotations

from .precision import finite


class PayloadError(ValueError):
    """A payload that breaks its kind's contract; the text names the field."""


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def need(condition: bool, where: str, what: str, value) -> None:
    if not condition:
        raise PayloadError(f"payload{where} must be {what}, got {_shown(value)}")


def field(payload: dict, where: str, key: str):
    need(isinstance(payload, dict), where, "an object", payload)
    if key not in payload:
        raise PayloadError(f"payload{where} has no {key!r}")
    return payload[key]


def text(value, where: str) -> str:
    need(isinstance(value, str), where, "a string", value)
    return value


def number(value, where: str, low: float | None = None, high: float | None = None) -> float:
    need(finite(value), where, "a finite number", value)
    if low is not None and high is not None:
        need(low <= value <= high, where, f"a number in [{low}, {high}]", value)
    elif low is not None:
        need(low <= value, where, f"a number >= {low}", value)
    return value


def items(value, where: str) -> list:
    need(isinstance(value, list), where, "a list", value)
    return value
