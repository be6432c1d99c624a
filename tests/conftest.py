"""Shared fixtures: a tiny world is built once per test session (real renderer, real generator)."""
from __future__ import annotations

import pytest

from vqa_agent.world.build import WorldConfig, build_world

TINY_WORLD = WorldConfig(images=30, pool=10, chunk_size=10, questions_per_image=6,
                         explanations_per_question=3, seed=7)


@pytest.fixture(scope="session")
def tiny_world(tmp_path_factory):
    return build_world(tmp_path_factory.mktemp("world"), TINY_WORLD, workers=1, progress=False)
