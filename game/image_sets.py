"""Choosing a game's images: a secret drawn at random from the held-out pool and N-1 distractors chosen
by image-feature distance at a difficulty level (RESEARCH.md 1). Lower mean distance from the secret to
the distractors = a harder set; that mean is recorded with the game.

A level is a band of the secret's neighbours ordered by distance: "hard" draws the distractors from the
nearest 10% of the pool, "easy" from anywhere. Levels are data; add more freely.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vqa_agent.image_features import set_difficulty

LEVELS: dict[str, tuple[float, float]] = {   # band of neighbour ranks, as fractions of the pool
    "hard": (0.0, 0.1),
    "medium": (0.0, 0.35),
    "easy": (0.0, 1.0),
}


@dataclass(frozen=True)
class ImageSet:
    images: tuple[int, ...]   # pool positions in the order shown
    secret: int               # position of the secret in `images`
    difficulty: float         # mean L2 feature distance from the secret to the distractors


def choose_image_set(embeddings: np.ndarray, n: int, level: str, rng: np.random.Generator) -> ImageSet:
    """embeddings: [pool, d] features of the pool images (e.g. TorchvisionEmbedder or the agent's)."""
    if level not in LEVELS:
        raise ValueError(f"unknown difficulty level {level!r}; choose from {', '.join(LEVELS)}")
    pool = len(embeddings)
    if n > pool:
        raise ValueError(f"a set of {n} images needs a pool of at least {n}, got {pool}")
    secret = int(rng.integers(pool))
    distances = np.linalg.norm(embeddings - embeddings[secret], axis=1)
    distances[secret] = np.inf
    ranked = np.argsort(distances, kind="stable")[: pool - 1]
    low, high = LEVELS[level]
    band = ranked[int(low * (pool - 1)): max(int(high * (pool - 1)), n - 1)]
    if len(band) < n - 1:
        band = ranked[: n - 1]
    distractors = [int(i) for i in rng.choice(band, n - 1, replace=False)]
    images = [secret] + distractors
    order = rng.permutation(n)
    shown = tuple(images[i] for i in order)
    return ImageSet(shown, int(np.flatnonzero(order == 0)[0]), set_difficulty(embeddings, secret, distractors))
