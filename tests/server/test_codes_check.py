"""`exag codes check` (issue 55): Prolific's submissions export against the codes a real server gave. Participations
joined through Prolific's link (PROLIFIC_PID, STUDY_ID, SESSION_ID) finish with per-participant codes; the export
Prolific would give is written with one submission of each kind, and every verdict is the one it should be."""
from __future__ import annotations

import csv
import json

import pytest

from exag_cli import main
from game.export import write_export

from socket_player import Player

STUDY = {"study_id": "codes", "kind": "controlled", "arms": ["none"], "sessions": 4, "games_per_session": 1,
         "settings": {"min_questions": 0}, "completion_code": "STATIC-1", "completion_codes": "per_participant",
         "prolific_study_id": "PSTUDY1", "redirect_url": "https://app.prolific.com/submissions/complete?cc=STATIC-1"}
ANSWERS = {"trust": "Agree", "explanations_helped": "Agree", "understood": "Agree"}


def prolific_participant(connect, pid: str, session: str, finish: bool) -> dict:
    player = Player(connect(f"browser-{pid}"))
    player.ok("join", {"study": "codes", "PROLIFIC_PID": pid, "STUDY_ID": "PSTUDY1", "SESSION_ID": session})
    player.ok("consent", {"agree": True})
    player.ok("begin", {})
    if finish:
        while player.state["stage"] == "game":
            gid = player.game["game_id"]
            player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})
            player.ok("next_game", {"game_id": gid})
        player.ok("questionnaire", {"answers": ANSWERS})
    return player.state


@pytest.fixture(scope="module")
def played(app, tmp_path_factory):
    assert app.test_client().post("/admin/studies?token=test-admin",
                                  data={"config": json.dumps(STUDY)}).status_code == 302
    return app


def test_every_submission_gets_its_verdict(played, connect, tmp_path, capsys):
    ann = prolific_participant(connect, "ann0000000000000000000001", "S-ann", finish=True)
    bea = prolific_participant(connect, "bea0000000000000000000002", "S-bea", finish=True)
    prolific_participant(connect, "cat0000000000000000000003", "S-cat", finish=False)
    fin = prolific_participant(connect, "fin0000000000000000000004", "S-fin", finish=True)
    ann_code, bea_code = ann["done"]["completion_code"], bea["done"]["completion_code"]
    assert ann_code != bea_code and f"cc={ann_code}" in ann["done"]["redirect_url"]

    export = tmp_path / "export"
    write_export(played.extensions["exag"].store.events(), export)
    submissions = tmp_path / "prolific.csv"
    with open(submissions, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["Submission id", "Participant id", "Status", "Started at", "Completion code"])
        writer.writerow(["S-ann", "ann0000000000000000000001", "AWAITING REVIEW", "", ann_code])      # match
        writer.writerow(["S-bea", "bea0000000000000000000002", "AWAITING REVIEW", "", ann_code])      # copied
        writer.writerow(["S-cat", "cat0000000000000000000003", "AWAITING REVIEW", "", bea_code])      # never finished
        writer.writerow(["S-dan", "dan0000000000000000000005", "AWAITING REVIEW", "", "STATIC-1"])    # never here
        writer.writerow(["S-eve", "eve0000000000000000000006", "RETURNED", "", ""])                   # no code
        writer.writerow(["S-gus", "gus0000000000000000000007", "AWAITING REVIEW", "", "NOCODE"])      # Prolific's none
    verdicts = tmp_path / "verdicts.csv"
    status = main(["codes", "check", "--prolific", str(submissions), "--data", str(export), "--study", "codes",
                   "--out", str(verdicts)])
    printed = capsys.readouterr().out
    assert status == 2
    assert printed.splitlines()[0] == "6 submissions: 1 match, 1 wrong_code, 1 not_finished, 1 no_participation, 2 no_code"
    assert "wrong_code: participant bea0000000000000000000002" in printed and f"earned {bea_code!r}" in printed
    assert "1 participations finished here without a submission on Prolific: prolific:fin" in printed
    rows = {row["submission_id"]: row["verdict"] for row in csv.DictReader(open(verdicts))}
    assert rows == {"S-ann": "match", "S-bea": "wrong_code", "S-cat": "not_finished", "S-dan": "no_participation",
                    "S-eve": "no_code", "S-gus": "no_code", "S-fin": "finished_not_submitted"}
    assert fin["stage"] == "done"

    with open(submissions, "w", newline="") as file:       # the older export's columns, all matching
        writer = csv.writer(file)
        writer.writerow(["session_id", "participant_id", "status", "entered_code"])
        writer.writerow(["S-ann", "ann0000000000000000000001", "APPROVED", ann_code])
        writer.writerow(["S-bea", "bea0000000000000000000002", "APPROVED", bea_code])
    assert main(["codes", "check", "--prolific", str(submissions), "--data", str(export), "--study", "codes"]) == 0
    assert "2 submissions: 2 match" in capsys.readouterr().out


def test_a_file_that_is_not_prolifics_export_is_refused_in_one_line(tmp_path, capsys):
    other = tmp_path / "other.csv"
    other.write_text("name,score\nx,1\n")
    assert main(["codes", "check", "--prolific", str(other), "--data", str(tmp_path), "--study", "codes"]) == 2
    error = capsys.readouterr().err
    assert "no 'Participant id' or 'participant_id' column" in error and error.count("\n") == 1
