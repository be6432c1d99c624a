"""The admin's live report and export, computed off the players' processes (issue 51: one live report of 13.5k
events took 10 s and +347 MB in the web process that answers players). A web process only reads and writes
Redis here; the work runs in a short-lived child process (`python -m server.reports`, one thread, low priority)
that reads the event log from Redis itself and exits, and its memory goes with it.

- The live report (/admin/report): a child computes a study's page with the function `create_app` was given
  (imported in the child by its module and name) and stores it in Redis with the length of the event log it
  read. A request is answered from Redis at once: the page itself when the log has not grown since; else the
  last page with a note that a newer one is on its way, or, before the first, a page that says so and reloads
  itself. A stale page starts a child unless one computes already (one at a time, whichever web process
  started it: COMPUTING) or the latest one failed on this very log (its reason is shown instead).
- The export (/admin/export.zip): a child logs the export's looks at outcomes (game/export.py `outcome_looks`),
  reads the log again so that they carry their stream ids like every other event, writes the tables and zips
  them into a temporary file; the web process waits for it, working on nothing, and streams the file.

    view = live_view(redis, redis_url, live_report, "pilot-1")    # server/admin.py
    path = export_zip(redis_url, "csv")                           # the caller deletes it
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import logging
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import redis as redis_client

from game.export import FORMATS, live_look, outcome_looks, write_export
from game.export_signature import server_key
from vqa_agent.threads import thread_env

from .store import EVENTS, Store

log = logging.getLogger(__name__)

REPORT = "exag:live-report:{}"        # study -> hash: its latest page (html, events read, computed, seconds), and
                                      # error and failed_at (the log's length) when the latest computation failed
COMPUTING = "exag:live-report:computing"   # "STUDY TOKEN" while a child computes a page: one child at a time
REPORT_TIMEOUT_S = 600                # a child computing longer is stopped (10k events take ~10 s on 2 cores)
EXPORT_TIMEOUT_S = 600                # an export child too (10k events: a few seconds)
LOCK_MARGIN_S = 30                    # COMPUTING outlives a child's timeout by this much when nobody releases it
NICENESS = 10                         # the children yield the CPU to the players' processes
CHILD_THREADS = 1                     # and use one core: their BLAS and OpenMP pools pinned (vqa_agent/threads.py)
EXPORT_LOOK = "admin export"          # where an export's look at outcomes was made (the analysis lists it)
# COMPUTING is deleted only by the child that holds it (another may hold it after a timeout)
RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


# --- the web process's side --------------------------------------------------------------------------------

def live_view(redis: redis_client.Redis, redis_url: str, live_report: Callable, study: str) -> dict:
    """What Redis holds of `study`'s live report: {"html": the latest page or None, "events": the log's length it
    was computed from, "computed": when, "fresh": computed from the whole log, "error": why the latest
    computation failed or None}. A child is started when the page is stale, none computes, and none failed on
    this log."""
    pipe = redis.pipeline(transaction=False)
    pipe.xlen(EVENTS)
    pipe.hgetall(REPORT.format(study))
    pipe.get(COMPUTING)
    length, stored, computing = pipe.execute()
    fresh = "html" in stored and int(stored["events"]) == length
    failed = stored.get("failed_at") == str(length)
    if not fresh and not failed and computing is None:
        start_report(redis, redis_url, live_report, study, length)
    return {"html": stored.get("html"), "events": int(stored.get("events", 0)),
            "computed": float(stored.get("computed", 0)), "fresh": fresh,
            "error": stored.get("error") if failed else None}


def start_report(redis: redis_client.Redis, redis_url: str, live_report: Callable, study: str, length: int) -> bool:
    """Starts a child computing `study`'s page, unless one computes already (False)."""
    name = function_name(live_report)
    token = f"{study} {secrets.token_hex(8)}"
    if not redis.set(COMPUTING, token, nx=True, ex=REPORT_TIMEOUT_S + LOCK_MARGIN_S):
        return False
    try:
        child = subprocess.Popen(_command("live", redis_url, "--study", study, "--report", name, "--token", token),
                                 env=_child_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    except OSError:
        redis.eval(RELEASE, 1, COMPUTING, token)
        raise
    threading.Thread(target=_reap, args=(child, redis, study, token, length), daemon=True,
                     name=f"live-report-{study}").start()
    return True


def _reap(child: subprocess.Popen, redis: redis_client.Redis, study: str, token: str, length: int) -> None:
    """Waits for the child (no zombie is left); stops it past REPORT_TIMEOUT_S. A child that was stopped or
    killed (the kernel's OOM killer, say) could not say why itself: the page says it here."""
    try:
        child.wait(timeout=REPORT_TIMEOUT_S)
        if child.returncode >= 0:
            return                       # done, or failed with a reason it stored itself
        why = f"the report's process was ended by signal {-child.returncode}"
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        why = f"the report took over {REPORT_TIMEOUT_S} s and was stopped"
    try:
        redis.hset(REPORT.format(study), mapping={"error": why, "failed_at": length})
        redis.eval(RELEASE, 1, COMPUTING, token)
    except redis_client.RedisError:
        log.warning("the live report of %s was stopped, and Redis could not be told", study, exc_info=True)


def export_zip(redis_url: str, fmt: str) -> Path:
    """A zip of the whole export in `fmt`, written by a child into a temporary file that the caller deletes;
    RuntimeError with the child's last words when it failed."""
    handle, name = tempfile.mkstemp(prefix="exag-export-", suffix=".zip")
    os.close(handle)
    path = Path(name)
    try:
        done = subprocess.run(_command("export", redis_url, "--format", fmt, "--out", str(path)), env=_child_env(),
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=EXPORT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        path.unlink(missing_ok=True)
        raise RuntimeError(f"the export took over {EXPORT_TIMEOUT_S} s and was stopped") from None
    if done.returncode != 0:
        path.unlink(missing_ok=True)
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise RuntimeError(f"the export failed: {last}"[:500])
    return path


def function_name(function: Callable) -> str:
    """MODULE:NAME, by which a child imports `function` (a module-level function: `create_app`'s live report)."""
    name = f"{function.__module__}:{function.__qualname__}"
    if "<" in name:
        raise ValueError(f"the live report must be a module-level function, which a child process imports, not {name}")
    return name


def _command(what: str, redis_url: str, *arguments: str) -> list[str]:
    return [sys.executable, "-m", "server.reports", what, "--redis-url", redis_url, *arguments]


def _child_env() -> dict[str, str]:
    return {**os.environ, **thread_env(CHILD_THREADS)}


# --- the child's side --------------------------------------------------------------------------------------

def compute_report(redis_url: str, study: str, report: str, token: str) -> None:
    """Computes `study`'s page with the function named `report` from the whole log and stores it (REPORT); a
    failure is stored with its reason, and raised (the traceback goes to the server's log)."""
    store = Store.connect(redis_url)
    events: list[dict] = []
    try:
        started = time.perf_counter()
        live_report = _named_function(report)
        events = logged_live_look(store, study)
        # the server's key verifies a registration's signed cells; a report function may take it (the analysis's does)
        keyed = {"server_key": server_key(store.redis)} \
            if "server_key" in inspect.signature(live_report).parameters else {}
        html = live_report(events, study, **keyed)
        pipe = store.redis.pipeline(transaction=True)
        pipe.hset(REPORT.format(study), mapping={"html": html, "events": len(events), "computed": time.time(),
                                                 "seconds": round(time.perf_counter() - started, 3)})
        pipe.hdel(REPORT.format(study), "error", "failed_at")
        pipe.execute()
    except Exception as error:
        store.redis.hset(REPORT.format(study), mapping={"error": f"{type(error).__name__}: {error}"[:500],
                                                        "failed_at": len(events) or store.redis.xlen(EVENTS)})
        raise
    finally:
        store.redis.eval(RELEASE, 1, COMPUTING, token)
        store.close()


def write_zip(redis_url: str, fmt: str, out: Path) -> None:
    store = Store.connect(redis_url)
    try:
        events = exported_events(store, EXPORT_LOOK)
        key = server_key(store.redis)
    finally:
        store.close()
    with tempfile.TemporaryDirectory(prefix="exag-export-") as tmp, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in write_export(events, tmp, fmt, key):
            archive.write(path, path.name)


def logged_live_look(store: Store, study: str) -> list[dict]:
    """The event log for a live report, after logging the look it is when it shows a registered study's outcomes
    (game/export.py live_look)."""
    events = list(store.events())
    look = live_look(events, study, time.time())
    if look is None:
        return events
    store.log(look)
    return list(store.events())


def exported_events(store: Store, where: str) -> list[dict]:
    """The event log as an export holds it: first an `outcomes_looked` event is logged for each pre-registered
    study (exporting its data is a look at its outcomes), then the log is read whole, so that those carry their
    stream ids like every other event (`exag export` and the console's export)."""
    for look in outcome_looks(store.events(), where, time.time()):
        store.log(look)
    return list(store.events())


def _named_function(name: str) -> Callable:
    module, _, qualname = name.partition(":")
    found = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m server.reports",
                                     description="A web process's child: computes a live report or writes an export.")
    kinds = parser.add_subparsers(dest="what", required=True)
    live, export = kinds.add_parser("live"), kinds.add_parser("export")
    for kind in (live, export):
        kind.add_argument("--redis-url", required=True)
    live.add_argument("--study", required=True)
    live.add_argument("--report", required=True, help="MODULE:NAME of the report function")
    live.add_argument("--token", required=True, help="the COMPUTING lock this child holds")
    export.add_argument("--format", choices=FORMATS, required=True)
    export.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    os.nice(NICENESS)
    if args.what == "live":
        compute_report(args.redis_url, args.study, args.report, args.token)
    else:
        write_zip(args.redis_url, args.format, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
