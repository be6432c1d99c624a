"""The load test (`exag bot --players N`): concurrent participants over real sockets against a live server."""
from __future__ import annotations

import os
import threading
import time

import pytest

from experiments.simulate.bot import parse_mix, run_load


def test_parse_mix():
    assert parse_mix("at-will=0.5") == 0.5 and parse_mix("controlled=0.25") == 0.75 and parse_mix("1") == 1.0
    with pytest.raises(ValueError):
        parse_mix("at-will=2")


def test_run_load_measures_every_event_without_errors(live_server):
    # a game's pacing is 4 questions a quarter of a second apart: games finish well inside the 10 s even
    # where a busy machine answers each question several times slower than an idle one
    report = run_load(live_server.url, 4, 10.0, 0.5, studies={"at-will": "aw", "controlled": "ctl"},
                      arms=("none", "both"), server_pids=[os.getpid()], question_interval_s=0.25,
                      progress=False)
    events = report["events"]
    for event in ("join", "consent", "begin", "ask", "explain", "rate", "guess", "next_game"):
        assert events[event]["n"] > 0, event
        assert {"p50", "p95", "p99"} <= set(events[event])
    assert report["errors"]["total"] == 0, report["errors"]
    assert report["timeouts"]["total"] == 0
    assert events["rate"]["n"] >= events["ask"]["n"] - 4     # a rating after every answer (bar the last ones)
    assert report["participants"] >= 4 and report["games_finished"] > 0
    assert report["messages"]["per_second"] > 0 and report["stopped_cleanly"]
    assert report["server"]["samples"] >= 5 and report["server"]["rss_mb"]["max"] > 0
    assert report["server"]["cpu_percent"]["mean"] >= 0 and "cpu_percent" in report["bot"]


def test_a_load_spread_over_processes_is_one_report(live_server):
    """`run_load_processes` (the capacity benchmark's --bot-processes): the players shared by two processes,
    every reply time of both in the percentiles, the server sampled once."""
    from experiments.simulate.load_processes import run_load_processes

    report = run_load_processes(live_server.url, 4, 8.0, processes=2, mix=0.5,
                                studies={"at-will": "aw", "controlled": "ctl"}, arms=("none", "both"),
                                server_pids=[os.getpid()], question_interval_s=0.25, progress=False)
    assert report["players"] == 4 and report["bot"]["processes"] == 2 and report["participants"] >= 4
    assert report["errors"]["total"] == 0 and report["timeouts"]["total"] == 0, report["errors"]
    assert "raw_times" not in report and report["events"]["ask"]["n"] > 0
    answered = sum(s["n"] for s in report["events"].values())
    assert report["messages"]["answered"] == answered and report["server"]["samples"] >= 4


def test_a_participant_whose_connection_is_lost_counts_an_error_and_plays_on(live_server):
    """Issue 51: a web process killed under `exag bot --players 60` ended 15 participant threads (python-socketio's
    BadNamespaceError, not a bot error) and the report said 0 errors. Now a message that cannot be sent, or whose
    reply cannot come, on a lost connection is an error, and the participant reconnects as a page reload does."""
    report = {}
    load = threading.Thread(target=lambda: report.update(run_load(
        live_server.url, 3, 6.0, 0.5, studies={"at-will": "aw", "controlled": "ctl"}, arms=("none",),
        question_interval_s=0.25, progress=False)))
    load.start()
    engine = live_server.app.extensions["socketio"].server.eio
    deadline = time.monotonic() + 30
    while len(engine.sockets) < 3:
        assert time.monotonic() < deadline and load.is_alive(), "the participants did not connect"
        time.sleep(0.05)
    time.sleep(1.0)                                  # playing
    for socket in list(engine.sockets.values()):    # as a killed web process drops its connections (not waiting
        socket.close(wait=False, abort=True)         # for a send: one the client closed meanwhile would never end)
    load.join(timeout=90)
    assert report["errors"]["total"] >= 1, report["errors"]
    assert all("the connection is gone" in e for e in report["errors"]["examples"]), report["errors"]
    assert report["events"]["join"]["n"] > 3 and report["stopped_cleanly"]      # back, each with a fresh connection
