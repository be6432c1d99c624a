"""What a person sees when the server cannot take them (issue 51), in Chromium: a full server's page says to
come back or return the study; a browser whose WebSocket is blocked on the way to a server with several web
processes (which takes no long-polling) is told so, instead of "reconnecting" forever."""
from __future__ import annotations

import time

import pytest
from server_setup import LiveServer, server_config, write_studies

from server.app import create_app


@pytest.fixture(scope="module")
def one_place(app, tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path_factory):
    """A server that admits one active participant and, like `exag serve --web-processes 2`, takes WebSocket
    connections only (its pool's embeddings were stored by `app`'s worker)."""
    root = tmp_path_factory.mktemp("one-place")
    web = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, root / "data",
                                   write_studies(root / "studies"), inprocess_workers=0, max_players=1,
                                   web_processes=2))
    server = LiveServer(web)
    yield server
    server.stop()
    web.extensions["exag"].close()


def test_a_full_server_shows_a_page_to_come_back_or_return_the_study(browser, one_place):
    first = browser.new_page()
    first.goto(f"{one_place.url}/?study=ctl&pid=first-in&arm=none")
    first.wait_for_selector("[data-stage=consent]", timeout=15_000)
    time.sleep(1.2)                                 # the load is read at most once a second
    second = browser.new_page()
    second.goto(f"{one_place.url}/?study=ctl&PROLIFIC_PID=second&STUDY_ID=x&SESSION_ID=y&arm=none")
    second.wait_for_selector("[data-stage=full]", timeout=15_000)
    text = second.inner_text("#stage")
    assert "The study is full right now" in text and "come back" in text
    assert "return the study on Prolific" in text
    first.close()
    second.close()


def test_a_blocked_websocket_is_explained(browser, one_place):
    page = browser.new_page()
    page.route_web_socket("**/socket.io/**", lambda ws: ws.close())     # a proxy that drops WebSockets
    page.goto(f"{one_place.url}/?study=ctl&pid=blocked-1&arm=none")
    page.wait_for_selector("#connection:has-text('blocks the live connection')", timeout=30_000)
    assert page.is_visible("#connection")
    assert "WebSocket" in page.inner_text("#connection")
    page.close()
