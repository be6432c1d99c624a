"""A real server for the server tests: the tiny agent and its NLE model on the tiny agent world, a real
private redis-server (append-only file) in a temporary directory, study files made here."""
from __future__ import annotations

import pytest
from chromium import CHROMIUM
from server_setup import LiveServer, server_config, write_studies
from socket_player import socket_client

from server.app import create_app


@pytest.fixture(scope="module")
def server_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("server")
    return root / "data", write_studies(root / "studies")


@pytest.fixture(scope="module")
def app(tiny_agent_dir, agent_world, tiny_nle_dir, server_dirs):
    data_dir, studies = server_dirs
    app = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, data_dir, studies))
    yield app
    app.extensions["exag"].close()


@pytest.fixture
def connect(app):
    """Socket.IO test clients (closed after the test), all in one browser unless told another:
    connect(browser_id="other"); connect(browser_id=None) is a browser without the cookie."""
    clients = []

    def make(browser_id: str | None = "browser-1"):
        client = socket_client(app, browser_id)
        clients.append(client)
        return client

    yield make
    for client in clients:
        if client.is_connected():
            client.disconnect()


@pytest.fixture(scope="module")
def live_server(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path_factory):
    """An app of its own: Flask-SocketIO's test client patches the Socket.IO server it is made for, so
    real sockets get an app no test client has touched."""
    root = tmp_path_factory.mktemp("live")
    app = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, root / "data",
                                   write_studies(root / "studies")))
    server = LiveServer(app)
    server.app = app
    yield server
    server.stop()
    app.extensions["exag"].close()


@pytest.fixture(scope="session")
def browser():
    """Chromium, driven by Playwright, shared by the session's browser tests (each opens contexts of its own;
    tests/server/chromium.py)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()
