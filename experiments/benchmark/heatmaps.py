"""Where the heatmap players see puts its mass (issue 52): for each agent, on game-pool images and a mix of
questions, the drawn heatmap's share on object pixels, whether its peak lies on an object, and for a
question about one object whether it lies on that object; beside the network's own grid attention (what
the board drew before issue 52), the shuffled sham (another image's heatmap) and a uniform map.

    python -m experiments.benchmark.heatmaps --world data/game-world --images 200 --agents weak,medium,strong \\
        [--json results/heatmaps.json]

Questions: one of each image's own questions from the world, one of its questions about one object (the
program needs exactly one, visible: is the peak on it?), and MIX, one question per kind players ask (colour, shape, count, material, relation). Maps are scored
as the board draws them (explainers.attention.attribution_map, source "grid": interpolated between cell
centres). Object pixels: the world's instance masks.
"""
from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from experiments.benchmark.items import load_items
from experiments.benchmark.localisation import asked_object, drawn_on_objects
from explainers.attention import attention_payload, attribution_map
from vqa_agent.evidence_map import cell_of_pixel, grid_shape

MIX = {"colour": "what color is the big shiny thing?", "shape": "what shape is the small rubber object?",
       "count": "how many cubes are there?", "material": "what material is the red thing?",
       "relation": "what color is the object left of the cylinder?"}
MAPS = ("drawn", "network grid (before)", "density (rejected)", "even per cell (rejected)", "shuffled sham")


def pool_items(world: Path, images: int, seed: int = 0) -> tuple[list, list]:
    """On each of `images` distinct pool images (seeded): one of the world's pool questions, and one of its
    questions about one object (for images that have one)."""
    items = load_items(world, max_items=None, split="pool")
    by_image: dict[str, list] = {}
    for it in items:
        by_image.setdefault(it.image_filename, []).append(it)
    rng = random.Random(seed)
    names = sorted(by_image)
    rng.shuffle(names)
    if len(names) < images:
        raise ValueError(f"{world} has {len(names)} pool images, fewer than --images {images}")
    any_question = [rng.choice(by_image[name]) for name in names[:images]]
    one_object = [[it for it in by_image[name] if asked_object(it) is not None] for name in names[:images]]
    return any_question, [rng.choice(found) for found in one_object if found]


def payloads(outputs: list, which: str) -> list[dict]:
    """The attention payloads with `which` map as their grid: the agent's drawn one; the network's grid (the
    board's map before issue 52); the alternatives measured against the shipped map (each proposal's weight
    spread evenly over its mask's pixels, as a density at the image's resolution, or summed per cell of the
    same grid); or each image's neighbour's drawn map (the shuffled sham: a map that knows nothing of it)."""
    found = [{"kind": "attention", "payload": attention_payload(o)} for o in outputs]
    for f, o in zip(found, outputs):
        if which == "network grid (before)":
            f["payload"]["grid"] = np.asarray(o.network_attention, float)
        elif which in ("density (rejected)", "even per cell (rejected)"):
            density = attribution_map(f["payload"], o.proposals[0].mask.shape, "objects") if o.proposals else None
            if density is None or not density.sum() > 0:
                continue
            if which == "even per cell (rejected)":
                shape = grid_shape(*density.shape)
                density = np.bincount(cell_of_pixel(*density.shape), weights=density.ravel(),
                                      minlength=shape[0] * shape[1]).reshape(shape)
            f["payload"]["grid"] = density
    return found[1:] + found[:1] if which == "shuffled sham" else found


def measure(agent_name: str, items: list, one_object: list, log=print) -> dict:
    from vqa_agent.loading import load_agent
    agent = load_agent(agent_name)
    result = {}
    asked = {"world questions": items, "world, one object": one_object,
             # the mix's questions have no program here: no one-object question among them
             **{k: [replace(it, question=q, program=[]) for it in items] for k, q in MIX.items()}}
    for kind, scored in asked.items():
        started = time.perf_counter()
        outputs = agent.answer([it.image for it in scored], [it.question for it in scored])
        result[kind] = {which: drawn_on_objects(payloads(outputs, which), scored, "grid") for which in MAPS
                        if which != "network grid (before)" or getattr(outputs[0], "network_attention", None) is not None}
        log(f"{agent_name} {kind}: {time.perf_counter() - started:.1f} s")
    return result


def table(results: dict) -> str:
    lines = ["| agent | questions | map | mass on objects % | uniform % | peak on an object % | one-object: peak on it % |",
             "|---|---|---|---:|---:|---:|---:|"]
    for agent, kinds in results.items():
        for kind, maps in kinds.items():
            for which, r in maps.items():
                one = r["one_object"]
                lines.append(f"| {agent} | {kind} | {which} | {r['mass_on_objects']:.1f} | {r['uniform_on_objects']:.1f} | "
                             f"{r['peak_on_an_object']:.1f} | "
                             + (f"{one['peak_on_it']:.1f} (n={one['n']})" if one["n"] else "") + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--world", type=Path, default=Path("data/game-world"))
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--agents", default="weak,medium,strong", help="comma-separated agent names (hf:PATH too)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    from vqa_agent.threads import pin_threads
    pin_threads(2)
    items, one_object = pool_items(args.world, args.images, args.seed)
    results = {name: measure(name, items, one_object) for name in args.agents.split(",") if name}
    print(table(results))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"world": str(args.world), "images": args.images, "seed": args.seed,
                                         "mix": MIX, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
