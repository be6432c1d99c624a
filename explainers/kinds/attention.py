"""Kind "attention": where the agent looked. Drawn by frontend/js/explanations/attention.js as a heatmap
over the image and the outline of every object proposal with its share of the attention.

Payload (as an explainer makes it): {"grid": rows x columns of weights >= 0 over the image,
"objects": [{"box": [x1, y1, x2, y2] in image pixels, "weight": share of the attention in [0, 1],
"mask": {"size": [height, width], "counts": row-major run lengths [n_false, n_true, ...]}}]}.

The player gets the grid as shares of its largest cell in whole percent (the heatmap draws value / max),
packed as one byte a cell; boxes in whole pixels, weights in whole percent (the labels); masks exact
(their outlines are drawn) but packed as text (packing.py). A simulated participant reads how much of the
attention lies on the objects the question is about (`reading`).
"""
from __future__ import annotations

import numpy as np

from vqa_agent.world.scene import Scene

from . import fields
from .packing import pack_counts, pack_grid
from .precision import share
from .seen import matching

KIND = "attention"


def check(payload: dict) -> None:
    grid = fields.items(fields.field(payload, "", "grid"), "['grid']")
    fields.need(bool(grid) and all(isinstance(row, list) and len(row) == len(grid[0]) > 0 for row in grid),
                "['grid']", "a non-empty list of rows of equal length", grid)
    for r, row in enumerate(grid):
        for c, value in enumerate(row):
            fields.number(value, f"['grid'][{r}][{c}]", low=0)
    for k, o in enumerate(fields.items(fields.field(payload, "", "objects"), "['objects']")):
        where = f"['objects'][{k}]"
        box = fields.items(fields.field(o, where, "box"), where + "['box']")
        fields.need(len(box) == 4, where + "['box']", "[x1, y1, x2, y2]", box)
        for v in box:
            fields.number(v, where + "['box']")
        fields.number(fields.field(o, where, "weight"), where + "['weight']", 0, 1)
        mask = fields.field(o, where, "mask")
        size = fields.items(fields.field(mask, where + "['mask']", "size"), where + "['mask']['size']")
        counts = fields.items(fields.field(mask, where + "['mask']", "counts"), where + "['mask']['counts']")
        fields.need(len(size) == 2 and all(isinstance(v, int) and v > 0 for v in size), where + "['mask']['size']",
                    "[height, width]", size)
        fields.need(all(isinstance(v, int) and v >= 0 for v in counts) and sum(counts) == size[0] * size[1],
                    where + "['mask']['counts']", "run lengths (integers >= 0) that sum to height x width", counts)


def for_player(payload: dict) -> dict:
    grid = np.array(payload.get("grid") or [], dtype=float)        # a non-finite cell arrives as None: nan
    grid[~np.isfinite(grid)] = np.nan
    largest = np.nanmax(grid) if grid.size and not np.isnan(grid).all() else 0.0
    percent = np.zeros(grid.shape, np.uint8) if not largest > 0 else \
        np.rint(100 * np.nan_to_num(np.maximum(grid, 0.0)) / largest).astype(np.uint8)
    objects = [{"box": [int(round(v)) for v in o["box"]], "weight": share(o["weight"]),
                "mask": {"size": list(o["mask"]["size"]), "rle": pack_counts(o["mask"]["counts"])}}
               for o in payload.get("objects", [])]
    return {"grid": pack_grid(percent), "objects": objects}


def attention_on_target(payload: dict, scene: Scene, targets: list[dict[str, str]]) -> float | None:
    """How well the agent's object attention covers the objects the question is about (those with any of
    the `targets`' attributes: "more cubes than balls" is about the cubes and the balls): the share of
    its attention on them, times the share of them it looked at (each got at least half of an even share
    of attention). A person checks both: "it looked at the red things" and "it looked at all of them"
    (a count that missed one shows as an object left dark). Each attended box goes to the perceived
    object whose centre is nearest the box centre. None when the image has no such object or the payload
    no attended object, so nothing can be checked."""
    relevant = sorted({i for target in targets for i in matching(scene, target)})
    objects = [o for o in payload.get("objects", []) if (o.get("weight") or 0) > 0]
    if not relevant or not objects or not scene.objects:
        return None
    centres = np.array([o.pixel_coords[:2] for o in scene.objects], float)
    weights = np.zeros(len(scene.objects))
    for o in objects:
        x1, y1, x2, y2 = o["box"]
        nearest = int(np.argmin(np.hypot(centres[:, 0] - (x1 + x2) / 2, centres[:, 1] - (y1 + y2) / 2)))
        weights[nearest] += o["weight"]
    if weights.sum() <= 0:
        return None
    weights = weights / weights.sum()
    on_target = float(weights[relevant].sum())
    looked_at = float(np.mean(weights[relevant] >= 0.5 / len(scene.objects)))
    return on_target * looked_at


def reading(payload: dict, scene: Scene, targets: list[dict[str, str]]) -> float | None:
    return attention_on_target(payload, scene, targets)
