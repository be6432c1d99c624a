"""Admission control: a new participant is let in only while the inference workers have room for them, so
that a server past its capacity refuses people at the door instead of failing players mid-game.

Two measures decide, both read from the shared Redis (any number of web processes agree):
- **how many players it holds** (`capacity`): the workers' CPU budget (`AdmissionSettings.worker_share` of the
  cores their threads may use) divided by what one active participant costs them, measured from the workers'
  own accounting (WORKER_CPU, server/worker.py) over the last MEASURE_WINDOW_S, or, before enough players were
  seen, the cost measured on the explanation-heavy mix of the capacity benchmark (DEFAULT_CPU_MS_PER_PLAYER_S).
  `--max-players N` fixes it instead.
- **whether the workers keep up now** (`queue_age_s`): how long the oldest question (or bought explanation)
  has waited in its stream without a worker taking it. Past `max_queue_age_s` the server is full whatever
  the estimate says: the estimate is an average, the queue is what players wait in.

Only joins of new participants are refused; a participant already in (a rejoin, every message after the
join) is never turned away for load. Active participants are a sorted set (ACTIVE, member "study\\tpid",
score: their latest message) that every commit of a participant updates (`record_active`) in the same
transaction; a finished or screened-out participant leaves it, one silent for `active_window_s` no longer
counts. Refusals are counted per study in the hash COUNTS (the console shows them) and noted in the
diagnostic stream, never in the study's event log.
"""
from __future__ import annotations

import math
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis

from .rounds import FAST, GROUP, SLOW, WORKER_CPU

ACTIVE = "exag:active"            # member "study\tpid" -> the participant's latest message (unix time)
COUNTS = "exag:admission"         # refused:<study> (joins turned away), refused (all studies)
# What one active participant of the capacity benchmark's explanation-heavy mix costs the workers (controlled
# players in their explanation blocks, at-will players buying explanations in a third of rounds, a question
# every 3 s), measured on the 2-core reference machine (docs/results.md, issue 51). Used until the server has
# seen MIN_PLAYERS_MEASURED players for MEASURE_WINDOW_S; a real crowd asks less often and so costs less.
DEFAULT_CPU_MS_PER_PLAYER_S = 5.0
MIN_PLAYERS_MEASURED = 10         # fewer active players measure mostly noise
MEASURE_WINDOW_S = 30.0           # the workers' CPU per player is averaged over about this long
LOOK_EVERY_S = 1.0                # a web process reads the measures at most this often
# The oldest waiting job's age is read with one Lua call: the stream's first entry after the group's
# last delivered one (nothing waits when there is none), and Redis's own clock (stream ids are its times).
OLDEST_WAITING = """
local out = {}
for i, stream in ipairs(KEYS) do
  local first = false
  if redis.call('EXISTS', stream) == 1 then
    for _, group in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
      local info = {}
      for j = 1, #group, 2 do info[group[j]] = group[j + 1] end
      if info['name'] == ARGV[1] then
        local next = redis.call('XRANGE', stream, '(' .. info['last-delivered-id'], '+', 'COUNT', 1)
        if #next > 0 then first = next[1][1] end
      end
    end
  end
  out[i] = first
end
local now = redis.call('TIME')
out[#KEYS + 1] = now[1] .. '.' .. string.format('%06d', now[2])
return out
"""
NO_ESTIMATE = 10**9               # the capacity when no live worker gives a budget to estimate it from
# KEYS: ACTIVE, COUNTS; ARGV: capacity, whether a question waits too long (1/0), the activity cutoff, now, the
# newcomer's member, their study. 1: admitted (and entered as active); 0: refused (and counted).
ADMIT = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
if ARGV[2] == '1' or redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  redis.call('HINCRBY', KEYS[2], 'refused:' .. ARGV[6], 1)
  redis.call('HINCRBY', KEYS[2], 'refused', 1)
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[5])
return 1
"""
SLOW_AGE_FACTOR = 3.0             # a bought explanation waits behind questions by design: it may wait this much longer


@dataclass
class AdmissionSettings:
    max_players: int | None = None       # active participants the server admits; None: estimated (see above)
    max_queue_age_s: float = 2.0         # a question waiting this long for a worker: the server is full now
    active_window_s: float = 180.0       # a participant with no message for this long no longer counts as active
                                         # (they are never refused when they come back: they are in already)
    # the share of the workers' cores their rounds' own CPU may fill: the rest is the workers' reading and
    # writing, the web processes', Redis's, and room for bursts (on one machine they share the cores). 0.3 keeps
    # the capacity benchmark's explanation-heavy mix at ask p95 <= 300 ms on the 2-core reference machine
    # (docs/results.md, issue 51); a machine of workers alone can take more (AdmissionSettings(worker_share=...))
    worker_share: float = 0.3
    retry_after_s: float = 300.0         # what the full page tells a refused participant (come back in ...)

    def __post_init__(self) -> None:
        if self.max_players is not None and self.max_players < 1:
            raise ValueError(f"max_players must be at least 1 (or None: estimated), not {self.max_players!r}")
        if not self.max_queue_age_s > 0 or not self.active_window_s > 0 or not 0 < self.worker_share <= 1:
            raise ValueError("max_queue_age_s and active_window_s must be positive and worker_share in (0, 1]")


class ServerFull(Exception):
    """A new participant turned away for load; the text is for them."""

    def __init__(self, retry_after_s: float) -> None:
        minutes = max(1, math.ceil(retry_after_s / 60))
        super().__init__(f"the study is full right now: too many people are playing at once. Please come back in "
                         f"about {minutes} minute{'s' if minutes > 1 else ''} (this page tries again by itself), "
                         "or return the study if you cannot wait")
        self.retry_after_s = retry_after_s


def active_member(study_id: str, pid: str) -> str:
    return f"{study_id}\t{pid}"


def record_active(pipe, participant: dict) -> None:
    """In a participant's commit: active at their latest message, or gone once their participation is over."""
    member = active_member(participant["study"], participant["pid"])
    if participant["stage"] in ("done", "screened_out", "declined"):     # server/participation.py OVER
        pipe.zrem(ACTIVE, member)
    else:
        pipe.zadd(ACTIVE, {member: participant.get("last_seen") or time.time()})


@dataclass
class Load:
    """What admission decides on, as read at `at`."""
    active: int                     # active participants
    capacity: int                   # how many the server admits
    measured: bool                  # whether capacity comes from this server's measured cost (else the default)
    cpu_ms_per_player_s: float      # what one active participant costs the workers
    budget_ms_per_s: float          # the workers' CPU budget
    queue_age_s: float              # the oldest waiting question's (or SLOW_AGE_FACTOR x bought explanation's) age
    workers: int                    # live workers
    at: float

    def full(self, settings: AdmissionSettings) -> bool:
        return self.active >= self.capacity or self.queue_age_s > settings.max_queue_age_s

    def to_dict(self) -> dict:
        return {"active": self.active, "capacity": self.capacity, "measured": self.measured,
                "cpu_ms_per_player_s": round(self.cpu_ms_per_player_s, 2),
                "budget_ms_per_s": round(self.budget_ms_per_s, 1), "queue_age_s": round(self.queue_age_s, 3),
                "workers": self.workers}


class Admission:
    """One web process's view of the server's load, read from Redis at most every LOOK_EVERY_S."""

    def __init__(self, client: redis.Redis, live_workers: Callable[[], dict[str, dict]],
                 settings: AdmissionSettings | None = None) -> None:
        """client: the store's (responses decoded); live_workers: what live workers published (RoundQueue.published)."""
        self.redis, self.live_workers, self.settings = client, live_workers, settings or AdmissionSettings()
        self._oldest = client.register_script(OLDEST_WAITING)
        self._admit = client.register_script(ADMIT)
        self._samples: list[tuple[float, float, int]] = []   # (time, the workers' CPU ms so far, active players)
        self._load: Load | None = None
        self._lock = threading.Lock()

    def admit(self, study_id: str, pid: str) -> None:
        """Enters a new participant as active and returns when the server has room for them; ServerFull (counted)
        when it is full. The count and the entry are one atomic step: a crowd arriving at once, on any number of
        web processes, is admitted up to the capacity and not past it."""
        load = self.load()
        admitted = self._admit(keys=[ACTIVE, COUNTS],
                               args=[load.capacity, int(load.queue_age_s > self.settings.max_queue_age_s),
                                     time.time() - self.settings.active_window_s, repr(time.time()),
                                     active_member(study_id, pid), study_id])
        if not admitted:
            raise ServerFull(self.settings.retry_after_s)

    def status(self) -> dict:
        """The load as read last, whether it is full now, and the joins turned away for load so far
        ({"refused": all studies, "refused:<study>": one}): what /healthz and the console show."""
        load = self.load()
        return {**load.to_dict(), "full": load.full(self.settings),
                "refused": {k: int(v) for k, v in self.redis.hgetall(COUNTS).items()}}

    def load(self) -> Load:
        with self._lock:
            if self._load is None or time.monotonic() - self._load.at >= LOOK_EVERY_S:
                self._load = self._read()
            return self._load

    def _read(self) -> Load:
        now = time.time()
        pipe = self.redis.pipeline(transaction=False)
        pipe.zremrangebyscore(ACTIVE, "-inf", now - self.settings.active_window_s)
        pipe.zcard(ACTIVE)
        pipe.hgetall(WORKER_CPU)
        _, active, stats = pipe.execute()
        live = list(self.live_workers().values())
        cpu_ms = sum(float(v) for k, v in stats.items() if k.endswith(":cpu_ms"))
        cost, measured = self._cost(time.monotonic(), cpu_ms, active)
        budget = worker_budget_ms_per_s(live, self.settings.worker_share)
        # no live worker publishes a budget (none started yet, or all gone): /healthz says so, not the door
        capacity = self.settings.max_players or (max(1, int(budget / cost)) if budget else NO_ESTIMATE)
        return Load(active, capacity, measured, cost, budget, self._queue_age_s(), len(live), time.monotonic())

    def _cost(self, now: float, cpu_ms: float, active: int) -> tuple[float, bool]:
        """What one active participant costs the workers (CPU ms a second), measured over the window when it
        saw enough players, else the default."""
        self._samples.append((now, cpu_ms, active))
        while len(self._samples) > 2 and now - self._samples[1][0] >= MEASURE_WINDOW_S:
            self._samples.pop(0)
        first = self._samples[0]
        span = now - first[0]
        players = sum(s[2] for s in self._samples) / len(self._samples)
        if span < MEASURE_WINDOW_S / 2 or players < MIN_PLAYERS_MEASURED or cpu_ms < first[1]:
            return DEFAULT_CPU_MS_PER_PLAYER_S, False
        return max((cpu_ms - first[1]) / span / players, 0.1), True

    def _queue_age_s(self) -> float:
        """How long the oldest job no worker took has waited: a question, or a bought explanation counted at
        1/SLOW_AGE_FACTOR (0 when nothing waits)."""
        try:
            fast, slow, now = self._oldest(keys=[FAST, SLOW], args=[GROUP])
        except redis.ResponseError:       # the streams' group not made yet: nothing was ever queued
            return 0.0
        now = float(now)
        ages = [0.0]
        for first, factor in ((fast, 1.0), (slow, SLOW_AGE_FACTOR)):
            if first:
                ages.append(max(0.0, now - int(first.split("-")[0]) / 1000) / factor)
        return max(ages)


def worker_budget_ms_per_s(workers: list[dict], share: float) -> float:
    """The CPU the live workers may spend, ms a second: on each host, their torch threads, at most the host's
    cores (this host's are known; another host is taken to be the workers' own), times `share`."""
    threads_by_host: dict[str, int] = {}
    for worker in workers:
        threads = (worker.get("threads") or {}).get("torch_intra_op") or 1
        threads_by_host[worker.get("host", "")] = threads_by_host.get(worker.get("host", ""), 0) + int(threads)
    here = socket.gethostname()
    cores = {host: (os.cpu_count() or 1) if host == here else n for host, n in threads_by_host.items()}
    return sum(min(n, cores[host]) for host, n in threads_by_host.items()) * 1000.0 * share
