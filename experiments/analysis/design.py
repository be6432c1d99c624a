"""The design as it ran: were the arms spread evenly over arrival time?

Randomized assignment (game/assignment.py) deals arms in permuted blocks, so arrival time (time of day, a
recruiting wave, fast or slow participants) cannot go with the arm. The report checks it per study from
the participants table (arm, joined): every participant who joined, before any exclusion (assignment
happened before anything could exclude them), split by join order into quarters; the arm x quarter counts
and scipy's chi-square test of independence (chi2_contingency, no continuity correction). A small p-value
says arms drifted with arrival time; with few participants the expected counts are small and the p-value is
approximate (a note says so). Where the table has the participants' order, the arm x order counts too.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.stats

QUARTERS = 4
MIN_EXPECTED = 5           # the usual rule for the chi-square approximation
CHI_SQUARE = ("chi-square test of independence of arm and arrival quarter (scipy chi2_contingency, no continuity "
              "correction); quarters split the study's participants by join time")


def design(participants: pd.DataFrame) -> dict:
    """The report's `design` section: {"balance": {study: balance} | {"missing"}}."""
    return {"balance": balance(participants)}


def balance(participants: pd.DataFrame) -> dict:
    """Per study, the arms by arrival quarter with the chi-square test (module doc)."""
    if participants.empty or not {"study", "arm", "joined"} <= set(participants.columns):
        return {"missing": "no participants table with arm and join time"}
    known = participants.dropna(subset=["study", "arm", "joined"])
    if known.empty:
        return {"missing": "no participant with an arm and a join time"}
    return {study: _balance(joined) for study, joined in known.groupby("study")}


def _balance(participants: pd.DataFrame) -> dict:
    participants = participants.sort_values("joined", kind="stable")
    n = len(participants)
    quarter = np.arange(n) * QUARTERS // n + 1
    table = pd.crosstab(participants["arm"].to_numpy(), quarter)
    out = {"n_participants": n, "quarters": [int(q) for q in table.columns],
           "counts": {str(arm): [int(c) for c in row] for arm, row in table.iterrows()},
           "chi2": None, "dof": None, "p_value": None, "test": CHI_SQUARE}
    if "order" in participants.columns and participants["order"].notna().any():
        orders = pd.crosstab(participants["arm"], participants["order"])
        out["by_order"] = {str(arm): {str(o): int(c) for o, c in row.items()} for arm, row in orders.iterrows()}
    if table.shape[0] < 2 or n < QUARTERS:
        return {**out, "note": "one arm, or fewer participants than quarters: nothing to test"}
    chi2, p_value, dof, expected = scipy.stats.chi2_contingency(table.to_numpy(), correction=False)
    out.update(chi2=float(chi2), dof=int(dof), p_value=float(p_value))
    if expected.min() < MIN_EXPECTED:
        out["note"] = (f"some expected counts are below {MIN_EXPECTED} ({n} participants): the chi-square p-value "
                       "is approximate")
    return out
