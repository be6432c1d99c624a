"""Speed of the RelQA explainer (and ObjScene beside it), on this machine.

index build: reading the bank from questions.json and embedding it with the agent's question encoder,
    into a fresh cache directory (the explainer's real cache is left alone), then loading it back.
retrieval: for one asked question and answer, embedding it, the cosine product with the whole bank and
    the walk that rejects paraphrases and duplicates (RelQAExplainer.retrieve).
explain: explain_batch end to end, i.e. retrieval plus the agent answering the chosen questions on the
    image; for 1 request (the at-will secret image) and 5 (a controlled round explains every image),
    reported per batch and per request. The images were seen by the agent before, as in a game, where
    the asked question was answered on them first.
The load average is printed with the numbers: on a shared machine other processes' load shows up as
long tails (multi-threaded kernels wait for a preempted thread); --threads 1 makes that milder.

    python -m experiments.benchmark.relqa_speed --agent medium --world data/world --json results/relqa_speed.json
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from explainers.base import ExplanationRequest
from explainers.objscene import ObjSceneExplainer
from explainers.relqa import MIN_BANK, RelQAExplainer
from explainers.relqa_index import load_or_build_index
from vqa_agent.agent import VQAAgent, as_rgb_array
from experiments.benchmark import write_report

QUESTIONS = ["is there a red cube?", "how many spheres are there?", "what color is the big cylinder?",
             "is the cube left of the ball?", "are there more cubes than spheres?", "what is the small ball made of?",
             "what shape is the large metal thing?", "how many things are behind the gray cube?"]
ROUND_SIZE = 5   # images explained together in a controlled round


def percentiles(times_s: list[float]) -> dict:
    ms = np.asarray(times_s) * 1000
    return {"p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95)),
            "mean_ms": float(ms.mean()), "repeats": len(ms)}


def timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def benchmark_relqa(agent_name: str, world: Path, repeats: int = 30, n: int = 5, seed: int = 0,
                    min_bank: int = MIN_BANK, threads: int | None = None) -> dict:
    if threads:
        torch.set_num_threads(threads)
    agent = VQAAgent.from_pretrained(agent_name)
    report = {"agent": str(agent_name), "world": str(world), "device": str(agent.device),
              "threads": torch.get_num_threads(), "load_average_before": list(os.getloadavg())}

    with tempfile.TemporaryDirectory() as cache:
        started = time.perf_counter()
        index = load_or_build_index(agent, world, "val", cache)
        build_s = time.perf_counter() - started
        load_s = timed(lambda: load_or_build_index(agent, world, "val", cache, progress=False))
        report["index"] = {"entries": len(index), "hidden": int(index.embeddings.shape[1]),
                           "build_s": build_s, "embed_s": index.meta["build_seconds"], "cached_load_s": load_s,
                           "bytes": index.path.stat().st_size}
    relqa = RelQAExplainer(agent, world=world, n=n, min_bank=min_bank)   # the real cache: built once, then reused
    objscene = ObjSceneExplainer(agent)

    rng = np.random.default_rng(seed)
    pool = sorted((world / "images").glob("EXAG_pool_*.png")) or sorted((world / "images").glob("*.png"))
    picked = [pool[i] for i in rng.choice(len(pool), size=min(len(pool), ROUND_SIZE * 4), replace=False)]
    images = [as_rgb_array(p) for p in picked]
    agent.prepare(images)

    def round_requests(r: int, size: int) -> list[ExplanationRequest]:
        chosen = [images[(r * size + j) % len(images)] for j in range(size)]
        question = QUESTIONS[r % len(QUESTIONS)]
        outputs = agent.answer(chosen, [question])
        return [ExplanationRequest(image, question, output) for image, output in zip(chosen, outputs)]

    query = agent.embed_texts(["is there a red cube? yes"])[0]
    query /= np.linalg.norm(query)
    report["bank_product"] = percentiles([timed(lambda: index.unit @ query) for _ in range(repeats * 10)])

    retrieval, explain_1, explain_5, explain_5_per, objscene_1 = [], [], [], [], []
    relqa.explain_batch(round_requests(0, 1))   # warm up
    for r in range(repeats):
        single = round_requests(r, 1)
        retrieval.append(timed(lambda: relqa.retrieve([single[0].question], [single[0].output.answer])))
        explain_1.append(timed(lambda: relqa.explain_batch(single)))
        objscene_1.append(timed(lambda: objscene.explain_batch(single)))
        batch = round_requests(r, ROUND_SIZE)
        explain_5.append(timed(lambda: relqa.explain_batch(batch)))
        explain_5_per.append(explain_5[-1] / ROUND_SIZE)
    report["retrieval_1"] = percentiles(retrieval)
    report["relqa_explain_1"] = percentiles(explain_1)
    report[f"relqa_explain_{ROUND_SIZE}"] = percentiles(explain_5)
    report[f"relqa_explain_{ROUND_SIZE}_per_request"] = percentiles(explain_5_per)
    report["objscene_explain_1"] = percentiles(objscene_1)
    report["load_average_after"] = list(os.getloadavg())
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", default="default")
    parser.add_argument("--world", type=Path, default=Path("data/world"))
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--n", type=int, default=5, help="related pairs per request (default: 5)")
    parser.add_argument("--min-bank", type=int, default=MIN_BANK, help=f"smallest bank accepted (default: {MIN_BANK})")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    report = benchmark_relqa(args.agent, args.world, repeats=args.repeats, n=args.n, min_bank=args.min_bank,
                             threads=args.threads)
    index = report["index"]
    print(f"agent {report['agent']} on {report['device']} ({report['threads']} threads), "
          f"load average {report['load_average_before'][0]:.1f} -> {report['load_average_after'][0]:.1f}")
    print(f"  index: {index['entries']} x {index['hidden']}, built in {index['build_s']:.1f} s "
          f"(embedding {index['embed_s']:.1f} s), cached load {index['cached_load_s'] * 1000:.0f} ms, "
          f"{index['bytes'] / 1e6:.1f} MB")
    for key, value in report.items():
        if isinstance(value, dict) and "p50_ms" in value:
            print(f"  {key:>32}: p50 {value['p50_ms']:7.2f} ms   p95 {value['p95_ms']:7.2f} ms")
    write_report(args.json, report)


if __name__ == "__main__":
    main()
