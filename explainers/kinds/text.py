"""Kind "text" (nle, introspect, and any explainer that says its explanation in one sentence). Drawn by
frontend/js/explanations/text.js as a paragraph.

Payload: {"text": the sentence} (an explainer may add fields: introspect adds the objects it names, nle
where its sentence came from, "source", and its answer check's reason, "check": explainers/nle.py). The
event log keeps them all; the player gets the sentence only (`for_player` drops the rest deliberately).
A simulated participant checks the facts it states ("the cube is red",
"there are no spheres") in the image as it sees it (`facts_hold`).
"""
from __future__ import annotations

import numpy as np

from vqa_agent.world.facts import check_facts
from vqa_agent.world.scene import Scene

from . import fields

KIND = "text"


def check(payload: dict) -> None:
    fields.text(fields.field(payload, "", "text"), "['text']")


def for_player(payload: dict) -> dict:
    return {"text": payload.get("text", "")}


def facts_hold(text: str, scene: Scene) -> float | None:
    """The share of the facts a sentence states ("there are no spheres", "the cube is red") that hold in
    the image as the participant sees it; None when it states nothing checkable."""
    checked = [f.holds for f in check_facts(text, scene) if f.holds is not None]
    return float(np.mean(checked)) if checked else None


def reading(payload: dict, scene: Scene, targets: list[dict[str, str]]) -> float | None:
    return facts_hold(payload.get("text", ""), scene)
