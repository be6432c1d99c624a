"""Random generators that are a function of a seed and of who draws, never of when.

A seeded server (tests, simulations) draws each game's image set and names from the generator of (seed,
study, participant, game number). Participants who play at the same time then get the same games whatever
order their messages arrive in, as they would playing one after another; one generator shared by all of
them would hand out its draws in arrival order instead.

    rng = seeded_rng(3, "game", "pilot-1", "pid:ann", 0)    # the same generator for the same seed and who
"""
from __future__ import annotations

import hashlib

import numpy as np

WORDS_PER_PART = 4      # 128 bits of each part's digest: distinct parts never share a key in practice


def seeded_rng(seed: int, *who: str | int) -> np.random.Generator:
    """The generator of `who` (strings and integers, in order) under `seed` (a non-negative integer):
    the same for the same seed and who in any process, independent for different ones (NumPy's
    SeedSequence with `who` as its spawn key). Each part is hashed with blake2b, not Python's hash(),
    which differs between processes; repr keeps "3" and 3 apart."""
    key: list[int] = []
    for part in who:
        digest = hashlib.blake2b(repr(part).encode(), digest_size=4 * WORDS_PER_PART).digest()
        key += [int(w) for w in np.frombuffer(digest, dtype="<u4")]
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=tuple(key)))
