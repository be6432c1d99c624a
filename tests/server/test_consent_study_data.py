"""The consent form and the questionnaire as study data, through the real socket (issue 55): the page is sent the
study's own information sheet; agreeing records which text was agreed to; declining ends the participation at once
and frees its slot; the study's own questionnaire is what is asked, checked and exported; the export keeps the
texts participants were shown."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from experiments.analysis.data import Tables
from experiments.analysis.flow import flow
from experiments.analysis.frames import build_frames
from game.consent_form import parse_consent
from game.export import tables

from socket_player import joined

CONSENT = {"title": "Images and explanations", "researcher": "Dr A. Researcher, University of Y",
           "contact": "a.researcher@y.example.ac.uk", "ethics": "Y ethics committee, ref. CS-2026-123",
           "duration_minutes": 20, "payment": "£3", "information": ["You play a game.", "We record your moves."],
           "statements": ["I am 18 or older."], "decline": "No, thanks",
           "declined_message": "Please return the study on the platform.", "declined_code": "NOCONSENT",
           "declined_url": "https://app.prolific.com/submissions/complete?cc=NOCONSENT"}
QUESTIONNAIRE = [{"key": "effort", "text": "How hard did you try?", "type": "choice", "options": ["Hard", "Not hard"]},
                 {"key": "strategy", "text": "What did you ask?", "type": "text", "required": True},
                 {"key": "comments", "text": "Anything else?", "type": "text"}]
STUDY = {"study_id": "texts", "kind": "controlled", "arms": ["none", "attention"], "sessions": 4, "games_per_session": 1,
         "settings": {"min_questions": 0}, "completion_code": "CODE-T", "consent": CONSENT, "questionnaire": QUESTIONNAIRE}


@pytest.fixture(scope="module")
def texts(app):
    http = app.test_client()
    assert http.post("/admin/studies?token=test-admin", data={"config": json.dumps(STUDY)}).status_code == 302
    return app


def logged(app, pid: str) -> list[dict]:
    return [e for e in app.extensions["exag"].store.events() if e.get("participant") == f"pid:{pid}"]


def test_the_page_is_sent_the_studys_consent_form_and_agreeing_records_which_text(texts, connect):
    player = joined(connect, "texts", "ann")
    form = player.state["consent"]
    assert player.state["stage"] == "consent"
    assert (form["researcher"], form["contact"], form["ethics"]) == (CONSENT["researcher"], CONSENT["contact"],
                                                                   CONSENT["ethics"])
    assert (form["duration_minutes"], form["payment"], form["statements"]) == (20, "£3", ["I am 18 or older."])
    assert form["information"] == CONSENT["information"] and form["decline"] == "No, thanks"
    player.ok("consent", {"agree": True})
    assert player.state["stage"] == "instructions" and player.state["consent"] is None   # shown where it is asked
    consent = next(e for e in logged(texts, "ann") if e["type"] == "consent")
    assert consent["consent_sha256"] == parse_consent(CONSENT).sha256


def test_declining_ends_the_participation_frees_its_slot_and_keeps_only_the_decision(texts, connect):
    player = joined(connect, "texts", "bea")
    slot = next(e for e in logged(texts, "bea") if e["type"] == "join")["slot"]
    player.ok("consent", {"agree": False})
    assert player.state["stage"] == "declined"
    assert player.state["consent"]["declined_code"] == "NOCONSENT"
    assert player.state["consent"]["declined_url"] == CONSENT["declined_url"]
    for event, payload in (("consent", {"agree": True}), ("begin", {})):
        player.refused(event, payload, "cannot")
    again = joined(connect, "texts", "bea")             # a reload shows the decline, nothing else
    assert again.state["stage"] == "declined"
    assert [e["type"] for e in logged(texts, "bea")] == ["join", "decline", "rejoin"]
    decline = next(e for e in logged(texts, "bea") if e["type"] == "decline")
    assert decline["consent_sha256"] == parse_consent(CONSENT).sha256

    joined(connect, "texts", "cat")                      # the next arrival takes the declined slot
    assert next(e for e in logged(texts, "cat") if e["type"] == "join")["slot"] == slot

    exported = tables(texts.extensions["exag"].store.events())
    row = exported["participants"].set_index("participant").loc["pid:bea"]
    assert row["declined"] > 0 and pd.isna(row["consented"])
    study_row = exported["studies"].set_index("study").loc["texts"]
    assert json.loads(study_row["consent_form"]) == parse_consent(CONSENT).public()
    assert [item["key"] for item in json.loads(study_row["questionnaire"])] == ["effort", "strategy", "comments"]


def test_the_flow_table_counts_declines_among_the_not_consented(texts, connect):
    joined(connect, "texts", "dan").ok("consent", {"agree": False})
    data = Tables.from_frames(tables(texts.extensions["exag"].store.events()), "server log")
    frames, exclusions = build_frames(data)
    study = flow(data, frames, exclusions)["studies"]["texts"]
    assert study["total"]["declined"] == 2 and study["total"]["not_consented"] >= 2 and study["adds_up"]


def test_the_studys_own_questionnaire_is_asked_checked_and_exported(texts, connect):
    player = joined(connect, "texts", "eve")
    player.ok("consent", {"agree": True})
    player.ok("begin", {})
    for _ in range(4):
        gid = player.game["game_id"]
        player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})
        player.ok("next_game", {"game_id": gid})
    assert player.state["stage"] == "questionnaire"
    assert player.state["questionnaire"] == [
        {"key": "effort", "text": "How hard did you try?", "type": "choice", "options": ["Hard", "Not hard"],
         "required": True},
        {"key": "strategy", "text": "What did you ask?", "type": "text", "options": [], "required": True},
        {"key": "comments", "text": "Anything else?", "type": "text", "options": [], "required": False}]
    player.refused("questionnaire", {"answers": {"effort": "Hard", "strategy": ""}}, "please answer: What did you ask?")
    player.refused("questionnaire", {"answers": {"effort": "Maybe", "strategy": "x"}}, "please answer: How hard")
    player.refused("questionnaire", {"answers": {"effort": "Hard", "strategy": "x", "trust": "Agree"}}, "unknown")
    player.ok("questionnaire", {"answers": {"effort": "Hard", "strategy": "colours first"}})
    assert player.state["stage"] == "done"
    row = tables(texts.extensions["exag"].store.events())["participants"].set_index("participant").loc["pid:eve"]
    assert (row["q_effort"], row["q_strategy"]) == ("Hard", "colours first")
