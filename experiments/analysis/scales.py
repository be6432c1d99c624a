"""The rating scales the analysis reads, each best first (its rank 0).

- RATINGS: the players' helpfulness ratings (game/settings.py).
- ANSWER_SCALE, EXPLANATION_SCALE: the raters' and the automatic grades' scales (explainers/scales.py,
  which imports no torch).
"""
from __future__ import annotations

from explainers.scales import ANSWER_SCALE, EXPLANATION_SCALE
from game.settings import RATINGS

__all__ = ["ANSWER_SCALE", "EXPLANATION_SCALE", "RATINGS"]
