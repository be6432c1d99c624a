"""`exag simulate power --difference D` (experiments/simulate/power_effect.py): the power of a study's registered
primary test from an explicit effect, counted in the registered direction, and the N to register."""
from __future__ import annotations

import json

import numpy as np
import pytest
from cli import exag

from experiments.simulate.crowd import Crowd
from experiments.simulate.power import default_primary, repeats_for
from experiments.simulate.power_effect import EffectPowerConfig, crowd_of, effect_power, format_effect_power
from game.study import StudyConfig

CONTROLLED = {"study_id": "p", "kind": "controlled", "order": "counterbalanced", "sessions": 4, "games_per_session": 5}


def test_the_command_writes_the_power_of_the_registered_primary_and_the_n_to_register(tmp_path):
    study = tmp_path / "study.json"
    study.write_text(json.dumps(CONTROLLED))
    ran = exag("simulate", "power", "--study", str(study), "--difference", "0.3", "--sizes", "8,24", "--repeats", "6",
               "--practice", "0.3", "--dropout", "0.1", "--processes", "1", "--out", str(tmp_path / "power"))
    assert ran.returncode == 0, ran.stderr
    report = json.loads((tmp_path / "power" / "power.json").read_text())
    assert report["primary"] == "overall" and report["test"] == "table1.overall"
    assert report["assumed"]["difference"] == 0.3 and "not a finding" in report["assumed"]["meaning"]
    assert [r["participants"] for r in report["rows"]] == [8, 24] and all(r["studies"] == 6 for r in report["rows"])
    assert report["rows"][1]["power"] >= report["rows"][0]["power"] and report["rows"][1]["power"] > 0.5
    assert (tmp_path / "power" / "power.csv").exists() and (tmp_path / "power" / "power.png").exists()
    assert "registered direction" in ran.stdout
    if report["participants_for_target"]:
        assert f"exag preregister --planned-n {report['participants_for_target']}" in ran.stdout


def test_significance_against_the_registered_direction_is_not_power(tmp_path):
    study = StudyConfig.from_dict(CONTROLLED)
    harm = effect_power(EffectPowerConfig(study=study, primary="overall", difference=-0.3, sizes=(24,), repeats=4,
                                          out=tmp_path / "harm", practice=0.0, dropout=0.0, progress=False))
    assert harm["rows"][0]["power"] > 0.5 and harm["rows"][0]["mean_estimate"] < 0     # direction: the sign of D


def test_primaries_and_crowds_follow_the_study():
    abab = StudyConfig.from_dict({**CONTROLLED, "order": "abab"})
    assert default_primary(abab) == "net_of_practice"
    offer = StudyConfig.from_dict({"study_id": "o", "kind": "at-will", "arms": ["both"], "offer": "randomized"})
    assert default_primary(offer) == "offer"
    config = EffectPowerConfig(study=offer, primary="offer", difference=0.1, sizes=(8,), repeats=1, out=None, icc=0.4)
    crowd = crowd_of(config)
    assert crowd == Crowd(kind="at-will", arms=("both",), order="counterbalanced", sessions=4, games_per_session=5,
                          skill_sd=crowd.skill_sd, practice=0.15, dropout=0.1, offer=True)
    assert np.isclose(crowd.skill_sd, 1.48, atol=0.01)
    always = StudyConfig.from_dict({"study_id": "a", "kind": "at-will", "arms": ["both"]})
    with pytest.raises(ValueError, match="needs a randomized offer"):
        crowd_of(EffectPowerConfig(study=always, primary="offer", difference=0.1, sizes=(8,), repeats=1, out=None))


def test_too_few_simulated_studies_register_no_number_and_say_why(tmp_path):
    """Issue 55: "register N" from a handful of studies whose interval spans far below the target. 6 crowds a size
    reach 80% on the estimate, but no interval lies at or above 80%: nothing to register, and why, in the report and
    the printout."""
    study = tmp_path / "study.json"
    study.write_text(json.dumps(CONTROLLED))
    ran = exag("simulate", "power", "--study", str(study), "--difference", "0.3", "--sizes", "8,24", "--repeats", "6",
               "--processes", "1", "--out", str(tmp_path / "power"))
    assert ran.returncode == 0, ran.stderr
    report = json.loads((tmp_path / "power" / "power.json").read_text())
    assert report["participants_for_target_estimate"] is not None            # the estimate reaches 80% ...
    assert report["participants_for_target"] is None                          # ... the interval does not
    advice = report["recommendation"]
    assert advice["established"] is False and advice["repeats_for_precision"] == 246
    assert "not established" in advice["reason"] and "from 6 simulated studies" in advice["reason"]
    assert "--planned-n" not in ran.stdout
    assert "no number of participants to register: not established" in ran.stdout and "about 246" in ran.stdout


def test_the_power_states_what_it_assumes(tmp_path):
    study = StudyConfig.from_dict(CONTROLLED)
    report = effect_power(EffectPowerConfig(study=study, primary="overall", difference=0.1, sizes=(8,), repeats=3,
                                            out=tmp_path / "p", icc=0.3, practice=0.2, dropout=0.05, progress=False))
    said = report["assumptions"]
    assert set(said) == {"effect", "participants", "design", "test", "simulations"}
    assert "+10.0 points" in said["effect"] and "not a finding" in said["effect"]
    assert "correlation 0.3" in said["participants"] and "+0.2 log-odds a block" in said["participants"]
    assert "5% of the participants leave" in said["participants"]
    assert "order counterbalanced" in said["design"] and "4 sessions of 5 games" in said["design"]
    # the registered primary, as the analysis runs it: the random-intercept model of table1.overall
    assert "table1.overall" in said["test"] and "random intercept" in said["test"] and "alpha 0.05" in said["test"]
    assert "3 simulated crowds at each size (--repeats)" in said["simulations"] and "Wilson" in said["simulations"]
    printed = format_effect_power(report)
    assert all(f"ASSUMED {name}: {text}" in printed for name, text in said.items())


def test_the_repeats_follow_from_the_precision(tmp_path):
    assert repeats_for(0.05) == 246 and repeats_for(0.1) == 62 and repeats_for(0.2) == 16
    with pytest.raises(ValueError, match="precision"):
        repeats_for(0.0)
    study = StudyConfig.from_dict(CONTROLLED)
    report = effect_power(EffectPowerConfig(study=study, primary="overall", difference=0.3, sizes=(8,), repeats=None,
                                            precision=0.2, out=tmp_path / "p", progress=False))
    assert report["repeats"] == report["rows"][0]["studies"] == 16 and report["repeats_from"] == "--precision 0.2"
    low, high = report["rows"][0]["power_ci"]
    assert high - low < 2 * 0.2 + 0.05                  # about as wide as asked (Wilson, away from 80%: narrower)
