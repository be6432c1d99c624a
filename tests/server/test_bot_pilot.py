"""Issue 55, `exag bot --pilot STUDY.json` against a real server: test participants take a Prolific study file
(prolific_study_id, per-participant codes, a return link, a consent statement, a comprehension check, colour
plates, an attention check every 2 games, demographics, a questionnaire with a required text item) through every
check to the completion code with Prolific's parameters, over the socket and in Chromium; their participations are
test ones; the return link carries each participant's own code as cc=. A file whose right answers are not the
server's, or whose study the server lacks, fails the pilot with one line."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from chromium import CHROMIUM, needs_chromium
from cli import REPO, exag

from experiments.simulate.pilot import code_problem
from game.export import tables
from game.study import StudyConfig, is_test_participation

RULES = [{"key": "guesses", "text": "How many guesses a game?", "options": ["One", "Three"], "answer": "One"},
         {"key": "about", "text": "Whom does the answer describe?", "options": ["The secret image", "All images"],
          "answer": "The secret image"}]
STUDY = {"study_id": "pilot-prolific", "kind": "controlled", "arms": ["none", "attention"], "sessions": 4,
         "games_per_session": 1, "settings": {"min_questions": 0}, "completion_code": "STATIC-1",
         "completion_codes": "per_participant", "redirect_url": "http://127.0.0.1/complete?cc=STATIC-1",
         "prolific_study_id": "PROLIFIC123",
         "consent": {"statements": ["I am 18 or older."]},
         "questionnaire": [{"key": "trust", "text": "I trusted the agent.", "type": "scale",
                            "options": ["Disagree", "Neutral", "Agree"]},
                           {"key": "device", "text": "Your device", "type": "choice", "options": ["Phone", "Computer"]},
                           {"key": "why", "text": "Why did you guess as you did?", "type": "text", "required": True},
                           {"key": "more", "text": "Anything else?", "type": "text"}],
         "checks": {"comprehension": {"questions": RULES}, "colour_screen": {"plates": [12, 8], "min_correct": 2},
                    "attention": {"every": 2}, "demographics": {}}}


def create(live_server, config: dict) -> None:
    answer = live_server.app.test_client().post("/admin/studies?token=test-admin", data={"config": json.dumps(config)})
    assert answer.status_code == 302, answer.get_data(as_text=True)


@pytest.fixture(scope="module")
def study_file(live_server, tmp_path_factory) -> Path:
    create(live_server, STUDY)
    path = tmp_path_factory.mktemp("pilot") / "pilot-prolific.json"
    path.write_text(json.dumps(STUDY))
    return path


def exported(live_server, pids: list[str]) -> dict:
    participants = tables(live_server.app.extensions["exag"].store.events())["participants"]
    return {pid: participants[participants["participant"] == pid].iloc[0].to_dict() for pid in pids}


def check_finished(report: dict, live_server, participants: int) -> list[dict]:
    """Every participant reached the done page through every check, with its own code as the link's cc=."""
    assert report["ok"] and report["reached_done"] == participants and not report["failures"], report["failures"]
    runs = report["participants"]
    assert len(runs) == participants
    for run in runs:
        assert run["stage"] == "done" and len(run["games"]) == 4 and run["ok"]
        assert run["checks"] == {"comprehension": 1, "colour_screen": 1, "attention_check": 1}
        join = run["join"]            # Prolific's parameters, as its link carries them
        assert set(join) == {"PROLIFIC_PID", "STUDY_ID", "SESSION_ID"} and join["STUDY_ID"] == "PROLIFIC123"
        assert join["PROLIFIC_PID"].startswith("bot-")
        assert run["participant"] == f"prolific:{join['PROLIFIC_PID']}:{join['SESSION_ID']}"
        assert is_test_participation(run["participant"])
        code = run["completion_code"]
        assert code and code != "STATIC-1"                      # the participant's own code, not the study's
        assert parse_qs(urlsplit(run["redirect_url"]).query) == {"cc": [code]}
        assert run["redirect_url"].startswith("http://127.0.0.1/complete?")
    assert len({run["completion_code"] for run in runs}) == participants
    rows = exported(live_server, [run["participant"] for run in runs])
    for run in runs:          # the export: finished, with the code, the ids, the answers, and no failed check
        row = rows[run["participant"]]
        assert row["finished"] and row["completion_code"] == run["completion_code"]
        assert row["id_STUDY_ID"] == "PROLIFIC123" and row["id_PROLIFIC_PID"] == run["join"]["PROLIFIC_PID"]
        assert row["comprehension_passed"] and row["colour_screen_passed"] and row["attention_passed"] == 1
        assert row["q_why"] == "pilot" and row["q_trust"] == "Neutral" and row["demo_age"] == "Prefer not to say"
        assert not {"comprehension_failed", "attention_failed", "colour_screen_failed"} & set(
            str(row["flags"]).split("+"))
    return runs


def test_the_socket_pilot_takes_a_prolific_study_to_each_participants_completion_code(live_server, study_file,
                                                                                      tmp_path, monkeypatch):
    monkeypatch.delenv("EXAG_ADMIN_TOKEN", raising=False)
    out = tmp_path / "pilot.json"
    ran = exag("bot", "--url", live_server.url, "--pilot", study_file, "--participants", 2, "--questions", 1,
               "--admin-token", "test-admin", "--json", out)
    assert ran.returncode == 0, ran.stderr
    report = json.loads(out.read_text())
    assert report["platform"] == "prolific" and report["mode"] == "socket" and report["checks_verified_by_server"]
    runs = check_finished(report, live_server, 2)
    assert all(run["server_flags"] is not None for run in runs)
    summary = ran.stdout.splitlines()
    assert "2 of 2 participants reached the completion code" in summary[0]
    assert all(run["completion_code"] in ran.stdout for run in runs)


def test_a_file_whose_right_answers_are_not_the_servers_fails_the_pilot(live_server, study_file, tmp_path,
                                                                        monkeypatch):
    monkeypatch.delenv("EXAG_ADMIN_TOKEN", raising=False)
    wrong = json.loads(study_file.read_text())
    wrong["checks"]["comprehension"]["questions"][0]["answer"] = "Three"      # the page cannot tell: graded wrong
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(wrong))
    out = tmp_path / "pilot.json"
    ran = exag("bot", "--url", live_server.url, "--pilot", path, "--participants", 3, "--json", out)
    assert ran.returncode == 1
    failures = [line for line in ran.stderr.splitlines() if "FAILED" in line]
    assert len(failures) == 2, ran.stderr                  # the participant, and the two not started after it
    assert "graded the file's comprehension answers wrong" in failures[0] and "prolific:bot-" in failures[0]
    report = json.loads(out.read_text())
    assert not report["ok"] and len(report["participants"]) == 1 and report["participants"][0]["stage"] == "comprehension"

    # with the admin token the stored study is compared first: refused at the door, in one line
    ran = exag("bot", "--url", live_server.url, "--pilot", path, "--admin-token", "test-admin")
    assert ran.returncode == 2 and len(ran.stderr.strip().splitlines()) == 1, ran.stderr
    assert "is not the server's study 'pilot-prolific': its checks differ" in ran.stderr


def test_a_study_the_server_lacks_or_another_prolific_study_is_refused_in_one_line(live_server, study_file, tmp_path,
                                                                                  monkeypatch):
    monkeypatch.delenv("EXAG_ADMIN_TOKEN", raising=False)
    for change, said in (({"study_id": "pilot-unknown"}, "there is no study 'pilot-unknown'"),
                         ({"prolific_study_id": "OTHER"}, "not this study's link on Prolific"),
                         ({"sessions": 5}, "its games (server 4, file 5), sessions (server 4, file 5) differ")):
        path = tmp_path / "other.json"
        path.write_text(json.dumps({**STUDY, **change}))
        ran = exag("bot", "--url", live_server.url, "--pilot", path)
        assert ran.returncode == 2, (change, ran.stdout, ran.stderr)
        lines = ran.stderr.strip().splitlines()
        assert len(lines) == 1 and said in lines[0], (change, lines)


def test_the_return_link_must_carry_the_participants_code():
    study = StudyConfig.from_dict(STUDY)
    assert code_problem(study, "K1", "http://127.0.0.1/complete?cc=K1") == ""
    assert "carries cc='STATIC-1'" in code_problem(study, "K1", "http://127.0.0.1/complete?cc=STATIC-1")
    assert "no return link" in code_problem(study, "K1", "")
    assert "sent the browser to" in code_problem(study, "K1", "http://127.0.0.1/complete?cc=K1",
                                                 returned_to="http://127.0.0.1/complete?cc=K2")
    static = StudyConfig.from_dict({**STUDY, "completion_codes": "static"})
    assert code_problem(static, "STATIC-1", "http://127.0.0.1/complete?cc=STATIC-1") == ""
    assert "no cc=" in code_problem(StudyConfig.from_dict({**STUDY, "completion_codes": "static",
                                                           "redirect_url": "http://127.0.0.1/complete"}),
                                    "STATIC-1", "http://127.0.0.1/complete")


def pilot_process(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`exag bot ...` in a process of its own: Playwright's sync API runs one instance per thread, and the browser
    tests' session-wide Chromium may hold this one's."""
    environment = {k: v for k, v in os.environ.items() if k != "EXAG_ADMIN_TOKEN"} | (env or {})
    return subprocess.run([sys.executable, "-m", "exag_cli", "bot", *args], cwd=REPO, env=environment,
                          capture_output=True, text=True, timeout=300)


@needs_chromium
def test_the_browser_pilot_clicks_through_the_page_and_follows_the_return_button(live_server, study_file, tmp_path):
    pytest.importorskip("playwright.sync_api")
    out = tmp_path / "pilot.json"
    ran = pilot_process("--url", live_server.url, "--pilot", str(study_file), "--browser", "--questions", "1",
                        "--json", str(out), env={"EXAG_CHROMIUM": CHROMIUM})
    assert ran.returncode == 0, ran.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["mode"] == "browser"
    run = check_finished(report, live_server, 1)[0]
    assert run["returned_to"] == run["redirect_url"]        # where the done page's button sent the browser


def test_the_browser_pilot_without_chromium_says_how_to_install_it(tmp_path, study_file):
    pytest.importorskip("playwright.sync_api")
    ran = pilot_process("--url", "http://127.0.0.1:9", "--pilot", str(study_file), "--browser",
                        env={"EXAG_CHROMIUM": str(tmp_path / "no-chromium")})
    assert ran.returncode == 2
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and "apt-get install chromium" in lines[0], ran.stderr
