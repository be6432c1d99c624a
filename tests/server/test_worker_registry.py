"""Dead inference workers are forgotten (issue 51, server/worker_registry.py): before, a killed worker stayed in
WORKERS and in the streams' consumer group forever (after kills, 4 of 6 entries and 8 of 11 consumers were dead
ones). Now a live worker removes, with its heartbeat, a worker not seen for FORGET_AFTER_S from WORKERS, and its
consumer once it holds no job (its pending ones are claimed by the live worker first: none is lost); a stopping
worker removes itself."""
from __future__ import annotations

import json
import time

import pytest
import redis as redis_lib

from server import worker as worker_module
from server.embedded_redis import EmbeddedRedis
from server.inference import BatchSettings
from server.rounds import FAST, GROUP, PREPARE, RESULT, SLOW, STREAMS, WORKER_STALE_S, WORKERS, RoundJob, RoundQueue
from server.worker import Worker, WorkerConfig
from server.worker_registry import FORGET_AFTER_S, forget_dead

DEAD = "gone-host:4242:dead01"        # a worker killed while it held a question
STALE = "slow-host:4343:stale1"       # one silent past the stale mark, not yet for FORGET_AFTER_S
ORPHAN = "old-host:4444:orphan"       # a consumer left by a worker whose entry is long gone


@pytest.fixture
def redis_url(tmp_path_factory):
    embedded = EmbeddedRedis(tmp_path_factory.mktemp("r")).start()   # a short path: a unix socket's limit
    yield embedded.url
    embedded.stop()


def consumers(client, stream: str) -> dict[str, int]:
    return {c["name"]: c["pending"] for c in client.xinfo_consumers(stream, GROUP)}


def published_long_ago(client, name: str, seconds_ago: float) -> None:
    """The entry a worker's last heartbeat left (server/worker.py `_heartbeat`)."""
    client.hset(WORKERS, name, json.dumps({"host": name.split(":")[0], "pid": 1, "agents": {},
                                           "seen": time.time() - seconds_ago, "rounds": 0}))


def test_a_dead_worker_is_forgotten_after_its_jobs_are_taken_over(redis_url, monkeypatch, agent_world,
                                                                   tiny_agent_dir, tmp_path):
    monkeypatch.setattr(worker_module, "CLAIM_AFTER_MS", 200)    # the dead worker's question, taken over at once
    client = redis_lib.Redis.from_url(redis_url, decode_responses=True)
    queue = RoundQueue(client)
    live = Worker(WorkerConfig(redis_url, agent_world, tmp_path / "data", str(tiny_agent_dir),
                               explainer_options={"relqa": {"min_bank": 50}}, batch=BatchSettings(8, 1.0),
                               feature_cache=64, warm_pool=False))
    try:
        for stream in STREAMS:         # the live worker has read from every stream (Redis 6 makes it a consumer then)
            client.xgroup_createconsumer(stream, GROUP, live.name)
        question = RoundJob("round", [0, 1, 2], "is there a red cube?", 0, ["t0", "t1", "t2"],
                            deadline=time.time() + 60)
        queue.post(question)
        assert client.xreadgroup(GROUP, DEAD, {FAST: ">"}, count=1)     # the dead one read it, then was killed
        client.xgroup_createconsumer(SLOW, GROUP, DEAD)
        client.xgroup_createconsumer(PREPARE, GROUP, ORPHAN)
        published_long_ago(client, DEAD, FORGET_AFTER_S + 1)
        published_long_ago(client, STALE, WORKER_STALE_S + 1)

        forget_dead(client, live.name)
        assert set(client.hkeys(WORKERS)) == {live.name, STALE}
        assert consumers(client, FAST) == {live.name: 0, DEAD: 1}       # it holds a job: it stays for now
        assert consumers(client, SLOW) == {live.name: 0}
        assert consumers(client, PREPARE) == {live.name: 0}

        time.sleep(0.3)
        deadline = time.monotonic() + 60
        while not client.exists(RESULT.format(question.job_id)):       # claimed from the dead one and answered
            assert time.monotonic() < deadline, "the dead worker's question was not answered"
            live._step()
        assert client.xpending(FAST, GROUP)["pending"] == 0
        forget_dead(client, live.name)
        assert consumers(client, FAST) == {live.name: 0}
        assert set(client.hkeys(WORKERS)) == {live.name, STALE}
    finally:
        live.close()
    # a worker that stops leaves WORKERS and every stream's group
    assert set(client.hkeys(WORKERS)) == {STALE}
    assert all(consumers(client, stream) == {} for stream in STREAMS)


def test_a_starting_worker_forgets_the_dead_and_a_stopping_one_leaves_its_job_for_another(redis_url, agent_world,
                                                                                        tiny_agent_dir, tmp_path):
    client = redis_lib.Redis.from_url(redis_url, decode_responses=True)
    published_long_ago(client, DEAD, FORGET_AFTER_S + 1)
    stopping = Worker(WorkerConfig(redis_url, agent_world, tmp_path / "data", str(tiny_agent_dir),
                                   explainer_options={"relqa": {"min_bank": 50}}, feature_cache=64, warm_pool=False))
    RoundQueue(client).post(RoundJob("round", [0, 1, 2], "is there a red cube?", 0, ["t0", "t1", "t2"]), slow=True)
    assert client.hkeys(WORKERS) == [stopping.name]             # its first heartbeat forgot the dead one
    client.xgroup_createconsumer(FAST, GROUP, stopping.name)    # it answered questions: holds none
    assert stopping._read(SLOW, 1)                   # read, not answered: pending with it
    stopping.close()
    assert stopping.name not in client.hkeys(WORKERS)
    assert consumers(client, SLOW) == {stopping.name: 1}
    assert stopping.name not in consumers(client, FAST)
