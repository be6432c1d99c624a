"""Choosing a game's images (docs/research.md §1): a neighbourhood of similar images around a random anchor of
the held-out pool, N images drawn from it, and the secret drawn uniformly among those N. The mean
image-feature distance from the secret to the distractors (lower = a harder set) is recorded with the
game.

The secret is exchangeable with its distractors: the set is chosen before, and without regard to, which
of its images becomes the secret, so nothing computed from the shown images alone (their medoid, the
image closest to their centre, ...) points to the secret better than chance (1/N). Drawing distractors
around the secret instead would make the secret the centre of its set.

A level is a band of the anchor's neighbours ordered by distance, the anchor itself first
(game/settings.py DIFFICULTY_LEVELS): "hard" draws the set from the nearest 10% of the pool, "easy" from
anywhere.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vqa_agent.distances import set_difficulty

from .settings import DIFFICULTY_LEVELS as LEVELS


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
    anchor = int(rng.integers(pool))
    distances = np.linalg.norm(embeddings - embeddings[anchor], axis=1)
    distances[anchor] = -np.inf          # the anchor ranks first even among identical images
    ranked = np.argsort(distances, kind="stable")
    low, high = LEVELS[level]
    neighbourhood = ranked[int(low * pool): max(int(high * pool), n)]
    if len(neighbourhood) < n:
        neighbourhood = ranked[:n]
    shown = tuple(int(i) for i in rng.choice(neighbourhood, n, replace=False))   # in random order
    secret = int(rng.integers(n))        # uniformly among the set: exchangeable with the distractors
    distractors = [i for k, i in enumerate(shown) if k != secret]
    return ImageSet(shown, secret, set_difficulty(embeddings, shown[secret], distractors))
