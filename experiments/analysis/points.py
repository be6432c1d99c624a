"""The points of a figure panel with the participant as the unit (Figs. 7, 9, 10): a win rate per
category (a helpfulness rating, a correctness grade, a bin of answer correctness) and, where the panel has
a baseline, each point's test against it.

Each row (a rating, an item, a game) carries its game's outcome, and each participant gives many rows, so
the rows are not independent. Per point:
- "ci_wilson": the Wilson interval of the counts, rows as independent (the paper's unit; too narrow when
  participants differ);
- "ci_bootstrap": the participant-bootstrap percentile interval (bootstrap.py), None below
  bootstrap.MIN_PARTICIPANTS participants;
- "ci": the interval the figures draw: the union of the two, so the bootstrap's wherever it is wider and
  never narrower than Wilson's (where participants are few the bootstrap sees little of their spread).
Against a baseline (a rate of games without explanations):
- "p_value_vs_baseline": the paper's two-proportion z-test, rows as independent, uncorrected (kept for
  comparison with the paper, not for inference);
- "p_value_vs_baseline_clustered": the participant-clustered test of point vs baseline of
  stats.logit_clustered (a logistic regression of the win for the odds ratio; the p-value with the
  participant as the unit, as stats.py makes it);
- "p_value_vs_baseline_holm": that p-value Holm-corrected over the panel's points (multiplicity.holm),
  the one the figures and the HTML show.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .bootstrap import METHOD as BOOTSTRAP, ParticipantBootstrap, union
from .multiplicity import HOLM, holm
from .stats import logit_clustered, rate, z_test

INTERVAL = (f"{BOOTSTRAP}, widened where needed to contain the Wilson interval of the counts (rows as "
            "independent); 'ci_wilson' and 'ci_bootstrap' hold the two")
TEST_VS_BASELINE = ("the participant-clustered test of point vs baseline of stats.logit_clustered (odds ratio from a "
                    "logistic regression of the win; the p-value as its 'method' says, with the participant as the "
                    f"unit), {HOLM}")
TEST_VS_BASELINE_NAIVE = "two-proportion z-test, rows as independent, uncorrected (the paper's; not for inference)"


def panel_bootstrap(*frames: pd.DataFrame) -> ParticipantBootstrap:
    """The resamples of every participant with a row in any of the panel's frames."""
    clusters = [f["cluster"] for f in frames if len(f)]
    return ParticipantBootstrap(pd.concat(clusters) if clusters else [])


def rate_points(rows: pd.DataFrame, category: str, n_categories: int, boot: ParticipantBootstrap,
                n_key: str = "n") -> list[dict]:
    """One point per category 0..n_categories-1 of `rows` (columns won, cluster, `category`, game_id):
    {n_key, "win_rate", "ci", "ci_wilson", "ci_bootstrap", "n_participants", "n_games"?} ("n_games", the
    games behind the rows, when the rows are not games)."""
    rows = rows[rows["won"].notna() & rows[category].notna()]
    codes = rows[category].to_numpy(dtype=float).astype(int)
    won = rows["won"].to_numpy(dtype=float)
    wins = np.bincount(codes, weights=won, minlength=n_categories)
    sizes = np.bincount(codes, minlength=n_categories)
    games = rows.groupby(codes)["game_id"].nunique() if n_key != "n_games" else None
    intervals = boot.means(won, rows["cluster"], codes, n_categories)
    points = []
    for k in range(n_categories):
        wilson = rate(wins[k], sizes[k], n_key=n_key)
        point = {**wilson, "ci": union(wilson["ci"], intervals[k]["ci"]), "ci_wilson": wilson["ci"],
                 "ci_bootstrap": intervals[k]["ci"], "n_participants": intervals[k]["n_participants"]}
        if games is not None:
            point["n_games"] = int(games.get(k, 0))
        points.append(point)
    return points


def baseline_rate(games: pd.DataFrame, boot: ParticipantBootstrap) -> dict:
    """The baseline's win rate as a rate of games, with the same three intervals as a point."""
    return rate_points(games.assign(_all=0.0), "_all", 1, boot, n_key="n_games")[0]


def versus_baseline(points: list[dict], rows: pd.DataFrame, category: str, baseline: pd.DataFrame) -> list[dict]:
    """The points with their tests against the baseline games (module doc), Holm over these points."""
    base_won = baseline["won"].to_numpy(dtype=float)
    base_won = base_won[~np.isnan(base_won)]
    base_rate = float(base_won.mean()) if len(base_won) else None
    tests = []
    for k, point in enumerate(points):
        mine = rows[rows[category] == k]
        n = len(mine)
        naive = z_test((float(mine["won"].sum()), float(base_won.sum())), (n, len(base_won)))
        if n == 0 or len(baseline) == 0:
            clustered = {"p_value": None, "note": "the point or the baseline has no rows"}
        else:
            stacked = pd.DataFrame({"won": np.concatenate([mine["won"].to_numpy(float), baseline["won"].to_numpy(float)]),
                                    "vs_baseline": np.r_[np.ones(n), np.zeros(len(baseline))],
                                    "cluster": np.concatenate([mine["cluster"].to_numpy(object),
                                                               baseline["cluster"].to_numpy(object)])})
            clustered = logit_clustered(stacked["won"], stacked[["vs_baseline"]], stacked["cluster"], "vs_baseline")
        tests.append((naive, clustered))
    adjusted = holm([clustered["p_value"] for _, clustered in tests])
    out = []
    for point, (naive, clustered), p_holm in zip(points, tests, adjusted):
        out.append({**point, "baseline_win_rate": base_rate, "p_value_vs_baseline": naive["p_value"],
                    "odds_ratio_vs_baseline": clustered.get("odds_ratio"),
                    "p_value_vs_baseline_clustered": clustered["p_value"], "p_value_vs_baseline_holm": p_holm,
                    **({"note_vs_baseline": clustered["note"]} if clustered.get("note") else {})})
    return out
