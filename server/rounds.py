"""Rounds through Redis: how a web process (no torch) hands a game round to the inference workers
(server/worker.py, any number, on any machine that reaches the Redis) and gets exactly one result back.

    web process                                  Redis                                 worker
    RoundQueue.submit(job) -- XADD -->  exag:rounds:fast | :slow | :prepare  -- XREADGROUP (fast first) -->
                                        (consumer group exag-workers)          batch, predict, grade, view
    <-- GET result -- BLPOP reply <--   exag:round:result:<id> (SET NX)   <--  write once, LPUSH reply, XACK

A job names the game's images by pool position (never pixels), the question, the secret's position, the
explainers for every image and for the secret, the seed and the study's agent. Questions a player asks go
to the fast stream; explanations bought at will to the slow one, which a worker reads when no question
waits and at least once every SLOW_SHARE_S while questions keep coming (slow work is never starved); a
new game's image preparation, which nobody waits for, to the prepare stream, read only when both are empty
and dropped once PREPARE_WITHIN_S have passed (a study's launch posts hundreds at once; by then the first
question has looked at the images itself). A worker that dies leaves its jobs pending in the group;
another claims them after CLAIM_AFTER_MS (XAUTOCLAIM). The result key is written with SET NX: whichever
worker writes first answers, a second computation of the same job is dropped, and the waiting web process
reads that one result. A job nobody answers before its deadline fails the player's round with a clear
message (RoundTimeout), and workers skip it if they reach it later. The web process waits for the reply in
slices of REPLY_SLICE_S, so a slow or lost Redis connection never outlasts the deadline either.

Workers publish what they loaded (agents, explainers that could not be loaded, and when each agent answered
its warm-up question) in the hash WORKERS, so a web process can check studies, and say whether a player can
play (/healthz), without loading anything itself.
"""
from __future__ import annotations

import math
import secrets
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field

import redis

from . import json_text

FAST = "exag:rounds:fast"          # plain questions: a worker reads these first
SLOW = "exag:rounds:slow"          # explanation rounds bought at will
PREPARE = "exag:rounds:prepare"    # a new game's images, looked at before its first question (nobody waits)
STREAMS = (FAST, SLOW, PREPARE)
GROUP = "exag-workers"             # the consumer group every worker reads with
RESULT = "exag:round:result:{}"    # the one result of a job (SET NX)
REPLY = "exag:round:reply:{}"      # the waiting web process BLPOPs this
WORKER_CPU = "exag:cpu:worker"     # the workers' CPU by kind of job (server/worker.py; admission reads it)
WORKERS = "exag:workers"           # worker id -> JSON {host, pid, agents: {name: {unavailable, warm}}, seen, threads}
STREAM_MAX_LEN = 100_000           # approximate cap of each stream (acknowledged jobs are trimmed away)
RESULT_MARGIN_S = 60               # a result outlives its job's deadline by this much, then expires
WORKER_STALE_S = 30                # a worker not seen for this long no longer counts as published
TAKEN = '{"taken":true}'           # what a result key holds once the web process has read it
PREPARE_WITHIN_S = 10              # a preparation not started by then is dropped: the game's first question came
REPLY_SLICE_S = 5                  # one BLPOP waits at most this long (well under any socket timeout)


WARMUP_QUESTION = "How many objects are there?"    # every agent reads it: the world's, a transformers VQA model


def warmup_job(agent: str) -> "RoundJob":
    """One question on the pool's first two images with `agent` ("" = the server's): what proves an agent."""
    return RoundJob("warmup", [0, 1], WARMUP_QUESTION, 0, ["warmup-0", "warmup-1"], agent=agent)


class RoundError(ValueError):
    """A round that could not be answered; the text is for the player, `cause` the worker's reason in one word
    when it refused the round ("unparseable", "refused": server/worker.py; server/game_stage.py records it)."""

    def __init__(self, message: str, cause: str | None = None) -> None:
        super().__init__(message)
        self.cause = cause


class RoundTimeout(RoundError):
    pass


class AgentFailed(RoundError):
    """The round's agent could not be loaded or answer on a worker; `why` is the worker's reason (for the
    researcher; the text is for the player)."""

    def __init__(self, message: str, why: str) -> None:
        super().__init__(message)
        self.why = why


NO_WORKER = ("the game's agent did not answer in time (no inference worker took the question); please ask "
             "again in a moment, or tell the researcher if this keeps happening")
BUSY = "the game's agent is very busy and could not answer in time; please ask again in a moment"
BUSY_NOTICE = "the server is busy: your answer is on its way, please wait a little longer"
BUSY_NOTICE_S = 3.0        # a player waiting this long is told the answer is coming (the page waits on)
BUSY_WAIT_MAX_S = 120.0    # a round waits at most this long while a worker is alive (admission keeps it far off)
# The handler's way to tell its player that a round waits on a busy server (events.py sets it for every
# event it handles; None elsewhere): called once, from the waiting thread, with BUSY_NOTICE.
waiting_notice: ContextVar[Callable[[str], None] | None] = ContextVar("waiting_notice", default=None)


@dataclass
class RoundJob:
    kind: str                              # "round", "prepare" or "warmup" (`warmup_job`)
    images: list[int]                      # pool positions of the game's images, in the order shown
    question: str = ""
    secret: int = 0                        # position of the secret in `images`
    tokens: list[str] = field(default_factory=list)   # the game's image tokens (keys of the player view)
    for_every_image: list[str] = field(default_factory=list)
    for_the_secret: list[str] = field(default_factory=list)
    seed: int = 0
    agent: str = ""                        # the study's agent ("" = the server's)
    job_id: str = field(default_factory=lambda: secrets.token_hex(12))
    deadline: float = 0.0                  # unix time after which nobody waits for it (0 = never)
    reply: bool = True                     # whether someone waits for the result (prepare jobs: no)

    def to_json(self) -> str:
        return json_text.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "RoundJob":
        return cls(**json_text.loads(text))


def ensure_groups(client: redis.Redis) -> None:
    """The consumer group on both streams (created with the streams; reading starts at their beginning)."""
    for stream in STREAMS:
        try:
            client.xgroup_create(stream, GROUP, id="0", mkstream=True)
        except redis.ResponseError as error:
            if "BUSYGROUP" not in str(error):
                raise


class RoundQueue:
    """The web process's side: send a job, wait for its one result."""

    def __init__(self, client: redis.Redis, timeout_s: float = 30.0) -> None:
        self.redis = client
        self.timeout_s = timeout_s
        ensure_groups(client)
        self._published: tuple[float, dict] = (0.0, {})

    def submit(self, job: RoundJob, slow: bool = False, timeout_s: float | None = None) -> dict:
        """The job's result (a dict, see server/respond.py `finish_round`); RoundError with the worker's
        message when the round was refused (AgentFailed when its agent failed), RoundTimeout when no worker
        answered. A busy server answers late but never fails a player for load: past `timeout_s` (default: the
        queue's) the wait goes on while a worker is alive, up to BUSY_WAIT_MAX_S, and after BUSY_NOTICE_S the
        handler's `waiting_notice` (if it set one) tells the player the answer is coming. NO_WORKER is the
        answer only when no worker is alive. Returns or raises by then plus one Redis round trip, whatever
        Redis does meanwhile."""
        started = time.time()
        give_up_alone = started + (timeout_s or self.timeout_s)    # no live worker by then: NO_WORKER
        job.deadline = max(give_up_alone, started + BUSY_WAIT_MAX_S)
        self.post(job, slow)
        reply = self._wait_for_reply(job, started, give_up_alone)
        key = RESULT.format(job.job_id)
        try:
            pipe = self.redis.pipeline()
            pipe.get(key)
            pipe.set(key, TAKEN, xx=True, keepttl=True)     # read once: the (large) result is not kept
            pipe.delete(REPLY.format(job.job_id))
            raw = pipe.execute()[0]
        except redis.RedisError as error:
            raise RoundTimeout("the game's store did not answer in time; please ask again") from error
        if raw is None or raw == TAKEN:
            if reply is not None:
                raise RoundTimeout("this round's answer was lost; please ask again")
            raise RoundTimeout(BUSY if self.published() else NO_WORKER)
        result = json_text.loads(raw)
        if "agent_failed" in result:
            raise AgentFailed(result["error"], result["agent_failed"])
        if "error" in result:
            raise RoundError(result["error"], result.get("cause"))
        return result

    def _wait_for_reply(self, job: RoundJob, started: float, give_up_alone: float):
        """BLPOP of the job's reply until its deadline (or, with no live worker, `give_up_alone`), in slices: a
        blocking read longer than the client's socket timeout, or a connection lost under load, must end in a
        clear answer, not a stuck handler."""
        notice = waiting_notice.get()
        while True:
            now = time.time()
            if now >= job.deadline or (now >= give_up_alone and not self.published()):
                return None
            if notice is not None and now - started >= BUSY_NOTICE_S:
                notice(BUSY_NOTICE)
                notice = None
            # wake by the next moment that changes something: the notice is due, the lone wait ends, the deadline
            due = [job.deadline, give_up_alone] + ([started + BUSY_NOTICE_S] if notice is not None else [])
            wait_s = min(REPLY_SLICE_S, math.ceil(min(t for t in due if t > now) - now))
            try:
                reply = self.redis.blpop([REPLY.format(job.job_id)], timeout=max(1, wait_s))
            except (redis.TimeoutError, redis.ConnectionError):
                time.sleep(0.05)         # Redis is slow or reconnecting: look again until the deadline
                continue
            if reply is not None:
                return reply

    def post(self, job: RoundJob, slow: bool = False) -> None:
        """Queues the job and returns at once."""
        self.redis.xadd(SLOW if slow else FAST, {"job": job.to_json()}, maxlen=STREAM_MAX_LEN, approximate=True)

    def prepare(self, job: RoundJob) -> None:
        """Queues a new game's image preparation, which nobody waits for (dropped after PREPARE_WITHIN_S)."""
        job.deadline = time.time() + PREPARE_WITHIN_S
        self.redis.xadd(PREPARE, {"job": job.to_json()}, maxlen=STREAM_MAX_LEN, approximate=True)

    def published(self) -> dict[str, dict]:
        """What live workers loaded: worker id -> {host, pid, agents: {name: {"unavailable": {...}}}, seen}
        (read at most once a second)."""
        read_at, workers = self._published
        if time.monotonic() - read_at > 1.0:
            now = time.time()
            workers = {k: v for k, v in ((k, json_text.loads(v)) for k, v in self.redis.hgetall(WORKERS).items())
                       if now - v.get("seen", 0) < WORKER_STALE_S}
            self._published = (time.monotonic(), workers)
        return workers

    def unavailable(self, agent: str) -> dict[str, str]:
        """Explainers a live worker could not load for this agent ("" = the server's), with why."""
        missing: dict[str, str] = {}
        for worker in self.published().values():
            missing.update(worker.get("agents", {}).get(agent, {}).get("unavailable", {}))
        return missing
