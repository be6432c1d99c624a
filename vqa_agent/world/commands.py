"""`exag world build|sheet|parse`: build the synthetic world, draw samples of it, parse typed questions.

Cheap to import (`exag --help` loads it): the contact sheet and the parser are imported when they run.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from .build import WorldConfig, build_world, ensure_rendered, render_progress
from .default import DEFAULT_WORLD, WORLD_HELP, default_world


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Build and inspect the synthetic CLEVR-compatible world."
    commands = parser.add_subparsers(dest="world_command", required=True, metavar="WORLD_COMMAND")

    build = commands.add_parser(
        "build", help="render scenes and generate questions into a directory",
        description="Render scenes, masks and questions (with programs, answers and reference explanations) "
                    "into DIR. Re-running with the same settings does nothing; an interrupted build resumes.")
    build.add_argument("--out", type=Path, default=DEFAULT_WORLD, help=f"output directory (default: {DEFAULT_WORLD})")
    build.add_argument("--images", type=int, default=10_000, help="train+val+test images (default: 10000)")
    build.add_argument("--pool", type=int, default=1_500, help="game pool images held out from training (default: 1500)")
    build.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    build.add_argument("--questions-per-image", type=int, default=10, help="questions per image (default: 10)")
    build.add_argument("--workers", type=int, default=None, help="rendering processes (default: one per core)")
    build.add_argument("--force", action="store_true", help="replace a world built with other settings")
    build.set_defaults(run=build_command)

    sheet = commands.add_parser("sheet", help="draw sample scenes with their questions and answers",
                                description="Write a PNG contact sheet of sample scenes with questions, "
                                            "answers and a reference explanation.")
    sheet.add_argument("--world", type=Path, default=None, help=WORLD_HELP)
    sheet.add_argument("--out", type=Path, default=Path("data/contact_sheet.png"), help="PNG to write")
    sheet.add_argument("--n", type=int, default=8, help="number of scenes (default: 8)")
    sheet.add_argument("--seed", type=int, default=0, help="which scenes to pick (default: 0)")
    sheet.add_argument("--split", choices=["train", "val", "test", "pool"], default=None, help="only this split")
    sheet.set_defaults(run=sheet_command)

    parse = commands.add_parser("parse", help="parse typed questions into programs",
                                description="Print, as JSON lines, the program of each question, or "
                                            "gradable=false when it is outside the world's language.")
    parse.add_argument("questions", nargs="+", help="questions, each one argument")
    parse.set_defaults(run=parse_command)


def build_command(args: argparse.Namespace) -> int:
    config = WorldConfig(images=args.images, pool=args.pool, seed=args.seed,
                         questions_per_image=args.questions_per_image)
    out = build_world(args.out, config, workers=args.workers, force=args.force)
    manifest = json.loads((out / "manifest.json").read_text())
    print(f"world ready in {out}: {manifest['images']} images, {manifest['questions']} questions "
          f"({', '.join(f'{k} {v}' for k, v in manifest['images_per_split'].items())})")
    return 0


def sheet_command(args: argparse.Namespace) -> int:
    from .sheet import write_contact_sheet

    world = default_world(args.world)
    _render_sheet_images(world, args.n, args.seed, args.split)
    out = write_contact_sheet(world, args.out, n=args.n, seed=args.seed, split=args.split)
    print(f"contact sheet written to {out}")
    return 0


def _render_sheet_images(world: Path, n: int, seed: int, split: str | None) -> None:
    """The images write_contact_sheet will draw (its first random choice), rendered if not yet."""
    if not (world / "manifest.json").exists() or render_progress(world)["done"]:
        return
    scenes = json.loads((world / "scenes.json").read_text())["scenes"]
    with_questions = {q["image_index"] for q in json.loads((world / "questions.json").read_text())["questions"]}
    candidates = [s for s in scenes if (split is None or s["split"] == split) and s["image_index"] in with_questions]
    if candidates:
        for i in np.random.default_rng(seed).choice(len(candidates), min(n, len(candidates)), replace=False):
            ensure_rendered(world, candidates[i]["image_filename"])


def parse_command(args: argparse.Namespace) -> int:
    from .parser import Unparseable, parse
    from .programs import program_to_json

    status = 0
    for text in args.questions:
        try:
            result = {"question": text, "gradable": True, "program": program_to_json(parse(text).program())}
        except Unparseable as reason:
            status = 1
            result = {"question": text, "gradable": False, "reason": str(reason)}
        print(json.dumps(result))
    return status
