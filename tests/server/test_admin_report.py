"""The admin's live report: /admin/report?study=ID is `exag analyze`'s page built from the live event log,
behind the admin token, linked per study from the admin page; it builds before any game is played. The app
is given the report function as `exag serve` gives it (create_app(config, live_report)); without one the
page says the report is unavailable.

Issue 51: the report and the export are computed in child processes (server/reports.py), never in the players'
web process, which answers at once from what Redis holds; the export is whole, and its own looks at outcomes
carry their stream ids; test participations (bots, the researcher's tries) never open a registered study's
outcomes."""
from __future__ import annotations

import io
import json
import re
import time
import zipfile

import pytest
from server_setup import server_config
from socket_player import guessed_to_the_end, joined, started

from experiments.analysis.live import live_report
from experiments.preregister import preregister
from game.export import READ_BY_ANALYSIS
from game.settings import RATINGS
from server.app import create_app
from server.reports import COMPUTING

REPORT_WAIT_S = 180       # a child computes a page in seconds; a busy 2-core machine may take much longer
NOTE = 'class="report-note"'   # on a page that is not of the whole log (server/templates/live_report_note.html)


@pytest.fixture(scope="module")
def app(tiny_agent_dir, agent_world, tiny_nle_dir, server_dirs):
    data_dir, studies = server_dirs
    app = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, data_dir, studies),
                     live_report=live_report)
    yield app
    app.extensions["exag"].close()


def play(player, questions: int = 1) -> None:
    gid = player.game["game_id"]
    for _ in range(questions):
        player.ok("ask", {"game_id": gid, "question": "is there a red cube?"})
        player.ok("rate", {"game_id": gid, "rating": RATINGS[1]})
    player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})


def report_page(app, study: str):
    """The live report once a child has computed it from the whole log (the page says so until then)."""
    deadline = time.monotonic() + REPORT_WAIT_S
    while True:
        page = app.test_client().get(f"/admin/report?study={study}&token=test-admin")
        assert page.status_code == 200 and page.mimetype == "text/html"
        if NOTE not in page.get_data(as_text=True):
            return page
        assert time.monotonic() < deadline, page.get_data(as_text=True)[:1000]
        time.sleep(0.2)


def test_live_report_is_behind_the_token_and_linked_per_study(app):
    assert app.test_client().get("/admin/report?study=ctl").status_code == 403
    assert app.test_client().get("/admin/report?study=ctl&token=wrong").status_code == 403
    http = app.test_client()
    admin = http.get("/admin?token=test-admin").get_data(as_text=True)
    for study in ("ctl", "aw", "realb"):
        assert f'href="/admin/report?study={study}"' in admin
    assert http.get("/admin/report?study=no-such-study").status_code == 404
    assert http.get("/admin/report?study=../etc").status_code == 404
    assert http.get("/admin/report").status_code == 404


def test_live_report_builds_before_any_game(app):
    text = report_page(app, "realb").get_data(as_text=True)
    assert "ExAG live report: realb" in text and "study realb has no games yet" in text
    assert "Table 1" in text and text.lower().count("no data yet") >= 6
    assert 'http-equiv="refresh"' in text


def test_live_report_shows_the_games_played_so_far(app, connect):
    player = started(connect, "ctl", "report-1", "both")
    play(player)                                            # block 1: without explanations
    player.ok("next_game", {"game_id": player.game["game_id"]})
    play(player, questions=2)                               # block 2: with explanations
    page = report_page(app, "ctl")
    text = page.get_data(as_text=True)
    assert "ExAG live report: ctl" in text and "has no games yet" not in text
    assert re.search(r"<td>ctl</td><td>controlled</td><td class=\"num\">2</td><td class=\"num\">1</td>", text), \
        "the data table counts the two games of one participant"
    assert text.count('src="data:image/png;base64,') == 6
    links = re.findall(r'(?:src|href)\s*=\s*["\']([^"\']*)', text)
    assert all(not link.startswith(("http", "//")) for link in links)
    # the page keeps within the admin pages' content security policy: no script, images as data: URIs
    assert "<script" not in text and "script-src 'self'" in page.headers["Content-Security-Policy"]


def test_the_web_process_answers_from_the_last_report_while_a_child_computes_the_next(app, connect):
    """A request never computes the report: after new events it is answered at once with the last page and a
    note (or, before any, a page that reloads itself), and a child process computes the new one."""
    before = report_page(app, "ctl").get_data(as_text=True)
    player = started(connect, "ctl", "report-2", "none")
    play(player)
    first = app.test_client().get("/admin/report?study=ctl&token=test-admin").get_data(as_text=True)
    said = " ".join(first.split())
    assert NOTE in first and "a newer one is on its way" in said and "Below: the report of the first" in said
    assert first.replace(first[first.index('<div class="report-note"'):first.index("</div>") + 6], "") == before
    after = report_page(app, "ctl").get_data(as_text=True)
    assert re.search(r"<td>ctl</td><td>controlled</td><td class=\"num\">3</td><td class=\"num\">2</td>", after)

    waiting = " ".join(app.test_client().get("/admin/report?study=aw&token=test-admin").get_data(as_text=True).split())
    assert "ExAG live report: aw" in waiting and "is being computed" in waiting and 'http-equiv="refresh"' in waiting
    assert "ExAG live report: aw" in report_page(app, "aw").get_data(as_text=True)


def test_a_report_that_fails_says_why_and_waits_for_new_events(app, connect, monkeypatch):
    """json.loads stands for a report function that fails: the child stores why, the page shows it beside the last
    page, and no child starts again until the log grows."""
    monkeypatch.setattr(app.extensions["exag"], "live_report", json.loads)
    joined(connect, "realb", "grows-1")                       # the log grew: realb's page is stale
    deadline = time.monotonic() + REPORT_WAIT_S
    while "could not be computed" not in (said := " ".join(
            app.test_client().get("/admin/report?study=realb&token=test-admin").get_data(as_text=True).split())):
        assert time.monotonic() < deadline, said[:1000]
        time.sleep(0.2)
    assert "TypeError" in said and "It is tried again once new events come in" in said
    assert "ExAG live report: realb" in said                                 # the last page, below the note
    assert app.extensions["exag"].store.redis.get(COMPUTING) is None         # and nothing computes it again


def test_without_a_live_report_the_page_says_it_is_unavailable(app, monkeypatch):
    monkeypatch.setattr(app.extensions["exag"], "live_report", None)     # create_app(config) alone
    assert app.test_client().get("/admin/report?study=ctl").status_code == 403
    page = app.test_client().get("/admin/report?study=ctl&token=test-admin")
    assert page.status_code == 200 and "The live report is unavailable on this server" in page.get_data(as_text=True)


# --- the export, and the no-peeking gate ------------------------------------------------------------------

PLAN = {"hypotheses": ["Explanations raise the win rate."], "primary": "overall",
        "stopping_rule": "Stop when 1 participant has finished.", "exclusions": []}
GATED = {"study_id": "gated", "kind": "controlled", "arms": ["none", "attention"], "sessions": 4,
         "games_per_session": 1, "settings": {"min_questions": 0}, "preregistration": PLAN}


@pytest.fixture(scope="module")
def registered(app, tmp_path_factory, tiny_agent_dir, agent_world):
    """A pre-registered study whose outcomes open once 1 participant has finished (on the server's agent and pool)."""
    path = tmp_path_factory.mktemp("gated") / "gated.json"
    path.write_text(json.dumps({**GATED, "agent": str(tiny_agent_dir), "pool": str(agent_world)}))
    preregister(path, path.with_name("plan"), planned_n=1, warn=lambda message: None)
    created = app.test_client().post("/admin/studies?token=test-admin", data={"config": path.read_text()})
    assert created.status_code == 302
    return "gated"


def finish(connect, study: str, pid: str) -> None:
    """Plays a participation to its end: a guess a game, then the questionnaire."""
    guessed_to_the_end(started(connect, study, pid), text_answer="fine")


def exported(app, fmt: str = "jsonl") -> zipfile.ZipFile:
    answer = app.test_client().get(f"/admin/export.zip?token=test-admin&format={fmt}")
    assert answer.status_code == 200 and answer.mimetype == "application/zip"
    return zipfile.ZipFile(io.BytesIO(answer.data))


def test_the_export_is_whole_and_its_own_looks_carry_their_stream_ids(app, connect, registered):
    play(started(connect, "ctl", "export-2", "both"))
    store = app.extensions["exag"].store
    with exported(app) as archive:
        names = set(archive.namelist())
        events = [json.loads(line) for line in archive.open("events.jsonl")]
        games = [json.loads(line) for line in archive.open("games.jsonl")]
    assert names == {f"{table}.jsonl" for table in READ_BY_ANALYSIS} | {"events.jsonl"}
    stored = list(store.events())
    assert [e["id"] for e in events] == [e["id"] for e in stored]             # every event, the looks too
    looks = [e for e in events if e["type"] == "outcomes_looked"]
    assert looks and looks[-1]["study"] == "gated" and looks[-1]["where"] == "admin export"
    assert all(isinstance(e.get("id"), str) and e["id"] for e in events)
    assert {g["game_id"] for g in games} == {e["game"] for e in stored if e["type"] == "game_start"}
    with exported(app, "csv") as archive:
        assert "games.csv" in archive.namelist() and "events.jsonl" in archive.namelist()


def test_test_participations_never_open_a_registered_studys_outcomes(app, connect, registered):
    """The planned N counts real participants: `exag bot`'s, `exag simulate`'s and the researcher's own tries
    (pid:bot-..., pid:sim-..., pid:test-...) play, but the console, the live report and an export's look count
    them as no one."""
    store = app.extensions["exag"].store

    def gate() -> tuple[str | None, int]:
        row = next(s for s in app.test_client().get("/admin/monitor.json?token=test-admin").get_json()
                   if s["study"]["study_id"] == "gated")
        exported(app).close()
        return row["outcomes_hidden"], [e for e in store.events() if e["type"] == "outcomes_looked"][-1]["finished"]

    for pid in ("bot-3f2a", "sim-1-0001-typical", "test-me"):
        finish(connect, "gated", pid)
    hidden, finished = gate()
    assert hidden and "(0 so far)" in hidden and finished == 0
    text = report_page(app, "gated").get_data(as_text=True)
    assert "stay hidden until its planned 1 participants have finished (0 so far)" in text

    assert not [e for e in store.events() if e["type"] == "outcomes_looked" and e["where"] == "live report"]
    finish(connect, "gated", "p-0001")                      # a real participant
    hidden, finished = gate()
    assert hidden is None and finished == 1
    assert "stay hidden" not in report_page(app, "gated").get_data(as_text=True)
    # the page that shows the outcomes is a look, logged once (its own recomputation logs none)
    report_page(app, "gated")
    live = [e for e in store.events() if e["type"] == "outcomes_looked" and e["where"] == "live report"]
    assert [(e["study"], e["finished"], e["planned_n"]) for e in live] == [("gated", 1, 1)]
