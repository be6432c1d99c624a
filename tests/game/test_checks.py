"""Participant checks as study data (game/checks.py): parsing with one clear line for bad input, grading,
the plates' numbers, and views that never carry a right answer."""
from __future__ import annotations

import json

import numpy as np
import pytest

from game.checks import (CHECK_FLAGS, DEFAULT_COMPREHENSION, PALETTE, PLATE_SIZE, PREFER_NOT, _strokes,
                         attention_view, colour_screen_view, comprehension_view, grade_attention,
                         grade_colour_screen, grade_comprehension, parse_checks, plate_dots)
from game.quality import FLAGS
from game.seeding import seeded_rng
from game.study import QUESTIONNAIRE, StudyConfig

QUESTION = {"key": "cost", "text": "What does a question cost?", "options": ["1 point", "5 points"], "answer": "1 point"}


def study(**checks) -> StudyConfig:
    return StudyConfig("s", kind="at-will", sessions=1, games_per_session=4, checks=checks)


def test_no_checks_by_default_and_every_part_has_defaults():
    assert StudyConfig("plain").checks == {}
    assert parse_checks({}) == parse_checks({})
    none = parse_checks({})
    assert none.comprehension is none.colour_screen is none.attention is None and none.demographics == ()
    checks = parse_checks({"comprehension": {}, "colour_screen": {}, "attention": {"every": 2}, "demographics": {}})
    assert checks.comprehension.questions == DEFAULT_COMPREHENSION and checks.comprehension.attempts == 2
    assert checks.colour_screen.min_correct == len(checks.colour_screen.plates)
    assert len(checks.attention.items) >= 2
    assert all(PREFER_NOT in d.options for d in checks.demographics)
    assert set(CHECK_FLAGS) <= set(FLAGS)           # pre-registrations and `--exclude` know them


@pytest.mark.parametrize("checks, message", [
    ({"comprehension": {"questions": [{k: v for k, v in QUESTION.items() if k != "answer"}]}}, "no right answer"),
    ({"comprehension": {"questions": [{**QUESTION, "answer": "2 points"}]}}, "is not one of its options"),
    ({"comprehension": {"questions": [QUESTION, QUESTION]}}, "appears twice"),
    ({"comprehension": {"on_fail": "kick"}}, "checks.comprehension.on_fail"),
    ({"comprehension": {"on_fail": "screen_out"}}, "give checks.screen_out"),
    ({"colour_screen": {"on_fail": "instructions"}}, "checks.colour_screen.on_fail"),
    ({"colour_screen": {"plates": [12, 100]}}, "plates[1]"),
    ({"colour_screen": {"plates": [12, 8], "min_correct": 3}}, "min_correct"),
    ({"attention": {}}, "every"),
    ({"attention": {"every": 4}}, "would show none"),
    ({"demographics": {"items": [{"key": "trust", "text": "Trust?", "options": ["a", "b"]}]}}, "questionnaire item"),
    ({"demographics": {"items": [{"key": "age", "text": "Age", "type": "text", "options": ["a", "b"]}]}}, "no options"),
    ({"screen_out": {"url": "javascript:alert(1)"}}, "http(s) link"),
    ({"colour": {}}, "unknown field(s) colour"),
])
def test_bad_checks_are_refused_at_creation_with_one_line(checks, message):
    with pytest.raises(ValueError) as refused:
        study(**checks)
    assert message in str(refused.value) and "\n" not in str(refused.value)
    with pytest.raises(ValueError, match="checks"):       # a study file reads the same way (load_study, the admin form)
        StudyConfig.from_dict(json.loads(json.dumps({"study_id": "s", "kind": "at-will", "sessions": 1,
                                                     "games_per_session": 4, "checks": checks})))


def test_comprehension_fails_twice_then_as_configured():
    for on_fail, then in (("flag", "continue"), ("instructions", "instructions"), ("screen_out", "screen_out")):
        check = parse_checks({"comprehension": {"questions": [QUESTION], "on_fail": on_fail},
                              "screen_out": {"code": "OUT"}}).comprehension
        first = grade_comprehension(check, {"cost": "5 points"}, 0)
        assert (first.passed, first.wrong, first.failures, first.flagged, first.then) == \
            (False, ("cost",), 1, False, "instructions")           # read the rules again, answer again
        second = grade_comprehension(check, {"cost": "5 points"}, first.failures)
        assert (second.failures, second.flagged, second.then) == (2, True, then)
        late = grade_comprehension(check, {"cost": "1 point"}, second.failures)
        assert (late.passed, late.flagged, late.then) == (True, True, "continue")   # passing later keeps the flag
    right = grade_comprehension(check, {"cost": "1 point"}, 0)
    assert (right.passed, right.failures, right.flagged, right.then) == (True, 0, False, "continue")


def test_unanswered_or_unknown_answers_are_no_attempt():
    check = parse_checks({"comprehension": {"questions": [QUESTION]}}).comprehension
    for answers in ({}, {"cost": "3 points"}, {"cost": "1 point", "other": "x"}):
        with pytest.raises(ValueError):
            grade_comprehension(check, answers, 0)


def test_attention_checks_come_between_games_and_take_turns():
    attention = parse_checks({"attention": {"every": 2, "items": [QUESTION, {**QUESTION, "key": "b"}]}},
                             games=6).attention
    assert [n for n in range(7) if attention.due(n, 6)] == [2, 4]         # never before the first or after the last
    assert [attention.item(n).key for n in range(3)] == ["cost", "b", "cost"]
    assert grade_attention(attention.item(0), "1 point") and not grade_attention(attention.item(0), "5 points")
    with pytest.raises(ValueError):
        grade_attention(attention.item(0), "7 points")


def test_colour_screen_rule():
    screen = parse_checks({"colour_screen": {"plates": [12, 8, 5], "min_correct": 2, "on_fail": "screen_out"},
                           "screen_out": {"url": "https://example.org/out"}}).colour_screen
    assert screen.rule == "at least 2 of 3 plates read right"
    result = grade_colour_screen(screen, {"p0": " 12 ", "p1": "3", "p2": "5"})
    assert (result.correct, result.passed, result.then) == (2, True, "continue")
    result = grade_colour_screen(screen, {"p0": "", "p1": "eight", "p2": "5"})
    assert (result.correct, result.passed, result.then) == (1, False, "screen_out")
    with pytest.raises(ValueError, match="every plate"):
        grade_colour_screen(screen, {"p0": "12"})


def test_a_plate_draws_its_number_in_the_figure_colours():
    for number in (0, 1, 7, 12, 29, 74, 88):
        dots = np.array(plate_dots(number, seeded_rng(0, "plate", number))).reshape(-1, 4)
        assert 500 < len(dots) < 1200 and dots[:, :3].min() >= 0 and dots[:, :2].max() <= PLATE_SIZE
        assert set(dots[:, 3]) <= set(range(len(PALETTE)))
        figure = dots[dots[:, 3] < 4, :2] / (PLATE_SIZE / 2) - 1
        # every figure dot lies on one of the number's strokes, and the strokes are covered by dots
        on_stroke = np.zeros(len(figure), bool)
        for a, b in _strokes(number):
            t = np.clip((figure - a) @ (b - a) / ((b - a) @ (b - a)), 0, 1)
            on_stroke |= np.hypot(*(figure - (a + t[:, None] * (b - a))).T) < 0.12
        assert on_stroke.all() and len(figure) > 25 * len(str(number))
    assert plate_dots(8, seeded_rng(0, "x")) == plate_dots(8, seeded_rng(0, "x"))   # rebuildable after a reload
    assert plate_dots(8, seeded_rng(0, "x")) != plate_dots(3, seeded_rng(0, "x"))


def test_views_never_carry_a_right_answer():
    checks = parse_checks({"comprehension": {}, "colour_screen": {}, "attention": {"every": 1}, "demographics": {}},
                          reserved_keys=frozenset(item["key"] for item in QUESTIONNAIRE))
    views = [comprehension_view(checks.comprehension, 1), attention_view(checks.attention, 0),
             colour_screen_view(checks.colour_screen, "s"), [d.public() for d in checks.demographics]]
    assert "answer" not in keys_of(views)
    assert all(set(p) == {"key", "dots"} for p in views[2]["plates"])        # dots, not the number they show
    assert colour_screen_view(checks.colour_screen, "s") == views[2]


def keys_of(value) -> set[str]:
    if isinstance(value, dict):
        return set(value).union(*(keys_of(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(keys_of(v) for v in value))
    return set()
