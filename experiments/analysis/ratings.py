"""The players' helpfulness ratings (RESEARCH.md 1, Figs. 6-8).

After every round the player rates how helpful it was, before knowing the outcome: Helping a lot (5,
the paper's Excellent) ... Completely confusing (1). The unit here is a rating, and its outcome is its
game's (a game with several rated rounds counts once per rating, as in the paper's figures).

- by_helpfulness (Fig. 7): win rate by rating, over the ratings of rounds that showed explanations in
  arms that show them, overall (real explanations: sham arms, a sanity check, only have their own mode)
  and per arm ("mode"), against the baseline of the same arms' games
  without explanations (controlled: odd blocks; at-will: games that never used them). Each point has a
  z-test against that baseline; the trend over the scale is a logistic regression with
  participant-clustered errors (odds ratio per rating step up).
- difficulty_by_rating (Fig. 8): the mean set difficulty of the rated games by rating (t CIs), and its
  Spearman correlation with the rating. Difficulty is the game's stored mean L2 feature distance from
  the secret to its distractors (game/image_sets.py): lower = harder.
- rating_histograms (Fig. 6): counts of the helpfulness ratings (with and without explanations) and of
  the correctness ratings, from the raters and from the automatic grades, of explanations (per
  explainer) and answers.
"""
from __future__ import annotations

import pandas as pd

from .data import NO_RATER_DATA
from .frames import CONTROLLED, Frames, arms_of, paper_order
from .scales import ANSWER_SCALE, EXPLANATION_SCALE, RATINGS
from .stats import correlation, logit_clustered, mean_ci, rate, rate_of, z_test

OVERALL = "overall"


def _modes(frames: Frames) -> list[str]:
    """The controlled arms that show explanations (at-will players choose, so their arm is no mode)."""
    return arms_of(frames.games[frames.games["kind"] == CONTROLLED])[0]


def _rated(frames: Frames) -> pd.DataFrame:
    ratings = frames.ratings
    return ratings[(ratings["explained"] == 1) & (ratings["expl_arm"] == 1)]


def _real(frame: pd.DataFrame) -> pd.DataFrame:
    """What "overall" pools: the rows of arms that show no sham explanation (frames.py `sham`)."""
    return frame[frame["sham"] != 1]


def _win_points(ratings: pd.DataFrame, baseline_games: pd.DataFrame) -> list[dict]:
    grouped = ratings.groupby("rank").agg(n=("won", "size"), wins=("won", "sum"), games=("game_id", "nunique"))
    base_wins, base_n = float(baseline_games["won"].sum()), len(baseline_games)
    points = []
    for rank, label in enumerate(RATINGS):
        n, wins, games = (int(grouped.at[rank, "n"]), float(grouped.at[rank, "wins"]), int(grouped.at[rank, "games"])) \
            if rank in grouped.index else (0, 0.0, 0)
        points.append({"rating": label, "score": len(RATINGS) - rank, **rate(wins, n, n_key="n"), "n_games": games,
                       "baseline_win_rate": base_wins / base_n if base_n else None,
                       "p_value_vs_baseline": z_test((wins, base_wins), (n, base_n))["p_value"]})
    return points


def by_helpfulness(frames: Frames) -> dict:
    rated = _rated(frames)
    if rated.empty:
        return {"missing": "no helpfulness ratings of rounds with explanations"}
    games = frames.games
    baseline_games = games[(games["expl_arm"] == 1) & (games["shows"] == 0)]
    groups = [(OVERALL, _real(rated), _real(baseline_games))] + [
        (arm, rated[rated["arm"] == arm], baseline_games[baseline_games["arm"] == arm]) for arm in _modes(frames)]
    points, baselines, trends = {}, {}, {}
    for mode, ratings, base in groups:
        baselines[mode] = rate_of(base["won"])
        points[mode] = _win_points(ratings, base)
        trends[mode] = logit_clustered(ratings["won"], ratings[["score"]], ratings["cluster"], "score")
    return {"points": points, "baseline": baselines, "trend": trends,
            "unit": "a helpfulness rating of a round with explanations; the outcome is its game's",
            "baseline_definition": "the same arms' games without explanations"}


def difficulty_by_rating(frames: Frames) -> dict:
    rated = _rated(frames)
    if rated.empty or rated["difficulty"].isna().all():
        return {"missing": "no helpfulness ratings of rounds with explanations, or no set difficulty "
                           "(games.difficulty)"}
    points, correlations = {}, {}
    for mode in [OVERALL] + _modes(frames):
        ratings = _real(rated) if mode == OVERALL else rated[rated["arm"] == mode]
        by_rank = dict(tuple(ratings.groupby("rank")["difficulty"]))
        points[mode] = []
        for rank, label in enumerate(RATINGS):
            stats = mean_ci(by_rank.get(float(rank), pd.Series(dtype=float)))
            points[mode].append({"rating": label, "score": len(RATINGS) - rank, "n": stats["n"],
                                 "mean_difficulty": stats["mean"], "ci": stats["ci"]})
        correlations[mode] = correlation(ratings["score"], ratings["difficulty"])
    return {"points": points, "correlation": correlations,
            "difficulty": "mean L2 feature distance from the secret to its distractors: lower = harder"}


def _counts(labels: pd.Series, scale: tuple[str, ...]) -> list[dict]:
    counts = labels.value_counts()
    total = int(counts.reindex(list(scale)).fillna(0).sum())
    return [{"rating": label, "rank": rank, "count": int(counts.get(label, 0)),
             "share": int(counts.get(label, 0)) / total if total else None} for rank, label in enumerate(scale)]


def _ranked_counts(ranks: pd.Series, scale: tuple[str, ...]) -> list[dict]:
    return _counts(ranks.dropna().astype(int).map(dict(enumerate(scale))), scale)


def rating_histograms(frames: Frames) -> dict:
    ratings, modes = frames.ratings, _modes(frames)
    explained = ratings[ratings["explained"] == 1]
    unexplained = ratings[ratings["explained"] != 1]
    helpfulness = {OVERALL: _counts(_real(explained)["rating"], RATINGS),
                   **{arm: _counts(explained.loc[explained["arm"] == arm, "rating"], RATINGS) for arm in modes}}
    without = {OVERALL: _counts(unexplained["rating"], RATINGS),
               **{arm: _counts(unexplained.loc[unexplained["arm"] == arm, "rating"], RATINGS)
                  for arm in paper_order(unexplained["arm"].unique())}}
    items, rater = frames.items, frames.rater
    explainers = paper_order(items["explainer"].dropna().unique())
    automatic = {OVERALL: _ranked_counts(items["auto_rank"], EXPLANATION_SCALE),
                 **{x: _ranked_counts(items.loc[items["explainer"] == x, "auto_rank"], EXPLANATION_SCALE)
                    for x in explainers}}
    answers = frames.rounds.drop_duplicates(["game_id", "round"])
    histograms = {"helpfulness": helpfulness, "helpfulness_without_explanations": without,
                  "explanation_correctness": {"automatic": automatic},
                  "answer_correctness": {"automatic": _counts(answers["answer_grade"], ANSWER_SCALE)}}
    if rater.empty:
        histograms["explanation_correctness"]["raters"] = {"missing": NO_RATER_DATA}
        histograms["answer_correctness"]["raters"] = {"missing": NO_RATER_DATA}
    else:
        histograms["explanation_correctness"]["raters"] = {
            OVERALL: _counts(rater["explanation_rating"], EXPLANATION_SCALE),
            **{x: _counts(rater.loc[rater["explainer"] == x, "explanation_rating"], EXPLANATION_SCALE)
               for x in paper_order(rater["explainer"].dropna().unique())}}
        histograms["answer_correctness"]["raters"] = _counts(rater["answer_rating"], ANSWER_SCALE)
    histograms["unit"] = ("helpfulness: one per rated round; correctness: raters' individual ratings, automatic "
                          "grades of the explanations of the secret image and of the rounds' answers")
    return histograms
