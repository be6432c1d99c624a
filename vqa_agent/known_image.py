"""KnownImage: an image its owner names for good, so an agent can find what it saw of it without its pixels.

Torch-free (a web process's game pool makes them; the inference workers hand them to the agent).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class KnownImage:
    """An image named for good (a game pool's image: the world and its file). VQAAgent finds what it saw of
    it by `key`, without reading or hashing its pixels, and calls `load` (-> HxWx3 uint8) only when it has
    not looked at it yet. The owner promises that one key always means the same pixels."""
    key: str
    load: Callable[[], np.ndarray] = field(compare=False, repr=False)
