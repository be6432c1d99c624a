"""Latency of each explainer and of whole game rounds, on this machine.

Rounds are timed the way the game runs them: the round's images are looked at when the game starts
(`agent.prepare`), then each round answers one new question about all of them and explains it.

- controlled round (N=5): the answer for every image, spatial + object attention and 5 RelQAs for
  every image. Budget (DESIGN.md): p95 <= 100 ms on 2 CPU cores.
- at-will round with explanations (N=20): the answer for every image, attention for all 20, ObjScene,
  RelQAs and NLE for the secret image. Budget: p95 <= 150 ms.

    exag bench explainers --agent medium --world data/world --json results/explainers_medium.json
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from explainers import EXPLAINERS, ExplanationRequest, load_explainer
from vqa_agent.agent import VQAAgent
from vqa_agent.data import WorldTables
from experiments.benchmark import write_report

ROUNDS = {"controlled": (5, ["attention", "relqa"], []),                  # N, for every image, for the secret
          "at_will": (20, ["attention"], ["objscene", "relqa", "nle"])}


def percentiles(times: list[float]) -> dict:
    return {"p50_ms": float(np.percentile(times, 50)), "p95_ms": float(np.percentile(times, 95)),
            "mean_ms": float(np.mean(times)), "repeats": len(times)}


def benchmark_explainers(agent_name: str, world: Path, repeats: int = 40, seed: int = 0,
                         options: dict[str, dict] | None = None) -> dict:
    agent = VQAAgent.from_pretrained(agent_name)
    options = options or {}
    explainers = {name: load_explainer(name, agent, **options.get(name, {})) for name in EXPLAINERS}
    tables = WorldTables.load(world)
    pool = [s for s in tables.scenes if s["split"] == "pool"]
    questions = [q["question"] for q in tables.questions if q["split"] == "pool"]
    rng = np.random.default_rng(seed)

    def images(n: int) -> list[np.ndarray]:
        chosen = rng.choice(len(pool), n, replace=False)
        return [np.asarray(Image.open(world / "images" / pool[i]["image_filename"]).convert("RGB")) for i in chosen]

    def question() -> str:
        return questions[int(rng.integers(len(questions)))]

    results = {"agent": str(agent_name), "world": str(world), "device": str(agent.device),
               "threads": torch.get_num_threads(), "explainers": {}, "rounds": {}}
    # warm-up: kernels and the lazily built indexes
    warm = images(2)
    outputs = agent.answer(warm, question())
    for explainer in explainers.values():
        explainer.explain_batch([ExplanationRequest(warm[0], outputs[0].question, outputs[0])])

    # one request each, the images already seen
    for name, explainer in explainers.items():
        times = []
        for _ in range(repeats):
            image = images(1)
            agent.prepare(image)
            output = agent.answer(image, question())[0]
            t = time.perf_counter()
            explainer.explain_batch([ExplanationRequest(image[0], output.question, output)])
            times.append((time.perf_counter() - t) * 1000)
        results["explainers"][name] = percentiles(times)

    for round_name, (n, for_all, for_secret) in ROUNDS.items():
        times = []
        for r in range(repeats):
            game = images(n)
            agent.prepare(game)                       # at game start
            secret = int(rng.integers(n))
            t = time.perf_counter()
            outputs = agent.answer(game, question())
            requests = [ExplanationRequest(image, o.question, o, seed=r) for image, o in zip(game, outputs)]
            for name in for_all:
                explainers[name].explain_batch(requests)
            for name in for_secret:
                explainers[name].explain_batch([requests[secret]])
            times.append((time.perf_counter() - t) * 1000)
        results["rounds"][round_name] = {"images": n, "for_every_image": for_all, "for_the_secret": for_secret,
                                         **percentiles(times)}
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", default="default")
    parser.add_argument("--world", type=Path, default=Path("data/world"))
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    report = benchmark_explainers(args.agent, args.world, args.repeats,
                                  options={"relqa": {"world": args.world}})
    print(f"agent {report['agent']} on {report['device']} ({report['threads']} threads)")
    for name, value in report["explainers"].items():
        print(f"  {name:>12}: p50 {value['p50_ms']:6.1f} ms   p95 {value['p95_ms']:6.1f} ms  (one request)")
    budgets = {"controlled": 100, "at_will": 150}
    for name, value in report["rounds"].items():
        print(f"  {name:>12}: p50 {value['p50_ms']:6.1f} ms   p95 {value['p95_ms']:6.1f} ms  "
              f"(round of {value['images']} images; budget p95 <= {budgets[name]} ms)")
    write_report(args.json, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
