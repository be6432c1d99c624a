"""`exag simulate power`: fresh simulated studies at each size, in worker processes, analysed by Table 1."""
from __future__ import annotations

import csv
import json

import pytest

from experiments.simulate.power import PowerConfig, participants_for, participants_interval, power, power_table, projected

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
