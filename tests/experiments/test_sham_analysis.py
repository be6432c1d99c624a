"""The analysis of a study with sham arms (game/study.py SHAM_MODES), on a hand-made event log through the
real export: each sham arm has its own Table 1 row, after the real arms, and none enters "overall",
"overall_inc_none", the effect net of practice or the ratings' "overall"."""
from __future__ import annotations

import pytest
from test_analysis import Log

from experiments.analysis import analyze
from experiments.analysis.figures import mode_name
from experiments.analysis.frames import paper_order, sham
from experiments.analysis.scales import RATINGS
from game.study import SHAM_MODES, arm_modes, is_sham

# wins of 5 games per block (blocks 1-4; even blocks show the arm's explanations); the shams do harm
WINS_PER_BLOCK = {"attention": (2, 4, 2, 4), "none": (2, 2, 2, 2), "attention-shuffled": (2, 0, 2, 0),
                  "nle-other": (3, 1, 3, 1), "attention+nle-other": (2, 1, 2, 1)}
PARTICIPANTS = 4


def sham_log() -> Log:
    log = Log()
    for arm, wins in WINS_PER_BLOCK.items():
        for p in range(PARTICIPANTS):
            for number in range(20):
                block, place = number // 5 + 1, number % 5
                shows = arm != "none" and block % 2 == 0
                won = (place + p) % 5 < wins[block - 1]
                rounds = [{"explained": shows, "rating": RATINGS[0 if arm == "attention" else 4]}]
                log.game("s", f"{arm}-{p}", arm, number, won=won, score=5 if won else 0, with_explanations=shows,
                         rounds=rounds)
    return log


def win_rate(arms: list[str], blocks: tuple[int, ...]) -> float:
    return sum(WINS_PER_BLOCK[a][b - 1] for a in arms for b in blocks) / (5 * len(arms) * len(blocks))


def test_sham_modes_are_arm_modes_and_named_once():
    assert set(SHAM_MODES) <= set(arm_modes("+".join(SHAM_MODES)))
    assert is_sham("attention-shuffled") and is_sham("attention+nle-other") and not is_sham("both")
    assert not sham("(no arm)") and not sham("none")        # unknown arms are not shams
    assert paper_order(["nle-other", "relqa", "attention-shuffled", "attention", "objscene"]) == \
        ["attention", "relqa", "objscene", "attention-shuffled", "nle-other"]
    assert all("sham" in mode_name(m).lower() for m in ("attention-shuffled", "nle-other", "attention+nle-other"))
    assert mode_name("attention+nle") == "attention + nle"


def test_overall_pools_only_the_real_arms_and_each_sham_has_its_row():
    report = analyze(sham_log().tables())
    controlled = report["controlled"]
    rows = {r["mode"]: r for r in controlled["table1"]}
    assert list(rows) == ["attention", "attention+nle-other", "attention-shuffled", "nle-other", "overall",
                          "overall_inc_none"]
    assert controlled["sham_arms"] == ["attention+nle-other", "attention-shuffled", "nle-other"]
    assert controlled["control_arms"] == ["none"]
    assert rows["overall"]["arms"] == ["attention"] and rows["overall_inc_none"]["arms"] == ["attention", "none"]
    n = 5 * 2 * PARTICIPANTS        # games of one arm in two blocks
    assert rows["overall"]["with_expl"]["win_rate"] == pytest.approx(win_rate(["attention"], (2, 4)))
    assert rows["overall"]["with_expl"]["n_games"] == n
    assert rows["overall_inc_none"]["no_expl"]["win_rate"] == pytest.approx(win_rate(["attention", "none"], (1, 3)))
    assert rows["overall_inc_none"]["group_baseline"]["n_games"] == 2 * 5 * PARTICIPANTS
    for arm in controlled["sham_arms"]:            # the sanity check: harm shows in the sham's own row
        assert rows[arm]["with_expl"]["win_rate"] == pytest.approx(win_rate([arm], (2, 4)))
        assert rows[arm]["no_expl"]["win_rate"] == pytest.approx(win_rate([arm], (1, 3)))
        assert rows[arm]["improvement"]["win_rate"] < 0
    assert rows["overall"]["improvement"]["win_rate"] > 0
    assert any("sham arms" in note for note in controlled["notes"])
    # the effect net of practice: the real explanation arm against the control group only
    assert controlled["net_of_practice"]["n"] == 2 * 20 * PARTICIPANTS

    # ratings: "overall" is the real arms' (all rated Helping a lot); each sham arm is its own mode
    fig7 = report["by_helpfulness"]
    overall = {p["rating"]: p["n"] for p in fig7["points"]["overall"]}
    assert overall[RATINGS[0]] == 10 * PARTICIPANTS and overall[RATINGS[4]] == 0
    assert {p["rating"]: p["n"] for p in fig7["points"]["nle-other"]}[RATINGS[4]] == 10 * PARTICIPANTS
    assert fig7["baseline"]["overall"]["n_games"] == n
    helpfulness = {h["rating"]: h["count"] for h in report["rating_histograms"]["helpfulness"]["overall"]}
    assert helpfulness[RATINGS[4]] == 0


def test_a_study_of_sham_arms_only_has_their_rows_and_no_overall():
    log = Log()
    for number in range(20):
        shows = (number // 5) % 2 == 1
        log.game("s", "p", "attention-shuffled", number, won=number % 2 == 0, with_explanations=shows,
                 rounds=[{"explained": shows, "rating": RATINGS[2]}])
    controlled = analyze(log.tables())["controlled"]
    assert [r["mode"] for r in controlled["table1"]] == ["attention-shuffled"]
    assert any("no arm shows real explanations" in note for note in controlled["notes"])
