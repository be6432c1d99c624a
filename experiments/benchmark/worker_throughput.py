"""Throughput of one inference worker (`exag worker`, one thread in every pool) on plain questions over 20
images: the worker runs as its own process on an embedded Redis; this process (no torch) plays the web
processes, keeping `--concurrency` rounds in flight (as many games asking at once). Prints rounds/s, the
worker's CPU per round, batch sizes and per-batch inference time p50/p95, ask-to-answer p50/p95 through
Redis, the worker's start time and RSS.

With `--device cpu,cuda` it measures a CPU worker and a GPU worker in turn (issue 45: one GPU worker should
answer at least 4x the rounds per second of one CPU worker at no more CPU per round), and both answer the
same fixed `--check-rounds` rounds one at a time: the share of equal answers is printed (the same agent on
another device may differ only where its two best answers are within float error).

    python -m experiments.benchmark.worker_throughput [--seconds 20] [--concurrency 16] [--workers 1] [--json results/worker_throughput.json]
    python -m experiments.benchmark.worker_throughput --device cpu,cuda --concurrency 256 --json results/gpu_worker.json
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import redis

from experiments.benchmark import write_report
from game.pool import GamePool
from server.embedded_redis import EmbeddedRedis
from server.rounds import WORKERS, RoundJob, RoundQueue

QUESTIONS = ["is there a red cube?", "how many spheres are there?", "what color is the large cylinder?",
             "is there a metal thing?", "are there more cubes than spheres?", "what shape is the small green thing?"]
IMAGES = 20


def rss_mb(pid: int) -> float:
    return int(Path(f"/proc/{pid}/status").read_text().split("VmRSS:")[1].split()[0]) / 1024


def cpu_s(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def plain_round(games: list[list[int]], k: int) -> RoundJob:
    return RoundJob("round", games[k % len(games)], QUESTIONS[k % len(QUESTIONS)], k % IMAGES,
                    [str(i) for i in range(IMAGES)])


def load_part(url: str, games: list[list[int]], slots: range, concurrency: int, stop: float) -> tuple[list, list]:
    """One load process: a thread per slot, each keeping one round in flight until `stop` (time.time());
    their latencies and the (inference ms, batch size) of the batches that answered them. Several such
    processes keep a fast GPU worker busy where one Python process's threads could not."""
    client = redis.Redis.from_url(url, decode_responses=True)
    queue = RoundQueue(client, timeout_s=60)
    latencies, batches = [], set()

    def play(n: int) -> None:
        k = n
        while time.time() < stop:
            k += concurrency
            t = time.perf_counter()
            result = queue.submit(plain_round(games, k))
            latencies.append(time.perf_counter() - t)
            batches.add((round(result["inference_ms"], 6), result["batch_rounds"]))

    threads = [threading.Thread(target=play, args=(n,)) for n in slots]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    client.close()
    return latencies, sorted(batches)


def measure(args: argparse.Namespace, device: str) -> dict:
    """One device's run: throughput under load, then the fixed check rounds one at a time (their answers)."""
    with tempfile.TemporaryDirectory() as tmp:
        embedded = EmbeddedRedis(Path(tmp) / "redis").start()
        client = redis.Redis.from_url(embedded.url, decode_responses=True)
        started = time.perf_counter()
        command = [sys.executable, "-m", "exag_cli", "worker", "--redis-url", embedded.url, "--world", str(args.world),
                   "--agent", args.agent, "--threads", "1", "--no-warm-pool", "--device", device]
        if args.max_batch_rounds:
            command += ["--max-batch-rounds", str(args.max_batch_rounds)]
        workers = [subprocess.Popen(command, env={**os.environ, "OMP_NUM_THREADS": "1"}) for _ in range(args.workers)]
        worker = workers[0]
        try:
            while len(client.hkeys(WORKERS)) < args.workers:
                if any(w.poll() is not None for w in workers):
                    raise SystemExit(f"a worker on {device} did not start")
                time.sleep(0.05)
            start_s = time.perf_counter() - started
            rss_start = rss_mb(worker.pid)
            queue = RoundQueue(client, timeout_s=60)
            pool = GamePool(args.world)
            rng = np.random.default_rng(0)
            games = [[int(i) for i in rng.choice(len(pool), IMAGES, replace=False)] for _ in range(args.games)]
            for images in games:      # first rounds: the worker looks at the games' images (not measured)
                queue.submit(RoundJob("round", images, QUESTIONS[0], 0, [str(i) for i in range(IMAGES)]))
            clients = max(1, min(args.clients, args.concurrency))
            stop = time.time() + args.seconds
            cpu_before = sum(cpu_s(w.pid) for w in workers)
            t0 = time.perf_counter()
            with multiprocessing.get_context("fork").Pool(clients) as load:
                parts = load.starmap(load_part, [(embedded.url, games, range(n, args.concurrency, clients),
                                                  args.concurrency, stop) for n in range(clients)])
            elapsed = time.perf_counter() - t0
            worker_cpu = sum(cpu_s(w.pid) for w in workers) - cpu_before
            latencies = [t for part, _ in parts for t in part]
            batches = {batch: True for _, part in parts for batch in part}
            answers = [queue.submit(plain_round(games, k))["answer"] for k in range(args.check_rounds)]
            batch_ms = np.array([ms for ms, _ in batches])
            sizes = np.array([size for _, size in batches])
            report = {
                "device": device, "world": str(args.world), "agent": args.agent, "workers": args.workers,
                "images_per_round": IMAGES, "concurrency": args.concurrency, "load_processes": clients, "seconds": round(elapsed, 2),
                "rounds": len(latencies), "rounds_per_s": round(len(latencies) / elapsed, 1),
                "worker_cpu_ms_per_round": round(worker_cpu * 1000 / max(len(latencies), 1), 2),
                "batch_rounds_mean": round(float(sizes.mean()), 2),
                "batch_ms_p50": round(float(np.percentile(batch_ms, 50)), 1),
                "batch_ms_p95": round(float(np.percentile(batch_ms, 95)), 1),
                "ask_ms_p50": round(float(np.percentile(latencies, 50)) * 1000, 1),
                "ask_ms_p95": round(float(np.percentile(latencies, 95)) * 1000, 1),
                "worker_start_s": round(start_s, 2), "worker_rss_mb_at_start": round(rss_start),
                "worker_rss_mb": round(rss_mb(worker.pid)), "cpu": os.cpu_count(), "check_answers": answers}
        finally:
            for w in workers:
                w.terminate()
            for w in workers:
                w.wait(timeout=30)
            client.close()
            embedded.stop()
    return report


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world", type=Path, default=Path("data/world") if Path("data/world/manifest.json").exists()
                        else Path("data/game-world"))
    parser.add_argument("--agent", default="default")
    parser.add_argument("--device", default="auto", help="the workers' device; a list (cpu,cuda) measures each in turn")
    parser.add_argument("--seconds", type=float, default=20.0, help="measured seconds")
    parser.add_argument("--concurrency", type=int, default=16, help="rounds in flight at once")
    parser.add_argument("--clients", type=int, default=max(1, min(8, (os.cpu_count() or 2) // 2)),
                        help="load processes sharing the rounds in flight (default: half the cores, at most 8)")
    parser.add_argument("--games", type=int, default=8, help="distinct image sets (their features are cached)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (one core each): throughput "
                                                                "should grow linearly with them up to the cores")
    parser.add_argument("--max-batch-rounds", type=int, default=None, help="default: the device's (BatchSettings)")
    parser.add_argument("--check-rounds", type=int, default=100, help="rounds whose answers are compared across devices")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    runs = [measure(args, device) for device in args.device.split(",")]
    for run in runs:
        print(f"--- {run['device']}")
        for key, value in run.items():
            if key != "check_answers":
                print(f"{key:26s} {value}")
    report = runs[0] if len(runs) == 1 else {"runs": runs}
    if len(runs) > 1:
        first, last = runs[0], runs[-1]
        same = sum(a == b for a, b in zip(first["check_answers"], last["check_answers"])) / max(args.check_rounds, 1)
        report.update(same_answers=round(same, 4),
                      rounds_per_s_ratio=round(last["rounds_per_s"] / first["rounds_per_s"], 2),
                      cpu_per_round_ratio=round(last["worker_cpu_ms_per_round"] / first["worker_cpu_ms_per_round"], 2))
        print(f"{last['device']} / {first['device']}: {report['rounds_per_s_ratio']}x the rounds per second at "
              f"{report['cpu_per_round_ratio']}x the CPU per round; same answers on {same:.1%} of "
              f"{args.check_rounds} rounds")
    write_report(args.json, report)
    return report


if __name__ == "__main__":
    main()
