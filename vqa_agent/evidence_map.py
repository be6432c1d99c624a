"""The spatial map the board draws over an image (AgentOutput.spatial_attention): where the agent's answer
came from, as the attention of the objects it read painted on a grid of cells over the image.

Why not the network's own spatial attention (VQAModel.reason's grid softmax): measured on 200 game-pool
images (issue 52, docs/results.md), it puts 4-38% of its mass on object pixels (0.0-0.8% for "what color is
the big shiny thing?", less than a uniform map's 8.9%), and peaks in the same empty band of background
whatever the image. The networks learned to use it as
a per-question register, not to look: their answers are read from the objects. The object attention picks
the proposals whose features and attribute beliefs the classifier reads, and a program's answer comes
from the proposals its trace used (symbolic.py, `evidence`). So each cell holds the attention weight of
the proposals whose masks cover it, in proportion to how much of the cell they cover, and the grid is
scaled to sum to 1. An object is as hot as its weight (the share its outline is labelled with), whatever
its size: spreading each weight evenly over its mask instead made a small object with little weight
hotter than a large one with more, and the peak missed the asked object more often (one-object questions,
weak agent: 63% against 66%; a per-pixel density: 29%). Measured beside it in docs/explainers.md: the network's grid, and the
per-pixel density.

The grid has EVIDENCE_COLUMNS columns (4x4 pixels of the medium agent's 160x120 input, 8x8 of a 320x240
render): fine enough that a cell of an object's edge holds mostly that object (>= 80% of the map's mass on
object pixels as the board interpolates it), coarse enough to travel as 1,200 bytes an image.

Masks are laid over cells once per image (CellShares, kept with what the agent knows of the image); a
question's map is then one weighted sum over a few hundred entries.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EVIDENCE_COLUMNS = 40


def grid_shape(height: int, width: int) -> tuple[int, int]:
    """Rows and columns of the evidence grid over masks of height x width pixels."""
    columns = min(EVIDENCE_COLUMNS, width)
    return max(1, min(height, round(columns * height / width))), columns


def cell_of_pixel(height: int, width: int) -> np.ndarray:
    """The flat index of the grid cell each pixel falls in, [height * width] row-major (cells split the
    pixels evenly, as explainers.attention.attribution_map spreads a grid back over the image)."""
    rows, columns = grid_shape(height, width)
    row = np.arange(height) * rows // height
    column = np.arange(width) * columns // width
    return (row[:, None] * columns + column[None, :]).ravel()


@dataclass(frozen=True)
class CellShares:
    """How much of each grid cell each proposal's mask covers: a sparse [K, rows * columns] matrix of
    fractions in [0, 1], as three parallel arrays of its nonzero entries."""
    shape: tuple[int, int]    # rows, columns
    owner: np.ndarray         # int16, the proposal of each entry
    cell: np.ndarray          # int32, its flat cell index
    share: np.ndarray         # float32, the fraction of that cell the proposal's mask covers

    @classmethod
    def of_masks(cls, masks: np.ndarray) -> "CellShares":
        """From boolean masks [K, height, width] (at any resolution: the model's input's is enough)."""
        k, height, width = masks.shape
        shape = grid_shape(height, width)
        cells = cell_of_pixel(height, width)
        area = np.bincount(cells, minlength=shape[0] * shape[1])
        counts = np.zeros((k, len(area)))
        for j in range(k):
            counts[j] = np.bincount(cells, weights=masks[j].ravel(), minlength=len(area))
        shares = counts / np.maximum(area, 1)
        owner, cell = np.nonzero(shares)
        return cls(shape, owner.astype(np.int16), cell.astype(np.int32), shares[owner, cell].astype(np.float32))

    def spread(self, weights) -> np.ndarray:
        """The grid [rows, columns] float32 of the proposals' `weights` painted on the cells they cover, scaled
        to sum to 1. Weights that sum to nothing (no proposal, or none attended) give a uniform grid: evidence
        found nowhere in particular, which the board draws as no heat (every cell equal)."""
        size = self.shape[0] * self.shape[1]
        grid = np.bincount(self.cell, weights=self.share * np.asarray(weights, np.float64)[self.owner], minlength=size)
        if not grid.sum() > 0:      # no proposal, none attended, or only masks without pixels
            return np.full(self.shape, 1 / size, np.float32)
        return (grid / grid.sum()).reshape(self.shape).astype(np.float32)
