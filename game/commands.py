"""`exag pool import`: a folder of your own images made a game pool (game/pool_import.py) that `exag serve
--pool NAME` and a study's "pool" play on.

Cheap to import (`exag --help` loads it): the import, and the agent it loads, are imported when it runs.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .pool import POOLS_DIR


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Game pools made of your own images."
    commands = parser.add_subparsers(dest="pool_command", required=True, metavar="POOL_COMMAND")
    imports = commands.add_parser(
        "import", help="make a folder of images (JPEG/PNG, any size) a game pool",
        description="Copy the images of DIR (subfolders included), letterboxed to the world's 320x240, into a game "
                    "pool with the agent's embeddings of them (image sets are chosen by them, at the game's "
                    "difficulty levels), and the object words of --annotations (COCO or Visual Genome JSON). "
                    f"Play on it with `exag serve --pool NAME` (a directory, or a name under {POOLS_DIR}/). "
                    "Unreadable images are named and skipped; nothing is written unless the import succeeds.")
    imports.add_argument("dir", type=Path, metavar="DIR", help="the folder of images")
    imports.add_argument("--out", type=Path, required=True, help=f"the pool directory, e.g. {POOLS_DIR}/NAME")
    imports.add_argument("--agent", default="default",
                         help="the agent whose image encoder embeds the images: the agent the server plays "
                              "(default: default; a checkpoint directory, or hf:PATH)")
    imports.add_argument("--annotations", type=Path, default=None,
                         help="COCO (images, annotations, categories) or Visual Genome (objects.json) annotations: "
                              "each image's object words")
    imports.add_argument("--device", default="cpu", help="torch device of the agent (default: cpu)")
    imports.add_argument("--force", action="store_true", help="replace --out even when it is not an image pool")
    imports.set_defaults(run=import_command)


def import_command(args: argparse.Namespace) -> int:
    from .pool_import import import_pool

    try:
        summary = import_pool(args.dir, args.out, agent=args.agent, annotations=args.annotations, force=args.force,
                              device=args.device)
    except (FileNotFoundError, FileExistsError, ValueError):
        raise
    except OSError as error:          # a disk full or a folder that cannot be written: one line, too
        raise ValueError(f"the import failed: {error}") from error
    for warning in summary["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    parts = [f"{summary['images']} images"]
    if summary["skipped"]:
        parts.append(f"{len(summary['skipped'])} unreadable skipped")
    if summary["ignored"]:
        parts.append(f"{summary['ignored']} other files ignored")
    if summary["annotations"]:
        parts.append(f"{summary['annotations']['matched']} annotated")
    rows, dimensions = summary["embeddings"]
    print(f"image pool ready in {summary['out']}: {', '.join(parts)}; embeddings {rows}x{dimensions} by agent "
          f"{summary['agent']}")
    print(f"play on it: exag serve --pool {summary['out']}")
    return 0
