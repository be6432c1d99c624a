"""At-will studies (docs/research.md §1): do games that use explanations win more, and does use grow with play?

- explanations_used: a game used explanations when at least one of its rounds had them (bought);
  win rate of those games vs the games that never used them. The paper's test is a two-proportion
  z-test (47% of 157 vs 28% of 49, p = 0.019); here it is next to the participant-clustered GEE.
- adoption (Fig. 5): the share of games using explanations by play index (a participant's 1st, 2nd, ...
  game); and the paper's halves: all games ordered by play index (ties by start time), the first half
  by count vs the rest (the paper: 61.2% vs 91.3%, N = 103 each, p < 1e-5), z-test and clustered GEE,
  plus the trend per play (logistic regression with participant-clustered errors, odds ratio per
  further play).
"""
from __future__ import annotations

import pandas as pd

from .frames import AT_WILL, Frames
from .stats import compare_rates, logit_clustered, mean_ci, rate, rate_of

RESULT_KEYS = ("difference", "difference_ci", "odds_ratio", "odds_ratio_ci", "p_value", "test", "p_value_clustered",
               "test_clustered", "n_participants")


def _with_score(games: pd.DataFrame) -> dict:
    return {**rate_of(games["won"]), "score": mean_ci(games["score"])["mean"]}


def explanations_used(games: pd.DataFrame) -> dict:
    known = games[games["used"].notna()]
    result = compare_rates(known["won"], known["used"], known["cluster"])
    return {"with": _with_score(known[known["used"] == 1]), "without": _with_score(known[known["used"] == 0]),
            "overall": _with_score(games), **{k: result[k] for k in RESULT_KEYS},
            **({"note": result["note"]} if "note" in result else {})}


def adoption(games: pd.DataFrame) -> dict:
    known = games[games["used"].notna()].sort_values(["play", "started", "game_id"], na_position="last")
    half = len(known) // 2
    second = pd.Series(0.0, index=known.index)
    second.iloc[half:] = 1.0
    result = compare_rates(known["used"], second, known["cluster"])
    plays = known.groupby("play").agg(n=("used", "size"), used=("used", "sum"), won=("won", "sum")).reset_index()
    by_play = [{"play": int(r.play), **rate(r.used, r.n, key="share"), "win_rate": r.won / r.n}
               for r in plays.itertuples()]
    trend = logit_clustered(known["used"], known[["play"]], known["cluster"], "play")
    return {"first_half": rate_of(known["used"][second == 0], key="share"),
            "second_half": rate_of(known["used"][second == 1], key="share"),
            **{k: result[k] for k in RESULT_KEYS}, "by_play": by_play,
            "trend": {"odds_ratio_per_play": trend["odds_ratio"], "odds_ratio_ci": trend["odds_ratio_ci"],
                      "p_value": trend["p_value"], "method": trend["method"],
                      **({"note": trend["note"]} if "note" in trend else {})},
            "ordering": "games ordered by play index (a participant's 1st, 2nd, ... game), ties by start time; "
                        "first half = the first floor(N/2) of them",
            **({"note": result["note"]} if "note" in result else {})}


def at_will(frames: Frames) -> dict:
    """The `at_will` section of the report for the at-will studies in `frames`."""
    games = frames.games[frames.games["kind"] == AT_WILL]
    if games.empty:
        return {"missing": "no finished games of an at-will study"}
    if games["used"].isna().all():
        return {"missing": "no rounds table: which games used explanations is unknown",
                "studies": sorted(games["study"].unique().tolist())}
    return {"studies": sorted(games["study"].unique().tolist()), "explanations_used": explanations_used(games),
            "adoption": adoption(games)}
