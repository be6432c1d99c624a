"""The CPU budget per message: where a crowd's messages spend the machine's CPU, by event type, for the web
process and the inference workers, measured under load.

Starts `exag serve` with its defaults (as experiments/benchmark/capacity.py does: a private Redis in a
temporary directory, the default world and agent), plays one game of each setting to warm it up, then runs
the load test of `exag bot --players N` (experiments/simulate/bot.py) for `--duration` seconds and reads what the server
itself accounted while it ran:

- the web process: the CPU time of each message's handler thread, including its emit
  (server/events.py, the Redis hash `exag:cpu:web`);
- the inference workers: the CPU time of each kind of job (server/worker.py CPU_KINDS, the hash
  `exag:cpu:worker`): a plain question (`ask`), a question of a round that shows explanations (controlled
  arms, `ask_explained`), explanations bought at will (`explain`), a new game's image preparation (`prepare`);
- every process of the server (psutil): its whole CPU, which also holds what no handler accounts
  (Socket.IO framing, HTTP polling, threads waking, Redis itself), divided by the messages answered.

The budget (issue 29): 200 players send ~150 messages a second; on ~1.8 of this machine's 2 cores the whole
server may spend <= 10 ms of CPU per message on average, the web process <= 3 ms for rate, guess,
next_game and join, and a worker <= 6 ms for a plain 20-image round. Prints the table docs/results.md keeps next to
the capacity table and writes results/cpu_budget.json.

    python -m experiments.benchmark.cpu_budget                         # 100 players, 60 s
    python -m experiments.benchmark.cpu_budget --players 200 --duration 60 --out /tmp/cpu_budget.json
"""
from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path

import redis

from experiments.benchmark import write_report
from experiments.benchmark.capacity import REPO, Server, _interrupt, machine, per_kind, read_stats, row, warm_up
from experiments.simulate.bot import DEMO_CONTROLLED_ARMS, LOAD_TIMEOUT_S, format_load, run_load

WEB_STATS = "exag:cpu:web"
WORKER_STATS = "exag:cpu:worker"
WORKER_FLUSH_S = 6.0         # a worker adds its CPU to the hash with its heartbeat (every 5 s)
WEB_FLUSH_S = 1.5            # the web process flushes at most once a second
BUDGET_MS = {"all": 10.0, "web_light": 3.0, "worker_plain": 6.0}
LIGHT_EVENTS = ("join", "rate", "guess", "next_game")
WORK_OF = {"ask": ("ask", "ask_explained"), "explain": ("explain",)}    # the worker jobs a message causes


def classify(process: dict) -> str:
    command = process.get("cmdline", "")
    if "redis-server" in command or process.get("name") == "redis-server":
        return "redis"
    if " worker" in command or "exag-worker" in command:
        return "workers"
    return "web"          # gunicorn's master and its one worker (the app), or werkzeug


def budget_table(events: dict, web: dict, work: dict, processes: dict, answered: int) -> str:
    def ms(value):
        return "-" if value is None else f"{value:.2f}"

    lines = ["| message | n | web CPU ms/msg | worker CPU ms/msg | sum |", "|---|---:|---:|---:|---:|"]
    for event in sorted(set(events) | set(web)):
        n = events.get(event, {}).get("n") or web.get(event, {}).get("n", 0)
        web_ms = web.get(event, {}).get("ms_per")
        worker_cpu = sum(work.get(kind, {}).get("cpu_ms", 0.0) for kind in WORK_OF.get(event, ()))
        worker_n = web.get(event, {}).get("n") or n
        worker_ms = worker_cpu / worker_n if event in WORK_OF and worker_n else None
        total = (web_ms or 0.0) + (worker_ms or 0.0) if web_ms is not None or worker_ms is not None else None
        lines.append(f"| {event} | {int(n)} | {ms(web_ms)} | {ms(worker_ms)} | {ms(total)} |")
    lines += ["", "| worker job | n | CPU ms/job |", "|---|---:|---:|"]
    lines += [f"| {kind} | {int(v['n'])} | {ms(v['ms_per'])} |" for kind, v in work.items()]
    lines += ["", "| whole process | CPU s | CPU ms per message answered |", "|---|---:|---:|"]
    for kind, seconds in sorted(processes.items()):
        lines.append(f"| {kind} | {seconds:.1f} | {ms(1000 * seconds / answered if answered else None)} |")
    total = sum(processes.values())
    lines.append(f"| **server, all** | {total:.1f} | {ms(1000 * total / answered if answered else None)} |")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> dict:
    results = {"benchmark": "cpu_budget", "command": " ".join(sys.argv), "machine": machine(),
               "players": args.players, "duration_s": args.duration, "budget_ms": BUDGET_MS}
    extra = ["--agent", args.agent] + (["--world", str(args.world)] if args.world else [])
    with tempfile.TemporaryDirectory(prefix="exag-cpu-budget-") as tmp:
        work = Path(tmp)
        print("starting exag serve ...", flush=True)
        server = Server(work, extra, max_connections=2 * args.players + 50)
        try:
            results["server_start_s"] = server.start_s
            print(f"  healthy after {server.start_s:.1f} s at {server.url}", flush=True)
            warm_up(server.url)
            client = redis.Redis(unix_socket_path=str(work / "data" / "redis" / "redis.sock"))
            time.sleep(WORKER_FLUSH_S)          # the warm-up's CPU is flushed before the baseline
            before = read_stats(client, WEB_STATS), read_stats(client, WORKER_STATS)
            report = run_load(server.url, args.players, args.duration, 0.5, arms=DEMO_CONTROLLED_ARMS,
                              server_pids=[server.process.pid], reply_timeout_s=LOAD_TIMEOUT_S, seed=args.seed,
                              progress=not args.quiet)
            time.sleep(max(WORKER_FLUSH_S, WEB_FLUSH_S))
            web = per_kind(read_stats(client, WEB_STATS), before[0])
            work_kinds = per_kind(read_stats(client, WORKER_STATS), before[1])
            client.close()
        finally:
            server.stop()
    print(format_load(report), flush=True)
    processes: dict[str, float] = {}
    for process in report.get("server", {}).get("processes", []):
        processes[classify(process)] = processes.get(classify(process), 0.0) + process.get("cpu_s", 0.0)
    answered = report["messages"]["answered"]
    results.update(load=row(report), events=report["events"], web=web, workers=work_kinds, processes_cpu_s=processes,
                   messages_answered=answered, load_report=report)
    results["table"] = budget_table(report["events"], web, work_kinds, processes, answered)
    write_report(args.out, results)
    print(f"\n{results['table']}\n\nwritten to {args.out}")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--players", type=int, default=100)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    parser.add_argument("--agent", default="default", help="passed to exag serve")
    parser.add_argument("--world", type=Path, default=None, help="passed to exag serve (default: its default world)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=REPO / "results" / "cpu_budget.json")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    if args.players < 1 or args.duration <= 0:
        parser.error("--players and --duration must be positive")
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        run(args)
    except KeyboardInterrupt:
        print("interrupted; the server is stopped", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
