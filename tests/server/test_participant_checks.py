"""Participant checks through the real socket (game/checks.py, server/play.py): the comprehension check
after the instructions and what a second failure does as configured, the colour screen, attention checks
between games, demographics in the questionnaire; every result an event and a column of the export, a
reconnect resuming every check, and bad check configs refused by the admin form with one line."""
from __future__ import annotations

import json

import pytest

from game.checks import PREFER_NOT
from game.export import tables

from socket_player import Player, joined

RULES = [{"key": "guesses", "text": "How many guesses a game?", "options": ["One", "Three"], "answer": "One"},
         {"key": "about", "text": "Whom does the answer describe?", "options": ["The secret image", "All images"],
          "answer": "The secret image"}]
RIGHT = {"guesses": "One", "about": "The secret image"}
WRONG = {"guesses": "Three", "about": "The secret image"}
BASE = {"kind": "controlled", "arms": ["none"], "sessions": 4, "games_per_session": 1, "choose_arm": True,
        "settings": {"min_questions": 0}, "completion_code": "CODE-CHK"}
SCREEN_OUT = {"code": "SCREENED-1", "url": "https://example.org/screened?cc=SCREENED-1"}
STUDIES = {
    "chk": {"comprehension": {"questions": RULES}, "colour_screen": {"plates": [12, 8, 5], "min_correct": 2},
            "attention": {"every": 2}, "demographics": {}},
    "chk-again": {"comprehension": {"questions": RULES, "on_fail": "instructions"}},
    "chk-out": {"comprehension": {"questions": RULES, "on_fail": "screen_out"},
                "colour_screen": {"plates": [12, 8], "on_fail": "screen_out"}, "screen_out": SCREEN_OUT},
}


@pytest.fixture(scope="module")
def studies(app):
    http = app.test_client()
    for study_id, checks in STUDIES.items():
        config = {"study_id": study_id, **BASE, "checks": checks}
        assert http.post("/admin/studies?token=test-admin", data={"config": json.dumps(config)}).status_code == 302
    return app


def export(app, pid: str) -> dict:
    participants = tables(app.extensions["exag"].store.events())["participants"]
    return participants[participants["participant"] == f"pid:{pid}"].iloc[0].to_dict()


def events(app, pid: str) -> list[dict]:
    return [e for e in app.extensions["exag"].store.events() if e.get("participant") == f"pid:{pid}"]


def to_checks(connect, study: str, pid: str) -> Player:
    player = joined(connect, study, pid, arm="none")
    player.ok("consent", {"agree": True})
    assert player.state["stage"] == "instructions"
    assert player.state["instructions"]["comprehension"] == {"failures": 0}
    player.ok("begin", {})
    assert player.state["stage"] == "comprehension"
    return player


def finish_game(player: Player) -> dict:
    gid = player.game["game_id"]
    player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})
    return player.ok("next_game", {"game_id": gid})


def resumed(connect, study: str, pid: str, before: dict) -> Player:
    """A reconnect (a reload): the same view, rebuilt from the participant record."""
    again = joined(connect, study, pid)
    assert again.state == before
    return again


def test_every_check_in_a_participation_records_its_result(studies, connect):
    app = studies
    player = to_checks(connect, "chk", "ann")
    check = player.state["check"]
    assert [q["key"] for q in check["questions"]] == ["guesses", "about"]
    assert all(set(q) == {"key", "text", "options"} for q in check["questions"])        # never the answer
    player.refused("comprehension", {"answers": {"guesses": "One"}}, "please answer")    # not an attempt
    player.refused("comprehension", {"answers": {**RIGHT, "guesses": "Five"}}, "please answer")
    player.refused("begin", {}, "cannot")
    player.ok("comprehension", {"answers": WRONG})
    assert player.state["stage"] == "instructions"                                      # read again, answer again
    assert player.state["instructions"]["comprehension"] == {"failures": 1}
    player.ok("begin", {})
    player = resumed(connect, "chk", "ann", player.state)
    player.ok("comprehension", {"answers": WRONG})     # the second failure: flagged, and on ("flag")
    assert player.state["stage"] == "colour_screen"

    plates = player.state["check"]["plates"]
    assert [p["key"] for p in plates] == ["p0", "p1", "p2"] and all(set(p) == {"key", "dots"} for p in plates)
    player = resumed(connect, "chk", "ann", player.state)      # the same plates, dot for dot
    player.refused("colour_screen", {"answers": {"p0": "12"}}, "every plate")
    player.ok("colour_screen", {"answers": {"p0": "12", "p1": "3", "p2": " 5"}})        # 2 of 3: the rule's minimum
    assert player.state["stage"] == "game" and player.state["participant"]["game_number"] == 0

    finish_game(player)
    assert player.state["stage"] == "game"
    finish_game(player)
    assert player.state["stage"] == "attention_check"          # after every 2 games
    item = player.state["check"]
    assert set(item) == {"number", "key", "text", "options"}
    player = resumed(connect, "chk", "ann", player.state)
    player.refused("attention_check", {"answer": "not an option"}, "please answer")
    wrong = next(o for o in item["options"] if o not in item["text"])
    player.ok("attention_check", {"answer": wrong})
    assert player.state["stage"] == "game" and player.state["participant"]["game_number"] == 2
    finish_game(player)
    finish_game(player)
    assert player.state["stage"] == "questionnaire"            # no check after the last game

    about = player.state["demographics"]
    assert [d["key"] for d in about] == ["age", "gender", "education", "english", "ai_use"]
    answers = {item["key"]: item["options"][0] if item["type"] == "scale" else "" for item in player.state["questionnaire"]}
    player.refused("questionnaire", {"answers": answers}, "prefer not to say")
    player.refused("questionnaire", {"answers": {**answers, "age": "130"}}, "your age")
    demographics = {d["key"]: PREFER_NOT for d in about} | {"age": "25-34"}
    player.ok("questionnaire", {"answers": {**answers, **demographics}})
    assert player.state["stage"] == "done" and player.state["done"]["completion_code"] == "CODE-CHK"

    logged = events(app, "ann")
    kinds = [e["type"] for e in logged]
    assert kinds.count("comprehension") == 2 and kinds.count("check_shown") == 4
    attempts = [e for e in logged if e["type"] == "comprehension"]
    assert [(e["passed"], e["failures"], e["flagged"], e["then"]) for e in attempts] == \
        [(False, 1, False, "instructions"), (False, 2, True, "continue")]
    assert attempts[0]["wrong"] == ["guesses"]
    colour = next(e for e in logged if e["type"] == "colour_screen")
    assert (colour["correct"], colour["passed"], colour["rule"]) == (2, True, "at least 2 of 3 plates read right")
    attention = next(e for e in logged if e["type"] == "attention_check")
    assert (attention["passed"], attention["after_games"], attention["answer"]) == (False, 2, wrong)
    assert next(e for e in logged if e["type"] == "demographics")["answers"] == demographics
    assert set(next(e for e in logged if e["type"] == "questionnaire")["answers"]) == set(answers)

    row = export(app, "ann")
    assert (row["comprehension_failures"], row["comprehension_passed"], row["comprehension_failed"]) == (2, False, True)
    assert (row["colour_screen_correct"], row["colour_screen_passed"], row["colour_screen_failed"]) == (2, True, False)
    assert row["colour_screen_rule"] == "at least 2 of 3 plates read right"
    assert (row["attention_passed"], row["attention_total"], row["attention_failed"]) == (0, 1, True)
    assert row["demo_age"] == "25-34" and row["demo_gender"] == PREFER_NOT
    assert {"comprehension_failed", "attention_failed"} <= set(row["flags"].split("+"))
    assert "colour_screen_failed" not in row["flags"]


def test_on_fail_instructions_sends_back_until_passed(studies, connect):
    player = to_checks(connect, "chk-again", "bea")
    for failures in (1, 2, 3):
        player.ok("comprehension", {"answers": WRONG})
        assert player.state["stage"] == "instructions"
        assert player.state["instructions"]["comprehension"] == {"failures": failures}
        player.ok("begin", {})
    player.ok("comprehension", {"answers": RIGHT})
    assert player.state["stage"] == "game"            # no colour screen configured: the first game
    row = export(studies, "bea")
    assert (row["comprehension_failures"], row["comprehension_passed"], row["comprehension_failed"]) == (3, True, True)
    assert "comprehension_failed" in row["flags"].split("+")


def test_screen_out_ends_the_participation_with_the_platform_code(studies, connect):
    player = to_checks(connect, "chk-out", "cat")
    player.ok("comprehension", {"answers": WRONG})
    player.ok("begin", {})
    player.ok("comprehension", {"answers": WRONG})
    assert player.state["stage"] == "screened_out" and player.state["done"] is None
    assert player.state["screened_out"] == {"completion_code": "SCREENED-1", "redirect_url": SCREEN_OUT["url"]}
    for event, payload in (("begin", {}), ("comprehension", {"answers": RIGHT}), ("consent", {"agree": True})):
        player.refused(event, payload, "cannot")
    resumed(connect, "chk-out", "cat", player.state)

    passes = to_checks(connect, "chk-out", "dan")     # right at once, then fails the colour screen
    passes.ok("comprehension", {"answers": RIGHT})
    assert passes.state["stage"] == "colour_screen"
    passes.ok("colour_screen", {"answers": {"p0": "12", "p1": ""}})      # 1 of 2; all must be right
    assert passes.state["stage"] == "screened_out"

    cat, dan = export(studies, "cat"), export(studies, "dan")
    assert cat["screened_out"] == "comprehension" and cat["comprehension_failed"]
    assert dan["screened_out"] == "colour_screen" and dan["comprehension_passed"] and dan["colour_screen_failed"]
    assert "colour_screen_failed" in dan["flags"].split("+") and "comprehension_failed" not in dan["flags"]
    monitor = studies.test_client().get("/admin/monitor.json?token=test-admin").get_json()     # the console's flags
    shown = {p["pid"]: p["quality"]["flags"] for s in monitor for p in s["participants"] if s["study"]["study_id"] == "chk-out"}
    assert shown == {"pid:cat": "comprehension_failed", "pid:dan": "colour_screen_failed"}


def test_studies_without_checks_are_unchanged(app, connect):
    player = joined(connect, "ctl", "eve", arm="none")
    assert player.state["check"] is None and player.state["demographics"] == []
    assert "comprehension" not in player.state["instructions"]
    player.ok("consent", {"agree": True})
    player.ok("begin", {})
    assert player.state["stage"] == "game"


@pytest.mark.parametrize("checks, message", [
    ({"comprehension": {"questions": [{k: v for k, v in RULES[0].items() if k != "answer"}]}}, "no right answer"),
    ({"comprehension": {"questions": [{**RULES[0], "answer": "Two"}]}}, "not one of its options"),
    ({"comprehension": {"on_fail": "screen_out"}}, "give checks.screen_out"),
])
def test_bad_checks_are_refused_by_the_admin_form(app, checks, message):
    config = {"study_id": "bad-checks", **BASE, "checks": checks}
    answer = app.test_client().post("/admin/studies?token=test-admin", data={"config": json.dumps(config)})
    assert answer.status_code == 400 and message in answer.get_data(as_text=True)
