"""e-ViL scores of text explainers (experiments/benchmark/e_vil.py): hand-made cases with known answers
first, then one run on the tiny agent and NLE model."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explainers.base import Explanation
from explainers.grading import EXPLANATION_SCALE
from experiments.benchmark.e_vil import SCALE_SCORES, e_scores, e_vil, grade_labels, scale_score, text_of
from experiments.benchmark.items import BenchItem, explain
from vqa_agent.agent import AgentOutput

from hand_scenes import FIVE_OBJECTS, hand_scene

torch.set_num_threads(1)
SCENE = hand_scene(FIVE_OBJECTS)   # 2 spheres (blue, red), a large red cube, no green cylinder
PAIRS = [{"question": "Is there a red block?", "answer": "yes", "probability": 0.93, "distance": 0.08},
         {"question": "How many spheres are there?", "answer": "2", "probability": 0.7, "distance": 0.1}]


def hand_item(question: str, truth: str) -> BenchItem:
    return BenchItem(0, question, truth, [], "hand", "hand.png", SCENE, {}, np.zeros((8, 8, 3), np.uint8),
                     np.full((8, 8), -1), references=[])


def output(question: str, said: str) -> AgentOutput:
    return AgentOutput(question=question, answer=said, probability=0.9, top_k=[(said, 0.9)],
                       spatial_attention=np.full((2, 2), 0.25, np.float32), proposals=[], concept_probabilities={},
                       question_embedding=np.zeros(4, np.float32))


def text(sentence: str) -> Explanation:
    return Explanation("nle", "text", {"text": sentence})


def test_text_of_writes_relqas_as_question_answer_sentences():
    assert text_of(Explanation("relqa", "qa_pairs", {"pairs": PAIRS})) == \
        "Is there a red block? yes. How many spheres are there? 2."
    assert text_of({"kind": "qa_pairs", "payload": {"pairs": []}}) == ""
    assert text_of(text("There are two spheres.")) == "There are two spheres."
    assert text_of(text("x").to_dict()) == "x"
    with pytest.raises(ValueError, match="attention"):
        text_of(Explanation("attention", "attention", {"grid": [[1.0]], "objects": []}))


def test_the_five_point_scale_is_spread_evenly_over_e_vils_human_scale():
    assert [SCALE_SCORES[label] for label in EXPLANATION_SCALE] == [1.0, 0.75, 0.5, 0.25, 0.0]
    assert scale_score("Exactly on-point") == 1 and scale_score("Completely wrong") == 0
    with pytest.raises(ValueError, match="ungradable"):
        scale_score("ungradable")


def test_s_e_counts_only_the_correctly_answered_items():
    scores = e_scores([True, True, False, False], [1.0, 0.5, 0.0, 0.0])
    assert scores == {"s_t": 50.0, "s_e": 75.0, "s_o": 37.5, "n_scored": 2}
    # a wrong answer's explanation is not scored, however good it is
    assert e_scores([True, True, False, False], [1.0, 0.5, 1.0, 1.0]) == scores
    # an ungradable right item (None) is left out of S_E, not counted as 0
    assert e_scores([True, True, True], [1.0, None, 0.5])["s_e"] == 75.0
    assert e_scores([False, False], [1.0, 1.0]) == {"s_t": 0.0, "s_e": None, "s_o": 0.0, "n_scored": 0}
    with pytest.raises(ValueError):
        e_scores([True], [1.0, 0.0])


def test_the_fact_checker_grades_hand_made_explanations_on_the_scene():
    cases = [("How many spheres are there?", "2", "2", text("There are two spheres.")),       # true, as the reference
             ("What color is the large cube?", "red", "red", text("There are three cubes.")),  # false on the scene
             ("Is there a green cylinder?", "no", "yes", text("There is no green cylinder.")),  # the answer is wrong
             ("How many spheres are there?", "2", "2", Explanation("relqa", "qa_pairs", {"pairs": PAIRS[:1] + [
                 {"question": "Is there a green cylinder?", "answer": "yes"}]}))]               # 1 of 2 related right
    items = [hand_item(q, truth) for q, truth, _, _ in cases]
    outputs = [output(q, said) for q, _, said, _ in cases]
    labels = grade_labels(items, outputs, [e for *_, e in cases])
    assert labels == ["Exactly on-point", "Completely wrong", "Mostly on-point", "Indifferent"]
    scores = e_scores([o.answer == it.answer for it, o in zip(items, outputs)], [scale_score(x) for x in labels])
    assert scores["s_t"] == 75 and scores["s_e"] == pytest.approx(100 * (1 + 0 + 0.5) / 3)
    assert scores["s_o"] == pytest.approx(scores["s_t"] * scores["s_e"] / 100)


def test_e_vil_scores_the_tiny_nle_with_proxy_and_ground_truth_side_by_side(tiny, tiny_nle_dir):
    from explainers import load_explainer
    agent, items, outputs = tiny
    nle = load_explainer("nle", agent, model=tiny_nle_dir)
    report = e_vil(items, outputs, explain(nle, items, outputs, agent), progress=False)
    assert report["n_items"] == 12 and report["n_correct"] == sum(o.answer == it.answer for it, o in zip(items, outputs))
    assert report["s_t"] == pytest.approx(100 * report["n_correct"] / 12)
    for key in ("s_e_proxy", "s_o_proxy", "s_e_ground_truth", "s_o_ground_truth", "ngram_score", "bertscore_f1",
                "meteor", "rouge_l", "cider"):
        assert key in report
        assert report[key] is None or 0 <= report[key] <= (1000 if key == "cider" else 100), key
    if report["n_correct"]:
        assert report["s_o_proxy"] == pytest.approx(report["s_t"] * report["s_e_proxy"] / 100)
    if report["s_e_ground_truth"] is not None:
        assert report["s_o_ground_truth"] == pytest.approx(report["s_t"] * report["s_e_ground_truth"] / 100)
    assert sum(t["n_items"] for t in report["by_type"].values()) == 12
    assert sum(report["labels_right_items"].values()) == report["n_ground_truth_scored"] <= report["n_correct"]
    assert "SPICE" in report["definitions"]["ngram_score"] and "0.75" in report["definitions"]["s_e_ground_truth"]

    # the sham (another image's sentence) goes through the same grading; on the tiny NLE, which says about
    # the same sentence for every image, it cannot be told apart reliably, so only its run is checked
    sham = load_explainer("nle-other", agent, explainer=nle)
    labels = grade_labels(items, outputs, explain(sham, items, outputs, agent))
    assert len(labels) == 12 and set(labels) <= set(EXPLANATION_SCALE) | {"ungradable"}
