"""No process the test suite starts outlives it: the hooks tests/conftest.py installs.

Every process the suite starts inherits a mark in its environment, also one that double-forks away from
pytest (a daemonised redis-server, a background renderer whose parent is a test's server). At the end of
the session, with every fixture torn down, a marked process still running fails the run, and is killed:
it would keep a core busy beside the next tests, or beside whatever runs after the suite.
"""
from __future__ import annotations

import os

import psutil
import pytest

SUITE_MARK = "EXAG_TEST_SUITE"
# multiprocessing's helpers wait idle for pytest itself and end with it (a spawn pool's resource tracker)
HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")
SURVIVOR_GRACE_S = 3.0              # a process its test's teardown told to stop may take a moment to go
_first_seen: dict[int, str] = {}    # pid of a child of pytest -> the test after which it was first seen


def pytest_configure(config):
    os.environ[SUITE_MARK] = str(os.getpid())


def pytest_runtest_logfinish(nodeid, location):
    for child in psutil.Process().children(recursive=True):
        _first_seen.setdefault(child.pid, nodeid)


def suite_processes() -> list[psutil.Process]:
    """The running processes (zombies aside) that carry this run's mark, this pytest excepted."""
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


@pytest.hookimpl(trylast=True)      # after the session's fixtures are torn down
def pytest_sessionfinish(session, exitstatus):
    _, alive = psutil.wait_procs(suite_processes(), timeout=SURVIVOR_GRACE_S)
    if not alive:
        return
    lines = []
    for process in alive:
        try:
            command = " ".join(process.cmdline())[:200]
            process.kill()
        except psutil.Error:
            command = "(gone)"
        lines.append(f"  pid {process.pid}, first seen after {_first_seen.get(process.pid, 'an unknown test')}: "
                     f"{command}")
    message = f"{len(alive)} process(es) the test suite started outlived it (killed now):\n" + "\n".join(lines)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(message, red=True, bold=True)
    else:
        print(message)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
