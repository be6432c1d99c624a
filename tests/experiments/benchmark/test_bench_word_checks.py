"""ObjScene and RelQA checks against the scene: hand-written explanations of a hand-placed scene with known
answers first, then the tiny agent's own explainers end to end."""
from __future__ import annotations

import numpy as np
import pytest

from experiments.benchmark.items import BenchItem, answer, explain, load_items
from experiments.benchmark.word_checks import word_checks
from explainers import Explanation, load_explainer
from hand_scenes import FIVE_OBJECTS, hand_scene
from vqa_agent.agent import AgentOutput, VQAAgent
from vqa_agent.world.parser import parse_program
from vqa_agent.world.programs import program_to_json
from vqa_agent.world.render import render

# FIVE_OBJECTS: 0 large red metal cube, 1 small blue rubber sphere, 2 large blue rubber cylinder,
#               3 small red rubber sphere, 4 small yellow metal cube


@pytest.fixture(scope="module")
def rendered():
    scene = hand_scene(FIVE_OBJECTS)
    return scene, render(scene)


def hand_item(rendered, question: str) -> BenchItem:
    scene, rendering = rendered
    return BenchItem(0, question, "?", program_to_json(parse_program(question)), "hand", "hand.png", scene, {},
                     rendering.image, rendering.mask)


def said(answer: str) -> AgentOutput:
    """The agent's answer to the asked question (all the checks read of it)."""
    return AgentOutput(question="q", answer=answer, probability=0.9, top_k=[(answer, 0.9)],
                       spatial_attention=np.full((2, 2), 0.25), proposals=[], concept_probabilities={},
                       question_embedding=np.zeros(4, np.float32))


def words(*listed: tuple[str, float]) -> Explanation:
    return Explanation("objscene", "words", {"words": [{"word": w, "score": 0.1, "probability": p, "distance": 0.1}
                                                       for w, p in listed]})


def pairs(*listed: tuple[str, str]) -> Explanation:
    return Explanation("relqa", "qa_pairs", {"pairs": [{"question": q, "answer": a, "probability": 0.9, "distance": 0.1}
                                                       for q, a in listed]})


def test_words_all_in_the_image_and_about_the_answer_score_full_marks(rendered):
    item = hand_item(rendered, "What color is the large cube?")
    result = word_checks([words(("red", 0.9), ("cube", 0.8), ("metal", 0.7), ("large", 0.6))], [item], [said("red")])
    assert result["kind"] == "words" and result["n"] == 1 and result["words"] == 4
    assert result["precision"] == 100.0 and result["related"] == 100.0 and result["agreement"] == 100.0


def test_words_stated_present_but_absent_lower_the_precision(rendered):
    item = hand_item(rendered, "What color is the large cube?")
    # green is stated present and absent, cylinder present (but not the cube's), purple stated absent and absent
    result = word_checks([words(("green", 0.9), ("cylinder", 0.8), ("purple", 0.1))], [item], [said("red")])
    assert result["stated_present"] == 2 and result["precision"] == 50.0
    assert result["related"] == 0.0 and result["agreement"] == pytest.approx(200 / 3)


def test_related_answers_are_checked_on_the_scene_and_against_the_asked_answer(rendered):
    item = hand_item(rendered, "How many spheres are there?")
    explanation = pairs(("Is there a sphere?", "yes"),                   # right, coherent with 2 spheres
                        ("How many small spheres are there?", "3"),       # wrong, and cannot be with 2 spheres
                        ("What color is the large cube?", "blue"),        # wrong, logic cannot tell
                        ("Why is the sky blue?", "yes"))                  # outside the language: not checked
    result = word_checks([explanation], [item], [said("2")])
    assert result["kind"] == "qa_pairs" and result["pairs_checked"] == 3
    assert result["accuracy"] == pytest.approx(100 / 3)
    assert result["coherence"] == 50.0 and result["coherence_items"] == 1
    assert result["consistency"] == 50.0          # of the two about the spheres, one is right
    # the same pairs after the agent said 3 spheres: "3 small spheres" holds with it, "yes" too
    assert word_checks([explanation], [item], [said("3")])["coherence"] == 100.0


def test_word_checks_refuse_other_kinds_and_mismatched_lengths(rendered):
    item = hand_item(rendered, "What color is the large cube?")
    with pytest.raises(ValueError, match="one kind"):
        word_checks([Explanation("nle", "text", {"text": "red"})], [item], [said("red")])
    with pytest.raises(ValueError, match="one kind"):
        word_checks([words(("red", 0.9)), pairs(("Is there a cube?", "yes"))], [item, item], [said("red")] * 2)
    with pytest.raises(ValueError, match="items"):
        word_checks([words(("red", 0.9))], [item, item], [said("red")])


# --- the tiny agent's explainers ------------------------------------------------------------------

@pytest.fixture(scope="module")
def agent(tiny_agent_dir):
    import torch
    torch.set_num_threads(1)
    return VQAAgent.from_pretrained(tiny_agent_dir, device="cpu")


@pytest.fixture(scope="module")
def answered(agent, agent_world):
    items = load_items(agent_world, max_items=10, seed=5)
    return items, answer(agent, items)


def test_objscene_of_the_tiny_agent(agent, answered):
    items, outputs = answered
    result = word_checks(explain(load_explainer("objscene", agent), items, outputs, agent), items, outputs)
    assert result["kind"] == "words" and result["n"] + result["skipped"] == len(items)
    assert result["words"] == 5 * result["n"]
    for key in ("precision", "related", "agreement"):
        assert result[key] is None or 0 <= result[key] <= 100
    # the words with the highest p(O|I) of a trained agent are mostly there
    assert result["precision"] is not None and result["precision"] >= 50
    assert set(result["definitions"]) == {"precision", "related", "agreement"}


def test_relqa_of_the_tiny_agent(agent, answered, agent_world, tmp_path_factory):
    items, outputs = answered
    explainer = load_explainer("relqa", agent, world=agent_world, min_bank=50, progress=False,
                               cache_dir=tmp_path_factory.mktemp("relqa_cache"))
    result = word_checks(explain(explainer, items, outputs, agent), items, outputs)
    assert result["kind"] == "qa_pairs" and result["n"] + result["skipped"] == len(items)
    assert 0 < result["pairs_checked"] <= 5 * result["n"]
    for key in ("accuracy", "consistency", "coherence"):
        assert result[key] is None or 0 <= result[key] <= 100
    assert result["accuracy"] is not None and 0 <= result["coherence_items"] <= result["n"]
