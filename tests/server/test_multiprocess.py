"""A real multi-process deployment on this machine (docs/deploy.md): one Redis, two inference workers
(`exag worker`) and two web processes (`exag serve --workers 0 --redis-url ...`, each a gunicorn of its own
on its own port), all separate processes. A participant's two tabs on different web processes both get
every state (the Socket.IO message queue on the Redis); a web process killed with SIGKILL mid-game loses
no acknowledged event, and its player resumes the same game on the other one; web processes stop cleanly
on SIGTERM, and a stand-alone `exag serve` stops the Redis it started."""
from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from experiments.simulate.bot import browser_cookie
from game.settings import RATINGS
from processes import START_TIMEOUT_S, STOP_TIMEOUT_S, Process, Tab, Web
from server.embedded_redis import EmbeddedRedis
from server.store import Store

# a controlled study without explainers: the deployment, not the explainers, is under test
STUDY = {"study_id": "mp", "kind": "controlled", "arms": ["none"], "sessions": 4, "games_per_session": 2,
         "choose_arm": True, "completion_code": "CODE-MP", "settings": {"min_questions": 0}}


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
        web.wait_for("ExAG is ready", time.monotonic() + START_TIMEOUT_S)   # no worker: /healthz says "starting"
        embedded = EmbeddedRedis(root / "data" / "redis")
        pid = int(embedded.pid_file.read_text())
        assert embedded.alive()
    finally:
        status = web.stop()
    assert status == 0, web.tail()
    assert not embedded.alive() and not embedded.pid_file.exists() and not Path(f"/proc/{pid}").exists()
