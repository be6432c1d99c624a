"""Run-length encoding of boolean masks, the form in which masks travel (attention explanations, the
player's page) and in which an agent remembers an image's proposal masks for its outputs. Torch-free."""
from __future__ import annotations

import numpy as np


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
    counts = np.asarray(rle["counts"], dtype=np.int64)
    return np.repeat(np.arange(len(counts)) % 2 == 1, counts).reshape(rle["size"])
