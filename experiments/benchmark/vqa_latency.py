"""Latency of one question over N images (batched), on this machine.

"cold": the images are new to the agent, so the CNN and the proposal head run on all of them.
"warm": the images were seen before (a game asks many questions about the same images), so only the
question-dependent part runs. DESIGN.md's budget: p50 <= 40 ms for 20 images on 2 CPU cores.

    exag bench latency --agent medium --json results/latency_medium.json
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from vqa_agent.agent import VQAAgent
from vqa_agent.world.render import render
from vqa_agent.world.scene import generate_scene
from experiments.benchmark import write_report

QUESTIONS = ["is there a red cube?", "how many spheres are there?", "what color is the big cylinder?",
             "is the cube left of the ball?", "are there more cubes than spheres?", "what is in the image?"]


def benchmark_latency(agent_name: str, sizes=(5, 20), repeats: int = 30, seed: int = 0) -> dict:
    agent = VQAAgent.from_pretrained(agent_name)
    rng = np.random.default_rng(seed)
    pool = [render(generate_scene(rng, index=i)).image for i in range(max(sizes) * 4)]
    agent.answer(pool[:2], QUESTIONS[:1])  # warm up the kernels
    results = {"agent": str(agent_name), "device": str(agent.device), "threads": torch.get_num_threads()}
    for n in sizes:
        for mode in ("cold", "warm"):
            times = []
            for r in range(repeats):
                start = (r * n) % (len(pool) - n + 1)
                images = [img.copy() for img in pool[start:start + n]]
                if mode == "cold":
                    agent._cache.clear()
                else:
                    agent.answer(images, QUESTIONS[:1])
                question = QUESTIONS[r % len(QUESTIONS)]
                t = time.perf_counter()
                agent.answer(images, [question])
                times.append((time.perf_counter() - t) * 1000)
            results[f"{mode}_{n}"] = {"p50_ms": float(np.percentile(times, 50)), "p95_ms": float(np.percentile(times, 95)),
                                      "mean_ms": float(np.mean(times)), "repeats": repeats}
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", required=True)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    report = benchmark_latency(args.agent, repeats=args.repeats)
    print(f"agent {report['agent']} on {report['device']} ({report['threads']} threads)")
    for key, value in report.items():
        if isinstance(value, dict):
            print(f"  {key:>8}: p50 {value['p50_ms']:6.1f} ms   p95 {value['p95_ms']:6.1f} ms")
    write_report(args.json, report)


if __name__ == "__main__":
    main()
