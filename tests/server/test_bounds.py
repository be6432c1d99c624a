"""Bounded by construction (issue 51): what an anonymous client sends is refused before anything is buffered.
A binary event's header (which announces attachments python-socketio would keep until the last one came: a
million of them grew a web process by 0.94 MB per MB sent) or a binary frame closes the connection at once; an
event with more than one argument (a TypeError and 1.3 KB of traceback a frame before) is throttled and answered
with `error`; nothing of it reaches the server's log as a traceback. Real websockets, raw frames."""
from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import websocket
from server_setup import LiveServer, server_config, write_studies
from test_frames import next_event, open_socket

from server.app import create_app
from server.events import BINARY_REFUSED, ONE_PAYLOAD

ATTACHMENTS_ANNOUNCED = '451000000-["ask",{"game_id":"x","question":{"_placeholder":true,"num":0}}]'
CHUNK = b"\x00" * 60_000          # under the 64 KB frame limit: each one would be kept as an attachment
STREAMED_MB = 40
RSS_GROWTH_ALLOWED_MB = 8         # the refusal and its diagnostic; a buffered stream would be ~40 MB


@pytest.fixture(scope="module")
def server(app, tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path_factory):
    """A web process with `exag serve`'s flood limits (10 messages a second, bursts of 20) behind a real HTTP
    server, in this process (its RSS is this process's); no worker: nothing here reaches one (its pool's
    embeddings were stored by `app`'s worker)."""
    root = tmp_path_factory.mktemp("bounds")
    web = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, root / "data",
                                   write_studies(root / "studies"), inprocess_workers=0,
                                   max_events_per_second=10.0, event_burst=20))
    live = LiveServer(web)
    live.app = web
    yield live
    live.stop()
    web.extensions["exag"].close()


def closed_by_server(ws: websocket.WebSocket) -> bool:
    """Reads until the server closes the connection (True) or sends something else for a while (False)."""
    try:
        for _ in range(20):
            frame = ws.recv()
            if frame in ("", None):
                return True
    except (websocket.WebSocketConnectionClosedException, ConnectionError, OSError):
        return True
    return False


def ours(caplog) -> list[logging.LogRecord]:
    """The server's log records (the test's HTTP server, werkzeug, logs a closed websocket's bytes as a request)."""
    return [r for r in caplog.records if r.name.split(".")[0] in ("server", "socketio", "engineio", "flask_socketio")]


def peak_rss_mb() -> float:
    """The process's peak resident memory so far (VmHWM): a frame held for a moment shows in it."""
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return rss_mb()


def rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


def stream_attachments(server) -> tuple[int, float]:
    """One connection that announces attachments and streams STREAMED_MB of them: (bytes sent, RSS growth MB)."""
    ws = open_socket(server)
    before = rss_mb()
    ws.send(ATTACHMENTS_ANNOUNCED)
    sent = 0
    try:
        for _ in range(STREAMED_MB * 2**20 // len(CHUNK)):
            ws.send_binary(CHUNK)
            sent += len(CHUNK)
    except (websocket.WebSocketConnectionClosedException, ConnectionError, OSError):
        pass                                   # the server closed the connection: what it should do
    assert closed_by_server(ws)
    ws.close()
    return sent, rss_mb() - before


def test_streamed_attachments_are_refused_before_they_are_buffered(server, caplog):
    # twice, the smaller growth counted: this process also holds the module's in-process worker, whose idle
    # preparation of the pool allocates meanwhile (+8-15 MB seen under a full test run); a buffered stream
    # would grow it by ~40 MB each time
    (sent, first), (_, second) = stream_attachments(server), stream_attachments(server)
    grew = min(first, second)
    assert grew < RSS_GROWTH_ALLOWED_MB, f"{sent / 2**20:.1f} MB sent, RSS +{first:.1f} MB, then +{second:.1f} MB"
    assert not [r for r in ours(caplog) if r.exc_info]


@pytest.mark.parametrize("frame", [ATTACHMENTS_ANNOUNCED, '461-["x",{"_placeholder":true,"num":0}]', b"\x04binary"],
                         ids=["binary event", "binary ack", "binary frame"])
def test_binary_is_answered_and_closed(server, frame, caplog):
    ws = open_socket(server)
    ws.send_binary(frame) if isinstance(frame, bytes) else ws.send(frame)
    assert next_event(ws) == ["error", {"event": "?", "message": BINARY_REFUSED}]
    assert closed_by_server(ws)
    ws.close()
    assert not [r for r in ours(caplog) if r.exc_info]


@pytest.mark.parametrize("frame, message", [
    ('42["ask",{"game_id":"x"},{"x":1}]', ONE_PAYLOAD),             # two arguments: a TypeError before
    ('42["join",{"study":"aw"},1,2,3]', ONE_PAYLOAD),
    ('42["ask"]', None),                                            # no payload: the schema says what is missing
    ('42["zzz",1,2]', "unknown event 'zzz'"),
], ids=["two arguments", "four arguments", "no argument", "unknown with arguments"])
def test_events_with_the_wrong_arguments_are_answered(server, frame, message, caplog):
    ws = open_socket(server)
    try:
        for _ in range(3):                                          # answered every time, the connection open
            ws.send(frame)
            name, error = next_event(ws)
            assert name == "error" and error["message"]
            if message:
                assert error["message"] == message
    finally:
        ws.close()
    assert not [r for r in ours(caplog) if r.exc_info or r.levelno >= logging.ERROR]


def test_events_with_many_arguments_are_throttled_first(server):
    ws = open_socket(server)
    try:
        for _ in range(server.app.extensions["exag"].config.event_burst + 5):
            ws.send('42["ask",{"game_id":"x"},{"x":1}]')
        messages = [next_event(ws)[1]["message"] for _ in range(server.app.extensions["exag"].config.event_burst + 5)]
    finally:
        ws.close()
    assert "too many messages; please slow down" in messages and ONE_PAYLOAD in messages


def test_a_frame_over_the_buffer_limit_closes_the_connection(server):
    ws = open_socket(server)
    ws.send('42["ask",{"game_id":"' + "x" * 70_000 + '"}]')
    assert closed_by_server(ws)
    ws.close()


def test_handshakes_that_never_connect_are_bounded(server):
    """engine.io connections that never send Socket.IO's connect are counted per address too: past the limit
    (and its room for a refused tab to read why) the handshake is refused with 401 and holds nothing."""
    from server.transport_bounds import HANDSHAKE_ROOM
    limit = server.app.extensions["exag"].config.max_connections_per_address + HANDSHAKE_ROOM
    held = []          # earlier tests' closed connections may still count for a moment: open until refused
    try:
        with pytest.raises(websocket.WebSocketBadStatusException) as refused:
            for _ in range(limit + 1):
                held.append(open_socket(server, connect=False))
        assert refused.value.status_code == 401 and len(held) <= limit
        if held:
            held.pop().close()                      # a place freed is a place again
        deadline = time.monotonic() + 10
        while True:
            try:
                held.append(open_socket(server, connect=False))
                break
            except websocket.WebSocketBadStatusException:
                assert time.monotonic() < deadline
                time.sleep(0.2)
    finally:
        for ws in held:
            ws.close()


def test_one_huge_frame_is_refused_as_it_arrives(server):
    """simple-websocket held a whole message before engine.io measured it: 32 MB held for one frame. It is
    closed (1009, message too big) while it comes in. The frame is sent by another process, so this process's
    peak memory is the server's."""
    peak_before = peak_rss_mb()
    sender = subprocess.run([sys.executable, "-c", HUGE_FRAME_SENDER, server.url], capture_output=True, text=True,
                            timeout=120, cwd=Path(__file__).parent)
    assert sender.returncode == 0, sender.stderr[-2000:]
    assert sender.stdout.strip() == "closed"
    assert peak_rss_mb() - peak_before < RSS_GROWTH_ALLOWED_MB


HUGE_FRAME_SENDER = """
import sys, websocket
from test_frames import open_socket
from test_bounds import closed_by_server
server = type("Server", (), {"url": sys.argv[1]})
ws = open_socket(server)
ws.settimeout(10)
try:
    ws.send('42["ask",{"game_id":"' + "x" * (32 * 2**20) + '"}]')
    print("closed" if closed_by_server(ws) else "open")
except websocket.WebSocketTimeoutException:       # the server stopped reading the frame: refused
    print("closed")
except (websocket.WebSocketConnectionClosedException, ConnectionError, OSError):
    print("closed")
"""


def test_a_flood_of_unreadable_frames_is_throttled_then_closed(server):
    """Unreadable frames were answered every time; now they count against the connection's throttle, and past
    it the connection is closed."""
    ws = open_socket(server)
    burst = server.app.extensions["exag"].config.event_burst
    answered = 0
    try:
        for _ in range(burst + 10):
            ws.send('42["join", {"study": ')            # cut-off JSON
        for _ in range(burst):
            name, error = next_event(ws)
            answered += name == "error" and error["event"] == "?"
    except (websocket.WebSocketConnectionClosedException, ConnectionError, OSError):
        pass
    assert answered <= burst
    assert closed_by_server(ws)
    ws.close()
