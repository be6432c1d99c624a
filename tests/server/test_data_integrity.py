"""Issue 10, findings 2, 5, 6 and 10 through the real server: what a participant sends cannot make the
study unexportable, completion needs play and leaves quality flags, points never go below zero, and the
admin form refuses studies that cannot run."""
from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from server_setup import server_config, write_studies
from socket_player import Player, socket_client, started

from game.settings import RATINGS
from server.app import create_app

FORMULA = '=IF("is there a red cube?","no")'


def finish_games(player: Player, questions: int, rating: str = RATINGS[0]) -> None:
    """Plays the participant's remaining games (each: `questions` rounds, then a guess) to the questionnaire."""
    while player.state["stage"] == "game":
        gid = player.game["game_id"]
        for _ in range(questions):
            player.ok("ask", {"game_id": gid, "question": "is there a red cube?"})
            player.ok("rate", {"game_id": gid, "rating": rating})
        player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})
        player.ok("next_game", {"game_id": gid})


def answers_for(state: dict, text) -> dict:
    return {item["key"]: item["options"][0] if item["type"] == "scale" else text for item in state["questionnaire"]}


def test_invalid_unicode_and_numbers_for_text_are_refused_at_the_door(app, connect):
    player = started(connect, "ctl", "unicode-1", "none")
    gid = player.game["game_id"]
    player.refused("ask", {"game_id": gid, "question": "is there a \ud800 cube?"}, "invalid Unicode")
    player.refused("ask", {"game_id": gid, "question": "is there a red\x00 cube?"}, "NUL")
    assert player.game["rounds"] == []
    finish_games(player, 1)
    assert player.state["stage"] == "questionnaire"
    for bad in (float("nan"), -1e308, float("inf"), 3):
        player.refused("questionnaire", {"answers": answers_for(player.state, bad)}, "must be text")
    player.refused("questionnaire", {"answers": answers_for(player.state, "fine \udfff")}, "invalid Unicode")
    player.ok("questionnaire", {"answers": answers_for(player.state, "fine")})


def test_export_survives_anything_already_stored(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path):
    """A lone surrogate stored by the old server made every export format exit 2 and /admin/export.zip
    answer 500; formulas landed verbatim in rounds.csv; NaN was written into events.jsonl."""
    config = server_config(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path / "data", write_studies(tmp_path / "studies"))
    app = create_app(config)
    try:
        player = started(lambda: socket_client(app), "ctl", "export-1", "none")
        gid = player.game["game_id"]
        player.ok("ask", {"game_id": gid, "question": FORMULA})      # valid text: stored as typed
        player.ok("rate", {"game_id": gid, "rating": RATINGS[2]})
        player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})
        store = app.extensions["exag"].store
        # what an older server let in, or anything else that may be in a study's log
        store.log({"type": "question", "study": "ctl", "participant": "pid:old", "game": "old-game", "round": 0,
                   "question": "is there a \ud800 cube?", "answer": "yes", "truth": "no", "probability": float("nan")})
        store.log({"type": "questionnaire", "study": "ctl", "participant": "pid:old", "answers": {"strategy": float("-inf")}})
        store.log({"type": "question", "study": "ctl", "participant": "pid:old", "game": "broken"})   # no round
        store.log({"type": "game_start", "study": "ctl", "participant": "pid:old", "game": "g2", "secret": 9, "images": [1]})
        assert app.test_client().get("/admin/export.zip?format=parquet&token=test-admin").status_code == 200
    finally:
        app.extensions["exag"].close()

    for fmt, read in (("csv", pd.read_csv), ("jsonl", lambda p: pd.read_json(p, lines=True)), ("parquet", pd.read_parquet)):
        out = tmp_path / f"export-{fmt}"
        result = subprocess.run([sys.executable, "-m", "exag_cli", "export", "--format", fmt, "--out", str(out),
                                 "--data-dir", str(tmp_path / "data")], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        rounds = read(out / f"rounds.{fmt}").set_index("game_id")
        assert rounds.loc[gid, "rating"] == RATINGS[2]                   # the real game is all there
        shown = rounds.loc[gid, "question"]
        assert shown == ("'" + FORMULA if fmt == "csv" else FORMULA)    # neutralised in CSV only
        assert rounds.loc["old-game", "question"] == "is there a \ufffd cube?"
        problems = read(out / f"problems.{fmt}")
        assert set(problems["type"]) == {"question", "game_start"} and len(problems) == 2
        lines = (out / "events.jsonl").read_text(encoding="utf-8").splitlines()

        def strict(constant):
            raise ValueError(f"invalid JSON constant {constant}")

        events = [json.loads(line, parse_constant=strict) for line in lines]    # strict JSON, every line
        assert any(e.get("answers") == {"strategy": None} for e in events)
    csv_rounds = (tmp_path / "export-csv" / "rounds.csv").read_text(encoding="utf-8")
    assert ",=IF" not in csv_rounds and '"\'=IF(' in csv_rounds


def test_guessing_needs_the_studys_minimum_of_questions(app, connect):
    player = started(connect, "ctl", "min-q", "none")
    gid = player.game["game_id"]
    player.refused("guess", {"game_id": gid, "image": player.game["images"][0]}, "ask a question before you guess")
    assert player.state["instructions"]["setting"]["min_questions"] == 1
    player.ok("ask", {"game_id": gid, "question": "is there a red cube?"})
    player.ok("rate", {"game_id": gid, "rating": RATINGS[0]})
    player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})


def test_points_never_go_below_zero_through_the_server(app, connect):
    player = started(connect, "ctl", "broke", "none")
    gid = player.game["game_id"]
    for _ in range(10):
        player.ok("ask", {"game_id": gid, "question": "is there a red cube?"})
        player.ok("rate", {"game_id": gid, "rating": RATINGS[0]})
    assert player.game["points"] == 0
    player.refused("ask", {"game_id": gid, "question": "is there a blue cube?"}, "not enough points")
    assert player.game["points"] == 0 and len(player.game["rounds"]) == 10


def test_quality_flags_mark_participants_who_did_not_really_play(app, connect):
    """A fabricated id reached the completion code of a controlled study in seconds with no question:
    with the paper's "guess any time" (min_questions 0) it still can, but the export and the monitor flag it."""
    rusher = started(lambda: connect("browser-rusher"), "quick", "rusher")
    finish_games(rusher, 0)
    rusher.ok("questionnaire", {"answers": answers_for(rusher.state, "")})
    assert rusher.state["stage"] == "done"
    liner = started(lambda: connect("browser-straight-liner"), "ctl", "straight-liner", "none")
    finish_games(liner, 2, rating=RATINGS[4])
    honest = started(lambda: connect("browser-honest"), "ctl", "honest", "none")
    for n in range(4):
        gid = honest.game["game_id"]
        for rating in (RATINGS[n], RATINGS[n + 1]):
            honest.ok("ask", {"game_id": gid, "question": "is there a red cube?"})
            honest.ok("rate", {"game_id": gid, "rating": rating})
        # honest games take time; recorded game times are what the flag reads
        store = app.extensions["exag"].store
        state, record = store.game(gid)
        record["started"] -= 60
        store.commit(game=(state, record))
        honest.ok("guess", {"game_id": gid, "image": honest.game["images"][0]})
        honest.ok("next_game", {"game_id": gid})

    from game.export import tables

    participants = tables(list(app.extensions["exag"].store.events()))["participants"].set_index("participant")
    assert participants.loc["pid:rusher", "flags"] == "no_questions+fast_games"
    assert participants.loc["pid:rusher", "games_without_questions"] == 4
    assert participants.loc["pid:straight-liner", "straight_lined"]
    assert "straight_lined" in participants.loc["pid:straight-liner", "flags"]
    assert participants.loc["pid:honest", "flags"] == ""
    monitor = app.test_client().get("/admin/monitor.json?token=test-admin").get_json()
    shown = {p["pid"]: p["quality"] for s in monitor for p in s["participants"]}
    assert shown["pid:rusher"]["flags"] == "no_questions+fast_games"
    assert shown["pid:honest"]["flags"] == ""
    assert b"quality flags" in app.test_client().get("/admin?token=test-admin").data


@pytest.mark.parametrize("change, message", [
    ({"settings": {"difficulty": "nightmare"}}, "unknown difficulty"),
    ({"settings": {"images": 5000}}, "pool has 20 images"),
    ({"settings": {"images": "5"}}, "images must be a whole number"),
    ({"kind": "at-will", "sessions": 1, "settings": {"for_the_secret": ["telepathy"]}}, "unknown explainer"),
    ({"arms": ["attention+magic"]}, "unknown arm"),
    ({"sessions": 2}, "at least 4 sessions"),
])
def test_the_admin_form_refuses_studies_that_cannot_run(app, change, message):
    http = app.test_client()
    config = {"study_id": "cannot-run", "kind": "controlled", "arms": ["none", "both"], "sessions": 4, **change}
    answer = http.post("/admin/studies?token=test-admin", data={"config": json.dumps(config)})
    assert answer.status_code == 400 and message in answer.get_data(as_text=True), answer.get_data(as_text=True)[-800:]
    assert app.extensions["exag"].store.study("cannot-run") is None


def test_study_files_get_the_same_checks(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path):
    studies = write_studies(tmp_path / "studies")
    (studies / "bad.json").write_text(json.dumps({"study_id": "bad", "kind": "controlled", "settings": {"images": 5000}}))
    with pytest.raises(ValueError, match="bad.json: settings.images"):
        create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path / "data", studies))
