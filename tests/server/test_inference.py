"""The predict step of an inference worker answers a batch of rounds of different games in one agent call,
and a batched round gets exactly what it would get alone. (Batching through the Redis streams, across
games and workers: test_worker_queue.py.)"""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from server.inference import Predictor, RoundRequest
from vqa_agent.agent import VQAAgent


@pytest.fixture(scope="module")
def predictor(tiny_agent_dir, agent_world, tiny_nle_dir):
    agent = VQAAgent.from_pretrained(tiny_agent_dir)
    return Predictor(agent, {"relqa": {"world": agent_world, "min_bank": 50, "progress": False},
                             "nle": {"model": tiny_nle_dir}})


def answer(predictor: Predictor, request: RoundRequest):
    """One round alone, refused as the worker refuses it (ValueError) before it joins a batch."""
    predictor.check(request)
    result, = predictor.predict([request])
    if isinstance(result, Exception):
        raise result
    return result


def close(a, b, tolerance: float = 1e-3) -> bool:
    """Equal up to float noise (a batch pads questions to a common length, which moves the last digits)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(close(a[k], b[k], tolerance) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(close(x, y, tolerance) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= tolerance * max(1.0, abs(a), abs(b))
    return a == b


def images_of(world, n: int, offset: int) -> list[np.ndarray]:
    paths = sorted((world / "images").glob("*.png"))[offset:offset + n]
    return [np.asarray(Image.open(p).convert("RGB")) for p in paths]


def test_rounds_of_different_games_share_a_batch_and_match_single_rounds(predictor, agent_world):
    assert not predictor.unavailable
    requests = [RoundRequest(images_of(agent_world, 5, 5 * g), q, secret=g % 5, for_every_image=("attention",),
                             for_the_secret=("objscene", "relqa", "nle"))
                for g, q in enumerate(["is there a red cube?", "how many spheres are there?",
                                       "what color is the large cylinder?", "is there a metal thing?"])]
    results = predictor.predict(requests)
    assert [r.batch_rounds for r in results] == [len(requests)] * len(requests)
    for request, batched in zip(requests, results):
        alone = answer(predictor, request)
        assert alone.batch_rounds == 1
        assert [o.answer for o in batched.outputs] == [o.answer for o in alone.outputs]
        assert close([[e.payload for e in es] for es in batched.for_every_image],
                     [[e.payload for e in es] for es in alone.for_every_image])
        assert close([e.payload for e in batched.for_the_secret], [e.payload for e in alone.for_the_secret])
        assert [e.kind for e in batched.for_the_secret] == ["words", "qa_pairs", "text"]


def test_a_plain_round_is_answered_about_the_secret_alone_with_the_same_answer(predictor, agent_world):
    """Issue 29: nothing shows or logs the answers about the other images of a round without explanations
    for every image, so the agent answers about the secret only (a 20th of a 20-image round's work), and
    that answer is the one it gives when it answers on every image."""
    images = images_of(agent_world, 6, 2)
    for question in ["is there a red cube?", "how many spheres are there?", "what color is the large cylinder?"]:
        plain = answer(predictor, RoundRequest(images, question, secret=4))
        assert [o is None for o in plain.outputs] == [True] * 4 + [False, True]
        every = answer(predictor, RoundRequest(images, question, secret=4, for_every_image=("attention",)))
        assert all(o is not None for o in every.outputs)
        assert plain.outputs[4].answer == every.outputs[4].answer
        assert close([list(t) for t in plain.outputs[4].top_k], [list(t) for t in every.outputs[4].top_k])
        secret_only = answer(predictor, RoundRequest(images, question, secret=4, for_the_secret=("objscene", "nle")))
        assert [o is None for o in secret_only.outputs] == [True] * 4 + [False, True]
        assert [e.kind for e in secret_only.for_the_secret] == ["words", "text"]


def test_unknown_explainers_are_refused(predictor, agent_world):
    with pytest.raises(ValueError, match="not available"):
        answer(predictor, RoundRequest(images_of(agent_world, 2, 0), "is there a cube?", 0, ("telepathy",)))


def test_a_bad_round_fails_only_itself_never_its_batch_neighbours(predictor, agent_world):
    """Issue 10, finding 1: one round that breaks inside the batched call (here: a broken image) used to
    fail every round batched with it."""
    good = [RoundRequest(images_of(agent_world, 5, 5 * g), "is there a red cube?", secret=0,
                         for_every_image=("attention",), for_the_secret=("relqa",)) for g in range(5)]
    broken = RoundRequest([None] * 5, "is there a red cube?", secret=0)
    outcomes = predictor.predict(good[:2] + [broken] + good[2:])
    assert isinstance(outcomes[2], Exception)
    answered = [o for i, o in enumerate(outcomes) if i != 2]
    assert all(not isinstance(o, Exception) for o in answered), answered
    assert all(o.outputs[0].answer in ("yes", "no") for o in answered)


@pytest.mark.parametrize("question", ["???", "😀😀", "есть ли красный куб?", "红色立方体?", "is there a красный cube?",
                                      "xyzzy plugh"])
def test_questions_the_agent_cannot_read_get_an_honest_message(predictor, agent_world, question):
    with pytest.raises(ValueError, match="I only understand English questions about the objects in the images"):
        answer(predictor, RoundRequest(images_of(agent_world, 2, 0), question, 0))
