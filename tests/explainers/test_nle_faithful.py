"""The nle explainer is faithful by construction where it can be and checked where it cannot (issue 32):
decoding writes no 3-gram twice (and leaves sentences that never repeat one as they were), and a sentence
that contradicts its answer is regenerated under a constraint, else replaced by the traced explanation,
else by the template; the payload says which, the event log keeps it and the player sees only the text."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from explainers import load_explainer
from explainers.answer_check import check_explanation
from explainers.base import ExplanationRequest
from round_requests import requests_about
from explainers.kinds import for_player
from explainers.nle import SOURCES, Constraint, constraint_for, faithful_payloads, fails, traced_explanation
from explainers.nle_model import NLEModel, repeated_ngram_tokens
from explainers.grading import GroundTruth
from server.respond import explained as explained_product
from vqa_agent.agent import Proposal, VQAAgent
from vqa_agent.symbolic import scene_of

QUESTIONS = ["What color is the large cube?", "How many spheres are there?", "Is there a red cylinder?",
             "What is the material of the small sphere?", "What shape is the blue thing?"]


def repeats(ids: list[int], n: int = 3) -> bool:
    grams = [tuple(ids[i:i + n]) for i in range(len(ids) - n + 1)]
    return len(grams) != len(set(grams))


@pytest.fixture(scope="module")
def agent(tiny_agent_dir):
    return VQAAgent.from_pretrained(tiny_agent_dir, device="cpu")


@pytest.fixture(scope="module")
def requests(agent, agent_world):
    return requests_about(agent, agent_world, QUESTIONS, images=4)


def test_blocked_tokens_are_those_that_would_repeat_an_ngram():
    written = torch.tensor([[5, 6, 7, 5, 6],      # "5 6" again: 7 would repeat "5 6 7"
                            [5, 6, 7, 8, 9],      # nothing repeats
                            [4, 4, 4, 4, 4]])     # "4 4" again: 4 would repeat "4 4 4"
    blocked = repeated_ngram_tokens(written, 3, 10)
    assert blocked.shape == (3, 10)
    assert blocked[0].nonzero().flatten().tolist() == [7]
    assert not blocked[1].any()
    assert blocked[2].nonzero().flatten().tolist() == [4]
    assert repeated_ngram_tokens(written[:, :2], 3, 10).sum() == 0             # too short for a 3-gram
    assert repeated_ngram_tokens(torch.tensor([[1, 2, 1]]), 2, 5).nonzero()[:, 1].tolist() == [2]
    assert not repeated_ngram_tokens(written, 0, 10).any()                    # 0: off


def test_decoding_never_repeats_a_3gram_and_keeps_sentences_that_did_not(tiny_nle_dir, requests):
    model = NLEModel.from_pretrained(tiny_nle_dir)
    prompts = model.prompts([r.output for r in requests])
    free, blocked = model.generate(prompts, no_repeat_ngram=0), model.generate(prompts, no_repeat_ngram=3)
    for a, b in zip(free, blocked):
        assert not repeats(b)
        if not repeats(a):
            assert a == b           # blocking only ever removes a token that would repeat a 3-gram
    # a decoder that can only write two words must loop; blocked, it stops within the 10 words two
    # symbols allow without repeating a 3-gram
    two = torch.ones(len(requests), len(model.tokenizer.words), dtype=torch.bool)
    two[:, model.word_ids(["red", "cube"])] = False
    two[:, model.tokenizer.eos] = False
    looping = model.generate(prompts, no_repeat_ngram=0, banned=two)
    stopped = model.generate(prompts, banned=two, no_repeat_ngram=3)
    assert any(repeats(row) for row in looping)
    assert all(not repeats(row) and len(row) <= 10 for row in stopped)


def test_constraints_ban_the_other_values_and_spare_the_questions_words():
    color = constraint_for("What color is the large cube?", "red")
    assert "blue" in color.banned and "red" not in color.banned and not color.prefix
    shape = constraint_for("What shape is the thing left of the cube?", "sphere")
    assert "cylinders" in shape.banned and "cube" not in shape.banned and "ball" not in shape.banned
    count = constraint_for("How many spheres are there?", "2")
    assert {"three", "no", "one"} <= set(count.banned) and "two" not in count.banned
    assert constraint_for("How many spheres are there?", "0").prefix == "there are no"
    assert constraint_for("Is there a red cylinder?", "no").prefix == "there is no"
    assert "no" in constraint_for("Is there a red cylinder?", "yes").banned
    assert constraint_for("Are there more cubes than balls?", "yes") is None


def test_a_sentence_that_fails_the_check_is_regenerated_then_traced_then_templated():
    questions = ["What color is the large cube?"] * 4
    answers = ["red"] * 4
    generated = ["The large cube is red.", "The large cube is blue.", "The large cube is blue.",
                 "The large cube is green."]
    asked = []

    def regenerate(indices, constraints):      # a stub decoder: fixes item 1 only
        asked.extend(zip(indices, constraints))
        return ["The large cube is red." if i == 1 else "The large cube is yellow." for i in indices]

    def traced(i):                              # item 2 can be traced; item 3 cannot
        return "There is a large red cube." if i == 2 else None

    payloads = faithful_payloads(questions, answers, generated, regenerate, traced)
    assert [p["source"] for p in payloads] == ["generated", "regenerated", "traced", "template"]
    assert [p["text"] for p in payloads] == ["The large cube is red.", "The large cube is red.",
                                             "There is a large red cube.", "There is a large red cube."]
    assert [i for i, _ in asked] == [1, 2, 3]            # the sentence that passed is not written again
    assert all(isinstance(c, Constraint) and "blue" in c.banned for _, c in asked)
    assert payloads[0]["check"] == check_explanation(questions[0], "red", generated[0]).reason
    assert payloads[1]["check"] == check_explanation(questions[1], "red", generated[1]).reason   # why it was replaced


def test_the_explainer_shows_only_sentences_that_state_their_answer(agent, tiny_nle_dir, requests):
    explainer = load_explainer("nle", agent, model=tiny_nle_dir)
    # the answers the tiny model writes about, and the same outputs with another answer it was not given
    other = {"red": "blue", "2": "3", "yes": "no", "metal": "rubber", "cube": "cylinder"}
    swapped = [ExplanationRequest(r.image, r.question, replace(r.output, answer=other.get(r.output.answer, "7")))
               for r in requests]
    for batch in (requests, swapped):
        explained = explainer.explain_batch(batch)
        for request, e in zip(batch, explained):
            payload = e.payload
            assert set(payload) == {"text", "source", "check"} and payload["source"] in SOURCES
            check = check_explanation(request.question, request.output.answer, payload["text"])
            assert not check.contradicts
            assert payload["source"] == "template" or not fails(check)
            assert for_player(e)["payload"] == {"text": payload["text"]}       # the player sees the text only
            logged = explained_product(e, request.output, GroundTruth(scene_of([]), None, None), 0, None, None)["log"]
            assert logged["payload"]["source"] == payload["source"] and logged["payload"]["check"] == payload["check"]
    unchecked = load_explainer("nle", agent, model=tiny_nle_dir, check_answer=False).explain_batch(swapped)
    assert {e.payload["source"] for e in unchecked} == {"generated"}


def test_the_traced_explanation_is_the_reference_on_the_scene_the_agent_perceived(requests):
    def seen(x1: float, values: tuple[str, str, str, str]) -> Proposal:
        shape, color, size, material = values
        return Proposal(box=(x1, 100.0, x1 + 40, 140.0), score=0.9, mask=None, attention=0.5,
                        attributes={"shape": (shape, 0.9), "color": (color, 0.9), "size": (size, 0.9),
                                    "material": (material, 0.9)})

    proposals = [seen(10, ("cube", "red", "large", "rubber")), seen(200, ("sphere", "blue", "small", "metal"))]
    question = "What color is the thing left of the sphere?"
    output = replace(requests[0].output, question=question, answer="red", proposals=proposals)
    text = traced_explanation(question, output)
    assert text is not None and "red" in text.lower() and "sphere" in text.lower()
    assert check_explanation(question, "red", text).states_answer
    assert traced_explanation(question, replace(output, answer="blue")) is None    # the scene says red
    assert traced_explanation("please tell me a joke", output) is None             # nothing to trace
    for r in requests:   # the tiny agent's own outputs: whatever is traced states the agent's answer
        text = traced_explanation(r.question, r.output)
        if text is not None:
            assert not fails(check_explanation(r.question, r.output.answer, text)), (r.question, r.output.answer, text)


def test_a_program_answer_is_explained_by_the_trace_of_the_program(requests):
    """A symbolic agent's program answer (AgentOutput.program_scene: the reading the program ran on) is
    explained by the reference explanation traced on that reading, with source "program"; an answer the
    trace does not give, or another agent's answer, falls through to the generator."""
    from hand_scenes import FIVE_OBJECTS, hand_scene
    from explainers.nle import program_payload

    scene = hand_scene(FIVE_OBJECTS)     # 0 large red metal cube, ..., 4 small yellow metal cube
    question = "What color is the large cube?"
    output = replace(requests[0].output, question=question, answer="red", answered_by="program", program_scene=scene)
    payload = program_payload(question, output)
    assert payload["source"] == "program" and "red" in payload["text"].lower()
    assert not fails(check_explanation(question, "red", payload["text"]))
    assert program_payload(question, replace(output, answer="blue")) is None          # the trace says red
    assert program_payload(question, replace(output, program_scene=None)) is None     # a classifier's answer


@pytest.mark.parametrize("text, looping", [
    ("a large ball is a large ball is a large ball is a large ball", True),
    ("the large ball is a large ball is a large ball", False),        # "a large ball" twice
    ("there is a cube and a cube", False),
])
def test_a_sentence_that_writes_a_phrase_three_times_loops_and_is_not_shown(text, looping):
    from explainers.nle import loops
    assert loops(text) is looping
    payloads = faithful_payloads(["What shape is the large thing?"], ["sphere"], [text + " It is a sphere."],
                                 lambda indices, constraints: ["The large thing is a sphere."] * len(indices),
                                 lambda i: None)
    assert (payloads[0]["source"] == "regenerated") is looping
