"""No process the test suite starts outlives it: the hooks tests/conftest.py installs.

Every process a pytest starts inherits a mark in its environment (that pytest's pid), also one that
double-forks away from it (a daemonised redis-server, a background renderer whose parent is a test's
server). At the end of the session, with every fixture torn down, a marked process still running fails the
run, and is killed: it would keep a core busy beside the next tests, or beside whatever runs after the suite.
When the suite runs on pytest-xdist workers, each worker checks what its own tests started and hands what it
found to the run's pytest, which fails the run.
"""
from __future__ import annotations

import os

import psutil
import pytest

SUITE_MARK = "EXAG_TEST_SUITE"
# multiprocessing's helpers wait idle for their pytest and end with it (a spawn pool's resource tracker)
HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")
SURVIVOR_GRACE_S = 3.0              # a process its test's teardown told to stop may take a moment to go
WORKER_OUTPUT = "exag_survivors"    # what an xdist worker hands the run's pytest
_first_seen: dict[int, str] = {}    # pid of a child of this pytest -> the test after which it was first seen
_from_workers: list[str] = []       # the run's pytest: what its workers found


def mark_suite_processes() -> None:
    """Marks this pytest's environment: every process started from now on inherits the mark."""
    os.environ[SUITE_MARK] = str(os.getpid())


def pytest_configure(config):
    mark_suite_processes()


def pytest_runtest_logfinish(nodeid, location):
    for child in psutil.Process().children(recursive=True):
        _first_seen.setdefault(child.pid, nodeid)


def suite_processes() -> list[psutil.Process]:
    """The running processes (zombies and multiprocessing's helpers aside) that carry this pytest's mark."""
    mark, me = os.environ.get(SUITE_MARK), os.getpid()
    found = []
    for process in psutil.process_iter():
        try:
            if (process.pid != me and process.status() != psutil.STATUS_ZOMBIE
                    and process.environ().get(SUITE_MARK) == mark
                    and not any(helper in " ".join(process.cmdline()) for helper in HELPERS)):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return found


def stop_survivors() -> list[str]:
    """Kills the marked processes still running after a grace period; one line about each."""
    _, alive = psutil.wait_procs(suite_processes(), timeout=SURVIVOR_GRACE_S)
    lines = []
    for process in alive:
        try:
            command = " ".join(process.cmdline())[:200]
            process.kill()
        except psutil.Error:
            command = "(gone)"
        lines.append(f"  pid {process.pid}, first seen after {_first_seen.get(process.pid, 'an unknown test')}: "
                     f"{command}")
    return lines


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """pytest-xdist: a worker ended; keep what it found."""
    _from_workers.extend(getattr(node, "workeroutput", {}).get(WORKER_OUTPUT, []))


@pytest.hookimpl(trylast=True)      # after the session's fixtures are torn down (and, with xdist, its workers)
def pytest_sessionfinish(session, exitstatus):
    lines = stop_survivors()
    if hasattr(session.config, "workerinput"):          # an xdist worker: the run's pytest reports it
        session.config.workeroutput[WORKER_OUTPUT] = lines
        return
    lines += _from_workers
    if not lines:
        return
    message = f"{len(lines)} process(es) the test suite started outlived it (killed now):\n" + "\n".join(lines)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(message, red=True, bold=True)
    else:
        print(message)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
