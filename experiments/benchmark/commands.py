"""`exag bench WHAT`: the benchmarks of the agents and their explainers, each a module of this package with its
own `main(argv)`; a command resolves the world (vqa_agent/world/default.py) and hands the rest on.

Cheap to import (`exag --help` loads it): a benchmark is imported when it runs.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from vqa_agent.world.default import FULL_WORLD_HELP, GAME_WORLD, WORLD_HELP, default_world, game_world


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Benchmarks of the agents."
    commands = parser.add_subparsers(dest="bench_command", required=True, metavar="WHAT")
    vqa = commands.add_parser("vqa", help="accuracy on test, pool and player-style questions",
                              description="Accuracy overall, per question type and answer type.")
    vqa.add_argument("--agent", default="default")
    vqa.add_argument("--world", type=Path, default=None, help=FULL_WORLD_HELP)
    vqa.add_argument("--json", type=Path, help="write the results here")
    vqa.set_defaults(run=vqa_command)
    clevr = commands.add_parser(
        "clevr", help="agents and parser on CLEVR-phrased questions and on held-out phrasings",
        description="Questions written by CLEVR's own generator (when it is on disk) about the world's test "
                    "scenes, and the world's held-out phrasings: accuracy by type, parser coverage.")
    clevr.add_argument("--world", type=Path, default=None, help=FULL_WORLD_HELP)
    clevr.add_argument("--agents", default="weak,medium,strong")
    clevr.add_argument("--clevr-generator", type=Path, default=None,
                       help="CLEVR's question_generation directory (clevr-dataset-gen); skipped when absent")
    clevr.add_argument("--images", type=int, default=400)
    clevr.add_argument("--seed", type=int, default=5)
    clevr.add_argument("--keep-files", type=Path, default=None,
                       help="keep the CLEVR-format scenes and the generator's questions in this folder")
    clevr.add_argument("--json", type=Path, help="write the results here")
    clevr.set_defaults(run=clevr_command)
    latency = commands.add_parser("latency", help="p50/p95 of one question over 5 and 20 images",
                                  description="Latency of one question over 5 and over 20 images, with "
                                              "new images (cold) and images seen before (warm).")
    latency.add_argument("--agent", default="default")
    latency.add_argument("--repeats", type=int, default=30)
    latency.add_argument("--json", type=Path, help="write the results here")
    latency.set_defaults(run=latency_command)
    nle = commands.add_parser(
        "nle", help="NLG metrics and e-ViL scores of the NLE explainer's explanations",
        description="BLEU-4, METEOR, ROUGE-L, CIDEr, BERTScore and e-ViL's S_E/S_T/S_O of the nle explainer on "
                    "the correctly answered test questions, beside a random-explanation baseline.")
    nle.add_argument("--agent", default="default")
    nle.add_argument("--world", type=Path, default=None, help=FULL_WORLD_HELP)
    nle.add_argument("--json", type=Path, help="write the results here")
    nle.add_argument("--max-items", type=int, default=None, help="only the first N test questions")
    nle.add_argument("--model", default=None, help="NLE model directory (default: the one shipped for the agent)")
    nle.add_argument("--threads", type=int, default=None, help="CPU threads (default: torch's choice)")
    nle.set_defaults(run=nle_command)
    card = commands.add_parser(
        "card", help="every explainer benchmarked the way the field does, in one card (card.json, card.md, plots)",
        description="Grading, e-ViL, F1@ExplanationScore, faithfulness tests, attention localisation and the "
                    "randomisation sanity check of every explainer (shams included) on one agent; "
                    "`exag analyze --bench OUT` shows the card beside a study.")
    card.add_argument("--agent", default="default")
    card.add_argument("--world", type=Path, default=None, help=FULL_WORLD_HELP)
    card.add_argument("--out", type=Path, required=True, help="directory for card.json, card.md and the plots")
    card.add_argument("--max-items", type=int, default=None, help="test questions sampled (default 400)")
    card.add_argument("--explainers", default=None, help="comma-separated explainer names (default: all)")
    card.add_argument("--nle-model", default=None, help="NLE model directory (default: the agent's shipped one)")
    card.add_argument("--seed", type=int, default=0)
    card.add_argument("--threads", type=int, default=None, help="CPU threads (default: torch's choice)")
    card.set_defaults(run=card_command)
    zoo = commands.add_parser(
        "zoo", help="several agents' cards side by side (each real explainer beside its sham)",
        description="Reads card.json files written by `exag bench card` and prints one row per agent.")
    zoo.add_argument("cards", nargs="+", type=Path, help="directories written by `exag bench card`")
    zoo.add_argument("--out", type=Path, default=None, help="also write the table to this markdown file")
    zoo.set_defaults(run=zoo_command)
    explainers = commands.add_parser(
        "explainers", help="latency of each explainer and of controlled (N=5) and at-will (N=20) rounds",
        description="p50/p95 of each explainer on one request and of whole game rounds with explanations.")
    explainers.add_argument("--agent", default="default")
    explainers.add_argument("--world", type=Path, default=None, help=WORLD_HELP)
    explainers.add_argument("--repeats", type=int, default=40)
    explainers.add_argument("--json", type=Path, help="write the results here")
    explainers.set_defaults(run=explainers_command)
    attacks = commands.add_parser(
        "secret-attacks", help="how often a program finds the secret from what a player is sent",
        description="Plays games through the server's interface and measures two attacks: the medoid of the shown "
                    "images' embeddings (nothing bought) and replaying the public agent after one bought at-will round.")
    attacks.add_argument("--agent", default="default")
    attacks.add_argument("--world", type=Path, default=GAME_WORLD)
    attacks.add_argument("--games", type=int, default=40, help="at-will games of the replay attack")
    attacks.add_argument("--medoid-games", type=int, default=200, help="games per setting of the medoid attack")
    attacks.add_argument("--seed", type=int, default=0, help="the server's seed")
    attacks.add_argument("--json", type=Path, help="write the results here")
    attacks.set_defaults(run=secret_attacks_command)


def _optional(flag: str, value) -> list[str]:
    """[flag, value] for a benchmark's argv when the value is given, else nothing."""
    return [flag, str(value)] if value else []


def vqa_command(args: argparse.Namespace) -> int:
    from .vqa_accuracy import main

    world = default_world(args.world, ("test", "pool"), "`exag bench vqa`")
    return main(["--agent", str(args.agent), "--world", str(world)] + _optional("--json", args.json)) or 0


def clevr_command(args: argparse.Namespace) -> int:
    from .clevr_phrased import main

    world = default_world(args.world, ("test",), "`exag bench clevr`")
    main(["--world", str(world), "--agents", args.agents, "--images", str(args.images), "--seed", str(args.seed)]
         + _optional("--clevr-generator", args.clevr_generator) + _optional("--keep-files", args.keep_files)
         + _optional("--json", args.json))
    return 0


def latency_command(args: argparse.Namespace) -> int:
    from .vqa_latency import main

    return main(["--agent", str(args.agent), "--repeats", str(args.repeats)] + _optional("--json", args.json)) or 0


def nle_command(args: argparse.Namespace) -> int:
    from .nle_metrics import main

    world = default_world(args.world, ("test",), "`exag bench nle`")
    return main(["--agent", str(args.agent), "--world", str(world)] + _optional("--json", args.json)
                + _optional("--max-items", args.max_items) + _optional("--model", args.model)
                + _optional("--threads", args.threads)) or 0


def card_command(args: argparse.Namespace) -> int:
    from .card import main

    world = default_world(args.world, ("test",), "`exag bench card`")
    return main(["--agent", str(args.agent), "--world", str(world), "--out", str(args.out), "--seed", str(args.seed)]
                + _optional("--max-items", args.max_items) + _optional("--explainers", args.explainers)
                + _optional("--nle-model", args.nle_model) + _optional("--threads", args.threads)) or 0


def zoo_command(args: argparse.Namespace) -> int:
    from .zoo import main

    return main([str(d) for d in args.cards] + _optional("--out", args.out))


def explainers_command(args: argparse.Namespace) -> int:
    from vqa_agent.world.build import POOL_SPLIT, missing_images, render_missing

    from .explainer_latency import main

    world = default_world(args.world)
    if (world / "manifest.json").exists() and missing_images(world, splits=(POOL_SPLIT,)):
        print(f"rendering the rest of {world}'s game pool first (the benchmark draws images from all of it)",
              flush=True)
        render_missing(world, splits=(POOL_SPLIT,))
    return main(["--agent", str(args.agent), "--world", str(world), "--repeats", str(args.repeats)]
                + _optional("--json", args.json))


def secret_attacks_command(args: argparse.Namespace) -> int:
    from .secret_attacks import main

    world = game_world() if args.world == GAME_WORLD else args.world
    return main(["--agent", str(args.agent), "--world", str(world), "--games", str(args.games),
                 "--medoid-games", str(args.medoid_games), "--seed", str(args.seed)]
                + _optional("--json", args.json)) or 0
