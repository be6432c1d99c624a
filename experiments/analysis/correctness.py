"""How correct the explanations and answers were, and what that did to the games (docs/research.md §1).

The unit is an item: one explanation of a game's secret image in one round, as the independent raters
see it. Each item has up to two correctness ratings on the 5-point scale: the raters' consensus (the
median of their ratings, an even split taken on the worse side) and the automatic grade against the
ground truth (explainers/grading.py). The report shows both side by side. Items and games repeat within
participants, so every interval and test has the participant as its unit (points.py, bootstrap.py), and a
report over several studies shows each study kind apart (kinds.py).

- by_correctness (Fig. 9): win rate of the items' games by correctness rating, overall (the arms showing
  real explanations; sham arms, a sanity check, are left out) and per explainer, from the raters and from
  the automatic grades; participant-bootstrap intervals; the trend over the scale, one test per panel
  (logistic regression with participant-clustered errors, odds ratio per step toward "Exactly on-point");
  the paper's adjusted baseline: the win rate of the games without explanations restricted to the games
  that have correctness ratings from that source (automatic: graded answers; raters: rated games; where
  the raters rated no game without explanations, as our rating task only rates explanations, the games
  without explanations of the participants whose games they rated), with the overall points' clustered
  tests against it, Holm-corrected; and the two sources' agreement (linearly weighted kappa).
- answer_correctness (Fig. 10): win rate against a game's mean answer correctness (the share of its
  gradable rounds whose answer equals the ground truth, rounds.answer_correct), in quarter bins, for
  games with at least one explanation rated above Indifferent (Exactly or Mostly on-point) vs games
  without explanations. Test: logistic regression won ~ group + mean answer correctness (the paper's
  p = 0.013), naive and participant-clustered (GEE); the group's odds ratio is adjusted for correctness.
  The paper's claim itself is about the games whose answers were mostly wrong (mean answer correctness
  below LOW_CORRECTNESS): "low_correctness" compares the two groups there (stats.compare_rates,
  participant-clustered) and tests the interaction group x low correctness (participant-clustered,
  stats.logit_clustered). The grouping "at least one explanation above Indifferent" was chosen after the
  paper's data were seen: its tests are flagged as post hoc, exploratory.
- correlations: per explainer, explanation correctness (higher = better) with the answer's correctness
  (ANSWER_SCALE, higher = better) over items; Pearson and Spearman with CIs (paper: 0.37 RelQAs,
  0.33 attention, from raters).
- ungraded_rounds: what the automatic grades leave out, by study and arm: the rounds whose question the
  parser could not read (rounds.parsed false: the agent answered from the words it knows and the player was
  told so in the round, game/unread_question.py), those parsed but ill-posed on the secret's scene ("the
  cube" where there are two), and those of an imported pool (no scenes); counts and shares of all rounds.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from game.image_pool import UNGRADED

from .data import NO_RATER_DATA
from .frames import Frames, paper_order, sham
from .kinds import per_kind
from .points import INTERVAL, TEST_VS_BASELINE, TEST_VS_BASELINE_NAIVE, baseline_rate, panel_bootstrap, rate_points, \
    versus_baseline
from .ratings import OVERALL
from .scales import ANSWER_SCALE, EXPLANATION_SCALE
from .stats import (compare_rates, correlation, game_level_trend, gee_logit, logit_clustered, logit_test,
                    weighted_kappa)

SOURCES = {"raters": ("rater_rank", "answer_rater_rank"), "automatic": ("auto_rank", "answer_auto_rank")}
ON_POINT = 1                        # ranks 0 and 1: Exactly and Mostly on-point, "above Indifferent"
BIN_EDGES = (0.0, 0.25, 0.5, 0.75, 1.0)
LOW_CORRECTNESS = 0.5               # "mostly wrong": fewer than half of the game's gradable answers right
PAPER_CORRELATIONS = {"relqa": 0.37, "attention": 0.33}
TREND = ("the participant-clustered test of correctness (steps toward Exactly on-point) in a logistic regression of the "
         "win (stats.logit_clustered; its 'method' says how the p-value is made)")
POST_HOC = ("post hoc: the grouping 'at least one explanation rated above Indifferent' was chosen after the paper's "
            "data were seen, so its tests are exploratory, not confirmatory")


def _real(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of the arms that show real explanations (sham arms, a sanity check, have no part in "overall")."""
    return frame[~frame["arm"].map(sham).astype(bool)] if len(frame) else frame


def _points(items: pd.DataFrame, column: str, boot) -> list[dict]:
    points = rate_points(items, column, len(EXPLANATION_SCALE), boot)
    return [{"rating": label, "rank": rank, **point} for rank, (label, point) in enumerate(zip(EXPLANATION_SCALE, points))]


def _baseline_games(frames: Frames, column: str, graded: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The paper's adjusted baseline for one source: the games without explanations (of arms that show
    them, sham arms left out) that have correctness ratings from that source, and what it is."""
    games = frames.games
    without = games[(games["expl_arm"] == 1) & (games["shows"] == 0) & (games["sham"] != 1)]
    if column == "auto_rank":
        return (without[without["answer_correctness"].notna()],
                "the games without explanations (of the arms that show them) whose answers are graded automatically")
    rated = without[without["game_id"].isin(set(frames.rater["game_id"]))]
    if len(rated):
        return rated, "the games without explanations (of the arms that show them) that the raters rated"
    return (without[without["cluster"].isin(set(graded["cluster"]))],
            "the games without explanations (of the arms that show them) of the participants whose games the raters "
            "rated (the raters rated no game without explanations: the rating task rates explanations)")


NO_AUTOMATIC_GRADES = "no automatic grades of explanations of the secret image (explanations.grade)"


def _why_ungraded(frames: Frames) -> str:
    """Why nothing is graded, when the export says: every round graded `ungraded` is a study played on an
    imported image pool, which has no scenes to check answers and explanations against."""
    grades = frames.rounds["answer_grade"] if "answer_grade" in frames.rounds else pd.Series(dtype=object)
    if len(grades) and (grades == UNGRADED).all():
        return (f"; every round is graded {UNGRADED!r}: the games were played on an imported image pool, which "
                "has no scenes to grade against (raters can still grade explanations: /rate)")
    return ""


def _by_source(frames: Frames, column: str) -> dict:
    items = frames.items
    graded = items[items[column].notna()]
    if graded.empty:
        return {"missing": NO_RATER_DATA if column == "rater_rank" else
                NO_AUTOMATIC_GRADES + _why_ungraded(frames)}
    real = _real(graded)
    explainers = paper_order(graded["explainer"].dropna().unique())
    baseline, definition = _baseline_games(frames, column, real)
    boot = panel_bootstrap(graded, baseline)
    overall = versus_baseline(_points(real, column, boot), real, column, baseline)
    points = {OVERALL: overall, **{x: _points(graded[graded["explainer"] == x], column, boot) for x in explainers}}
    goodness = pd.DataFrame({"goodness": len(EXPLANATION_SCALE) - 1 - real[column]})
    trend = logit_clustered(real["won"], goodness, real["cluster"], "goodness")
    per_game = game_level_trend(real.assign(goodness=goodness["goodness"].to_numpy()), "goodness")
    return {"points": points, "n_items": int(len(graded)), "trend": trend, "trend_per_game": per_game,
            "baseline": baseline_rate(baseline, boot),
            "baseline_definition": definition}


def by_correctness(frames: Frames) -> dict:
    return per_kind(frames, _by_correctness)


def _by_correctness(frames: Frames) -> dict:
    items = frames.items
    both = items[items["rater_rank"].notna() & items["auto_rank"].notna()]
    agreement = weighted_kappa(both["rater_rank"], both["auto_rank"], len(EXPLANATION_SCALE)) \
        if not both.empty else {"missing": NO_RATER_DATA if items["rater_rank"].isna().all()
                                else "no item has both a rater consensus and an automatic grade"}
    return {"raters": _by_source(frames, "rater_rank"), "automatic": _by_source(frames, "auto_rank"),
            "agreement": agreement,
            "unit": "an explanation of the secret image in one round (raters: the median of their ratings)",
            "interval": INTERVAL, "trend_test": TREND, "test_vs_baseline": f"overall points only: {TEST_VS_BASELINE}",
            "test_vs_baseline_naive": TEST_VS_BASELINE_NAIVE}


def _bins() -> list[dict]:
    return [{"bin": f"{lo:.2f}-{hi:.2f}", "lo": lo, "hi": hi} for lo, hi in zip(BIN_EDGES[:-1], BIN_EDGES[1:])]


def _bin_points(games: pd.DataFrame, boot) -> list[dict]:
    """Win rate per quarter of mean answer correctness (1.0 falls in the last bin)."""
    n_bins = len(BIN_EDGES) - 1
    binned = games.assign(_bin=np.minimum(np.floor(games["answer_correctness"] * n_bins), n_bins - 1))
    return [{**b, **point} for b, point in zip(_bins(), rate_points(binned, "_bin", n_bins, boot, n_key="n_games"))]


def _low_correctness(both: pd.DataFrame) -> dict:
    """The paper's claim: among games whose answers were mostly wrong, the explained-on-point games win more
    often than the games without explanations; and the interaction group x low correctness."""
    low = (both["answer_correctness"] < LOW_CORRECTNESS).astype(float)
    mostly_wrong = both[low == 1]
    compared = compare_rates(mostly_wrong["won"], mostly_wrong["group"], mostly_wrong["cluster"])
    groups = {name: mostly_wrong[mostly_wrong["group"] == g] for name, g in
              (("explained_on_point", 1.0), ("without_explanations", 0.0))}
    boot = panel_bootstrap(mostly_wrong)
    exog = pd.DataFrame({"group": both["group"], "low_correctness": low, "group_x_low_correctness": both["group"] * low})
    interaction = logit_clustered(both["won"], exog, both["cluster"], "group_x_low_correctness")
    return {"threshold": LOW_CORRECTNESS,
            "definition": f"games whose mean answer correctness is below {LOW_CORRECTNESS:.2f} (answers mostly wrong)",
            **{name: baseline_rate(g, boot) for name, g in groups.items()}, **compared,
            "interaction": {**interaction, "model": "won ~ group + low correctness + group x low correctness",
                            "term": "group_x_low_correctness"},
            "exploratory": True, "post_hoc": POST_HOC}


def _answer_correctness_for(frames: Frames, column: str) -> dict:
    items, games = frames.items, frames.games
    on_point = set(items.loc[items[column] <= ON_POINT, "game_id"])
    scored = games[games["answer_correctness"].notna()]
    explained = scored[scored["game_id"].isin(on_point)]
    without = scored[scored["used"] == 0]
    if explained.empty and items[column].isna().all():
        return {"missing": NO_RATER_DATA if column == "rater_rank" else
                NO_AUTOMATIC_GRADES + _why_ungraded(frames)}
    both = pd.concat([explained.assign(group=1.0), without.assign(group=0.0)])
    exog = both[["group", "answer_correctness"]]
    naive = logit_test(both["won"], exog, "group")
    clustered = gee_logit(both["won"], exog, both["cluster"], "group")
    boot = panel_bootstrap(both)
    return {"points": {"explained_on_point": _bin_points(explained, boot),
                       "without_explanations": _bin_points(without, boot)},
            "n_games": {"explained_on_point": int(len(explained)), "without_explanations": int(len(without))},
            "p_value": naive["p_value"], "odds_ratio": naive["odds_ratio"], "odds_ratio_ci": naive["odds_ratio_ci"],
            "test": "logistic regression won ~ group + mean answer correctness (statsmodels Logit), games as "
                    "independent",
            "p_value_clustered": clustered["p_value"], "odds_ratio_clustered": clustered["odds_ratio"],
            "odds_ratio_clustered_ci": clustered["odds_ratio_ci"], "test_clustered": clustered["method"],
            "low_correctness": _low_correctness(both), "exploratory": True, "post_hoc": POST_HOC,
            **({"note": "; ".join(n for n in (naive.get("note"), clustered.get("note")) if n)}
               if naive.get("note") or clustered.get("note") else {})}


def answer_correctness(frames: Frames) -> dict:
    return per_kind(frames, _answer_correctness)


def _answer_correctness(frames: Frames) -> dict:
    if frames.games["answer_correctness"].isna().all():
        return {"missing": "no graded answers (rounds.answer_correct): a game's mean answer correctness is unknown"
                + _why_ungraded(frames)}
    return {"bins": _bins(), "automatic": _answer_correctness_for(frames, "auto_rank"),
            "raters": _answer_correctness_for(frames, "rater_rank"),
            "answer_measure": "the share of the game's gradable rounds whose answer equals the ground truth "
                              "(rounds.answer_correct)",
            "groups": {"explained_on_point": "games with at least one explanation of the secret image rated "
                                             "Exactly or Mostly on-point (above Indifferent), by the source",
                       "without_explanations": "games without explanations"},
            "low_correctness": f"the paper's claim: games whose answers were mostly wrong (mean answer correctness "
                               f"below {LOW_CORRECTNESS:.2f}); the two groups compared there (participant-clustered "
                               "test, stats.compare_rates) and the interaction group x low correctness (participant-"
                               "clustered test of stats.logit_clustered)",
            "interval": INTERVAL, "post_hoc": POST_HOC}


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


UNGRADED_DEFINITION = (
    "rounds of finished games whose answer has no automatic grade, out of all of them: not_parsed, the question was "
    "outside the parser's language (rounds.parsed false; the agent answered from the words it knows and the player "
    "was told so in the round); ill_posed, parsed but with no single answer on the secret's scene (answer_grade "
    "'ungradable'); no_ground_truth, played on an imported pool, which has no scenes (answer_grade 'ungraded'); "
    "ungraded counts all three and any round without a grade. Answer correctness (Fig. 10) and the automatic grades "
    "are over the graded rounds only")


def _ungraded_cell(rounds: pd.DataFrame) -> dict:
    grade = rounds["answer_grade"] if "answer_grade" in rounds else pd.Series(np.nan, index=rounds.index)
    parsed = rounds["parsed"] if "parsed" in rounds else pd.Series(np.nan, index=rounds.index)
    n = int(len(rounds))
    imported = grade == UNGRADED
    counts = {"rounds": n, "graded": int(grade.isin(ANSWER_SCALE).sum()),
              "not_parsed": int(((parsed == 0.0) & ~imported).sum()),
              "ill_posed": int(((parsed == 1.0) & (grade == "ungradable")).sum()),
              "no_ground_truth": int(imported.sum())}
    counts["ungraded"] = n - counts["graded"]
    for key in ("ungraded", "not_parsed"):
        counts[f"share_{key}"] = counts[key] / n if n else None
    return counts


def ungraded_rounds(frames: Frames) -> dict:
    """The rounds the automatic grades leave out (module doc), overall and by study and arm."""
    rounds = frames.rounds
    studies = {str(study): {"overall": _ungraded_cell(mine),
                            "arms": {str(arm): _ungraded_cell(of_arm) for arm, of_arm in mine.groupby("arm", sort=True)}}
               for study, mine in rounds.groupby("study", sort=True)}
    return {"overall": _ungraded_cell(rounds), "studies": studies, "definition": UNGRADED_DEFINITION}


def not_parsed_note(ungraded: dict) -> str | None:
    """The report's note when some rounds' questions were outside the parser's language."""
    overall = ungraded.get("overall") or {}
    if not overall.get("not_parsed"):
        return None
    return (f"{overall['not_parsed']} of {overall['rounds']} rounds ({100 * overall['share_not_parsed']:.1f}%) asked a "
            "question the parser could not read (rounds.parsed false): their answers are ungraded and left out of answer "
            "correctness and the automatic grades (ungraded_rounds has them by study and arm)")
