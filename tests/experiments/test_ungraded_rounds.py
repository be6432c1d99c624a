"""Issue 55: the report counts the rounds no automatic grade covers, by study and arm, with their share of the
rounds (report.json `ungraded_rounds`, a table in the HTML's Data section, a note): questions the parser could
not read (rounds.parsed false: the agent answered them anyway, and the player was told), questions parsed but
ill-posed on the scene, and rounds on an imported pool (no scenes). Built through the real export and the
report from a log the way the server writes it."""
from __future__ import annotations

import json

import pytest
from test_analysis import Log

from experiments.analysis import analyze
from experiments.analysis.html import render_html
from experiments.analysis.scales import ANSWER_SCALE, RATINGS
from game.image_pool import UNGRADED

CORRECT, UNGRADABLE = ANSWER_SCALE[0], "ungradable"
# per study and arm: the rounds of each participant's one game, as (parsed, answer_grade)
ROUNDS = {
    ("ctl", "attention"): [(True, CORRECT), (False, UNGRADABLE), (True, CORRECT), (False, UNGRADABLE)],
    ("ctl", "none"): [(True, CORRECT), (True, UNGRADABLE), (True, ANSWER_SCALE[2]), (True, CORRECT)],
    ("photos", "none"): [(False, UNGRADED), (True, UNGRADED)],
}
PARTICIPANTS = 3


def logged() -> Log:
    log = Log()
    for (study, arm), rounds in ROUNDS.items():
        for p in range(PARTICIPANTS):
            log.game(study, f"{study}-{arm}-{p}", arm, 0, won=p % 2 == 0, with_explanations=arm != "none",
                     rounds=[{"explained": arm != "none", "rating": RATINGS[1], "answer_grade": grade}
                             for _, grade in rounds])
    parsed = iter(flag for (study, arm), rounds in ROUNDS.items() for _ in range(PARTICIPANTS) for flag, _ in rounds)
    for event in log.events:          # the worker's `parsed` (server/respond.py), as the question event logs it
        if event["type"] == "question":
            event["parsed"] = next(parsed)
    return log


def test_the_report_counts_ungraded_rounds_by_study_and_arm(tmp_path):
    report = analyze(logged().tables())
    json.dumps(report, allow_nan=False)
    ungraded = report["ungraded_rounds"]
    attention = ungraded["studies"]["ctl"]["arms"]["attention"]
    assert attention == {"rounds": 12, "graded": 6, "ungraded": 6, "not_parsed": 6, "ill_posed": 0,
                         "no_ground_truth": 0, "share_ungraded": 0.5, "share_not_parsed": 0.5}
    none = ungraded["studies"]["ctl"]["arms"]["none"]
    assert (none["not_parsed"], none["ill_posed"], none["ungraded"], none["share_not_parsed"]) == (0, 3, 3, 0.0)
    assert ungraded["studies"]["ctl"]["overall"]["not_parsed"] == 6
    assert ungraded["studies"]["ctl"]["overall"]["share_not_parsed"] == pytest.approx(6 / 24)
    # an imported pool's rounds are ungraded for want of scenes: whether the parser read them says nothing
    photos = ungraded["studies"]["photos"]["arms"]["none"]
    assert (photos["no_ground_truth"], photos["not_parsed"], photos["ungraded"]) == (6, 0, 6)
    overall = ungraded["overall"]
    assert (overall["rounds"], overall["not_parsed"], overall["ungraded"]) == (30, 6, 15)
    assert any("6 of 30 rounds (20.0%) asked a question the parser could not read" in n for n in report["notes"])
    assert "ungraded_rounds" in report["methods"]

    page = render_html(report, [])
    table = page[page.index('id="ungraded-rounds"'):]
    table = table[:table.index("</table>")]
    assert "question not read by the parser" in table
    assert "<td>ctl</td><td>attention</td>" in table and "6 (50.0%)" in table
    assert "<td>photos</td><td>none</td>" in table


def test_a_log_without_the_parsed_flag_counts_none_as_not_parsed():
    log = logged()
    for event in log.events:
        event.pop("parsed", None)
    ungraded = analyze(log.tables())["ungraded_rounds"]
    assert ungraded["overall"]["not_parsed"] == 0 and ungraded["overall"]["ungraded"] == 15
