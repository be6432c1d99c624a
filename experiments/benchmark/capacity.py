"""Capacity: how many concurrent players one `exag serve` holds. Starts `exag serve` (the default world and
agent, a private Redis in a temporary data directory, a free port, a per-address connection limit above the
ladder's largest step), waits for /healthz, runs the load test of `exag bot --players N` (experiments/simulate/bot.py:
half at-will, half controlled over every arm; a question every 3 s, a rating after each, explanations in a
third of at-will rounds, a guess after 4 questions; 30 s timeouts) for each step of the ladder, samples the
server's CPU and RSS (the web process and everything it started), writes results/capacity.json and prints
the table in docs/results.md. The server and everything it started are stopped at the end, also on Ctrl-C.

    python -m experiments.benchmark.capacity                       # the ladder 10/25/50/100/200, 60 s each
    python -m experiments.benchmark.capacity --ladder 4,10 --duration 20 --out /tmp/capacity.json
    python -m experiments.benchmark.capacity --workers 2           # passed to `exag serve`
    python -m experiments.benchmark.capacity --workers 1,2 --ladder 100 --device cpu   # the ladder per worker count
    python -m experiments.benchmark.capacity --web-processes 4 --workers 4 --device cuda --ladder 1000
    python -m experiments.benchmark.capacity --profile explanation-heavy --ladder 100,200   # issue 51's mix

With admission control (server/admission.py) a full server refuses new participants at the door: the report
gives the participants admitted and the joins refused at the door (a refused bot tries again after
experiments/simulate/bot.py FULL_RETRY_S); errors and time-outs are those of admitted players.

Beside the ladder it prints the CPU milliseconds per reply by process kind (web, worker, redis, other) and
the most threads one process of each kind ran, so how the server scales with workers is one command.
`--web-processes N` passes `exag serve --web-processes N` (N gunicorn processes on the port, WebSocket only).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

from experiments.benchmark import write_report
from experiments.simulate.bot import DEMO_CONTROLLED_ARMS, LOAD_TIMEOUT_S, format_load, parse_mix, play_games
from experiments.simulate.load_processes import run_load_processes

REPO = Path(__file__).resolve().parents[2]
LADDER = (10, 25, 50, 100, 200)
HEALTHY_WITHIN_S = 600          # a first start may build the game world
STOP_WITHIN_S = 30              # after SIGTERM, before the process group is killed
PLAYERS_PER_BOT_PROCESS = 250  # one load process holds this many players well below a core (200: a fifth)
PREPARED_WITHIN_S = 300         # how long a step waits for the workers' idle preparation (wait_prepared)
PAUSE_BETWEEN_STEPS_S = 5.0     # the server settles (late replies, closed connections) before the next step


# The load profiles (`--profile`): which studies the bots play and in which arms. "explanation-heavy" is the mix
# of issue 51: the controlled half in their explanation blocks with the 'both' arm (a study that starts with
# explanations: order "baba"), the at-will half buying explanations in a third of rounds, as in "default".
EXPLAINED_STUDY = {"study_id": "bench-explained", "title": "capacity benchmark: controlled, explanations first",
                   "kind": "controlled", "arms": ["both"], "sessions": 4, "games_per_session": 5, "order": "baba",
                   "choose_arm": True, "completion_code": "BENCH-DONE"}
PROFILES = {"default": {"studies": {}, "arms": DEMO_CONTROLLED_ARMS},
            "explanation-heavy": {"studies": {"controlled": EXPLAINED_STUDY["study_id"]}, "arms": ("both",)}}


def studies_dir(work: Path, profile: str) -> Path | None:
    """A studies directory for `exag serve --studies` with the repository's studies and the profile's own (None:
    the profile plays the repository's)."""
    if not PROFILES[profile]["studies"]:
        return None
    folder = work / "studies"
    folder.mkdir(exist_ok=True)
    for path in (REPO / "studies").glob("*.json"):
        (folder / path.name).write_text(path.read_text())
    (folder / f"{EXPLAINED_STUDY['study_id']}.json").write_text(json.dumps(EXPLAINED_STUDY, indent=2))
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`exag serve` in a session of its own, logging to a file in its work directory."""

    def __init__(self, work: Path, serve_args: list[str], max_connections: int) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = work / "serve.log"
        command = [sys.executable, "-m", "exag_cli", "serve", "--host", "127.0.0.1", "--port", str(self.port),
                   "--data-dir", str(work / "data"), "--max-connections-per-address", str(max_connections),
                   *serve_args]
        self.command = command
        self.log = open(self.log_path, "w")
        started = time.monotonic()
        self.process = subprocess.Popen(command, cwd=REPO, stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.known: dict[int, psutil.Process] = {}    # every process seen in its tree, to stop them all
        try:
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        self.start_s = time.monotonic() - started

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def remember_tree(self) -> None:
        try:
            root = psutil.Process(self.process.pid)
            for process in [root] + root.children(recursive=True):
                self.known.setdefault(process.pid, process)
        except psutil.Error:
            pass

    def cpu_by_kind(self) -> dict[str, float]:
        """CPU seconds its processes have used so far, by kind (`process_kind`), with their thread counts."""
        self.remember_tree()
        used: dict[str, float] = {}
        for process in self.known.values():
            try:
                with process.oneshot():
                    times, kind = process.cpu_times(), process_kind(process.cmdline())
                    used[kind] = used.get(kind, 0.0) + times.user + times.system
                    used[f"{kind}:threads"] = max(used.get(f"{kind}:threads", 0), process.num_threads())
            except psutil.Error:
                pass
        return used

    def worker_rss_mb(self) -> list[float]:
        """The resident memory of each of its inference workers now, MB."""
        self.remember_tree()
        found = []
        for process in self.known.values():
            try:
                if process.is_running() and process_kind(process.cmdline()) == "worker":
                    found.append(process.memory_info().rss / 2**20)
            except psutil.Error:
                pass
        return found

    def wait_healthy(self) -> None:
        deadline = time.monotonic() + HEALTHY_WITHIN_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"exag serve exited with {self.process.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as response:
                    if json.loads(response.read()).get("ok"):
                        self.remember_tree()
                        return
            except (OSError, ValueError):
                pass
            time.sleep(0.5)
        raise RuntimeError(f"exag serve was not healthy within {HEALTHY_WITHIN_S} s:\n{self.tail()}")

    def stop(self) -> None:
        """SIGTERM (the server stops its Redis and workers), then SIGKILL to whatever of its tree is left."""
        self.remember_tree()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_WITHIN_S)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)     # its own session: the group is its pid
        except (ProcessLookupError, PermissionError):
            pass
        for process in self.known.values():                 # children that left the group (e.g. redis-server)
            try:
                if process.is_running():
                    process.kill()
            except psutil.Error:
                pass
        self.process.wait(10)
        self.log.close()


KINDS = ("web", "worker", "redis", "other")     # the processes of `exag serve`, as CPU is accounted


def process_kind(cmdline: list[str]) -> str:
    """web (gunicorn's worker and master, `exag serve`), worker (`exag worker`), redis, or other (the
    background renderer)."""
    text = " ".join(cmdline)
    if "exag-web" in text or "serve" in cmdline:
        return "web"
    if "worker" in cmdline:
        return "worker"
    return "redis" if "redis-server" in text else "other"


def cpu_ms_per_reply(before: dict[str, float], after: dict[str, float], replies: int) -> dict[str, float | None]:
    """CPU milliseconds per reply by process kind over a step (and the most threads one process of it ran)."""
    per_reply = {kind: (after.get(kind, 0.0) - before.get(kind, 0.0)) * 1000 / replies if replies else None
                 for kind in KINDS}
    per_reply["total"] = sum(v for v in per_reply.values() if v is not None) if replies else None
    per_reply["threads"] = {kind: int(after.get(f"{kind}:threads", 0)) for kind in KINDS}
    return per_reply


def server_redis(data_dir: Path):
    """A client of the private Redis of an `exag serve --data-dir DATA_DIR` (its unix socket)."""
    import redis

    return redis.Redis(unix_socket_path=str(data_dir / "redis" / "redis.sock"), decode_responses=True)


def redis_counts(data_dir: Path) -> dict[str, dict]:
    """What the server's Redis holds so far of two counts: each command's calls (INFO commandstats, e.g.
    {"xreadgroup": 812}) and the workers' CPU by kind of job (server/worker.py CPU_STATS)."""
    import redis

    from server.worker import CPU_STATS

    client = server_redis(data_dir)
    try:
        return {"calls": {name.removeprefix("cmdstat_"): int(stats["calls"])
                          for name, stats in client.info("commandstats").items()},
                "worker_jobs": read_stats(client, CPU_STATS)}
    except redis.RedisError:
        return {"calls": {}, "worker_jobs": {}}
    finally:
        client.close()


def read_stats(client, key: str) -> dict[str, float]:
    return {k.decode() if isinstance(k, bytes) else k: float(v) for k, v in client.hgetall(key).items()}


def per_kind(after: dict[str, float], before: dict[str, float]) -> dict[str, dict]:
    """{"<kind>:n": ..., "<kind>:cpu_ms": ...} differences -> {kind: {"n", "cpu_ms", "ms_per"}}."""
    kinds: dict[str, dict] = {}
    for field, value in after.items():
        kind, _, measure = field.rpartition(":")
        kinds.setdefault(kind, {})[measure] = value - before.get(field, 0.0)
    return {kind: {**v, "ms_per": v.get("cpu_ms", 0.0) / v["n"] if v.get("n") else None}
            for kind, v in sorted(kinds.items()) if v.get("n")}


def worker_jobs(before: dict[str, float], after: dict[str, float]) -> dict[str, dict]:
    """Per kind of worker job over a step: rounds, CPU ms a round, rounds a batch."""
    return {kind: {"rounds": int(v["n"]), "cpu_ms_per_round": v["ms_per"],
                   "rounds_per_batch": v["n"] / v["batches"] if v.get("batches") else None}
            for kind, v in per_kind(after, before).items()}


def explanation_cache(before: dict[str, float], after: dict[str, float]) -> dict:
    """The workers' explanation cache over a step (server/explanation_cache.py): hits, misses, hit rate."""
    hits, misses = (after.get(f"xcache:{k}", 0.0) - before.get(f"xcache:{k}", 0.0) for k in ("hits", "misses"))
    return {"hits": int(hits), "misses": int(misses), "hit_rate": hits / (hits + misses) if hits + misses else None}


def redis_calls_per_reply(before: dict[str, int], after: dict[str, int], replies: int) -> dict[str, float]:
    """Redis commands per reply over a step, the most frequent first, with their sum as "total"."""
    calls = {name: (n - before.get(name, 0)) / replies for name, n in after.items() if replies and n > before.get(name, 0)}
    ranked = dict(sorted(calls.items(), key=lambda item: -item[1]))
    return {"total": sum(ranked.values()), **ranked} if ranked else {}


def wait_prepared(data_dir: Path, within_s: float = PREPARED_WITHIN_S) -> float:
    """Waits until every worker has done its idle preparation (server/pool_look.py: looked at the pool's images or
    loaded what another stored; decoded the true masks), which a first start does for ~30 s of CPU: measured
    inside a step, it is CPU of no reply. Returns the seconds waited."""
    from server.rounds import WORKERS

    client = server_redis(data_dir)
    started = time.monotonic()
    try:
        while time.monotonic() - started < within_s:
            workers = [json.loads(w) for w in client.hgetall(WORKERS).values()]
            if workers and all(w.get("prepared", True) for w in workers):
                break
            time.sleep(1.0)
        else:
            print(f"  the workers were still preparing after {within_s:.0f} s; measuring anyway", flush=True)
    finally:
        client.close()
    return time.monotonic() - started


def published_threads(data_dir: Path) -> list[dict]:
    """The thread pools each of the server's workers published (vqa_agent/threads.py), read from its Redis."""
    import redis

    from server.rounds import WORKERS

    client = server_redis(data_dir)
    try:
        return [{"pid": w["pid"], **w.get("threads", {})} for w in map(json.loads, client.hgetall(WORKERS).values())]
    except redis.RedisError:
        return []
    finally:
        client.close()


def row(report: dict) -> dict:
    ask = report["events"].get("ask", {"n": 0})
    server = report.get("server", {})
    return {"players": report["players"], "ask_n": ask["n"], "ask_p50_ms": ask.get("p50"), "ask_p95_ms": ask.get("p95"),
            "ask_p99_ms": ask.get("p99"), "errors": report["errors"]["total"], "timeouts": report["timeouts"]["total"],
            "replies_per_s": report["messages"]["per_second"],
            "server_cpu_percent": server.get("cpu_percent", {}).get("mean"),
            "server_rss_mb": server.get("rss_mb", {}).get("max"), "bot_cpu_percent": report["bot"]["cpu_percent"],
            "other_p95_ms": max((s.get("p95") or 0.0 for e, s in report["events"].items() if e != "ask" and s.get("n")),
                                default=None),
            "server_log_kb": report.get("server_log_bytes", 0) / 1024, "workers": report.get("workers"),
            "admitted": report.get("participants"), "refused_at_door": report.get("refused_at_door", 0),
            "cpu_ms_per_reply": report.get("cpu_ms_per_reply", {}),
            "cache_hit_rate": (report.get("explanation_cache") or {}).get("hit_rate"),
            "worker_rss_mb": max(report.get("worker_rss_mb") or [0]) or None,
            "worker_cpu_ms_per_round": {kind: j["cpu_ms_per_round"] for kind, j in report.get("worker_jobs", {}).items()}}


def table(rows: list[dict]) -> str:
    def ms(value):
        return "-" if value is None else (f"{value / 1000:.1f} s" if value >= 10_000 else f"{value:.0f} ms")

    def num(value, unit):
        return "-" if value is None else f"{value:.0f}{unit}"

    def per_reply(r):
        cpu = r.get("cpu_ms_per_reply") or {}
        return " / ".join("-" if cpu.get(k) is None else f"{cpu[k]:.1f}" for k in ("total", *KINDS))

    def per_round(r):
        cpu = r.get("worker_cpu_ms_per_round") or {}
        return " / ".join("-" if cpu.get(k) is None else f"{cpu[k]:.1f}" for k in ("ask", "ask_explained", "explain"))

    lines = ["| workers | players | admitted / refused at the door | ask p50 | ask p95 | ask p99 | "
             "other events' worst p95 | errors / timeouts | "
             "replies/s | server CPU | server RSS | CPU ms per reply: total / web / worker / redis / other | "
             "worker CPU ms a round: plain / explained / bought | explanation cache hits | worker RSS | server log |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.get('workers') or '-'} | {r['players']} | {r.get('admitted', '-')} / "
                     f"{r.get('refused_at_door', 0)} | {ms(r['ask_p50_ms'])} | {ms(r['ask_p95_ms'])} | "
                     f"{ms(r['ask_p99_ms'])} | {ms(r.get('other_p95_ms'))} | {r['errors']} / {r['timeouts']} | "
                     f"{r['replies_per_s']:.1f} | {num(r['server_cpu_percent'], '%')} | "
                     f"{num(r['server_rss_mb'], ' MB')} | {per_reply(r)} | {per_round(r)} | "
                     f"{num(None if r.get('cache_hit_rate') is None else 100 * r['cache_hit_rate'], '%')} | "
                     f"{num(r.get('worker_rss_mb'), ' MB')} | {r.get('server_log_kb', 0):.0f} KB |")
    return "\n".join(lines)


def warm_up(url: str) -> float:
    """One game of each setting before measuring, so the first step does not time a cold server (first
    requests, lazy loads in the workers); returns its seconds."""
    started = time.monotonic()
    for setting, arm in (("controlled", "both"), ("at-will", None)):
        report = play_games(url, 1, setting, arm, progress=False)
        if report["errors"]:
            print(f"  warm-up ({setting}): {report['errors'][0]}", file=sys.stderr)
    took = time.monotonic() - started
    print(f"  warmed up in {took:.1f} s", flush=True)
    return took


def machine() -> dict:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                                timeout=10).stdout.strip()
    except OSError:
        commit = ""
    return {"cores": os.cpu_count(), "cpu": model,
            "busy_before_percent": psutil.cpu_percent(interval=2.0),   # others' load on the machine, if any
            "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
            "python": platform.python_version(), "commit": commit}


def serve_args(args: argparse.Namespace, workers: int | None = None, studies: Path | None = None) -> list[str]:
    extra = ["--agent", args.agent] + (["--world", str(args.world)] if args.world else [])
    if studies is not None:
        extra += ["--studies", str(studies)]
    if workers is not None:
        extra += ["--workers", str(workers)]
    if args.device:
        extra += ["--device", args.device]
    if args.web_processes:
        extra += ["--web-processes", str(args.web_processes)]
    extra += shlex.split(args.serve_args or "")
    return extra


def run(args: argparse.Namespace) -> dict:
    ladder = [int(n) for n in args.ladder.split(",") if n.strip()]
    if not ladder or min(ladder) < 1:
        raise ValueError("--ladder wants player counts, e.g. 10,25,50")
    mix = parse_mix(args.mix)
    max_connections = args.max_connections or 2 * max(ladder) + 50    # reconnects overlap briefly
    worker_counts = [int(n) for n in args.workers.split(",")] if args.workers else [None]
    results = {"benchmark": "capacity", "command": " ".join(sys.argv), "machine": machine(),
               "ladder": ladder, "duration_s": args.duration, "mix": {"at-will": mix, "controlled": 1 - mix},
               "profile": args.profile,
               "serve_args": serve_args(args, worker_counts[0]), "max_connections_per_address": max_connections,
               "steps": [], "rows": []}
    server = None
    steps = [(workers, players) for workers in worker_counts for players in ladder]
    with tempfile.TemporaryDirectory(prefix="exag-capacity-") as tmp:
        try:
            for i, (workers, players) in enumerate(steps):
                if server is None or args.fresh_server or workers != steps[i - 1][0]:
                    if server is not None:
                        server.stop()
                    work = Path(tmp) / f"server-{i}"
                    work.mkdir()
                    studies = studies_dir(work, args.profile)
                    print(f"starting exag serve ({' '.join(serve_args(args, workers, studies))}) ...", flush=True)
                    server = Server(work, serve_args(args, workers, studies), max_connections)
                    results.setdefault("server_start_s", []).append(server.start_s)
                    results["serve_command"] = " ".join(server.command)
                    print(f"  healthy after {server.start_s:.1f} s at {server.url}", flush=True)
                    threads = published_threads(work / "data")
                    results.setdefault("worker_threads", []).append({"workers": workers, "published": threads})
                    print(f"  worker thread pools: {sorted({json.dumps(t | {'pid': 0}) for t in threads})}", flush=True)
                    if args.warmup:
                        results.setdefault("warmup_s", []).append(warm_up(server.url))
                    waited = wait_prepared(work / "data")
                    results.setdefault("prepared_after_s", []).append(waited)
                    print(f"  workers prepared (pool looked at, masks decoded) after {waited:.1f} s more", flush=True)
                elif i:
                    time.sleep(PAUSE_BETWEEN_STEPS_S)
                log_before = server.log_path.stat().st_size
                cpu_before, counts_before = server.cpu_by_kind(), redis_counts(work / "data")
                bots = args.bot_processes or max(1, min(8, players // PLAYERS_PER_BOT_PROCESS))
                report = run_load_processes(server.url, players, args.duration, bots, mix=mix,
                                            studies=PROFILES[args.profile]["studies"],
                                            arms=PROFILES[args.profile]["arms"], server_pids=[server.process.pid],
                                            reply_timeout_s=args.timeout, seed=args.seed + i, progress=not args.quiet)
                report["workers"] = workers if workers is not None else os.cpu_count()
                report["cpu_ms_per_reply"] = cpu_ms_per_reply(cpu_before, server.cpu_by_kind(),
                                                              report["messages"]["answered"])
                counts = redis_counts(work / "data")
                report["redis_calls_per_reply"] = redis_calls_per_reply(counts_before["calls"], counts["calls"],
                                                                        report["messages"]["answered"])
                report["worker_jobs"] = worker_jobs(counts_before["worker_jobs"], counts["worker_jobs"])
                report["explanation_cache"] = explanation_cache(counts_before["worker_jobs"], counts["worker_jobs"])
                report["worker_rss_mb"] = server.worker_rss_mb()
                # the server's log under load: it must stay flat (issue 29 saw 100 KB/min of retries)
                report["server_log_bytes"] = server.log_path.stat().st_size - log_before
                report["server_log_tail"] = server.tail(40) if report["server_log_bytes"] else ""
                print(format_load(report), flush=True)
                print("  redis commands per reply: " + ", ".join(
                    f"{name} {n:.1f}" for name, n in list(report["redis_calls_per_reply"].items())[:8]), flush=True)
                print("  worker jobs: " + ", ".join(
                    f"{kind} {j['rounds']} rounds at {j['cpu_ms_per_round']:.1f} ms CPU, {j['rounds_per_batch']:.1f} a batch"
                    for kind, j in report["worker_jobs"].items()), flush=True)
                cache = report["explanation_cache"]
                print(f"  explanation cache: {cache['hits']} hits, {cache['misses']} misses"
                      + (f" ({100 * cache['hit_rate']:.0f}% hits)" if cache["hit_rate"] is not None else "")
                      + "; worker RSS " + ", ".join(f"{mb:.0f} MB" for mb in report["worker_rss_mb"]), flush=True)
                print(f"  server log grew {report['server_log_bytes'] / 1024:.1f} KB", flush=True)
                results["steps"].append(report)
                results["rows"].append(row(report))
                results["table"] = table(results["rows"])
                write_report(args.out, results)                 # partial results survive an interruption
        finally:
            if server is not None:
                server.stop()
    print(f"\n{results.get('table', '')}\n\nwritten to {args.out}")
    return results


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ladder", default=",".join(map(str, LADDER)), help="player counts, comma-separated")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load per step")
    parser.add_argument("--mix", default="at-will=0.5", help="share of at-will participants")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="default",
                        help="default: the demo studies over every controlled arm; explanation-heavy: controlled "
                             "players in their explanation blocks with the 'both' arm (issue 51's mix)")
    parser.add_argument("--timeout", type=float, default=LOAD_TIMEOUT_S, help="seconds without a reply = a timeout")
    parser.add_argument("--agent", default="default", help="passed to exag serve")
    parser.add_argument("--world", type=Path, default=None, help="passed to exag serve (default: its default world)")
    parser.add_argument("--workers", default=None,
                        help="passed to exag serve as --workers N; a list (1,2) runs the ladder for each count")
    parser.add_argument("--device", default=None, help="passed to exag serve as --device (auto, cpu or cuda)")
    parser.add_argument("--web-processes", type=int, default=None, metavar="N",
                        help="passed to exag serve as --web-processes N (default: exag serve's own)")
    parser.add_argument("--serve-args", default=None, help="more arguments for exag serve, one string")
    parser.add_argument("--max-connections", type=int, default=None,
                        help="the server's per-address connection limit (default: 2 x the largest step + 50)")
    parser.add_argument("--no-warmup", dest="warmup", action="store_false",
                        help="measure from the first request (default: one game of each setting first)")
    parser.add_argument("--bot-processes", type=int, default=None, metavar="K",
                        help=f"load processes playing the players (default: one per {PLAYERS_PER_BOT_PROCESS}, at most 8)")
    parser.add_argument("--fresh-server", action="store_true", help="a new server (and Redis) for every step")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=REPO / "results" / "capacity.json")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    # a terminate (CI, a service manager) stops like Ctrl-C, so the server is stopped too
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        run(args)
    except KeyboardInterrupt:
        print("interrupted; the server is stopped", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
