"""The agent's own question-guided attention: the spatial grid (drawn as a heatmap over the image) and
the weight of each object proposal (drawn as its outline). Nothing is computed beyond what the agent
already produced; masks travel as run-lengths so that the browser can draw exact outlines."""
from __future__ import annotations

import numpy as np

from .base import Explainer, ExplanationRequest


def mask_to_rle(mask: np.ndarray) -> dict:
    """Row-major run-lengths of a boolean mask, starting with a run of False (possibly empty):
    {"size": [height, width], "counts": [n_false, n_true, n_false, ...]}."""
    flat = np.asarray(mask, bool).ravel()
    changes = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    bounds = np.concatenate([[0], changes, [flat.size]])
    counts = np.diff(bounds).tolist()
    if flat.size and flat[0]:
        counts = [0] + counts
    return {"size": list(mask.shape), "counts": counts}


def rle_to_mask(rle: dict) -> np.ndarray:
    values = np.zeros(sum(rle["counts"]), bool)
    position = 0
    for i, count in enumerate(rle["counts"]):
        if i % 2:
            values[position:position + count] = True
        position += count
    return values.reshape(rle["size"])


class AttentionExplainer(Explainer):
    name = "attention"
    kind = "attention"

    def payloads(self, requests: list[ExplanationRequest]) -> list[dict]:
        return [attention_payload(r.output) for r in requests]


def attention_payload(output) -> dict:
    return {
        "grid": output.spatial_attention.astype(float).round(5).tolist(),   # rows x columns, sums to 1
        "objects": [{"box": [round(v, 1) for v in p.box], "weight": round(p.attention, 5),
                     "mask": mask_to_rle(p.mask)} for p in output.proposals],
    }
