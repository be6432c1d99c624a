"""A real server for the server tests: the tiny agent and its NLE model on the tiny agent world, a real
private redis-server (append-only file) in a temporary directory, study files made here."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from werkzeug.serving import make_server

from server.app import create_app
from server.config import ServerConfig

# Small studies with the paper's structure (4 sessions alternating without/with explanations).
STUDIES = {
    "ctl": {"study_id": "ctl", "kind": "controlled", "arms": ["none", "attention", "relqa", "both"], "sessions": 4,
            "games_per_session": 1, "choose_arm": True, "completion_code": "CODE-CTL",
            "redirect_url": "https://example.org/done?cc=CODE-CTL"},
    "ctl5": {"study_id": "ctl5", "kind": "controlled", "arms": ["both"], "sessions": 4, "games_per_session": 5,
             "choose_arm": True, "completion_code": "CODE-CTL5"},
    "aw": {"study_id": "aw", "kind": "at-will", "arms": ["both"], "sessions": 1, "games_per_session": 2,
           "nle": True, "choose_arm": True, "completion_code": "CODE-AW"},
    "realb": {"study_id": "realb", "kind": "controlled", "arms": ["none", "both"], "sessions": 4,
              "games_per_session": 1, "completion_code": "CODE-REALB"},
    "real": {"study_id": "real", "kind": "controlled", "arms": ["none", "attention", "relqa", "both"], "sessions": 4,
             "games_per_session": 1, "completion_code": "CODE-REAL"},
}


def write_studies(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for study in STUDIES.values():
        (directory / f"{study['study_id']}.json").write_text(json.dumps(study))
    return directory


def server_config(agent_dir, world, nle_dir, data_dir: Path, studies: Path, **changes) -> ServerConfig:
    return ServerConfig(world=world, agent=str(agent_dir), data_dir=data_dir, studies_dir=studies,
                        admin_token="test-admin", seed=3, progress=False,
                        explainer_options={"relqa": {"min_bank": 50}, "nle": {"model": str(nle_dir)}}, **changes)


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
    """Socket.IO test clients (closed after the test)."""
    clients = []

    def make():
        client = app.extensions["socketio"].test_client(app)
        clients.append(client)
        return client

    yield make
    for client in clients:
        if client.is_connected():
            client.disconnect()


class LiveServer:
    """The app behind a real HTTP server on a free port (for the browser and the bot)."""

    def __init__(self, app) -> None:
        self.server = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join(timeout=10)


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
