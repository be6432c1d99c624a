"""How correct the explanations and answers were, and what that did to the games (RESEARCH.md 1).

The unit is an item: one explanation of a game's secret image in one round, as the independent raters
see it. Each item has up to two correctness ratings on the 5-point scale: the raters' consensus (the
median of their ratings, an even split taken on the worse side) and the automatic grade against the
ground truth (explainers/grading.py). The report shows both side by side.

- by_correctness (Fig. 9): win rate of the items' games by correctness rating, overall and per
  explainer, from the raters and from the automatic grades, with the trend over the scale (logistic
  regression with participant-clustered errors, odds ratio per step toward "Exactly on-point") and the
  two sources' agreement (linearly weighted kappa).
- answer_correctness (Fig. 10): win rate against a game's mean answer correctness (the share of its
  gradable rounds whose answer equals the ground truth, rounds.answer_correct), in quarter bins, for
  games with at least one explanation rated above Indifferent (Exactly or Mostly on-point) vs games
  without explanations. Test: logistic regression won ~ group + mean answer correctness (the paper's
  p = 0.013), naive and participant-clustered (GEE); the group's odds ratio is adjusted for correctness.
- correlations: per explainer, explanation correctness (higher = better) with the answer's correctness
  (ANSWER_SCALE, higher = better) over items; Pearson and Spearman with CIs (paper: 0.37 RelQAs,
  0.33 attention, from raters).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .data import NO_RATER_DATA
from .frames import Frames, paper_order
from .ratings import OVERALL
from .scales import ANSWER_SCALE, EXPLANATION_SCALE
from .stats import correlation, gee_logit, logit_clustered, logit_test, rate, weighted_kappa

SOURCES = {"raters": ("rater_rank", "answer_rater_rank"), "automatic": ("auto_rank", "answer_auto_rank")}
ON_POINT = 1                        # ranks 0 and 1: Exactly and Mostly on-point, "above Indifferent"
BIN_EDGES = (0.0, 0.25, 0.5, 0.75, 1.0)
PAPER_CORRELATIONS = {"relqa": 0.37, "attention": 0.33}


def _points(items: pd.DataFrame, column: str) -> list[dict]:
    grouped = items.groupby(column).agg(n=("won", "size"), wins=("won", "sum"), games=("game_id", "nunique"))
    return [{"rating": label, "rank": rank,
             **(rate(grouped.at[rank, "wins"], grouped.at[rank, "n"], n_key="n") if rank in grouped.index
                else rate(0, 0, n_key="n")),
             "n_games": int(grouped.at[rank, "games"]) if rank in grouped.index else 0}
            for rank, label in enumerate(EXPLANATION_SCALE)]


def _by_source(items: pd.DataFrame, column: str) -> dict:
    graded = items[items[column].notna()]
    if graded.empty:
        return {"missing": NO_RATER_DATA if column == "rater_rank" else
                "no automatic grades of explanations of the secret image (explanations.grade)"}
    explainers = paper_order(graded["explainer"].dropna().unique())
    points = {OVERALL: _points(graded, column),
              **{x: _points(graded[graded["explainer"] == x], column) for x in explainers}}
    goodness = pd.DataFrame({"goodness": len(EXPLANATION_SCALE) - 1 - graded[column]})
    trend = logit_clustered(graded["won"], goodness, graded["cluster"], "goodness")
    return {"points": points, "n_items": int(len(graded)), "trend": trend}


def by_correctness(frames: Frames) -> dict:
    items = frames.items
    both = items[items["rater_rank"].notna() & items["auto_rank"].notna()]
    agreement = weighted_kappa(both["rater_rank"], both["auto_rank"], len(EXPLANATION_SCALE)) \
        if not both.empty else {"missing": NO_RATER_DATA if items["rater_rank"].isna().all()
                                else "no item has both a rater consensus and an automatic grade"}
    return {"raters": _by_source(items, "rater_rank"), "automatic": _by_source(items, "auto_rank"),
            "agreement": agreement,
            "unit": "an explanation of the secret image in one round (raters: the median of their ratings)"}


def _bins() -> list[dict]:
    return [{"bin": f"{lo:.2f}-{hi:.2f}", "lo": lo, "hi": hi} for lo, hi in zip(BIN_EDGES[:-1], BIN_EDGES[1:])]


def _bin_points(games: pd.DataFrame) -> list[dict]:
    """Win rate per quarter of mean answer correctness (1.0 falls in the last bin)."""
    n_bins = len(BIN_EDGES) - 1
    index = np.minimum(np.floor(games["answer_correctness"] * n_bins), n_bins - 1)
    grouped = games.groupby(index)["won"].agg(["size", "sum"])
    points = []
    for i, b in enumerate(_bins()):
        n, wins = (grouped.at[float(i), "size"], grouped.at[float(i), "sum"]) if float(i) in grouped.index else (0, 0)
        points.append({**b, **rate(wins, n)})
    return points


def _answer_correctness_for(frames: Frames, column: str) -> dict:
    items, games = frames.items, frames.games
    on_point = set(items.loc[items[column] <= ON_POINT, "game_id"])
    scored = games[games["answer_correctness"].notna()]
    explained = scored[scored["game_id"].isin(on_point)]
    without = scored[scored["used"] == 0]
    if explained.empty and items[column].isna().all():
        return {"missing": NO_RATER_DATA if column == "rater_rank" else
                "no automatic grades of explanations of the secret image (explanations.grade)"}
    both = pd.concat([explained.assign(group=1.0), without.assign(group=0.0)])
    exog = both[["group", "answer_correctness"]]
    naive = logit_test(both["won"], exog, "group")
    clustered = gee_logit(both["won"], exog, both["cluster"], "group")
    return {"points": {"explained_on_point": _bin_points(explained), "without_explanations": _bin_points(without)},
            "n_games": {"explained_on_point": int(len(explained)), "without_explanations": int(len(without))},
            "p_value": naive["p_value"], "odds_ratio": naive["odds_ratio"], "odds_ratio_ci": naive["odds_ratio_ci"],
            "test": "logistic regression won ~ group + mean answer correctness (statsmodels Logit), games as "
                    "independent",
            "p_value_clustered": clustered["p_value"], "odds_ratio_clustered": clustered["odds_ratio"],
            "odds_ratio_clustered_ci": clustered["odds_ratio_ci"], "test_clustered": clustered["method"],
            **({"note": "; ".join(n for n in (naive.get("note"), clustered.get("note")) if n)}
               if naive.get("note") or clustered.get("note") else {})}


def answer_correctness(frames: Frames) -> dict:
    if frames.games["answer_correctness"].isna().all():
        return {"missing": "no graded answers (rounds.answer_correct): a game's mean answer correctness is unknown"}
    return {"bins": _bins(), "automatic": _answer_correctness_for(frames, "auto_rank"),
            "raters": _answer_correctness_for(frames, "rater_rank"),
            "answer_measure": "the share of the game's gradable rounds whose answer equals the ground truth "
                              "(rounds.answer_correct)",
            "groups": {"explained_on_point": "games with at least one explanation of the secret image rated "
                                             "Exactly or Mostly on-point (above Indifferent), by the source",
                       "without_explanations": "games without explanations"}}


def correlations(frames: Frames) -> dict:
    items = frames.items
    out = {"paper": PAPER_CORRELATIONS,
           "measure": "explanation correctness (5-point, higher = better) with the answer's (3-point, higher = "
                      "better) over items of the secret image"}
    for source, (explanation, answer) in SOURCES.items():
        graded = items[items[explanation].notna() & items[answer].notna()]
        if graded.empty:
            out[source] = {"missing": NO_RATER_DATA if source == "raters" else "no automatic grades of both"}
            continue
        x = len(EXPLANATION_SCALE) - 1 - graded[explanation]
        y = len(ANSWER_SCALE) - 1 - graded[answer]
        out[source] = {OVERALL: correlation(x, y),
                       **{e: correlation(x[graded["explainer"] == e], y[graded["explainer"] == e])
                          for e in paper_order(graded["explainer"].dropna().unique())}}
    return out
