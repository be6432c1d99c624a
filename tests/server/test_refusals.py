"""Refused messages never enter the study's event log: they go to a capped diagnostic stream; and one
client address holds a limited number of connections (issue 10, finding 9)."""
from __future__ import annotations

import pytest
from server_setup import server_config, write_studies
from socket_player import socket_client

from server.app import create_app

EVENTS, DIAGNOSTICS = "exag:events", "exag:diagnostics"
MAX_CONNECTIONS, DIAGNOSTICS_KEPT = 4, 20
STREAM_NODE = 100        # Redis trims a stream by whole nodes (stream-node-max-entries): "about" the cap


@pytest.fixture(scope="module")
def limited(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("limited")
    app = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, root / "data",
                                   write_studies(root / "studies"), max_connections_per_address=MAX_CONNECTIONS,
                                   diagnostics_max_len=DIAGNOSTICS_KEPT, refusals_logged_per_second=1000.0))
    yield app
    app.extensions["exag"].close()


def test_refusals_stay_out_of_the_event_log(limited):
    redis = limited.extensions["exag"].store.redis
    events_before = redis.xlen(EVENTS)
    clients = [socket_client(limited, f"stranger-{i}") for i in range(MAX_CONNECTIONS)]
    try:
        for _ in range(60):                              # unauthenticated, unknown, malformed, and a flood
            for client in clients:
                client.emit("nonsense", {"x": 1})
                client.emit("ask", {"game_id": "g", "question": "is there a cube?"})
                client.emit("join", {"study": "ctl", "pid": "<script>"})
        for client in clients:
            replies = client.get_received()
            assert len(replies) == 180 and {r["name"] for r in replies} == {"error"}
            assert any("slow down" in r["args"][0]["message"] for r in replies)
    finally:
        for client in clients:
            client.disconnect()
    assert redis.xlen(EVENTS) == events_before
    noted = redis.xrange(DIAGNOSTICS)
    assert 0 < len(noted) <= DIAGNOSTICS_KEPT + STREAM_NODE < 4 * 180
    refused = [entry for _, entry in noted if entry["kind"] == "refused"]
    assert refused and {entry["event"] for entry in refused} <= {"nonsense", "ask", "join"}


def test_one_address_holds_a_limited_number_of_connections(limited):
    clients = [socket_client(limited, f"tab-{i}") for i in range(MAX_CONNECTIONS)]
    try:
        assert all(client.is_connected() for client in clients)
        one_too_many = socket_client(limited, "tab-extra")
        assert not one_too_many.is_connected()
        clients[0].disconnect()
        clients[0] = socket_client(limited, "tab-again")        # a closed tab frees its place
        assert clients[0].is_connected()
    finally:
        for client in clients:
            if client.is_connected():
                client.disconnect()
    latest = limited.extensions["exag"].store.redis.xrevrange(DIAGNOSTICS, count=1)[0][1]
    assert latest["kind"] == "connection_refused" and "too many open connections" in latest["message"]
