"""The card's contradiction measure: hand-written explanations of a hand-placed scene with known answers
(one states the answer, one says another, one loops), then its checker figures on the items' references."""
from __future__ import annotations

import numpy as np
import pytest

from experiments.benchmark.contradictions import contradictions, loops
from experiments.benchmark.items import BenchItem
from explainers import Explanation
from hand_scenes import FIVE_OBJECTS, hand_scene
from vqa_agent.agent import AgentOutput
from vqa_agent.world.parser import parse_program
from vqa_agent.world.programs import program_to_json

# FIVE_OBJECTS: 0 large red metal cube, 1 small blue rubber sphere, 2 large blue rubber cylinder,
#               3 small red rubber sphere, 4 small yellow metal cube


def item(question: str, answer: str, references: list[str]) -> BenchItem:
    scene = hand_scene(FIVE_OBJECTS)
    return BenchItem(0, question, answer, program_to_json(parse_program(question)), "hand", "hand.png", scene, {},
                     np.zeros((4, 4, 3), np.uint8), np.zeros((4, 4), int), references)


def said(answer: str) -> AgentOutput:
    return AgentOutput(question="q", answer=answer, probability=0.9, top_k=[(answer, 0.9)],
                       spatial_attention=np.full((2, 2), 0.25), proposals=[], concept_probabilities={},
                       question_embedding=np.zeros(4, np.float32))


def text(sentence: str) -> Explanation:
    return Explanation("nle", "text", {"text": sentence})


def test_states_contradicts_and_loops_are_counted_per_answer_type():
    color = item("What color is the large cube?", "red", ["The large cube is red."])
    count = item("How many spheres are there?", "2", ["There are a small blue sphere and a small red sphere."])
    exist = item("Are there any green things?", "no", ["There are no green things."])
    report = contradictions(
        [color, color, count, exist],
        [said("red"), said("red"), said("3"), said("no")],
        [text("The large cube is red."), text("The large cube is blue."),
         text("There are a small sphere and a small sphere and a small sphere."),
         text("There is a green thing.")])
    assert report["by_type"]["query"]["n"] == 2
    assert report["by_type"]["query"]["states_answer"] == 50 and report["by_type"]["query"]["contradicts"] == 50
    assert report["by_type"]["count"]["states_answer"] == 100 and report["by_type"]["count"]["loops"] == 100
    assert report["by_type"]["exist"]["contradicts"] == 100
    # the agent said 3 spheres (wrong): the count row is not among the answered-right ones
    assert "count" not in report["answered_right_by_type"] and report["answered_right_by_type"]["query"]["n"] == 2
    assert report["overall"]["n"] == 4 and len(report["examples"]) == 2
    checker = report["checker"]
    assert checker["references"] == 4 and checker["false_alarms"] == 0 and checker["miss_rate"] <= 0.05


@pytest.mark.parametrize("sentence, looping", [
    ("the large ball is a large ball is a large ball is a large ball", True),
    ("the large ball is a large ball is a large ball", False),   # "a large ball" twice
    ("there is a cube and a cube", False),
    ("", False),
])
def test_a_loop_is_a_three_word_phrase_written_three_times(sentence, looping):
    assert loops(sentence) is looping
