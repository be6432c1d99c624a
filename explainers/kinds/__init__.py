"""Explanation kinds: how an explanation's payload looks, what a player's page is sent of it, and how a
simulated participant reads it. An explainer names its kind; everything after the explainer goes by kind:

    KIND        the kind's name (Explanation.kind; the page picks frontend/js/explanations/<kind>.js by it)
    check       check(payload): raises ValueError (fields.PayloadError) naming the field a payload lacks or
                gets wrong; third-party explainers' payloads are checked with it (explainers/plugins.py)
    for_player  for_player(payload) -> the fields its renderer shows, at the precision it shows them
                (precision.py; the event log keeps the full payload): server/player_safe.py sends this
    reading     reading(payload, scene, targets) -> the share in [0, 1] of what it shows that the
                participant confirms in the image as it perceives it, or None when nothing can be
                checked (game/evidence.py `agreement`)

A new kind is one module here with its line in KINDS, its renderer in frontend/js/explanations/, and its
rule in explainers/grading.py (the automatic grade against the ground truth).
Torch-free: the web process imports this package.
"""
from __future__ import annotations

from types import ModuleType

from . import attention, qa_pairs, text, words

KINDS: dict[str, ModuleType] = {module.KIND: module for module in (attention, words, qa_pairs, text)}


def kind_named(name: str) -> ModuleType:
    if name not in KINDS:
        raise ValueError(f"kind {name!r} is not one of {', '.join(KINDS)}: a new kind needs a module in "
                         "explainers/kinds/ and a renderer in frontend/js/explanations/")
    return KINDS[name]


def check_payload(kind: str, payload: dict) -> None:
    """Raises ValueError when `payload` is not what kind `kind`'s renderer and projection rely on."""
    kind_named(kind).check(payload)


def for_player(explanation) -> dict:
    """An Explanation as the player's page receives it; a kind the page has no renderer for is sent with
    an empty payload."""
    found = KINDS.get(explanation.kind)
    return {"explainer": explanation.explainer, "kind": explanation.kind,
            "payload": found.for_player(explanation.payload) if found else {}}


def reading(explanation: dict, scene, targets: list[dict[str, str]]) -> float | None:
    """How far one explanation, as the page gets it, shows what the participant sees in `scene`: the
    share it confirms (kind by kind), or None when it offers nothing to check."""
    found = KINDS.get(explanation.get("kind"))
    return found.reading(explanation.get("payload") or {}, scene, targets) if found else None
