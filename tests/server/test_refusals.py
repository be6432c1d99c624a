"""Refused messages never enter the study's event log: they go to a capped diagnostic stream; one client
address holds a limited number of connections (issue 10, finding 9); a connection's burst is handled and a
flood refused, whatever the machine's speed (issue 26)."""
from __future__ import annotations

import time

import pytest
from server_setup import server_config, write_studies
from socket_player import Player, socket_client, started

from server.app import create_app

EVENTS, DIAGNOSTICS = "exag:events", "exag:diagnostics"
MAX_CONNECTIONS, DIAGNOSTICS_KEPT = 4, 20
STREAM_NODE = 100        # Redis trims a stream by whole nodes (stream-node-max-entries): "about" the cap
# The per-connection throttle: ServerConfig's burst, and one message a second after it, slow enough that a
# flood the test sends is refused unless the machine takes over a minute to carry it, and a pause the
# test makes (a lower bound on the time passed, however busy the machine) refills it for certain.
BURST, RATE = 20, 1.0
SLOW_DOWN = "too many messages; please slow down"


@pytest.fixture(scope="module")
def limited(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("limited")
    app = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, root / "data",
                                   write_studies(root / "studies"), max_connections_per_address=MAX_CONNECTIONS,
                                   diagnostics_max_len=DIAGNOSTICS_KEPT, refusals_logged_per_second=1000.0,
                                   max_events_per_second=RATE, event_burst=BURST))
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


def test_a_connections_burst_is_handled_and_a_flood_refused(limited):
    """A new connection's first BURST messages are all handled, however fast they come (its bucket starts
    full); past them, of a flood only RATE a second are, the others answered with "slow down" and not
    handled; a pause of 1/RATE s lets the next message through. Each bound is the token bucket's, with the
    time the flood really took, so no machine speed can break it."""
    clients = []

    def connect(browser_id: str):
        clients.append(socket_client(limited, browser_id))
        return clients[-1]

    try:
        started_at = time.monotonic()
        player = started(lambda: connect("burst-1"), "aw", "burst-1")          # join, consent, begin
        gid = player.game["game_id"]
        player.ok("ask", {"game_id": gid, "question": "is there a red cube?"})
        page = [player.history({"game_id": gid, "round": 0}) for _ in range(BURST - 4)]    # a page's reads
        assert [kind for kind, _ in page] == ["round"] * (BURST - 4)                     # the whole burst handled

        flood = [player.history({"game_id": gid, "round": 0}) for _ in range(60)]
        took_s = time.monotonic() - started_at
        handled = sum(kind == "round" for kind, _ in flood)
        refused = [answer for kind, answer in flood if kind == "error"]
        assert handled + len(refused) == len(flood)
        assert all(answer == {"event": "history", "message": SLOW_DOWN} for answer in refused)
        assert handled <= RATE * took_s                    # what the bucket regained while the test went on
        assert len(refused) >= len(flood) - RATE * took_s > 0, took_s

        time.sleep(1.0 / RATE)
        assert player.history({"game_id": gid, "round": 0})[0] == "round"
        other = Player(connect("burst-2"))                 # another connection has a bucket of its own
        other.ok("join", {"study": "aw", "pid": "burst-2"})
    finally:
        for client in clients:
            if client.is_connected():
                client.disconnect()


def test_a_join_flood_writes_no_study_events(limited):
    """A connection that joins its participant again and again (issue 29: 860 rejoin events in 10 s) adds no
    event after its first join; a new connection of the same browser (a reload) still logs its rejoin."""
    clients = [socket_client(limited, "flood-1")]
    try:
        player = Player(clients[0])
        player.ok("join", {"study": "aw", "pid": "flood-1"})
        redis = limited.extensions["exag"].store.redis
        before = redis.xlen(EVENTS)
        for _ in range(10):
            assert player.ok("join", {"study": "aw", "pid": "flood-1"})["stage"] == "consent"
        assert redis.xlen(EVENTS) == before
        clients.append(socket_client(limited, "flood-1"))
        Player(clients[1]).ok("join", {"study": "aw", "pid": "flood-1"})
        assert redis.xlen(EVENTS) == before + 1
        assert redis.xrevrange(EVENTS, count=1)[0][1]["type"] == "rejoin"
    finally:
        for client in clients:
            if client.is_connected():
                client.disconnect()
