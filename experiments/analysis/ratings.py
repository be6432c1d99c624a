"""The players' helpfulness ratings (docs/research.md §1, Figs. 6-8).

After every round the player rates how helpful it was, before knowing the outcome: Helping a lot (5,
the paper's Excellent) ... Completely confusing (1). The unit here is a rating, and its outcome is its
game's (a game with several rated rounds counts once per rating, as in the paper's figures). Ratings
repeat within games and participants, so every interval and test has the participant as its unit
(points.py, bootstrap.py), and a report over several studies shows each study kind apart (kinds.py).

- by_helpfulness (Fig. 7): win rate by rating, over the ratings of rounds that showed explanations in
  arms that show them, overall (real explanations: sham arms, a sanity check, only have their own mode)
  and per arm ("mode"), against the baseline of the same arms' games without explanations (controlled:
  odd blocks; at-will: games that never used them). Each point has the participant-bootstrap interval
  and a participant-clustered test against that baseline, Holm-corrected over the panel's points
  (points.py); the trend over the scale, one test per panel, is the participant-clustered test of
  stats.logit_clustered (odds ratio per rating step up).
- difficulty_by_rating (Fig. 8): the mean set difficulty of the rated games by rating (t and participant-
  bootstrap intervals), its Spearman correlation with the rating (ratings as independent), the slope per
  rating step with its participant-bootstrap interval (the panel's trend), and the paper's difficulty
  analysis, difficulty of won vs lost games with vs without explanations (difficulty.py). Difficulty is
  the game's stored mean L2 feature distance from the secret to its distractors (game/image_sets.py):
  lower = harder.
- rating_histograms (Fig. 6): counts of the helpfulness ratings (with and without explanations) and of
  the correctness ratings, from the raters and from the automatic grades, of explanations (per
  explainer) and answers.
"""
from __future__ import annotations

import pandas as pd

from .bootstrap import METHOD as BOOTSTRAP, MIN_PARTICIPANTS, ParticipantBootstrap, union
from .data import NO_RATER_DATA
from .difficulty import won_vs_lost
from .frames import CONTROLLED, Frames, arms_of, paper_order
from .kinds import per_kind
from .points import INTERVAL, TEST_VS_BASELINE, TEST_VS_BASELINE_NAIVE, baseline_rate, panel_bootstrap, rate_points, \
    versus_baseline
from .scales import ANSWER_SCALE, EXPLANATION_SCALE, RATINGS
from .stats import correlation, game_level_trend, logit_clustered, mean_ci

OVERALL = "overall"
TREND = ("the participant-clustered test of the rating (1-5) in a logistic regression of the win (stats.logit_clustered; "
         "its 'method' says how the p-value is made): odds ratio per rating step up")


def _modes(frames: Frames) -> list[str]:
    """The controlled arms that show explanations (at-will players choose, so their arm is no mode)."""
    return arms_of(frames.games[frames.games["kind"] == CONTROLLED])[0]


def _rated(frames: Frames) -> pd.DataFrame:
    ratings = frames.ratings
    return ratings[(ratings["explained"] == 1) & (ratings["expl_arm"] == 1)]


def _real(frame: pd.DataFrame) -> pd.DataFrame:
    """What "overall" pools: the rows of arms that show no sham explanation (frames.py `sham`)."""
    return frame[frame["sham"] != 1]


def _win_points(ratings: pd.DataFrame, baseline_games: pd.DataFrame, boot: ParticipantBootstrap) -> list[dict]:
    points = versus_baseline(rate_points(ratings, "rank", len(RATINGS), boot), ratings, "rank", baseline_games)
    return [{"rating": label, "score": len(RATINGS) - rank, **point}
            for rank, (label, point) in enumerate(zip(RATINGS, points))]


def by_helpfulness(frames: Frames) -> dict:
    return per_kind(frames, _by_helpfulness)


def _by_helpfulness(frames: Frames) -> dict:
    rated = _rated(frames)
    if rated.empty:
        return {"missing": "no helpfulness ratings of rounds with explanations"}
    games = frames.games
    baseline_games = games[(games["expl_arm"] == 1) & (games["shows"] == 0)]
    groups = [(OVERALL, _real(rated), _real(baseline_games))] + [
        (arm, rated[rated["arm"] == arm], baseline_games[baseline_games["arm"] == arm]) for arm in _modes(frames)]
    points, baselines, trends, per_game = {}, {}, {}, {}
    for mode, ratings, base in groups:
        boot = panel_bootstrap(ratings, base)
        baselines[mode] = baseline_rate(base, boot)
        points[mode] = _win_points(ratings, base, boot)
        trends[mode] = logit_clustered(ratings["won"], ratings[["score"]], ratings["cluster"], "score")
        per_game[mode] = game_level_trend(ratings, "score")
    return {"points": points, "baseline": baselines, "trend": trends, "trend_per_game": per_game,
            "unit": "a helpfulness rating of a round with explanations; the outcome is its game's",
            "baseline_definition": "the same arms' games without explanations",
            "interval": INTERVAL, "test_vs_baseline": TEST_VS_BASELINE,
            "test_vs_baseline_naive": TEST_VS_BASELINE_NAIVE, "trend_test": TREND}


def difficulty_by_rating(frames: Frames) -> dict:
    return per_kind(frames, _difficulty_by_rating)


def _difficulty_by_rating(frames: Frames) -> dict:
    rated = _rated(frames)
    won_lost = won_vs_lost(frames)
    if rated.empty or rated["difficulty"].isna().all():
        return {"missing": "no helpfulness ratings of rounds with explanations, or no set difficulty "
                           "(games.difficulty)", "won_vs_lost": won_lost}
    points, correlations, trends = {}, {}, {}
    for mode in [OVERALL] + _modes(frames):
        ratings = _real(rated) if mode == OVERALL else rated[rated["arm"] == mode]
        ratings = ratings[ratings["difficulty"].notna()]
        boot = panel_bootstrap(ratings)
        by_rank = dict(tuple(ratings.groupby("rank")["difficulty"]))
        intervals = boot.means(ratings["difficulty"], ratings["cluster"], ratings["rank"], len(RATINGS))
        points[mode] = []
        for rank, label in enumerate(RATINGS):
            t = mean_ci(by_rank.get(float(rank), pd.Series(dtype=float)))
            points[mode].append({"rating": label, "score": len(RATINGS) - rank, "n": t["n"],
                                 "mean_difficulty": t["mean"], "ci": union(t["ci"], intervals[rank]["ci"]),
                                 "ci_t": t["ci"], "ci_bootstrap": intervals[rank]["ci"],
                                 "n_participants": intervals[rank]["n_participants"]})
        correlations[mode] = correlation(ratings["score"], ratings["difficulty"])
        trend = boot.slope(ratings["score"], ratings["difficulty"], ratings["cluster"])
        trends[mode] = {"slope_per_step": trend["slope"], "ci_bootstrap": trend["ci"],
                        "n_participants": trend["n_participants"], **({"note": trend["note"]} if "note" in trend else {})}
    return {"points": points, "correlation": correlations, "trend": trends, "won_vs_lost": won_lost,
            "difficulty": "mean L2 feature distance from the secret to its distractors: lower = harder",
            "interval": f"{BOOTSTRAP}, widened where needed to contain the t interval "
                        "(ratings as independent); 'ci_t' and 'ci_bootstrap' hold the two",
            "correlation_test": "Spearman's rho, ratings as independent (scipy)",
            "trend_test": "least-squares slope of difficulty per rating step up with its participant-bootstrap 95% "
                          f"interval (an interval without 0 is a trend at 5%; none below {MIN_PARTICIPANTS} "
                          "participants)"}


def _counts(labels: pd.Series, scale: tuple[str, ...]) -> list[dict]:
    counts = labels.value_counts()
    total = int(counts.reindex(list(scale)).fillna(0).sum())
    return [{"rating": label, "rank": rank, "count": int(counts.get(label, 0)),
             "share": int(counts.get(label, 0)) / total if total else None} for rank, label in enumerate(scale)]


def _ranked_counts(ranks: pd.Series, scale: tuple[str, ...]) -> list[dict]:
    return _counts(ranks.dropna().astype(int).map(dict(enumerate(scale))), scale)


def rating_histograms(frames: Frames) -> dict:
    return per_kind(frames, _rating_histograms)


def _rating_histograms(frames: Frames) -> dict:
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
