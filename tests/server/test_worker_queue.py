"""Rounds travel through Redis streams to inference workers (server/rounds.py, server/worker.py): answered
by a worker thread or a real `exag worker` process; a worker killed mid-round leaves its job to another,
and the player gets exactly one answer; heavy jobs never hold up plain questions; the web process never
imports torch."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import redis as redis_lib
from server_setup import server_config, write_studies
from socket_player import socket_client, started

from server.app import create_app
from server.inference import BatchSettings
from server.rounds import FAST, GROUP, PREPARE, RESULT, SLOW, TAKEN, WORKERS, RoundJob, RoundQueue, RoundTimeout
from server.worker import CLAIM_AFTER_MS, CPU_STATS, Worker, WorkerConfig

REPO = Path(__file__).resolve().parents[2]
ALL = ["attention", "objscene", "relqa", "introspect"]


def start_game(play, study: str, pid: str, arm: str = "none") -> tuple[tuple[str, str], str]:
    """A participant through join, consent and instructions, straight through Play (no Socket.IO)."""
    who, _, _ = play.join({"study": study, "pid": pid, "arm": arm}, play.browsers.new_id())
    play.consent(who, {"agree": True})
    play.begin(who, {})
    return who, play.view(*who)["game"]["game_id"]


def events_of(store, game_id: str, kind: str) -> list[dict]:
    return [e for e in store.events() if e.get("game") == game_id and e["type"] == kind]


def job(services, images: int = 5, question: str = "is there a red cube?", **changes) -> RoundJob:
    n = min(images, len(services.pool))
    return RoundJob("round", list(range(n)), question, 0, [f"t{i}" for i in range(n)], **changes)


def test_rounds_are_answered_through_the_streams_by_a_worker(app):
    services = app.extensions["exag"]
    queue = services.agents.queue
    assert services.workers and "torch" in sys.modules         # this test process runs one worker thread
    results = [None] * 6

    def ask(i):
        results[i] = queue.submit(job(services, question=["is there a red cube?", "how many spheres are there?"][i % 2],
                                      for_every_image=["attention"]))

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        assert r["answer"] and r["graded"]["answer_grade"] and r["worker"] == services.workers[0].name
        assert set(r["shown"]["view"]["for_every_image"]) == {f"t{i}" for i in range(5)}
        assert all(e["grade"] for e in r["shown"]["log"])           # graded by the worker
    # each result read once: its key holds only a mark now, and nothing is left pending
    assert all(services.store.redis.get(k) == TAKEN for k in services.store.redis.scan_iter(RESULT.format("*")))
    assert services.store.redis.xpending(FAST, GROUP)["pending"] == 0
    published = json.loads(services.store.redis.hget(WORKERS, services.workers[0].name))
    assert published["agents"][""]["unavailable"] == {}

    # a question the agent cannot read comes back as the worker's message, for the player
    with pytest.raises(ValueError, match="I only understand English"):
        queue.submit(job(services, question="есть ли красный куб?"))


def test_a_played_round_goes_through_a_worker(app):
    services = app.extensions["exag"]
    who, game_id = start_game(services.play, "ctl", "queue-1", "both")
    view = services.play.ask(who, {"game_id": game_id, "question": "is there a red cube?"})
    last = view["game"]["rounds"][-1]
    assert last["answer"] in ("yes", "no")
    asked, = events_of(services.store, game_id, "question")
    assert asked["answer"] == last["answer"] and asked["batch_rounds"] >= 1 and asked["answer_grade"]


def test_slow_jobs_do_not_delay_plain_questions(app):
    """A burst of heavy explanation rounds is queued on the slow stream; a plain question asked after it is
    answered before the burst is through (the worker reads the fast stream first)."""
    services = app.extensions["exag"]
    queue, redis = services.agents.queue, services.store.redis
    heavy = [job(services, images=20, for_every_image=ALL, for_the_secret=["objscene", "relqa", "nle"])
             for _ in range(10)]
    for j in heavy:
        j.deadline = time.time() + 120
        queue.post(j, slow=True)
    started = time.perf_counter()
    answer = queue.submit(job(services))
    plain_s = time.perf_counter() - started
    heavy_done = sum(redis.exists(RESULT.format(j.job_id)) for j in heavy)
    assert answer["answer"]
    assert heavy_done < len(heavy) / 2, (heavy_done, plain_s)
    deadline = time.monotonic() + 120                 # the burst is answered too, each job once
    while time.monotonic() < deadline and sum(redis.exists(RESULT.format(j.job_id)) for j in heavy) < len(heavy):
        time.sleep(0.2)
    assert all(redis.exists(RESULT.format(j.job_id)) for j in heavy)


@pytest.fixture
def web_only(app, tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path):
    """A web process with no worker of its own (its pool embeddings were stored by `app`'s worker)."""
    web = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path / "data",
                                   write_studies(tmp_path / "studies"), inprocess_workers=0, round_timeout_s=90))
    yield web
    web.extensions["exag"].close()


def worker_process(services, tiny_agent_dir, agent_world, tiny_nle_dir, data_dir: Path, max_wait_ms: float):
    options = {"relqa": {"min_bank": 50}, "nle": {"model": str(tiny_nle_dir)}}
    return subprocess.Popen(
        [sys.executable, "-m", "exag_cli", "worker", "--redis-url", services.redis.url, "--world", str(agent_world),
         "--agent", str(tiny_agent_dir), "--data-dir", str(data_dir), "--max-wait-ms", str(max_wait_ms),
         "--explainer-options", json.dumps(options), "--feature-cache", "64"],
        cwd=REPO, env={**os.environ, "OMP_NUM_THREADS": "1"}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)


def wait_for(condition, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_killed_worker_s_round_is_answered_once_by_another(web_only, tiny_agent_dir, agent_world, tiny_nle_dir,
                                                             tmp_path):
    services = web_only.extensions["exag"]
    redis = services.store.redis
    # a real `exag worker` that holds the round it reads for 30 s (waiting for others to batch with, as it
    # does once it has had a question: server/worker.py `_more_fast`): it is killed while the round is
    # pending with it
    proc = worker_process(services, tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path / "data", 30_000)
    rescuer = None
    try:
        first = wait_for(lambda: redis.hkeys(WORKERS), 180, "the worker process to start")[0]
        who, game_id = start_game(services.play, "ctl", "killed-1")
        services.agents.queue.submit(job(services))        # a first question, answered without a wait
        outcome = {}

        def ask():
            try:
                outcome["view"] = services.play.ask(who, {"game_id": game_id, "question": "is there a red cube?"})
            except Exception as error:     # noqa: BLE001 - the test looks at it
                outcome["error"] = error

        asking = threading.Thread(target=ask)
        asking.start()
        wait_for(lambda: any(c["name"] == first and c["pending"] for c in redis.xinfo_consumers(FAST, GROUP)),
                 30, "the worker to take the round")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert "view" not in outcome
        # another worker claims the dead one's round and answers it
        rescuer = Worker(WorkerConfig(services.redis.url, agent_world, tmp_path / "data", str(tiny_agent_dir),
                                      explainer_options={"relqa": {"min_bank": 50}, "nle": {"model": str(tiny_nle_dir)}},
                                      batch=BatchSettings(8, 5.0), feature_cache=64, warm_pool=False)).start()
        asking.join(timeout=90)
        assert "error" not in outcome, outcome
        assert outcome["view"]["game"]["rounds"][-1]["answer"] in ("yes", "no")
        assert len(events_of(services.store, game_id, "question")) == 1              # one answer, one event
        results = list(redis.scan_iter(RESULT.format("*")))
        assert len(results) == 2 and all(redis.get(r) == TAKEN for r in results)   # the two, each read once
        wait_for(lambda: redis.xpending(FAST, GROUP)["pending"] == 0, 10, "the claimed round to be acknowledged")
        assert not list(redis.scan_iter("exag:round:reply:*"))                   # no second reply
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        if rescuer is not None:
            rescuer.close()


def test_a_round_no_worker_answers_fails_with_a_clear_message(app, tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path):
    web = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path / "data",
                                   write_studies(tmp_path / "studies"), inprocess_workers=0, round_timeout_s=1))
    try:
        play = web.extensions["exag"].play
        who, game_id = start_game(play, "ctl", "nobody-1")
        with pytest.raises(ValueError, match="did not answer in time"):
            play.ask(who, {"game_id": game_id, "question": "is there a red cube?"})
        store = web.extensions["exag"].store
        assert not events_of(store, game_id, "question")
        # refused with its reason, and recorded (issue 45: a question asked while no worker ran was lost)
        [unanswered] = events_of(store, game_id, "round_unanswered")
        assert unanswered["question"] == "is there a red cube?" and unanswered["request"] == "ask"
        assert "did not answer in time" in unanswered["reason"] and unanswered["round"] == 0
        # and /healthz says no player can play: no worker has answered a warm-up question
        health = web.test_client().get("/healthz")
        assert health.status_code == 503 and health.get_json()["agents"] == {"": "starting"}
    finally:
        web.extensions["exag"].close()


def test_a_question_for_a_starting_agent_is_told_it_waits(app, tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path):
    """The page is told the agent is starting (`notice`) before its question waits; then it is answered, or
    refused with its reason and recorded (here: no worker comes)."""
    web = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path / "data",
                                   write_studies(tmp_path / "studies"), inprocess_workers=0, round_timeout_s=1))
    try:
        player = started(lambda: socket_client(web), "ctl", "waiting-1", arm="none")
        game_id = player.game["game_id"]
        player.client.get_received()
        player.client.emit("ask", {"game_id": game_id, "question": "is there a red cube?"})
        received = [(m["name"], m["args"][0]) for m in player.client.get_received()]
        assert [name for name, _ in received] == ["notice", "error"], received
        assert received[0][1]["event"] == "ask" and "starting" in received[0][1]["message"]
        assert "did not answer in time" in received[1][1]["message"]
        [unanswered] = events_of(web.extensions["exag"].store, game_id, "round_unanswered")
        assert unanswered["question"] == "is there a red cube?"
    finally:
        web.extensions["exag"].close()


def test_a_warm_agent_sends_no_notice(app):
    player = started(lambda: socket_client(app), "ctl", "warm-1", arm="none")
    player.client.get_received()
    player.client.emit("ask", {"game_id": player.game["game_id"], "question": "is there a red cube?"})
    assert [m["name"] for m in player.client.get_received()] == ["state"]


def test_the_web_process_never_imports_torch(app, tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path):
    services = app.extensions["exag"]
    script = f"""
import sys
from pathlib import Path
from server.app import create_app
from server.config import ServerConfig
app = create_app(ServerConfig(world={str(agent_world)!r}, agent={str(tiny_agent_dir)!r},
                              data_dir={str(tmp_path / 'data')!r}, studies_dir=Path({str(services.config.studies_dir)!r}),
                              redis_url={services.redis.url!r}, progress=False, inprocess_workers=0))
services = app.extensions["exag"]
assert len(services.pool.embeddings) == len(services.pool)
assert "torch" not in sys.modules, "the web process imported torch"
from server.torch_free import WEB_MODULES
ours = ("server", "game", "explainers", "vqa_agent", "experiments", "exag_cli")
unlisted = sorted(m for m in sys.modules if m.partition(".")[0] in ours and m not in WEB_MODULES)
assert not unlisted, f"the web process loaded modules server/torch_free.py does not list: {{unlisted}}"
services.close()
print("torch-free")
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "torch-free" in done.stdout, done.stdout + done.stderr


def idle_worker(services, tiny_agent_dir, agent_world, tiny_nle_dir, data_dir: Path) -> Worker:
    """A worker that is not running: the test calls its loop's steps itself."""
    return Worker(WorkerConfig(services.redis.url, agent_world, data_dir, str(tiny_agent_dir),
                               explainer_options={"relqa": {"min_bank": 50}, "nle": {"model": str(tiny_nle_dir)}},
                               batch=BatchSettings(8, 1.0), feature_cache=64, warm_pool=False))


def test_a_slow_job_gets_its_share_while_questions_keep_coming(web_only, tiny_agent_dir, agent_world, tiny_nle_dir,
                                                              tmp_path):
    """Issue 29: a worker served the fast stream whenever it held anything, so under a crowd's questions a
    bought explanation waited past its deadline. Now a waiting slow job is taken at least every SLOW_SHARE_S."""
    services = web_only.extensions["exag"]
    queue, redis = services.agents.queue, services.store.redis
    questions = [job(services, deadline=time.time() + 60) for _ in range(40)]
    bought = job(services, for_the_secret=["objscene"], deadline=time.time() + 60)
    queue.post(bought, slow=True)
    for j in questions:
        queue.post(j)
    worker = idle_worker(services, tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path / "data")
    try:
        steps = 0
        while not redis.exists(RESULT.format(bought.job_id)):
            worker._step()
            steps += 1
            assert steps < 3, "the slow job waited behind the questions"
        answered = sum(redis.exists(RESULT.format(j.job_id)) for j in questions)
        assert answered < len(questions)
        while sum(redis.exists(RESULT.format(j.job_id)) for j in questions) < len(questions):
            worker._step()
    finally:
        worker.close()


def test_a_lone_question_does_not_wait_for_others_and_a_stream_of_them_does(web_only, tiny_agent_dir, agent_world,
                                                                           tiny_nle_dir, tmp_path):
    """A batch's first round waits up to max_wait_ms for others only when the worker's recent rate of questions
    makes one likely within the wait (server/inference.py ArrivalRate): at a few questions a second the wait
    gathered nothing, added its length to every answer and cost polls."""
    services = web_only.extensions["exag"]
    queue, redis = services.agents.queue, services.store.redis
    worker = Worker(WorkerConfig(services.redis.url, agent_world, tmp_path / "data", str(tiny_agent_dir),
                                 explainer_options={"relqa": {"min_bank": 50}, "nle": {"model": str(tiny_nle_dir)}},
                                 batch=BatchSettings(8, 1500.0), feature_cache=64, warm_pool=False))
    try:
        lone = job(services, deadline=time.time() + 60)
        queue.post(lone)
        started = time.monotonic()
        worker._step()
        assert redis.exists(RESULT.format(lone.job_id)) and time.monotonic() - started < 1.0   # not 1.5 s
        for _ in range(3):                   # questions every ~0.1 s: another is likely within 1.5 s
            time.sleep(0.1)
            queue.post(job(services, deadline=time.time() + 60))
            worker._step()
        assert worker._arrivals.per_second() * 1.5 >= 1
        first, second = (job(services, deadline=time.time() + 60) for _ in range(2))
        queue.post(first)
        threading.Timer(0.3, queue.post, [second]).start()     # arrives while the first waits
        worker._step()
        assert redis.exists(RESULT.format(first.job_id)) and redis.exists(RESULT.format(second.job_id))
    finally:
        worker.close()


def test_a_busy_worker_holds_at_most_one_job_of_each_other_stream(web_only, tiny_agent_dir, agent_world,
                                                                   tiny_nle_dir, tmp_path):
    """A worker reads every stream in one call, and a bought explanation or a preparation read with a question
    waits in the worker for its turn. It once read one of each with every question, so under a crowd the jobs
    it held grew without end, went past CLAIM_AFTER_MS and were "taken over" by the worker holding them
    (hundreds of log lines a minute, and their deliveries counted towards the error). While it holds one,
    it reads only questions; and it never takes over its own."""
    services = web_only.extensions["exag"]
    queue, redis = services.agents.queue, services.store.redis
    for i in range(6):
        queue.post(job(services, for_the_secret=["objscene"], deadline=time.time() + 60), slow=True)
        queue.prepare(RoundJob("prepare", [i, i + 1], reply=False))
    worker = idle_worker(services, tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path / "data")
    try:
        for _ in range(30):                  # a question arrives before every step, as under a crowd
            queue.post(job(services, deadline=time.time() + 60))
            worker._step()
            assert len(worker._held) <= 2
        pending = redis.xpending_range(SLOW, GROUP, min="-", max="+", count=100)
        assert len(pending) <= 1
        worker._claimed_at = 0.0
        for entry in worker._held:           # what it holds, idle past the claim's age: not taken over by itself
            redis.xclaim(entry[0], GROUP, worker.name, 0, [entry[1]], idle=CLAIM_AFTER_MS + 1000)
        held = list(worker._held)
        worker._claim()
        assert worker._held == held and not worker._retaken
    finally:
        worker.close()


def test_a_stale_preparation_is_dropped_and_preparations_wait_for_questions(web_only, tiny_agent_dir, agent_world,
                                                                          tiny_nle_dir, tmp_path):
    """A study's launch posts a preparation per new game; nobody waits for them, so they run only when no
    question or bought explanation waits, and one not started within PREPARE_WITHIN_S is dropped."""
    services = web_only.extensions["exag"]
    queue, redis = services.agents.queue, services.store.redis
    stale, fresh = (RoundJob("prepare", [i, i + 1], reply=False) for i in (0, 2))
    queue.prepare(stale)
    queue.prepare(fresh)
    redis.delete(PREPARE)     # the stale one again, as it would be found 11 s after its game started
    stale.deadline = time.time() - 1
    for j in (stale, fresh):
        redis.xadd(PREPARE, {"job": j.to_json()})
    question = job(services, deadline=time.time() + 60)
    queue.post(question)
    worker = idle_worker(services, tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path / "data")
    try:
        worker._step()
        assert redis.exists(RESULT.format(question.job_id)) and not worker._cpu.get("prepare:n")
        worker._step()
        worker._step()
        assert worker._cpu["prepare:n"] == 1           # the fresh one; the stale one was dropped unread
        assert redis.xpending(PREPARE, GROUP)["pending"] == 0
        worker._heartbeat()
        stats = redis.hgetall(CPU_STATS)
        assert float(stats["prepare:n"]) == 1 and float(stats["ask:n"]) == 1 and float(stats["ask:cpu_ms"]) > 0
    finally:
        worker.close()


def test_a_reply_wait_ends_at_the_deadline_whatever_the_socket_timeout(web_only):
    """An outside tester saw `redis.exceptions.TimeoutError` out of the reply's BLPOP under load (a blocking
    read longer than the connection's socket timeout). The wait is sliced: a round nobody answers (this web
    process has no worker) ends in the player's clear message at its deadline."""
    services = web_only.extensions["exag"]
    client = redis_lib.Redis.from_url(services.redis.url, decode_responses=True, socket_timeout=1.5)
    try:
        queue = RoundQueue(client, timeout_s=4)
        started = time.monotonic()
        with pytest.raises(RoundTimeout, match="did not answer in time"):
            queue.submit(job(services))
        assert 3.5 < time.monotonic() - started < 6
    finally:
        client.close()


def test_a_worker_stores_what_it_saw_of_the_pool_and_the_next_starts_with_it(web_only, tiny_agent_dir, agent_world,
                                                                            tiny_nle_dir, tmp_path):
    """Issue 29: a worker keeps the whole pool looked at (pool images are named by world and file, never
    hashed); the first to have looked at all of it stores that beside the world, and a worker started later
    loads it instead of looking again, and answers the same. Issue 45: workers started together do not all look
    at the pool: one claims it, the other waits for what it stores and loads that."""
    services = web_only.extensions["exag"]
    config = dict(explainer_options={"relqa": {"min_bank": 50}, "nle": {"model": str(tiny_nle_dir)}},
                  batch=BatchSettings(8, 1.0))
    paths = services.pool.features_paths(str(tiny_agent_dir), tmp_path / "data" / "cache")
    for path in paths:
        path.unlink(missing_ok=True)
    first = Worker(WorkerConfig(services.redis.url, agent_world, tmp_path / "data", str(tiny_agent_dir), **config))
    second = Worker(WorkerConfig(services.redis.url, agent_world, tmp_path / "data", str(tiny_agent_dir), **config))
    third = None
    try:
        assert first.looking.due() and second.looking.due()
        assert first.looking.here() and not second.looking.here()        # one looks; the other does not
        while first.looking.due():
            assert first.looking.here()
            first.looking.step()
        assert paths[0].exists()
        second.looking._looked_for_stored = 0.0                           # its next look for the stored pool
        assert not second.looking.here() and not second.looking.due()    # loaded what the first stored
        third = Worker(WorkerConfig(services.redis.url, agent_world, tmp_path / "data", str(tiny_agent_dir), **config))
        assert not third.looking.due()
        assert len(third.predictors[""].agent._cache) == len(third.pool)
        images = [third.pool.known(i) for i in range(6)]
        for question in ("is there a red cube?", "how many spheres are there?"):
            a = first.predictors[""].agent.answer(images, question)
            b = third.predictors[""].agent.answer(images, question)
            assert [(o.answer, o.top_k) for o in a] == [(o.answer, o.top_k) for o in b]
            assert all(np.array_equal(x.spatial_attention, y.spatial_attention) for x, y in zip(a, b))
    finally:
        first.close()
        second.close()
        if third is not None:
            third.close()
