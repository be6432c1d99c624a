"""The automatic grades of an explainer's explanations on the ExAG paper's 5-point scale
(explainers/grading.py: one documented rule per kind of explanation, against the true scene), the
scale the study's raters and players see: the share of each label, the share on-point (the scale's top
two labels), and the same on correctly and wrongly answered items apart.

    explanation_grades(explanations, items, outputs)   # {"n", "labels": {label: share}, "on_point", ...}
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

ON_POINT = 1          # ranks 0 and 1 of EXPLANATION_SCALE: on-point and mostly on-point


def _summary(ranks: list[int], labels: Sequence[str]) -> dict:
    if not ranks:
        return {"n": 0, "on_point": None, "mean_rank": None, "labels": {}}
    counts = np.bincount(ranks, minlength=len(labels))
    return {"n": len(ranks), "on_point": 100 * float(np.mean([r <= ON_POINT for r in ranks])),
            "mean_rank": float(np.mean(ranks)),
            "labels": {label: 100 * float(c) / len(ranks) for label, c in zip(labels, counts)}}


def explanation_grades(explanations: Sequence, items: Sequence, outputs: Sequence) -> dict:
    """Grades of explanations[i] (explainers.base.Explanation) of outputs[i] on items[i]; ungradable
    items (a question outside the parser's language) are counted apart."""
    from explainers.grading import EXPLANATION_SCALE, GroundTruth, grade_explanation
    if not (len(explanations) == len(items) == len(outputs)):
        raise ValueError(f"need one explanation and output per item: {len(explanations)}, {len(outputs)}, {len(items)}")
    ranks: dict[str, list[int]] = {"all": [], "answer_right": [], "answer_wrong": []}
    ungradable = 0
    for explanation, item, output in zip(explanations, items, outputs):
        truth = GroundTruth.for_question(item.question, item.scene, item.masks)
        if truth.program is None:
            ungradable += 1
            continue
        rank = grade_explanation(explanation, output, truth).rank
        ranks["all"].append(rank)
        ranks["answer_right" if output.answer == item.answer else "answer_wrong"].append(rank)
    labels = list(EXPLANATION_SCALE)
    return {**_summary(ranks["all"], labels), "ungradable": ungradable,
            "answer_right": _summary(ranks["answer_right"], labels),
            "answer_wrong": _summary(ranks["answer_wrong"], labels),
            "definitions": {"scale": "the ExAG raters' 5-point scale, best first: " + ", ".join(labels),
                            "on_point": "share graded one of the top two labels (percent)",
                            "mean_rank": "mean label index, 0 = the best label",
                            "rule": "explainers/grading.py: one documented rule per kind, on the true scene"}}
