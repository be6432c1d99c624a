"""Redis state and the event stream: studies, participants, games and every event, under `exag:` keys.

Every state change is one transaction (MULTI/EXEC) that writes the new state and appends its event
to the stream `exag:events`, so an event is durable (append-only file, fsync always) before the
player is answered, and no reader ever sees a state without its event. Actions of one participant are
serialised by a Redis lock, so any number of server processes can share one Redis.

The locks (server/locks.py) live seconds unless their holder is alive and working. A commit can release
its caller's lock in its own transaction (`commit(release=...)`): with the append-only file's fsync on every
write, each write is a wait. When Redis goes away (the embedded one is restarted from its append-only file),
every command waits for it with the client's retries (RECONNECT_TRIES, about 10 s), and a commit whose
reply was lost is not applied twice: its transaction also sets a mark, which says whether it ran.

Refused messages are not study events: they go to the capped stream `exag:diagnostics` (`diagnose`).

The web process reads a participant's study, state and game for every message, so reads that go
together are pipelined (`participant_and_study`, `participant_and_game`, `game_with_latest_round`), and a
study's stored text is parsed once (StudyConfig is frozen).
"""
from __future__ import annotations

import functools
import secrets
import time
from dataclasses import fields, is_dataclass, replace
from typing import Callable, Iterator

import redis
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.lock import Lock
from redis.retry import Retry

from game.state import GameState
from game.study import StudyConfig

from . import json_text
from .admission import record_active
from .locks import LOCK_TIMEOUT_S, LOCK_WAIT_S, Held, Locks   # noqa: F401 - LOCK_*: also read from here
from .slots import record_seen

EVENTS = "exag:events"
DIAGNOSTICS = "exag:diagnostics"   # refusals and other diagnostics: capped, never read by the export
RECONNECT_TRIES = 22       # a lost connection is tried again after 0.1, 0.2, 0.4, then every 0.5 s: ~10 s in all
COMMIT_MARK_S = 120        # how long a commit's mark says that it ran (longer than any reconnection)
MAX_CONNECTIONS = 4096     # per client; redis-py's default of 100 ran out at ~100 players, as every round in
                           # flight holds a connection for its BLPOP (the reply)
COMMIT_ATTEMPTS = 3        # a commit is sent again at most twice after a lost connection
STUDIES_PARSED = 64        # stored study texts kept parsed (more are parsed again)


def _json(value) -> str:
    """Compact JSON; a dataclass (a game's state) is written as dataclasses.asdict would give it, but without
    asdict's deep copies, which cost more than the rest of a message."""
    return json_text.dumps(value, default=_dataclass_fields)


def _dataclass_fields(value) -> dict:
    if is_dataclass(value) and not isinstance(value, type):
        return {name: getattr(value, name) for name in _field_names(type(value))}
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


class StoredJSON(dict):
    """A JSON object read from Redis that keeps the text it was stored as (by `_json`, the same encoding the
    server sends), so that server/events.py `as_text` sends that text instead of encoding the object again: a
    round's explanations are most of an at-will state's bytes. Read-only: a change would not reach the text."""

    def __init__(self, value: dict, text: str) -> None:
        super().__init__(value)
        self.text = text


class Store:
    def __init__(self, client: redis.Redis, once: redis.Redis | None = None) -> None:
        """once: a client that never retries by itself, for commits (they check their mark instead of
        being sent again blindly); without one, commits use `client`."""
        self.redis = client
        self._once = once or client
        self._studies: dict[str, tuple[StudyConfig, str]] = {}   # stored text -> (config, status)
        self.locks = Locks(client)                                  # the participants' locks this process holds

    @classmethod
    def connect(cls, url: str) -> "Store":
        def client(retry: Retry) -> redis.Redis:
            return redis.Redis.from_url(url, decode_responses=True, health_check_interval=30, retry=retry,
                                        max_connections=MAX_CONNECTIONS)
        return cls(client(Retry(ExponentialBackoff(cap=0.5, base=0.05), retries=RECONNECT_TRIES)),
                   once=client(Retry(NoBackoff(), 0)))

    def close(self) -> None:
        self.locks.close()
        self.redis.close()
        if self._once is not self.redis:
            self._once.close()

    def ping(self) -> bool:
        """Whether Redis answers now (no retries: /healthz tells the truth at once)."""
        try:
            return bool(self._once.ping())
        except redis.RedisError:
            return False

    # --- studies ----------------------------------------------------------------------------------

    def study(self, study_id: str) -> tuple[StudyConfig, str] | None:
        """The study's config and status ("open" or "closed"), or None."""
        raw = self.redis.get(f"exag:study:{study_id}")
        return None if raw is None else self._parsed_study(raw)

    def _parsed_study(self, raw: str) -> tuple[StudyConfig, str]:
        """A stored study, parsed once per text (the text holds the id, and changes with the status or a seed
        drawn); the config is frozen, so every caller may share it."""
        found = self._studies.get(raw)
        if found is None:
            data = json_text.loads(raw)
            # a study stored before orders existed ran every participant without explanations first: it keeps that
            found = StudyConfig.from_dict({"order": "abab", **data["config"]}), data["status"]
            if len(self._studies) >= STUDIES_PARSED:
                self._studies.clear()
            self._studies[raw] = found
        return found

    def studies(self) -> list[tuple[StudyConfig, str]]:
        found = [self.study(s) for s in sorted(self.redis.smembers("exag:studies"))]
        return [s for s in found if s is not None]

    def save_study(self, study: StudyConfig, status: str = "open", event: dict | None = None,
                   only_if_new: bool = False) -> bool:
        """Stores the study (and appends `event`). A study without a seed gets its assignment's seed drawn here
        (game/assignment.py), also into the event's "config", so the stored and exported config always has it."""
        key = f"exag:study:{study.study_id}"
        if only_if_new and self.redis.exists(key):
            return False
        if study.seed is None:
            study = replace(study, seed=secrets.randbits(63))
            if event and "config" in event:
                event = {**event, "config": study.to_dict()}

        def write(pipe) -> None:
            pipe.set(key, _json({"config": study.to_dict(), "status": status}))
            pipe.sadd("exag:studies", study.study_id)
            if event:
                self.add_event(pipe, event)
        self.transaction(write)
        return True

    def close_study(self, study_id: str, because: str) -> bool:
        """Closes an open study to new joins with the reason the console shows (`closed_because`; opening it
        again clears it) and logs a `study_closed` event; False when it was not open."""
        key = f"exag:study:{study_id}"

        def write(pipe) -> bool:
            raw = pipe.get(key)
            data = json_text.loads(raw) if raw else None
            if data is None or data["status"] != "open":
                return False
            pipe.multi()
            pipe.set(key, _json({**data, "status": "closed", "closed_because": because}))
            self.add_event(pipe, {"type": "study_closed", "time": time.time(), "study": study_id, "because": because})
            return True
        return self.redis.transaction(write, key, value_from_callable=True)

    def closed_because(self, study_id: str) -> str | None:
        """Why a study closed itself (Store.close_study), None when it did not."""
        raw = self.redis.get(f"exag:study:{study_id}")
        return json_text.loads(raw).get("closed_because") if raw else None

    # --- participants -----------------------------------------------------------------------------

    @staticmethod
    def _participant_key(study_id: str, pid: str) -> str:
        return f"exag:participant:{study_id}:{pid}"

    def participant(self, study_id: str, pid: str) -> dict | None:
        raw = self.redis.get(self._participant_key(study_id, pid))
        return json_text.loads(raw) if raw else None

    def participant_and_study(self, study_id: str, pid: str, game_id: str | None = None) -> tuple[
            dict | None, tuple[StudyConfig, str] | None, tuple[GameState, dict, dict | None] | None]:
        """`participant` and `study` in one round trip, and with them `game_with_latest_round(game_id)` when a
        game is named (else None)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.get(self._participant_key(study_id, pid))
        pipe.get(f"exag:study:{study_id}")
        if game_id is not None:
            self._read_game_with_latest_round(pipe, game_id)
        raw_participant, raw_study, *raw_game = pipe.execute()
        return (json_text.loads(raw_participant) if raw_participant else None,
                self._parsed_study(raw_study) if raw_study is not None else None,
                self._game_with_latest_round(game_id, *raw_game) if game_id is not None else None)

    def participant_and_game(self, study_id: str, pid: str, game_id: str) -> tuple[dict | None,
                                                                                  tuple[GameState, dict] | None]:
        """`participant` and `game` in one round trip."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.get(self._participant_key(study_id, pid))
        pipe.get(f"exag:game:{game_id}")
        raw_participant, raw_game = pipe.execute()
        return json_text.loads(raw_participant) if raw_participant else None, self._parsed_game(raw_game)

    def participants(self, study_id: str) -> list[dict]:
        pids = sorted(self.redis.smembers(f"exag:participants:{study_id}"))
        raws = self.redis.mget([self._participant_key(study_id, p) for p in pids]) if pids else []
        return [json_text.loads(r) for r in raws if r]

    def locked(self, study_id: str, pid: str):
        """Serialises one participant's actions (LockError when the previous one holds it too long)."""
        return self.lock(f"{study_id}:{pid}")

    def lock(self, name: str):
        """The Redis lock `exag:lock:NAME`, held while the block runs (server/locks.py `Locks.lock`); it yields
        the Held lock, which a commit can release (`commit(release=(held,))`)."""
        return self.locks.lock(name)

    # --- games ------------------------------------------------------------------------------------

    def game(self, game_id: str) -> tuple[GameState, dict] | None:
        """The game's state and its server-side record (study, pid, arm, modes, ...)."""
        return self._parsed_game(self.redis.get(f"exag:game:{game_id}"))

    @staticmethod
    def _parsed_game(raw: str | None) -> tuple[GameState, dict] | None:
        if raw is None:
            return None
        data = json_text.loads(raw)
        return GameState.from_dict(data["state"]), data["record"]

    def game_with_latest_round(self, game_id: str) -> tuple[GameState, dict, dict | None] | None:
        """`game` and the `round_explanation` of its latest round (None before the first round), in one round trip:
        a game's explanations hold one entry per round (`commit`, new_round), so the latest is the last."""
        pipe = self.redis.pipeline(transaction=False)
        self._read_game_with_latest_round(pipe, game_id)
        return self._game_with_latest_round(game_id, *pipe.execute())

    @staticmethod
    def _read_game_with_latest_round(pipe, game_id: str) -> None:
        pipe.get(f"exag:game:{game_id}")
        pipe.llen(f"exag:game:{game_id}:explanations")
        pipe.lindex(f"exag:game:{game_id}:explanations", -1)

    def _game_with_latest_round(self, game_id: str, raw: str | None, length: int,
                                last: str | None) -> tuple[GameState, dict, dict | None] | None:
        found = self._parsed_game(raw)
        if found is None:
            return None
        state, record = found
        if not state.rounds:
            return state, record, None
        if length != len(state.rounds):     # not one entry per round (a game written otherwise): read it by its index
            return state, record, self.round_explanation(game_id, len(state.rounds) - 1)
        value = json_text.loads(last) if last else None
        return state, record, StoredJSON(value, last) if isinstance(value, dict) else value

    def games(self, game_ids: list[str]) -> list[tuple[GameState, dict]]:
        """Many games in one round trip (those that exist)."""
        raws = self.redis.mget([f"exag:game:{g}" for g in game_ids]) if game_ids else []
        return [(GameState.from_dict(d["state"]), d["record"]) for d in map(json_text.loads, filter(None, raws))]

    def round_explanation(self, game_id: str, index: int) -> dict | None:
        """What the player was shown in one round (player-safe), or None for a round without."""
        raw = self.redis.lindex(f"exag:game:{game_id}:explanations", index)
        return json_text.loads(raw) if raw else None

    # --- the one write path -----------------------------------------------------------------------

    def commit(self, *, participant: dict | None = None, game: tuple[GameState, dict] | None = None,
               new_round: dict | None | bool = False, set_round: tuple[int, dict] | None = None,
               events: list[dict] = (), stats: dict[str, int] | None = None, release: tuple[Held, ...] = ()) -> None:
        """Writes the changed state and appends its events in one transaction.
        new_round: the explanations shown with a new round (None = none; False = no new round).
        stats: counters to add to the game's study statistics (win rates by arm).
        release: locks held by the caller (`lock`), released by the same transaction (each only while it is
        still the caller's): the caller's last write under them."""
        def write(pipe) -> None:
            if participant is not None:
                key = self._participant_key(participant["study"], participant["pid"])
                pipe.set(key, _json(participant))
                pipe.sadd(f"exag:participants:{participant['study']}", participant["pid"])
                record_seen(pipe, participant)      # their slot of the assignment is held (server/slots.py)
                record_active(pipe, participant)    # they count for admission (server/admission.py)
            if game is not None:
                state, record = game
                pipe.set(f"exag:game:{state.game_id}", _json({"state": state, "record": record}))   # as state.to_dict()
                if new_round is not False:
                    pipe.rpush(f"exag:game:{state.game_id}:explanations", _json(new_round))
                if set_round is not None:
                    pipe.lset(f"exag:game:{state.game_id}:explanations", set_round[0], _json(set_round[1]))
            if stats:
                for field, amount in stats.items():
                    pipe.hincrby(f"exag:stats:{game[1]['study']}", field, amount)
            for event in events:
                self.add_event(pipe, event)
            for held in release:    # redis-py's own release script, with the holder's token
                pipe.eval(Lock.LUA_RELEASE_SCRIPT, 1, held.lock.name, held.lock.local.token)
        self.transaction(write)
        for held in release:
            self.locks.released(held)

    def transaction(self, write: Callable) -> None:
        """Runs write(pipe)'s commands as one MULTI/EXEC, exactly once: when the connection breaks and
        hides whether EXEC ran, the transaction's mark (set with it) is read once Redis answers again, and
        the transaction is sent again only when the mark is not there."""
        mark = f"exag:commit:{secrets.token_hex(8)}"
        for attempt in range(COMMIT_ATTEMPTS):
            pipe = self._once.pipeline(transaction=True)
            write(pipe)
            pipe.set(mark, 1, ex=COMMIT_MARK_S)
            try:
                pipe.execute()
                return
            except (redis.ConnectionError, redis.TimeoutError):
                if self._once is self.redis or attempt == COMMIT_ATTEMPTS - 1:   # that client has retried already
                    raise
                if self.redis.exists(mark):      # waits for Redis with the client's retries; raises if none
                    return

    def log(self, event: dict) -> None:
        """A study event without a state change."""
        self.transaction(lambda pipe: self.add_event(pipe, event))

    def diagnose(self, entry: dict, max_len: int) -> None:
        """A diagnostic (a refused message, a refused connection) into the capped stream DIAGNOSTICS,
        which keeps about the last `max_len`; never into the study's event log."""
        fields = {"time": f"{time.time():.6f}", **{k: v if isinstance(v, str) else _json(v) for k, v in entry.items()}}
        self.redis.xadd(DIAGNOSTICS, fields, maxlen=max_len, approximate=True)

    def diagnostics(self, count: int = 100) -> list[dict]:
        """The latest diagnostics, newest first."""
        return [{"id": entry_id, **fields} for entry_id, fields in self.redis.xrevrange(DIAGNOSTICS, count=count)]

    @staticmethod
    def add_event(pipe, event: dict) -> None:
        fields = {"type": event["type"], "time": f"{event.get('time', time.time()):.6f}",
                  "study": event.get("study") or "", "participant": event.get("participant") or "",
                  "game": event.get("game") or "",
                  "payload": _json({k: v for k, v in event.items()
                                    if k not in ("type", "time", "study", "participant", "game")})}
        pipe.xadd(EVENTS, fields)

    # --- reading the log --------------------------------------------------------------------------

    def events(self, batch: int = 5000) -> Iterator[dict]:
        """Every event in order, as {"id", "type", "time", "study", "participant", "game", **payload}."""
        start = "-"
        while True:
            chunk = self.redis.xrange(EVENTS, min=start, count=batch)
            if not chunk:
                return
            for event_id, fields in chunk:
                yield {"id": event_id, "type": fields["type"], "time": float(fields["time"]),
                       "study": fields["study"], "participant": fields["participant"], "game": fields["game"],
                       **json_text.loads(fields["payload"])}
            start = "(" + chunk[-1][0]

    def stats(self, study_id: str) -> dict[str, int]:
        return {k: int(v) for k, v in self.redis.hgetall(f"exag:stats:{study_id}").items()}
