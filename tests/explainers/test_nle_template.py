"""The NLE explainer's last resort states the answer about the question's own subject and nothing more."""
from __future__ import annotations

import json
import re

import pytest

from explainers.answer_check import check_explanation
from explainers.nle import loops
from explainers.nle_template import template
from vqa_agent.world.explanations import VALUE_OF_WORD


@pytest.mark.parametrize("question, answer, sentence", [
    ("There is a metal sphere that is the same size as the red cylinder; what color is it?", "yellow",
     "There is a yellow metal sphere that has the same size as a red cylinder."),
    ("What shape is the brown shiny object that is the same size as the yellow ball?", "cube",
     "There is a brown shiny cube that has the same size as a yellow ball."),
    ("How big is the gray thing behind the big object left of the tiny cyan metal block?", "large",
     "There is a large gray thing that is behind the big thing left of the tiny cyan metal block."),
    ("How many cubes are made of the same material as the green cylinder?", "2",
     "There are two cubes that have the same material as a green cylinder."),
    ("How many large balls are there?", "1", "There is a large ball."),
    ("What number of big cubes have the same color as the cylinder?", "0",
     "There are no big cubes that have the same color as a cylinder."),
    ("Are there any rubber things to the left of the cube?", "no",
     "There are no rubber things that are to the left of the cube."),
    ("Is there a small red sphere?", "yes", "There is a small red sphere."),
    # what it cannot write without facts the question does not give: the answer alone
    ("Are there more cubes than balls?", "yes", "The answer is yes."),
    ("How many things are either big red blocks or cylinders?", "3", "The answer is 3."),
    ("What color is the large cube?", "7", "The answer is 7."),
    ("Why is the sky blue?", "blue", "The answer is blue."),
])
def test_the_template_restates_the_subject_with_the_answer(question, answer, sentence):
    assert template(question, answer) == sentence


def test_a_chain_of_relations_is_not_written_as_a_loop():
    question = "What color is the cylinder that is right of the small cylinder in front of the red matte " \
               "cylinder left of the purple metallic cylinder?"
    sentence = template(question, "purple")
    assert sentence == ("There is a purple cylinder that is right of the small cylinder in front of the red matte "
                        "cylinder left of the purple metallic cylinder.")
    assert not loops(sentence)


def _values(text: str) -> set[str]:
    return {VALUE_OF_WORD[w] for w in re.findall(r"[a-z]+", text.lower()) if w in VALUE_OF_WORD} | \
           {VALUE_OF_WORD[w[:-1]] for w in re.findall(r"[a-z]+", text.lower()) if w[:-1] in VALUE_OF_WORD}


def test_every_template_of_the_worlds_questions_states_its_answer_and_adds_nothing(agent_world):
    questions = json.loads((agent_world / "questions.json").read_text())["questions"]
    written = 0
    for q in questions[:3000]:
        sentence = template(q["question"], q["answer"])
        check = check_explanation(q["question"], q["answer"], sentence)
        assert not check.contradicts, (q["question"], q["answer"], sentence)
        if sentence != f"The answer is {q['answer']}.":
            written += 1
            assert check.states_answer is True, (q["question"], q["answer"], sentence, check.reason)
            # no attribute value the question and the answer do not say
            assert _values(sentence) <= _values(q["question"]) | {q["answer"]}, (q["question"], sentence)
    assert written > 1000
