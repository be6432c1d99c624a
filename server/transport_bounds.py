"""Bounds below Socket.IO, on what any client can make a web process hold before it is a player (issue 51):

- **a frame's size.** engine.io checks `max_http_buffer_size` (64 KB) only once a whole WebSocket message has
  arrived, and simple-websocket, which receives it, had no limit: one 32 MB frame was held whole. The WebSocket
  driver is given the same limit, so a longer message closes the connection (code 1009) as its bytes come in.
- **connections that never become players.** The per-address limit of server/events.py counts at Socket.IO's
  connect, with a message the page shows; an engine.io handshake that never sends Socket.IO's connect was not
  counted (50 from one address held 206 threads). Handshakes are counted here too, per address (with room for
  the refused one that reads its message) and in all, and past that refused (HTTP 401) before a thread waits on
  them.

`bound(socketio, max_per_address, max_in_all)` installs both on a Flask-SocketIO server (server/events.py).
"""
from __future__ import annotations

import threading

from engineio.async_drivers._websocket_wsgi import SimpleWebSocketWSGI
from flask_socketio import SocketIO

HANDSHAKE_ROOM = 2          # handshakes an address may hold beyond its Socket.IO limit: the refused tab reads why


def bound(socketio: SocketIO, max_per_address: int, max_in_all: int) -> None:
    eio = socketio.server.eio
    limit = eio.max_http_buffer_size

    class BoundedWebSocket(SimpleWebSocketWSGI):
        def __init__(self, handler, server, **options):
            super().__init__(handler, server, max_message_size=limit, **options)

    if eio._async.get("websocket") is SimpleWebSocketWSGI:     # the threading driver (the one we pin, ASYNC_MODE)
        eio._async = {**eio._async, "websocket": BoundedWebSocket}     # a copy: the driver's dict is shared

    counts: dict[str, int] = {}                   # address -> engine.io connections open
    address_of: dict[str, str] = {}               # engine.io sid -> its address
    lock = threading.Lock()
    connect, disconnect = socketio.server._handle_eio_connect, socketio.server._handle_eio_disconnect

    def counted_connect(eio_sid, environ):
        address = environ.get("REMOTE_ADDR", "")
        with lock:
            if counts.get(address, 0) >= max_per_address + HANDSHAKE_ROOM or len(address_of) >= max_in_all:
                return False                       # engine.io answers 401 and keeps nothing
            counts[address] = counts.get(address, 0) + 1
            address_of[eio_sid] = address
        accepted = connect(eio_sid, environ)
        if accepted is False:
            forget(eio_sid)
        return accepted

    def forget(eio_sid) -> None:
        with lock:
            address = address_of.pop(eio_sid, None)
            if address is not None:
                counts[address] -= 1
                if not counts[address]:
                    del counts[address]

    def counted_disconnect(eio_sid, *reason):
        forget(eio_sid)
        return disconnect(eio_sid, *reason)

    eio.on("connect", counted_connect)
    eio.on("disconnect", counted_disconnect)
