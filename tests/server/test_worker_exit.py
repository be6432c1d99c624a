"""How `exag serve` logs an inference worker that died (issue 44): as it ended, a signal named ("killed by
signal 9 (SIGKILL)", `kill -9`) and a status as a status, never a signal read as an exit status."""
from __future__ import annotations

import logging
import os
import signal
import time
import types

import pytest

from server import processes


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
