"""Kind "words" (ObjScene): the object and scene words most relevant to the answer, most relevant first.
Drawn by frontend/js/explanations/words.js: each word with a bar of p(word | image), the relevance score
in the tooltip.

Payload: {"words": [{"word", "probability": p(word | image) in [0, 1], "score": relevance (lower = more
relevant)}, ...]} (an explainer may add fields: objscene adds distance, anchor and basis). The player gets
word, probability in whole percent and score to 3 significant digits (the tooltip), nothing else. A
simulated participant checks each word's stated presence in the image (`words_hold`).
"""
from __future__ import annotations

import numpy as np

from vqa_agent.world.scene import Scene

from . import fields
from .precision import share, significant
from .seen import ATTRIBUTE_OF, NOUN_VALUE, WORD_VALUE, matching

KIND = "words"
PRESENT = 0.5          # a word at or above this probability says "this is in the image"


def check(payload: dict) -> None:
    for k, w in enumerate(fields.items(fields.field(payload, "", "words"), "['words']")):
        where = f"['words'][{k}]"
        fields.text(fields.field(w, where, "word"), where + "['word']")
        fields.number(fields.field(w, where, "probability"), where + "['probability']", 0, 1)
        fields.number(fields.field(w, where, "score"), where + "['score']")


def for_player(payload: dict) -> dict:
    return {"words": [{"word": w["word"], "probability": share(w["probability"]), "score": significant(w["score"])}
                      for w in payload.get("words", [])]}


def words_hold(payload: dict, scene: Scene) -> float | None:
    """The share of words whose stated presence (p >= 50%: in the image) the participant confirms."""
    checked = []
    for w in payload.get("words", []):
        value = WORD_VALUE.get(w["word"], NOUN_VALUE.get(w["word"]))
        if value is None or w.get("probability") is None:
            continue
        present = bool(matching(scene, {ATTRIBUTE_OF[value]: value}))
        checked.append(present == (w["probability"] >= PRESENT))
    return float(np.mean(checked)) if checked else None


def reading(payload: dict, scene: Scene, targets: list[dict[str, str]]) -> float | None:
    return words_hold(payload, scene)
