"""Redis state and the event stream: studies, participants, games and every event, under `exag:` keys.

Every state change is one transaction (MULTI/EXEC) that writes the new state and appends its event
to the stream `exag:events`, so an event is durable (append-only file, fsync always) before the
player is answered, and no reader ever sees a state without its event. Actions of one participant are
serialised by a Redis lock, so any number of server processes can share one Redis.
"""
from __future__ import annotations

import json
import time
from contextlib import contextmanager
from typing import Iterator

import redis

from game.state import GameState
from game.study import StudyConfig

EVENTS = "exag:events"
LOCK_TIMEOUT_S = 60        # a crashed holder's lock expires after this
LOCK_WAIT_S = 30


def _json(value) -> str:
    return json.dumps(value, separators=(",", ":"))


class Store:
    def __init__(self, client: redis.Redis) -> None:
        self.redis = client

    @classmethod
    def connect(cls, url: str) -> "Store":
        return cls(redis.Redis.from_url(url, decode_responses=True, health_check_interval=30))

    def ping(self) -> bool:
        try:
            return bool(self.redis.ping())
        except redis.RedisError:
            return False

    # --- studies ----------------------------------------------------------------------------------

    def study(self, study_id: str) -> tuple[StudyConfig, str] | None:
        """The study's config and status ("open" or "closed"), or None."""
        raw = self.redis.get(f"exag:study:{study_id}")
        if raw is None:
            return None
        data = json.loads(raw)
        return StudyConfig.from_dict(data["config"]), data["status"]

    def studies(self) -> list[tuple[StudyConfig, str]]:
        found = [self.study(s) for s in sorted(self.redis.smembers("exag:studies"))]
        return [s for s in found if s is not None]

    def save_study(self, study: StudyConfig, status: str = "open", event: dict | None = None,
                   only_if_new: bool = False) -> bool:
        key = f"exag:study:{study.study_id}"
        if only_if_new and self.redis.exists(key):
            return False
        pipe = self.redis.pipeline(transaction=True)
        pipe.set(key, _json({"config": study.to_dict(), "status": status}))
        pipe.sadd("exag:studies", study.study_id)
        if event:
            self.add_event(pipe, event)
        pipe.execute()
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

    @contextmanager
    def locked(self, study_id: str, pid: str) -> Iterator[None]:
        with self.redis.lock(f"exag:lock:{study_id}:{pid}", timeout=LOCK_TIMEOUT_S, blocking_timeout=LOCK_WAIT_S):
            yield

    # --- games ------------------------------------------------------------------------------------

    def game(self, game_id: str) -> tuple[GameState, dict] | None:
        """The game's state and its server-side record (study, pid, arm, modes, ...)."""
        raw = self.redis.get(f"exag:game:{game_id}")
        if raw is None:
            return None
        data = json.loads(raw)
        return GameState.from_dict(data["state"]), data["record"]

    def round_explanations(self, game_id: str) -> list[dict | None]:
        """Per round, what the player was shown (player-safe), or None for a round without."""
        return [json.loads(r) for r in self.redis.lrange(f"exag:game:{game_id}:explanations", 0, -1)]

    # --- the one write path -----------------------------------------------------------------------

    def commit(self, *, participant: dict | None = None, game: tuple[GameState, dict] | None = None,
               new_round: dict | None | bool = False, set_round: tuple[int, dict] | None = None,
               events: list[dict] = (), stats: dict[str, int] | None = None) -> None:
        """Writes the changed state and appends its events in one transaction.
        new_round: the explanations shown with a new round (None = none; False = no new round).
        stats: counters to add to the game's study statistics (win rates by arm)."""
        pipe = self.redis.pipeline(transaction=True)
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
        pipe.execute()

    def log(self, event: dict) -> None:
        """An event without a state change (refused messages, connections)."""
        pipe = self.redis.pipeline(transaction=False)
        self.add_event(pipe, event)
        pipe.execute()

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
