"""Whose effect the registrable primary estimates (issue 54): the participants' average direct effect, counted by each
slot's first holder, robust to learning carried over from a block with explanations and to leaving after a lost
block; the total effect beside it sees the learning. Simulated crowds (experiments/simulate/crowd.py), fixed seeds;
the rates over hundreds of studies are benchmarks (experiments/benchmark/null_calibration.py), not tests."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from experiments.analysis.controlled import after_explanations, crossover, first_holders, total_effect
from experiments.analysis.frames import _first_holders
from experiments.analysis.random_intercept import block_cells, random_intercept_estimate, random_intercept_test
from experiments.simulate.crowd import Crowd, crowd_study, report_tests

CARRYOVER = Crowd(order="counterbalanced", practice=0.3, carryover=1.5)


def _by_name(tests: list[dict]) -> dict[str, dict]:
    return {t["name"]: t for t in tests}


def _mean_over_studies(crowd: Crowd, name: str, key: str = "estimate", studies: int = 6, size: int = 40) -> float:
    return float(np.mean([_by_name(report_tests(crowd_study(np.random.default_rng(seed), crowd, size)))[name][key]
                          for seed in range(studies)]))


def test_learning_carried_over_is_not_read_as_explanations_hurting():
    # no direct effect, a large lasting gain after the first block with explanations: the old game-level fit
    # (the completers row) reads it as harm; the primary's carryover term takes it out
    primary = _mean_over_studies(CARRYOVER, "table1.overall")
    assert abs(primary) < 0.03
    games = crowd_study(np.random.default_rng(0), CARRYOVER, 40)
    effect = crossover(games[games["expl_arm"] == 1], games[games["expl_arm"] == 0])
    assert effect["completers"]["win_rate"] < -0.04 < effect["win_rate"]


def test_the_total_effect_sees_the_learning_the_direct_effect_leaves_out():
    learned = _mean_over_studies(CARRYOVER, "total_effect", studies=8, size=64)
    none = _mean_over_studies(Crowd(order="counterbalanced", practice=0.3), "total_effect", studies=8, size=64)
    assert learned > 0.04 and abs(none) < 0.03
    total = total_effect(crowd_study(np.random.default_rng(1), CARRYOVER, 64))
    assert total["claim"] == "effect" and 0 <= total["p_value"] <= 1 and "first holder" in total["definition"]


def test_leaving_after_a_lost_block_with_explanations_does_not_make_them_look_good():
    crowd = Crowd(order="counterbalanced", practice=0.3, outcome_dropout=1.0, refills=True)
    games = crowd_study(np.random.default_rng(2), crowd, 40)
    assert (games["first_holder"] == 0).any()                # slots were dealt again
    assert abs(_mean_over_studies(crowd, "table1.overall")) < 0.03


def test_a_real_effect_is_found_and_its_size_recovered():
    tests = _by_name(report_tests(crowd_study(np.random.default_rng(3), Crowd(order="counterbalanced", practice=0.3,
                                                                               dropout=0.1), 64, lift=0.2)))
    assert tests["table1.overall"]["p_value"] < 0.01
    assert 0.08 < tests["table1.overall"]["estimate"] < 0.3


def test_each_block_of_each_participant_weighs_the_same():
    # one participant with 1 game in a block and another with 9: the block's cell is their own win rate
    games = pd.DataFrame({"cluster": ["a"] * 10, "block": [1.0] * 1 + [2.0] * 9, "won": [1.0] + [0.0] * 9,
                          "score": [5.0] + [0.0] * 9, "shows": [0.0] + [1.0] * 9})
    cells = block_cells(games, ["shows"])
    assert cells["won"].tolist() == [1.0, 0.0] and cells["games"].tolist() == [1, 9]


def test_carryover_is_the_blocks_after_the_first_with_explanations():
    games = pd.DataFrame({"cluster": ["abab"] * 4 + ["baba"] * 4 + ["none"] * 2,
                          "block": [1.0, 2, 3, 4] * 2 + [1.0, 2], "shows": [0, 1, 0, 1, 1, 0, 1, 0, 0, 0]})
    assert after_explanations(games).tolist() == [0, 0, 1, 1, 0, 1, 1, 1, 0, 0]


def test_first_holders_come_from_the_assignments_refilled_slot():
    games = pd.DataFrame({"cluster": ["s:p1", "s:p2", "s:p3"]})
    assignments = pd.DataFrame({"study": ["s"] * 3, "participant": ["p1", "p2", "p3"], "slot": [0, 1, 0],
                                "refilled_slot": [None, None, 0]})
    assert _first_holders(games, assignments).tolist() == [1.0, 1.0, 0.0]
    assert _first_holders(games, pd.DataFrame()).tolist() == [1.0, 1.0, 1.0]
    assert first_holders(games.assign(first_holder=[1.0, 0.0, 1.0]))["cluster"].tolist() == ["s:p1", "s:p3"]


def test_the_random_intercept_fit_and_its_test_agree_and_refuse_what_cannot_be_told():
    games = crowd_study(np.random.default_rng(4), Crowd(order="counterbalanced"), 24, lift=0.1)
    cells = block_cells(games, ["shows"])
    tested = random_intercept_test(cells, ["shows"], "shows")
    assert tested.estimate == pytest.approx(random_intercept_estimate(cells, ["shows"], "shows"))
    assert isinstance(random_intercept_test(cells.head(3), ["shows"], "shows"), str)


def test_the_carryover_check_is_an_association_beside_the_first_period():
    tests = _by_name(report_tests(crowd_study(np.random.default_rng(5), CARRYOVER, 40)))
    check = tests["order.carryover_check"]
    assert check["claim"] == "association" and check["p_value"] is not None
    assert tests["order.first_period"]["claim"] == "effect"
    assert "carryover" in " ".join(tests["table1.overall"]["assumptions"])
    assert "total effect" in tests["total_effect"]["estimand"]


def test_cr2_agrees_with_the_sandwich_when_participants_are_many_and_refuses_when_few():
    from experiments.analysis.small_sample import cr2_test
    from experiments.analysis.wild_bootstrap import wild_cluster_test
    rng = np.random.default_rng(0)
    clusters = np.repeat(np.arange(200), 4)
    x = rng.integers(0, 2, len(clusters)).astype(float)
    y = 0.3 * x + rng.normal(0, 1, 200)[clusters] + rng.normal(0, 1, len(clusters))
    X = np.column_stack([x, np.ones_like(x)])
    many = cr2_test(y, X, clusters, 0)
    sandwich = wild_cluster_test(y, X, clusters, 0)        # CR1 and a t with G - 1 df at this size
    assert many.estimate == pytest.approx(sandwich.estimate)
    assert many.se == pytest.approx(sandwich.se, rel=0.05) and many.p_value < 1e-3 and "Bell-McCaffrey" in many.method
    assert isinstance(cr2_test(y[:12], X[:12], clusters[:12], 0), str)          # 3 participants: no test


def test_cr2_degrees_of_freedom_shrink_with_few_unbalanced_participants():
    from experiments.analysis.small_sample import cr2_test
    rng = np.random.default_rng(1)
    clusters = np.repeat(np.arange(8), 4)
    treated = (clusters < 2).astype(float)                 # 2 treated participants of 8: few informative clusters
    y = rng.normal(0, 1, len(clusters))
    tested = cr2_test(y, np.column_stack([treated, np.ones_like(y)]), clusters, 0)
    dof = float(tested.method.split("(")[-1].rstrip(")"))
    assert 1 <= dof < 7                                    # well under G - 1 = 7
