"""Small wrappers over the field's libraries (statsmodels, scipy, krippendorff): every test statistic,
interval and agreement measure in the report comes from one of them, except the participant-clustered
p-values and intervals, which come from the wild cluster bootstrap (wild_bootstrap.py: no maintained
library offers it without a JIT compiler; it is checked against statsmodels refits in the tests).

Clustered tests: the odds ratio and its interval come from the logistic model (GEE or clustered Logit);
the p-value, and the interval of a difference, from the wild cluster bootstrap of the same comparison as a
linear model, which keeps its 5% level at every size it reports (MIN_CLUSTERS participants on), where the sandwich behind the
GEE's own p-value rejects a true null 3-4 times too often (`python -m experiments.benchmark.null_calibration`).

Results are JSON-ready dicts. A test that cannot be computed (an empty group, a constant outcome, too
few participants, perfect separation) returns None for its numbers and a `note` saying why, instead of
raising: the report always builds.

Conventions: 95% intervals; a rate is {"n_games": n, "win_rate": p, "ci": [lo, hi]} (Wilson), or with
another count or rate name where the unit is not a game (`rate(..., n_key="n", key="share")`); a rate of
nothing is {"n_games": 0, "win_rate": None, "ci": None}.
"""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import scipy.stats
import statsmodels.api as sm
from statsmodels.genmod.cov_struct import Exchangeable
from statsmodels.stats.inter_rater import cohens_kappa, fleiss_kappa
from statsmodels.stats.proportion import proportion_confint, proportions_ztest
from statsmodels.stats.weightstats import DescrStatsW
from statsmodels.tools.sm_exceptions import PerfectSeparationError

from game.preregistration import ANALYSIS

from .wild_bootstrap import MIN_CLUSTERS, SIGNIFICANT_FROM, too_few, wild_cluster_test

ALPHA = ANALYSIS["alpha"]       # the level a pre-registration freezes (game/preregistration.py)
MAX_LOG_ODDS = 15.0       # a fitted log odds ratio beyond this means (quasi-)perfect separation
Z_TEST = "two-proportion z-test (statsmodels proportions_ztest), games as independent"
UNCALIBRATED_Z = ("z-test: the paper's two-proportion z-test, games as independent; it does not keep its level "
                  "(on simulated studies where explanations change nothing it calls up to 1 in 8 significant at "
                  "0.05: docs/results.md, 'Null calibration'), so it is here to compare with the paper, not to decide: read "
                  "the clustered and paired tests")
GEE_LOGIT = ("odds ratio and its CI: GEE logistic regression (statsmodels), participants as clusters, exchangeable "
             "working correlation, robust standard errors; p-value: {wild}")
GEE_LOGIT_INDEPENDENT = ("odds ratio and its CI: logistic regression with participant-clustered robust standard "
                         "errors (statsmodels Logit, cov_type='cluster'), as the exchangeable GEE could not be "
                         "fitted; p-value: {wild}")
LOGIT_CLUSTERED = ("odds ratio and its CI: logistic regression with participant-clustered robust standard errors "
                   "(statsmodels Logit, cov_type='cluster'); p-value: {wild}")
LINEAR = "the same comparison as a linear model, "


def join_notes(*notes) -> str | None:
    """Several results' notes as one, each sentence once: a note of several parts ("a; b") is split into them
    first, so two results that give the same reason (stats of one comparison, a row's win rate and score)
    say it once. None when there is nothing to say."""
    parts = [part.strip() for note in notes if note for part in str(note).split("; ")]
    return "; ".join(dict.fromkeys(part for part in parts if part)) or None


def _num(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if np.isfinite(value) else None


def _pair(values) -> list[float | None]:
    return [_num(values[0]), _num(values[1])]


def odds_ratio(log_odds: float, low: float, high: float) -> dict:
    """{"odds_ratio", "odds_ratio_ci"} from a fitted log odds ratio and its CI. An end of the CI beyond
    MAX_LOG_ODDS comes from a fit that (nearly) separates: that end is not estimable (None, JSON's stand-in for
    0 or infinity) and a note says so, where exponentiating it would overflow."""
    ends = []
    for end in (low, high):
        ends.append(float(np.exp(end)) if np.isfinite(end) and abs(end) <= MAX_LOG_ODDS else None)
    out = {"odds_ratio": _num(np.exp(log_odds)) if abs(log_odds) <= MAX_LOG_ODDS else None, "odds_ratio_ci": ends}
    if None in ends or out["odds_ratio"] is None:
        which = "the odds ratio" if out["odds_ratio"] is None else "an end of its CI"
        out["note"] = (f"{which} is not estimable (0 or infinite): the outcome is (almost) constant given the "
                       "predictor in some participants' games (separation)")
    return out


# --- rates and means -------------------------------------------------------------------------------

def rate(successes: float, n: int, key: str = "win_rate", n_key: str = "n_games") -> dict:
    """A rate with its Wilson 95% interval (statsmodels proportion_confint, method="wilson")."""
    n = int(n)
    if n == 0:
        return {n_key: 0, key: None, "ci": None}
    successes = float(successes)
    low, high = proportion_confint(successes, n, alpha=ALPHA, method="wilson")
    return {n_key: n, key: successes / n, "ci": _pair((low, high))}


def rate_of(flags: pd.Series | np.ndarray, key: str = "win_rate", n_key: str = "n_games") -> dict:
    """The rate of 1.0s among the known values (NaN = unknown, left out)."""
    values = np.asarray(flags, dtype=float)
    values = values[~np.isnan(values)]
    return rate(values.sum(), len(values), key, n_key)


def mean_ci(values: pd.Series | np.ndarray) -> dict:
    """Mean with its t 95% interval (statsmodels DescrStatsW.tconfint_mean)."""
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return {"n": 0, "mean": None, "ci": None}
    if len(values) == 1:
        return {"n": 1, "mean": float(values[0]), "ci": None}
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        low, high = DescrStatsW(values).tconfint_mean(alpha=ALPHA)
    return {"n": len(values), "mean": float(values.mean()), "ci": _pair((low, high))}


SIGN_FLIP = ("sign-flip test over participants (scipy permutation_test: each participant's difference keeps or "
             "flips its sign; {patterns}), exact when the differences are symmetric about 0 under no effect")
SIGN_FLIP_DRAWS = 9_999


def mean_test(values: pd.Series | np.ndarray) -> dict:
    """mean_ci with a test of mean 0 that keeps its level with few participants: the sign-flip
    (randomization) test of the mean (scipy permutation_test), exact over all 2^n sign patterns up to
    13 values, else SIGN_FLIP_DRAWS seeded draws. For paired differences, one per participant, the
    participant-level paired test. Below MIN_CLUSTERS values no p-value; below SIGNIFICANT_FROM the
    p-value cannot reach 0.05 (the test says so)."""
    out = {**mean_ci(values), "p_value": None, "test": SIGN_FLIP.format(patterns="none")}
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if len(values) < MIN_CLUSTERS:
        return {**out, "note": f"fewer than {MIN_CLUSTERS} participants ({len(values)}): no paired test is made"}
    if np.ptp(values) == 0 and values[0] == 0:
        return {**out, "p_value": 1.0, "test": SIGN_FLIP.format(patterns="every difference is 0")}
    exact = 2 ** len(values) <= SIGN_FLIP_DRAWS
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = scipy.stats.permutation_test((values,), lambda x, axis: np.mean(x, axis=axis), vectorized=True,
                                              permutation_type="samples", n_resamples=SIGN_FLIP_DRAWS,
                                              alternative="two-sided", random_state=0)
    patterns = f"all {2 ** len(values):,} patterns" if exact else f"{SIGN_FLIP_DRAWS:,} random patterns (seed 0)"
    if len(values) < SIGNIFICANT_FROM:
        patterns += f"; with {len(values)} participants the smallest possible p-value is 1/{2 ** (len(values) - 1)}"
    return {**out, "p_value": _num(min(1.0, result.pvalue)), "test": SIGN_FLIP.format(patterns=patterns)}


# --- tests of two groups ---------------------------------------------------------------------------

RELABEL = ("randomization test over participants: which participants are in the explanation arms re-drawn "
           "among them ({relabelings}); exact under no effect of explanations on any game, whatever practice "
           "does, when participants are exchangeable")
RELABEL_DRAWS = 9_999


def relabel_test(statistic, in_group: np.ndarray, wording: str = RELABEL, absolute: bool = False) -> dict:
    """The participant-level randomization test of a between-arm contrast: `statistic(group, rest)` takes
    index arrays of the participants labelled group 1 and group 0 (one relabeling per row) and returns the
    contrast per row; the two-sided p-value is twice the smaller tail share of relabelings whose contrast
    reaches the study's (`absolute`: the share whose |contrast| reaches the study's, for a statistic centred on 0
    such as a t), over all of them up to RELABEL_DRAWS, else over that many seeded draws (counting the
    study's own). The design randomized the arm labels, so under the sharp null (explanations change no
    game) every relabeling was as likely, at any study size: a reference distribution that needs no sandwich
    or bootstrap. (scipy's permutation_test needs two participants in each group; a control arm of one is
    common in a pilot, hence the few lines here.)"""
    in_group = np.asarray(in_group, dtype=bool)
    n, k = len(in_group), int(in_group.sum())
    out = {"p_value": None, "test": wording.format(relabelings="none")}
    if n < MIN_CLUSTERS:
        return {**out, "note": f"fewer than {MIN_CLUSTERS} participants ({n}): no randomization test is made"}
    if k in (0, n):
        return {**out, "note": "every participant has the same arm: nothing to re-draw"}
    observed = float(statistic(np.flatnonzero(in_group)[None], np.flatnonzero(~in_group)[None])[0])
    relabelings = math.comb(n, k)
    if relabelings <= RELABEL_DRAWS:
        groups = np.array(list(itertools.combinations(range(n), k)))
        said, extra = f"all {relabelings:,} relabelings", 0
    else:
        groups = np.random.default_rng(0).permuted(np.tile(np.arange(n), (RELABEL_DRAWS, 1)), axis=1)[:, :k]
        said, extra = f"{RELABEL_DRAWS:,} random relabelings (seed 0)", 1      # the study's own counts once more
    chosen = np.zeros((len(groups), n), dtype=bool)
    chosen[np.arange(len(groups))[:, None], groups] = True
    groups, rests = np.sort(groups, axis=1), np.nonzero(~chosen)[1].reshape(len(groups), n - k)
    contrasts = np.asarray(statistic(groups, rests), dtype=float)
    tolerance = 1e-9 * max(1.0, abs(observed))
    if absolute:       # a statistic centred on 0 under the null (a t): the share at least as far from 0
        p = (np.sum(np.abs(contrasts) >= abs(observed) - tolerance) + extra) / (len(contrasts) + extra)
    else:
        tails = [(np.sum(contrasts >= observed - tolerance) + extra), (np.sum(contrasts <= observed + tolerance) + extra)]
        p = min(1.0, 2 * min(tails) / (len(contrasts) + extra))
    smallest = (1 if absolute else 2) / relabelings
    if smallest > ALPHA:
        said += f"; with {relabelings} relabelings the smallest possible p-value is {min(1.0, smallest):.2g}"
    return {**out, "p_value": _num(p), "test": wording.format(relabelings=said)}


WITHIN_RELABEL = ("randomization test within participants: which of each participant's games had the treatment re-drawn "
                  "among that participant's games, as many as they had ({draws:,} seeded draws), on the sum over "
                  "participants of their treated games' outcomes less their own mean; exact under no effect on any "
                  "game, whatever players' skill, practice or number of games")
WITHIN_DRAWS = 9_999


def within_relabel_test(y, treated, clusters) -> dict:
    """The randomization test of a treatment randomized per game within participants (the at-will offer): each
    participant's treated games re-drawn among their own games, keeping their number (WITHIN_RELABEL); the
    statistic is the fixed-effects (within-participant) contrast's numerator, two-sided by its absolute value."""
    y, treated = np.asarray(y, dtype=float), np.asarray(treated, dtype=float)
    codes = pd.factorize(np.asarray(clusters))[0]
    out = {"p_value": None, "test": WITHIN_RELABEL.format(draws=WITHIN_DRAWS)}
    if len(np.unique(codes)) < MIN_CLUSTERS:
        return {**out, "note": too_few(len(np.unique(codes)))}
    centred = y - (np.bincount(codes, weights=y) / np.bincount(codes))[codes]
    observed = float(np.sum(treated * centred))
    rng = np.random.default_rng(0)
    starts = np.concatenate([[0], np.cumsum(np.bincount(codes))[:-1]])[codes]
    k = np.bincount(codes, weights=treated).astype(int)[codes]
    statistics = []
    for size in [1_000] * (WITHIN_DRAWS // 1_000) + [WITHIN_DRAWS % 1_000]:
        # per draw a random key per game; sorted by participant, then key: a game is treated when it ranks
        # among its participant's first k (as many as were treated)
        keys = rng.random((size, len(y))) + codes[None, :]
        order = np.argsort(keys, axis=1)
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(len(y))[None, :].repeat(size, 0), axis=1)
        statistics.append(((rank - starts[None, :]) < k[None, :]).astype(float) @ centred)
    statistics = np.concatenate(statistics)
    tolerance = 1e-9 * max(1.0, abs(observed))
    p = (np.sum(np.abs(statistics) >= abs(observed) - tolerance) + 1) / (WITHIN_DRAWS + 1)
    return {**out, "p_value": _num(p)}


STUDENTIZED = ("studentized randomization test over participants: the Welch t of the two groups' participant values, "
               "with which participants are in which group re-drawn ({relabelings}); exact under no effect on any "
               "game, and, being studentized, it keeps its level when the effect differs between participants "
               "(zero on average) and the groups differ in size (Janssen 1997; Chung and Romano 2013)")


def welch_t(values: np.ndarray, group: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """The Welch t of values[group] against values[rest], one per row of the index arrays; where a group has one
    value (no variance) the difference of means; where both groups are constant, +-1e12 (or 0)."""
    a, b = values[group], values[rest]
    difference = a.mean(-1) - b.mean(-1)
    if a.shape[-1] < 2 or b.shape[-1] < 2:
        return difference
    se = np.sqrt(a.var(-1, ddof=1) / a.shape[-1] + b.var(-1, ddof=1) / b.shape[-1])
    return np.where(se > 0, difference / np.where(se > 0, se, 1.0), np.sign(difference) * 1e12)


def studentized_relabel_test(values, in_group) -> dict:
    """relabel_test of two groups of participant values, the Welch t as the statistic (STUDENTIZED), with the
    difference of the groups' means and its Welch 95% interval (scipy ttest_ind, equal_var=False)."""
    values, in_group = np.asarray(values, dtype=float), np.asarray(in_group, dtype=bool)
    keep = ~np.isnan(values)
    values, in_group = values[keep], in_group[keep]
    tested = relabel_test(lambda group, rest: welch_t(values, group, rest), in_group, STUDENTIZED, absolute=True)
    a, b = values[in_group], values[~in_group]
    difference = float(a.mean() - b.mean()) if len(a) and len(b) else None
    ci = None
    if len(a) >= 2 and len(b) >= 2 and (np.ptp(a) > 0 or np.ptp(b) > 0):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            interval = scipy.stats.ttest_ind(a, b, equal_var=False).confidence_interval(1 - ALPHA)
        ci = _pair((interval.low, interval.high))
    return {**tested, "difference": difference, "difference_ci": ci, "n_group": int(len(a)), "n_rest": int(len(b))}


def z_test(successes: tuple[float, float], n: tuple[int, int]) -> dict:
    """Two-proportion z-test (statsmodels proportions_ztest, pooled variance), two-sided."""
    if min(n) == 0:
        return {"p_value": None, "z": None, "test": Z_TEST, "note": "a group has no games"}
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z, p = proportions_ztest(np.asarray(successes, float), np.asarray(n, float))
    note = None if _num(p) is not None else "both groups have the same constant outcome"
    return {"p_value": _num(p), "z": _num(z), "test": Z_TEST, **({"note": note} if note else {})}


def _complete_cases(y, exog: pd.DataFrame, clusters, method: str):
    """The rows with an outcome and every predictor, and the empty result of a clustered logit on them."""
    y = np.asarray(y, dtype=float)
    exog = exog.astype(float)
    clusters = np.asarray(clusters)
    keep = ~np.isnan(y) & ~exog.isna().any(axis=1).to_numpy()
    y, exog, clusters = y[keep], exog[keep], clusters[keep]
    out = {"odds_ratio": None, "odds_ratio_ci": None, "p_value": None, "method": method.format(wild="none"),
           "n_clusters": len(pd.unique(clusters)), "n": int(len(y))}
    return y, exog, clusters, out


def _with_wild_p(out: dict, y: np.ndarray, exog: pd.DataFrame, clusters: np.ndarray, term: str, method: str) -> dict:
    """`out` (an odds ratio's result, on complete rows) with the p-value of the wild cluster bootstrap test
    of `term` in the linear model y ~ 1 + exog, and the method named."""
    design = sm.add_constant(exog, has_constant="add")
    tested = wild_cluster_test(y, design.to_numpy(), clusters, list(design.columns).index(term))
    if isinstance(tested, str):
        why = tested if out["n_clusters"] < MIN_CLUSTERS else f"no clustered p-value: {tested}"   # too_few says so
        return {**out, "p_value": None, "method": method.format(wild="none"), "note": join_notes(out.get("note"), why)}
    return {**out, "p_value": _num(tested.p_value), "method": method.format(wild=LINEAR + tested.method)}


def gee_logit(y, exog: pd.DataFrame, clusters, term: str) -> dict:
    """The odds ratio of `term` with its 95% CI from a participant-clustered GEE logistic regression
    (Binomial family, exchangeable working correlation; if that cannot be fitted, the independence one:
    logit_clustered), and the p-value of the wild cluster bootstrap. `exog` holds the predictors without
    the constant."""
    return _gee_logit(y, exog, clusters, term, with_p=True)


def _gee_logit(y, exog: pd.DataFrame, clusters, term: str, with_p: bool) -> dict:
    y, exog, clusters, out = _complete_cases(y, exog, clusters, GEE_LOGIT)
    why = _unfittable(y, exog[term], out["n_clusters"])
    if why:
        return {**out, "note": why}
    fitted = _fit_gee(y, sm.add_constant(exog, has_constant="add"), clusters, term)
    if fitted is not None and abs(fitted[0]) <= MAX_LOG_ODDS:
        coef, _, _, low, high = fitted
        estimate = {**out, **odds_ratio(coef, low, high)}
        return _with_wild_p(estimate, y, exog, clusters, term, GEE_LOGIT) if with_p else estimate
    # not fitted, or ran away (separation, or an exchangeable fit that diverged): the independence one
    return _logit_clustered(y, exog, clusters, term, GEE_LOGIT_INDEPENDENT, with_p)


def logit_clustered(y, exog: pd.DataFrame, clusters, term: str) -> dict:
    """As gee_logit, the odds ratio by logistic regression with participant-clustered robust errors
    (statsmodels Logit, cov_type="cluster"; the same as GEE with an independence working correlation).
    Vectorised, so fast on thousands of participants: used for the secondary trend tests."""
    return _logit_clustered(y, exog, clusters, term, LOGIT_CLUSTERED, with_p=True)


GAME_LEVEL = ("one row per game: the mean of its rows' {value} against the game's outcome, so that a game rated (or "
              "graded) in several rounds counts its win once; ")


def game_level_trend(rows: pd.DataFrame, value: str) -> dict:
    """logit_clustered of the win on `value` with one row per game (the mean of its rows' values): Figs. 7 and 9 rate
    rounds and explanations, whose outcome is their game's, so the per-row trend counts a game's win once per row."""
    games = rows.groupby("game_id").agg(won=("won", "first"), value=(value, "mean"), cluster=("cluster", "first"))
    fitted = logit_clustered(games["won"], games[["value"]].rename(columns={"value": value}), games["cluster"], value)
    return {**fitted, "method": GAME_LEVEL.format(value=value) + fitted["method"], "n_games": int(len(games))}


def _logit_clustered(y, exog: pd.DataFrame, clusters, term: str, method: str, with_p: bool) -> dict:
    y, exog, clusters, out = _complete_cases(y, exog, clusters, method)
    why = _unfittable(y, exog[term], out["n_clusters"])
    if why:
        return {**out, "note": why}
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fitted = sm.Logit(y, sm.add_constant(exog, has_constant="add")).fit(
                disp=0, maxiter=100, cov_type="cluster", cov_kwds={"groups": pd.factorize(clusters)[0]})
            low, high = fitted.conf_int(alpha=ALPHA).loc[term]
            coef = fitted.params[term]
        except (PerfectSeparationError, np.linalg.LinAlgError, ValueError):
            return {**out, "note": "the model could not be fitted (perfect separation)"}
    if not np.isfinite([coef, low, high]).all() or abs(coef) > MAX_LOG_ODDS:
        return {**out, "note": "perfect separation: an outcome is (almost) constant given the predictor"}
    estimate = {**out, **odds_ratio(coef, low, high)}
    return _with_wild_p(estimate, y, exog, clusters, term, method) if with_p else estimate


def _unfittable(y: np.ndarray, x: pd.Series, n_clusters: int) -> str | None:
    if len(y) == 0:
        return "no data"
    if n_clusters < MIN_CLUSTERS:
        return too_few(n_clusters)
    if x.nunique() < 2:
        return "the predictor does not vary (a group is empty)"
    if np.unique(y).size < 2:
        return "every outcome is the same"
    return None


def _fit_gee(y, design, clusters, term: str) -> tuple[float, ...] | None:
    """(coefficient, standard error, p-value, CI low, CI high) of `term`, or None when the fit fails."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model = sm.GEE(y, design, groups=clusters, family=sm.families.Binomial(), cov_struct=Exchangeable())
            fitted = model.fit(maxiter=60)
            low, high = fitted.conf_int(alpha=ALPHA).loc[term]
            values = (fitted.params[term], fitted.bse[term], fitted.pvalues[term], low, high)
        except (PerfectSeparationError, np.linalg.LinAlgError, ValueError, ZeroDivisionError, OverflowError):
            return None
    if not np.isfinite(values).all() or values[1] <= 0:
        return None
    return tuple(float(v) for v in values)


def clustered_difference(y, x, clusters) -> dict:
    """The difference of means (of rates, for a 0/1 outcome) between x=1 and x=0 with a 95% CI and
    p-value that keep their level with few participants: the wild cluster bootstrap of OLS y ~ 1 + x."""
    y, x, clusters = np.asarray(y, float), np.asarray(x, float), np.asarray(clusters)
    keep = ~np.isnan(y) & ~np.isnan(x)
    y, x, clusters = y[keep], x[keep], clusters[keep]
    n_clusters = len(pd.unique(clusters))
    out = {"difference": None, "ci": None, "p_value": None, "method": "none", "n_clusters": n_clusters}
    if len(y) == 0 or len(np.unique(x)) < 2:
        return {**out, "note": "a group is empty"}
    difference = float(y[x == 1].mean() - y[x == 0].mean())
    tested = wild_cluster_test(y, sm.add_constant(x, has_constant="add"), clusters, 1)
    if isinstance(tested, str):
        why = tested if n_clusters < MIN_CLUSTERS else f"no clustered interval or p-value: {tested}"  # too_few says so
        return {**out, "difference": difference, "note": why}
    return {**out, "difference": difference, "ci": _pair(tested.ci) if tested.ci else None, "p_value": _num(tested.p_value),
            "method": tested.method}


def compare_rates(won, group, clusters) -> dict:
    """Everything the report says about a 0/1 outcome in group 1 vs group 0: the difference of rates
    with its clustered CI and p-value (wild cluster bootstrap), the odds ratio with its CI (GEE), next to
    the naive z-test's p-value."""
    won, group = np.asarray(won, float), np.asarray(group, float)
    known = ~np.isnan(won) & ~np.isnan(group)
    counts = tuple(won[known & (group == g)].sum() for g in (1.0, 0.0))
    sizes = tuple(int((known & (group == g)).sum()) for g in (1.0, 0.0))
    naive = z_test(counts, sizes)
    gee = _gee_logit(won, pd.DataFrame({"group": group}), clusters, "group", with_p=False)   # its p: the difference's
    difference = clustered_difference(won, group, clusters)
    note = join_notes(naive.get("note"), gee.get("note"), difference.get("note"))
    return {"difference": difference["difference"], "difference_ci": difference["ci"],
            "odds_ratio": gee["odds_ratio"], "odds_ratio_ci": gee["odds_ratio_ci"],
            "p_value": naive["p_value"], "p_value_clustered": difference["p_value"],
            "test": Z_TEST, "test_clustered": difference["method"], "n_participants": gee["n_clusters"],
            **({"note": note} if note else {})}


def logit_test(y, exog: pd.DataFrame, term: str) -> dict:
    """A logistic regression's odds ratio and p-value for `term`, games as independent (statsmodels Logit)."""
    y = np.asarray(y, dtype=float)
    exog = exog.astype(float)
    keep = ~np.isnan(y) & ~exog.isna().any(axis=1).to_numpy()
    y, exog = y[keep], exog[keep]
    out = {"odds_ratio": None, "odds_ratio_ci": None, "p_value": None,
           "method": "logistic regression (statsmodels Logit), games as independent", "n": int(len(y))}
    if len(y) == 0 or exog[term].nunique() < 2 or np.unique(y).size < 2:
        return {**out, "note": "a group is empty or every outcome is the same"}
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fitted = sm.Logit(y, sm.add_constant(exog, has_constant="add")).fit(disp=0, maxiter=100)
        except (PerfectSeparationError, np.linalg.LinAlgError, ValueError):
            return {**out, "note": "the model could not be fitted (perfect separation)"}
    coef, p = fitted.params[term], fitted.pvalues[term]
    if not np.isfinite([coef, p]).all() or abs(coef) > MAX_LOG_ODDS:
        return {**out, "note": "perfect separation"}
    low, high = fitted.conf_int(alpha=ALPHA).loc[term]
    return {**out, **odds_ratio(coef, low, high), "p_value": _num(p)}


# --- correlation -----------------------------------------------------------------------------------

def correlation(x, y) -> dict:
    """Pearson's r (scipy pearsonr, Fisher-z 95% CI) and Spearman's rho (scipy spearmanr; its CI is
    pearsonr's on the ranks, an approximation)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = ~np.isnan(x) & ~np.isnan(y)
    x, y = x[keep], y[keep]
    out = {"n": int(len(x)), "pearson": None, "pearson_ci": None, "pearson_p": None,
           "spearman": None, "spearman_ci": None, "spearman_p": None}
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {**out, "note": "fewer than 3 pairs, or one variable is constant"}
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pearson = scipy.stats.pearsonr(x, y)
        spearman = scipy.stats.spearmanr(x, y)
        ranked = scipy.stats.pearsonr(scipy.stats.rankdata(x), scipy.stats.rankdata(y))
        pearson_ci, spearman_ci = pearson.confidence_interval(1 - ALPHA), ranked.confidence_interval(1 - ALPHA)
    return {**out, "pearson": _num(pearson.statistic), "pearson_ci": _pair((pearson_ci.low, pearson_ci.high)),
            "pearson_p": _num(pearson.pvalue), "spearman": _num(spearman.statistic),
            "spearman_ci": _pair((spearman_ci.low, spearman_ci.high)), "spearman_p": _num(spearman.pvalue)}


# --- agreement -------------------------------------------------------------------------------------

def rater_agreement(ratings: pd.DataFrame, unit: str, value: str, levels: int) -> dict:
    """Agreement of several raters per unit on an ordinal scale coded 0..levels-1: Krippendorff's alpha
    (ordinal; krippendorff.alpha) over all units, and Fleiss' kappa (statsmodels fleiss_kappa) over the
    units with the most common number of ratings (it needs the same number for every unit)."""
    ratings = ratings.dropna(subset=[value])
    per_unit = ratings.groupby(unit)[value].size()
    out = {"krippendorff_alpha": None, "fleiss_kappa": None, "n_items": int(len(per_unit)),
           "n_ratings": int(len(ratings)), "n_items_fleiss": 0, "ratings_per_item_fleiss": None}
    notes = []
    counts = pd.crosstab(ratings[unit], ratings[value].astype(int)).reindex(columns=range(levels), fill_value=0)
    if (per_unit >= 2).sum() < 2:
        return {**out, "note": "fewer than 2 items with 2 or more ratings"}
    import krippendorff

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out["krippendorff_alpha"] = _num(krippendorff.alpha(value_counts=counts.to_numpy(),
                                                                value_domain=list(range(levels)),
                                                                level_of_measurement="ordinal"))
        except (ValueError, ZeroDivisionError) as error:
            notes.append(f"Krippendorff's alpha: {error}")
        k = int(per_unit[per_unit >= 2].mode().iloc[0])
        same = counts.loc[per_unit[per_unit == k].index]
        out.update(n_items_fleiss=int(len(same)), ratings_per_item_fleiss=k)
        if len(same) >= 2:
            out["fleiss_kappa"] = _num(fleiss_kappa(same.to_numpy(), method="fleiss"))
    if out["krippendorff_alpha"] is None and not notes:
        notes.append("every rating is the same: agreement is undefined")
    return {**out, **({"note": "; ".join(notes)} if notes else {})}


def weighted_kappa(a, b, levels: int, weights: str = "linear") -> dict:
    """Agreement of two ratings of the same items on an ordinal scale coded 0..levels-1: linearly
    weighted Cohen's kappa with its 95% CI (statsmodels cohens_kappa), and the share of exact agreement."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    keep = ~np.isnan(a) & ~np.isnan(b)
    a, b = a[keep].astype(int), b[keep].astype(int)
    out = {"weighted_kappa": None, "ci": None, "p_value": None, "weights": weights, "n_items": int(len(a)),
           "exact_agreement": float((a == b).mean()) if len(a) else None}
    if len(a) < 2:
        return {**out, "note": "fewer than 2 items rated both ways"}
    table = pd.crosstab(a, b).reindex(index=range(levels), columns=range(levels), fill_value=0).to_numpy()
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = cohens_kappa(table, wt=weights)
    kappa = _num(result.kappa)
    if kappa is None:
        return {**out, "note": "both ratings are constant: kappa is undefined"}
    return {**out, "weighted_kappa": kappa, "ci": _pair((result.kappa_low, result.kappa_upp)),
            "p_value": _num(result.pvalue_two_sided)}

