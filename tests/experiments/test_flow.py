"""The flow table (experiments/analysis/flow.py): everyone who joined accounted for once, by arm and order,
from an event log built here the way the server writes it and tabulated by the real export: people who never
consent, are screened out, drop out before any game or after a block, finish, are excluded by a flag; a
refilled slot; an arm chosen by the link; the attrition test; and bounds computed by hand."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from experiments.analysis import analyze
from experiments.analysis.data import Tables
from experiments.analysis.flow import ALL, NOT_ANSWERED, attrition_test, flow
from experiments.analysis.frames import build_frames
from experiments.analysis.html import render_html
from experiments.analysis.report import json_safe
from experiments.analysis.write import format_summary
from game.export import tables as export_tables
from game.quality import FLAGS
from game.study import StudyConfig

CHECKS = {"comprehension": {"on_fail": "screen_out"}, "colour_screen": {"on_fail": "screen_out"},
          "attention": {"every": 2}, "demographics": {}, "screen_out": {"code": "SCREENED"}}
CONTROLLED = StudyConfig("flow", arms=("none", "attention"), sessions=4, games_per_session=2, checks=CHECKS)
AT_WILL = StudyConfig("free", kind="at-will", arms=("attention",), sessions=1, games_per_session=4)
RULES = {"flow": frozenset({"fast_games", "attention_failed"}), "free": frozenset()}
SLOW, FAST = 60.0, 2.0


class Log:
    """A study's events as the server logs them (server/play.py, server/check_stages.py)."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.time = 1_000.0

    def add(self, event_type: str, **fields) -> None:
        self.time += 1.0
        self.events.append({"type": event_type, "time": self.time, **fields})

    def study(self, config: StudyConfig) -> None:
        self.add("study_created", study=config.study_id, config=config.to_dict())

    def join(self, study: str, who: str, arm: str, order: str | None = "abab", *, consent: bool = True,
             slot: int | None = 0, refilled: int | None = None, by: str = "randomization") -> None:
        self.add("join", study=study, participant=who, arm=arm, order=order, slot=slot, block=0,
                 refilled_slot=refilled, assigned_by=by)
        if consent:
            self.add("consent", study=study, participant=who)

    def screened_out(self, study: str, who: str, check: str) -> None:
        if check == "comprehension":
            self.add("comprehension", study=study, participant=who, failures=2, passed=False, flagged=True)
        else:
            self.add("colour_screen", study=study, participant=who, correct=1, plates=4, rule="4 of 4", passed=False)
        self.add("screened_out", study=study, participant=who, check=check)

    def games(self, study: str, who: str, arm: str, order: str | None, wins: list[bool], *, first: int = 0,
              per_session: int = 2, seconds: float = SLOW, setting: str = "controlled") -> None:
        """Games numbered from `first`, `per_session` a session; `wins` says which are won."""
        for number, won in enumerate(wins, start=first):
            session = number // per_session
            shows = arm != "none" and (session + 1) % 2 == (0 if order != "baba" else 1)
            game = f"{study}-{who}-{number}"
            keys = {"study": study, "participant": who, "game": game, "arm": arm, "game_number": number}
            self.add("game_start", **keys, session=session, setting=setting, with_explanations=shows, order=order,
                     modes=[], difficulty=0.5, images=[1, 2, 3], secret=0)
            self.add("guess", **keys, right=won, score=5 if won else 0, won=won, questions=2, spent=2,
                     seconds=seconds)

    def finish(self, study: str, who: str, demographics: dict | None = None) -> None:
        if demographics is not None:
            self.add("demographics", study=study, participant=who, answers=demographics)
        self.add("finish", study=study, participant=who)


def controlled_and_at_will_log() -> Log:
    """Study `flow` (controlled, 4 sessions of 2 games, abab: explanations in blocks 2 and 4) and `free`."""
    log = Log()
    log.study(CONTROLLED)
    log.study(AT_WILL)
    # arm attention
    log.join("flow", "a-never", "attention", consent=False)
    log.join("flow", "a-screen", "attention")
    log.screened_out("flow", "a-screen", "comprehension")
    log.join("flow", "a-drop0", "attention")                                  # consents, plays nothing
    log.join("flow", "a-drop1", "attention")
    log.games("flow", "a-drop1", "attention", "abab", [True, False])          # block 1 (without), then leaves
    log.join("flow", "a-fin", "attention")
    log.games("flow", "a-fin", "attention", "abab", [True, False, True, True, False, False, True, False])
    log.finish("flow", "a-fin", {"age": "25-34", "gender": "Woman"})
    log.join("flow", "a-fast", "attention")
    log.games("flow", "a-fast", "attention", "abab", [True] * 8, seconds=FAST)
    log.finish("flow", "a-fast")
    log.join("flow", "a-refill", "attention", "baba", slot=2, refilled=2)    # took a-drop0's slot
    log.games("flow", "a-refill", "attention", "baba", [True, False] * 4)
    log.finish("flow", "a-refill", {"age": "Prefer not to say", "gender": "Man"})
    # arm none
    log.join("flow", "n-screen", "none")
    log.screened_out("flow", "n-screen", "colour_screen")
    for who in ("n-fin1", "n-fin2"):
        log.join("flow", who, "none")
        log.games("flow", who, "none", "abab", [True, False] * 4)
    log.add("attention_check", study="flow", participant="n-fin2", item="purple", number=0, answer="Red",
            passed=False, after_games=2)
    log.finish("flow", "n-fin1", {"age": "25-34", "gender": "Prefer not to say"})
    log.finish("flow", "n-fin2", {"age": "35-44", "gender": "Man"})
    log.join("flow", "n-link", "none", slot=None, by="link")
    log.games("flow", "n-link", "none", "abab", [False] * 8)
    log.finish("flow", "n-link")
    log.join("flow", "n-drop2", "none")
    log.games("flow", "n-drop2", "none", "abab", [True, True, False, False])  # blocks 1 and 2, then leaves
    # study free (at-will, 4 games): one drops after 2 games (1 won), one wins all 4
    log.join("free", "f-1", "attention", None)
    log.games("free", "f-1", "attention", None, [True, False], per_session=4, setting="at-will")
    log.join("free", "f-2", "attention", None)
    log.games("free", "f-2", "attention", None, [True] * 4, per_session=4, setting="at-will")
    log.finish("free", "f-2")
    return log


@pytest.fixture(scope="module")
def result() -> dict:
    tables = Tables.from_frames(export_tables(controlled_and_at_will_log().events), "flow log")
    frames, exclusions = build_frames(tables, RULES)
    return flow(tables, frames, exclusions, RULES)


def rows(study: dict) -> dict:
    return {(r["arm"], r["order"]): r for r in study["rows"]}


def test_everyone_who_joined_is_counted_once_and_the_columns_add_up(result):
    json.dumps(json_safe(result), allow_nan=False)
    for study in [*result["studies"].values(), result["pooled"]]:
        assert study["adds_up"]
        for r in [*study["rows"], study["total"]]:
            assert r["joined"] == r["not_consented"] + r["screened_out"] + r["dropped"] + r["finished"]
            assert r["finished"] == r["excluded"] + r["analysed"] + r["finished_without_analysed_games"]
            assert r["dropped"] == (r["dropped_before_any_game"] + sum(r["dropped_after_block"].values())
                                    + r["dropped_block_unknown"])
        for key in ("joined", "not_consented", "screened_out", "dropped", "finished", "excluded", "analysed"):
            assert study["total"][key] == sum(r[key] for r in study["rows"]), key
    flow_study = result["studies"]["flow"]
    assert flow_study["total"]["arm"] == ALL and flow_study["total"]["joined"] == 12
    assert result["pooled"]["total"]["joined"] == 12 + 2


def test_each_path_lands_in_its_column(result):
    by = rows(result["studies"]["flow"])
    assert list(by) == [("attention", "abab"), ("attention", "baba"), ("none", "abab")]   # the paper's arm order
    attention = by[("attention", "abab")]
    assert {k: attention[k] for k in ("joined", "not_consented", "screened_out", "dropped", "finished", "excluded",
                                      "analysed", "dropped_analysed", "refilled_slots", "arm_chosen_by_link")} == \
        {"joined": 6, "not_consented": 1, "screened_out": 1, "dropped": 2, "finished": 2, "excluded": 1,
         "analysed": 1, "dropped_analysed": 1, "refilled_slots": 0, "arm_chosen_by_link": 0}
    assert attention["screened_out_by"] == {"comprehension": 1}
    assert attention["dropped_before_any_game"] == 1 and attention["dropped_after_block"] == {"1": 1}
    assert attention["excluded_by"] == {"fast_games": 1}
    refilled = by[("attention", "baba")]
    assert (refilled["joined"], refilled["finished"], refilled["analysed"], refilled["refilled_slots"]) == (1, 1, 1, 1)
    none = by[("none", "abab")]
    assert none["screened_out_by"] == {"colour_screen": 1}
    assert none["dropped_after_block"] == {"2": 1} and none["dropped_analysed"] == 1
    assert none["excluded_by"] == {"attention_failed": 1}
    assert (none["finished"], none["excluded"], none["analysed"]) == (3, 1, 2)
    assert none["arm_chosen_by_link"] == 1
    assert result["studies"]["flow"]["total"]["refilled_slots"] == 1


def test_flags_are_counted_by_arm(result):
    flags = result["studies"]["flow"]["flags_by_arm"]
    assert flags["applied"] == ["attention_failed", "fast_games"]
    assert set(flags["arms"]["attention"]["flags"]) == set(FLAGS)
    assert flags["arms"]["attention"]["participants"] == 7
    assert flags["arms"]["attention"]["flags"]["fast_games"] == 1
    assert flags["arms"]["attention"]["flags"]["comprehension_failed"] == 1
    assert flags["arms"]["none"]["flags"]["attention_failed"] == 1
    assert flags["arms"]["none"]["flags"]["colour_screen_failed"] == 1


def test_the_sample_is_tabulated_by_arm_with_nonresponse(result):
    sample = result["studies"]["flow"]["sample"]
    assert sample["n"] == {"attention": 3, "none": 3}    # analysed: a-drop1, a-fin, a-refill; n-fin1, n-link, n-drop2
    age = sample["items"]["age"]
    assert age["type"] == "choice" and age["categories"][-1] == NOT_ANSWERED
    assert "Prefer not to say" in age["categories"]
    assert {k: v for k, v in age["counts"]["attention"].items() if v} == \
        {"25-34": 1, "Prefer not to say": 1, NOT_ANSWERED: 1}
    assert {k: v for k, v in age["counts"]["none"].items() if v} == {"25-34": 1, NOT_ANSWERED: 2}
    assert age["shares"]["none"][NOT_ANSWERED] == pytest.approx(2 / 3)
    assert age["test"]["descriptive"] and "below 5" in age["test"]["note"]
    assert set(sample["items"]) >= {"age", "gender", "education", "english", "ai_use"}   # the default items


def test_attrition_is_tested_by_arm_on_the_randomized(result):
    test = result["studies"]["flow"]["attrition_test"]
    # consented, not screened out, randomized (n-link left out): attention 3 of 5 finished, none 2 of 3
    assert test["table"] == {"attention": {"finished": 3, "not_finished": 2},
                             "none": {"finished": 2, "not_finished": 1}}
    assert test["p_value"] == pytest.approx(scipy.stats.fisher_exact([[3, 2], [2, 1]]).pvalue)
    assert "Fisher" in test["test"]
    one_arm = result["studies"]["free"]["attrition_test"]
    assert one_arm["p_value"] is None and "fewer than two arms" in one_arm["note"]


def people(counts: dict[str, tuple[int, int]]) -> pd.DataFrame:
    """Randomized participants: arm -> (finished, not finished)."""
    rows = [(arm, status) for arm, (done, left) in counts.items()
            for status in ["finished"] * done + ["dropped"] * left]
    return pd.DataFrame(rows, columns=["arm", "status"])


def test_the_attrition_test_fits_the_table():
    many = attrition_test(people({"attention": (40, 10), "relqa": (30, 20), "none": (45, 5)}))
    expected = scipy.stats.chi2_contingency(np.array([[40, 10], [30, 20], [45, 5]]), correction=False)
    assert "chi-square" in many["test"] and many["p_value"] == pytest.approx(expected.pvalue)
    assert many["dof"] == 2
    few = attrition_test(people({"attention": (4, 1), "relqa": (1, 4), "none": (5, 0)}))
    assert "Monte Carlo" in few["test"] and 0 < few["p_value"] < 0.1
    assert few == attrition_test(people({"attention": (4, 1), "relqa": (1, 4), "none": (5, 0)}))   # seeded
    nobody_left = attrition_test(people({"attention": (4, 0), "none": (5, 0)}))
    assert nobody_left["p_value"] is None and "nobody dropped out" in nobody_left["note"]


def test_bounds_fill_the_games_never_played_with_the_worst_and_best_case(result):
    bounds = result["studies"]["flow"]["bounds"]["controlled"]
    # the randomized attention participants who consented (4 sessions x 2 games, 4 with and 4 without
    # explanations each); per participant (with - without), worst case / best case:
    #   a-drop0  no game:                  0/4 - 4/4 = -1      4/4 - 0/4 = +1
    #   a-drop1  won 1 of 2 without:       0/4 - 3/4 = -0.75   4/4 - 1/4 = +0.75
    #   a-fin    with 3/4, without 1/4:    +0.5 both (observed +0.5)
    #   a-fast   all won:                  0 both (excluded, but randomized: in the bounds)
    #   a-refill (baba) 2/4 and 2/4:       0 both
    assert bounds["n_randomized"] == 5 and bounds["n_observed"] == 3
    assert bounds["lower"] == pytest.approx((-1 - 0.75 + 0.5) / 5)
    assert bounds["upper"] == pytest.approx((1 + 0.75 + 0.5) / 5)
    assert bounds["observed"] == pytest.approx(0.5 / 3)
    assert bounds["n_with_missing_games"] == 2 and bounds["missing_games"] == 8 + 6
    assert bounds["lower"] <= bounds["observed"] <= bounds["upper"]
    at_will = result["studies"]["free"]["bounds"]["at_will"]
    # f-1 won 1 of 2 of 4 planned, f-2 won all 4
    assert at_will["lower"] == pytest.approx((1 / 4 + 1) / 2)
    assert at_will["upper"] == pytest.approx((3 / 4 + 1) / 2)
    assert at_will["observed"] == pytest.approx((1 / 2 + 1) / 2)
    assert set(result["pooled"]["bounds"]) == {"controlled", "at_will"}
    assert result["pooled"]["bounds"]["controlled"]["lower"] == pytest.approx(bounds["lower"])


def test_an_arm_chosen_by_link_is_counted_and_flagged(result):
    study = result["studies"]["flow"]
    assert study["total"]["arm_chosen_by_link"] == 1
    assert any("chosen by their link" in n for n in study["notes"])
    assert "not a randomized assignment" in result["definition"]
    assert "treat each analysed participant's arm as randomized" in result["definition"]


def test_without_rules_the_analysis_exclusion_flags_apply():
    tables = Tables.from_frames(export_tables(controlled_and_at_will_log().events), "flow log")
    frames, exclusions = build_frames(tables, {"fast_games"})
    out = flow(tables, frames, exclusions)
    attention = rows(out["studies"]["flow"])[("attention", "abab")]
    assert attention["excluded_by"] == {"fast_games": 1}
    assert rows(out["studies"]["flow"])[("none", "abab")]["excluded"] == 0      # attention_failed not applied
    assert out["studies"]["flow"]["adds_up"]


def test_no_participants_table_says_so():
    tables = Tables.from_frames({"games": pd.DataFrame()}, "empty")
    frames, exclusions = build_frames(tables)
    out = flow(tables, frames, exclusions)
    assert out["studies"] == {} and "no participants table" in out["notes"][0]


def test_the_report_page_and_the_printout_show_the_flow(result):
    tables = Tables.from_frames(export_tables(controlled_and_at_will_log().events), "flow log")
    report = {**analyze(tables), "flow": json_safe(result)}       # as report.py's analyze() adds it
    page = render_html(report, [])
    for text in ("Participant flow: everyone who joined", "Study flow", "All studies, pooled", "refilled slots",
                 "(not randomized)", "comprehension 1", "after block 1: 1", "fast_games 1", "Differential attrition",
                 "Fisher&#x27;s exact test", "lower bound -25.0 pts, upper bound +45.0 pts", "observed +16.7 pts",
                 "lower bound 62.5%", "attention_failed (excluded by)", "Sample by arm", NOT_ANSWERED):
        assert text in page, text
    printed = format_summary(report, {"html": "report.html", "json": "report.json", "figures": "figures/",
                                      "tables": "tables/"})
    assert ("Flow, flow: 12 joined, 1 did not consent, 2 screened out, 3 dropped, 6 finished (2 excluded, "
            "4 analysed); 1 refilled slots, 1 arms chosen by link (not randomized)") in printed
    assert "bounds for unplayed games: with - without [-25.0, +45.0] points, observed +16.7" in printed


# --- repeat participation (issue 51) ----------------------------------------------------------------------

REPEAT_RULES = ["several_sessions", "shared_browser"]


def repeat_log() -> Log:
    """Study `repeat`, which pre-registers excluding repeat participation: Prolific participations as the server
    logs them (server/play.py: the join's ids and the browser it came from, a rejoin that bound another browser
    after a release)."""
    log = Log()
    log.study(StudyConfig("repeat", kind="at-will", arms=("attention", "both"), sessions=1, games_per_session=2,
                          preregistration={"exclusions": REPEAT_RULES}))     # registrable names

    def take_part(who: str, arm: str, browser: str, *, consent: bool = True, finish: bool = True) -> None:
        pid, session = who.split(":")[1:]
        log.add("join", study="repeat", participant=who, arm=arm, order=None, slot=0, block=0,
                assigned_by="randomization", ids={"PROLIFIC_PID": pid, "SESSION_ID": session}, browser=browser)
        if consent:
            log.add("consent", study="repeat", participant=who)
        if finish:
            log.games("repeat", who, arm, None, [True, False], per_session=2, setting="at-will")
            log.finish("repeat", who)

    take_part("prolific:p1:s1", "both", "b1")             # released, then the same person under another session
    take_part("prolific:p1:s2", "attention", "b2")
    take_part("prolific:p1:s3", "both", "b6", consent=False, finish=False)   # a join alone: no participation
    take_part("prolific:p2:s1", "attention", "b3")        # two Prolific ids, one browser
    take_part("prolific:p3:s1", "both", "b3")
    take_part("prolific:p5:s1", "both", "b3", consent=False, finish=False)
    take_part("prolific:p4:s1", "both", "b4")             # joined in b4, bound to b5 after a release: b5 is p6's
    log.add("rejoin", study="repeat", participant="prolific:p4:s1", rebound=True, browser="b5")
    take_part("prolific:p6:s1", "attention", "b5")
    take_part("prolific:p7:s1", "attention", "b7")        # nobody else's
    return log


def test_repeat_participation_is_flagged_counted_and_excludable():
    """What the server cannot refuse (one person under several platform ids; a platform id released and back
    under another session) is flagged per participant in the export, counted in the flow table, and excluded
    where the pre-registration names the flag."""
    exported = export_tables(repeat_log().events)
    people = exported["participants"].set_index("participant")
    several = {p for p in people.index if people.loc[p, "several_sessions"]}
    shared = {p for p in people.index if people.loc[p, "shared_browser"]}
    assert several == {"prolific:p1:s1", "prolific:p1:s2"}
    assert shared == {"prolific:p2:s1", "prolific:p3:s1", "prolific:p4:s1", "prolific:p6:s1"}
    assert people.loc["prolific:p1:s2", "flags"] == "several_sessions"
    assert people.loc["prolific:p4:s1", "browsers"] == "b4+b5"

    rules = {"repeat": frozenset(REPEAT_RULES)}
    tables = Tables.from_frames(exported, "repeat log")
    frames, exclusions = build_frames(tables, rules)
    study = flow(tables, frames, exclusions, rules)["studies"]["repeat"]
    assert study["repeat_participation"] == {"several_sessions": 2, "shared_browser": 4}
    assert any("repeat participation: 2 participants" in note for note in study["notes"])
    by_arm = study["flags_by_arm"]["arms"]
    assert [by_arm[arm]["flags"]["several_sessions"] for arm in ("both", "attention")] == [1, 1]
    assert [by_arm[arm]["flags"]["shared_browser"] for arm in ("both", "attention")] == [2, 2]
    assert study["total"]["excluded"] == 6 and study["total"]["analysed"] == 1 and study["adds_up"]
    assert study["total"]["excluded_by"] == {"several_sessions": 2, "shared_browser": 4}
    assert study["total"]["not_consented"] == 2


def test_the_attrition_test_is_listed_among_the_reports_tests():
    """Issue 54: the flow's differential-attrition p-value was printed but not in report["tests"]; it is listed
    there now, an association (who left, by arm, says nothing of why), with the flow table's p-value."""
    tables = Tables.from_frames(export_tables(controlled_and_at_will_log().events), "flow log")
    report = analyze(tables)
    listed = {t["name"]: t for t in report["tests"]}
    attrition = listed["flow.flow.attrition"]
    assert attrition["claim"] == "association" and "by arm" in attrition["unit"]
    assert attrition["p_value"] == pytest.approx(report["flow"]["studies"]["flow"]["attrition_test"]["p_value"])
    assert "flow.free.attrition" in listed and listed["flow.free.attrition"]["p_value"] is None   # one arm: none


def test_leaving_after_a_lost_block_with_explanations_is_shown_where_it_bites():
    """Issue 54: 9 dropouts in the explanation arms against 0 in control gave p = 0.35 over four arms, and a
    re-dealt slot made every arm finish. Now: leaving, explanation arms vs the others, and after which block."""
    log = Log()
    config = StudyConfig("bites", arms=("none", "attention"), sessions=4, games_per_session=2)
    log.study(config)
    for i in range(8):                            # eight left after losing their first block with explanations
        log.join("bites", f"left{i}", "attention", "baba", slot=i)
        log.games("bites", f"left{i}", "attention", "baba", [False, False])
        log.join("bites", f"refill{i}", "attention", "baba", slot=i, refilled=i)      # the slot dealt again
        log.games("bites", f"refill{i}", "attention", "baba", [True] * 8)
        log.finish("bites", f"refill{i}")
    for i in range(10):
        log.join("bites", f"control{i}", "none", "abab", slot=20 + i)
        log.games("bites", f"control{i}", "none", "abab", [True, False] * 4)
        log.finish("bites", f"control{i}")
    tables = Tables.from_frames(export_tables(log.events), "bites")
    frames, exclusions = build_frames(tables, frozenset())
    bites = flow(tables, frames, exclusions)["studies"]["bites"]
    split = bites["attrition_explanations"]
    assert split["table"] == {"explanations": {"dropped": 8, "finished": 8}, "none": {"dropped": 0, "finished": 10}}
    assert split["p_value"] < 0.05
    assert bites["attrition_by_last_block"]["counts"]["explanations"]["with_explanations_lost_most"] == 8
    report = analyze(tables)
    assert "flow.bites.attrition_explanations" in {t["name"] for t in report["tests"]}
    assert "Leaving, explanation arms vs the arms without" in render_html(report, {})
