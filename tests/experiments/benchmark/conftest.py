"""The tiny agent's answers to 12 test questions of the tiny world, shared by the text measures' tests."""
from __future__ import annotations

import pytest

from experiments.benchmark.items import answer, load_items


@pytest.fixture(scope="module")
def tiny(agent_world, tiny_agent_dir):
    """(agent, items, outputs)."""
    from vqa_agent.agent import VQAAgent
    agent = VQAAgent.from_pretrained(tiny_agent_dir)
    items = load_items(agent_world, max_items=12)
    return agent, items, answer(agent, items)
