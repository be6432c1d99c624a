"""Thin Socket.IO handlers: throttle, validate, call Play, emit the new state (or a clear error).

Every event is answered: with `state` (the participant's whole view, also sent to their other open
tabs) or with `error` {"event", "message"}; a refused message changes nothing and is logged.
"""
from __future__ import annotations

import json
import logging
import threading
import time

from flask import request
from flask_socketio import SocketIO, emit, join_room, leave_room
from redis.exceptions import LockError

from game.rules import RuleError

from .play import Play, PlayError
from .schemas import SCHEMAS, SchemaError, validate
from .store import Store

log = logging.getLogger(__name__)


class Throttle:
    """A token bucket per connection: `rate` messages per second on average, bursts up to `burst`."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, burst
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def allow(self, key: str) -> bool:
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            allowed = tokens >= 1
            self._buckets[key] = (tokens - 1 if allowed else tokens, now)
            return allowed

    def forget(self, key: str) -> None:
        with self._lock:
            self._buckets.pop(key, None)


def as_text(view: dict) -> str:
    """The state as JSON text: python-socketio walks every object sent looking for binary parts, which
    costs ~100 ms on a late at-will state with its rounds of explanations (~400 KB); a string it does not."""
    return json.dumps(view, separators=(",", ":"))


def room_of(who: tuple[str, str]) -> str:
    return f"participant:{who[0]}:{who[1]}"


def register(socketio: SocketIO, play: Play, store: Store, throttle: Throttle) -> None:
    connections: dict[str, tuple[str, str]] = {}     # sid -> (study, pid) after a successful join
    last_refusal_logged: dict[str, float] = {}

    def refuse(event: str, message: str, payload_kind: str, flood: bool = False) -> None:
        sid = request.sid
        now = time.monotonic()
        if not flood or now - last_refusal_logged.get(sid, 0) >= 1.0:   # a flood is logged once a second
            if flood:
                last_refusal_logged[sid] = now
            who = connections.get(sid, ("", ""))
            try:
                store.log({"type": "refused", "study": who[0], "participant": who[1], "event": event,
                           "message": message, "payload_kind": payload_kind})
            except Exception:   # logging a refusal must never break the answer
                log.exception("could not log a refused message")
        emit("error", {"event": event, "message": message})

    def make_handler(event: str):
        def handle(payload=None):
            sid = request.sid
            if not throttle.allow(sid):
                refuse(event, "too many messages; please slow down", type(payload).__name__, flood=True)
                return
            try:
                data = validate(event, payload)
                if event == "join":
                    who, view, message = play.join(data)
                    old = connections.get(sid)
                    connections[sid] = who
                    if old != who:
                        if old is not None:
                            leave_room(room_of(old))
                        join_room(room_of(who))
                    emit("state", as_text(view), to=room_of(who))
                    if message:
                        emit("error", {"event": event, "message": message})
                    return
                who = connections.get(sid)
                if who is None:
                    raise PlayError("join the study first")
                view = getattr(play, event)(who, data)
                emit("state", as_text(view), to=room_of(who))
            except (SchemaError, PlayError, RuleError) as error:
                refuse(event, str(error), type(payload).__name__)
            except LockError:
                refuse(event, "the server is busy with your previous message; try again", "lock")
            except Exception:
                log.exception("%s failed", event)
                emit("error", {"event": event, "message": "something went wrong on the server; your game is unchanged"})
        return handle

    for event in SCHEMAS:
        socketio.on_event(event, make_handler(event))

    @socketio.on("*")
    def unknown(event, *args):
        name = str(event)[:64]
        if not throttle.allow(request.sid):
            refuse(name, "too many messages; please slow down", "unknown", flood=True)
            return
        refuse(name, f"unknown event {name!r}", "unknown")

    @socketio.on("disconnect")
    def disconnect(*args):
        connections.pop(request.sid, None)
        last_refusal_logged.pop(request.sid, None)
        throttle.forget(request.sid)
