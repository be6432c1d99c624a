"""Corrections for testing several hypotheses at once: a figure panel that tests each of its points
against a baseline makes five tests, and at 5% each one of them is a false positive one time in twenty.

Holm's step-down method (Holm 1979) keeps the chance of any false positive in the family at 5% under any
dependence between the tests, and is uniformly more powerful than Bonferroni's.
"""
from __future__ import annotations

import gc

import numpy as np
from statsmodels.stats.multitest import multipletests

HOLM = "Holm-corrected over the panel's points (statsmodels multipletests, method='holm')"


def holm(p_values) -> list[float | None]:
    """Holm-adjusted p-values of the family of the tests that have one; a test without one (None, NaN)
    stays None and is not counted in the family."""
    p_values = [None if p is None or not np.isfinite(p) else float(p) for p in p_values]
    made = [i for i, p in enumerate(p_values) if p is not None]
    adjusted: list[float | None] = [None] * len(p_values)
    if made:
        # statsmodels' Holm branch calls gc.collect(), which walks the whole heap: 0.1-0.2 s a call inside a
        # report's analysis. Frozen objects are skipped (gc.freeze/unfreeze only move them between lists).
        gc.freeze()
        try:
            _, corrected, _, _ = multipletests([p_values[i] for i in made], method="holm")
        finally:
            gc.unfreeze()
        for i, p in zip(made, corrected):
            adjusted[i] = float(p)
    return adjusted
