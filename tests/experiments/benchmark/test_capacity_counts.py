"""experiments/benchmark/capacity.py reads two counts from the server's own Redis around each step, the
commands Redis ran (INFO commandstats) and the workers' CPU by kind of job, and waits for the workers'
idle preparation before measuring; here on a real Redis laid out as `exag serve --data-dir` lays it out."""
from __future__ import annotations

import json
import time

import redis

from experiments.benchmark.capacity import redis_calls_per_reply, redis_counts, wait_prepared, worker_jobs
from server.embedded_redis import EmbeddedRedis
from server.rounds import WORKERS
from server.worker import CPU_STATS


def test_counts_over_a_step_become_per_reply_figures(tmp_path):
    server = EmbeddedRedis(tmp_path / "data" / "redis").start()
    client = redis.Redis.from_url(server.url, decode_responses=True)
    try:
        client.hset(CPU_STATS, mapping={"ask:n": 10, "ask:cpu_ms": 40.0, "ask:batches": 5})
        before = redis_counts(tmp_path / "data")
        for _ in range(40):
            client.get("x")
        client.hset(CPU_STATS, mapping={"ask:n": 30, "ask:cpu_ms": 100.0, "ask:batches": 10})
        after = redis_counts(tmp_path / "data")
        calls = redis_calls_per_reply(before["calls"], after["calls"], replies=20)
        assert calls["get"] == 2.0 and list(calls)[:2] == ["total", "get"] and calls["total"] >= 2.0
        assert worker_jobs(before["worker_jobs"], after["worker_jobs"]) == {
            "ask": {"rounds": 20, "cpu_ms_per_round": 3.0, "rounds_per_batch": 4.0}}
        assert redis_calls_per_reply(before["calls"], after["calls"], replies=0) == {}
    finally:
        client.close()
        server.stop()


def test_a_step_waits_for_every_worker_s_idle_preparation(tmp_path):
    server = EmbeddedRedis(tmp_path / "data" / "redis").start()
    client = redis.Redis.from_url(server.url, decode_responses=True)
    try:
        client.hset(WORKERS, mapping={"a": json.dumps({"prepared": True}), "b": json.dumps({"prepared": False})})
        started = time.monotonic()
        assert wait_prepared(tmp_path / "data", within_s=1.5) >= 1.5        # b never says it is done: bounded
        client.hset(WORKERS, "b", json.dumps({"prepared": True}))
        assert wait_prepared(tmp_path / "data", within_s=30) < 1.0
        assert time.monotonic() - started < 10
    finally:
        client.close()
        server.stop()
