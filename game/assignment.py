"""Randomized, balanced assignment: which arm, and in controlled studies which order, each newcomer gets.

A study's assignment is a sequence of slots, a pure function of (seed, arms, order): anyone who holds the
study's seed, arms and order (all in the export) recomputes every slot with `slot` or `slots`. The server
deals the slots in arrival order: `next_slot` says which number comes next, game/study.py's `study_slot` which
slot that is in a study's sequence (it reads the study's seed, arms and order, so this module needs no study).

Permuted blocks. The slots come in blocks; each block is drawn from the generator of (seed, block)
(game/seeding.py), so a block does not depend on how many were drawn before it:
- order "abab" or "baba": a block is a random permutation of the arms, and every participant plays that
  order ("abab": sessions without explanations first; "baba": with them first);
- order "counterbalanced": a block holds every arm once with each order, in two halves, each a random
  permutation of the arms; a fair coin per arm gives it its order in the first half, the other order in
  the second. So at every moment arm counts differ by at most one, and so do arm x order counts (a fully
  shuffled block of arms x orders could deal one arm twice before another once);
- at-will studies have no order (None): blocks are permutations of the arms.

Dropouts. A slot whose holders all dropped out (neither finished nor seen within the server's
dropout_after_s) is dealt again: the next arrival takes the lowest-numbered such slot before a new one, so
the arms stay balanced among those who play. A dropout who comes back keeps their arm; the slot then has
two holders, which the export shows.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .seeding import seeded_rng

ORDERS = ("abab", "baba", "counterbalanced")     # the study's option (game/study.py StudyConfig.order)
PLAYED = ("abab", "baba")                        # what one participant plays


@dataclass(frozen=True)
class Slot:
    number: int          # 0-based position in the study's sequence
    block: int           # 0-based block it belongs to
    arm: str
    order: str | None    # "abab" or "baba"; None in at-will studies


def block_size(arms: Sequence[str], order: str | None) -> int:
    return 2 * len(arms) if order == "counterbalanced" else len(arms)


def _block(seed: int, arms: Sequence[str], order: str | None, block: int) -> list[tuple[str, str | None]]:
    """The (arm, order) cells of one block, in the order they are dealt."""
    rng = seeded_rng(seed, "assignment", block)
    if order != "counterbalanced":
        return [(arms[i], order) for i in rng.permutation(len(arms))]
    first, second = rng.permutation(len(arms)), rng.permutation(len(arms))
    starts_with = rng.integers(0, 2, len(arms))         # per arm: 1 = its first-half participant plays baba
    return ([(arms[i], PLAYED[starts_with[i]]) for i in first]
            + [(arms[i], PLAYED[1 - starts_with[i]]) for i in second])


def slot(seed: int, arms: Sequence[str], order: str | None, number: int) -> Slot:
    """Slot `number` of the sequence of (seed, arms, order); order None: no order (at-will)."""
    if order is not None and order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    size = block_size(arms, order)
    block = number // size
    arm, played = _block(seed, arms, order, block)[number % size]
    return Slot(number, block, arm, played)


def slots(seed: int, arms: Sequence[str], order: str | None, n: int) -> list[Slot]:
    """The first n slots of the sequence."""
    return [slot(seed, arms, order, k) for k in range(n)]


def next_slot(dealt: int, held: set[int]) -> int:
    """The slot for the next arrival, when slots 0..dealt-1 were dealt and `held` are those with a holder
    who finished or is still playing: the lowest dealt slot nobody holds (its holders dropped out), else
    the next new one."""
    return next((k for k in range(dealt) if k not in held), dealt)
