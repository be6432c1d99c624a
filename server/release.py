"""Releasing a participant (the console's Release, POST /admin/release): the participation's binding to its
browser and session is cleared, so that the next join, from any browser, binds again; and every connection
of the old binding is closed at once, on every web process, so that the old browser's idle tab receives none
of the owner's states after the owner joins from a new one.

Each connection that joins a participant enters two rooms (server/events.py): the participant's room, where
their states go, and the room of their binding (participant and browser). A release closes the binding's
room: this process disconnects its own connections in it, and the Socket.IO message queue (`EvictingQueue`)
has every other web process disconnect theirs. A new browser's connections are in another binding's room, so
a join that follows the release at once is never caught by it.

Joins refused because the participation is bound elsewhere (another browser or session) are kept for the
console, which offers their release: the latest BOUND_ELSEWHERE_KEPT per study, in a sorted set by time;
like every refusal they never enter the study's event log (DESIGN.md, "Integrity").

One person, one participation: the platform id (`prolific:PID`, `mturk:WORKER`; game/quality.py platform_id)
of a participation that consented is bound to it as well, in one hash per study (`CONSENTED`: platform id ->
participant id), claimed atomically at consent (`claim_platform_id`, HSETNX: of two sessions consenting at once,
one wins). A join or a consent of another session of that platform id is refused (server/play.py); the release
of the participation that holds it frees it. Before consent nothing is claimed: someone who knows another's
PROLIFIC_PID but not their session joins as a participation of their own and blocks nobody by joining.
"""
from __future__ import annotations

import time

from socketio import RedisManager

from game.quality import platform_id

from .store import Store

CONSENTED = "exag:consented:{}"      # per study: platform id -> the participation that consented with it
BUILT = ""                           # CONSENTED's field saying that it holds every consent (made by _rebuild)
# KEYS: CONSENTED; ARGV: the platform id, the participant id. The participation holding the platform id after the
# claim (this one unless another was first); nil when the hash was never built (build it first).
CLAIM = """
if redis.call('HEXISTS', KEYS[1], '') == 0 then return nil end
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
return redis.call('HGET', KEYS[1], ARGV[1])
"""
# KEYS: CONSENTED; ARGV: the platform id, the participant id: frees the platform id when this participation holds it
UNCLAIM = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0
"""

RELEASED = ("the researcher released this participation, and this tab is closed; if you did not change device, "
            "reload the page to go on here")
BOUND_ELSEWHERE_KEPT = 100
SUBSCRIBERS_COUNTED_S = 1.0     # how often a web process counts the others listening on the message queue


def room_of(who: tuple[str, str]) -> str:
    """The participant's room: all their tabs, on every web process, get their states."""
    return f"participant:{who[0]}:{who[1]}"


def binding_room(who: tuple[str, str], browser_key: str) -> str:
    """The room of the participant's connections from one browser (its `browser.key`)."""
    return f"binding:{who[0]}:{who[1]}:{browser_key}"


def disconnect_here(server, room: str) -> None:
    """Disconnects this web process's connections in `room` (python-socketio's server)."""
    for sid, _ in list(server.manager.get_participants("/", room)):
        server.disconnect(sid, ignore_queue=True)


class EvictingQueue(RedisManager):
    """The Socket.IO message queue (server/events.py `message_queue`) where closing a room disconnects its
    connections: python-socketio publishes close_room to every web process, and each disconnects its own.
    The game closes no room but a released binding's."""

    closed = False
    _others, _counted_at = 1, float("-inf")     # the channel's other subscribers, as last counted (_alone)

    def _publish(self, data):
        """Published only when another web process listens: alone (one process, the default on two cores) an
        emit is delivered here already (python-socketio handles each message in this host first), and its
        publishing cost a Redis round trip and a read back by this process's own listener, ~0.3 ms a message."""
        if data.get("method") != "wake" and self._alone():
            return None
        return super()._publish(data)

    def _alone(self) -> bool:
        """Whether this process is the channel's only subscriber (PUBSUB NUMSUB, counted at most once every
        SUBSCRIBERS_COUNTED_S: a process started meanwhile gets others' messages that much later)."""
        now = time.monotonic()
        if now - self._counted_at >= SUBSCRIBERS_COUNTED_S:
            self._counted_at = now
            listening = getattr(self, "pubsub", None)
            mine = 1 if listening is not None and listening.subscribed else 0
            try:
                self._others = self.redis.pubsub_numsub(self.channel)[0][1] - mine if self.redis is not None else 1
            except Exception:        # noqa: BLE001 - whatever Redis says, an unknown count publishes
                self._others = 1
        return self._others <= 0

    def _handle_close_room(self, message):
        disconnect_here(self.server, message.get("room"))
        super()._handle_close_room(message)

    def close(self) -> None:
        """Stops listening, for an app closed while its process goes on (tests): python-socketio's listener
        would otherwise try a stopped Redis again for as long as the process lives."""
        self.closed = True
        self._publish({"method": "wake", "host_id": self.host_id})   # wakes the listener; a method no process knows

    def _listen(self):
        for message in super()._listen():
            if self.closed:
                return                # python-socketio's listener then logs that it ended, and ends
            yield message


def release(store: Store, socketio, study_id: str, pid: str) -> bool:
    """Clears the participant's binding and their hold on their platform id, logs a `release` event and closes
    every connection of the old binding (told why first); False when the study has no such participant."""
    with store.locked(study_id, pid):
        participant = store.participant(study_id, pid)
        if participant is None:
            return False
        old = participant.get("binding")
        participant["binding"] = None
        store.commit(participant=participant, events=[{"type": "release", "study": study_id, "participant": pid,
                                                       "game": participant.get("current_game") or ""}])
        # under the participant's lock: no join binds again before the old binding's tabs are told
        store.redis.zrem(_bound_elsewhere_key(study_id), pid)
        if platform_id(pid):          # another session of the platform id may begin now
            store.redis.eval(UNCLAIM, 1, CONSENTED.format(study_id), platform_id(pid), pid)
        if old:
            room = binding_room((study_id, pid), old["browser"])
            socketio.emit("error", {"event": "release", "message": RELEASED}, to=room)
            disconnect_here(socketio.server, room)
            socketio.close_room(room)          # the other web processes' connections (EvictingQueue)
    return True


def _bound_elsewhere_key(study_id: str) -> str:
    return f"exag:bound-elsewhere:{study_id}"


def note_bound_elsewhere(store: Store, study_id: str, pid: str) -> None:
    """A join refused because the participation is bound to another browser or session."""
    key = _bound_elsewhere_key(study_id)
    pipe = store.redis.pipeline(transaction=False)
    pipe.zadd(key, {pid: time.time()})
    pipe.zremrangebyrank(key, 0, -BOUND_ELSEWHERE_KEPT - 1)
    pipe.execute()


def bound_elsewhere(store: Store, study_id: str) -> list[dict]:
    """The participants whose join was refused as bound elsewhere, latest first: {"pid", "refused": time}."""
    found = store.redis.zrevrange(_bound_elsewhere_key(study_id), 0, -1, withscores=True)
    return [{"pid": pid, "refused": refused} for pid, refused in found]


def consented_with(store: Store, study_id: str, platform: str | None) -> str | None:
    """The participation of the study that consented with this platform id (None: none, or no platform id)."""
    if platform is None:
        return None
    held, built = store.redis.hmget(CONSENTED.format(study_id), [platform, BUILT])
    if built is None:
        _rebuild(store, study_id)
        held = store.redis.hget(CONSENTED.format(study_id), platform)
    return held


def claim_platform_id(store: Store, study_id: str, platform: str | None, pid: str) -> str | None:
    """Binds the platform id to this consenting participation, atomically, unless another holds it: the holder
    after the claim (`pid`, or the other participation); None without a platform id."""
    if platform is None:
        return None
    held = store.redis.eval(CLAIM, 1, CONSENTED.format(study_id), platform, pid)
    if held is None:
        _rebuild(store, study_id)
        held = store.redis.eval(CLAIM, 1, CONSENTED.format(study_id), platform, pid)
    return held


def _rebuild(store: Store, study_id: str) -> None:
    """Makes the study's CONSENTED from its stored participants, once (consents from before the hash existed)."""
    with store.lock(f"consented:{study_id}"):
        key = CONSENTED.format(study_id)
        if store.redis.hexists(key, BUILT):
            return                                  # another process made it meanwhile
        pipe = store.redis.pipeline()
        for p in store.participants(study_id):
            if p["stage"] != "consent" and platform_id(p["pid"]):
                pipe.hsetnx(key, platform_id(p["pid"]), p["pid"])
        pipe.hset(key, BUILT, 1)
        pipe.execute()
