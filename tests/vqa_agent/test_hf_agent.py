"""The hf:PATH adapter (vqa_agent/hf_agent.py): a transformers ViLT or BLIP VQA model from a local directory
answers as a game agent does, is named `hf:PATH` wherever an agent name goes, and is refused in one line
when the directory holds no such model. The models are tiny and random (tests/hf_models.py): the answers
mean nothing, the contract is what is checked."""
from __future__ import annotations

import json
import logging
import shutil

import numpy as np
import pytest
import torch
from PIL import Image

from explainers.agent_interface import Agent, missing_capabilities
from explainers.attention import AttentionExplainer, attribution_map
from explainers.base import ExplanationRequest
from explainers.kinds import check_payload
from explainers.registry import BUILTIN, entry, load_explainer
from explainers.table_entry import explainer_class
from vqa_agent.agent import KnownImage
from vqa_agent.checkpoints import (HFAgentError, checkpoint_files, checkpoint_fingerprint, hf_path, is_hf_agent,
                                   is_shipped, resolve_agent_path)
from vqa_agent.hf_agent import MAX_BATCH, HFVQAAgent
from vqa_agent.loading import load_agent
from vqa_agent.tokenizer import QuestionError

from hf_models import ANSWERS, make_tiny_bert, make_tiny_blip, make_tiny_vilt

QUESTION = "is there a red cube?"


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One torch thread, as a worker runs (and as the busy test machines want); restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf_models")
    return {"vilt": make_tiny_vilt(root / "vilt"), "blip": make_tiny_blip(root / "blip")}


@pytest.fixture(scope="module", params=["vilt", "blip"])
def agent(request, model_dirs):
    return load_agent(f"hf:{model_dirs[request.param]}", device="cpu")


@pytest.fixture(scope="module")
def vilt(model_dirs):
    return load_agent(f"hf:{model_dirs['vilt']}", device="cpu")


def drawn_images(n: int, seed: int = 0) -> list:
    """Images as the game and the explainers hand them over: arrays and PIL images of several sizes, a
    grey one, and a pool image (KnownImage)."""
    rng = np.random.default_rng(seed)
    sizes = [(240, 320), (100, 60), (64, 64), (120, 200), (33, 47)]
    images = []
    for i in range(n):
        pixels = rng.integers(0, 256, sizes[i % len(sizes)] + (3,), dtype=np.uint8)
        pixels[: pixels.shape[0] // 2, : pixels.shape[1] // 3] = (200, 30, 30)      # something to look at
        kind = i % 4
        images.append(pixels if kind == 0 else Image.fromarray(pixels) if kind == 1 else
                      pixels[:, :, 0] if kind == 2 else KnownImage(f"drawn-{seed}-{i}", lambda p=pixels: p))
    return images


def check_output(agent, output, question: str) -> None:
    assert output.question == question and isinstance(output.answer, str)
    probabilities = [p for _, p in output.top_k]
    assert output.answer == output.top_k[0][0] and output.probability == probabilities[0]
    assert all(0 <= p <= 1 for p in probabilities) and sum(probabilities) <= 1 + 1e-5
    assert probabilities == sorted(probabilities, reverse=True) and 1 <= len(output.top_k) <= 5
    if agent.is_vilt:
        assert {a for a, _ in output.top_k} <= set(ANSWERS)
    grid = output.spatial_attention
    assert grid.ndim == 2 and grid.dtype == np.float32 and (grid >= 0).all() and abs(grid.sum() - 1) < 1e-5
    assert output.proposals == [] and output.concept_probabilities == {}
    assert output.question_embedding.shape == (agent.question_dim,)
    assert output.unknown_words == [] and output.outside_words == [] and output.refusal is None
    assert output.answered_by == "classifier"


def test_answers_are_agent_outputs(agent):
    images = drawn_images(5)
    outputs = agent.answer(images, QUESTION)
    assert len(outputs) == 5
    for output in outputs:
        check_output(agent, output, QUESTION)
    assert isinstance(agent, Agent) and agent.capabilities == {"answer", "attention", "question_embedding",
                                                                "text_embedding", "fingerprint"}
    # a question per image, and what no agent can answer
    questions = ["what color is the dog?", "how many cats are there?"]
    for output, question in zip(agent.answer(images[:2], questions), questions):
        check_output(agent, output, question)
    assert agent.answer([], []) == []
    with pytest.raises(ValueError, match="2 images but 3 questions"):
        agent.answer(images[:2], ["a", "b", "c"])


def test_the_grid_follows_the_image_not_the_batch(agent):
    image = drawn_images(1)[0]                         # 240 x 320
    alone = agent.answer([image], QUESTION)[0].spatial_attention
    shapes = {o.spatial_attention.shape for o in agent.answer([image] * 3 + drawn_images(3, seed=4), QUESTION)[:3]}
    assert shapes == {alone.shape}
    if agent.is_vilt:     # the processor keeps the aspect: 64 x 80 pixels, 4 x 5 patches of 16
        assert alone.shape == (4, 5)
    else:                 # BLIP resizes to its square input: 64 x 64, 4 x 4 patches
        assert alone.shape == (4, 4)


def test_answers_are_the_same_on_repeat(agent):
    images = drawn_images(6)
    first, second = agent.answer(images, QUESTION), agent.answer(images, QUESTION)
    for a, b in zip(first, second):
        assert a.top_k == b.top_k
        np.testing.assert_array_equal(a.spatial_attention, b.spatial_attention)
        np.testing.assert_array_equal(a.question_embedding, b.question_embedding)


def test_a_round_of_20_images_in_one_batch_is_each_image_alone(agent):
    images = drawn_images(MAX_BATCH, seed=1)
    together = agent.answer(images, QUESTION)
    for image, batched in zip(images, together):
        alone = agent.answer([image], QUESTION)[0]
        assert [a for a, _ in alone.top_k] == [a for a, _ in batched.top_k]
        np.testing.assert_allclose([p for _, p in alone.top_k], [p for _, p in batched.top_k], atol=1e-5)
        np.testing.assert_allclose(alone.spatial_attention, batched.spatial_attention, atol=1e-5)
    agent.batch_invariant = True            # the game's reproducible mode: each image in a pass of its own
    try:
        invariant = agent.answer(images, QUESTION)
    finally:
        agent.batch_invariant = False
    np.testing.assert_allclose(invariant[3].spatial_attention, together[3].spatial_attention, atol=1e-5)


def test_embeddings(agent):
    images = drawn_images(7)
    vectors = agent.embed_images(images, batch_size=3)
    assert vectors.shape == (7, agent.dim) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    np.testing.assert_allclose(agent.embed_images(images[2:3]), vectors[2:3], atol=1e-5)
    assert agent.embed_images([]).shape == (0, agent.dim)
    texts = agent.embed_texts(["is there a dog?", "what color is it?", "a"])
    assert texts.shape == (3, agent.question_dim) and texts.dtype == np.float32
    question = agent.answer(images[:1], QUESTION)[0].question_embedding
    np.testing.assert_allclose(question, agent.embed_texts([QUESTION])[0], atol=1e-5)


def test_no_question_is_refused_for_its_words(agent):
    agent.vocabulary.check("is the zebra playing a saxophone?")          # the game's check: nothing to refuse
    output = agent.answer(drawn_images(1), "is the zebra playing a saxophone?")[0]
    assert output.refusal is None and output.unknown_words == [] and output.outside_words == []
    assert output.probability > 0 or not agent.is_vilt      # (a random BLIP's beams are ~1e-5 likely)
    for nothing in ("", "   ", None):
        with pytest.raises(QuestionError):
            agent.vocabulary.check(nothing)
    agent.prepare(drawn_images(2))                                       # nothing to prepare, nothing kept
    assert agent.load_seen("nowhere") == 0


def test_fingerprint(model_dirs, tmp_path):
    vilt_dir = model_dirs["vilt"]
    first = load_agent(f"hf:{vilt_dir}", device="cpu").fingerprint()
    assert first == checkpoint_fingerprint(f"hf:{vilt_dir}") == HFVQAAgent(vilt_dir, device="cpu").fingerprint()
    moved = shutil.copytree(vilt_dir, tmp_path / "elsewhere")
    assert checkpoint_fingerprint(f"hf:{moved}") == first                 # the same wherever it lies
    make_tiny_vilt(moved, seed=1)                                        # other weights in place
    assert checkpoint_fingerprint(f"hf:{moved}") != first
    assert load_agent(f"hf:{moved}", device="cpu").fingerprint() != first
    assert checkpoint_fingerprint(f"hf:{model_dirs['blip']}") not in (first, checkpoint_fingerprint(f"hf:{moved}"))


def test_hf_names(model_dirs):
    name = f"hf:{model_dirs['blip']}"
    assert is_hf_agent(name) and not is_hf_agent("default") and not is_hf_agent(str(model_dirs["blip"]))
    assert resolve_agent_path(name) == hf_path(name) == model_dirs["blip"]
    assert not is_shipped(name)
    files = {f.name for f in checkpoint_files(name)}
    assert {"config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json"} <= files
    loaded = load_agent(name, device="auto")
    assert isinstance(loaded, HFVQAAgent) and loaded.architecture == "BlipForQuestionAnswering"
    assert loaded.device == torch.device("cuda" if torch.cuda.is_available() else "cpu")


def test_a_gpu_asked_for_where_there_is_none_is_the_cpu(model_dirs, caplog, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with caplog.at_level(logging.WARNING, logger="vqa_agent.hf_agent"):
        agent = load_agent(f"hf:{model_dirs['vilt']}", device="cuda")
    assert agent.device == torch.device("cpu") and agent.dtype == torch.float32
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "no CUDA GPU" in warned[0] and "CPU" in warned[0] and "\n" not in warned[0]
    check_output(agent, agent.answer(drawn_images(1), QUESTION)[0], QUESTION)


def test_what_is_no_vqa_model_is_refused_in_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    bert = make_tiny_bert(tmp_path / "bert")
    cases = {tmp_path / "missing": "no such directory", tmp_path / "empty": "no config.json",
             bert: "is a bert model; supported: ViltForQuestionAnswering, BlipForQuestionAnswering"}
    for path, why in cases.items():
        for attempt in (lambda: load_agent(f"hf:{path}"), lambda: checkpoint_fingerprint(f"hf:{path}"),
                        lambda: HFVQAAgent(path)):
            with pytest.raises(HFAgentError) as raised:
                attempt()
            assert why in str(raised.value) and str(path) in str(raised.value) and "\n" not in str(raised.value)
    assert isinstance(HFAgentError("x"), FileNotFoundError)      # reported as a missing checkpoint is


def test_exag_ask_answers_with_it(model_dirs, tmp_path):
    """`exag ask --agent hf:DIR` prints the adapter's outputs; a directory that holds none is one line."""
    from cli import exag

    image = tmp_path / "image.png"
    Image.fromarray(drawn_images(1)[0]).save(image)
    done = exag("ask", "--agent", f"hf:{model_dirs['vilt']}", "--image", image, "--device", "cpu", QUESTION, "why?")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["question"] for line in lines] == [QUESTION, "why?"] and lines[0]["proposals"] == []
    assert lines[0]["answer"] in ANSWERS and lines[1]["refusal"] is None
    failed = exag("ask", "--agent", f"hf:{tmp_path}", "--image", image, QUESTION)
    assert failed.returncode == 2 and failed.stderr.strip() == \
        f"exag: error: {tmp_path} is not a transformers VQA model directory (no config.json)"


def test_explainers_that_need_what_the_adapter_lacks_are_refused(vilt, tiny_world, tmp_path):
    for row in BUILTIN:
        if row.imitates:
            continue
        missing = missing_capabilities(vilt, explainer_class(row).requires)
        if missing:     # objscene (concepts), introspect and nle (proposals, concepts)
            with pytest.raises(ValueError, match=f"the {row.name} explainer needs {missing[0]}"):
                load_explainer(row.name, vilt)
        else:
            assert row.name in ("relqa", "attention")
    assert missing_capabilities(vilt, explainer_class(entry("objscene")).requires) == ["concepts"]
    # RelQA needs only answers, text embeddings and the fingerprint: it runs on the adapter
    relqa = load_explainer("relqa", vilt, world=tiny_world, n=2, min_bank=5, progress=False, cache_dir=tmp_path)
    image = drawn_images(1)[0]
    output = vilt.answer([image], QUESTION)[0]
    [explanation] = relqa.explain_batch([ExplanationRequest(image, QUESTION, output)])
    check_payload("qa_pairs", explanation.payload)
    assert len(explanation.payload["pairs"]) == 2


def test_the_attention_explainer_draws_the_adapters_attention(agent):
    """The adapter's grid makes a valid attention explanation (a heatmap, no object outlines) for a round:
    the attention explainer needs only the attention grid, so the registry loads it for the adapter."""
    images = drawn_images(5, seed=2)
    outputs = agent.answer(images, QUESTION)
    explainer = load_explainer("attention", agent)
    assert isinstance(explainer, AttentionExplainer)
    requests = [ExplanationRequest(image, QUESTION, output) for image, output in zip(images, outputs)]
    requests = [ExplanationRequest(r.image, r.question, r.output, round_requests=tuple(requests), position=k)
                for k, r in enumerate(requests)]
    explanations = explainer.explain_batch(requests)
    assert len(explanations) == 5
    for image, explanation in zip(images, explanations):
        check_payload("attention", explanation.payload)
        assert explanation.payload["objects"] == []
        shape = np.asarray(image.load() if isinstance(image, KnownImage) else image).shape[:2]
        assert abs(attribution_map(explanation.payload, shape).sum() - 1) < 1e-4


def test_an_inference_worker_plays_a_round_with_it(vilt, tiny_world, tmp_path):
    """What a worker asks of its agent (server/inference.py): the question checked, the images prepared, one
    question over the round's images answered and explained; explainers it cannot serve are unavailable."""
    from server.inference import Predictor, RoundRequest

    predictor = Predictor(vilt, {"relqa": {"world": tiny_world, "n": 2, "min_bank": 5, "progress": False,
                                           "cache_dir": tmp_path}})
    assert {"relqa", "attention"} <= set(predictor.explainers) and "proposals" in predictor.unavailable["nle"]
    assert "concepts" in predictor.unavailable["objscene"]
    images = list(np.random.default_rng(3).integers(0, 256, (5, 240, 320, 3), dtype=np.uint8))   # a pool's size
    request = RoundRequest(images, "how many dogs are left of the red sphere?", secret=1, for_every_image=("relqa",))
    predictor.check(request)
    predictor.prepare(images)
    [result] = predictor.predict([request])
    assert not isinstance(result, Exception), result
    assert all(o is not None and o.refusal is None for o in result.outputs)
    assert [e[0].explainer for e in result.for_every_image] == ["relqa"] * len(images)
    with pytest.raises(ValueError, match="not available: nle"):
        predictor.check(RoundRequest(images, QUESTION, secret=0, for_the_secret=("nle",)))
