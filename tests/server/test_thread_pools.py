"""Issue 45: every process pins every thread pool it has. An inference worker that `exag serve` starts with
`--threads T` runs torch's intra-op pool, and every BLAS and OpenMP library under numpy, scipy and torch,
at T threads and torch's inter-op pool at 1 (before, only torch's intra-op pool was pinned: the others
started one thread per core, per process). Read from what the worker publishes (threadpoolctl, in it)."""
from __future__ import annotations

import dataclasses
import json
import time

from server.processes import WorkerProcesses, worker_arguments
from server.rounds import WORKERS

START_TIMEOUT_S = 180


def test_a_worker_runs_every_thread_pool_at_its_configured_size(app):
    services = app.extensions["exag"]
    config = dataclasses.replace(services.config, redis_url=services.redis.url)
    workers = WorkerProcesses(worker_arguments(config, threads=2), count=1, threads=2)
    try:
        pid, published = workers.pids[0], None
        deadline = time.monotonic() + START_TIMEOUT_S
        while published is None and time.monotonic() < deadline:
            found = [json.loads(v) for v in services.store.redis.hgetall(WORKERS).values()]
            published = next((w for w in found if w["pid"] == pid), None)
            time.sleep(0.5)
        assert published is not None, "the worker did not start"
        pools = published["threads"]
        assert pools["torch_intra_op"] == 2 and pools["torch_inter_op"] == 1, pools
        assert pools["libraries"], "threadpoolctl found no BLAS or OpenMP library in the worker"
        assert {library["threads"] for library in pools["libraries"]} == {2}, pools["libraries"]
    finally:
        workers.stop()
