"""Pilots on the real study (issue 55: `exag bot --pilot` joins as prolific:bot-..., the researcher's own tries as
pid:test-...) are no data: they take no slot of the study's randomization, so real participants are dealt the
sequence as if no pilot had come (no refill, no late first holder), and the analysis leaves them out, saying so."""
from __future__ import annotations

import json

import pytest

from experiments.analysis.data import Tables
from game.export import tables
from game.study import is_pilot, study_slot

from socket_player import Player, joined

STUDY = {"study_id": "piloted", "kind": "controlled", "arms": ["none", "attention"], "sessions": 4,
         "games_per_session": 1, "settings": {"min_questions": 0}, "completion_code": "CODE-P"}


@pytest.fixture(scope="module")
def piloted(app):
    assert app.test_client().post("/admin/studies?token=test-admin",
                                  data={"config": json.dumps(STUDY)}).status_code == 302
    return app


def joins(app) -> dict[str, dict]:
    return {e["participant"]: e for e in app.extensions["exag"].store.events()
            if e["type"] == "join" and e["study"] == "piloted"}


def test_pilots_take_no_slot_and_play_the_studys_arms(piloted, connect):
    for pid in ("test-me", "bot-1a2b"):
        joined(connect, "piloted", pid).ok("consent", {"agree": True})
    bot = Player(connect("browser-prolific-bot"))
    bot.ok("join", {"study": "piloted", "PROLIFIC_PID": "bot-9f9f", "STUDY_ID": "x", "SESSION_ID": "s1"})
    for pid in ("ann", "bea"):
        joined(connect, "piloted", pid)
    seen = joins(piloted)
    study = piloted.extensions["exag"].store.study("piloted")[0]
    pilots = [p for p in seen if is_pilot(p)]
    assert sorted(pilots) == ["pid:bot-1a2b", "pid:test-me", "prolific:bot-9f9f:s1"]
    assert all(seen[p]["slot"] is None and seen[p]["assigned_by"] == "pilot" for p in pilots)
    assert [seen[p]["arm"] for p in ("pid:test-me", "pid:bot-1a2b", "prolific:bot-9f9f:s1")] == \
        [study_slot(study, k).arm for k in range(3)]                  # the study's own sequence, dealt to pilots
    assert (seen["pid:ann"]["slot"], seen["pid:bea"]["slot"]) == (0, 1)  # as if no pilot had come
    assert seen["pid:ann"]["arm"] == study_slot(study, 0).arm and seen["pid:ann"]["refilled_slot"] is None


def test_the_analysis_leaves_pilots_out_and_says_so(piloted, connect):
    player = joined(connect, "piloted", "test-player")
    player.ok("consent", {"agree": True})
    player.ok("begin", {})
    gid = player.game["game_id"]
    player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})
    exported = Tables.from_frames(tables(piloted.extensions["exag"].store.events()), "log").only(["piloted"])
    assert "pid:test-player" in set(exported.games["participant"])
    kept = exported.without_pilots()
    assert not any(is_pilot(p) for p in kept.participants["participant"])
    assert not any(is_pilot(p) for p in kept.games["participant"]) and gid not in set(kept.rounds.get("game_id", []))
    assert any("pilot participations left out (1 game)" in note for note in kept.notes)
    assert {"pid:ann", "pid:bea"} <= set(kept.participants["participant"])
