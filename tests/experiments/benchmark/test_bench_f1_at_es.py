"""F1@ExplanationScore (experiments/benchmark/f1_at_es.py): hand-made cases with known answers first,
then one run on the tiny agent and NLE model."""
from __future__ import annotations

import dataclasses

import pytest
import torch
from sklearn.metrics import f1_score

from experiments.benchmark.f1_at_es import CURVE, embedding_similarity, f1_at_es, f1_curve, macro_f1
from experiments.benchmark.items import explain
from experiments.benchmark.nle_metrics import bertscore_f1, bertscore_f1_per_item

torch.set_num_threads(1)
# class a: 1 right of 2, no false positive -> F1 2/3; class b: 2 right of 2, 1 false positive -> F1 0.8
TRUTHS = ["a", "a", "b", "b"]
PREDICTIONS = ["a", "b", "b", "b"]


def test_f1_at_0_is_the_plain_macro_f1_when_every_score_is_above_0():
    plain = (2 / 3 + 0.8) / 2
    assert macro_f1(TRUTHS, PREDICTIONS) == pytest.approx(plain)
    assert macro_f1(TRUTHS, PREDICTIONS) == pytest.approx(f1_score(TRUTHS, PREDICTIONS, average="macro"))
    assert f1_curve(TRUTHS, PREDICTIONS, [0.5, 0.01, 0.9, 0.3], [0.0]) == [pytest.approx(plain)]
    # a score of exactly 0 is not above t = 0: that prediction is rejected
    assert f1_curve(TRUTHS, PREDICTIONS, [0.0, 0.5, 0.5, 0.5], [0.0])[0] < plain


def test_f1_falls_to_0_when_t_is_above_every_score():
    assert f1_curve(TRUTHS, PREDICTIONS, [0.5, 0.6, 0.7, 0.8], [0.8, 0.9, 1.0]) == [0.0, 0.0, 0.0]


def test_a_right_answer_counts_only_while_its_explanation_scores_above_t():
    # b's explanation scores 0.4: kept at t = 0.3, rejected at t = 0.5 (b then has no hit: F1 0)
    assert f1_curve(["a", "b"], ["a", "b"], [0.7, 0.4], [0.3, 0.5, 0.7]) == [1.0, 0.5, 0.0]


def test_a_wrong_answer_never_counts_whatever_its_explanation():
    assert f1_curve(["a", "b"], ["b", "a"], [1.0, 1.0], [0.0, 0.5]) == [0.0, 0.0]
    # rejecting the wrong "b" takes a false positive away from b, so F1 can rise with t, never above
    # what the right answers alone give
    assert f1_curve(TRUTHS, PREDICTIONS, [0.9, 0.2, 0.9, 0.9], [0.0, 0.5]) == [pytest.approx((2 / 3 + 0.8) / 2),
                                                                               pytest.approx((2 / 3 + 1) / 2)]


def test_bad_input_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="one prediction and one score per truth"):
        f1_curve(["a", "b"], ["a"], [1.0, 1.0], [0.0])


def test_text_scores_are_per_item_and_highest_for_the_reference_itself():
    references = [["There is a red cube left of the large sphere.", "A red block is left of the big ball."],
                  ["There are two green spheres and a yellow cylinder."]]
    candidates = ["There is a red cube left of the large sphere.", "The small cylinder is made of metal."]
    per_item = bertscore_f1_per_item(candidates, references)
    assert len(per_item) == 2 and per_item[0] == pytest.approx(1, abs=1e-4) and per_item[1] < 0.95
    assert bertscore_f1(candidates, references) == pytest.approx(sum(per_item) / 2)
    similarity = embedding_similarity(candidates, references)
    assert similarity[0] == pytest.approx(1, abs=1e-4) and 0 <= similarity[1] < 0.9


def test_f1_at_es_of_the_tiny_nle_reports_the_three_points_and_the_curve(tiny, tiny_nle_dir):
    from explainers import load_explainer
    agent, items, outputs = tiny
    nle = load_explainer("nle", agent, model=tiny_nle_dir)
    report = f1_at_es(items, outputs, explain(nle, items, outputs, agent), progress=False)
    assert set(report["f1_at"]) == set(report["f1_at_bertscore_only"]) == {"0", "0.53", "0.6"}
    assert [p["t"] for p in report["curve"]] == list(CURVE) and len(CURVE) == 101 and CURVE[-1] == 1.0
    for curve in (report["curve"], report["curve_bertscore_only"]):
        assert all(0 <= p["f1"] <= 100 for p in curve)
        assert curve[-1]["f1"] == 0          # no score is above 1
    assert 0 < report["mean_explanation_score"] <= 1
    assert report["f1_at"]["0"] == pytest.approx(report["f1_ungated"])   # every score here is above 0
    assert report["f1_at"]["0.6"] == pytest.approx(report["curve"][60]["f1"])
    assert "BLEURT" in report["explanation_score"] and report["v_flute_reference"]["GPT-4 5-shot"]["0.6"] == 49.81
    unreferenced = [dataclasses.replace(items[0], references=[])]
    with pytest.raises(ValueError, match="no reference explanations"):
        f1_at_es(unreferenced, outputs[:1], explain(nle, unreferenced, outputs[:1]), progress=False)
