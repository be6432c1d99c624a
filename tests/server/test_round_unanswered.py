"""A round nobody answered is recorded with its cause (issue 51: `round_unanswered` events mixed questions the
agent cannot read with worker time-outs): "unparseable", "refused", "agent_failed", "no_worker" or "timeout",
beside the player's reason (server/game_stage.py `unanswered_cause`)."""
from __future__ import annotations

import json
import shutil
import time

from server_setup import server_config, write_studies
from socket_player import socket_client, started

from game.study import StudyConfig
from server.app import create_app
from server.rounds import RESULT, RoundJob

UNREADABLE = "есть ли красный куб?"      # not English: the agent's vocabulary refuses it (QuestionError)


def unanswered(store, game_id: str) -> dict:
    [event] = [e for e in store.events() if e.get("game") == game_id and e["type"] == "round_unanswered"]
    return event


def test_the_worker_says_why_it_refused_a_round(app):
    """The worker's refusal carries its cause: a question the agent cannot read, or explainers it lacks."""
    services = app.extensions["exag"]
    images = list(range(3))
    unreadable = RoundJob("round", images, UNREADABLE, 0, ["t0", "t1", "t2"])
    lacking = RoundJob("round", images, "is there a red cube?", 0, ["t0", "t1", "t2"], for_the_secret=["no-such"])
    for job in (unreadable, lacking):
        services.agents.queue.post(job)
    deadline = time.monotonic() + 60
    while not all(services.store.redis.exists(RESULT.format(j.job_id)) for j in (unreadable, lacking)):
        assert time.monotonic() < deadline, "the worker did not answer"
        time.sleep(0.05)
    results = [json.loads(services.store.redis.get(RESULT.format(j.job_id))) for j in (unreadable, lacking)]
    assert [r["cause"] for r in results] == ["unparseable", "refused"], results
    assert "English" in results[0]["error"] and "no-such" in results[1]["error"]


def test_a_question_the_agent_cannot_read_is_recorded_as_unparseable(app, connect):
    player = started(connect, "ctl", "unreadable-1", "none")
    player.refused("ask", {"game_id": player.game["game_id"], "question": UNREADABLE}, "English")
    event = unanswered(app.extensions["exag"].store, player.game["game_id"])
    assert event["cause"] == "unparseable" and event["question"] == UNREADABLE and "English" in event["reason"]


def test_a_round_whose_agent_fails_is_recorded_as_agent_failed(app, connect, tiny_agent_dir, tmp_path):
    broken = tmp_path / "garbage-weights"
    shutil.copytree(tiny_agent_dir, broken)
    (broken / "model.safetensors").write_bytes(b"not a safetensors file" * 10)
    app.extensions["exag"].store.save_study(
        StudyConfig("cause-broke", arms=("none",), choose_arm=True, games_per_session=1, agent=str(broken)), "open",
        {"type": "study_created", "study": "cause-broke"}, only_if_new=True)
    player = started(connect, "cause-broke", "broke-cause-1", "none")
    player.refused("ask", {"game_id": player.game["game_id"], "question": "is there a red cube?"}, "agent")
    event = unanswered(app.extensions["exag"].store, player.game["game_id"])
    assert event["cause"] == "agent_failed" and event["request"] == "ask", event


def test_a_round_no_worker_takes_is_recorded_as_no_worker(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path):
    web = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path / "data",
                                   write_studies(tmp_path / "studies"), inprocess_workers=0, round_timeout_s=1))
    try:
        player = started(lambda: socket_client(web), "ctl", "nobody-cause-1", arm="none")
        player.refused("ask", {"game_id": player.game["game_id"], "question": "is there a red cube?"},
                       "did not answer in time")
        event = unanswered(web.extensions["exag"].store, player.game["game_id"])
        assert event["cause"] == "no_worker" and "did not answer in time" in event["reason"], event
    finally:
        web.extensions["exag"].close()
