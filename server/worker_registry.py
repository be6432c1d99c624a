"""The inference workers' register: the hash WORKERS (server/rounds.py), where each worker publishes what it
loaded with its heartbeat (server/worker.py), and the streams' consumer group, where each is a consumer. A
worker that dies leaves both; the live ones forget it, with their heartbeat, once it has not been seen for
FORGET_AFTER_S: its entry goes, and its consumer once it holds no job (its pending jobs are claimed by live
workers after CLAIM_AFTER_MS, server/worker.py `_claim`, so none is lost). A worker that stops leaves itself.
Before (issue 51), a killed worker stayed in both for good (after kills, 4 of 6 entries and 8 of 11 consumers
were dead ones).

    done_at = forget_dead(client, own_name, done_at)    # a live worker, with its heartbeat
    leave(client, name)              # a worker that stops
"""
from __future__ import annotations

import logging
import time

import redis

from . import json_text
from .rounds import GROUP, STREAMS, WORKER_STALE_S, WORKERS

log = logging.getLogger(__name__)
FORGET_AFTER_S = 4 * WORKER_STALE_S   # a worker not seen this long is dead. Well past the stale mark: a live worker
                           # heartbeats every few seconds, and one silent longer (loading a study's agent) that is
                           # forgotten only publishes itself again, and reads again as the same consumer
FORGET_EVERY_S = 30.0      # how often a live worker looks for dead ones

# XGROUP DELCONSUMER drops the consumer's pending jobs with it: so it goes only with none, looked at in the same
# atomic step (a consumer that reads meanwhile keeps what it read). KEYS: the stream; ARGV: group, consumer.
DELETE_IF_NOTHING_PENDING = """
if #redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2]) > 0 then return 0 end
return redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2]) + 1
"""
# A WORKERS entry goes only as it was read (a heartbeat meanwhile keeps it). KEYS: WORKERS; ARGV: name, entry.
DELETE_IF_UNCHANGED = """
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
return redis.call('HDEL', KEYS[1], ARGV[1])
"""


def forget_dead(client: redis.Redis, own_name: str, done_at: float = 0.0) -> float:
    """Removes the workers not seen for FORGET_AFTER_S from WORKERS, and from each stream's group where they
    hold no job; consumers no live worker owns (left before this was done) go too. `client` decodes responses.
    Done at most every FORGET_EVERY_S: `done_at` is when it was last done (time.monotonic()), and the return."""
    now = time.monotonic()
    if done_at and now - done_at < FORGET_EVERY_S:
        return done_at
    try:
        oldest, alive = time.time() - FORGET_AFTER_S, {own_name}
        delete_worker = client.register_script(DELETE_IF_UNCHANGED)
        for name, entry in client.hgetall(WORKERS).items():
            try:
                seen = float(json_text.loads(entry).get("seen", 0))
            except (ValueError, TypeError, AttributeError):     # not a worker's entry: nobody's
                seen = 0.0
            if seen >= oldest:
                alive.add(name)
            elif delete_worker(keys=[WORKERS], args=[name, entry]):
                log.warning("worker %s forgot worker %s, not seen for %.0f s", own_name, name, time.time() - seen)
        delete_consumer = client.register_script(DELETE_IF_NOTHING_PENDING)
        for stream in STREAMS:
            for consumer in client.xinfo_consumers(stream, GROUP):
                if consumer["name"] not in alive and not consumer["pending"]:
                    delete_consumer(keys=[stream], args=[GROUP, consumer["name"]])
    except redis.ResponseError as error:     # a stream or its group gone (a flushed Redis): looked at next time
        log.warning("worker %s could not look for dead workers: %s", own_name, error)
    return now


def leave(client: redis.Redis, name: str) -> None:
    """A stopping worker leaves WORKERS, and each stream's group where it holds no job (one read but not
    answered is claimed by another, which then forgets this consumer)."""
    client.hdel(WORKERS, name)
    delete_consumer = client.register_script(DELETE_IF_NOTHING_PENDING)
    for stream in STREAMS:
        delete_consumer(keys=[stream], args=[GROUP, name])
