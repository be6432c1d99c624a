"""Shared fixtures: a tiny world is built once per test session (real renderer, real generator)."""
from __future__ import annotations

import pytest

from vqa_agent.config import preset
from vqa_agent.train import train_agent
from vqa_agent.world.build import build_world

from tiny_worlds import AGENT_WORLD, TINY_WORLD


@pytest.fixture(scope="session")
def tiny_world(tmp_path_factory):
    return build_world(tmp_path_factory.mktemp("world"), TINY_WORLD, workers=1, progress=False)



@pytest.fixture(scope="session")
def agent_world(tmp_path_factory):
    return build_world(tmp_path_factory.mktemp("agent_world"), AGENT_WORLD, workers=2, progress=False)


@pytest.fixture(scope="session")
def tiny_agent_dir(agent_world, tmp_path_factory):
    return train_agent(agent_world, tmp_path_factory.mktemp("tiny_agent"), preset("tiny"), progress=False,
                       log=lambda message: None)


@pytest.fixture(scope="session")
def tiny_nle_dir(tiny_agent_dir, agent_world, tmp_path_factory):
    """A tiny NLE model for the tiny agent (seconds of real training)."""
    from explainers.nle_train import NLETrainingConfig, train_nle

    return train_nle(tiny_agent_dir, agent_world, tmp_path_factory.mktemp("tiny_nle"),
                     NLETrainingConfig(epochs=1, max_items=300, val_items=60), progress=False, log=lambda m: None)
