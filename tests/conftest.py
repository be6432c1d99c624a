"""Shared fixtures: a tiny world is built once per test session (real renderer, real generator); the
check that no process the suite started outlives it; and one thread per pool in each of the parallel
workers `scripts/test.sh` runs the suite on (pytest-xdist, one per core).

EXAG_TEST_CACHE=DIR (developers only; CI leaves it unset) keeps the tiny worlds and models between runs
in DIR, keyed by a hash of the code that makes them, so iterating on server tests does not retrain.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import sys
from pathlib import Path

import pytest
from leftover_processes import (mark_suite_processes, pytest_runtest_logfinish,  # noqa: F401 (hooks)
                                pytest_sessionfinish, pytest_testnodedown)

from vqa_agent.config import preset
from vqa_agent.train import train_agent
from vqa_agent.world.build import build_world

from tiny_worlds import AGENT_WORLD, TINY_WORLD

REPO = Path(__file__).resolve().parent.parent
MAKERS = ["vqa_agent", "explainers", "tests/tiny_worlds.py", "tests/conftest.py"]


def pytest_configure(config):
    mark_suite_processes()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # A worker per core: each pins its thread pools to one thread (torch, and OpenMP/BLAS under numpy and
        # scipy), and the processes its tests start inherit that, so that workers never oversubscribe the cores.
        for pool in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[pool] = "1"
        import threadpoolctl
        import torch

        torch.set_num_threads(1)
        threadpoolctl.threadpool_limits(1)


def _code_hash() -> str:
    digest = hashlib.sha256()
    for root in MAKERS:
        paths = [REPO / root] if (REPO / root).is_file() else sorted((REPO / root).rglob("*.py"))
        for path in paths:
            digest.update(str(path.relative_to(REPO)).encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def _made_once(name: str, tmp_path_factory, make) -> Path:
    """make(dir) -> path; cached under EXAG_TEST_CACHE when set; else made once for the run, also when the
    run's tests are spread over several pytest-xdist workers (the first to need it makes it in the run's temp
    dir, the others wait for it); else in the session's temp dir."""
    cache = os.environ.get("EXAG_TEST_CACHE")
    if cache:
        root = Path(cache) / _code_hash()
    elif os.environ.get("PYTEST_XDIST_WORKER"):
        root = tmp_path_factory.getbasetemp().parent / "made-once"     # the workers' temp dirs share this parent
    else:
        return Path(make(tmp_path_factory.mktemp(name)))
    root.mkdir(parents=True, exist_ok=True)
    done = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)     # another session making the same thing: wait for it
        if not done.exists():
            work = root / f"{name}.partial"
            shutil.rmtree(work, ignore_errors=True)
            made = Path(make(work))
            assert made == work, "cached fixtures must be made in the directory given"
            work.rename(done)
    return done


@pytest.fixture(scope="session")
def tiny_world(tmp_path_factory):
    return build_world(tmp_path_factory.mktemp("world"), TINY_WORLD, workers=1, progress=False)


@pytest.fixture(scope="session")
def agent_world(tmp_path_factory):
    return _made_once("agent_world", tmp_path_factory,
                      lambda out: build_world(out, AGENT_WORLD, workers=2, progress=False))


@pytest.fixture(scope="session")
def tiny_agent_dir(agent_world, tmp_path_factory):
    return _made_once("tiny_agent", tmp_path_factory,
                      lambda out: train_agent(agent_world, out, preset("tiny"), progress=False, log=lambda m: None))


@pytest.fixture(scope="session")
def tiny_nle_dir(tiny_agent_dir, agent_world, tmp_path_factory):
    """A tiny NLE model for the tiny agent (seconds of real training)."""
    from explainers.nle_train import NLETrainingConfig, train_nle

    return _made_once("tiny_nle", tmp_path_factory,
                      lambda out: train_nle(tiny_agent_dir, agent_world, out,
                                            NLETrainingConfig(epochs=1, max_items=300, val_items=60),
                                            progress=False, log=lambda m: None))


@pytest.fixture(scope="session", autouse=True)
def _meteor_stops_with_the_session():
    """The benchmarks keep one METEOR process (Java) between scores; it ends with the session's fixtures, so
    that the check for processes outliving the suite (tests/leftover_processes.py) sees none."""
    yield
    metrics = sys.modules.get("experiments.benchmark.nle_metrics")
    if metrics is not None:
        metrics.close_meteor()
