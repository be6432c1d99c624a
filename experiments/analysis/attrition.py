"""Attrition where it bites (the flow table's, experiments/analysis/flow.py): who left after which kind of block and
how it went, explanation arms against the arms without, and a test of leaving by that split.

A test of finishing over every arm spreads its power over the arms (9 dropouts in three explanation arms against 0
in control gave p = 0.35 over four arms), and a slot dealt again after a dropout makes every arm finish: the
comparison that matters is whether the participants shown explanations left more, and after what.

    attrition_by_block(people, games)      # people: flow._people's rows of one study; games: its finished games
    explanations_vs_control(people)        # Fisher's exact test, dropped vs finished x explanation arms vs the others
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.stats

from game.study import arm_modes, is_sham

EXPLANATIONS_VS_CONTROL = ("Fisher's exact test (scipy fisher_exact, two-sided) of leaving (dropped vs finished, "
                           "refills counted as the participants they are) in the arms with real explanations against "
                           "the arms without; statistic: the odds ratio of leaving, explanation arms vs the others")
BY_LAST_BLOCK = ("the participants who left after playing, by the kind of the last block they played (with or "
                 "without explanations, in their order) and how it went for them (lost most of its games, or not), "
                 "explanation arms vs the arms without; a loss in a block with explanations followed by leaving is "
                 "what biases completers-only estimates upward")


def _group(arm: str) -> str | None:
    """"explanations" (real ones), "none" (an arm without), or None (a sham or an arm this checkout does not know)."""
    try:
        modes = arm_modes(arm)
    except ValueError:
        return None
    return None if is_sham(arm) else "explanations" if modes else "none"


def explanations_vs_control(people: pd.DataFrame) -> dict:
    """EXPLANATIONS_VS_CONTROL over randomized participants who consented and were not screened out."""
    groups = people["arm"].map(_group)
    known = people[groups.notna()].assign(group=groups[groups.notna()])
    table = {g: {"dropped": int(((known["group"] == g) & (known["status"] == "dropped")).sum()),
                 "finished": int(((known["group"] == g) & (known["status"] == "finished")).sum())}
             for g in ("explanations", "none")}
    out = {"p_value": None, "test": EXPLANATIONS_VS_CONTROL, "table": table}
    counts = np.array([[table[g]["dropped"], table[g]["finished"]] for g in ("explanations", "none")])
    if (counts.sum(axis=1) == 0).any():
        return {**out, "note": "needs participants in arms with real explanations and in arms without"}
    if counts[:, 0].sum() == 0:
        return {**out, "note": "nobody dropped out"}
    result = scipy.stats.fisher_exact(counts)
    return {**out, "p_value": float(result.pvalue), "statistic": float(result.statistic),
            "dropped_share": {g: table[g]["dropped"] / max(1, table[g]["dropped"] + table[g]["finished"])
                              for g in table}}


def attrition_by_block(people: pd.DataFrame, games: pd.DataFrame) -> dict:
    """BY_LAST_BLOCK: counts per group ("explanations", "none") of dropouts by the last block's kind and outcome."""
    dropped = people[(people["status"] == "dropped") & people["played"]]
    counts = {g: {"with_explanations_lost_most": 0, "with_explanations_won_most": 0,
                  "without_lost_most": 0, "without_won_most": 0, "unknown": 0} for g in ("explanations", "none")}
    if dropped.empty:
        return {"definition": BY_LAST_BLOCK, "counts": counts}
    mine = games[games["key"].isin(set(dropped["key"]))]
    last = mine[mine["session"] + 1 == mine["key"].map(dropped.set_index("key")["last_block"])]
    won = last.groupby("key")["won"].mean()
    for row in dropped.itertuples():
        group = _group(row.arm)
        if group is None:
            continue
        if pd.isna(row.last_block) or row.key not in won.index:
            counts[group]["unknown"] += 1
            continue
        shown = (int(row.last_block) % 2 == 0) != (row.order == "baba") and group == "explanations"
        kind = "with_explanations" if shown else "without"
        counts[group][f"{kind}_{'lost' if won[row.key] < 0.5 else 'won'}_most"] += 1
    return {"definition": BY_LAST_BLOCK, "counts": counts}
