"""The secret is exchangeable with its distractors: programs that look only at the shown images (their
embeddings) find the secret no better than chance (Issue 10, finding 3)."""
from __future__ import annotations

import numpy as np
import pytest

from game.image_sets import choose_image_set

SETS = 1500          # seeded sets per case: the success rate's standard error is <= 1.1 points
TOLERANCE = 0.035    # allowed distance from chance, ~3.5 standard errors at N=5, ~6 at N=20


def clustered_embeddings(seed: int = 0, pool: int = 600, clusters: int = 12, dim: int = 16) -> np.ndarray:
    """Image features that come in families of similar images, as a world's renders do."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(clusters, dim))
    members = rng.integers(clusters, size=pool)
    spread = rng.uniform(0.5, 1.5, size=(clusters, 1))
    return centres[members] + spread[members] * rng.normal(size=(pool, dim))


def medoid(points: np.ndarray) -> int:
    """The point with the smallest summed distance to the others: the set's centre."""
    return int(np.linalg.norm(points[:, None] - points[None], axis=-1).sum(1).argmin())


def closest_to_mean(points: np.ndarray) -> int:
    return int(np.linalg.norm(points - points.mean(0), axis=1).argmin())


@pytest.mark.parametrize("n,level", [(5, "hard"), (20, "medium"), (5, "easy")])
def test_the_centre_of_a_set_is_the_secret_no_more_often_than_chance(n, level):
    embeddings = clustered_embeddings()
    found = {"medoid": 0, "closest to the mean": 0}
    for seed in range(SETS):
        chosen = choose_image_set(embeddings, n, level, np.random.default_rng(seed))
        points = embeddings[list(chosen.images)]
        found["medoid"] += medoid(points) == chosen.secret
        found["closest to the mean"] += closest_to_mean(points) == chosen.secret
    for attack, hits in found.items():
        assert abs(hits / SETS - 1 / n) <= TOLERANCE, f"{attack}: {hits / SETS:.1%} of sets, chance {1 / n:.0%}"


def test_the_secret_is_anywhere_in_the_shown_order_and_difficulty_is_recorded():
    embeddings = clustered_embeddings(seed=1)
    positions = np.zeros(5)
    for seed in range(500):
        chosen = choose_image_set(embeddings, 5, "hard", np.random.default_rng(seed))
        positions[chosen.secret] += 1
        distractors = [i for k, i in enumerate(chosen.images) if k != chosen.secret]
        expected = np.linalg.norm(embeddings[distractors] - embeddings[chosen.images[chosen.secret]], axis=1).mean()
        assert chosen.difficulty == pytest.approx(expected)
        assert len(set(chosen.images)) == 5
    assert positions.min() > 500 / 5 * 0.7


def test_harder_levels_still_give_more_similar_sets():
    embeddings = clustered_embeddings(seed=2)
    mean = {level: np.mean([choose_image_set(embeddings, 5, level, np.random.default_rng(s)).difficulty
                            for s in range(200)]) for level in ("hard", "medium", "easy")}
    assert mean["hard"] < mean["medium"] < mean["easy"]
