"""Every shipped agent, loaded through the documented Python API (docs/agents.md, docs/explainers.md), is
explained by every text explainer: the nle explainer finds the NLE model trained on it by the agent's
fingerprint (issue 44: nle-weak and nle-strong had stopped matching theirs when AgentConfig gained a field)."""
import json

import pytest

from explainers import ExplanationRequest, load_explainer
from explainers.nle import resolve_nle_path, shipped_models
from explainers.registry import BUILTIN
from hand_scenes import FIVE_OBJECTS, hand_scene
from vqa_agent.agent import VQAAgent
from vqa_agent.config import AgentConfig, fingerprint_dict
from vqa_agent.world.render import render

SHIPPED_AGENTS = ("default", "weak", "medium", "strong")
TEXT_EXPLAINERS = [e.name for e in BUILTIN if e.kind == "text" and not e.imitates]   # shams need a round


@pytest.fixture(scope="module")
def image():
    return render(hand_scene(FIVE_OBJECTS)).image


def test_the_text_explainers_are_the_ones_this_test_covers():
    assert "nle" in TEXT_EXPLAINERS and "introspect" in TEXT_EXPLAINERS


@pytest.mark.parametrize("name", SHIPPED_AGENTS)
def test_every_shipped_agent_is_explained_by_every_text_explainer(name, image):
    agent = VQAAgent.from_pretrained(name, device="cpu")
    # the NLE model found by fingerprint alone is the one shipped for this agent
    shipped = "medium" if name == "default" else name
    assert resolve_nle_path(agent) == shipped_models()[shipped]
    recorded = json.loads((shipped_models()[shipped] / "config.json").read_text())["agent_fingerprint"]
    assert agent.fingerprint() == recorded
    output = agent.answer([image], ["What color is the large cube?"])[0]
    for explainer_name in TEXT_EXPLAINERS:
        explainer = load_explainer(explainer_name, agent)
        [explanation] = explainer.explain_batch([ExplanationRequest(image, "What color is the large cube?", output)])
        assert explanation.kind == "text" and isinstance(explanation.payload["text"], str)
        assert explanation.payload["text"], (name, explainer_name)


def test_a_field_added_to_the_config_at_its_default_leaves_the_fingerprint_alone():
    """A later AgentConfig field enters the fingerprint only when it differs from its default."""
    config = AgentConfig(reasoning_steps=2)
    assert "symbolic_max_relations" not in fingerprint_dict(config)
    assert fingerprint_dict(AgentConfig(symbolic_max_relations=1))["symbolic_max_relations"] == 1
    assert fingerprint_dict(config)["reasoning_steps"] == 2
    assert fingerprint_dict(AgentConfig())["max_proposals"] == 12     # an original field, even at its default
