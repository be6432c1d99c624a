"""The nle explainer: a tiny GPT-2 trained in seconds (through the real command) on the tiny agent's
outputs, explaining requests; its persistence; and the NLG metrics of its benchmark."""
import json
import shutil

import numpy as np
import pytest
import torch

from exag_cli import main as exag
from explainers import load_explainer
from explainers.base import ExplanationRequest
from round_requests import requests_about
from explainers.nle import CHECKPOINT_DIR, resolve_nle_path
from explainers.nle_model import NLEModel, agent_fingerprint
from experiments.benchmark.nle_metrics import nlg_scores
from vqa_agent.agent import VQAAgent

QUESTIONS = ["What color is the large cube?", "How many spheres are there?", "Is there a red cylinder?",
             "Are there more cubes than balls?"]


@pytest.fixture(scope="module")
def tiny_nle_dir(tiny_agent_dir, agent_world, tmp_path_factory):
    out = tmp_path_factory.mktemp("nle")
    assert exag(["train", "nle", "--agent", str(tiny_agent_dir), "--world", str(agent_world), "--out", str(out),
                 "--epochs", "2", "--max-items", "600"]) == 0
    return out


@pytest.fixture(scope="module")
def agent(tiny_agent_dir):
    return VQAAgent.from_pretrained(tiny_agent_dir, device="cpu")


@pytest.fixture(scope="module")
def requests(agent, agent_world):
    return requests_about(agent, agent_world, QUESTIONS, images=3)


def test_training_keeps_the_best_model_with_its_record(tiny_nle_dir, agent):
    for name in ("model.safetensors", "config.json", "vocabulary.json", "training.json"):
        assert (tiny_nle_dir / name).exists()
    training = json.loads((tiny_nle_dir / "training.json").read_text())
    assert [h["epoch"] for h in training["history"]] == [1, 2]
    assert training["history"][1]["val_loss"] < training["history"][0]["val_loss"]
    config = json.loads((tiny_nle_dir / "config.json").read_text())
    assert config["agent_fingerprint"] == agent_fingerprint(agent)


def test_explains_each_request_as_json_safe_deterministic_text(agent, tiny_nle_dir, requests):
    explainer = load_explainer("nle", agent, model=tiny_nle_dir)
    first = explainer.explain_batch(requests)
    again = explainer.explain_batch(requests)
    assert len(first) == len(requests)
    assert all(e.explainer == "nle" and e.kind == "text" and set(e.payload) == {"text", "source", "check"}
               for e in first)
    assert all(isinstance(e.payload["text"], str) and e.payload["text"] for e in first)
    assert json.loads(json.dumps([e.to_dict() for e in first]))[0]["payload"] == first[0].payload
    assert [e.payload for e in first] == [e.payload for e in again]
    assert explainer.explain_batch([]) == []


def test_cached_decoding_matches_decoding_without_a_cache(tiny_nle_dir, requests):
    model = NLEModel.from_pretrained(tiny_nle_dir)
    prompts = model.prompts([r.output for r in requests])
    cached = model.generate(prompts, max_tokens=12, no_repeat_ngram=0)   # plain greedy, as below
    eos = model.tokenizer.eos
    with torch.inference_mode():
        written = torch.zeros(len(requests), 0, dtype=torch.long)
        for _ in range(12):   # the whole sequence again at every step
            embeds, mask, positions = model._embed(prompts, written, torch.ones_like(written, dtype=torch.bool))
            logits = model.gpt(inputs_embeds=embeds, attention_mask=mask, position_ids=positions).logits[:, -1]
            written = torch.cat([written, logits.masked_fill(model.banned, float("-inf")).argmax(-1, keepdim=True)], 1)
    plain = [row[:row.index(eos)] if eos in row else row for row in written.tolist()]
    assert cached == plain


def test_save_and_load_round_trip_is_exact(tiny_nle_dir, requests, tmp_path):
    model = NLEModel.from_pretrained(tiny_nle_dir)
    copy = NLEModel.from_pretrained(model.save_pretrained(tmp_path / "copy"))
    assert copy.config == model.config and copy.tokenizer.words == model.tokenizer.words
    for (name, a), (_, b) in zip(model.state_dict().items(), copy.state_dict().items()):
        assert torch.equal(a, b), name
    outputs = [r.output for r in requests]
    assert copy.explain(outputs) == model.explain(outputs)


def test_default_model_is_the_one_shipped_for_this_agent(agent):
    with pytest.raises(FileNotFoundError, match="exag train nle"):
        resolve_nle_path(agent)                      # the tiny agent has no shipped model
    with pytest.raises(FileNotFoundError, match="no NLE model is shipped for agent 'nobody'"):
        load_explainer("nle", agent, agent_name="nobody")
    if (CHECKPOINT_DIR / "nle-medium" / "config.json").exists():
        assert resolve_nle_path(VQAAgent.from_pretrained("default", device="cpu")) == CHECKPOINT_DIR / "nle-medium"
        assert sum(f.stat().st_size for f in (CHECKPOINT_DIR / "nle-medium").iterdir()) < 6 * 2 ** 20


def test_nlg_metrics_reach_their_maximum_on_identical_text():
    references = [["There is a red cube left of the large sphere.", "A red block is left of the big ball."],
                  ["The small cylinder behind the cube is made of metal."],
                  ["There are two green spheres and a yellow cylinder."]]
    same = nlg_scores([r[0] for r in references], references)
    for metric in ("bleu4", "meteor", "rouge_l", "bertscore_f1", "exact_match"):
        assert same[metric] == pytest.approx(100, abs=0.01), metric
    assert 0 < same["cider"] <= 1000 and same["s_e"] == pytest.approx(100, abs=0.01)
    alone = nlg_scores([r[0] for r in references], [r[:1] for r in references], bertscore=False)
    assert alone["cider"] == pytest.approx(1000, abs=0.01)   # CIDEr-D's maximum, x100
    other = nlg_scores(["The cube is blue.", "There is no cylinder.", "There are two cubes left of the ball."],
                       references)
    for metric in ("bleu4", "meteor", "rouge_l", "cider", "bertscore_f1", "s_e"):
        assert other[metric] < same[metric] - 1, metric
    assert other["exact_match"] == 0 and np.isfinite(list(other.values())).all()


def test_bench_nle_writes_scores_beside_the_random_baseline(tiny_agent_dir, tiny_nle_dir, agent_world, tmp_path):
    out = tmp_path / "nle.json"
    assert exag(["bench", "nle", "--agent", str(tiny_agent_dir), "--model", str(tiny_nle_dir),
                 "--world", str(agent_world), "--max-items", "40", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["items"] == 40 and 0 < report["correct"] <= 40
    for key in ("nle", "random_baseline"):
        assert set(report[key]) >= {"bleu4", "meteor", "rouge_l", "cider", "bertscore_f1", "ngram_score", "s_e",
                                    "s_t", "s_o"}
    assert report["nle"]["s_o"] == pytest.approx(report["nle"]["s_t"] * report["nle"]["s_e"] / 100)
    assert "SPICE" in report["spice"] and report["latency"]["single_p50_ms"] > 0


def test_an_explanation_that_says_another_answer_is_counted_as_a_contradiction():
    from experiments.benchmark.nle_metrics import contradicts_answer
    assert contradicts_answer("2", "count", "There are three red cubes.")
    assert not contradicts_answer("2", "count", "There are two red cubes.")
    assert not contradicts_answer("0", "count", "There is no red cube.")
    assert not contradicts_answer("3", "count", "There are a matte cube and two matte cubes.")
    assert not contradicts_answer("1", "count", "There is a large ball that has the same size as a green block.")
    assert contradicts_answer("4", "count", "There are two cylinders and a cylinder and there are no blue things.")
    assert contradicts_answer("sphere", "query_shape", "The red thing is a cube.")
    assert contradicts_answer("red", "query_color", "There is a small cylinder.") is None   # incomplete, not contrary
    assert not contradicts_answer("sphere", "query_shape", "The red thing is a ball.")
    assert not contradicts_answer("metal", "query_material", "The ball is shiny.")
    assert contradicts_answer("yes", "exist", "There is no red cube.")
    assert not contradicts_answer("no", "exist", "There is no red cube.")
    assert contradicts_answer("no", "exist", "There is a red cube left of the ball.")
    assert contradicts_answer("yes", "equal_color", "The cube is red and the ball is blue.")   # decided (issue 32)
    assert contradicts_answer("yes", "equal_color", "The cube is red.") is None


def test_a_private_agent_carries_its_own_nle_model(tiny_agent_dir, agent_world, tmp_path):
    """Issue 55: a private agent (a checkpoint directory of its own, docs/real-study.md) lost the NLE explainer: no
    shipped model matches its weights, and a study's agent gets none of the server's NLE options. `exag train nle
    --agent DIR` writes DIR/nle, and the explainer finds it there, as a server's worker loads it."""
    from explainers import registry
    from server.worker import WorkerConfig, explainer_options

    private = tmp_path / "private-medium"
    shutil.copytree(tiny_agent_dir, private)
    agent = VQAAgent.from_pretrained(private, device="cpu")
    with pytest.raises(FileNotFoundError, match="writes DIR/nle"):
        resolve_nle_path(agent)
    assert exag(["train", "nle", "--agent", str(private), "--world", str(agent_world), "--epochs", "1",
                 "--max-items", "200"]) == 0
    assert (private / "nle" / "config.json").exists()
    copied = tmp_path / "elsewhere"                  # the directory travels with its NLE
    shutil.copytree(private, copied)
    agent = VQAAgent.from_pretrained(copied, device="cpu")
    assert resolve_nle_path(agent) == copied / "nle"
    options = explainer_options(WorkerConfig("redis://unused", agent_world), str(copied))   # a study's agent
    loaded, unavailable = registry.load_explainers(agent, ["nle"], options)
    assert unavailable == {} and loaded["nle"].path == copied / "nle"
    # weights changed since (trained again): refused with what to do, never explained by a stale model
    (copied / "nle" / "config.json").write_text(json.dumps(
        {**json.loads((copied / "nle" / "config.json").read_text()), "agent_fingerprint": "0" * 32}))
    with pytest.raises(FileNotFoundError, match="trained on another agent"):
        resolve_nle_path(VQAAgent.from_pretrained(copied, device="cpu"))
