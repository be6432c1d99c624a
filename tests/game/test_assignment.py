"""Blocked randomization (game/assignment.py): the sequence is a function of the study's seed, arms and
order; it stays balanced at every moment over 1,000 arrivals, arm by arm and arm by order; arms do not
drift with arrival time; a dropout's slot is dealt again before a new one."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import scipy.stats

from game.assignment import ORDERS, block_size, next_slot, slot, slots
from game.study import StudyConfig, fixed_order, study_slot, with_explanations

ARMS = ("none", "attention", "relqa", "both")
ARRIVALS = 1_000
SEED = 20_240_601


def spread(counts: Counter, keys) -> int:
    return max(counts[k] for k in keys) - min(counts[k] for k in keys)


def test_the_sequence_is_a_pure_function_of_seed_arms_and_order():
    first = slots(SEED, ARMS, "counterbalanced", 40)
    assert slots(SEED, ARMS, "counterbalanced", 40) == first
    assert slot(SEED, ARMS, "counterbalanced", 37) == first[37]          # any slot alone, without the others
    assert slots(SEED + 1, ARMS, "counterbalanced", 40) != first
    for block in range(5):          # every block holds every arm once with each order
        cells = [(s.arm, s.order) for s in first[8 * block:8 * block + 8]]
        assert sorted(cells) == sorted((arm, order) for arm in ARMS for order in ("abab", "baba"))
        assert {s.block for s in first[8 * block:8 * block + 8]} == {block}
    for order in ("abab", "baba"):
        fixed = slots(SEED, ARMS, order, 12)
        assert block_size(ARMS, order) == 4 and {s.order for s in fixed} == {order}
        assert all(sorted(s.arm for s in fixed[i:i + 4]) == sorted(ARMS) for i in (0, 4, 8))
    assert {s.order for s in slots(SEED, ("both",), None, 6)} == {None}      # at-will: no order
    study = StudyConfig("s", arms=ARMS, seed=SEED)
    assert study.order == "counterbalanced" and study_slot(study, 9) == first[9]
    at_will = StudyConfig("aw", kind="at-will", arms=("both",), sessions=1, seed=SEED)
    assert study_slot(at_will, 0).order is None and study_slot(at_will, 0).arm == "both"


@pytest.mark.parametrize("order", ["abab", "counterbalanced"])
def test_1000_arrivals_are_balanced_at_every_moment_and_over_arrival_time(order):
    arms, cells = Counter(), Counter()
    dealt: list = []
    for _ in range(ARRIVALS):
        number = next_slot(len(dealt), set(range(len(dealt))))      # nobody drops out
        dealt.append(slot(SEED, ARMS, order, number))
        arms[dealt[-1].arm] += 1
        cells[dealt[-1].arm, dealt[-1].order] += 1
        assert spread(arms, ARMS) <= 1
        if order == "counterbalanced":
            assert spread(cells, [(a, o) for a in ARMS for o in ("abab", "baba")]) <= 1
    assert [s.number for s in dealt] == list(range(ARRIVALS))
    # arm vs arrival quarter: a chi-square test of independence does not reject
    quarters = np.zeros((4, len(ARMS)))
    for k, s in enumerate(dealt):
        quarters[4 * k // ARRIVALS, ARMS.index(s.arm)] += 1
    chi2, p, dof, _ = scipy.stats.chi2_contingency(quarters, correction=False)
    assert dof == 9 and p > 0.05
    if order == "counterbalanced":     # half of each arm starts with explanations
        assert all(cells[arm, "abab"] == cells[arm, "baba"] for arm in ARMS)


def test_a_dropouts_slot_is_dealt_again_before_a_new_one():
    assert next_slot(0, set()) == 0
    assert next_slot(5, {0, 1, 2, 3, 4}) == 5
    assert next_slot(5, {0, 1, 3}) == 2             # the lowest slot nobody holds
    rng = np.random.default_rng(0)
    holders: dict[int, int] = {}                    # slot -> arrivals holding it now
    for arrival in range(400):
        if holders and rng.random() < 0.2:          # someone drops out before this arrival
            gone = int(rng.choice(list(holders)))
            holders[gone] -= 1
        dealt = max(holders, default=-1) + 1
        number = next_slot(dealt, {k for k, n in holders.items() if n > 0})
        holders[number] = holders.get(number, 0) + 1
        assert sorted(k for k, n in holders.items() if n > 0) == list(range(len(holders)))   # no gap stays open
        arms = Counter(slot(SEED, ARMS, "abab", k).arm for k, n in holders.items() if n > 0)
        assert spread(arms, ARMS) <= 1


def test_an_unknown_order_or_seed_is_refused_with_one_line():
    with pytest.raises(ValueError, match=r"^order must be abab, baba or counterbalanced, got 'abba'$"):
        StudyConfig("s", order="abba")
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        StudyConfig.from_dict({"study_id": "s", "seed": -1})
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        StudyConfig.from_dict({"study_id": "s", "seed": "42"})
    assert StudyConfig.from_dict({"study_id": "s", "order": "baba", "seed": 7}).to_dict()["seed"] == 7
    with pytest.raises(ValueError, match="order must be"):
        slot(SEED, ARMS, "aabb", 0)
    assert set(ORDERS) == {"abab", "baba", "counterbalanced"}


def test_a_named_arm_plays_the_studys_fixed_order_or_the_papers():
    assert fixed_order(StudyConfig("s", order="baba")) == "baba"
    assert fixed_order(StudyConfig("s")) == "abab"                 # counterbalanced: demos play the paper's
    assert fixed_order(StudyConfig("aw", kind="at-will", arms=("both",), sessions=1)) is None
    study = StudyConfig("s", games_per_session=1)
    assert [with_explanations(study, "both", g, "baba") for g in range(4)] == [True, False, True, False]
