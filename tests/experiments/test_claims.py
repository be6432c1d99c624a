"""Issue 43: every test the report prints is listed with what it claims, and the tests that claim an effect are the
ones the design randomized, tested so that practice, order, dropout and self-selection cannot make them.

Studies here are simulated crowds (experiments/simulate/crowd.py) at the level the analysis reads; how often each
test errs on many of them is the null calibration's job (docs/results.md), these check each piece's logic."""
from __future__ import annotations

import json

import numpy as np
import pytest

from experiments.analysis.claims import ASSOCIATION, EFFECT, P_KEY, listed_tests
from experiments.analysis.data import Tables
from experiments.analysis.html import render_html
from experiments.analysis.report import analyze
from experiments.simulate.crowd import Crowd, crowd_study, icc_skill_sd, report_tests, shift
from game.export import tables as export_tables
from test_analysis import rated_log


def _tests(games) -> dict[str, dict]:
    return {t["name"]: t for t in report_tests(games)}


def _p_values(value, found: list) -> list:
    """Every p-value in a JSON value (claims.P_KEY), as the report holds them."""
    if isinstance(value, dict):
        for key, item in value.items():
            if P_KEY.match(key) and (item is None or isinstance(item, (int, float))) and not isinstance(item, bool):
                found.append(item)
            else:
                _p_values(item, found)
    elif isinstance(value, list):
        for item in value:
            _p_values(item, found)
    return found


def test_every_p_value_of_a_whole_report_is_listed_once_with_a_claim():
    report = analyze(Tables.from_frames(export_tables(rated_log(with_raters=True).events), "rated log"))
    for study, section in report["studies"].items():
        sections = {k: v for k, v in section.items() if k not in ("tests", "benchmarks", "paper")}
        listed = section["tests"]
        assert len(listed) == len(_p_values(sections, [])) > 10, study
        names = [t["name"] for t in listed]
        assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]
        for test in listed:
            assert test["claim"] in (EFFECT, ASSOCIATION) and test["unit"] and test["path"]
            assert set(test) >= {"name", "p_value", "estimate", "claim", "unit", "calibrated_under", "role"}
        # the figures group rounds by the player's rating or by graded explanations: associations, never effects
        assert all(t["claim"] == ASSOCIATION for t in listed if t["name"].startswith(("fig7", "fig8", "fig9", "fig10")))
        assert any(t["name"].startswith("fig7.") and t["name"].endswith("_vs_baseline") for t in listed)
    assert report["tests"] and json.dumps(report["tests"], allow_nan=False)
    page = render_html(report, [])
    assert "Every test on this page and what it claims" in page
    assert page.count('class="claim association"') >= len([t for t in report["tests"] if t["p_value"] is not None])


def test_a_counterbalanced_study_offers_the_effect_test_and_finds_a_real_effect():
    crowd = Crowd(order="counterbalanced", practice=0.3, dropout=0.1)
    tests = _tests(crowd_study(np.random.default_rng(3), crowd, 64, lift=0.2))
    overall = tests["table1.overall"]
    assert overall["claim"] == EFFECT and overall["p_value"] < 0.01 and 0.1 < overall["estimate"] < 0.3
    assert tests["net_of_practice"]["claim"] == EFFECT and tests["order.first_period"]["claim"] == EFFECT
    # the pooled game-level comparisons and the paper's z-test are associations
    for name in ("table1.overall.z_test", "table1.overall.pooled", "table1.overall.paired",
                 "table1.overall_inc_none.relabel", "order.with_vs_without", "control_group.paired"):
        assert tests[name]["claim"] == ASSOCIATION, name
    assert tests["table1.overall"]["calibrated_under"]


def test_practice_alone_is_not_an_effect_in_a_counterbalanced_study_but_confounds_an_abab_one():
    practice = dict(practice=0.6, dropout=0.15)     # strong practice: 12 points from block 1 to block 2
    counterbalanced = _tests(crowd_study(np.random.default_rng(5), Crowd(order="counterbalanced", **practice), 64))
    assert counterbalanced["table1.overall"]["p_value"] > 0.05
    abab = crowd_study(np.random.default_rng(5), Crowd(order="abab", **practice), 64)
    tests = _tests(abab)
    # under one order the effect test is not offered: with explanations is later, practice and explanations coincide
    assert tests["table1.overall"]["p_value"] is None
    assert tests["table1.overall.paired"]["p_value"] < 0.05 and tests["table1.overall.paired"]["claim"] == ASSOCIATION
    from experiments.analysis.controlled import controlled
    row = next(r for r in controlled(_frames(abab))["table1"] if r["mode"] == "overall")
    assert "not offered" in row["effect"]["note"] and "counterbalanced" in row["effect"]["note"]


def _frames(games):
    from experiments.analysis.frames import Frames
    empty = games.iloc[0:0]
    return Frames(games=games, ratings=empty, items=empty, rater=empty, rounds=empty,
                  kinds={games["study"].iloc[0]: games["kind"].iloc[0]})


def test_at_will_use_is_an_association_and_a_randomized_offer_an_effect():
    # better players buy more and explanations do nothing: the pooled comparison finds an "effect" that is not
    # there, which is why it is labelled an association
    skilled = _tests(crowd_study(np.random.default_rng(1), Crowd(kind="at-will", buy_skill=1.5), 60))
    assert skilled["at_will.explanations_used"]["p_value"] < 0.05
    assert skilled["at_will.explanations_used"]["claim"] == ASSOCIATION
    assert skilled["at_will.within_participants"]["claim"] == ASSOCIATION
    assert "at_will.offer" not in skilled                   # no randomized offer, no effect test
    assert not [t for t in skilled.values() if t["claim"] == EFFECT]
    # the same crowd with the offer randomized: the intention to treat and the instrumented effect
    crowd = Crowd(kind="at-will", buy_skill=1.5, offer=True)
    null = _tests(crowd_study(np.random.default_rng(1), crowd, 60))
    assert null["at_will.offer"]["claim"] == null["at_will.offer_iv"]["claim"] == EFFECT
    assert null["at_will.offer"]["p_value"] > 0.05
    lifted = _tests(crowd_study(np.random.default_rng(2), crowd, 60, lift=0.25))
    itt, iv = lifted["at_will.offer"], lifted["at_will.offer_iv"]
    assert itt["p_value"] < 0.05 and iv["p_value"] == itt["p_value"]
    assert 0 < itt["estimate"] < iv["estimate"]               # use is below 100% when offered: IV = ITT / uptake


def test_the_within_participant_at_will_comparison_counts_who_never_and_always_bought():
    from experiments.analysis.at_will import within_participants
    games = crowd_study(np.random.default_rng(4), Crowd(kind="at-will"), 30)
    games.loc[games["cluster"] == "p0", "used"] = 0.0
    games.loc[games["cluster"] == "p1", "used"] = 1.0
    within = within_participants(games)
    assert within["buying"]["never_bought"] >= 1 and within["buying"]["always_bought"] >= 1
    assert within["buying"]["participants"] == 30 and within["adjusted_for"] == ["play", "difficulty"]
    assert within["odds_ratio"] is not None and "association" in within["statement"]


def test_the_crowd_parameters_mean_what_they_say():
    assert icc_skill_sd(0.0) == 0.0 and icc_skill_sd(0.4) == pytest.approx(1.48, abs=0.01)
    with pytest.raises(ValueError, match="intra-participant"):
        icc_skill_sd(1.0)
    assert shift(0.0) == 0.0 and 1 / (1 + np.exp(-(0.5 + shift(0.15)))) == pytest.approx(1 / (1 + np.exp(-0.5)) + 0.15)
    complete = crowd_study(np.random.default_rng(0), Crowd(), 40)
    dropped = crowd_study(np.random.default_rng(0), Crowd(dropout=0.3), 40)
    assert len(complete) == 40 * 20 and len(dropped) < len(complete)
    assert dropped.groupby("cluster")["block"].min().eq(1).all()          # everyone plays block 1
    offered = crowd_study(np.random.default_rng(0), Crowd(kind="at-will", offer=True), 10)
    per = offered.groupby("cluster")["offered"].mean()
    assert per.eq(0.5).all() and (offered.loc[offered["offered"] == 0, "used"] == 0).all()


def test_only_the_registered_primary_is_tagged_primary(tmp_path):
    from experiments.analysis.preregistered import PREREGISTERED, tag_primary
    tests = report_tests(crowd_study(np.random.default_rng(0), Crowd(order="counterbalanced"), 16))
    tag_primary(tests, {"primary": "overall"}, PREREGISTERED)
    assert [t["name"] for t in tests if t["role"] == "primary"] == ["table1.overall"]
    tag_primary(tests, {"primary": "overall"}, "deviation")
    assert {t["role"] for t in tests} == {"exploratory"}
    assert listed_tests({"controlled": {"missing": "none"}}) == []


def test_a_re_dealt_slot_is_one_draw_for_the_randomization_tests():
    from experiments.analysis.controlled import net_of_practice, per_unit
    games = crowd_study(np.random.default_rng(6), Crowd(order="counterbalanced"), 16)
    # p1 dropped out and p9 took over its slot (same arm and order): one draw shared by two participants
    games["unit"] = games["unit"].where(games["cluster"] != "p9.0", "slot 1")
    values = games.groupby("cluster")["won"].mean()
    arm = games.groupby("cluster")["expl_arm"].max()
    merged, flags = per_unit(values, arm, games)
    assert len(merged) == 15 and len(flags) == 15
    assert "all 1,365 relabelings" in net_of_practice(games)["test"]     # C(15, 4): 15 units, 4 of them control


def test_the_within_participant_randomization_test_redraws_only_within_participants():
    from experiments.analysis.stats import within_relabel_test
    clusters = np.repeat(np.arange(6), 4)
    treated = np.tile([1.0, 1.0, 0.0, 0.0], 6)
    # skill differs between participants only: re-drawing within them sees nothing
    assert within_relabel_test(clusters.astype(float), treated, clusters)["p_value"] == 1.0
    # every participant wins exactly their treated games: 6^C(4,2) assignments, only 2 this extreme
    p = within_relabel_test(treated, treated, clusters)["p_value"]
    assert p < 0.001 and "re-drawn among that participant's games" in within_relabel_test(treated, treated, clusters)["test"]
    assert within_relabel_test(treated[:12], treated[:12], clusters[:12])["p_value"] is None    # 3 participants


def test_every_effect_names_its_estimand_and_its_assumptions():
    """Issue 54: whose effect, weighted how, and what it assumes beyond the randomization, for every effect test
    (report.json `tests`), and shown beside the unit in the report page."""
    from experiments.analysis.claims import ASSOCIATION_ESTIMAND
    from experiments.analysis.html import tests_section

    controlled = report_tests(crowd_study(np.random.default_rng(3), Crowd(order="counterbalanced"), 24))
    at_will = report_tests(crowd_study(np.random.default_rng(3), Crowd(kind="at-will", offer=True), 24))
    effects = [t for t in controlled + at_will if t["claim"] == EFFECT]
    assert {t["name"] for t in effects} >= {"table1.overall", "net_of_practice", "order.first_period", "at_will.offer",
                                            "at_will.offer_iv"}
    for test in effects:
        assert test["estimand"] not in ("", "not stated") and test["assumptions"], test["name"]
    by_name = {t["name"]: t for t in effects}
    assert "carryover" in " ".join(by_name["table1.overall"]["assumptions"])
    assert "participants' average" in by_name["table1.overall"]["estimand"]     # whose effect, weighted how: said
    assert "first holder" in by_name["table1.overall"]["estimand"]
    assert "exclusion restriction" in " ".join(by_name["at_will.offer_iv"]["assumptions"])
    assert all(t["estimand"] == ASSOCIATION_ESTIMAND and t["assumptions"] == []
               for t in controlled + at_will if t["claim"] == ASSOCIATION)
    page = tests_section(controlled)
    assert "estimand (whose effect) and assumptions" in page and "assumes: carryover only as a lasting step" in page


def test_the_primary_is_confirmatory_and_the_arm_rows_are_gatekept_and_holm_corrected():
    """Issue 54: six effect tests a controlled study, none corrected, made at least one false positive in a fifth
    of null studies. Now the primary (the registered one, else table1.overall) is confirmatory, the arm rows follow
    it (adjusted p: the larger of the primary's and their Holm-adjusted one), everything else is not corrected."""
    from experiments.analysis.multiplicity import correct_family, holm

    tests = report_tests(crowd_study(np.random.default_rng(5), Crowd(order="counterbalanced"), 24))
    correct_family(tests)
    by_name = {t["name"]: t for t in tests}
    gate = by_name["table1.overall"]
    assert gate["correction"].startswith("confirmatory") and gate["p_adjusted"] == gate["p_value"]
    arms = [t for t in tests if t["name"].startswith("table1.") and t is not gate and t["claim"] == EFFECT]
    assert len(arms) >= 2
    for t, p in zip(arms, holm([t["p_value"] for t in arms])):
        assert t["p_adjusted"] == pytest.approx(max(gate["p_value"], p)) and "gatekept by table1.overall" in t["correction"]
    others = [t for t in tests if t is not gate and t not in arms]
    assert others and all(t["correction"] == "not corrected" and t["p_adjusted"] is None for t in others)
    # a registered primary other than overall is the gate then
    for t in tests:
        t["role"] = "primary" if t["name"] == "net_of_practice" else "exploratory"
    correct_family(tests)
    assert by_name["net_of_practice"]["correction"].startswith("confirmatory")
    assert all("gatekept by net_of_practice" in t["correction"] for t in tests
               if t["name"].startswith("table1.") and t["claim"] == EFFECT)
