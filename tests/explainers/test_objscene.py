"""ObjScene and its word vectors: deterministic Word2Vec on a world's text, S(O) = dist(O, A) / p(O|I)."""
import json
from dataclasses import replace

import numpy as np
import pytest

from exag_cli import main as exag
from explainers.base import ExplanationRequest
from explainers.objscene import ObjSceneExplainer
from explainers.word_vectors import (SHIPPED_VECTORS, Word2VecConfig, describe_scene, load_word_vectors,
                                     train_word_vectors, world_sentences)
from vqa_agent.agent import VQAAgent
from vqa_agent.model import CONCEPTS

SMALL = Word2VecConfig(dim=16, epochs=3, explanations_per_question=1)


@pytest.fixture(scope="module")
def sentences(agent_world):
    return world_sentences(agent_world, SMALL.splits, SMALL.explanations_per_question)


@pytest.fixture(scope="module")
def vectors_path(sentences, tmp_path_factory):
    path = tmp_path_factory.mktemp("vectors") / "world.kv"
    train_word_vectors(sentences, SMALL, progress=False).save(str(path))
    return path


@pytest.fixture(scope="module")
def agent(tiny_agent_dir):
    return VQAAgent.from_pretrained(tiny_agent_dir, device="cpu")


@pytest.fixture(scope="module")
def explainer(agent, vectors_path):
    return ObjSceneExplainer(agent, vectors=vectors_path, k=5)


@pytest.fixture(scope="module")
def real_request(agent, agent_world):
    image = sorted((agent_world / "images").glob("EXAG_pool_*.png"))[0]
    question = "what color is the large cube?"
    return ExplanationRequest(image, question, agent.answer([image], [question])[0])


def with_answer(request, question, answer, probabilities):
    """The real request with a hand-set question, answer and p(O|I) (every concept word not named: 0.5)."""
    concepts = {word: probabilities.get(word, 0.5) for word in CONCEPTS}
    return ExplanationRequest(request.image, question,
                              replace(request.output, answer=answer, concept_probabilities=concepts))


# --- word vectors -------------------------------------------------------------------------------------------

def test_corpus_holds_questions_answers_explanations_and_scene_descriptions(sentences, agent_world):
    scene = json.loads((agent_world / "scenes.json").read_text())["scenes"][0]
    obj = scene["objects"][0]
    assert describe_scene(scene)[0] == f"a {obj['size']} {obj['color']} {obj['material']} {obj['shape']}"
    flat = {" ".join(s) for s in sentences}
    assert any(s.startswith("there are a ") and " and a " in s for s in flat)      # whole-scene listings
    assert any(s.endswith((" yes", " no")) for s in flat)                          # question + answer
    assert any(s.startswith("there ") and not s.startswith("there are a ") for s in flat)  # explanations


def test_word2vec_is_deterministic_for_a_seed(sentences):
    first, second = (train_word_vectors(sentences, SMALL, progress=False) for _ in range(2))
    other = train_word_vectors(sentences, replace(SMALL, seed=1), progress=False)
    assert first.index_to_key == second.index_to_key and np.array_equal(first.vectors, second.vectors)
    assert not np.array_equal(first.vectors, other.vectors)
    assert set(CONCEPTS) <= set(first.index_to_key)


def test_train_word2vec_command_writes_loadable_vectors(agent_world, tmp_path, capsys):
    out = tmp_path / "cli.kv"
    assert exag(["train", "word2vec", "--world", str(agent_world), "--out", str(out), "--dim", "8", "--epochs", "1"]) == 0
    assert "word vectors in" in capsys.readouterr().out
    vectors = load_word_vectors(out)
    assert vectors.vector_size == 8 and "cube" in vectors


def test_vectors_load_from_native_text_and_binary_formats(vectors_path, tmp_path):
    native = load_word_vectors(vectors_path)
    native.save_word2vec_format(str(tmp_path / "v.txt"))
    native.save_word2vec_format(str(tmp_path / "v.bin"), binary=True)
    for name in ("v.txt", "v.bin"):
        loaded = load_word_vectors(tmp_path / name)
        assert loaded.index_to_key == native.index_to_key
        np.testing.assert_allclose(loaded["red"], native["red"], atol=1e-5)


def test_missing_and_bad_vector_files_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no word vectors"):
        load_word_vectors(tmp_path / "nothing.kv")
    for name, content in (("bad.kv", b"not a pickle"), ("bad.bin", b"\x00\x01garbage"), ("bad.txt", b"hello world\n")):
        (tmp_path / name).write_bytes(content)
        with pytest.raises(ValueError, match="not a word-vector file"):
            load_word_vectors(tmp_path / name)


def test_shipped_vectors_know_every_concept_word():
    vectors = load_word_vectors()
    assert SHIPPED_VECTORS.stat().st_size < 1_000_000
    assert set(CONCEPTS) <= set(vectors.index_to_key)


# --- S(O) ---------------------------------------------------------------------------------------------------

def test_payload_is_top_k_words_sorted_by_score(explainer, real_request):
    [explanation] = explainer.explain_batch([real_request])
    assert (explanation.explainer, explanation.kind) == ("objscene", "words")
    words = explanation.payload["words"]
    assert len(words) == 5 and {w["word"] for w in words} <= set(CONCEPTS)
    assert [w["score"] for w in words] == sorted(w["score"] for w in words)
    assert all(set(w) == {"word", "score", "probability", "distance"} for w in words)
    json.dumps(explanation.to_dict())


def test_present_word_close_to_the_answer_ranks_first(explainer, real_request):
    request = with_answer(real_request, "what color is the large cube?", "red", {"red": 0.95})
    [payload] = explainer.payloads([request])
    assert payload["words"][0]["word"] == "red" and payload["basis"] == "answer"
    # with p equal elsewhere, the rest is ordered by distance to the answer
    rest = payload["words"][1:]
    assert [w["distance"] for w in rest] == sorted(w["distance"] for w in rest)


def test_word_the_agent_does_not_see_never_ranks_first(explainer, real_request):
    for absent in ("red", "cube", "metal"):   # even when it is the answer itself (distance 0)
        request = with_answer(real_request, f"what is the {absent}?", absent, {absent: 0.0})
        anchor, _ = explainer.anchor(request.question, request.output.answer)
        ranked = explainer.rank(anchor, request.output.concept_probabilities)
        assert ranked[0]["word"] != absent and ranked[-1]["word"] == absent
        assert ranked[-1]["probability"] == 0.0 and np.isfinite(ranked[-1]["score"])


def test_score_is_distance_over_probability(explainer, real_request):
    request = with_answer(real_request, "what shape is the small thing?", "cube", {"sphere": 0.9, "red": 0.2})
    ranked = {w["word"]: w for w in explainer.rank(["cube"], request.output.concept_probabilities)}
    vectors = explainer.vectors
    for word in ("sphere", "red"):
        assert ranked[word]["distance"] == pytest.approx(vectors.distance(word, "cube"), abs=1e-5)
        assert ranked[word]["score"] == pytest.approx(ranked[word]["distance"] / ranked[word]["probability"], rel=1e-5)


def test_yes_no_and_number_answers_anchor_on_the_question_object_words(explainer, real_request):
    assert explainer.anchor("Is there a big ball?", "yes") == (["large", "sphere"], "question")
    assert explainer.anchor("how many tiny red blocks are there?", "3") == (["small", "red", "cube"], "question")
    assert explainer.anchor("is the cube left of the cylinder?", "no") == (["cube", "cylinder"], "question")
    assert explainer.anchor("what color is it?", "red") == (["red"], "answer")
    words, basis = explainer.anchor("how many things are there?", "4")   # names no object word
    assert basis in ("question", "none") and "4" not in words
    request = with_answer(real_request, "is there a red cube?", "yes", {})
    [payload] = explainer.payloads([request])
    assert payload["anchor"] == ["red", "cube"] and len(payload["words"]) == 5


def test_options_are_checked(agent, vectors_path, tmp_path):
    with pytest.raises(ValueError):
        ObjSceneExplainer(agent, vectors=vectors_path, k=0)
    with pytest.raises(FileNotFoundError):
        ObjSceneExplainer(agent, vectors=tmp_path / "none.kv")
    with pytest.raises(TypeError):
        ObjSceneExplainer(agent, vectors=vectors_path, colour="red")
