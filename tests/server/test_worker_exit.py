"""How `exag serve` logs an inference worker that died (issue 44): as it ended, a signal named ("killed by
signal 9 (SIGKILL)", `kill -9`) and a status as a status, never a signal read as an exit status; also beside
gunicorn's master, which reaps any child of its process (issue 51: there every death read "exited with status
0")."""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from experiments.benchmark.capacity import free_port
from server import processes

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 120    # the driver below to its first web process answering (~3 s alone; both cores are shared)


def supervised(tmp_path, monkeypatch, script: str) -> processes.WorkerProcesses:
    """One supervised 'worker': a real child process running `script` (in place of `python -m exag_cli
    worker`, which loads an agent)."""
    fake = tmp_path / "fake-python"
    fake.write_text(f"#!/bin/sh\n{script}\n")
    fake.chmod(0o755)
    monkeypatch.setattr(processes, "sys", types.SimpleNamespace(executable=str(fake)))
    monkeypatch.setattr(processes.WorkerProcesses, "RESTART_DELAY_S", 30.0)
    return processes.WorkerProcesses([], count=1)


def logged(caplog, text: str, timeout_s: float = 10.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = [r.getMessage() for r in caplog.records if text in r.getMessage()]
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no {text!r} in {[r.getMessage() for r in caplog.records]}")


@pytest.mark.parametrize("script, kill, expected", [
    ("exec sleep 60", signal.SIGKILL, "was killed by signal 9 (SIGKILL)"),
    ("exec sleep 60", signal.SIGTERM, "was killed by signal 15 (SIGTERM)"),
    ("exit 3", None, "exited with status 3"),
    ("exit 0", None, "exited with status 0"),
])
def test_a_dead_worker_is_logged_as_it_ended(tmp_path, monkeypatch, caplog, script, kill, expected):
    caplog.set_level(logging.WARNING, logger=processes.__name__)
    workers = supervised(tmp_path, monkeypatch, script)
    try:
        if kill is not None:
            time.sleep(0.3)
            os.kill(workers.pids[0], kill)
        line = logged(caplog, "inference worker 0")
        assert f"(pid {workers.pids[0]}) {expected} after" in line, line
    finally:
        workers.stop()


# `exag serve`'s order (server/commands.py): the embedded Redis, this machine's workers (here a stand-in for
# `exag worker`, which loads an agent), then gunicorn with two web processes, until SIGTERM.
SERVE_WITH_A_WORKER = """
import logging, sys, types
from pathlib import Path
from server import processes, serve
from server.config import ServerConfig

fake_python, world, agent, data_dir, port = sys.argv[1:]
processes.sys = types.SimpleNamespace(executable=fake_python)
processes.WorkerProcesses.RESTART_DELAY_S = 30.0
logging.basicConfig(level=logging.WARNING, stream=sys.stdout)
config = ServerConfig(port=int(port), web_processes=2, world=Path(world), agent=agent, data_dir=Path(data_dir))
with serve.redis_for(config):
    workers = processes.WorkerProcesses([], count=1)
    print("worker pid", workers.pids[0], flush=True)
    try:
        status = serve.run_web(config, threads=4, ready=lambda app: print("serving", flush=True))
    finally:
        workers.stop()
print("run_web returned", status, flush=True)
"""


def test_a_worker_killed_beside_gunicorn_is_logged_as_killed(tmp_path, agent_world, tiny_agent_dir):
    fake = tmp_path / "fake-python"
    fake.write_text("#!/bin/sh\nexec sleep 60\n")
    fake.chmod(0o755)
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        serve = subprocess.Popen([sys.executable, "-c", SERVE_WITH_A_WORKER, str(fake), str(agent_world),
                                  str(tiny_agent_dir), str(tmp_path / "data"), str(free_port())],
                                 cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=out,
                                 stderr=subprocess.STDOUT, start_new_session=True)

    def said(text: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            lines = [line for line in log.read_text().splitlines() if text in line]
            if lines:
                return lines[0]
            assert serve.poll() is None or text == "run_web returned", log.read_text()
            time.sleep(0.1)
        raise AssertionError(f"no {text!r} in:\n{log.read_text()}")

    try:
        said("serving", START_TIMEOUT_S)                  # gunicorn's master loop runs, its SIGCHLD handler set
        pid = int(said("worker pid", 1).split()[-1])
        os.kill(pid, signal.SIGKILL)
        line = said("inference worker 0", 20)
        assert f"(pid {pid}) was killed by signal 9 (SIGKILL) after" in line, line
    finally:
        os.killpg(serve.pid, signal.SIGTERM)
        assert serve.wait(30) == 0, log.read_text()
    # only the master goes on after gunicorn: a web process ending left it too, into `exag serve`'s clean-up
    assert log.read_text().count("run_web returned") == 1, log.read_text()
