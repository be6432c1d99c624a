"""Admission control (server/admission.py, issue 51): past its capacity the server refuses new participants at
the door, with a page that says when to come back, and counts them; a participant already in is never refused
or failed for load: a round that waits on a busy worker tells the player it is coming, and NO_WORKER is the
answer only when no worker is alive."""
from __future__ import annotations

import threading
import time

import pytest
from server_setup import server_config, write_studies
from socket_player import socket_client

from server.admission import Admission, AdmissionSettings, record_active, worker_budget_ms_per_s
from server.app import create_app
from server.rounds import BUSY_NOTICE, BUSY_NOTICE_S, FAST, NO_WORKER, RoundJob, RoundQueue, RoundTimeout, \
    waiting_notice


@pytest.fixture(scope="module")
def full_at_two(app, tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path_factory):
    """A web process without workers that admits two active participants (its pool's embeddings were stored by
    `app`'s worker)."""
    root = tmp_path_factory.mktemp("admission")
    web = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, root / "data",
                                   write_studies(root / "studies"), inprocess_workers=0, max_players=2))
    yield web
    web.extensions["exag"].close()


def join(app, pid: str, browser_id: str | None = None):
    client = socket_client(app, browser_id or f"browser-{pid}")
    client.emit("join", {"study": "ctl", "pid": pid, "arm": "none"})
    return client, client.get_received()


def stored_events(app) -> list[dict]:
    return list(app.extensions["exag"].store.events())


def test_a_full_server_refuses_new_participants_at_the_door_and_counts_them(full_at_two):
    services = full_at_two.extensions["exag"]
    clients = []
    for pid in ("door-1", "door-2"):
        client, received = join(full_at_two, pid)
        clients.append(client)
        assert [m["name"] for m in received] == ["state"]
    events_before = len(stored_events(full_at_two))
    time.sleep(1.1)                                  # the load is read at most once a second
    client, received = join(full_at_two, "door-3")
    clients.append(client)
    [refusal] = received
    assert refusal["name"] == "error"
    error = refusal["args"][0]
    assert error["event"] == "join" and error["full"]["retry_after_s"] > 0
    assert "full" in error["message"] and "come back" in error["message"]
    # nothing of the refused join entered the study: no participant, no event
    assert services.store.participant("ctl", "pid:door-3") is None
    assert len(stored_events(full_at_two)) == events_before
    # a participant already in rejoins (a reload) whatever the load
    client, received = join(full_at_two, "door-1")
    clients.append(client)
    assert [m["name"] for m in received] == ["state"]
    # counted: /healthz and the console read the same count
    status = full_at_two.test_client().get("/healthz").get_json()["admission"]
    assert status["full"] and status["active"] == 2 and status["capacity"] == 2
    assert status["refused"]["refused"] >= 1 and status["refused"]["refused:ctl"] >= 1
    monitor = full_at_two.test_client().get("/admin/monitor.json?token=test-admin")
    [ctl] = [row for row in monitor.get_json() if row["study"]["study_id"] == "ctl"]
    assert ctl["refused_full"] == status["refused"]["refused:ctl"]
    for c in clients:
        c.disconnect()


def test_a_finished_or_silent_participant_frees_a_place(app, tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path):
    web = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path / "data",
                                   write_studies(tmp_path / "studies"), inprocess_workers=0))
    try:
        redis = web.extensions["exag"].store.redis
        services = web.extensions["exag"]
        admission = Admission(redis, services.agents.queue.published,
                              AdmissionSettings(max_players=2, active_window_s=60))
        now = time.time()
        playing = {"study": "ctl", "pid": "pid:playing", "stage": "game", "last_seen": now}
        finishing = {"study": "ctl", "pid": "pid:finishing", "stage": "questionnaire", "last_seen": now}
        silent = {"study": "ctl", "pid": "pid:silent", "stage": "game", "last_seen": now - 3600}
        pipe = redis.pipeline()
        for participant in (playing, finishing, silent):
            record_active(pipe, participant)
        pipe.execute()
        assert admission.load().active == 2 and admission.load().full(admission.settings)   # the silent one: not
        pipe = redis.pipeline()
        record_active(pipe, {**finishing, "stage": "done"})
        pipe.execute()
        time.sleep(1.1)
        assert admission.load().active == 1 and not admission.load().full(admission.settings)
    finally:
        web.extensions["exag"].close()


def test_a_question_waiting_for_the_workers_closes_the_door(app, tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path):
    web = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path / "data",
                                   write_studies(tmp_path / "studies"), inprocess_workers=0))
    try:
        services = web.extensions["exag"]
        admission = services.play.admission
        assert admission.load().queue_age_s == 0 and not admission.load().full(admission.settings)
        # a question no worker took for 5 s (the stream's ids are Redis's clock in ms)
        now_ms = int(float(".".join(map(str, services.store.redis.time()))) * 1000)
        services.store.redis.xadd(FAST, {"job": "{}"}, id=f"{now_ms - 5000}-0")
        time.sleep(1.1)
        load = admission.load()
        assert 4.5 < load.queue_age_s < 10 and load.full(admission.settings)
        client, [refusal] = join(web, "queue-age-1")
        assert refusal["name"] == "error" and refusal["args"][0]["full"]
        client.disconnect()
    finally:
        web.extensions["exag"].close()


def test_a_busy_worker_answers_late_and_the_player_is_told_it_is_coming(app, tiny_agent_dir, agent_world,
                                                                        tiny_nle_dir, tmp_path):
    """A worker that is alive (published) but busy takes the round after the queue's timeout: the round waits
    for it and the player is told, instead of failing with NO_WORKER."""
    config = server_config(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path / "data",
                           write_studies(tmp_path / "studies"), inprocess_workers=0)
    web = create_app(config)
    services = web.extensions["exag"]
    worker = None
    try:
        from server.worker import Worker, WorkerConfig    # torch: the worker side
        worker = Worker(WorkerConfig(services.redis.url, config.world, config.data_dir, config.agent, "cpu", 1,
                                     config.explainer_options, config.batch, progress=False, name="busy-worker"))
        # published (alive) but not reading yet: busy for BUSY_NOTICE_S + 2 s
        threading.Timer(BUSY_NOTICE_S + 2, worker.start).start()
        queue = RoundQueue(services.store.redis, timeout_s=1)
        notices = []
        token = waiting_notice.set(notices.append)
        try:
            started = time.monotonic()
            result = queue.submit(RoundJob("round", [0, 1, 2], "is there a red cube?", 0, ["a", "b", "c"]))
        finally:
            waiting_notice.reset(token)
        assert result["answer"] and time.monotonic() - started > BUSY_NOTICE_S + 1
        assert notices == [BUSY_NOTICE]
    finally:
        if worker is not None:
            worker.close()
        services.close()


def test_no_live_worker_fails_the_round_with_no_worker(app, tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path):
    web = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path / "data",
                                   write_studies(tmp_path / "studies"), inprocess_workers=0))
    try:
        queue = RoundQueue(web.extensions["exag"].store.redis, timeout_s=1)
        with pytest.raises(RoundTimeout) as error:
            queue.submit(RoundJob("round", [0, 1], "is there a red cube?", 0, ["a", "b"]))
        assert str(error.value) == NO_WORKER
    finally:
        web.extensions["exag"].close()


def test_the_workers_budget_counts_their_threads_up_to_a_hosts_cores():
    import os
    import socket
    here = socket.gethostname()
    cores = os.cpu_count() or 1
    many_here = [{"host": here, "threads": {"torch_intra_op": 1}} for _ in range(cores + 3)]
    assert worker_budget_ms_per_s(many_here, 0.5) == cores * 1000 * 0.5
    elsewhere = [{"host": "gpu-box", "threads": {"torch_intra_op": 4}}]
    assert worker_budget_ms_per_s(elsewhere, 1.0) == 4000
    assert worker_budget_ms_per_s([], 0.6) == 0


def test_settings_refuse_nonsense():
    with pytest.raises(ValueError, match="max_players"):
        AdmissionSettings(max_players=0)
    with pytest.raises(ValueError):
        AdmissionSettings(max_queue_age_s=0)


def test_without_max_players_the_capacity_is_the_workers_budget_over_a_players_cost(app):
    """`app` runs one in-process worker thread: its budget is one core's share, and before enough players were
    measured a player costs DEFAULT_CPU_MS_PER_PLAYER_S."""
    from server.admission import DEFAULT_CPU_MS_PER_PLAYER_S
    services = app.extensions["exag"]
    load = Admission(services.store.redis, services.agents.queue.published, AdmissionSettings()).load()
    assert load.workers >= 1 and not load.measured
    assert load.budget_ms_per_s == pytest.approx(1000 * AdmissionSettings.worker_share * load.workers)
    assert load.capacity == int(load.budget_ms_per_s / DEFAULT_CPU_MS_PER_PLAYER_S)
