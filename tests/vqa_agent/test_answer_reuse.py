"""Issue 29: the agent reuses what does not change between calls (a pool image's content key, a question's
reading once per round) and must answer exactly as if it had computed everything afresh."""
import dataclasses
import json

import numpy as np
import pytest
from PIL import Image

from vqa_agent.agent import VQAAgent

QUESTIONS = ["is there a red cube?", "how many spheres are there?", "what color is the large cylinder?",
             "is there a zebra?", "what shape is the small grene thing?"]


def _plain(output) -> dict:
    """An answer as comparable data (arrays as lists)."""
    return json.loads(json.dumps(dataclasses.asdict(output), default=lambda a: np.asarray(a).tolist()))


@pytest.fixture(scope="module")
def images(agent_world):
    scenes = json.loads((agent_world / "scenes.json").read_text())["scenes"][:6]
    return [np.asarray(Image.open(agent_world / "images" / s["image_filename"]).convert("RGB")) for s in scenes]


def test_read_only_pool_images_and_fresh_copies_get_the_same_answers(tiny_agent_dir, images):
    assert not images[0].flags.writeable        # as GamePool.image gives them: the key is remembered by identity
    remembering, fresh = VQAAgent.from_pretrained(tiny_agent_dir), VQAAgent.from_pretrained(tiny_agent_dir)
    for question in QUESTIONS:
        for _ in range(2):                       # the second time from the remembered keys and features
            again = remembering.answer(images, question)
            fresh._cache.clear()                 # nothing remembered: copies hashed, features computed anew
            afresh = fresh.answer([image.copy() for image in images], question)
            assert [_plain(a) for a in again] == [_plain(b) for b in afresh]
    assert len(remembering._keys) == len(images) and not fresh._keys     # writeable copies are never remembered


def test_a_batch_of_questions_reads_each_once_and_answers_as_alone(tiny_agent_dir, images):
    agent = VQAAgent.from_pretrained(tiny_agent_dir)
    asked = [QUESTIONS[k % len(QUESTIONS)] for k in range(len(images))]
    together = agent.answer(images, asked)
    alone = [agent.answer([image], question)[0] for image, question in zip(images, asked)]
    for a, b in zip(together, alone):
        assert (a.question, a.answer, a.unknown_words, a.outside_words, a.refusal, a.answered_by) == \
            (b.question, b.answer, b.unknown_words, b.outside_words, b.refusal, b.answered_by)
    assert any(o.refusal for o in together) and any(not o.refusal for o in together)


def test_a_changed_image_is_never_mistaken_for_the_one_it_was(tiny_agent_dir, images):
    agent = VQAAgent.from_pretrained(tiny_agent_dir)
    image = images[0].copy()                      # writeable: its key is its content, every time
    before = agent.answer([image], "how many spheres are there?")[0]
    image[:] = images[1]
    after = agent.answer([image], "how many spheres are there?")[0]
    assert _plain(after) == _plain(agent.answer([images[1].copy()], "how many spheres are there?")[0])
    assert _plain(before) == _plain(agent.answer([images[0].copy()], "how many spheres are there?")[0])


def test_brief_answers_are_the_full_answers_without_proposals(tiny_agent_dir, images):
    """Issue 45: RelQA's related questions are answered briefly (no proposal masks), with the very answers,
    probabilities, alternatives and ways of answering of a full answer; an agent that cannot answer briefly
    answers in full."""
    from explainers.agent_interface import brief_answers

    agent = VQAAgent.from_pretrained(tiny_agent_dir)
    questions = [QUESTIONS[k % len(QUESTIONS)] for k in range(len(images))]
    full, brief = agent.answer(images, questions), brief_answers(agent, images, questions)
    assert [(o.answer, o.probability, o.top_k, o.answered_by, o.refusal) for o in brief] == \
        [(o.answer, o.probability, o.top_k, o.answered_by, o.refusal) for o in full]
    assert all(not o.proposals for o in brief) and any(o.proposals for o in full)

    class Plain:                     # an agent without `answers_briefly` (an adapter written elsewhere)
        def answer(self, images, questions):
            return agent.answer(images, questions)

    assert [_plain(o) for o in brief_answers(Plain(), images, questions)] == [_plain(o) for o in full]


def test_brief_answers_of_a_symbolic_agent_skip_the_network_for_program_answers():
    """Issue 53: a question its program answers needs no classifier when the caller reads the answer alone
    (RelQA): the answer, probability and way of answering are the full answer's; top_k is the program's
    answer alone, and the network's attention is not computed."""
    from explainers.agent_interface import brief_answers
    from hand_scenes import FIVE_OBJECTS, hand_scene
    from vqa_agent.world.render import render

    agent = VQAAgent.from_pretrained("medium", device="cpu")
    image = render(hand_scene(FIVE_OBJECTS)).image
    questions = ["is there a red cube?", "how many spheres are there?", "what color is the large cylinder?",
                 "is the red cube left of the blue sphere and behind the yellow cube and right of the cylinder?"]
    full, brief = agent.answer([image] * 4, questions), brief_answers(agent, [image] * 4, questions)
    assert [(o.answer, o.answered_by) for o in brief] == [(o.answer, o.answered_by) for o in full]
    # a program's probability exactly; the classifier's within a batch's last bits (it reasons in a smaller
    # batch here: server/inference.py says how a batch's shape moves them)
    for b, f in zip(brief, full):
        assert b.probability == f.probability if f.answered_by == "program" else b.probability == pytest.approx(f.probability, rel=1e-5)
    programs = [o for o in brief if o.answered_by == "program"]
    assert programs and all(o.top_k == [(o.answer, o.probability)] and o.network_attention is None for o in programs)
    assert all(o.network_attention is not None for o in brief if o.answered_by == "classifier")
