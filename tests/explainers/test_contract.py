"""Every entry of EXPLAINERS, run with the tiny agent: JSON-safe, deterministic for a seed, and the
payload schema of its kind (what the frontend's renderer for that kind relies on)."""
import json
from dataclasses import replace

import numpy as np
import pytest
from PIL import Image

from explainers import EXPLAINERS, Explanation, ExplanationRequest, load_explainer
from explainers.base import json_safe
from explainers.kinds import check_payload
from vqa_agent.agent import VQAAgent


@pytest.fixture(scope="module")
def agent(tiny_agent_dir):
    return VQAAgent.from_pretrained(tiny_agent_dir)


@pytest.fixture(scope="module")
def options(agent_world, tiny_nle_dir, tmp_path_factory):
    return {"relqa": {"world": agent_world, "min_bank": 50, "progress": False,
                      "cache_dir": tmp_path_factory.mktemp("relqa_cache")},
            "nle": {"model": tiny_nle_dir}, "nle-other": {"model": tiny_nle_dir}}


@pytest.fixture(scope="module")
def requests(agent, agent_world):
    images = [np.asarray(Image.open(p).convert("RGB")) for p in sorted((agent_world / "images").glob("*.png"))[:3]]
    questions = ["How many cubes are there?", "What color is the large sphere?", "is there a red thing left of the cube?"]
    plain = tuple(ExplanationRequest(image, q, out, seed=7)
                  for image, q, out in zip(images, questions, agent.answer(images, questions)))
    # as the server sends them: each request knows its round (sham explainers show another image's explanation)
    return [replace(r, round_requests=plain, position=k) for k, r in enumerate(plain)]


def check_schema(kind: str, payload: dict, request: ExplanationRequest) -> None:
    if kind == "attention":
        grid = np.asarray(payload["grid"])
        assert grid.ndim == 2 and abs(grid.sum() - 1) < 1e-3
        height, width = np.asarray(request.image).shape[:2]
        for o in payload["objects"]:
            assert len(o["box"]) == 4 and 0 <= o["weight"] <= 1
            assert o["mask"]["size"] == [height, width] and sum(o["mask"]["counts"]) == height * width
    elif kind == "words":
        assert payload["words"], "at least one word"
        scores = [w["score"] for w in payload["words"]]
        assert scores == sorted(scores)
        for w in payload["words"]:
            assert isinstance(w["word"], str) and 0 <= w["probability"] <= 1 and w["distance"] >= 0
    elif kind == "qa_pairs":
        assert payload["pairs"] and len({p["question"] for p in payload["pairs"]}) == len(payload["pairs"])
        for p in payload["pairs"]:
            assert isinstance(p["question"], str) and isinstance(p["answer"], str) and 0 <= p["probability"] <= 1
            assert p["question"] != request.question
    elif kind == "text":
        assert isinstance(payload["text"], str) and payload["text"].strip()
    else:
        pytest.fail(f"no schema for kind {kind!r}: add one here and a renderer in the frontend")


@pytest.mark.parametrize("name", list(EXPLAINERS))
def test_every_explainer_keeps_the_contract(name, agent, options, requests):
    explainer = load_explainer(name, agent, **options.get(name, {}))
    assert explainer.name == name and isinstance(explainer.kind, str)
    first = explainer.explain_batch(requests)
    again = explainer.explain_batch(requests)
    assert len(first) == len(requests)
    for e, e2, request in zip(first, again, requests):
        assert isinstance(e, Explanation) and (e.explainer, e.kind) == (name, explainer.kind)
        data = e.to_dict()
        assert json.loads(json.dumps(data, allow_nan=False)) == data
        assert e.payload == e2.payload, "the same request and seed must give the same explanation"
        assert e.seconds >= 0
        check_schema(e.kind, e.payload, request)
        check_payload(e.kind, e.payload)      # the kind's own contract, which third-party explainers are held to
    assert explainer.explain_batch([]) == []


def test_unknown_explainers_and_options_are_refused(agent):
    with pytest.raises(ValueError, match="unknown explainer 'magic'"):
        load_explainer("magic", agent)
    with pytest.raises(TypeError, match="unknown options: colour"):
        load_explainer("attention", agent, colour="red")


def test_json_safe_turns_numpy_into_plain_numbers():
    data = json_safe({"a": np.float32(0.1234567891), "b": np.arange(3), "c": (np.bool_(True), float("nan"))})
    assert data == {"a": 0.123457, "b": [0, 1, 2], "c": [True, None]}
    with pytest.raises(TypeError):
        json_safe({"a": object()})
