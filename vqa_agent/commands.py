"""`exag train agent` and `exag ask`: train a VQA agent on a world, and ask one questions about an image.

Cheap to import (`exag --help` loads it): the agent, and torch with it, is imported when a command runs.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from .world.default import FULL_WORLD_HELP, default_world, rendered_image


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Train a VQA agent preset on a world: progress bar with loss and running accuracy, "
                          "validation each epoch, the best checkpoint kept in OUT, resumable (run it again).")
    parser.add_argument("--preset", required=True, help="tiny, weak, medium or strong")
    parser.add_argument("--world", type=Path, default=None, help=FULL_WORLD_HELP)
    parser.add_argument("--out", type=Path, required=True, help="directory for the agent")
    parser.add_argument("--epochs", type=int, default=None, help="override the preset's epochs")
    parser.add_argument("--seed", type=int, default=None, help="override the preset's seed")
    parser.add_argument("--device", default="auto", help="auto (GPU when present), cpu or cuda")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads of torch, BLAS and OpenMP (default: half the cores, 1 on a 2-core machine, "
                             "where docs/real-study.md measured its times; threads that compete with whatever else "
                             "the machine runs, such as the server, can take several times longer)")
    parser.set_defaults(run=train_command)


def train_command(args: argparse.Namespace) -> int:
    from .config import preset
    from .threads import pin_threads
    from .train import train_agent

    threads = max(1, (os.cpu_count() or 2) // 2) if args.threads is None else args.threads
    if threads < 1:
        raise ValueError(f"--threads must be at least 1, got {threads}")
    pin_threads(threads, load_torch=True)
    overrides = {k: v for k, v in (("epochs", args.epochs), ("seed", args.seed)) if v is not None}
    world = default_world(args.world, ("train", "val"), "`exag train agent`")
    out = train_agent(world, args.out, preset(args.preset, **overrides), device=args.device)
    training = json.loads((out / "training.json").read_text())
    print(f"best agent in {out}: validation accuracy {training['val']['accuracy']:.1%}")
    return 0


def add_ask_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Print the agent's outputs (answer, top-k, attention, proposals, concepts) as one JSON "
                          "line per question.")
    parser.add_argument("--agent", default="default", help="shipped agent name or a directory (default: default)")
    parser.add_argument("--image", required=True, type=Path, help="image file")
    parser.add_argument("questions", nargs="+", help="questions, each one argument")
    parser.add_argument("--device", default="auto")
    parser.set_defaults(run=ask_command)


def ask_command(args: argparse.Namespace) -> int:
    from .loading import load_agent

    agent = load_agent(args.agent, device=args.device)
    for out in agent.answer([rendered_image(args.image)] * len(args.questions), args.questions):
        print(json.dumps({
            "question": out.question, "answer": out.answer, "probability": round(out.probability, 4),
            "top_k": [[a, round(p, 4)] for a, p in out.top_k], "unknown_words": out.unknown_words,
            "outside_words": out.outside_words, "refusal": out.refusal,
            "spatial_attention": out.spatial_attention.round(4).tolist(),
            "proposals": [{"box": [round(v, 1) for v in p.box], "score": round(p.score, 3),
                           "attention": round(p.attention, 4), "mask_pixels": int(p.mask.sum()),
                           "attributes": {a: [v, round(q, 3)] for a, (v, q) in p.attributes.items()}}
                          for p in out.proposals],
            "concept_probabilities": {k: round(v, 4) for k, v in out.concept_probabilities.items()},
        }))
    return 0
