"""RelQAs: related questions from a bank, retrieved by the agent's question encoder, answered on the image."""
import json
import os
import shutil

import numpy as np
import pytest

from experiments.benchmark.relqa_speed import main as relqa_speed
from explainers.base import ExplanationRequest
from explainers.relqa import PARAPHRASE_JACCARD, RelQAExplainer, is_paraphrase, jaccard, question_words
from explainers.relqa_index import agent_fingerprint, index_path
from vqa_agent.agent import VQAAgent

SMALL_BANK = 100   # the test world's val split has ~300 questions; the default world's 10,000


@pytest.fixture(scope="module")
def agent(tiny_agent_dir):
    return VQAAgent.from_pretrained(tiny_agent_dir, device="cpu")


@pytest.fixture
def world(agent_world, tmp_path):
    """A private copy of what RelQA reads from a world, so tests can change its bank."""
    copy = tmp_path / "world"
    copy.mkdir()
    for name in ("manifest.json", "questions.json"):
        shutil.copy2(agent_world / name, copy / name)
    return copy


@pytest.fixture(scope="module")
def explainer(agent, agent_world, tmp_path_factory):
    return RelQAExplainer(agent, world=agent_world, min_bank=SMALL_BANK, progress=False,
                          cache_dir=tmp_path_factory.mktemp("relqa_cache"))


@pytest.fixture(scope="module")
def requests(agent, agent_world, explainer):
    images = sorted((agent_world / "images").glob("EXAG_pool_*.png"))[:3]
    questions = ["what color is the large cube?", "is there a red sphere?",
                 explainer.index.questions[7]]   # verbatim from the bank: its nearest entry is itself
    outputs = agent.answer(images, questions)
    return [ExplanationRequest(image, q, out) for image, q, out in zip(images, questions, outputs)]


def test_paraphrases_are_recognized():
    assert is_paraphrase("Is there a red cube?", "Are there any red blocks?")
    assert is_paraphrase("What color is the large cube?", "What is the color of the big block?")
    assert is_paraphrase("How many balls are there?", "What number of spheres are there?")
    assert is_paraphrase("Is the cube to the left of the ball?", "Is the block left of the sphere?")
    assert not is_paraphrase("What color is the large cube?", "What color is the small cube?")
    assert not is_paraphrase("Is there a red cube?", "How many red cubes are there?")
    assert question_words("Are there any big balls?") == {"large", "sphere"}


def test_never_the_asked_question_nor_a_paraphrase_and_n_distinct_pairs(explainer, requests):
    explanations = explainer.explain_batch(requests)
    assert [(e.explainer, e.kind) for e in explanations] == [("relqa", "qa_pairs")] * len(requests)
    for request, explanation in zip(requests, explanations):
        pairs = explanation.payload["pairs"]
        assert len(pairs) == explainer.n == 5
        texts = [p["question"] for p in pairs]
        assert request.question not in texts
        assert all(jaccard(question_words(t), question_words(request.question)) <= PARAPHRASE_JACCARD for t in texts)
        assert all(not is_paraphrase(a, b) for i, a in enumerate(texts) for b in texts[i + 1:])
        distances = [p["distance"] for p in pairs]
        assert distances == sorted(distances)
        json.dumps(explanation.to_dict())


def test_pairs_are_answered_by_the_agent_on_the_requests_image(agent, explainer, requests):
    payloads = explainer.payloads(requests)
    for request, payload in zip(requests, payloads):
        questions = [p["question"] for p in payload["pairs"]]
        direct = agent.answer([request.image] * len(questions), questions)
        assert [p["answer"] for p in payload["pairs"]] == [d.answer for d in direct]
        np.testing.assert_allclose([p["probability"] for p in payload["pairs"]], [d.probability for d in direct],
                                   rtol=1e-4)
    # batching requests changes nothing but float rounding
    alone = [explainer.payloads([r])[0] for r in requests]
    for one, batched in zip(alone, payloads):
        assert [(p["question"], p["answer"]) for p in one["pairs"]] == \
            [(p["question"], p["answer"]) for p in batched["pairs"]]
        for key in ("probability", "distance"):
            np.testing.assert_allclose([p[key] for p in one["pairs"]], [p[key] for p in batched["pairs"]], atol=1e-5)


def test_retrieval_uses_the_agents_answer(explainer):
    question = "what color is the large cube?"
    first, second = explainer.retrieve([question, question], ["red", "blue"])
    assert first != second


def test_index_is_cached_reused_and_rebuilt_when_the_bank_changes(agent, world):
    first = RelQAExplainer(agent, world=world, min_bank=SMALL_BANK, progress=False)
    path = index_path(world, agent_fingerprint(agent), "val")
    assert first.index.origin == "built" and first.index.path == path and path.exists()
    written = path.stat().st_mtime_ns

    second = RelQAExplainer(agent, world=world, min_bank=SMALL_BANK, progress=False)
    assert second.index.origin == "cached" and path.stat().st_mtime_ns == written
    np.testing.assert_array_equal(second.index.embeddings, first.index.embeddings)

    stat = (world / "questions.json").stat()   # same bank, newer file: the embeddings are kept
    os.utime(world / "questions.json", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    touched = RelQAExplainer(agent, world=world, min_bank=SMALL_BANK, progress=False)
    assert touched.index.origin == "revalidated"
    assert RelQAExplainer(agent, world=world, min_bank=SMALL_BANK, progress=False).index.origin == "cached"

    data = json.loads((world / "questions.json").read_text())
    val = next(q for q in data["questions"] if q["split"] == "val")
    val["question"] = "Is there a purple cylinder behind the tiny ball?"
    (world / "questions.json").write_text(json.dumps(data))
    changed = RelQAExplainer(agent, world=world, min_bank=SMALL_BANK, progress=False)
    assert changed.index.origin == "built"
    assert "Is there a purple cylinder behind the tiny ball?" in changed.index.questions
    assert len(list(path.parent.glob("*.tmp"))) == 0   # atomic writes leave no temporary files

    path.write_bytes(b"half an index")   # a damaged cache is rebuilt, not trusted
    assert RelQAExplainer(agent, world=world, min_bank=SMALL_BANK, progress=False).index.origin == "built"


def test_an_unwritable_cache_costs_a_warning_not_the_explainer(agent, world, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    with pytest.warns(UserWarning, match="cannot cache"):
        explainer = RelQAExplainer(agent, world=world, min_bank=SMALL_BANK, progress=False, cache_dir=blocked)
    assert len(explainer.index) >= SMALL_BANK and explainer.retrieve(["is there a cube?"], ["yes"])[0]


def test_small_banks_and_missing_worlds_are_clear_errors(agent, world, tmp_path):
    with pytest.raises(ValueError, match="min_bank"):
        RelQAExplainer(agent, world=world, progress=False, cache_dir=tmp_path / "cache")
    with pytest.raises(FileNotFoundError, match="not a built world"):
        RelQAExplainer(agent, world=tmp_path / "nowhere", min_bank=1, progress=False)
    with pytest.raises(ValueError, match="no questions in split"):
        RelQAExplainer(agent, world=world, bank_split="nope", min_bank=1, progress=False, cache_dir=tmp_path / "c2")
    with pytest.raises(ValueError):
        RelQAExplainer(agent, world=world, n=0, min_bank=1, progress=False, cache_dir=tmp_path / "cache")


def test_speed_benchmark_reports_percentiles(tiny_agent_dir, world, agent_world, tmp_path, capsys):
    shutil.copytree(agent_world / "images", world / "images")
    out = tmp_path / "speed.json"
    relqa_speed(["--agent", str(tiny_agent_dir), "--world", str(world), "--repeats", "2",
                 "--min-bank", str(SMALL_BANK), "--json", str(out)])
    report = json.loads(out.read_text())
    assert report["index"]["entries"] >= SMALL_BANK and report["index"]["build_s"] > 0
    for key in ("bank_product", "retrieval_1", "relqa_explain_1", "relqa_explain_5_per_request", "objscene_explain_1"):
        assert 0 < report[key]["p50_ms"] <= report[key]["p95_ms"]
    assert "retrieval_1" in capsys.readouterr().out
