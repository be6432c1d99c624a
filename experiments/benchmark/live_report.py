"""What the admin's live report and export cost the web process that serves players (issue 51), before and after
they moved to child processes (server/reports.py).

A private Redis gets a realistic event log of about `--events` events (experiments/benchmark/analysis_speed.py's
synthetic studies, whose studies are stored as a server stores them), and this process serves the console's
routes as a web process does: the admin blueprint on a Flask app with the server's Store. Then it times

- now: the /admin/report request that finds the log grown (answered from Redis, a child started), the wait until
  the child's page is there, the request that serves it, and /admin/export.zip (a child writes the zip);
- before: what the web process did itself until issue 51, `live_report(list(store.events()), study)` (twice:
  the first also loads the analysis) and the export written in the process,

with this process's resident memory before and after each (psutil) and its peak (getrusage), and the children's
peak. Measured after each other in one process, "now" first: "before" keeps what it allocated.

    python -m experiments.benchmark.live_report --events 10000 --json results/live_report.json
"""
from __future__ import annotations

import argparse
import io
import json
import platform
import resource
import tempfile
import time
import zipfile
from pathlib import Path

import psutil
from flask import Flask

from experiments.analysis.live import live_report
from experiments.benchmark import write_report
from experiments.benchmark.analysis_speed import synthetic_events
from game.export import outcome_looks, write_export
from game.study import StudyConfig
from server.admin import admin
from server.app import Services
from server.config import ServerConfig
from server.embedded_redis import EmbeddedRedis
from server.reports import REPORT
from server.store import Store

TOKEN = "bench-admin"
STUDY = "sim-controlled"            # analysis_speed's controlled study (its at-will one is "sim-at-will")
STUDIES = (StudyConfig(STUDY, arms=("none", "attention", "relqa", "both")),
           StudyConfig("sim-at-will", kind="at-will", arms=("both",), sessions=4))
CALIBRATION_GAMES = 200             # games whose events give the events per game, to size the log
POLL_S = 0.1
WAIT_S = 900.0                      # the longest this waits for a child's report


def _rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


def _peak_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024          # kilobytes on Linux


def _timed(call) -> tuple[object, float, float]:
    """call(), its wall seconds and this process's RSS change (MB) across it."""
    before, started = _rss_mb(), time.perf_counter()
    result = call()
    return result, time.perf_counter() - started, _rss_mb() - before


def fill(store: Store, events: int, seed: int) -> int:
    """Stores the studies and about `events` events; returns how many the log holds."""
    for study in STUDIES:
        store.save_study(study, "open", {"type": "study_created", "study": study.study_id, "config": study.to_dict()},
                         only_if_new=True)
    per_game = len(synthetic_events(CALIBRATION_GAMES, seed)) / CALIBRATION_GAMES
    made = synthetic_events(max(1, round((events - len(STUDIES)) / per_game)), seed)
    pipe = store.redis.pipeline(transaction=False)
    for event in made:
        Store.add_event(pipe, event)
    pipe.execute()
    return store.redis.xlen("exag:events")


def benchmark(events: int, seed: int = 0) -> dict:
    with tempfile.TemporaryDirectory(prefix="exag-live-bench-") as tmp:
        redis = EmbeddedRedis(Path(tmp) / "redis").start()
        store = Store.connect(redis.url)
        try:
            logged = fill(store, events, seed)
            app = Flask("exag-live-bench")
            app.register_blueprint(admin)
            app.extensions["exag"] = Services(ServerConfig(admin_token=TOKEN, redis_url=redis.url), store, pool=None,
                                              worker=None, play=None, rating=None, redis=None, live_report=live_report)
            http = app.test_client()
            report_url = f"/admin/report?study={STUDY}&token={TOKEN}"
            rss_start = _rss_mb()

            stale, stale_s, stale_mb = _timed(lambda: http.get(report_url))
            assert stale.status_code == 200, stale.status_code
            waited = time.perf_counter()
            while store.redis.hget(REPORT.format(STUDY), "events") != str(logged):
                assert time.perf_counter() - waited < WAIT_S, "no report from the child"
                time.sleep(POLL_S)
            child_s = time.perf_counter() - waited
            fresh, fresh_s, fresh_mb = _timed(lambda: http.get(report_url))
            assert b"report-note" not in fresh.data, "the report served is not of the whole log"
            export, export_s, export_mb = _timed(lambda: http.get(f"/admin/export.zip?token={TOKEN}&format=csv"))
            assert export.status_code == 200 and zipfile.ZipFile(io.BytesIO(export.data)).testzip() is None
            now = {"stale_request_s": stale_s, "stale_request_rss_mb": stale_mb, "child_report_s": child_s,
                   "fresh_request_s": fresh_s, "fresh_request_rss_mb": fresh_mb,
                   "child_seconds_in_report": float(store.redis.hget(REPORT.format(STUDY), "seconds")),
                   "export_request_s": export_s, "export_request_rss_mb": export_mb,
                   "web_rss_after_mb": _rss_mb(), "web_rss_growth_mb": _rss_mb() - rss_start,
                   "web_peak_rss_mb": _peak_mb(), "children_peak_rss_mb": _peak_mb(resource.RUSAGE_CHILDREN)}

            peak_before = _peak_mb()
            html, old_report_s, old_report_mb = _timed(lambda: live_report(list(store.events()), STUDY))
            old_peak = _peak_mb() - peak_before
            _, old_again_s, old_again_mb = _timed(lambda: live_report(list(store.events()), STUDY))   # analysis loaded

            def old_export() -> None:
                events_now = list(store.events())
                events_now += outcome_looks(events_now, "admin export", time.time())
                with tempfile.TemporaryDirectory() as out, zipfile.ZipFile(io.BytesIO(), "w") as archive:
                    for path in write_export(events_now, out, "csv"):
                        archive.write(path, path.name)
            _, old_export_s, old_export_mb = _timed(old_export)
            before = {"report_s": old_report_s, "report_rss_mb": old_report_mb, "report_peak_growth_mb": old_peak,
                      "second_report_s": old_again_s, "second_report_rss_mb": old_again_mb,
                      "export_s": old_export_s, "export_rss_mb": old_export_mb, "web_rss_after_mb": _rss_mb()}
            return {"events": logged, "report_html_kb": len(html) / 1024, "now": now, "before": before,
                    "machine": {"cpus": psutil.cpu_count(), "python": platform.python_version()}}
        finally:
            store.close()
            redis.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    report = benchmark(args.events, args.seed)
    now, before = report["now"], report["before"]
    print(f"{report['events']} events, a {report['report_html_kb']:.0f} KB report page")
    print(f"now:    /admin/report {now['stale_request_s'] * 1000:.0f} ms when the log has grown (child started), "
          f"{now['fresh_request_s'] * 1000:.0f} ms once its page is there; the child took "
          f"{now['child_report_s']:.1f} s (peak {now['children_peak_rss_mb']:.0f} MB); export "
          f"{now['export_request_s']:.1f} s; web process RSS "
          f"+{now['web_rss_growth_mb']:.1f} MB over all of it")
    print(f"before: /admin/report {before['report_s']:.1f} s in the web process, RSS +{before['report_rss_mb']:.0f} MB "
          f"(peak +{before['report_peak_growth_mb']:.0f} MB), again {before['second_report_s']:.1f} s, RSS "
          f"+{before['second_report_rss_mb']:.0f} MB; export {before['export_s']:.1f} s, RSS "
          f"+{before['export_rss_mb']:.0f} MB")
    write_report(args.json, report)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
