"""The rating scales of answers and explanations (the paper's), shared by the automatic grading
(explainers/grading.py) and the human rating task; importing them loads no model."""
from __future__ import annotations

ANSWER_SCALE = ("correct", "somewhat correct", "completely wrong")
EXPLANATION_SCALE = ("Exactly on-point", "Mostly on-point", "Indifferent", "Somewhat off", "Completely wrong")
