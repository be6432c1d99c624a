"""The agent's own question-guided attention: the spatial grid (drawn as a heatmap over the image) and
the weight of each object proposal (drawn as its outline). The grid is the agent's evidence map
(vqa_agent/evidence_map.py for the shipped agents, the model's own attention for hf: agents). Nothing is
computed beyond what the agent already produced; masks travel as run-lengths so that the browser can
draw exact outlines."""
from __future__ import annotations

import numpy as np

from vqa_agent.run_lengths import mask_to_rle, rle_to_mask

from .base import Explainer, ExplanationRequest

__all__ = ["AttentionExplainer", "attention_payload", "attribution_map", "drawn_grid", "mask_to_rle", "rle_to_mask"]


ATTRIBUTION_SOURCES = ("auto", "objects", "grid")


def attribution_map(payload: dict, shape: tuple[int, int], source: str = "auto") -> np.ndarray:
    """An attention payload as attention mass per pixel, float64 of `shape` (the image's height, width):
    each attended proposal's weight spread evenly over its mask's pixels, or the grid as the board draws
    it. The map sums to the attention shown, so its mass on a region is the share of attention on that
    region.
    `source`: "objects", "grid", or "auto": the object attention when some proposal with pixels is
    attended, else the grid (object attention is what the page labels with shares, and the grid is what
    is left for a payload without proposals: explainers/grading.py grades by the same rule). The grid is
    spread as the board draws it (drawn_grid), its total kept."""
    if source not in ATTRIBUTION_SOURCES:
        raise ValueError(f"source must be one of {', '.join(ATTRIBUTION_SOURCES)}, got {source!r}")
    height, width = shape
    if source != "grid":
        mass = np.zeros(shape)
        for o in payload.get("objects", []):
            if o["weight"] <= 0:
                continue
            mask = rle_to_mask(o["mask"])
            if mask.shape != tuple(shape):
                raise ValueError(f"attention mask {mask.shape} does not match the image {tuple(shape)}")
            if mask.any():
                mass[mask] += o["weight"] / mask.sum()
        if source == "objects" or mass.any():
            return mass
    grid = np.asarray(payload["grid"], float)
    if grid.ndim != 2 or grid.shape[0] > height or grid.shape[1] > width:
        raise ValueError(f"attention grid of shape {grid.shape} cannot be spread over an image of {tuple(shape)}")
    drawn = drawn_grid(grid, height, width)
    total = drawn.sum()
    return drawn * (grid.sum() / total) if total > 0 else drawn


def drawn_grid(grid: np.ndarray, height: int, width: int) -> np.ndarray:
    """The grid as the board draws it over an image of height x width pixels (frontend/js/explanations/
    attention.js paintHeat): interpolated bilinearly between cell centres, clamped at the borders. So the
    measures of a map (localisation, grading, the attention-moved test) are of what players see."""
    rows, columns = grid.shape

    def axis(size: int, cells: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        at = np.clip((np.arange(size) + 0.5) * cells / size - 0.5, 0, cells - 1)
        low = np.floor(at).astype(int)
        return low, np.minimum(low + 1, cells - 1), at - low

    r0, r1, fy = axis(height, rows)
    c0, c1, fx = axis(width, columns)
    top = grid[r0][:, c0] * (1 - fx) + grid[r0][:, c1] * fx
    bottom = grid[r1][:, c0] * (1 - fx) + grid[r1][:, c1] * fx
    return np.maximum(top * (1 - fy[:, None]) + bottom * fy[:, None], 0)


class AttentionExplainer(Explainer):
    name = "attention"
    kind = "attention"
    cacheable = True
    # proposals are drawn when the agent has them; without them (an hf: agent) the grid alone is the
    # payload, and attribution_map and the grading read the grid by the same rule
    requires = frozenset({"attention"})

    def payloads(self, requests: list[ExplanationRequest]) -> list[dict]:
        return [attention_payload(r.output) for r in requests]


def attention_payload(output) -> dict:
    return {
        "grid": output.spatial_attention.astype(float).round(5),   # rows x columns, sums to 1 (json_safe: lists)
        "objects": [{"box": [round(v, 1) for v in p.box], "weight": round(p.attention, 5),
                     "mask": p.rle if p.rle is not None else mask_to_rle(p.mask)} for p in output.proposals],
    }
