"""The admin's live report: /admin/report?study=ID is `exag analyze`'s page built from the live event log,
behind the admin token, linked per study from the admin page; it builds before any game is played. The app
is given the report function as `exag serve` gives it (create_app(config, live_report)); without one the
page says the report is unavailable."""
from __future__ import annotations

import re

import pytest
from server_setup import server_config
from socket_player import started

from experiments.analysis.live import live_report
from game.settings import RATINGS
from server.app import create_app


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
    page = app.test_client().get("/admin/report?study=realb&token=test-admin")
    assert page.status_code == 200 and page.mimetype == "text/html"
    text = page.get_data(as_text=True)
    assert "ExAG live report: realb" in text and "study realb has no games yet" in text
    assert "Table 1" in text and text.lower().count("no data yet") >= 6
    assert 'http-equiv="refresh"' in text


def test_live_report_shows_the_games_played_so_far(app, connect):
    player = started(connect, "ctl", "report-1", "both")
    play(player)                                            # block 1: without explanations
    player.ok("next_game", {"game_id": player.game["game_id"]})
    play(player, questions=2)                               # block 2: with explanations
    page = app.test_client().get("/admin/report?study=ctl&token=test-admin")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert "ExAG live report: ctl" in text and "has no games yet" not in text
    assert re.search(r"<td>ctl</td><td>controlled</td><td class=\"num\">2</td><td class=\"num\">1</td>", text), \
        "the data table counts the two games of one participant"
    assert text.count('src="data:image/png;base64,') == 6
    links = re.findall(r'(?:src|href)\s*=\s*["\']([^"\']*)', text)
    assert all(not link.startswith(("http", "//")) for link in links)
    # the page keeps within the admin pages' content security policy: no script, images as data: URIs
    assert "<script" not in text and "script-src 'self'" in page.headers["Content-Security-Policy"]


def test_without_a_live_report_the_page_says_it_is_unavailable(app, monkeypatch):
    monkeypatch.setattr(app.extensions["exag"], "live_report", None)     # create_app(config) alone
    assert app.test_client().get("/admin/report?study=ctl").status_code == 403
    page = app.test_client().get("/admin/report?study=ctl&token=test-admin")
    assert page.status_code == 200 and "The live report is unavailable on this server" in page.get_data(as_text=True)
