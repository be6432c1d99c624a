"""The participant-level randomization test (stats.relabel_test) and the controlled contrasts that use it:
the overall_inc_none row (explanation arms' with games against every odd block), the effect net of practice
and the control group's paired test. Checked against exact enumeration by hand, against an effect that is
there, and against a practice effect that must not count as one."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from experiments.analysis.controlled import OVERALL_INC_NONE, control_group, controlled, net_of_practice
from experiments.analysis.frames import Frames
from experiments.analysis.stats import relabel_test
from experiments.benchmark.null_calibration import controlled_study


def test_the_p_value_is_the_share_of_relabelings_at_least_as_extreme():
    values = np.array([3.0, 2.5, 4.0, 0.5, 1.0, 0.0])
    arm = np.array([True, True, True, False, False, False])
    tested = relabel_test(lambda group, rest: values[group].mean(-1) - values[rest].mean(-1), arm)
    observed = values[arm].mean() - values[~arm].mean()
    splits = [np.isin(np.arange(6), chosen) for chosen in itertools.combinations(range(6), 3)]
    contrasts = np.array([values[s].mean() - values[~s].mean() for s in splits])
    one_sided = min((contrasts >= observed - 1e-12).mean(), (contrasts <= observed + 1e-12).mean())
    assert tested["p_value"] == pytest.approx(min(1.0, 2 * one_sided))
    assert "all 20 relabelings" in tested["test"]


def test_too_few_participants_or_one_arm_get_a_sentence():
    values = np.arange(3.0)
    few = relabel_test(lambda g, r: values[g].mean(-1) - values[r].mean(-1), np.array([True, False, True]))
    assert few["p_value"] is None and "fewer than 4 participants" in few["note"]
    values = np.arange(5.0)
    same = relabel_test(lambda g, r: values[g].mean(-1), np.ones(5, bool))
    assert same["p_value"] is None and "same arm" in same["note"]


def _frames(games):
    return Frames(games=games, ratings=games.iloc[:0], items=games.iloc[:0], rater=games.iloc[:0],
                  rounds=games.iloc[:0], kinds={"null": "controlled"})


def test_overall_inc_none_is_tested_by_relabeling_and_finds_a_real_effect():
    games = controlled_study(np.random.default_rng(7), 24, 0.35)
    inc_none = next(r for r in controlled(_frames(games))["table1"] if r["mode"] == OVERALL_INC_NONE)
    assert inc_none["test_clustered"].startswith("randomization test over participants")
    assert inc_none["test_score_clustered"].startswith("randomization test over participants")
    assert inc_none["p_value_clustered"] < 0.05
    overall = next(r for r in controlled(_frames(games))["table1"] if r["mode"] == "overall")
    assert overall["test_clustered"].startswith("wild cluster bootstrap")


def test_practice_alone_is_not_an_effect_of_explanations():
    """Every participant wins far more in even blocks (practice), explanations change nothing: the with - without
    difference is large, but re-drawing the arms keeps every participant's even blocks, so neither the
    overall_inc_none test nor the net-of-practice test calls it."""
    rng = np.random.default_rng(3)
    games = controlled_study(rng, 16, 0.0)
    even = games["block"] % 2 == 0
    games.loc[even, "won"] = (rng.random(even.sum()) < 0.9).astype(float)
    games.loc[~even, "won"] = (rng.random((~even).sum()) < 0.4).astype(float)
    games["score"] = games["won"] * 5
    section = controlled(_frames(games))
    inc_none = next(r for r in section["table1"] if r["mode"] == OVERALL_INC_NONE)
    assert inc_none["improvement"]["win_rate"] > 0.3
    assert inc_none["p_value_clustered"] > 0.05
    assert section["net_of_practice"]["p_value"] > 0.05
    group = control_group(games, ["none"])
    assert group["p_value_clustered"] is not None and group["test_clustered"].startswith("paired test")


def test_net_of_practice_gets_a_p_value_at_six_participants():
    games = controlled_study(np.random.default_rng([0, 6, 1]), 6, 0.0)
    net = net_of_practice(games)
    assert net["p_value"] is not None and "relabelings" in net["test"] and net["odds_ratio"] is not None
