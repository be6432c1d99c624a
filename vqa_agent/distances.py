"""Distances between image embeddings that need numpy only (no torch): a game server's web process
chooses image sets with them (game/image_sets.py)."""
from __future__ import annotations

import numpy as np


def set_difficulty(embeddings: np.ndarray, secret: int, distractors: list[int]) -> float:
    """Mean L2 distance from the secret image's embedding to the distractors'.

    Lower = harder, as in the paper: distractors that look like the secret image are harder to tell
    apart from it.
    """
    if not distractors:
        raise ValueError("a set needs at least one distractor")
    if secret in distractors:
        raise ValueError(f"the secret image {secret} cannot also be a distractor")
    x = np.asarray(embeddings, dtype=np.float64)
    return float(np.linalg.norm(x[distractors] - x[secret], axis=1).mean())
