"""How far the correctness ratings can be trusted: the raters with each other, and the automatic
grades with the raters.

- raters: Krippendorff's alpha (ordinal) over all rated items, and Fleiss' kappa over the items with the
  most common number of raters (3 by design), for the explanation (5-point) and answer (3-point) scales.
- automatic_vs_raters: linearly weighted Cohen's kappa between the raters' consensus (median) and the
  automatic grade, for explanations (overall and per explainer) and answers (one per round).
"""
from __future__ import annotations

from .data import NO_RATER_DATA
from .frames import Frames, paper_order
from .scales import ANSWER_SCALE, EXPLANATION_SCALE
from .stats import rater_agreement, weighted_kappa


def agreement(frames: Frames) -> dict:
    rater, items = frames.rater, frames.items
    if rater.empty:
        return {"raters": {"missing": NO_RATER_DATA}, "automatic_vs_raters": {"missing": NO_RATER_DATA}}
    explanations = len(EXPLANATION_SCALE)
    answers = items.drop_duplicates(["game_id", "round"])
    by_explainer = {x: weighted_kappa(items.loc[items["explainer"] == x, "rater_rank"],
                                      items.loc[items["explainer"] == x, "auto_rank"], explanations)
                    for x in paper_order(items["explainer"].dropna().unique())}
    return {"raters": {"explanation": rater_agreement(rater, "item", "explanation_rank", explanations),
                       "answer": rater_agreement(rater, "item", "answer_rank", len(ANSWER_SCALE)),
                       "n_raters": int(rater["rater"].nunique())},
            "automatic_vs_raters": {
                "explanation": weighted_kappa(items["rater_rank"], items["auto_rank"], explanations),
                "answer": weighted_kappa(answers["answer_rater_rank"], answers["answer_auto_rank"], len(ANSWER_SCALE)),
                "by_explainer": by_explainer}}
