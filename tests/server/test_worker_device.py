"""`exag worker --device cuda` where there is no GPU (this machine; CUDA hidden elsewhere): the shipped agent
and a transformers agent (hf:PATH, a tiny random ViLT) both fall back to the CPU with the same one warning
line, and the worker serves rounds. The GPU path (half precision) is measured in docs/results.md."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from server.embedded_redis import EmbeddedRedis
from server.rounds import WORKERS, RoundJob, RoundQueue
from server.worker import Worker, WorkerConfig
from vqa_agent.hf_tiny import make_tiny_vilt

REPO = Path(__file__).resolve().parents[2]
FALLBACK = "device 'cuda' was asked for but no CUDA GPU is available: the agent runs on the CPU"


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    embedded = EmbeddedRedis(tmp_path_factory.mktemp("device-redis")).start()
    yield embedded.url
    embedded.stop()


@pytest.fixture(scope="module")
def vilt(tmp_path_factory):
    return make_tiny_vilt(tmp_path_factory.mktemp("device-vilt") / "vilt")


def a_round(question: str = "is there a red cube?") -> RoundJob:
    return RoundJob("round", list(range(5)), question, 0, [f"t{i}" for i in range(5)], for_every_image=["attention"])


@pytest.mark.parametrize("which", ["default", "hf"])
def test_a_worker_asked_for_cuda_without_one_warns_once_and_serves_on_the_cpu(which, redis_url, vilt, tiny_agent_dir,
                                                                              agent_world, tmp_path, caplog,
                                                                              monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)      # no GPU, here and on a machine with one
    agent = f"hf:{vilt}" if which == "hf" else str(tiny_agent_dir)
    with caplog.at_level(logging.WARNING):
        worker = Worker(WorkerConfig(redis_url, agent_world, tmp_path / "data", agent, "cuda", threads=1,
                                     explainer_options={"relqa": {"min_bank": 50}}, warm_pool=False,
                                     name=f"device-{which}"))
    try:
        warned = [r.getMessage() for r in caplog.records if "CUDA" in r.getMessage()]
        assert warned == [FALLBACK], warned
        assert worker.predictors[""].agent.device == torch.device("cpu")
        worker.start()
        result = RoundQueue(worker.redis, timeout_s=120).submit(a_round())
        assert result["answer"] and result["worker"] == f"device-{which}"
        assert set(result["shown"]["view"]["for_every_image"]) == {f"t{i}" for i in range(5)}
    finally:
        worker.close()


def test_exag_worker_device_cuda_prints_the_line_and_serves(redis_url, vilt, agent_world, tmp_path):
    """The command itself, as a researcher runs it on a machine without a GPU (CUDA hidden from it)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.Popen([sys.executable, "-m", "exag_cli", "worker", "--redis-url", redis_url, "--world",
                             str(agent_world), "--agent", f"hf:{vilt}", "--device", "cuda", "--threads", "1",
                             "--data-dir", str(tmp_path / "data")],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        queue = RoundQueue(__import__("redis").Redis.from_url(redis_url, decode_responses=True), timeout_s=120)
        deadline = time.monotonic() + 180
        while not [name for name in queue.redis.hkeys(WORKERS) if f":{proc.pid}:" in name]:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.poll() else "slow"
            time.sleep(0.1)
        assert f":{proc.pid}:" in queue.submit(a_round("how many spheres are there?"))["worker"]
    finally:
        proc.terminate()
        output = proc.communicate(timeout=60)[0]
    lines = [line for line in output.splitlines() if "CUDA" in line]
    assert len(lines) == 1 and lines[0].endswith(FALLBACK), output
