"""Thin Socket.IO handlers: throttle, validate, call Play, emit the new state (or a clear error).

Every event is answered: with `state` (the participant's whole view, also sent to their other open
tabs; `history` with `round`, to the asking tab only) or with `error` {"event", "message"}; a refused
message changes nothing. Refusals (and refused connections, unreadable frames) are noted in the capped
diagnostic stream (`Store.diagnose`), at most `refusals_logged_per_second` a client address, never in the
study's event log. A frame python-socketio cannot read (invalid JSON, too deep, not an event) is answered
with `error` {"event": "?"}, or closes a connection that has not connected yet. Each client address may
hold `max_connections_per_address` connections per web process (the throttles, per connection and per
address, also count per web process; a connection lives on one).

Any number of web processes share one Redis: `message_queue(url)` is the Socket.IO message queue on it,
so an emit to a participant's room reaches their tabs on every process.

What the web process spends is accounted per event in the Redis hash CPU_STATS (`exag:cpu:web`), summed
over web processes, which experiments/benchmark/cpu_budget.py reads: for each event of schemas.SCHEMAS,
`<event>:n` (messages handled, refused ones included) and `<event>:cpu_ms` (the handler thread's own CPU
time, time.thread_time, from the message's arrival in our handler to its answer's emit; not Flask-SocketIO's
context push, ~0.07 ms, nor the message queue's listener thread that delivers the emit). Each process keeps
running totals and adds them to the hash at most once every CPU_FLUSH_S, in one pipeline (CpuAccount).
"""
from __future__ import annotations

import logging
import threading
import time

import redis
from flask import request
from flask_socketio import ConnectionRefusedError, SocketIO, emit, join_room, leave_room
from redis.exceptions import LockError
from socketio import packet as sio_packet

from game.rules import RuleError

from . import browser, json_text
from .admission import ServerFull
from .config import ServerConfig
from .play import ANOTHER_BROWSER, Play, PlayError
from .release import EvictingQueue, binding_room, room_of
from .rounds import waiting_notice
from .schemas import SCHEMAS, SchemaError, validate
from .store import MAX_CONNECTIONS, Store, StoredJSON
from .throttle import Throttle
from .transport_bounds import bound

log = logging.getLogger(__name__)
UNREADABLE = "?"            # the `event` of the error that answers a frame the server could not read
RESERVED_EVENTS = ("connect", "disconnect")   # python-socketio would call these handlers for a client's event
ANSWERED_TO_SENDER = {"history": "round"}     # reads that change nothing: event -> the answer's event name
MESSAGE_QUEUE_CHANNEL = "exag:socketio"      # the Redis pub/sub channel all web processes of one Redis share
CPU_STATS = "exag:cpu:web"                   # CPU per event, summed over web processes (see the module docstring)
CPU_FLUSH_S = 1.0                            # how often a web process adds its totals to CPU_STATS (at most)
STORED_MARK = "\x00exag:stored-json"         # where as_text puts stored text (a player's text holds no NUL)
BINARY_PACKETS = ("5", "6")                  # Socket.IO's BINARY_EVENT and BINARY_ACK: attachments follow
BINARY_REFUSED = "binary messages are not accepted; the connection is closed"
ONE_PAYLOAD = "an event carries one payload: [name, payload]"


def message_queue(redis_url: str) -> EvictingQueue:
    """The Socket.IO message queue on the game's Redis (`SocketIO(client_manager=...)`): an emit is delivered
    to this process's clients at once and published for the other web processes on the same Redis, which
    deliver it to theirs. Given as a client manager, not as Flask-SocketIO's `message_queue=` URL, which
    sends any URL but redis:// and rediss:// to Kombu: redis-py reads the embedded Redis's unix:// URL. Closing
    a room disconnects its connections on every process: a researcher's release (server/release.py)."""
    # redis-py's default pool of 100 connections ran out under a crowd (every handler thread publishes its
    # emit): python-socketio then logged "Cannot publish to redis... retrying" and reconnected, thousands of
    # times a minute at 200 players; the pool is as large as the store's
    return EvictingQueue(redis_url, channel=MESSAGE_QUEUE_CHANNEL, redis_options={"max_connections": MAX_CONNECTIONS})


class UnreadableFrame(ValueError):
    """A frame that is no Socket.IO packet the game can read; the text is for the player."""


class Frame(sio_packet.Packet):
    """python-socketio's packet (`SocketIO(serializer=Frame)`), saying why a frame cannot be read: its
    own decoding raises a bare JSON or recursion error, which engine.io logs and drops unanswered. An event
    must also be a list [name, ...] whose name is not one of python-socketio's own connect/disconnect."""

    def decode(self, encoded_packet):
        try:
            attachments = super().decode(encoded_packet)
        except RecursionError:
            raise UnreadableFrame("the message is nested too deeply to be read") from None
        except (ValueError, TypeError) as error:      # invalid JSON, a bad id, a binary frame out of place
            raise UnreadableFrame(f"the message is not valid Socket.IO JSON ({str(error)[:120]})") from None
        if not isinstance(self.packet_type, int) or not 0 <= self.packet_type < len(sio_packet.packet_names):
            raise UnreadableFrame("the message is not a Socket.IO packet")
        if self.packet_type in (sio_packet.EVENT, sio_packet.BINARY_EVENT):
            if not (isinstance(self.data, list) and self.data and isinstance(self.data[0], str)):
                raise UnreadableFrame("an event must be a list: [name, payload]")
            if self.data[0] in RESERVED_EVENTS:
                raise UnreadableFrame(f"{self.data[0]!r} cannot be sent as an event")
        return attachments

    def add_attachment(self, attachment):
        try:
            return super().add_attachment(attachment)
        except ValueError as error:
            raise UnreadableFrame(f"the message is not valid Socket.IO ({error})") from None


class CpuAccount:
    """Running totals of the CPU each event's handler spends, added to CPU_STATS at most every CPU_FLUSH_S by
    a thread of their own (started with the first message: a web process may fork after it is made), so
    that accounting costs a message no Redis round trip."""

    def __init__(self, client: redis.Redis) -> None:
        self.redis = client
        self._pending: dict[str, list] = {}    # event -> [messages, cpu_ms] since the last flush
        self._mutex = threading.Lock()
        self._flusher: threading.Thread | None = None
        self._closed = threading.Event()

    def add(self, event: str, cpu_s: float) -> None:
        with self._mutex:
            totals = self._pending.setdefault(event, [0, 0.0])
            totals[0] += 1
            totals[1] += cpu_s * 1000
            if (self._flusher is None or not self._flusher.is_alive()) and not self._closed.is_set():
                self._flusher = threading.Thread(target=self._flush_every, name="cpu account", daemon=True)
                self._flusher.start()

    def flush(self) -> None:
        with self._mutex:
            pending, self._pending = self._pending, {}
        if not pending:
            return
        pipe = self.redis.pipeline(transaction=False)
        for event, (messages, cpu_ms) in pending.items():
            pipe.hincrby(CPU_STATS, f"{event}:n", messages)
            pipe.hincrbyfloat(CPU_STATS, f"{event}:cpu_ms", cpu_ms)
        try:
            pipe.execute()
        except redis.RedisError as error:     # accounting never breaks the game: these totals are lost
            log.warning("could not add the web process's CPU totals to %s: %s", CPU_STATS, error)

    def close(self) -> None:
        """Stops the thread and adds what is left."""
        self._closed.set()
        self.flush()

    def _flush_every(self) -> None:
        while not self._closed.wait(CPU_FLUSH_S):
            self.flush()


def as_text(view: dict) -> str:
    """The state as JSON text: python-socketio walks every object sent looking for binary parts, which
    costs ~100 ms on a late at-will state with its rounds of explanations (~400 KB); a string it does not.
    The latest round's explanations, as read from Redis (StoredJSON), are sent as the text they were stored
    as (the same encoding), not encoded again: they are most of an at-will state's bytes."""
    game = view.get("game") if isinstance(view, dict) else None
    latest = game["rounds"][-1] if isinstance(game, dict) and game.get("rounds") else None
    stored = latest.get("explanations") if isinstance(latest, dict) else None
    if not isinstance(stored, StoredJSON):
        return json_text.dumps(view)
    latest["explanations"] = STORED_MARK
    try:
        text = json_text.dumps(view)
    finally:
        latest["explanations"] = stored
    mark = json_text.dumps(STORED_MARK)
    if text.count(mark) != 1:     # the mark in the view's own text too (nothing sent holds a NUL): encode it all
        return json_text.dumps(view)
    return text.replace(mark, stored.text)


def register(socketio: SocketIO, play: Play, store: Store, config: ServerConfig) -> CpuAccount:
    """The handlers, on `socketio`; returns the process's CPU account (closed with the app)."""
    cpu = CpuAccount(store.redis)
    connections: dict[str, tuple[str, str]] = {}     # sid -> (study, pid) after a successful join
    throttle = Throttle(config.max_events_per_second, config.event_burst)          # messages, per connection
    noted = Throttle(config.refusals_logged_per_second, config.event_burst)        # diagnostics, per address
    addresses: dict[str, str] = {}                   # sid -> its client's address
    open_from: dict[str, int] = {}                   # address -> connections open
    counting = threading.Lock()

    def diagnose(kind: str, address: str, sid: str | None, **details) -> None:
        """Notes a refusal in the capped diagnostic stream, as often as the address may."""
        if not noted.allow(address):
            return
        who = connections.get(sid, ("", "")) if sid else ("", "")
        try:
            store.diagnose({"kind": kind, "address": address, "sid": sid or "", "study": who[0],
                            "participant": who[1], **details}, config.diagnostics_max_len)
        except Exception:   # noting a refusal must never break the answer
            log.exception("could not note a %s", kind)

    def refuse(event: str, message: str, payload_kind: str, **details) -> None:
        diagnose("refused", request.remote_addr or "", request.sid, event=event, message=message,
                 payload_kind=payload_kind)
        emit("error", {"event": event, "message": message, **details})

    @socketio.on("connect")
    def connect(auth=None):
        address = request.remote_addr or ""
        with counting:
            full = open_from.get(address, 0) >= config.max_connections_per_address
            everyone = len(addresses) >= config.max_connections_per_process
            if not full and not everyone:
                open_from[address] = open_from.get(address, 0) + 1
                addresses[request.sid] = address
        if full or everyone:
            message = (f"too many open connections from your address (at most {config.max_connections_per_address}); "
                       "close other tabs of the game and try again") if full else \
                "the server holds as many connections as it can; please try again in a few minutes"
            diagnose("connection_refused", address, None, message=message)
            raise ConnectionRefusedError(message)

    def unreadable(eio_sid: str, frame, why: str, reply: str, close: bool = False) -> None:
        """A frame the game does not take: answered with `error` (`reply`) while its connection is connected and
        its throttle allows (like any message: a flood of them closes it); closed before the connection has
        connected, past its throttle, or when `close` (binary data); noted either way."""
        server = socketio.server
        sid = server.manager.sid_from_eio_sid(eio_sid, "/")
        address = (server.environ.get(eio_sid) or {}).get("REMOTE_ADDR", "")
        answered = sid is not None and server.manager.is_connected(sid, "/") and (close or throttle.allow(sid))
        closing = close or not answered
        diagnose("unreadable", address, sid, event=UNREADABLE, message=why, frame=repr(frame[:120]),
                 action="closed" if closing else "answered")
        if answered:
            socketio.emit("error", {"event": UNREADABLE, "message": reply}, to=sid)
        if closing:
            log.info("closing %s (%s): %s", eio_sid, address, why)
            server.eio.disconnect(eio_sid)

    read = socketio.server._handle_eio_message    # python-socketio's reader of engine.io messages

    def read_or_answer(eio_sid: str, frame) -> None:
        # The game sends no binary data: a binary frame, or a binary event's header (packet types 5 and 6, which
        # announce attachments that python-socketio would keep, whatever their count, until the last one came),
        # closes the connection before anything is buffered
        if isinstance(frame, (bytes, bytearray)) or (isinstance(frame, str) and frame[:1] in BINARY_PACKETS):
            unreadable(eio_sid, frame, BINARY_REFUSED, BINARY_REFUSED, close=True)
            return
        try:
            read(eio_sid, frame)
        except ValueError as error:     # Frame's UnreadableFrame, and python-socketio's own for packets out of place
            unreadable(eio_sid, frame, str(error), f"the server could not read your message: {error}")

    socketio.server.eio.on("message", read_or_answer)
    bound(socketio, config.max_connections_per_address, config.max_connections_per_process)   # below Socket.IO

    def make_handler(event: str):
        def handle(*payloads):
            started = time.thread_time()
            # a round that waits on busy workers tells this player its answer is coming (server/rounds.py)
            sid = request.sid
            notice = waiting_notice.set(lambda message: socketio.emit("notice", {"event": event, "message": message},
                                                                      to=sid))
            try:
                answer(*payloads)
            finally:
                waiting_notice.reset(notice)
                cpu.add(event, time.thread_time() - started)

        def answer(payload=None, *more) -> None:
            sid = request.sid
            if not throttle.allow(sid):
                refuse(event, "too many messages; please slow down", type(payload).__name__)
                return
            if more:       # Socket.IO lets an event carry any number of arguments; the game's carry one
                refuse(event, ONE_PAYLOAD, "arguments")
                return
            try:
                data = validate(event, payload)
                if event == "join":
                    old, cookie = connections.get(sid), request.cookies.get(browser.COOKIE)   # the handshake's
                    who, view, message = play.join(data, cookie, joined_on_this_connection=old)
                    connections[sid] = who
                    if old != who:
                        if old is not None:
                            leave_room(room_of(old))
                            leave_room(binding_room(old, play.browsers.key(cookie)))
                        join_room(room_of(who))
                        join_room(binding_room(who, play.browsers.key(cookie)))   # what a release closes
                    emit("state", as_text(view), to=room_of(who))
                    if message:
                        emit("error", {"event": event, "message": message})
                    return
                who = connections.get(sid)
                if who is None:
                    raise PlayError("join the study first")
                if not play.still_bound(who, request.cookies.get(browser.COOKIE)):
                    connections.pop(sid, None)      # released and taken over elsewhere: this tab is done
                    leave_room(room_of(who))
                    leave_room(binding_room(who, play.browsers.key(request.cookies.get(browser.COOKIE))))
                    raise PlayError(ANOTHER_BROWSER)
                if event in ("ask", "explain"):     # a question that will wait for a starting agent says so
                    waiting = play.agent_starting(who)
                    if waiting:
                        emit("notice", {"event": event, "message": waiting})
                if event in ANSWERED_TO_SENDER:     # a read: only the asking tab gets the answer
                    emit(ANSWERED_TO_SENDER[event], as_text(getattr(play, event)(who, data)))
                    return
                view = getattr(play, event)(who, data)
                emit("state", as_text(view), to=room_of(who))
            except ServerFull as error:     # a new participant turned away for load: the page says when to come back
                refuse(event, str(error), "full", full={"retry_after_s": error.retry_after_s})
            except (SchemaError, PlayError, RuleError) as error:
                refuse(event, str(error), type(payload).__name__)
            except LockError:
                refuse(event, "the server is busy with your previous message; try again", "lock")
            except Exception:
                if noted.allow(request.remote_addr or ""):    # a traceback per frame would let a client fill the disk
                    log.exception("%s failed", event)
                emit("error", {"event": event, "message": "something went wrong on the server; your game is unchanged"})
        return handle

    for event in SCHEMAS:
        socketio.on_event(event, make_handler(event))

    @socketio.on("*")
    def unknown(event, *args):
        name = str(event)[:64]
        if not throttle.allow(request.sid):
            refuse(name, "too many messages; please slow down", "unknown")
            return
        refuse(name, f"unknown event {name!r}", "unknown")

    @socketio.on("disconnect")
    def disconnect(*args):
        connections.pop(request.sid, None)
        throttle.forget(request.sid)
        with counting:
            address = addresses.pop(request.sid, None)
            if address is not None:
                open_from[address] -= 1
                if not open_from[address]:
                    del open_from[address]

    return cpu
