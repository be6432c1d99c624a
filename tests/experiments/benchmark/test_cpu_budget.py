"""experiments/benchmark/cpu_budget.py turns the server's own CPU accounting (the hashes exag:cpu:web and
exag:cpu:worker, differences over the load) and each process's CPU into the per-message table."""
from __future__ import annotations

from experiments.benchmark.cpu_budget import budget_table, classify, per_kind


def test_per_kind_takes_the_differences_over_the_load():
    before = {"ask:n": 10, "ask:cpu_ms": 30.0, "rate:n": 5, "rate:cpu_ms": 5.0}
    after = {"ask:n": 110, "ask:cpu_ms": 330.0, "rate:n": 5, "rate:cpu_ms": 5.0, "explain:n": 4, "explain:cpu_ms": 100.0,
             "explain:batches": 4}
    kinds = per_kind(after, before)
    assert kinds["ask"] == {"n": 100, "cpu_ms": 300.0, "ms_per": 3.0}
    assert kinds["explain"]["ms_per"] == 25.0 and kinds["explain"]["batches"] == 4
    assert "rate" not in kinds          # nothing happened during the load


def test_the_table_adds_a_message_s_worker_jobs_to_its_web_handler():
    events = {"ask": {"n": 100}, "rate": {"n": 100}, "explain": {"n": 10}}
    web = {"ask": {"n": 100, "cpu_ms": 200.0, "ms_per": 2.0}, "rate": {"n": 100, "cpu_ms": 150.0, "ms_per": 1.5},
           "explain": {"n": 10, "cpu_ms": 30.0, "ms_per": 3.0}}
    work = {"ask": {"n": 80, "cpu_ms": 160.0, "ms_per": 2.0}, "ask_explained": {"n": 20, "cpu_ms": 1000.0, "ms_per": 50.0},
            "explain": {"n": 10, "cpu_ms": 450.0, "ms_per": 45.0}}
    table = budget_table(events, web, work, {"web": 12.0, "workers": 20.0, "redis": 2.0}, answered=1000)
    assert "| ask | 100 | 2.00 | 11.60 | 13.60 |" in table         # (160 + 1000) / 100 asks
    assert "| rate | 100 | 1.50 | - | 1.50 |" in table
    assert "| explain | 10 | 3.00 | 45.00 | 48.00 |" in table
    assert "| ask_explained | 20 | 50.00 |" in table
    assert "| **server, all** | 34.0 | 34.00 |" in table


def test_processes_are_told_apart_by_their_command_line():
    assert classify({"name": "redis-server", "cmdline": "redis-server unixsocket:/x"}) == "redis"
    assert classify({"name": "python", "cmdline": "python -m exag_cli worker --redis-url unix:///x"}) == "workers"
    assert classify({"name": "python", "cmdline": "python -m exag_cli serve --workers 2 --port 5000"}) == "web"
