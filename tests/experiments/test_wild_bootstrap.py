"""The wild cluster bootstrap (experiments/analysis/wild_bootstrap.py) against statsmodels: its t is
statsmodels' cluster-robust t, and its exact p-value is what refitting statsmodels' OLS on every sign
pattern gives; too few participants get a sentence, many get the t test."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import statsmodels.api as sm

from experiments.analysis.stats import clustered_difference, compare_rates, gee_logit
from experiments.analysis.wild_bootstrap import MAX_CLUSTERS, MIN_CLUSTERS, SIGNIFICANT_FROM, WildTest, wild_cluster_test


def clustered_data(participants: int, seed: int = 1, effect: float = 0.0):
    """0/1 outcomes of participants who differ a lot (skill), a within-participant 0/1 predictor and a
    covariate; games per participant vary."""
    rng = np.random.default_rng(seed)
    who = np.repeat(np.arange(participants), rng.integers(3, 9, participants))
    skill = rng.normal(0.0, 1.5, participants)[who]
    x = rng.integers(0, 2, len(who)).astype(float)
    covariate = rng.normal(size=len(who))
    y = (rng.random(len(who)) < 1 / (1 + np.exp(-(skill + effect * x)))).astype(float)
    return y, np.column_stack([np.ones(len(who)), x, covariate]), who


def refit_p(y, X, clusters, term) -> float:
    """The exact restricted wild cluster bootstrap p-value by brute force: statsmodels refits per pattern."""
    t = sm.OLS(y, X).fit(cov_type="cluster", cov_kwds={"groups": clusters}).tvalues[term]
    restricted = sm.OLS(y, np.delete(X, term, axis=1)).fit()
    G = len(np.unique(clusters))
    extreme = 0
    for signs in itertools.product((1.0, -1.0), repeat=G):
        y_star = restricted.fittedvalues + np.asarray(signs)[clusters] * restricted.resid
        t_star = sm.OLS(y_star, X).fit(cov_type="cluster", cov_kwds={"groups": clusters}).tvalues[term]
        extreme += abs(t_star) >= abs(t) * (1 - 1e-10)
    return extreme / 2 ** G


@pytest.mark.parametrize("term", [1, 2])
def test_the_exact_p_value_is_statsmodels_refitted_on_every_sign_pattern(term):
    y, X, who = clustered_data(7)
    tested = wild_cluster_test(y, X, who, term)
    fitted = sm.OLS(y, X).fit(cov_type="cluster", cov_kwds={"groups": who})
    assert isinstance(tested, WildTest) and tested.n_clusters == 7 and "all 128 sign patterns" in tested.method
    assert tested.estimate == pytest.approx(fitted.params[term]) and tested.se == pytest.approx(fitted.bse[term])
    assert tested.p_value == refit_p(y, X, who, term)
    low, high = tested.ci
    assert low < tested.estimate < high


def test_with_six_participants_the_smallest_p_value_is_one_in_32():
    rng = np.random.default_rng(0)
    who = np.repeat(np.arange(SIGNIFICANT_FROM), 10)
    x = np.tile([0.0, 1.0], 5 * SIGNIFICANT_FROM)
    y = x.copy()                                             # a perfect within-participant effect
    y[::4] = 1 - y[::4]                                      # (not quite: the outcome must vary)
    tested = wild_cluster_test(y + rng.normal(0, 1e-3, len(y)), np.column_stack([np.ones_like(x), x]), who, 1)
    assert tested.p_value == pytest.approx(2 / 2 ** SIGNIFICANT_FROM)   # the study's pattern and its mirror
    few = wild_cluster_test(y[:50], np.column_stack([np.ones(50), x[:50]]), who[:50], 1)   # 5 participants
    assert few.p_value >= 1 / 16 and "cannot reach 0.05" in few.method


def test_too_few_participants_get_a_sentence_not_a_p_value():
    y, X, who = clustered_data(MIN_CLUSTERS - 1)
    assert "fewer than 4 participants" in wild_cluster_test(y, X, who, 1)
    y, X, who = clustered_data(MIN_CLUSTERS)
    constant = np.column_stack([np.ones(len(y)), np.zeros(len(y))])
    assert "do not vary" in wild_cluster_test(y, constant, who, 1)
    # found by the null calibration: 4 participants, one of them alone in the arm without explanations, so the
    # explanation-by-block interaction rests on that participant's games; its clustered standard error was
    # 7e-17 (rounding) and its p-value 0. It is no test
    from experiments.analysis.controlled import net_of_practice
    from experiments.benchmark.null_calibration import controlled_study

    games = controlled_study(np.random.default_rng([0, 4, 17]), 4, 0.0)
    assert (games.groupby("cluster")["expl_arm"].max() == 0).sum() == 1
    even = (games["block"] % 2 == 0).astype(float)
    exog = pd.DataFrame({"even_block": even, "explanation_arm": games["expl_arm"],
                         "explanations_shown": even * games["expl_arm"]})
    fitted = gee_logit(games["won"], exog, games["cluster"], "explanations_shown")
    assert fitted["p_value"] is None and "single participant" in fitted["note"] and \
        "standard error is zero" in fitted["note"]
    # the report's interaction p-value now re-draws the arms over the 4 participants instead: 4 relabelings,
    # so a p-value that says it cannot be small (at least 1/4) rather than none
    net = net_of_practice(games)
    assert net["p_value"] >= 0.25 and "all 4 relabelings" in net["test"] and "smallest possible p-value" in net["test"]


def test_random_patterns_are_seeded_and_many_participants_get_the_t_test():
    y, X, who = clustered_data(20)
    first, again = wild_cluster_test(y, X, who, 1, seed=4), wild_cluster_test(y, X, who, 1, seed=4)
    assert first == again and "9,999 random sign patterns (seed 4)" in first.method
    strong, X, who = clustered_data(20, effect=5.0)
    assert wild_cluster_test(strong, X, who, 1).p_value == pytest.approx(1 / 10_000)   # never 0: the study counts
    y, X, who = clustered_data(MAX_CLUSTERS)
    tested = wild_cluster_test(y, X, who, 1)
    fitted = sm.OLS(y, X).fit(cov_type="cluster", cov_kwds={"groups": who})
    assert "t test with G - 1 = 99 degrees of freedom" in tested.method
    assert tested.p_value == pytest.approx(2 * scipy.stats.t.sf(abs(fitted.tvalues[1]), MAX_CLUSTERS - 1))


def test_the_reports_clustered_tests_use_it():
    y, X, who = clustered_data(8, effect=0.0)
    compared = compare_rates(y, X[:, 1], who)
    difference = clustered_difference(y, X[:, 1], who)
    assert compared["p_value_clustered"] == difference["p_value"] == wild_cluster_test(y, X[:, :2], who, 1).p_value
    assert compared["test_clustered"].startswith("wild cluster bootstrap")
    assert compared["difference_ci"] == difference["ci"] and compared["odds_ratio"] is not None
    fitted = gee_logit(y, pd.DataFrame({"x": X[:, 1], "c": X[:, 2]}), who, "x")
    assert fitted["p_value"] == wild_cluster_test(y, X, who, 1).p_value
    assert "odds ratio and its CI: GEE" in fitted["method"] and "p-value: the same comparison as a linear model, wild" \
        in fitted["method"]
    y, X, who = clustered_data(MIN_CLUSTERS - 1)
    few = compare_rates(y, X[:, 1], who)
    assert few["p_value_clustered"] is None and "fewer than" in few["note"]


def test_an_odds_ratio_near_separation_is_not_estimable_with_a_note_never_an_overflow():
    """Almost every game with x=1 won (one lost): the fitted log odds stay finite but the CI's upper end runs
    off; exponentiating it overflowed (a RuntimeWarning) where it must say 'not estimable'."""
    import warnings

    from experiments.analysis.stats import MAX_LOG_ODDS, logit_test, odds_ratio

    assert odds_ratio(1.0, 0.5, 2.0)["odds_ratio_ci"] == pytest.approx([np.exp(0.5), np.exp(2.0)])
    assert "note" not in odds_ratio(1.0, 0.5, 2.0)
    runaway = odds_ratio(3.0, 0.1, 800.0)                   # np.exp(800) overflows
    assert runaway["odds_ratio"] == pytest.approx(np.exp(3.0)) and runaway["odds_ratio_ci"][1] is None
    assert "not estimable" in runaway["note"] and "separation" in runaway["note"]
    assert odds_ratio(MAX_LOG_ODDS + 1, 0.0, np.inf)["odds_ratio"] is None
    rng = np.random.default_rng(0)
    x = np.repeat([0.0, 1.0], 40)
    y = np.concatenate([rng.integers(0, 2, 40), np.ones(40)]).astype(float)
    y[-1] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")                     # an overflow would fail here
        fitted = logit_test(y, pd.DataFrame({"x": x}), "x")
        clustered = gee_logit(y, pd.DataFrame({"x": x}), np.arange(len(y)) // 4, "x")
    for result in (fitted, clustered):
        assert result["odds_ratio"] is None or np.isfinite(result["odds_ratio"])
        assert all(end is None or np.isfinite(end) for end in (result["odds_ratio_ci"] or []))
