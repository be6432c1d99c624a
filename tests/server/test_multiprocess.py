"""A real multi-process deployment on this machine (docs/deploy.md): one Redis, two inference workers
(`exag worker`) and two web processes (`exag serve --workers 0 --redis-url ...`, each a gunicorn of its own
on its own port), all separate processes. A participant's two tabs on different web processes both get
every state (the Socket.IO message queue on the Redis); a web process killed with SIGKILL mid-game loses
no acknowledged event, and its player resumes the same game on the other one; web processes stop cleanly
on SIGTERM, and a stand-alone `exag serve` stops the Redis it started."""
from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import socketio

from experiments.simulate.bot import browser_cookie
from game.settings import RATINGS
from server import browser
from server.embedded_redis import EmbeddedRedis
from server.store import Store

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 180     # a process from its start to answering (~30 s alone; both cores are shared by all here)
REPLY_TIMEOUT_S = 20      # one state, also one that crosses processes
STOP_TIMEOUT_S = 20       # SIGTERM to exit (gunicorn's graceful stop is 5 s)
# a controlled study without explainers: the deployment, not the explainers, is under test
STUDY = {"study_id": "mp", "kind": "controlled", "arms": ["none"], "sessions": 4, "games_per_session": 2,
         "choose_arm": True, "completion_code": "CODE-MP", "settings": {"min_questions": 0}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


@pytest.fixture(scope="module")
def deployment(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path_factory):
    """One Redis, two `exag worker`s, two web processes with no workers of their own."""
    root = tmp_path_factory.mktemp("multiprocess")
    studies = root / "studies"
    studies.mkdir()
    (studies / "mp.json").write_text(json.dumps(STUDY))
    redis = EmbeddedRedis(root / "redis").start()
    common = ["--redis-url", redis.url, "--world", str(agent_world), "--agent", str(tiny_agent_dir),
              "--data-dir", str(root / "data")]
    options = json.dumps({"relqa": {"min_bank": 50}, "nle": {"model": str(tiny_nle_dir)}})
    processes: list[Process] = []
    try:
        processes += [Process(f"worker-{n}", ["worker", *common, "--explainer-options", options], root)
                      for n in range(2)]
        webs = [Web(f"web-{n}", [*common, "--workers", "0", "--studies", str(studies), "--admin-token", "mp-admin",
                                 "--web-threads", "32"], root) for n in range(2)]
        processes += webs
        deadline = time.monotonic() + START_TIMEOUT_S
        for worker in processes[:2]:
            worker.wait_for("ready", deadline)      # `exag worker` prints "inference worker NAME ready in S s"
        for web in webs:
            web.wait_ready(deadline)
        yield {"redis": redis, "webs": webs, "workers": processes[:2], "root": root, "world": str(agent_world),
               "agent": str(tiny_agent_dir)}
        stopped = {p.name: (p.popen.poll() if not p.alive() else p.stop()) for p in processes}
        assert all(stopped[w.name] == 0 for w in webs[1:]), [p.tail() for p in processes]
    finally:
        for process in processes:
            if process.alive():
                process.stop()
        redis.stop()


def test_two_tabs_on_two_web_processes_both_get_every_state(deployment):
    one, other = deployment["webs"]
    cookie = browser_cookie(one.url, "mp")
    first, second = Tab(one.url, cookie), Tab(other.url, cookie)       # one browser, a tab on each process
    try:
        join = {"study": "mp", "pid": "two-tabs", "arm": "none"}
        assert first.send("join", join)["stage"] == "consent"
        assert second.send("join", join)["stage"] == "consent"
        first.next_state("the other tab's join")
        assert first.send("consent", {"agree": True}) == second.next_state_at("instructions", "consent")
        state = second.send("begin", {})
        assert first.next_state("begin") == state and state["stage"] == "game"
        game_id = state["game"]["game_id"]
        for number, (asking, seeing) in enumerate(((first, second), (second, first))):
            state = asking.send("ask", {"game_id": game_id, "question": "is there a red cube?"})
            assert len(state["game"]["rounds"]) == number + 1 and seeing.next_state("ask") == state
            state = seeing.send("rate", {"game_id": game_id, "rating": RATINGS[0]})
            assert asking.next_state("rate") == state
        state = first.send("guess", {"game_id": game_id, "image": state["game"]["images"][0]})
        assert state["game"]["won"] is not None and second.next_state("guess") == state
    finally:
        first.close()
        second.close()


def test_a_player_resumes_on_the_other_web_process_after_a_kill_9(deployment):
    doomed, survivor = deployment["webs"]
    cookie = browser_cookie(doomed.url, "mp")
    tab = Tab(doomed.url, cookie)
    join = {"study": "mp", "pid": "crash", "arm": "none"}
    try:
        tab.send("join", join)
        tab.send("consent", {"agree": True})
        game_id = tab.send("begin", {})["game"]["game_id"]
        tab.send("ask", {"game_id": game_id, "question": "is there a large cube?"})
        acknowledged = tab.send("rate", {"game_id": game_id, "rating": RATINGS[0]})
        tab.client.emit("ask", {"game_id": game_id, "question": "is there a metal sphere?"})   # in flight
        time.sleep(0.02)
        doomed.signal(signal.SIGKILL)                  # the web process (gunicorn's master and worker) dies
        doomed.popen.wait(STOP_TIMEOUT_S)
    finally:
        tab.close()

    tab = Tab(survivor.url, cookie)                    # the browser reconnects, the proxy sends it to the other
    try:
        resumed = tab.send("join", join)
        rounds = resumed["game"]["rounds"]
        assert resumed["game"]["game_id"] == game_id
        # the in-flight one: once or not; a view carries only its latest round's explanations, so the first
        # round is compared without them (when the in-flight round was answered, it is no longer the latest)
        def without_explanations(shown):
            return [{k: v for k, v in r.items() if k != "explanations"} for r in shown]
        assert without_explanations(rounds[:1]) == without_explanations(acknowledged["game"]["rounds"])
        assert len(rounds) in (1, 2)
        if len(rounds) == 2:
            tab.send("rate", {"game_id": game_id, "rating": RATINGS[0]})
        state = tab.send("ask", {"game_id": game_id, "question": "how many cylinders are there?"})
        assert len(state["game"]["rounds"]) == len(rounds) + 1
        tab.send("rate", {"game_id": game_id, "rating": RATINGS[0]})
        state = tab.send("guess", {"game_id": game_id, "image": state["game"]["images"][0]})
        assert state["game"]["won"] is not None
    finally:
        tab.close()

    store = Store.connect(deployment["redis"].url)
    try:
        events = [e for e in store.events() if e["game"] == game_id]
    finally:
        store.close()
    kinds = [e["type"] for e in events if e["type"] != "rejoin"]
    assert kinds == ["game_start"] + ["question", "rating"] * (len(rounds) + 1) + ["guess"], kinds
    questions = [e["question"] for e in events if e["type"] == "question"]
    assert len(set(questions)) == len(questions), questions          # no round answered twice


def test_exag_serve_stops_its_embedded_redis_on_sigterm(deployment):
    """`exag serve` with no Redis URL starts its own (in --data-dir) and stops it on SIGTERM. (No workers:
    the pool's embeddings are the ones the deployment's workers stored; a study without explainers.)"""
    root = deployment["root"]
    web = Web("standalone", ["--world", deployment["world"], "--agent", deployment["agent"], "--data-dir",
                             str(root / "data"), "--workers", "0", "--studies", str(root / "studies")], root)
    try:
        web.wait_ready(time.monotonic() + START_TIMEOUT_S)
        embedded = EmbeddedRedis(root / "data" / "redis")
        pid = int(embedded.pid_file.read_text())
        assert embedded.alive()
    finally:
        status = web.stop()
    assert status == 0, web.tail()
    assert not embedded.alive() and not embedded.pid_file.exists() and not Path(f"/proc/{pid}").exists()
