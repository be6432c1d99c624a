"""Sham explainers with the tiny agent: each image shows the real explainer's output for another image of
its own round (a derangement drawn from the round's seed), rounds explained in one batch never mix, and a
request without its round is refused."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from PIL import Image

from explainers import ExplanationRequest, load_explainer
from explainers.sham import derangement
from vqa_agent.agent import VQAAgent


@pytest.fixture(scope="module")
def agent(tiny_agent_dir):
    return VQAAgent.from_pretrained(tiny_agent_dir)


def a_round(agent, world, question: str, offset: int, n: int, seed: int) -> list[ExplanationRequest]:
    """The requests of one game round (as server/inference.py makes them): `question` on n images."""
    paths = sorted((world / "images").glob("*.png"))[offset:offset + n]
    images = [np.asarray(Image.open(p).convert("RGB")) for p in paths]
    plain = tuple(ExplanationRequest(image, question, out, seed)
                  for image, out in zip(images, agent.answer(images, [question] * n)))
    return [replace(r, round_requests=plain, position=k) for k, r in enumerate(plain)]


def test_a_derangement_moves_every_image_and_is_the_same_for_a_seed():
    for n in range(2, 9):
        for seed in range(30):
            p = derangement(n, seed)
            assert sorted(p) == list(range(n)) and all(p[k] != k for k in range(n))
            assert derangement(n, seed) == p
    assert derangement(2, 5) == [1, 0]
    assert len({tuple(derangement(5, seed)) for seed in range(20)}) > 1, "the seed chooses the derangement"
    with pytest.raises(ValueError):
        derangement(1, 0)


def test_shuffled_attention_shows_another_image_of_the_same_round(agent, agent_world):
    rounds = [a_round(agent, agent_world, "is there a red cube?", 0, 5, seed=3),
              a_round(agent, agent_world, "how many spheres are there?", 5, 4, seed=8),
              a_round(agent, agent_world, "what color is the large cylinder?", 9, 2, seed=0)]
    # the rounds' requests interleaved, as a worker's batch of several games mixes them
    batch = [rnd[k] for k in range(5) for rnd in rounds if k < len(rnd)]
    assert len(batch) == 11
    real = load_explainer("attention", agent)
    sham = load_explainer("attention-shuffled", agent)
    shown = sham.explain_batch(batch)
    again = sham.explain_batch(batch)
    truth = {id(r): e.payload for r, e in zip(batch, real.explain_batch(batch))}
    assert [e.payload for e in again] == [e.payload for e in shown], "deterministic for the rounds' seeds"
    for request, explanation in zip(batch, shown):
        assert (explanation.explainer, explanation.kind) == ("attention-shuffled", "attention")
        mine = [truth[id(r)] for rnd in rounds for r in rnd if r.round_requests is request.round_requests]
        own = mine[request.position]
        assert explanation.payload != own, "no image shows its own attention"
        assert explanation.payload in mine, "another image's real attention, of the same round"
        p = derangement(len(mine), request.seed)
        assert explanation.payload == mine[p[request.position]]
    # within a round, each real map is shown exactly once
    for rnd in rounds:
        ours = [e.payload for r, e in zip(batch, shown) if r.round_requests is rnd[0].round_requests]
        theirs = [truth[id(r)] for r in rnd]
        assert sorted(map(repr, ours)) == sorted(map(repr, theirs))


def test_nle_other_for_the_secret_is_another_images_sentence(agent, agent_world, tiny_nle_dir):
    rnd = a_round(agent, agent_world, "is there a metal thing?", 3, 5, seed=11)
    secret = 2
    real = load_explainer("nle", agent, model=tiny_nle_dir)
    sham = load_explainer("nle-other", agent, explainer=real)    # shares the real one, as the server does
    [shown] = sham.explain_batch([rnd[secret]])                   # the secret alone, its round known
    sentences = [e.payload for e in real.explain_batch(rnd)]
    assert (shown.explainer, shown.kind) == ("nle-other", "text")
    assert shown.payload == sentences[derangement(5, 11)[secret]]
    # the same sentence the secret gets when the sham runs on every image
    assert sham.explain_batch(rnd)[secret].payload == shown.payload


def test_a_sham_needs_the_other_images_of_its_round(agent, agent_world, tiny_nle_dir):
    [alone] = a_round(agent, agent_world, "is there a red cube?", 0, 1, seed=0)
    sham = load_explainer("attention-shuffled", agent)
    with pytest.raises(ValueError, match="other images of its round"):
        sham.explain_batch([alone])
    with pytest.raises(ValueError, match="other images of its round"):
        sham.explain_batch([replace(alone, round_requests=())])
    with pytest.raises(ValueError, match="shows the nle explainer"):
        load_explainer("nle-other", agent, explainer=load_explainer("attention", agent))
    with pytest.raises(TypeError, match="unknown options"):
        load_explainer("attention-shuffled", agent, colour="red")     # options go to the imitated explainer
