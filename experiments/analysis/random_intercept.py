"""The participants' average effect from a crossover with dropouts: a random-intercept model of each participant's
win rate per block, fitted by feasible GLS, tested with CR2 errors and Bell-McCaffrey degrees of freedom
(small_sample.py).

    result = random_intercept_test(cells, ["shows", "after_explanations"], "shows")

Why this model (docs/results.md, "Whose effect"; measured on the null crowds of
experiments/benchmark/null_calibration.py):
- The unit is the participant's block: each block of each participant weighs the same, so a participant who played
  more games does not count more (the game-level OLS weighted participants by games played: the completers' effect).
- Participants who left after a block stay in: a random intercept (not a fixed effect per participant) lets their
  blocks inform the comparison, and the model's likelihood is valid when dropout depends on the blocks already played
  (missing at random), such as leaving after losing in a block with explanations. A fixed-effects fit drops every
  participant with one block, and with them the ones who left after a bad first block.
- GLS with estimated variance components is OLS on quasi-demeaned data (y - theta_i * mean_i(y), theta_i = 1 -
  sqrt(s_e^2 / (s_e^2 + T_i s_a^2)), T_i the participant's blocks): the Swamy-Arora estimator, whose variance
  components come from the within (fixed effects) and the pooled residuals. The test of the coefficient is CR2 on the
  transformed data, units of randomization as clusters, with Bell-McCaffrey degrees of freedom: it keeps its level
  at 12 and 16 participants, where the wild cluster bootstrap (Rademacher or Webb weights) ran at 6.5-7.2%
  (small_sample.py).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .small_sample import cr2_test
from .wild_bootstrap import WildTest, testable


def block_cells(games: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """One row per participant and block: the win rate and score there, the block's `columns` (constant within a
    block: its first value) and the participant's unit of randomization."""
    known = games[games["block"].notna()]
    unit = known["unit"] if "unit" in known.columns else known["cluster"]
    agg = {"won": ("won", "mean"), "score": ("score", "mean"), "games": ("won", "size")}
    agg.update({c: (c, "first") for c in columns if c not in agg})
    cells = known.assign(unit=unit).groupby(["cluster", "block"], sort=True).agg(unit=("unit", "first"), **agg)
    return cells.reset_index()


def random_intercept_test(cells: pd.DataFrame, columns: list[str], term: str, outcome: str = "won",
                          fixed: tuple[str, ...] = ("block",)) -> WildTest | str:
    """Tests `term` (one of `columns`) = 0 in outcome ~ columns + one intercept per level of each of `fixed` +
    participant random intercept, over `cells` (block_cells); a sentence when no test is possible."""
    transformed_y, transformed_X = _transformed(cells, columns, outcome, fixed)
    return cr2_test(transformed_y, transformed_X, cells["unit"].to_numpy(), columns.index(term))


def random_intercept_estimate(cells: pd.DataFrame, columns: list[str], term: str, outcome: str = "won",
                              fixed: tuple[str, ...] = ("block",)) -> float:
    """The coefficient random_intercept_test tests, without the test (NaN when the design cannot tell it)."""
    transformed_y, transformed_X = _transformed(cells, columns, outcome, fixed)
    if isinstance(testable(transformed_y, transformed_X, cells["unit"].to_numpy()), str):
        return float("nan")
    return float(np.linalg.lstsq(transformed_X, transformed_y, rcond=None)[0][columns.index(term)])


def _transformed(cells: pd.DataFrame, columns: list[str], outcome: str, fixed) -> tuple[np.ndarray, np.ndarray]:
    """The outcome and design, quasi-demeaned per participant (module doc): OLS on them is the GLS fit."""
    dummies = [pd.get_dummies(cells[f].astype(str), prefix=f, drop_first=i > 0) for i, f in enumerate(fixed)]
    X = pd.concat([cells[columns].astype(float)] + dummies, axis=1).astype(float).to_numpy()
    y = cells[outcome].to_numpy(float)
    codes, _ = pd.factorize(cells["cluster"])
    if len(codes) == 0:
        return y, X
    T = np.bincount(codes).astype(float)
    means_X = np.stack([np.bincount(codes, weights=X[:, j]) for j in range(X.shape[1])], 1) / T[:, None]
    means_y = np.bincount(codes, weights=y) / T
    theta = _theta(X, y, codes, T, means_X, means_y)
    return y - theta[codes] * means_y[codes], X - theta[codes, None] * means_X[codes]


def _theta(X, y, codes, T, means_X, means_y) -> np.ndarray:
    """Each participant's quasi-demeaning weight, from the within residual variance s_e^2 (fixed effects fit on the
    participants with two blocks or more) and the participant variance s_a^2 (pooled residuals' participant means,
    less their share of s_e^2), floored at 0 (then theta = 0: pooled OLS)."""
    within = T[codes] > 1
    Xw, yw = (X - means_X[codes])[within], (y - means_y[codes])[within]
    if not within.any():
        return np.zeros(len(T))
    b = np.linalg.lstsq(Xw, yw, rcond=None)[0]
    residual = yw - Xw @ b
    dof = int(within.sum() - (T > 1).sum() - np.linalg.matrix_rank(Xw))
    s_e = float(residual @ residual / dof) if dof > 0 else 0.0
    pooled = y - X @ np.linalg.lstsq(X, y, rcond=None)[0]
    per = np.bincount(codes, weights=pooled) / T
    s_a = max(float(np.mean(per ** 2 - s_e / T)), 0.0)
    if s_e <= 0:
        return np.ones(len(T))
    return 1 - np.sqrt(s_e / (s_e + T * s_a))
