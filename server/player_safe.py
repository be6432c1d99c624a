"""What a player's page is sent of an explanation: the fields its renderer shows (frontend/js/explanations/),
at the precision it shows them, and nothing else.

The explainers' payloads carry the agent's outputs at full precision; the event log keeps them so. Sent
as they are, they would let a participant who replays the public agent checkpoint on the shown images
match the exact floats of the "about the secret image" payloads and find the secret (Issue 10). So
every payload is projected here, in one place, per `kind`:

- attention: the heatmap grid as shares of its largest cell in whole percent (the heatmap draws
  value / max), object boxes in whole pixels, object weights in whole percent (labels use percent()),
  masks as they are (their outlines are drawn);
- words (ObjScene): word, p(word | image) in whole percent, the relevance score to 3 significant digits
  (the tooltip's toPrecision(3)); no distances, anchor or basis;
- qa_pairs (RelQA): question, answer, the agent's confidence in whole percent (the tooltip); no distances;
- text (NLE, introspect): the sentence only.

A kind the page has no renderer for is sent with an empty payload. A new renderer that shows more gets
its projection here (and docs/protocol.md says what each kind carries).
"""
from __future__ import annotations

import math

PERCENT_DECIMALS = 2     # a share shown as a whole percent (frontend/js/dom.js percent()) needs 2 decimals
SCORE_DIGITS = 3         # significant digits of ObjScene's score in the words renderer's tooltip


def share(value) -> float | None:
    """A probability or weight at whole-percent precision."""
    return round(float(value), PERCENT_DECIMALS) if _finite(value) else None


def significant(value, digits: int = SCORE_DIGITS) -> float | None:
    return float(f"{float(value):.{digits}g}") if _finite(value) else None


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _attention(payload: dict) -> dict:
    grid = payload.get("grid") or []
    largest = max((v for row in grid for v in row if _finite(v)), default=0.0)
    relative = [[share(max(v, 0.0) / largest) if largest > 0 and _finite(v) else 0.0 for v in row] for row in grid]
    objects = [{"box": [int(round(v)) for v in o["box"]], "weight": share(o["weight"]), "mask": o["mask"]}
               for o in payload.get("objects", [])]
    return {"grid": relative, "objects": objects}


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
