"""CPU per game round in an inference worker, by kind of round, alone and in batches, and the worker's memory
with the whole pool: the worker side of issue 29's budget, measured in-process (no Redis, no web).

What is timed is what a worker does for a round (server/worker.py `_handle`): `Predictor.predict` (the
agent and the round's explainers) and `finish_round` (server/respond.py: grading, the player-safe view, the
log entries), with the server's agent and explainers as `exag serve` loads them, one torch thread, pool
images named as a worker names them (KnownImage) and the whole pool already looked at (loaded from the
store a worker keeps beside the world, or looked at first). Rounds of each kind draw their images across
the pool.

    python -m experiments.benchmark.round_cpu                         # default agent, 60 rounds of each kind
    python -m experiments.benchmark.round_cpu --agent strong --rounds 30 --out /tmp/round_cpu.json
    python -m experiments.benchmark.round_cpu --rounds 20 --profile 40  # and where each kind's time goes

Kinds: a plain question about a 20-image at-will game and a 5-image controlled one; a controlled round of
the "both" arm (attention and RelQA on each of 5 images); an at-will round with explanations bought
(attention on 20 images, ObjScene, RelQA and the NLE on the secret). Budget (issue 29): a plain 20-image
round <= 6 ms, a bought one <= 40 ms, a batch of 8 rounds < 8 x one round, worker RSS <= 600 MB; issue 53:
an explained round in a batch at most 3x a plain round of as many images with the explanation cache warm,
15x cold.

Rounds go through server/explained_rounds.py as a worker's do, with the shared explanation cache in a
private Redis (server/explanation_cache.py; `--no-cache`: none). Cold: the cache emptied before each kind;
warm: the same rounds again. CPU is this process's and its Redis's together.
"""
from __future__ import annotations

import argparse
import cProfile
import json
import atexit
import math
import shutil
import pstats
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil

from experiments.benchmark import write_report

REPO = Path(__file__).resolve().parents[2]
QUESTIONS = ("is there a red cube?", "how many spheres are there?", "what color is the large cylinder?",
             "what shape is the small green thing?", "are there more cubes than cylinders?")
KINDS = {   # name: (images, for every image, for the secret)
    "plain, 20 images (at-will)": (20, (), ()),
    "plain, 5 images (controlled)": (5, (), ()),
    "controlled 'both' arm, 5 images": (5, ("attention", "relqa"), ()),
    "bought explanations, 20 images (at-will)": (20, ("attention",), ("objscene", "relqa", "nle")),
}
BUDGET_MS = {"plain, 20 images (at-will)": 6.0, "bought explanations, 20 images (at-will)": 40.0}
RSS_BUDGET_MB = 600


def measure(args: argparse.Namespace) -> dict:
    import torch

    from vqa_agent.memory import keep_freed_memory

    keep_freed_memory()              # as a worker does (server/worker.py)
    torch.set_num_threads(1)
    import redis
    from game.pool import GamePool
    from server.embedded_redis import EmbeddedRedis
    from server.explained_rounds import answer_rounds
    from server.explanation_cache import shared_cache
    from server.respond import pool_masks
    from server.inference import Predictor, RoundRequest
    from server.rounds import RoundJob
    from server.worker import WorkerConfig, explainer_options
    from vqa_agent.agent import VQAAgent

    process = psutil.Process()
    baseline_mb = process.memory_info().rss / 2**20
    world = args.world or (REPO / "data" / "world" if (REPO / "data" / "world" / "scenes.json").exists()
                           else REPO / "data" / "game-world")
    pool = GamePool(world)
    agent = VQAAgent.from_pretrained(args.agent, device="cpu")
    agent.feature_cache = len(pool) + 64
    config = WorkerConfig("redis://unused", world, REPO / "data" / "server", args.agent, progress=False)
    predictor = Predictor(agent, explainer_options(config, args.agent))
    store = None
    if args.cache:        # a private Redis, stopped and removed however the run ends
        folder = tempfile.mkdtemp(prefix="round-cpu-redis-")
        store = EmbeddedRedis(folder).start()
        atexit.register(shutil.rmtree, folder, True)
        atexit.register(store.stop)
    client = redis.Redis.from_url(store.url, decode_responses=True) if store else None
    predictor.cache = shared_cache(client, predictor) if client else None
    loaded_mb = process.memory_info().rss / 2**20
    stored = next((p for p in pool.features_paths(args.agent, REPO / "data" / "server" / "cache") if p.exists()), None)
    started = time.perf_counter()
    if stored is not None:
        try:
            agent.load_seen(stored)
        except ValueError as error:         # stored by an older version: looked at again, and stored anew
            print(f"{error}; looking at the pool again", flush=True)
            stored = None
    if stored is None:
        print("looking at the whole pool (no stored features; a worker stores them) ...", flush=True)
        for start in range(0, len(pool), 4):
            agent.prepare([pool.known(i) for i in range(start, min(start + 4, len(pool)))])
        agent.save_seen(pool.features_paths(args.agent, REPO / "data" / "server" / "cache")[0])
    pool_s = time.perf_counter() - started
    pool_mb = process.memory_info().rss / 2**20
    rng = np.random.default_rng(args.seed)

    def rounds(kind: str, count: int) -> list[tuple]:
        n, every, secret = KINDS[kind]
        made = []
        for k in range(count):
            ids = [int(i) for i in rng.choice(len(pool), n, replace=False)]
            question, position = QUESTIONS[k % len(QUESTIONS)], int(rng.integers(n))
            request = RoundRequest([pool.known(i) for i in ids], question, position, every, secret, seed=k)
            job = RoundJob("round", ids, question, position, [f"t{j}" for j in range(n)], list(every), list(secret))
            made.append((request, job))
        return made

    def cpu_per_round(batches: list[list[tuple]], kept: list | None = None) -> float:
        """CPU ms a round, this process and its Redis together (the cache's reads and writes cost both);
        `kept` gets each round's result."""
        started = time.process_time() + redis_cpu()
        for batch in batches:
            for result in answer_rounds(predictor, [(job, request) for request, job in batch], pool):
                if isinstance(result, Exception) or "error" in result:
                    raise RuntimeError(f"a round failed: {result}")
                if kept is not None:
                    kept.append(result)
        return 1000 * (time.process_time() + redis_cpu() - started) / sum(len(b) for b in batches)

    def redis_cpu() -> float:
        if client is None:
            return 0.0
        info = client.info("cpu")
        return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])

    results = {}
    for i in range(len(pool)):      # as a worker does when it starts
        pool.scene(i)
        pool_masks(pool, i)
    for kind in KINDS:
        cpu_per_round([rounds(kind, 1) for _ in range(3)])                       # first calls: lazy loads
        if client is not None:
            client.flushdb()        # cold: nothing cached but what the pool's preparation made
        profile = cProfile.Profile() if args.profile else None
        if profile is not None:
            profile.enable()
        lone = [rounds(kind, 1) for _ in range(args.rounds)]
        alone = cpu_per_round(lone)
        if profile is not None:
            profile.disable()
            print(f"--- where a round of '{kind}' alone spends its time, cold (cProfile, cumulative):", flush=True)
            pstats.Stats(profile, stream=sys.stdout).sort_stats("cumulative").print_stats(args.profile)
        batches = [rounds(kind, 8) for _ in range(max(1, args.rounds // 8))]
        cold, warm = [], []
        batched = cpu_per_round(batches, cold)
        # warm: the same rounds again, every explanation in the cache (plain rounds: the same work again)
        warm_alone, warm_batched = (cpu_per_round(lone), cpu_per_round(batches, warm)) if client else (None, None)
        same = sum(shown(a) == shown(b) and math.isclose(a["graded"]["probability"], b["graded"]["probability"],
                                                         rel_tol=1e-5) for a, b in zip(cold, warm))
        results[kind] = {"alone_ms": alone, "batch_of_8_ms_per_round": batched, "budget_ms": BUDGET_MS.get(kind),
                         "warm_alone_ms": warm_alone, "warm_batch_of_8_ms_per_round": warm_batched,
                         "warm_identical_to_cold": f"{same} of {len(warm)}" if client else None}
        if client and same != len(warm):
            print(f"  !! {len(warm) - same} of {len(warm)} warm rounds differ from their cold computation", flush=True)
        warm = f"   warm: alone {warm_alone:6.2f} ms, batch of 8 {warm_batched:6.2f} ms" if client else ""
        print(f"  {kind:42s} cold: alone {alone:6.2f} ms, batch of 8 {batched:6.2f} ms a round{warm}", flush=True)
    return {"benchmark": "round_cpu", "command": " ".join(sys.argv), "agent": args.agent, "world": str(world),
            "pool_images": len(pool), "rounds_per_kind": args.rounds, "torch_threads": 1, "kinds": results,
            "rss_mb": {"after_imports": baseline_mb, "agent_and_explainers_loaded": loaded_mb,
                       "with_the_whole_pool": pool_mb, "budget": RSS_BUDGET_MB},
            "pool_features": {"from_store": stored is not None, "seconds": pool_s}}


def shown(result: dict) -> str:
    """What a round shows and logs, without when and how long it was computed: a cached round's must be the
    bytes of its computation. Without the secret's probability, compared within 1e-5 apart: the secret is
    answered every round, in a batch of the images still to explain, and a batch's shape moves its last bits."""
    logged = [{k: v for k, v in e.items() if k not in ("seconds", "cached")} for e in result["shown"]["log"]]
    graded = {k: v for k, v in result["graded"].items() if k != "probability"}
    return json.dumps({"answer": result["answer"], "graded": graded, "view": result["shown"]["view"],
                       "log": logged}, sort_keys=True)


def table(report: dict) -> str:
    """Cold and warm CPU per round, and each explained kind's multiple of the plain round of its size (issue
    53: a batch's round at most 3x warm, 15x cold)."""
    plain = {5: report["kinds"]["plain, 5 images (controlled)"], 20: report["kinds"]["plain, 20 images (at-will)"]}
    lines = ["| round | cold alone | cold, batch of 8 | warm alone | warm, batch of 8 | x plain (batch of 8): cold / warm | budget |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for kind, r in report["kinds"].items():
        base = plain[KINDS[kind][0]]["batch_of_8_ms_per_round"]
        cell = (lambda v: "-" if v is None else f"{v:.1f}")
        ratio = (lambda v: "-" if v is None else f"{v / base:.1f}x")
        budget = f"<= {r['budget_ms']:.0f} ms" if r["budget_ms"] else "-"
        lines.append(f"| {kind} | {cell(r['alone_ms'])} | {cell(r['batch_of_8_ms_per_round'])} | {cell(r['warm_alone_ms'])} | "
                     f"{cell(r['warm_batch_of_8_ms_per_round'])} | {ratio(r['batch_of_8_ms_per_round'])} / "
                     f"{ratio(r['warm_batch_of_8_ms_per_round'])} | {budget} |")
    rss = report["rss_mb"]
    lines += ["", f"worker-like process RSS: {rss['after_imports']:.0f} MB after its imports, "
                  f"{rss['agent_and_explainers_loaded']:.0f} MB with the agent and explainers, "
                  f"{rss['with_the_whole_pool']:.0f} MB with the whole pool of {report['pool_images']} images "
                  f"(budget {rss['budget']} MB)"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", default="default")
    parser.add_argument("--world", type=Path, default=None, help="default: data/world when built, else data/game-world")
    parser.add_argument("--rounds", type=int, default=60, help="rounds of each kind (alone; batches: rounds / 8)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="print the N functions where each kind of round spends most (cProfile, cumulative)")
    parser.add_argument("--no-cache", dest="cache", action="store_false",
                        help="no explanation cache (server/explanation_cache.py): every round computes everything")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "round_cpu.json")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be positive")
    report = measure(args)
    report["table"] = table(report)
    write_report(args.out, report)
    print(f"\n{report['table']}\n\nwritten to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
