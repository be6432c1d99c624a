"""Latency of a transformers VQA agent (hf:PATH, vqa_agent/hf_agent.py): one question over N images, answer
and attention grid together (one forward pass with attentions; no features are cached between questions,
so every question pays for its images).

    python -m experiments.benchmark.hf_latency --vilt DIR --images 20 --repeats 30 --threads 1 --json OUT.json
    python -m experiments.benchmark.hf_latency --make-tiny --images 20 --repeats 30 --threads 1

--make-tiny builds the tests' tiny random ViLT (vqa_agent/hf_tiny.py: 2 layers, hidden 32, 64-pixel images
in 16-pixel patches) into a temporary directory: it measures the adapter's own overhead (preprocessing,
rollout, outputs), not a real ViLT's compute. The images are 320 x 240 like the game pool's.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from experiments.benchmark import write_report
from vqa_agent.hf_agent import HFVQAAgent

QUESTIONS = ["is there a red cube?", "how many spheres are there?", "what color is the big cylinder?",
             "is the cube left of the ball?", "what is in the image?"]


def benchmark(model_dir: Path, images: int = 20, repeats: int = 30, device: str = "cpu", seed: int = 0) -> dict:
    agent = HFVQAAgent(model_dir, device=device)
    rng = np.random.default_rng(seed)
    pool = list(rng.integers(0, 256, (images * 4, 240, 320, 3), dtype=np.uint8))
    agent.answer(pool[:images], QUESTIONS[0])                 # warm up: first calls allocate and pick kernels
    times = []
    for r in range(repeats):
        start = (r * images) % (len(pool) - images + 1)
        t = time.perf_counter()
        outputs = agent.answer(pool[start:start + images], QUESTIONS[r % len(QUESTIONS)])
        if agent.device.type == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1000)
        assert len(outputs) == images and outputs[0].spatial_attention.sum() > 0.99
    return {"model": agent.architecture, "path": str(model_dir), "device": str(agent.device),
            "dtype": str(agent.dtype).replace("torch.", ""), "threads": torch.get_num_threads(), "images": images,
            "repeats": repeats, "p50_ms": float(np.percentile(times, 50)), "p95_ms": float(np.percentile(times, 95)),
            "mean_ms": float(np.mean(times)), "grid": list(outputs[0].spatial_attention.shape)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vilt", type=Path, help="a transformers VQA model directory (ViLT; BLIP works too)")
    parser.add_argument("--make-tiny", action="store_true", help="build the tests' tiny random ViLT and time that")
    parser.add_argument("--images", type=int, default=20, help="images the question is asked of (a round: 20)")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    if not args.make_tiny and args.vilt is None:
        parser.error("name a model directory with --vilt DIR, or pass --make-tiny")
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="exag-hf-latency-") as scratch:
        model_dir = args.vilt
        if args.make_tiny:
            from vqa_agent.hf_tiny import make_tiny_vilt
            model_dir = make_tiny_vilt(args.vilt or Path(scratch) / "tiny-vilt")
        report = benchmark(model_dir, args.images, args.repeats, args.device)
    report["tiny"] = bool(args.make_tiny)
    if args.make_tiny and args.vilt is None:
        report["path"] = "a temporary directory (--make-tiny)"
    print(f"{report['model']}{' (tiny, random)' if args.make_tiny else ''} on {report['device']} "
          f"({report['dtype']}, {report['threads']} threads): one question over {report['images']} images, "
          f"answer + attention {report['grid'][0]}x{report['grid'][1]}")
    print(f"  p50 {report['p50_ms']:.1f} ms   p95 {report['p95_ms']:.1f} ms   mean {report['mean_ms']:.1f} ms "
          f"({report['repeats']} repeats)")
    write_report(args.json, report)


if __name__ == "__main__":
    main()
