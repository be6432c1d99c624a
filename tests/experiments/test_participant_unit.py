"""Figs. 6-10 with the participant as the unit (issue 27), on event logs made here through the real export:
the participant bootstrap (exact against a plain loop, seeded), intervals that widen to it when participants
differ, Holm-corrected per-point tests, the paper's missing analyses (difficulty of won vs lost games, Fig. 9's
adjusted baseline, Fig. 10's claim about games whose answers were mostly wrong) and one row per study kind."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint
from test_analysis import Log

from experiments.analysis import analyze
from experiments.analysis.bootstrap import MIN_PARTICIPANTS, REPLICATES, ParticipantBootstrap, union
from experiments.analysis.figures import DRAW, caption
from experiments.analysis.frames import build_frames
from experiments.analysis.html import render_html
from experiments.analysis.kinds import SECTIONS, from_studies
from experiments.analysis.multiplicity import holm
from experiments.analysis.scales import EXPLANATION_SCALE, RATINGS
from experiments.analysis.write import table_rows


def width(ci) -> float:
    return ci[1] - ci[0]


# --- the bootstrap itself -----------------------------------------------------------------------------

def test_the_vectorised_bootstrap_is_a_plain_loop_over_its_resamples_and_is_seeded():
    rng = np.random.default_rng(5)
    rows = pd.DataFrame({"cluster": rng.choice([f"p{i}" for i in range(9)], 200),
                         "group": rng.integers(0, 3, 200).astype(float), "value": rng.random(200)})
    boot = ParticipantBootstrap(rows["cluster"])
    assert boot.counts.shape == (REPLICATES, 9) and (boot.counts.sum(axis=1) == 9).all()
    intervals = boot.means(rows["value"], rows["cluster"], rows["group"], 3)
    few_draws = ParticipantBootstrap(rows["cluster"], replicates=300)
    by_participant = {label: rows.loc[rows["cluster"] == label, ["group", "value"]].to_numpy()
                      for label in few_draws.labels}
    replicate_means = []                   # each replicate: its participants' rows, one copy per draw
    for counts in few_draws.counts:
        taken = np.concatenate([by_participant[label] for label, c in zip(few_draws.labels, counts)
                                for _ in range(int(c))])
        replicate_means.append([taken[taken[:, 0] == g, 1].mean() for g in range(3)])
    expected = np.percentile(np.array(replicate_means), [2.5, 97.5], axis=0)
    for g, interval in enumerate(few_draws.means(rows["value"], rows["cluster"], rows["group"], 3)):
        assert interval["ci"] == pytest.approx(list(expected[:, g]), rel=1e-12)
        assert interval["n_participants"] == rows.loc[rows["group"] == g, "cluster"].nunique()
    shuffled = rows.sample(frac=1.0, random_state=1)              # same data, another row order: same draws
    again = ParticipantBootstrap(shuffled["cluster"]).means(shuffled["value"], shuffled["cluster"], shuffled["group"], 3)
    for mine, other in zip(intervals, again):                     # equal up to the order of summation
        assert other["ci"] == pytest.approx(mine["ci"], rel=1e-12) and other["n_participants"] == mine["n_participants"]

    x, y = rows["group"], 2.0 * rows["group"] + rows["value"]
    slope = boot.slope(x, y, rows["cluster"])
    assert slope["slope"] == pytest.approx(np.polyfit(x, y, 1)[0])
    assert slope["ci"][0] < slope["slope"] < slope["ci"][1]

    few = ParticipantBootstrap(["a", "b"]).means([1.0, 0.0], ["a", "b"], [0, 0], 1)[0]
    assert few["ci"] is None and few["n_participants"] == 2 < MIN_PARTICIPANTS and "too few" in few["note"]
    assert union([0.2, 0.5], None, [0.3, 0.6]) == [0.2, 0.6] and union(None, [None, None]) is None


def test_holm_is_statsmodels_over_the_tests_that_were_made():
    p = [0.01, None, 0.04, 0.03, float("nan")]
    expected = multipletests([0.01, 0.04, 0.03], method="holm")[1]
    assert holm(p) == [pytest.approx(expected[0]), None, pytest.approx(expected[1]), pytest.approx(expected[2]), None]


# --- Fig. 7: intervals and tests with the participant as the unit -------------------------------------

def skill_log(win_share: dict[str, float], games: int = 20, rated_rounds: int = 4) -> Log:
    """Controlled participants of the attention arm, each winning their own share of every block's games
    (in a rotating order), every round rated Helping a lot; plus a control arm that wins half."""
    log = Log()
    for participant, share in win_share.items():
        for number in range(games):
            shows = (number // 5) % 2 == 1
            won = (number * 7 + len(participant)) % 10 < round(10 * share)
            log.game("skill", participant, "attention", number, won=won, with_explanations=shows,
                     rounds=[{"explained": shows, "rating": RATINGS[0]}] * rated_rounds)
    return log


def test_intervals_widen_to_the_participant_bootstrap_when_participants_differ():
    strong_and_weak = {f"s{i}": 0.9 for i in range(6)} | {f"w{i}": 0.1 for i in range(6)}
    section = analyze(skill_log(strong_and_weak).tables())["by_helpfulness"]
    point = section["points"]["overall"][0]                       # Helping a lot: every rating
    assert point["n"] == 12 * 10 * 4 and point["n_participants"] == 12 and point["win_rate"] == pytest.approx(0.5)
    assert point["ci_wilson"] == pytest.approx(list(proportion_confint(240, 480, method="wilson")))
    assert point["ci"] == point["ci_bootstrap"]                    # the drawn interval is the bootstrap's ...
    assert width(point["ci"]) > 3 * width(point["ci_wilson"])      # ... several times Wilson's (480 "independent" ratings)
    assert point["ci"][0] < 0.3 and point["ci"][1] > 0.7           # 6 strong and 6 weak players: anything between
    baseline = section["baseline"]["overall"]                       # the odd blocks' games: the same participants
    assert baseline["n_games"] == 120 and width(baseline["ci"]) > 1.5 * width(baseline["ci_wilson"])

    alike = analyze(skill_log({f"p{i:02d}": 0.5 for i in range(12)}).tables())["by_helpfulness"]["points"]["overall"][0]
    assert alike["ci"] == alike["ci_wilson"]                        # no spread between participants: never narrower
    assert width(alike["ci_bootstrap"]) < width(alike["ci_wilson"])  # than Wilson's, though the bootstrap is


def test_each_panel_has_one_clustered_trend_and_holm_corrected_point_tests():
    rng = np.random.default_rng(2)
    log = Log()
    for p in range(10):
        for number in range(20):
            shows = (number // 5) % 2 == 1
            rating = int(rng.integers(0, 5))
            won = bool(rng.random() < (0.8 - 0.12 * rating if shows else 0.5))
            log.game("t", f"p{p}", "relqa", number, won=won, with_explanations=shows,
                     rounds=[{"explained": shows, "rating": RATINGS[rating]}])
    section = analyze(log.tables())["by_helpfulness"]
    assert set(section["points"]) == {"overall", "relqa"}
    assert "Holm" in section["test_vs_baseline"] and "bootstrap" in section["interval"]
    for mode, points in section["points"].items():
        trend = section["trend"][mode]
        assert trend["p_value"] is not None and trend["odds_ratio"] > 1 and trend["n_clusters"] == 10
        clustered = [p["p_value_vs_baseline_clustered"] for p in points]
        assert all(c is not None for c in clustered)
        assert [p["p_value_vs_baseline_holm"] for p in points] == pytest.approx(
            list(multipletests(clustered, method="holm")[1]))
        assert all(p["p_value_vs_baseline_holm"] >= p["p_value_vs_baseline_clustered"] for p in points)
        assert all(p["baseline_win_rate"] == section["baseline"][mode]["win_rate"] for p in points)


# --- Fig. 8: the paper's difficulty analysis ----------------------------------------------------------

DIFFICULTY = {(True, True): 0.30, (True, False): 0.70, (False, True): 0.60, (False, False): 0.40}  # (shows, won)


def test_difficulty_of_won_and_lost_games_with_and_without_explanations():
    rng = np.random.default_rng(8)
    log, made = Log(), []
    for p in range(8):
        for number in range(20):
            shows = (number // 5) % 2 == 1
            won = (number + p) % 2 == 0
            difficulty = DIFFICULTY[(shows, won)] + float(rng.normal(0, 0.15))
            made.append({"shows": shows, "won": won, "difficulty": difficulty})
            log.game("d", f"p{p}", "attention", number, won=won, with_explanations=shows, difficulty=difficulty,
                     rounds=[{"explained": shows, "rating": RATINGS[1]}])
    made = pd.DataFrame(made)
    expected = made.groupby(["shows", "won"])["difficulty"].mean()
    data = analyze(log.tables())["difficulty_by_rating"]["won_vs_lost"]
    for (shows, won) in DIFFICULTY:
        cell = data["cells"]["with_explanations" if shows else "without_explanations"]["won" if won else "lost"]
        assert cell["n_games"] == 8 * 5 and cell["n_participants"] == 8
        assert cell["mean_difficulty"] == pytest.approx(expected[(shows, won)])
        assert cell["ci"][0] < cell["mean_difficulty"] < cell["ci"][1]
        assert cell["ci"] == union(cell["ci_t"], cell["ci_bootstrap"])
    differences = data["differences"]
    assert differences["won_minus_lost_with_explanations"]["difference"] == \
        pytest.approx(expected[(True, True)] - expected[(True, False)])
    assert differences["won_minus_lost_without_explanations"]["difference"] == \
        pytest.approx(expected[(False, True)] - expected[(False, False)])
    assert differences["with_minus_without_won"]["difference"] == \
        pytest.approx(expected[(True, True)] - expected[(False, True)])
    assert differences["with_minus_without_lost"]["difference"] == \
        pytest.approx(expected[(True, False)] - expected[(False, False)])
    assert differences["won_minus_lost_with_explanations"]["p_value"] < 0.02      # 8 participants: >= 1/128
    assert differences["won_minus_lost_with_explanations"]["n_clusters"] == 8
    interaction = data["interaction"]                              # harder sets are won with explanations:
    assert interaction["odds_ratio"] < 1 and interaction["n_clusters"] == 8      # difficulty's sign flips


# --- Fig. 9: the paper's adjusted baseline ------------------------------------------------------------

def test_fig9_baseline_is_the_games_without_explanations_that_have_correctness_ratings():
    log = Log()
    for p in range(8):
        for number in range(20):
            shows = (number // 5) % 2 == 1
            won = (number + p) % 3 != 0
            if not shows and number % 5 == 4:                      # a no-explanation game without questions:
                log.game("c", f"p{p}", "attention", number, won=True, rounds=[])   # no graded answer
                continue
            grade = EXPLANATION_SCALE[0 if won else 4]
            rounds = [{"explained": shows, "rating": RATINGS[1], "explanations": [("attention", grade)] if shows else []}]
            game = log.game("c", f"p{p}", "attention", number, won=won, with_explanations=shows, rounds=rounds)
            if shows and p < 3:                                    # the raters rate the games of p0-p2 only
                for rater in ("r1", "r2", "r3"):
                    log.rate(game, 0, "attention", rater, grade, "correct")
    tables = log.tables()
    report = analyze(tables)
    games = report["n"]["games"]
    assert games == 160
    automatic = report["by_correctness"]["automatic"]
    graded_wins = [(n + p) % 3 != 0 for p in range(8) for n in range(20) if (n // 5) % 2 == 0 and n % 5 != 4]
    assert automatic["baseline"]["n_games"] == len(graded_wins) == 8 * 8
    assert automatic["baseline"]["win_rate"] == pytest.approx(np.mean(graded_wins))     # the question-less
    assert "graded" in automatic["baseline_definition"]                                # wins are left out
    raters = report["by_correctness"]["raters"]            # no game without explanations was rated: those of p0-p2
    rated_wins = [(n + p) % 3 != 0 if n % 5 != 4 else True for p in range(3) for n in range(20) if (n // 5) % 2 == 0]
    assert raters["baseline"]["n_games"] == 3 * 10 and raters["baseline"]["win_rate"] == pytest.approx(np.mean(rated_wins))
    assert "participants whose games the raters rated" in raters["baseline_definition"]
    on_point, wrong = automatic["points"]["overall"][0], automatic["points"]["overall"][4]
    assert on_point["win_rate"] == 1.0 and wrong["win_rate"] == 0.0
    assert on_point["baseline_win_rate"] == automatic["baseline"]["win_rate"]
    assert "p_value_vs_baseline_holm" in on_point and "p_value_vs_baseline_holm" not in automatic["points"]["attention"][0]
    assert "adjusted baseline" in caption("fig9_win_by_correctness", report)


# --- Fig. 10: games whose answers were mostly wrong ----------------------------------------------------

def fig10_wins(shows: bool, low: bool, p: int) -> int:
    """Wins of a participant's 5 games in a cell: with an on-point explanation and answers mostly wrong 4 or 5
    (0.9 over participants), without explanations 1 or 0 (0.1); with answers mostly right 3 either way."""
    if low:
        return 4 + p % 2 if shows else 1 - p % 2
    return 3


def fig10_log(participants: int = 10) -> Log:
    log = Log()
    for p in range(participants):
        for number in range(20):
            shows = (number // 5) % 2 == 1
            low = number < 10                                      # blocks 1 and 2: answers mostly wrong
            won = (number + p) % 5 < fig10_wins(shows, low, p)     # a block's 5 games: a cell
            rounds = [{"explained": shows, "rating": RATINGS[1], "correct": not low,
                       "explanations": [("attention", EXPLANATION_SCALE[0])] if shows else []}] * 2
            log.game("f", f"p{p}", "attention", number, won=won, with_explanations=shows, rounds=rounds)
    return log


def test_fig10_tests_the_papers_claim_in_the_games_whose_answers_were_mostly_wrong():
    fig10 = analyze(fig10_log().tables())["answer_correctness"]
    low = fig10["automatic"]["low_correctness"]
    assert low["threshold"] == 0.5 and "mostly wrong" in low["definition"]
    assert low["explained_on_point"]["n_games"] == low["without_explanations"]["n_games"] == 10 * 5
    assert low["explained_on_point"]["win_rate"] == pytest.approx(0.9)
    assert low["without_explanations"]["win_rate"] == pytest.approx(0.1)
    assert low["difference"] == pytest.approx(0.8) and low["odds_ratio"] > 1
    assert low["p_value_clustered"] is not None and low["p_value_clustered"] < 0.05
    assert low["n_participants"] == 10
    interaction = low["interaction"]
    assert interaction["term"] == "group_x_low_correctness" and interaction["odds_ratio"] > 1
    assert interaction["p_value"] is not None and interaction["n_clusters"] == 10
    assert low["exploratory"] is True and "post hoc" in low["post_hoc"]
    assert fig10["automatic"]["exploratory"] is True and "post hoc" in fig10["post_hoc"]
    bins = fig10["automatic"]["points"]["explained_on_point"]
    assert [b["n_games"] for b in bins] == [50, 0, 0, 50] and bins[0]["ci_bootstrap"] is not None
    rows = table_rows({"answer_correctness": fig10}, "answer_correctness_low")
    assert {r["group"] for r in rows} >= {"explained_on_point", "without_explanations",
                                          "interaction group x low correctness"}


# --- Figs. 6-10: one study kind at a time ------------------------------------------------------------

def test_figures_6_to_10_never_pool_at_will_with_controlled_games():
    log = fig10_log(6)
    for p in range(6):                                             # an at-will study beside the controlled one
        for number in range(10):
            used = number % 2 == 0
            rounds = [{"explained": used, "rating": RATINGS[0], "correct": number % 4 < 2,
                       "explanations": [("attention", EXPLANATION_SCALE[1])] if used else []}]
            log.game("aw", f"a{p}", "both", number, won=(number + p) % 3 == 0, setting="at-will",
                     with_explanations=True, session=0, rounds=rounds)
    tables = log.tables()
    report = analyze(tables)
    frames, _ = build_frames(tables)
    for name in SECTIONS:
        by_kind = report[name]["by_kind"]
        assert list(by_kind) == ["controlled", "at-will"], name
        assert by_kind["controlled"] == report["studies"]["f"][name], name        # each kind alone, as its study
        assert by_kind["at-will"] == report["studies"]["aw"][name], name
        assert "never pooled" in report[name]["note"]
        assert from_studies(frames, report["studies"], name) == report[name]      # what the report can reuse
    assert "points" not in report["by_helpfulness"]
    for draw in DRAW.values():                                    # a row of panels per kind
        draw(report)
    assert "separate rows, never pooled" in caption("fig7_win_by_helpfulness", report)
    rows = table_rows(report, "by_helpfulness")
    assert {r.get("kind") for r in rows if r["study"] == "all"} == {"controlled", "at-will"}
    page = render_html(report, [])
    assert "Controlled studies" in page and "At-will studies" in page and "won vs lost" in page
