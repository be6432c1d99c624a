"""Corrections for testing several hypotheses at once: a figure panel that tests each of its points
against a baseline makes five tests, and at 5% each one of them is a false positive one time in twenty.

Holm's step-down method (Holm 1979) keeps the chance of any false positive in the family at 5% under any
dependence between the tests, and is uniformly more powerful than Bonferroni's.
"""
from __future__ import annotations

import gc

import numpy as np
from statsmodels.stats.multitest import multipletests

from game.preregistration import ANALYSIS

ALPHA = ANALYSIS["alpha"]       # the level a pre-registration freezes
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


# --- the report's family of effect tests (issue 54) ------------------------------------------------------------
GATE = "table1.overall"          # the registrable primary, when no other is registered
FAMILY_WISE = ("The primary effect test is the confirmatory one; the arm rows (table1.ARM) follow it in a gatekeeping "
               "order: each arm row's adjusted p-value is the larger of the primary's and its Holm-adjusted one over the "
               "arm rows, so the primary and the arm rows together keep a {alpha:.0%} family-wise error. Every other "
               "p-value is not corrected.")


def correct_family(tests: list[dict], alpha: float = ALPHA) -> None:
    """Adds `correction` and `p_adjusted` to each listed test (claims.py): the gate (the registered primary, else
    table1.overall) confirmatory, the other table1 arm rows gatekept by it with Holm's adjustment among them,
    everything else "not corrected" (p_adjusted None)."""
    effects = {t["name"]: t for t in tests if t.get("claim") == "effect"}
    gate = next((t for t in tests if t.get("role") == "primary"), None) or effects.get(GATE)
    arms = [t for name, t in effects.items() if name.startswith("table1.") and t is not gate]
    for t in tests:
        t["correction"], t["p_adjusted"] = "not corrected", None
    if gate is None:
        return
    gate["correction"], gate["p_adjusted"] = "confirmatory (the primary: tested first, at its level)", gate.get("p_value")
    gate_p = gate.get("p_value")
    for t, p in zip(arms, holm([t.get("p_value") for t in arms])):
        t["correction"] = f"gatekept by {gate['name']}, Holm over the {len(arms)} arm rows"
        t["p_adjusted"] = None if p is None or gate_p is None else max(float(gate_p), p)
