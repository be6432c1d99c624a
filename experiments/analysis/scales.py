"""The rating scales the analysis reads, each best first (its rank 0).

- RATINGS: the players' helpfulness ratings (game/settings.py).
- ANSWER_SCALE, EXPLANATION_SCALE: the raters' and the automatic grades' scales (explainers/grading.py).
  They are repeated here because importing the explainers package loads torch and every explainer's
  model (about 9 s), which `exag analyze` has no use for; tests/experiments/test_analysis.py checks that
  they stay equal to grading's.
"""
from __future__ import annotations

from game.settings import RATINGS

ANSWER_SCALE = ("correct", "somewhat correct", "completely wrong")
EXPLANATION_SCALE = ("Exactly on-point", "Mostly on-point", "Indifferent", "Somewhat off", "Completely wrong")

__all__ = ["ANSWER_SCALE", "EXPLANATION_SCALE", "RATINGS"]
