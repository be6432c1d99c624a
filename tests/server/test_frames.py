"""Frames the server cannot read (invalid JSON, 30,000-deep nesting, no event) are answered with `error`
(event "?"), or close a connection that has not connected yet, each noted in the diagnostic stream; the
server goes on serving (issue 10, finding 11). Real websockets: raw frames are what a test client can't send."""
from __future__ import annotations

import json

import pytest
import websocket

DIAGNOSTICS = "exag:diagnostics"
REPLY_TIMEOUT_S = 60        # only against a hang: a busy machine may take seconds to answer a frame
UNREADABLE_FRAMES = [
    '42["join", {"study": ',                       # cut-off JSON
    "42" + "[" * 30000 + "]" * 30000,              # nested deeper than any parser goes
    '42{"study": "aw"}',                            # JSON, but no event
    "42[]",
    '42["disconnect"]',                             # python-socketio's own handler, not the client's to call
    "4not a packet",
]


def open_socket(server, connect: bool = True) -> websocket.WebSocket:
    ws = websocket.create_connection(server.url.replace("http://", "ws://") + "/socket.io/?EIO=4&transport=websocket",
                                     timeout=REPLY_TIMEOUT_S)
    assert ws.recv().startswith("0")                # engine.io's open
    if connect:
        ws.send("40")                                # Socket.IO connect to "/"
        assert ws.recv().startswith("40")
    return ws


def next_event(ws: websocket.WebSocket) -> list:
    for _ in range(10):
        frame = ws.recv()
        if frame == "2":                             # engine.io ping
            ws.send("3")
        elif frame.startswith("42"):
            return json.loads(frame[2:])
    raise AssertionError("no event")


def test_unreadable_frames_are_answered_and_noted(live_server):
    redis = live_server.app.extensions["exag"].store.redis
    ws, bystander = open_socket(live_server), open_socket(live_server)
    try:
        for frame in UNREADABLE_FRAMES:
            ws.send(frame)
            name, error = next_event(ws)
            assert name == "error" and error["event"] == "?" and error["message"], frame[:40]
        ws.send('42["nonsense", {}]')                # the connection still works
        assert next_event(ws) == ["error", {"event": "nonsense", "message": "unknown event 'nonsense'"}]
        bystander.send('42["nonsense", {}]')         # and so does everyone else's
        assert next_event(bystander)[0] == "error"
    finally:
        ws.close()
        bystander.close()
    noted = [entry for _, entry in redis.xrange(DIAGNOSTICS) if entry["kind"] == "unreadable"]
    assert len(noted) == len(UNREADABLE_FRAMES) and {entry["action"] for entry in noted} == {"answered"}
    assert any("nested too deeply" in entry["message"] for entry in noted)


def test_an_unreadable_connect_closes_the_connection(live_server):
    redis = live_server.app.extensions["exag"].store.redis
    ws = open_socket(live_server, connect=False)
    try:
        ws.send('40{"token": ')
        with pytest.raises((websocket.WebSocketConnectionClosedException, ConnectionError)):
            for _ in range(5):
                frame = ws.recv()
                assert frame in ("2", "1", ""), frame    # a ping, engine.io's close, or the socket's end
                if frame in ("1", ""):
                    raise websocket.WebSocketConnectionClosedException(frame)
    finally:
        ws.close()
    latest = redis.xrevrange(DIAGNOSTICS, count=1)[0][1]
    assert latest["kind"] == "unreadable" and latest["action"] == "closed"
