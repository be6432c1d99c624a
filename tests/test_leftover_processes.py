"""The suite's own check (tests/leftover_processes.py): a test that leaves a process running fails the run,
and the process does not outlive it, also when the test ran on a pytest-xdist worker; a test that stops what
it started passes. Each case is a pytest run of its own with only that check installed."""
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

TESTS = Path(__file__).resolve().parent

LEAVES = '''
import subprocess, sys
def test_leaves_a_process_behind():
    child = subprocess.Popen([sys.executable, "-c", "import time; print('started', flush=True); time.sleep(120)"],
                             stdout=subprocess.PIPE, start_new_session=True)
    assert child.stdout.readline().strip() == b"started"
    open("pid", "w").write(str(child.pid))
'''

STOPS = '''
import subprocess, sys
def test_stops_what_it_started():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    child.kill()
    child.wait()
'''


def _run(tmp_path: Path, source: str, *options: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_case.py").write_text(source)
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}   # a run of its own
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "leftover_processes", "-p", "no:cacheprovider",
                           *options, "test_case.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**env, "PYTHONPATH": str(TESTS)})


@pytest.mark.parametrize("options", [(), ("-n", "1")], ids=["one process", "xdist worker"])
def test_a_process_left_running_fails_the_run_and_is_killed(tmp_path, options):
    ran = _run(tmp_path, LEAVES, *options)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "1 passed" in ran.stdout and "outlived it" in ran.stdout
    assert "first seen after test_case.py::test_leaves_a_process_behind" in ran.stdout
    pid = int((tmp_path / "pid").read_text())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_test_that_stops_its_processes_passes(tmp_path):
    ran = _run(tmp_path, STOPS)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "outlived" not in ran.stdout
