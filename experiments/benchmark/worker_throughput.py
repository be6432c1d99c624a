"""Throughput of one inference worker (`exag worker`, one torch thread) on plain questions over 20 images:
the worker runs as its own process on an embedded Redis; this process (no torch) plays the web processes,
keeping `--concurrency` rounds in flight (as many games asking at once). Prints rounds/s, the worker's
batch sizes and per-batch inference time p50/p95, ask-to-answer p50/p95 through Redis, the worker's
start time and RSS.

    python -m experiments.benchmark.worker_throughput [--seconds 20] [--concurrency 16] [--workers 1] [--json results/worker_throughput.json]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import redis

from experiments.benchmark import write_report
from server.embedded_redis import EmbeddedRedis
from game.pool import GamePool
from server.rounds import WORKERS, RoundJob, RoundQueue

QUESTIONS = ["is there a red cube?", "how many spheres are there?", "what color is the large cylinder?",
             "is there a metal thing?", "are there more cubes than spheres?", "what shape is the small green thing?"]
IMAGES = 20


def rss_mb(pid: int) -> float:
    return int(Path(f"/proc/{pid}/status").read_text().split("VmRSS:")[1].split()[0]) / 1024


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world", type=Path, default=Path("data/world") if Path("data/world/manifest.json").exists()
                        else Path("data/game-world"))
    parser.add_argument("--agent", default="default")
    parser.add_argument("--seconds", type=float, default=20.0, help="measured seconds")
    parser.add_argument("--concurrency", type=int, default=16, help="rounds in flight at once")
    parser.add_argument("--games", type=int, default=8, help="distinct image sets (their features are cached)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (one core each): throughput "
                                                                "should grow linearly with them up to the cores")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        embedded = EmbeddedRedis(Path(tmp) / "redis").start()
        client = redis.Redis.from_url(embedded.url, decode_responses=True)
        started = time.perf_counter()
        workers = [subprocess.Popen([sys.executable, "-m", "exag_cli", "worker", "--redis-url", embedded.url,
                                     "--world", str(args.world), "--agent", args.agent, "--threads", "1",
                                     "--no-warm-pool"], env={**os.environ, "OMP_NUM_THREADS": "1"})
                   for _ in range(args.workers)]
        worker = workers[0]
        try:
            while len(client.hkeys(WORKERS)) < args.workers:
                if any(w.poll() is not None for w in workers):
                    raise SystemExit("a worker did not start")
                time.sleep(0.05)
            start_s = time.perf_counter() - started
            rss_start = rss_mb(worker.pid)
            queue = RoundQueue(client, timeout_s=60)
            pool = GamePool(args.world)
            rng = np.random.default_rng(0)
            games = [[int(i) for i in rng.choice(len(pool), IMAGES, replace=False)] for _ in range(args.games)]
            for images in games:      # first rounds: the worker looks at the games' images (not measured)
                queue.submit(RoundJob("round", images, QUESTIONS[0], 0, [str(i) for i in range(IMAGES)]))
            latencies, batches, stop = [], {}, time.monotonic() + args.seconds

            def play(n: int) -> None:
                k = n
                while time.monotonic() < stop:
                    k += 1
                    t = time.perf_counter()
                    result = queue.submit(RoundJob("round", games[k % len(games)], QUESTIONS[k % len(QUESTIONS)],
                                                   k % IMAGES, [str(i) for i in range(IMAGES)]))
                    latencies.append(time.perf_counter() - t)
                    batches[(round(result["inference_ms"], 6), result["batch_rounds"])] = True

            t0 = time.perf_counter()
            threads = [threading.Thread(target=play, args=(n,)) for n in range(args.concurrency)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.perf_counter() - t0
            batch_ms = np.array([ms for ms, _ in batches])
            sizes = np.array([size for _, size in batches])
            report = {
                "world": str(args.world), "agent": args.agent, "workers": args.workers, "images_per_round": IMAGES,
                "concurrency": args.concurrency, "seconds": round(elapsed, 2), "rounds": len(latencies),
                "rounds_per_s": round(len(latencies) / elapsed, 1),
                "batch_rounds_mean": round(float(sizes.mean()), 2),
                "batch_ms_p50": round(float(np.percentile(batch_ms, 50)), 1),
                "batch_ms_p95": round(float(np.percentile(batch_ms, 95)), 1),
                "ask_ms_p50": round(float(np.percentile(latencies, 50)) * 1000, 1),
                "ask_ms_p95": round(float(np.percentile(latencies, 95)) * 1000, 1),
                "worker_start_s": round(start_s, 2), "worker_rss_mb_at_start": round(rss_start),
                "worker_rss_mb": round(rss_mb(worker.pid)),
                "cpu": os.cpu_count()}
        finally:
            for w in workers:
                w.terminate()
            for w in workers:
                w.wait(timeout=30)
            client.close()
            embedded.stop()
    for key, value in report.items():
        print(f"{key:24s} {value}")
    write_report(args.json, report)
    return report


if __name__ == "__main__":
    main()
