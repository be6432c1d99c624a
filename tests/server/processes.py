"""Real `exag` processes for tests: a command as a process group of its own, a web process (`exag serve`)
answering on a free port, and a browser tab as a Socket.IO client with its browser's cookie."""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import socketio

from experiments.benchmark.capacity import free_port
from server import browser

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 180     # a process from its start to answering (~30 s alone; both cores are shared by all here)
REPLY_TIMEOUT_S = 20      # one state, also one that crosses processes
STOP_TIMEOUT_S = 20       # SIGTERM to exit (gunicorn's graceful stop is 5 s)


class Process:
    """An `exag` command as a process group of its own (gunicorn's master and worker die together)."""

    def __init__(self, name: str, args: list[str], log_dir: Path) -> None:
        self.name = name
        self.log = log_dir / f"{name}.log"
        env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
        with open(self.log, "w") as log:
            self.popen = subprocess.Popen([sys.executable, "-m", "exag_cli", *args], cwd=REPO, env=env, stdout=log,
                                          stderr=subprocess.STDOUT, start_new_session=True)

    def wait_for(self, line: str, deadline: float) -> None:
        """Until the process prints `line` (a worker says it is ready)."""
        while time.monotonic() < deadline:
            assert self.alive(), self.tail()
            if line in self.log.read_text(errors="replace"):
                return
            time.sleep(0.3)
        raise AssertionError(f"{self.name} did not say {line!r} within {START_TIMEOUT_S} s\n{self.tail()}")

    def tail(self) -> str:
        return f"--- {self.name} (exit {self.popen.poll()}):\n" + self.log.read_text(errors="replace")[-3000:]

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, signum: int) -> None:
        try:
            os.killpg(self.popen.pid, signum)
        except ProcessLookupError:
            pass

    def stop(self) -> int | None:
        """SIGTERM, then the exit status (None: it had to be killed)."""
        self.signal(signal.SIGTERM)
        try:
            return self.popen.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.popen.wait()
            return None


class Web(Process):
    def __init__(self, name: str, args: list[str], log_dir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        super().__init__(name, ["serve", "--port", str(self.port), *args], log_dir)

    def wait_ready(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            assert self.alive(), self.tail()
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.3)
        raise AssertionError(f"{self.name} did not answer within {START_TIMEOUT_S} s\n{self.tail()}")


class Tab:
    """A browser tab: a python-socketio client with its browser's cookie, on one web process; it keeps every
    state and error it is sent, whoever caused them."""

    def __init__(self, url: str, cookie: str) -> None:
        self.states: queue.Queue = queue.Queue()
        self.errors: queue.Queue = queue.Queue()
        self.client = socketio.Client(reconnection=False)
        self.client.on("state", lambda text: self.states.put(json.loads(text)))
        self.client.on("error", lambda error: self.errors.put(error))
        self.client.connect(url, transports=["websocket"], wait_timeout=REPLY_TIMEOUT_S,
                            headers={"Cookie": f"{browser.COOKIE}={cookie}"})

    def send(self, event: str, payload: dict) -> dict:
        for waiting in (self.states, self.errors):
            while not waiting.empty():
                waiting.get_nowait()
        self.client.emit(event, payload)
        return self.next_state(event)

    def next_state(self, event: str = "") -> dict:
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                return self.states.get(timeout=0.05)
            except queue.Empty:
                pass
            if not self.errors.empty():
                raise AssertionError(f"{event} refused: {self.errors.get_nowait()}")
        raise AssertionError(f"no state within {REPLY_TIMEOUT_S} s ({event or 'another tab'})")

    def next_state_at(self, stage: str, event: str = "") -> dict:
        """The next state at `stage`, passing over stale ones: a tab's own join is broadcast to its room too,
        and on a loaded machine that copy can arrive after the join's reply."""
        while (state := self.next_state(event))["stage"] != stage:
            pass
        return state

    def close(self) -> None:
        try:
            self.client.disconnect()
        except Exception:
            pass
