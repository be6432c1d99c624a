"""exag analyze: tables built here to known answers, through the real export (game/export.py), the
real loaders (CSV, Parquet, JSONL, a server data directory's embedded Redis) and the report."""
from __future__ import annotations

import dataclasses

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportions_ztest

from experiments.analysis import AnalysisError, Tables, analyze, load_tables
from experiments.analysis.data import COLUMNS
from experiments.analysis.scales import ANSWER_SCALE, EXPLANATION_SCALE, RATINGS
from game.export import tables as export_tables

REPO = Path(__file__).resolve().parents[2]

SERVER_KEY = b"test-server-key"       # the key a test "server" signs its exports with (game/export_signature.py server_key)


class Log:
    """Builds a study's event log the way the server writes it, game by game."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.time = 1_000.0
        self.joined: set[tuple[str, str]] = set()

    def _add(self, event_type: str, **fields) -> None:
        self.time += 1.0
        self.events.append({"type": event_type, "time": self.time, **fields})

    def game(self, study: str, participant: str, arm: str, number: int, *, won: bool, score: int | None = None,
             session: int | None = None, setting: str = "controlled", with_explanations: bool = False,
             rounds: list[dict] | None = None, difficulty: float = 0.5, seconds: float = 60.0) -> str:
        """rounds: [{"explained", "rating", "correct", "answer_grade", "explanations": [(explainer, grade)]}]."""
        if (study, participant) not in self.joined:
            self.joined.add((study, participant))
            self._add("join", study=study, participant=participant, arm=arm)
        game = f"{study}-{participant}-{number}"
        keys = {"study": study, "participant": participant, "game": game, "arm": arm, "game_number": number}
        self._add("game_start", **keys, session=number // 5 if session is None else session, setting=setting,
                  with_explanations=with_explanations, modes=[], difficulty=difficulty, images=[10, 11, 12, 13, 14],
                  secret=0)
        rounds = [{"explained": with_explanations, "rating": RATINGS[1]}] if rounds is None else rounds
        for i, r in enumerate(rounds):
            correct = r.get("correct", True)
            shown = [{"explainer": x, "kind": "attention", "position": 0, "is_secret": True, "for_the_secret": False,
                      "grade": grade, "payload": {}} for x, grade in r.get("explanations", [])]
            self._add("question", **keys, round=i, question="is there a red cube?", answer="yes" if correct else "no",
                      truth="yes", answer_grade=r.get("answer_grade", ANSWER_SCALE[0 if correct else 2]),
                      explained=r["explained"], cost=1, points=10 - i - 1, explanations=shown)
            self._add("rating", **keys, round=i, rating=r["rating"], explained=r["explained"])
        points = 10 - len(rounds)
        self._add("guess", **keys, guess=0 if won else 1, secret=0, right=won,
                  score=(points if won else 0) if score is None else score, won=won, questions=len(rounds),
                  spent=len(rounds), seconds=seconds)
        return game

    def rate(self, game: str, round_: int, explainer: str, rater: str, explanation: str, answer: str) -> None:
        self._add("rater_rating", game=game, round=round_, explainer=explainer, rater=rater, item=f"{game}:{round_}",
                  kind="attention", explanation_rating=explanation, answer_rating=answer)

    def tables(self) -> Tables:
        """The tables as a server's export holds them: signed with its key (SERVER_KEY, which they carry)."""
        return dataclasses.replace(Tables.from_frames(export_tables(self.events, SERVER_KEY), "test log"),
                                   server_key=SERVER_KEY)


# --- controlled: Table 1 ------------------------------------------------------------------------------

WINS_PER_BLOCK = {"attention": (3, 4, 3, 5), "relqa": (2, 4, 3, 4), "both": (3, 3, 2, 5), "none": (2, 3, 3, 3)}
PARTICIPANTS_PER_ARM = 6
WIN_SCORE = 7


def controlled_log(study: str = "ctl") -> Log:
    """Every participant of an arm wins the same number of its block's 5 games (WINS_PER_BLOCK)."""
    log = Log()
    for arm, wins in WINS_PER_BLOCK.items():
        for p in range(PARTICIPANTS_PER_ARM):
            for number in range(20):
                block, place = number // 5 + 1, number % 5
                shows = arm != "none" and block % 2 == 0
                won = (place + p) % 5 < wins[block - 1]          # the wins rotate within the block
                rounds = [{"explained": shows, "rating": RATINGS[0 if won else 3]} for _ in range(3)]
                log.game(study, f"{arm}-{p}", arm, number, won=won, score=WIN_SCORE if won else 0,
                         with_explanations=shows, rounds=rounds)
    return log


def test_controlled_table1_has_the_papers_layout_and_the_right_cells():
    report = analyze(controlled_log().tables())
    rows = {r["mode"]: r for r in report["controlled"]["table1"]}
    assert list(rows) == ["attention", "relqa", "both", "overall", "overall_inc_none"]

    def expected(arms, blocks) -> tuple[float, int]:
        wins = sum(WINS_PER_BLOCK[a][b - 1] for a in arms for b in blocks)
        return wins / (5 * len(arms) * len(blocks)), 5 * len(arms) * len(blocks) * PARTICIPANTS_PER_ARM

    explanation_arms = ["attention", "relqa", "both"]
    for mode, arms in [*((a, [a]) for a in explanation_arms), ("overall", explanation_arms),
                       ("overall_inc_none", [*explanation_arms, "none"])]:
        row = rows[mode]
        for cell, blocks, cell_arms in (("with_expl", (2, 4), [a for a in arms if a != "none"]),
                                        ("no_expl", (1, 3), arms), ("group_baseline", (1,), arms)):
            win_rate, n = expected(cell_arms, blocks)
            assert row[cell]["n_games"] == n, (mode, cell)
            assert row[cell]["win_rate"] == pytest.approx(win_rate), (mode, cell)
            assert row[cell]["score"] == pytest.approx(WIN_SCORE * win_rate), (mode, cell)
            lo, hi = row[cell]["ci"]
            assert lo < win_rate < hi
        for key in ("win_rate", "score"):
            assert row["improvement"][key] == pytest.approx(row["with_expl"][key] - row["no_expl"][key])
        counts = [(round(row[c]["win_rate"] * row[c]["n_games"]), row[c]["n_games"]) for c in ("with_expl", "no_expl")]
        naive = proportions_ztest([w for w, _ in counts], [n for _, n in counts])[1]
        assert row["p_value"] == pytest.approx(naive)
        # the participants of an arm play identical games, so where every participant shows the same
        # difference the clustered standard error is zero and no clustered test is made (it was rounding
        # noise before); elsewhere a p-value
        p = row["p_value_clustered"]
        assert (0 <= p <= 1) if p is not None else "standard error is zero" in row["note"], (mode, row.get("note"))
        assert row["improvement"]["odds_ratio"] > 1
    assert rows["attention"]["with_expl"]["win_rate"] == pytest.approx(0.9)
    within = rows["attention"]["improvement_within_participants"]       # every participant: 9/10 - 6/10
    assert within["n_participants"] == PARTICIPANTS_PER_ARM and within["win_rate"] == pytest.approx(0.3)
    assert rows["overall_inc_none"]["improvement_within_participants"]["n_participants"] == 3 * PARTICIPANTS_PER_ARM
    assert rows["relqa"]["group_baseline"]["win_rate"] == pytest.approx(0.4)
    assert rows["overall_inc_none"]["no_expl"]["win_rate"] == pytest.approx(21 / 40)
    assert report["controlled"]["blocks"] == [1, 2, 3, 4]
    assert report["controlled"]["control_group"]["arms"] == ["none"]
    assert report["n"]["games"] == 480 and report["n"]["participants"] == 24
    assert report["n"]["arms"]["relqa"] == {"games": 120, "participants": 6, "rounds": 360}
    assert report["studies"]["ctl"]["controlled"]["table1"] == report["controlled"]["table1"]
    # a log without orders is read as abab: explanations always in the later block of a pair, said plainly
    assert report["controlled"]["order"]["confounded"] and report["controlled"]["order"]["participants_by_order"] == \
        {"abab": 3 * PARTICIPANTS_PER_ARM, "baba": 0}
    assert report["design"]["balance"]["ctl"]["n_participants"] == 4 * PARTICIPANTS_PER_ARM
    json.dumps(report, allow_nan=False)


# --- at-will: the paper's counts ----------------------------------------------------------------------

def at_will_log(groups: list[tuple[int, int, bool]], games_per_participant: int = 5, study: str = "aw") -> Log:
    """groups: (games, wins, used explanations); games are dealt to participants in turn."""
    log, number = Log(), 0
    for games, wins, used in groups:
        for i in range(games):
            participant = f"p{number % 41}"
            rounds = [{"explained": used, "rating": RATINGS[2]}, {"explained": False, "rating": RATINGS[2]}]
            log.game(study, participant, "both", number, won=i < wins, setting="at-will", with_explanations=True,
                     session=0, rounds=rounds)
            number += 1
    return log


def test_at_will_p_value_equals_statsmodels_z_test_on_the_papers_counts():
    report = analyze(at_will_log([(157, 74, True), (49, 14, False)]).tables())
    used = report["at_will"]["explanations_used"]
    assert used["with"]["n_games"] == 157 and used["without"]["n_games"] == 49
    assert used["with"]["win_rate"] == pytest.approx(74 / 157) and round(used["with"]["win_rate"], 2) == 0.47
    assert used["without"]["win_rate"] == pytest.approx(14 / 49)            # the paper's 28%
    assert used["p_value"] == pytest.approx(proportions_ztest([74, 14], [157, 49])[1], rel=1e-12)
    assert 0.015 < used["p_value"] < 0.025
    assert used["p_value_clustered"] is not None
    assert used["odds_ratio"] > 1 and used["difference"] == pytest.approx(74 / 157 - 14 / 49)


def test_adoption_halves_of_the_paper_give_p_below_1e_5():
    log = Log()
    for p in range(103):                                 # two games each: the first half is every first game
        for play, used in ((0, p < 63), (1, p < 94)):
            log.game("aw", f"p{p}", "both", play, won=bool(p % 2), setting="at-will", with_explanations=True,
                     session=0, rounds=[{"explained": used, "rating": RATINGS[1]}])
    adoption = analyze(log.tables())["at_will"]["adoption"]
    assert adoption["first_half"]["n_games"] == adoption["second_half"]["n_games"] == 103
    assert adoption["first_half"]["share"] == pytest.approx(0.612, abs=1e-3)
    assert adoption["second_half"]["share"] == pytest.approx(0.913, abs=1e-3)
    assert adoption["p_value"] == pytest.approx(proportions_ztest([94, 63], [103, 103])[1])
    assert adoption["p_value"] < 1e-5
    assert [p["play"] for p in adoption["by_play"]] == [1, 2]


def test_clustered_p_value_is_larger_when_all_of_a_participants_games_agree():
    log = Log()
    outcomes = {True: [True] * 4 + [False] * 2, False: [True] * 2 + [False] * 4}   # per participant, all 10 games
    for used, wins in outcomes.items():
        for p, won in enumerate(wins):
            for number in range(10):
                log.game("aw", f"{'u' if used else 'n'}{p}", "both", number, won=won, setting="at-will",
                         with_explanations=True, session=0, rounds=[{"explained": used, "rating": RATINGS[1]}])
    used = analyze(log.tables())["at_will"]["explanations_used"]
    assert used["p_value"] < 0.001
    assert used["p_value_clustered"] > used["p_value"]
    assert used["p_value_clustered"] > 0.05


# --- ratings, correctness and agreement ---------------------------------------------------------------

def rated_log(with_raters: bool) -> Log:
    """Controlled games whose explanations are graded (and rated) better in won games."""
    log = Log()
    rng = np.random.default_rng(0)
    for arm in ("attention", "relqa", "none"):
        for p in range(8):
            for number in range(20):
                shows = arm != "none" and (number // 5) % 2 == 1
                won = bool(rng.random() < 0.6)
                on_point = rng.random() < (0.75 if won else 0.25)
                grade = EXPLANATION_SCALE[int(rng.integers(0, 2) if on_point else rng.integers(2, 5))]
                correct = bool(rng.random() < (0.8 if won else 0.4))
                rounds = [{"explained": shows, "rating": RATINGS[int(rng.integers(0, 5))], "correct": correct,
                           "explanations": [(arm, grade)] if shows else []}]
                game = log.game("rated", f"{arm}-{p}", arm, number, won=won, with_explanations=shows, rounds=rounds,
                                difficulty=float(rng.random()))
                if with_raters and shows:
                    for rater in ("r1", "r2", "r3"):
                        jitter = int(np.clip(EXPLANATION_SCALE.index(grade) + rng.integers(-1, 2), 0, 4))
                        log.rate(game, 0, arm, rater, EXPLANATION_SCALE[jitter], ANSWER_SCALE[0 if correct else 2])
    return log


def test_ratings_correctness_and_agreement_sections():
    report = analyze(rated_log(with_raters=True).tables())
    helpfulness = report["by_helpfulness"]
    assert set(helpfulness["points"]) == {"overall", "attention", "relqa"}
    assert [p["rating"] for p in helpfulness["points"]["overall"]] == list(RATINGS)
    assert sum(p["n"] for p in helpfulness["points"]["overall"]) == 2 * 8 * 10 \
        == sum(h["count"] for h in report["rating_histograms"]["helpfulness"]["overall"])
    assert helpfulness["baseline"]["overall"]["n_games"] == 2 * 8 * 10
    assert [p["rating"] for p in report["difficulty_by_rating"]["points"]["relqa"]] == list(RATINGS)
    correctness = report["by_correctness"]
    for source in ("raters", "automatic"):
        points = correctness[source]["points"]["overall"]
        assert [p["rating"] for p in points] == list(EXPLANATION_SCALE)
        assert points[0]["win_rate"] > points[4]["win_rate"]
    assert correctness["agreement"]["weighted_kappa"] > 0.3
    fig10 = report["answer_correctness"]
    assert [b["bin"] for b in fig10["bins"]] == ["0.00-0.25", "0.25-0.50", "0.50-0.75", "0.75-1.00"]
    assert fig10["automatic"]["n_games"]["without_explanations"] == 8 * 10 * 2 + 8 * 20
    assert sum(p["n_games"] for p in fig10["automatic"]["points"]["without_explanations"]) == 8 * 10 * 2 + 8 * 20
    assert fig10["automatic"]["p_value"] is not None
    correlation = report["correlations"]["raters"]["attention"]
    assert correlation["n"] == 8 * 10 and -1 <= correlation["spearman"] <= 1
    agreement = report["agreement"]
    assert agreement["raters"]["explanation"]["krippendorff_alpha"] > 0.3
    assert agreement["raters"]["explanation"]["ratings_per_item_fleiss"] == 3
    assert agreement["automatic_vs_raters"]["answer"]["weighted_kappa"] == pytest.approx(1.0)
    json.dumps(report, allow_nan=False)


def test_missing_rater_data_still_builds_and_says_so():
    report = analyze(rated_log(with_raters=False).tables())
    assert any("no rater data yet" in n for n in report["notes"])
    assert "no rater data yet" in report["by_correctness"]["raters"]["missing"]
    assert "missing" in report["agreement"]["raters"]
    assert report["by_correctness"]["automatic"]["points"]["overall"][0]["n"] > 0
    assert report["controlled"]["table1"]


# --- bad input ----------------------------------------------------------------------------------------

def write(tables: Tables, directory, fmt: str, drop: dict[str, list[str]] | None = None) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name in COLUMNS:
        frame = getattr(tables, name).drop(columns=(drop or {}).get(name, []))
        if fmt == "csv":
            frame.to_csv(directory / f"{name}.csv", index=False)
        elif fmt == "jsonl":
            frame.to_json(directory / f"{name}.jsonl", orient="records", lines=True)
        else:
            frame.to_parquet(directory / f"{name}.parquet", index=False)


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_export_directory_in_each_format(tmp_path, fmt):
    log = at_will_log([(30, 20, True), (20, 5, False)])
    raw = {name: frame for name, frame in export_tables(log.events).items()}
    write(Tables(**{k: v for k, v in raw.items()}), tmp_path / "export", fmt)
    tables = load_tables(tmp_path / "export")
    assert len(tables.games) == 50 and tables.games["won"].isin([0.0, 1.0]).all()
    used = analyze(tables)["at_will"]["explanations_used"]
    assert (used["with"]["n_games"], used["without"]["n_games"]) == (30, 20)
    assert used["with"]["win_rate"] == pytest.approx(20 / 30)


def test_missing_column_is_noted_by_file_and_column(tmp_path):
    raw = controlled_log().tables()
    write(raw, tmp_path / "export", "csv", drop={"games": ["difficulty", "session"]})
    report = analyze(load_tables(tmp_path / "export"))
    games_csv = str(tmp_path / "export" / "games.csv")
    assert any(games_csv in n and "'difficulty'" in n for n in report["notes"])
    assert any(games_csv in n and "'session'" in n for n in report["notes"])
    assert "missing" in report["difficulty_by_rating"]
    row = report["controlled"]["table1"][0]            # blocks fall back to with_explanations
    assert row["with_expl"]["n_games"] == 60 and row["group_baseline"]["n_games"] == 0


def test_any_missing_column_costs_only_what_needs_it():
    raw = export_tables(rated_log(with_raters=True).events)
    for table, column in [("games", "participant"), ("games", "score"), ("rounds", "explained"), ("ratings", "rating"),
                          ("explanations", "grade"), ("rater_ratings", "explanation_rating")]:
        frames = {**raw, table: raw[table].drop(columns=[column])}
        report = analyze(Tables.from_frames(frames, "test log"))
        json.dumps(report, allow_nan=False)
        assert any(f"'{column}'" in n for n in report["notes"]), (table, column)
        assert not [n for n in report["notes"] if "could not be computed" in n], (table, column)


def test_unknown_study_and_foreign_input_are_clear_errors(tmp_path):
    log = controlled_log("ctl")
    write(log.tables(), tmp_path / "export", "csv")
    with pytest.raises(AnalysisError, match=r"unknown study 'nope'.*studies there: ctl"):
        load_tables(tmp_path / "export", studies=["nope"])
    assert load_tables(tmp_path / "export", studies=["ctl"]).study_ids() == ["ctl"]
    (tmp_path / "foreign").mkdir()
    pd.DataFrame({"a": [1]}).to_csv(tmp_path / "foreign" / "data.csv", index=False)
    with pytest.raises(AnalysisError, match="no games table"):
        load_tables(tmp_path / "foreign")
    pd.DataFrame({"a": [1]}).to_csv(tmp_path / "foreign" / "games.csv", index=False)
    with pytest.raises(AnalysisError, match="no column 'game_id'"):
        load_tables(tmp_path / "foreign")
    with pytest.raises(AnalysisError, match="does not exist"):
        load_tables(tmp_path / "nowhere")


def test_a_study_with_no_games_and_an_arm_with_no_data_still_build():
    log = Log()
    for p in range(3):
        for number in range(5):                            # block 1 only: no game with explanations yet
            log.game("early", f"p{p}", "attention", number, won=number % 2 == 0)
    log._add("join", study="empty", participant="x", arm="relqa")
    report = analyze(log.tables())
    row = report["controlled"]["table1"][0]
    assert row["with_expl"]["n_games"] == 0 and row["with_expl"]["win_rate"] is None
    assert row["p_value"] is None and row["p_value_clustered"] is None
    assert report["at_will"]["missing"]
    json.dumps(report, allow_nan=False)
    only_joined = analyze(log.tables().only(["empty"]))
    assert "study empty has participants but no games yet" in only_joined["notes"]
    assert only_joined["controlled"]["missing"] and only_joined["n"]["games"] == 0
    empty = analyze(Tables.from_frames({"games": pd.DataFrame()}, "empty"))
    assert any("no finished games" in n for n in empty["notes"]) and empty["studies"] == {}


def test_quality_flags_can_exclude_participants():
    log = controlled_log()
    for number in range(5):
        log.game("ctl", "speedy", "attention", number, won=True, seconds=2.0)
    tables = log.tables()
    kept = analyze(tables)
    dropped = analyze(tables, exclude_flags={"fast_games"})
    assert kept["quality"]["flagged_participants"]["fast_games"] == 1
    assert dropped["exclusions"] == {"flags": ["fast_games"], "participants": 1, "games": 5}
    assert dropped["n"]["games"] == kept["n"]["games"] - 5
    assert "fast_games" in dropped["methods"]
    with pytest.raises(AnalysisError, match="unknown quality flag"):
        analyze(tables, exclude_flags={"sleepy"})


def test_benchmarks_are_read_beside_the_study(tmp_path):
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "vqa_x.json").write_text(json.dumps({"agent": "x", "accuracy": 0.7, "n": 10}))
    (tmp_path / "bench" / "nle_x.json").write_text(
        json.dumps({"agent": "x", "nle": {"s_t": 70.0, "s_e": 80.0, "s_o": 56.0}}))
    (tmp_path / "bench" / "explainers_x.json").write_text(json.dumps(
        {"agent": "x", "explainers": {"attention": {"p50_ms": 1.0, "p95_ms": 2.0, "mean_ms": 1.2}}}))
    (tmp_path / "bench" / "notes.json").write_text("[1, 2]")
    log = rated_log(with_raters=False)
    report = analyze(log.tables(), bench_dir=tmp_path / "bench")
    bench = report["benchmarks"]
    assert bench["agents"]["x"]["vqa"]["accuracy"] == 0.7
    assert bench["by_explainer"]["nle"]["bench"]["x"]["nle"]["s_o"] == 56.0
    assert bench["by_explainer"]["attention"]["bench"]["x"]["latency_ms"]["p95_ms"] == 2.0
    assert bench["by_explainer"]["attention"]["study"]["n_items"] == 8 * 10
    assert bench["skipped"][0]["file"] == "notes.json"
    assert "exag bench" in analyze(log.tables())["benchmarks"]["missing"]


def test_a_benchmark_card_is_read_beside_the_study(tmp_path):
    from experiments.analysis.benchmarks import effects
    (tmp_path / "bench").mkdir()
    card = {"agent": {"name": "x", "n": 40, "accuracy": 72.5, "by_type": {}, "latency": {"single_p50_ms": 3.0}},
            "world": "w", "seed": 0, "seconds": 60.0,
            "explainers": {"attention": {"kind": "attention", "grading": {"on_point": 55.0},
                                         "localisation": {"relevance_mass": 61.0, "pointing_game": 80.0},
                                         "e_vil": {"not_applicable": "attention explanations are 'attention'"}},
                           "nle": {"kind": "text", "e_vil": {"s_e_ground_truth": 70.0, "s_o_ground_truth": 50.75}}}}
    (tmp_path / "bench" / "card.json").write_text(json.dumps(card))
    report = analyze(rated_log(with_raters=False).tables(), bench_dir=tmp_path / "bench")
    bench = report["benchmarks"]
    assert bench["files"] == [{"file": "card.json", "kind": "card"}]
    assert bench["agents"]["x"]["card"]["accuracy"] == 72.5
    attention = bench["by_explainer"]["attention"]["bench"]["x"]["card"]
    assert attention == {"on-point (grading)": 55.0, "relevance mass": 61.0, "pointing game": 80.0}
    assert bench["by_explainer"]["nle"]["bench"]["x"]["card"]["S_O facts"] == 50.75
    # each explainer's effect on players: its arm's Table 1 row (with minus without explanations)
    controlled = analyze(controlled_log().tables())["controlled"]
    rows = {r["mode"]: r for r in controlled["table1"]}
    effect = effects(controlled)
    assert set(effect) == {"attention", "relqa", "both", "overall", "overall_inc_none"}
    assert effect["attention"]["win_rate"] == rows["attention"]["improvement"]["win_rate"]


# --- a server data directory --------------------------------------------------------------------------

def test_server_data_directory_is_exported_on_the_fly(tmp_path):
    from server.embedded_redis import EmbeddedRedis
    from server.store import Store

    log = at_will_log([(6, 4, True), (4, 1, False)])
    redis_server = EmbeddedRedis(tmp_path / "server" / "redis").start()
    try:
        store = Store.connect(redis_server.url)
        for event in log.events:
            store.log(event)
        store.close()
    finally:
        redis_server.stop()
    tables = load_tables(tmp_path / "server")
    assert len(tables.games) == 10 and tables.source == str(tmp_path / "server")
    used = analyze(tables)["at_will"]["explanations_used"]
    assert (used["with"]["n_games"], used["without"]["n_games"]) == (6, 4)
    assert not EmbeddedRedis(tmp_path / "server" / "redis").alive()
    assert math.isclose(used["with"]["win_rate"], 4 / 6)


def test_the_analysis_reads_the_scales_without_torch():
    """The analysis needs grading's scales, not the explainers' models (importing those costs ~9 s)."""
    code = ("import sys; from experiments.analysis.scales import ANSWER_SCALE, EXPLANATION_SCALE; "
            "from explainers.grading import ANSWER_SCALE as A, EXPLANATION_SCALE as E; "
            "assert (ANSWER_SCALE, EXPLANATION_SCALE) == (A, E)")
    import subprocess
    import sys

    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0
    code = "import sys; import experiments.analysis.report; assert 'torch' not in sys.modules, 'torch imported'"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-500:]
