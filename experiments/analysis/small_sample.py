"""One coefficient of a least-squares fit tested for few participants: CR2 cluster-robust errors (Bell and McCaffrey
2002) with their degrees of freedom (Imbens and Kolesar 2016), the test the registrable primary runs
(random_intercept.py).

Why this one (measured on the null crowds of experiments/benchmark/null_calibration.py, docs/results.md "Whose
effect"): at 12 and 16 participants the wild cluster bootstrap with Rademacher weights (wild_bootstrap.py) called
6.5-7.2% of null studies on the primary's random-intercept fit, Webb's six-point weights no better; CR2 with the
Bell-McCaffrey degrees of freedom called 5.0-5.5% in the same studies, for about the same power once the
bootstrap's excess is taken out.

CR2 scales each participant's residuals by (I - H_gg)^(-1/2), which undoes the shrinkage least squares puts on the
residuals of a participant with few rows; the degrees of freedom are those of a t whose variance matches the CR2
variance's under independent errors: (tr G'G)^2 / tr((G'G)^2), G's column g = (I - H)_{.,g} A_g X_g (X'X)^-1 e_j.
With 4 cells a participant the matrices are small: 100 participants take milliseconds.
"""
from __future__ import annotations

import numpy as np
import scipy.stats

from .wild_bootstrap import SE_FLOOR, ZERO_SE, WildTest, testable

ALPHA = 0.05
METHOD = ("OLS with CR2 cluster-robust errors over units of randomization (Bell-McCaffrey), t test with "
          "Bell-McCaffrey degrees of freedom ({df:.1f})")


def cr2_test(y, X, clusters, term: int) -> WildTest | str:
    """Tests coefficient `term` (a column of X) = 0; a sentence instead when no test is possible."""
    prepared = testable(y, X, clusters)
    if isinstance(prepared, str):
        return prepared
    y, X, codes, G = prepared
    n = len(y)
    bread = np.linalg.inv(X.T @ X)
    beta = bread @ X.T @ y
    residual = y - X @ beta
    weight = bread[:, term]                            # (X'X)^-1 e_term
    leverage = X @ bread @ X.T
    rest = np.eye(n) - leverage
    variance, columns = 0.0, np.zeros((n, G))
    for g in range(G):
        rows = np.flatnonzero(codes == g)
        values, vectors = np.linalg.eigh(rest[np.ix_(rows, rows)])
        adjust = vectors @ np.diag(np.clip(values, 1e-12, None) ** -0.5) @ vectors.T
        a = adjust @ X[rows] @ weight
        variance += float(a @ residual[rows]) ** 2
        columns[:, g] = rest[:, rows] @ a
    estimate, se = float(beta[term]), float(np.sqrt(variance))
    if not se > SE_FLOOR * max(abs(estimate), float(np.std(y))):
        return ZERO_SE
    cross = columns.T @ columns
    dof = float(np.trace(cross) ** 2 / np.trace(cross @ cross))
    q = float(scipy.stats.t.ppf(1 - ALPHA / 2, dof))
    p = float(2 * scipy.stats.t.sf(abs(estimate / se), dof))
    return WildTest(estimate, se, p, (estimate - q * se, estimate + q * se), METHOD.format(df=dof), G)
