"""The wild cluster bootstrap: p-values and intervals for one coefficient of a linear model that keep
their level with few participants (Cameron, Gelbach and Miller 2008; MacKinnon and Webb 2017).

Why: a sandwich (cluster-robust) variance is too small when clusters are few, so the GEE's and OLS's
clustered tests reject a true null far too often in small studies (3-4x at 8 participants, measured by
`python -m experiments.benchmark.null_calibration`). The wild cluster bootstrap keeps each participant's
residuals together and flips their sign as a block, so the test's reference distribution is built from
the participants actually in the study.

What runs. The model is ordinary least squares (for a 0/1 outcome, the linear probability model) with
CR1 cluster-robust standard errors (statsmodels' `cov_type="cluster"` scaling). The test of
coefficient j = 0 is the restricted wild cluster bootstrap ("WCR"): the null is imposed on the
bootstrap samples, y* = X_r b_r + w_g u_r, with Rademacher weights w_g = +-1 per participant, and the p-value
is the share of bootstrap |t*| at least the study's |t|. Up to ENUMERATE_UP_TO participants every one of
the 2^G sign patterns is used, so the p-value is exact and the same on every run; beyond, DRAWS random
patterns from a seeded generator. The interval is the unrestricted bootstrap-t ("WCU"): b +- q |t*| se,
q the 95th percentile of |t*|. From MAX_CLUSTERS participants on, the bootstrap adds nothing the
t distribution with G - 1 degrees of freedom does not give (many clusters: the sandwich is accurate),
and that test runs instead (no draws: analysis of 10,000 games stays fast).

Smallest study: the 2^G patterns come in pairs (w and -w give the same |t*|), and the study's own
pattern is among them, so no p-value is below 1 / 2^(G-1): with 4 or 5 participants in a comparison the
p-value is valid but cannot reach 0.05 (the method says so); from SIGNIFICANT_FROM = 6 on it can. Below
MIN_CLUSTERS participants no test is run, with a sentence saying why.

Every bootstrap statistic is computed for all patterns at once (numpy; the derivation is in
`_bootstrap_t`): with 100 participants and 9,999 draws, well under a second.
"""
from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.stats

MIN_CLUSTERS = 4          # below: no test (with 3 participants the smallest p-value would be 1/4)
SIGNIFICANT_FROM = 6      # participants from which a p-value can be under 0.05 (see the docstring)
ENUMERATE_UP_TO = 12      # participants up to which all 2^G sign patterns are used (4,096): exact
DRAWS = 9_999             # random sign patterns beyond that
MAX_CLUSTERS = 100        # from here on: the t test with G - 1 degrees of freedom on CR1 errors
SE_FLOOR = 1e-9           # a standard error below this share of the estimate's (or the outcome's) scale is zero
ALPHA = 0.05
ZERO_SE = ("the clustered standard error is zero (the comparison rests on a single participant's games, every "
           "participant shows the same difference, or the outcome does not vary): no test")
WILD = ("wild cluster bootstrap of the OLS t-statistic (CR1 errors), participants as clusters: restricted "
        "(null imposed), Rademacher weights, {patterns}; 95% CI: unrestricted bootstrap-t")
MANY = "OLS with CR1 participant-clustered errors, t test with G - 1 = {df} degrees of freedom"


@dataclass(frozen=True)
class WildTest:
    """One coefficient's estimate, standard error (CR1), two-sided p-value and 95% CI."""
    estimate: float
    se: float
    p_value: float | None
    ci: tuple[float, float] | None
    method: str
    n_clusters: int


def too_few(n_clusters: int) -> str:
    """Why no participant-level test is made below MIN_CLUSTERS participants: one sentence, word for word the
    same wherever a result says it, so a cell joining several results' notes says it once (stats.join_notes)."""
    return (f"fewer than {MIN_CLUSTERS} participants ({n_clusters}): with so few no participant-level test or "
            "interval can say anything (the smallest p-value would be 1/4 or more), so none is reported")


def testable(y, X, clusters) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | str:
    """(y, X as floats, each row's cluster code, the number of clusters), or the sentence saying why no clustered
    test of this design is possible: too few participants, or predictors that cannot be told apart."""
    y, X = np.asarray(y, dtype=float), np.asarray(X, dtype=float)
    codes, _ = pd.factorize(np.asarray(clusters))
    n, k = X.shape
    G = int(codes.max()) + 1 if n else 0
    if G < MIN_CLUSTERS:
        return too_few(G)
    if n <= k or np.linalg.matrix_rank(X) < k:
        return "the predictors do not vary enough to be told apart (a group is empty or two coincide)"
    return y, X, codes, G


def wild_cluster_test(y, X, clusters, term: int, seed: int = 0) -> WildTest | str:
    """Tests coefficient `term` (a column of X, which holds the constant) = 0; a sentence instead when no
    test is possible (too few participants, a predictor that does not vary, a rank-deficient design)."""
    prepared = testable(y, X, clusters)
    if isinstance(prepared, str):
        return prepared
    y, X, codes, G = prepared
    n, k = X.shape
    order = np.argsort(codes, kind="stable")                 # rows grouped by participant
    y, X, codes = y[order], X[order], codes[order]
    bread = np.linalg.inv(X.T @ X)
    beta = bread @ X.T @ y
    residual = y - X @ beta
    scale = G / (G - 1) * (n - 1) / (n - k)                  # CR1, as statsmodels' cov_type="cluster"
    h = X @ bread[:, term]                                   # row i's weight in coefficient `term`
    se = float(np.sqrt(scale * np.sum(_per_participant(codes, G, h * residual) ** 2)))
    estimate = float(beta[term])
    if not se > SE_FLOOR * max(abs(estimate), float(np.std(y))):
        # a comparison that rests on one participant's games (the only one in a group), or in which every
        # participant's games show the same difference, has a clustered standard error of zero up to rounding:
        # its t would be rounding noise
        return ZERO_SE
    t = estimate / se
    if G >= MAX_CLUSTERS:
        df = G - 1
        p = float(2 * scipy.stats.t.sf(abs(t), df))
        q = float(scipy.stats.t.ppf(1 - ALPHA / 2, df))
        return WildTest(estimate, se, p, (estimate - q * se, estimate + q * se), MANY.format(df=df), G)
    weights, patterns = _sign_patterns(G, seed)
    restricted = np.delete(X, term, axis=1)
    restricted_residual = y - restricted @ np.linalg.lstsq(restricted, y, rcond=None)[0]
    null_t = _bootstrap_t(X, codes, G, bread, h, term, restricted_residual, weights, scale)
    extreme = np.abs(null_t) >= abs(t) * (1 - 1e-10)
    if G <= ENUMERATE_UP_TO:
        extreme[[0, -1]] = True         # the study's own pattern (all +1) and its mirror: |t*| = |t| exactly
        p = float(np.mean(extreme))
    else:                               # random patterns: the study's own counts once more, so p >= 1/(draws + 1)
        p = float((np.sum(extreme) + 1) / (len(extreme) + 1))
    spread_t = _bootstrap_t(X, codes, G, bread, h, term, residual, weights, scale)
    q = float(np.quantile(np.abs(spread_t), 1 - ALPHA, method="higher"))    # no interpolation: inf stays inf
    ci = (estimate - q * se, estimate + q * se) if np.isfinite(q) else None
    return WildTest(estimate, se, p, ci, WILD.format(patterns=patterns), G)


@functools.lru_cache(maxsize=64)
def _sign_patterns(G: int, seed: int) -> tuple[np.ndarray, str]:
    """The weights, one row per pattern (read-only: cached, as every test of a study uses the same)."""
    if G <= ENUMERATE_UP_TO:
        weights = np.array(list(itertools.product((1.0, -1.0), repeat=G)))
        patterns = f"all {2 ** G:,} sign patterns (exact)"
        if G < SIGNIFICANT_FROM:
            patterns += (f"; with {G} participants the smallest possible p-value is 1/{2 ** (G - 1)}, so this "
                         "comparison cannot reach 0.05")
    else:
        weights = np.random.default_rng(seed).choice((1.0, -1.0), size=(DRAWS, G))
        patterns = f"{DRAWS:,} random sign patterns (seed {seed})"
    weights.setflags(write=False)
    return weights, patterns


def _per_participant(codes: np.ndarray, G: int, values: np.ndarray) -> np.ndarray:
    """Sums of `values` (rows, or rows x columns) over each participant's rows: G, or G x columns."""
    if values.ndim == 1:
        return np.bincount(codes, weights=values, minlength=G)
    return np.stack([np.bincount(codes, weights=values[:, c], minlength=G) for c in range(values.shape[1])], axis=1)


def _bootstrap_t(X, codes, G, bread, h, term, residual, weights, scale) -> np.ndarray:
    """t* = (b*_term - b_fitted,term) / se* for every sign pattern (rows of `weights`, one sign per
    participant) of the wild bootstrap y* = X b_fitted + w_g * residual: b_fitted is the restricted
    model's (b_term = 0) for the test, the full model's for the interval; it cancels out of t*.
    With A = (X'X)^-1 X':
        b* - b_fitted = A (w * u) = sum_g w_g m_g,         m_g = A_g u_g                  (M: G x k)
        u*            = w * u - X (b* - b_fitted)
        se*^2         = scale * sum_g (sum_{i in g} h_i u*_i)^2,  h = X (X'X)^-1 e_term
        sum_{i in g} h_i u*_i = w_g c_g - sum_g' D_gg' w_g',  c_g = sum_{i in g} h_i u_i,  D = H M'
    with H_g = sum_{i in g} h_i X_i. Everything is a product of small matrices: B x G x G at most."""
    M = _per_participant(codes, G, X * residual[:, None]) @ bread    # G x k: (X_g' u_g)' (X'X)^-1 = m_g'
    c = _per_participant(codes, G, h * residual)
    D = _per_participant(codes, G, X * h[:, None]) @ M.T            # G x G
    shifted = weights @ M[:, term]                            # b*_term - b_fitted,term
    per_cluster = weights * c - weights @ D.T
    se = np.sqrt(scale * np.sum(per_cluster ** 2, axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = shifted / se
    return np.where(np.isfinite(t), t, np.inf)           # a degenerate sample counts against the study
