"""`exag simulate power`: fresh simulated studies at each size, in worker processes, analysed by Table 1."""
from __future__ import annotations

import csv
import json

import pytest

from experiments.simulate.power import (PowerConfig, format_power, participants_for, participants_interval, power,
                                       power_table, primary_rows, projected, recommendation)

STUDY = {"study_id": "pow", "kind": "controlled", "arms": ["none", "both"], "sessions": 4, "games_per_session": 1}


def test_power_table_and_participants_for_target():
    def study(size, overall_p, clustered_p):
        return {"participants": size, "tests": {"overall": {"difference": 0.1, "p_value": overall_p,
                                                            "p_value_clustered": clustered_p}}}
    studies = [study(10, 0.2, 0.3), study(10, 0.01, None), study(20, 0.01, 0.04), study(20, 0.001, 0.2),
               study(40, 0.01, 0.01), study(40, 0.02, 0.03)]
    rows = power_table(studies)
    naive = {r["participants"]: r["power"] for r in rows if r["test"] == "naive"}
    clustered = {r["participants"]: r for r in rows if r["test"] == "clustered"}
    assert naive == {10: 0.5, 20: 1.0, 40: 1.0}
    assert clustered[10]["power"] == 0.0 and clustered[10]["not_computed"] == 1 and clustered[40]["power"] == 1.0
    assert participants_for(rows, "overall", "naive", 0.8) == 10 + (0.8 - 0.5) / 0.5 * 10     # interpolated: 16
    assert participants_for(rows, "overall", "clustered", 0.8) == 20 + (0.8 - 0.5) / 0.5 * 20  # 32
    assert participants_for(rows, "overall", "naive", 0.4) == 10.0                          # reached at once
    assert participants_for(rows, "overall", "clustered", 1.01) is None                     # never


def test_the_participants_needed_come_with_an_interval_from_the_powers_wilson_bounds():
    from statsmodels.stats.proportion import proportion_confint

    def study(size, p):
        return {"participants": size, "tests": {"overall": {"difference": 0.1, "p_value": p, "p_value_clustered": p}}}
    # 20 studies a size: 4, 12 and 20 of them significant
    studies = [study(size, 0.01 if k < found else 0.5) for size, found in ((10, 4), (20, 12), (40, 20)) for k in range(20)]
    rows = power_table(studies)
    overall = {r["participants"]: r for r in rows if r["test"] == "clustered"}
    assert overall[20]["power"] == 0.6 and overall[20]["power_ci"] == pytest.approx(
        list(proportion_confint(12, 20, method="wilson")))
    low, high = participants_interval(rows, "overall", "clustered", 0.8)
    point = participants_for(rows, "overall", "clustered", 0.8)
    assert low < point < high                                   # 20 + (0.8 - 0.6) / 0.4 * 20 = 30 in between
    bounds = {size: overall[size]["power_ci"] for size in (10, 20, 40)}
    assert bounds[20][1] < 0.8 < bounds[40][1] and bounds[20][0] < 0.8 < bounds[40][0]
    assert low == pytest.approx(20 + (0.8 - bounds[20][1]) / (bounds[40][1] - bounds[20][1]) * 20)
    upper_20, lower_40 = bounds[20][1], bounds[40][0]
    assert high == pytest.approx(20 + (0.8 - overall[20]["power_ci"][0]) / (lower_40 - overall[20]["power_ci"][0]) * 20)


def test_participants_to_register_only_where_the_interval_reaches_the_target():
    """Issue 55: 'register N=80' from 20 simulated studies whose interval was 58-92%. The number to register is the
    smallest size whose power's 95% interval lies at or above the target; else none, with the interval and the
    repeats that would narrow it."""
    def found(size, hits, studies=20):
        return [(size, 0.01 if k < hits else 0.5, 0.1) for k in range(studies)]
    rows = primary_rows(found(40, 9) + found(80, 16), alpha=0.05, direction=1.0)
    assert [r["power"] for r in rows] == [0.45, 0.8]
    advice = recommendation(rows, target=0.8, precision=0.05)
    assert advice["participants"] is None and not advice["established"] and advice["repeats_for_precision"] == 246
    assert advice["reason"].startswith("not established: the interval at N=80 is 58-92% from 20 simulated studies")
    assert "about 246" in advice["reason"]
    # all 20 significant at 160: its interval (84-100%) lies above 80%, so 160 is established; 80 only estimated
    advice = recommendation(primary_rows(found(40, 9) + found(80, 16) + found(160, 20), 0.05, 1.0), 0.8, 0.05)
    assert advice["participants"] == 160 and advice["established"]
    assert "at N=160 the power's 95% interval is 84-100% from 20 simulated studies" in advice["reason"]
    assert "N=80 reaches 80% on its estimate" in advice["reason"]
    advice = recommendation(primary_rows(found(40, 9), 0.05, 1.0), 0.8, 0.05)
    assert advice["participants"] is None and "no size simulated reaches 80%" in advice["reason"]
    # significant the other way is no success; a p that could not be computed counts as not significant
    rows = primary_rows([(10, 0.01, -0.2), (10, 0.01, 0.2), (10, None, None)], 0.05, 1.0)
    assert rows[0]["significant_registered_direction"] == 1 and rows[0]["significant_any_direction"] == 2
    assert rows[0]["not_computed"] == 1 and rows[0]["power"] == pytest.approx(1 / 3)


def test_projected_participants_from_the_difference_and_its_spread():
    def study(size, difference):
        return {"participants": size, "tests": {"overall": {"difference": difference}, "relqa": {"difference": None}}}
    # per participant the difference spreads by sqrt(0.02 * 10) = sqrt(0.005 * 40) = 0.447; its mean, weighted by
    # participants, is 0.2: a z-test finds 0.2 / 0.447 with 80% power at ((1.96 + 0.84) / 0.447)^2 = 39.2 participants
    studies = [study(10, 0.1), study(10, 0.3), study(40, 0.15), study(40, 0.25)]
    found = projected(studies, "overall", alpha=0.05, target=0.8)
    assert found["mean_difference"] == pytest.approx(0.2) and found["sd_per_participant"] == pytest.approx(0.2 ** 0.5)
    assert found["standard_error"] == pytest.approx(0.2 ** 0.5 / 10) and found["studies"] == 4
    assert found["participants"] == 40.0
    assert projected(studies, "overall", alpha=0.05, target=0.9)["participants"] == 53.0     # 52.5 for 90%
    harm = [study(s["participants"], -s["tests"]["overall"]["difference"]) for s in studies]
    assert projected(harm, "overall")["participants"] == 40.0                               # either direction
    assert projected(studies, "relqa") is None                                  # no difference to project from
    assert projected([study(10, 0.1), study(20, 0.3)], "overall") is None       # one study a size: no spread
    assert projected([study(10, 0.0), study(10, 0.0)], "overall")["participants"] is None


def test_power_on_a_tiny_study(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path):
    path = tmp_path / "study.json"
    path.write_text(json.dumps(STUDY))
    out = tmp_path / "power"
    report = power(PowerConfig(study=path, sizes=(2, 4), repeats=2, out=out, players={"careful": 0.5, "hasty": 0.5},
                               world=agent_world, agent=str(tiny_agent_dir), seed=0, processes=2, threads=2,
                               explainer_options={"relqa": {"min_bank": 50}, "nle": {"model": str(tiny_nle_dir)}},
                               progress=False))
    written = json.loads((out / "power.json").read_text())
    assert {"study", "sizes", "repeats", "alpha", "target", "method", "tests", "power", "participants_for_target",
            "cost", "errors", "studies"} <= set(written)
    assert written["errors"] == [] and len(written["studies"]) == 4
    assert sorted((s["participants"], s["repeat"]) for s in written["studies"]) == [(2, 0), (2, 1), (4, 0), (4, 1)]
    assert all(s["games"] == s["participants"] * 4 for s in written["studies"])
    assert written["cost"]["games"] == (2 + 4) * 2 * 4 and "no resampling" in written["method"]
    modes = {r["mode"] for r in written["power"]}
    assert "overall" in modes and "both" in modes
    assert {r["participants"] for r in written["power"]} == {2, 4} and {r["test"] for r in written["power"]} == \
        {"naive", "clustered"}
    assert all(0.0 <= r["power"] <= 1.0 and r["studies"] == 2 for r in written["power"])
    assert set(written["participants_for_target"]["overall"]) == {"naive", "clustered"}
    assert set(written["projected"]) == modes and written["projected"]["overall"]["studies"] == 4
    with open(out / "power.csv") as f:
        assert len(list(csv.DictReader(f))) == len(written["power"])
    assert (out / "power.png").stat().st_size > 1000 and (out / "power.svg").is_file()
    assert report["cost"]["games"] == written["cost"]["games"]
    # the participants to register rest on the registered primary (the random-intercept table1.overall of a
    # counterbalanced study), not on Table 1's pooled p-values; 2 studies a size establish nothing
    assert written["primary"]["name"] == "overall" and written["primary"]["test"] == "table1.overall"
    assert all(set(s["primary"]) == {"p_value", "estimate", "about"} for s in written["studies"])
    assert [r["studies"] for r in written["primary"]["rows"]] == [2, 2]
    assert written["participants_to_register"] is None and not written["recommendation"]["established"]
    assert written["repeats"] == 2 and written["repeats_from"] == "--repeats" and written["precision"] == 0.05
    said = written["assumptions"]
    assert set(said) == {"effect", "participants", "design", "test", "simulations"}
    assert said["effect"].startswith("ASSUMED effect of explanations") and "careful" in said["participants"]
    assert "table1.overall" in said["test"] and "alpha 0.05" in said["test"]
    assert said["simulations"].startswith("2 simulated studies at each size (--repeats)")
    printed = format_power(written)
    assert said["effect"] in printed and f"ASSUMED test: {said['test']}" in printed
    assert "no number of participants to register: not established" in printed
