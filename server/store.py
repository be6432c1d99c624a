"""Redis state and the event stream: studies, participants, games and every event, under `exag:` keys.

Every state change is one transaction (MULTI/EXEC) that writes the new state and appends its event
to the stream `exag:events`, so an event is durable (append-only file, fsync always) before the
player is answered, and no reader ever sees a state without its event. Actions of one participant are
serialised by a Redis lock, so any number of server processes can share one Redis.

The lock lives LOCK_TIMEOUT_S and is renewed while its holder works, so a crashed holder's lock is gone
within seconds. When Redis goes away (the embedded one is restarted from its append-only file), every
command waits for it with the client's retries (RECONNECT_TRIES, about 10 s), and a commit whose reply was
lost is not applied twice: its transaction also sets a mark, which says whether it ran.

Refused messages are not study events: they go to the capped stream `exag:diagnostics` (`diagnose`).
"""
from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from contextlib import contextmanager
from dataclasses import replace
from typing import Callable, Iterator

import redis
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.exceptions import LockError
from redis.retry import Retry

from game.state import GameState
from game.study import StudyConfig

EVENTS = "exag:events"
DIAGNOSTICS = "exag:diagnostics"   # refusals and other diagnostics: capped, never read by the export
LOCK_TIMEOUT_S = 6         # a crashed holder's lock expires after this ...
LOCK_RENEW_S = 2           # ... while a live holder renews it this often
LOCK_WAIT_S = 10           # how long a participant's next message waits for the previous one
RECONNECT_TRIES = 22       # a lost connection is tried again after 0.1, 0.2, 0.4, then every 0.5 s: ~10 s in all
COMMIT_MARK_S = 120        # how long a commit's mark says that it ran (longer than any reconnection)
MAX_CONNECTIONS = 4096     # per client; redis-py's default of 100 ran out at ~100 players, as every round in
                           # flight holds a connection for its BLPOP (the reply) and every lock renews on its own
COMMIT_ATTEMPTS = 3        # a commit is sent again at most twice after a lost connection
log = logging.getLogger(__name__)


def _json(value) -> str:
    return json.dumps(value, separators=(",", ":"))


class Store:
    def __init__(self, client: redis.Redis, once: redis.Redis | None = None) -> None:
        """once: a client that never retries by itself, for commits (they check their mark instead of
        being sent again blindly); without one, commits use `client`."""
        self.redis = client
        self._once = once or client

    @classmethod
    def connect(cls, url: str) -> "Store":
        def client(retry: Retry) -> redis.Redis:
            return redis.Redis.from_url(url, decode_responses=True, health_check_interval=30, retry=retry,
                                        max_connections=MAX_CONNECTIONS)
        return cls(client(Retry(ExponentialBackoff(cap=0.5, base=0.05), retries=RECONNECT_TRIES)),
                   once=client(Retry(NoBackoff(), 0)))

    def close(self) -> None:
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
        if raw is None:
            return None
        data = json.loads(raw)
        # a study stored before orders existed ran every participant without explanations first: it keeps that
        return StudyConfig.from_dict({"order": "abab", **data["config"]}), data["status"]

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

    # --- participants -----------------------------------------------------------------------------

    @staticmethod
    def _participant_key(study_id: str, pid: str) -> str:
        return f"exag:participant:{study_id}:{pid}"

    def participant(self, study_id: str, pid: str) -> dict | None:
        raw = self.redis.get(self._participant_key(study_id, pid))
        return json.loads(raw) if raw else None

    def participants(self, study_id: str) -> list[dict]:
        pids = sorted(self.redis.smembers(f"exag:participants:{study_id}"))
        raws = self.redis.mget([self._participant_key(study_id, p) for p in pids]) if pids else []
        return [json.loads(r) for r in raws if r]

    def locked(self, study_id: str, pid: str):
        """Serialises one participant's actions (LockError when the previous one holds it too long)."""
        return self.lock(f"{study_id}:{pid}")

    @contextmanager
    def lock(self, name: str) -> Iterator[None]:
        """The Redis lock `exag:lock:NAME`, renewed every LOCK_RENEW_S while the block runs, so that it
        outlives slow work (inference) but not a crashed holder: that one's lock is gone after LOCK_TIMEOUT_S."""
        lock = self.redis.lock(f"exag:lock:{name}", timeout=LOCK_TIMEOUT_S, blocking_timeout=LOCK_WAIT_S,
                               thread_local=False)      # the renewing thread uses the holder's token
        if not lock.acquire():
            raise LockError(f"could not take the lock {name} within {LOCK_WAIT_S} s")
        done = threading.Event()

        def renew() -> None:
            while not done.wait(LOCK_RENEW_S):
                try:
                    lock.reacquire()
                except (LockError, redis.RedisError) as error:
                    log.warning("could not renew the lock %s: %s", name, error)

        renewer = threading.Thread(target=renew, name=f"renew {name}", daemon=True)
        renewer.start()
        try:
            yield
        finally:
            done.set()
            renewer.join()
            try:
                lock.release()
            except LockError:   # it expired while Redis was away: the work is done either way
                log.warning("the lock %s had expired before it was released", name)

    # --- games ------------------------------------------------------------------------------------

    def game(self, game_id: str) -> tuple[GameState, dict] | None:
        """The game's state and its server-side record (study, pid, arm, modes, ...)."""
        raw = self.redis.get(f"exag:game:{game_id}")
        if raw is None:
            return None
        data = json.loads(raw)
        return GameState.from_dict(data["state"]), data["record"]

    def games(self, game_ids: list[str]) -> list[tuple[GameState, dict]]:
        """Many games in one round trip (those that exist)."""
        raws = self.redis.mget([f"exag:game:{g}" for g in game_ids]) if game_ids else []
        return [(GameState.from_dict(d["state"]), d["record"]) for d in map(json.loads, filter(None, raws))]

    def round_explanation(self, game_id: str, index: int) -> dict | None:
        """What the player was shown in one round (player-safe), or None for a round without."""
        raw = self.redis.lindex(f"exag:game:{game_id}:explanations", index)
        return json.loads(raw) if raw else None

    # --- the one write path -----------------------------------------------------------------------

    def commit(self, *, participant: dict | None = None, game: tuple[GameState, dict] | None = None,
               new_round: dict | None | bool = False, set_round: tuple[int, dict] | None = None,
               events: list[dict] = (), stats: dict[str, int] | None = None) -> None:
        """Writes the changed state and appends its events in one transaction.
        new_round: the explanations shown with a new round (None = none; False = no new round).
        stats: counters to add to the game's study statistics (win rates by arm)."""
        def write(pipe) -> None:
            if participant is not None:
                key = self._participant_key(participant["study"], participant["pid"])
                pipe.set(key, _json(participant))
                pipe.sadd(f"exag:participants:{participant['study']}", participant["pid"])
            if game is not None:
                state, record = game
                pipe.set(f"exag:game:{state.game_id}", _json({"state": state.to_dict(), "record": record}))
                if new_round is not False:
                    pipe.rpush(f"exag:game:{state.game_id}:explanations", _json(new_round))
                if set_round is not None:
                    pipe.lset(f"exag:game:{state.game_id}:explanations", set_round[0], _json(set_round[1]))
            if stats:
                for field, amount in stats.items():
                    pipe.hincrby(f"exag:stats:{game[1]['study']}", field, amount)
            for event in events:
                self.add_event(pipe, event)
        self.transaction(write)

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
                       **json.loads(fields["payload"])}
            start = "(" + chunk[-1][0]

    def stats(self, study_id: str) -> dict[str, int]:
        return {k: int(v) for k, v in self.redis.hgetall(f"exag:stats:{study_id}").items()}
