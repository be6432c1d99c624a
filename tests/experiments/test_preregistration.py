"""Rules fixed before data (issue 28): `exag preregister` freezes a study's plan into a document whose hash
the study carries, and `exag analyze` holds the report to it: the registered exclusions by default (what
each removed, the hash), everything else exploratory, the unexcluded data as a sensitivity analysis,
`--no-exclusions`, and `--exclude` other flags as a deviation. Real export, loaders, report and CLI."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path

import pytest
from test_analysis import PARTICIPANTS_PER_ARM, SERVER_KEY, WINS_PER_BLOCK, controlled_log

from exag_cli import main
from experiments.analysis import analyze
from experiments.analysis.html import render_html
from experiments.analysis.preregistered import describe
from experiments.analysis.write import format_summary
from game.export import write_export
from game.preregistration import ADDED_SINCE, FORMAT_1, NOT_FROZEN, digest
from game.quality import FLAGS
from game.study import StudyConfig, load_study

REPO = Path(__file__).resolve().parents[2]
PLAN = {"hypotheses": ["Explanations raise the win rate."], "primary": "overall",
        "stopping_rule": "Stop when 25 participants have finished.", "exclusions": ["fast_games"]}
STUDY = {"study_id": "ctl", "kind": "controlled", "arms": list(WINS_PER_BLOCK), "sessions": 4,
         "games_per_session": 5, "completion_code": "SECRET-CODE"}
PARTICIPANTS = len(WINS_PER_BLOCK) * PARTICIPANTS_PER_ARM
SPEEDY_GAMES = 20          # the speedy participant plays the whole study, each game in 2 s
WRITTEN = {"html": "report.html", "json": "report.json", "figures": "figures", "tables": "tables"}


@pytest.fixture(autouse=True)
def registrable(monkeypatch, tiny_agent_dir, agent_world):
    """A registered study names its agent and pool (issue 54): the tiny agent and its world's pool."""
    monkeypatch.setitem(STUDY, "agent", str(tiny_agent_dir))
    monkeypatch.setitem(STUDY, "pool", str(agent_world))


def exported(log, out) -> list[str]:
    """The log written as a server's export (signed with its key) and the analyze flags that verify it."""
    write_export(log.events, out, server_key=SERVER_KEY)
    key = out.parent / f"{out.name}.server.key"
    key.write_bytes(SERVER_KEY + b"\n")
    return ["--data", str(out), "--server-key", str(key)]


def preregistered(tmp_path, plan: dict = PLAN) -> StudyConfig:
    """The study file with its plan, registered by the real command; the study as the file now holds it."""
    path = tmp_path / "ctl.json"
    path.write_text(json.dumps({**STUDY, "preregistration": plan}))
    assert main(["preregister", str(path), "--out", str(tmp_path / "prereg" / "ctl"), "--planned-n", "25"]) == 0
    return load_study(path)


def study_log(study: StudyConfig):
    """The controlled log of test_analysis, created as `study`, plus a participant who raises fast_games and
    wins every game, and one of an unregistered study who raises it too (their study has no such rule)."""
    log = controlled_log("ctl")
    log.events.insert(0, {"type": "study_created", "time": 1.0, "study": "ctl", "config": study.to_dict()})
    if study.preregistration.get("registered"):      # a server that ran what was registered says so
        log.events.insert(1, {"type": "study_ran_with", "time": 1.5, "study": "ctl",
                              **study.preregistration["registered"]})
    for number in range(SPEEDY_GAMES):
        log.game("ctl", "speedy", "attention", number, won=True, seconds=2.0)
    for number in range(5):
        log.game("free", "speedy-free", "attention", number, won=True, seconds=2.0)
    return log


def test_preregister_writes_the_document_and_the_study_carries_its_hash(tmp_path, capsys):
    study = preregistered(tmp_path)
    document = (tmp_path / "prereg" / "ctl.json").read_bytes()
    sha256 = hashlib.sha256(document).hexdigest()
    section = study.preregistration
    assert {k: v for k, v in section.items() if k not in ("registered", "fields")} == \
        {**PLAN, "planned_n": 25, "sha256": sha256}
    from game.fingerprints import pool_fingerprint
    from vqa_agent.checkpoints import checkpoint_fingerprint
    registered_facts = section["registered"]            # what it runs, frozen as bytes (issue 54)
    assert registered_facts["agent_fingerprint"] == checkpoint_fingerprint(STUDY["agent"])
    assert registered_facts["pool_fingerprint"] == pool_fingerprint(STUDY["pool"]) and registered_facts["plugins"] == {}
    assert re.fullmatch(r"[0-9a-f]{40}(\+changes-[0-9a-f]{12})?", registered_facts["exag_version"])
    printed = capsys.readouterr().out
    assert sha256 in printed
    registered = json.loads(document)
    assert registered["format"] == "exag-preregistration/2"
    assert registered["preregistration"] == {**PLAN, "planned_n": 25}
    assert registered["registered"] == section["registered"]
    assert registered["analysis"] == {"alpha": 0.05, "sides": "two-sided"}
    # the whole config but how participants are paid, the title and the assignment seed (and fields added since
    # the format at their old value: a controlled study's offer is "always")
    assert set(registered["study"]) == {f.name for f in dataclasses.fields(StudyConfig)} - set(NOT_FROZEN) - set(ADDED_SINCE)
    assert registered["study"]["settings"] == {} and registered["study"]["order"] == "counterbalanced"
    assert set(section["fields"]) >= {"agent", "settings", "arms", "nle", "choose_arm", "checks", "pool",
                                      "preregistration.exclusions"}
    markdown = (tmp_path / "prereg" / "ctl.md").read_text()
    for text in (sha256, "Explanations raise the win rate.", "`overall`", "25 participants", "exag simulate power",
                 "Stop when 25 participants", "exploratory",
                 "`fast_games`: finished at least 3 games, and at least 15% of their games, in under 10 s each"):
        assert text in markdown, text
    assert "SECRET-CODE" not in markdown and b"SECRET-CODE" not in document    # documents get published


def test_a_rule_changed_after_registration_no_longer_makes_a_study(tmp_path):
    study = preregistered(tmp_path)
    changed = {**study.to_dict(), "preregistration": {**study.preregistration, "exclusions": ["no_questions"]}}
    with pytest.raises(ValueError, match="differ from its pre-registration") as refused:
        StudyConfig.from_dict(changed)
    assert "\n" not in str(refused.value) and "exag preregister" in str(refused.value)
    StudyConfig.from_dict({**study.to_dict(), "completion_code": "NEW"})     # not a rule: the hash still holds


def test_unknown_exclusion_flags_are_refused_in_one_line(tmp_path, capsys):
    with pytest.raises(ValueError) as refused:
        StudyConfig("x", preregistration={"exclusions": ["sleepy"]})
    assert str(refused.value) == ("preregistration.exclusions: unknown quality flag(s) 'sleepy'; flags: "
                                  + ", ".join(FLAGS))
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**STUDY, "preregistration": {**PLAN, "exclusions": ["sleepy"]}}))
    assert main(["preregister", str(path), "--out", str(tmp_path / "doc"), "--planned-n", "10"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"{path}: preregistration.exclusions: unknown quality flag(s) 'sleepy'" in error
    assert not (tmp_path / "doc.json").exists()


def test_preregister_says_what_the_plan_lacks(tmp_path, capsys):
    path = tmp_path / "draft.json"
    path.write_text(json.dumps({**STUDY, "preregistration": {k: v for k, v in PLAN.items() if k != "stopping_rule"}}))
    assert main(["preregister", str(path), "--out", str(tmp_path / "doc")]) == 2
    assert "lacks stopping_rule, planned_n" in capsys.readouterr().err
    path.write_text(json.dumps({**STUDY, "preregistration": PLAN}))
    assert main(["preregister", str(path), "--out", str(tmp_path / "doc")]) == 2
    error = capsys.readouterr().err
    assert "lacks planned_n (give --planned-n N; `exag simulate power" in error and "--difference 0.10" in error
    path.write_text(json.dumps({**STUDY, "preregistration": {**PLAN, "primary": "explanations_used"}}))
    assert main(["preregister", str(path), "--out", str(tmp_path / "doc"), "--planned-n", "9"]) == 2
    assert "'explanations_used' is not a primary test of this controlled study" in capsys.readouterr().err


def test_the_analysis_applies_the_registered_exclusions_by_default(tmp_path, capsys):
    study = preregistered(tmp_path)
    log = study_log(study)
    data = exported(log, tmp_path / "export")
    assert main(["analyze", *data, "--study", "ctl", "--out", str(tmp_path / "report")]) == 0
    printed = capsys.readouterr().out
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    sha256 = study.preregistration["sha256"]

    assert report["exclusions"] == {"flags": ["fast_games"], "participants": 1, "games": SPEEDY_GAMES}
    assert report["quality"]["removed_by_flag"] == {"fast_games": {"participants": 1, "games": SPEEDY_GAMES}}
    assert report["n"]["participants"] == PARTICIPANTS
    held = report["preregistration"]
    assert held["registered"] and held["analysis"] == "preregistered"
    mine = held["studies"]["ctl"]
    assert mine["sha256"] == sha256 and mine["applied"] == ["fast_games"] and mine["deviation"] is None
    assert mine["planned_n"] == 25 and mine["participants"] == PARTICIPANTS
    overall = next(r for r in report["controlled"]["table1"] if r["mode"] == "overall")
    assert mine["result"] == overall
    assert held["labels"]["controlled"] == "primary"
    assert {v for k, v in held["labels"].items() if k != "controlled"} == {"exploratory"}
    assert sha256 in report["methods"]

    # the sensitivity analysis: the same comparison with the speedy participant (10 games with explanations)
    again = report["sensitivity"]["studies"]["ctl"]
    assert again["participants"] == PARTICIPANTS + 1 and again["games"] == 20 * (PARTICIPANTS + 1)
    assert again["result"]["with_expl"]["n_games"] == overall["with_expl"]["n_games"] + SPEEDY_GAMES // 2
    assert again["result"]["with_expl"]["win_rate"] > overall["with_expl"]["win_rate"]

    assert "fast_games removed 1 participant(s) and 20 game(s)" in printed
    assert sha256 in printed and "EXPLORATORY" in printed and "ctl sensitivity, no exclusions" in printed
    page = (tmp_path / "report" / "report.html").read_text()
    assert sha256 in page and "Pre-registration" in page and page.count('class="tag exploratory"') >= 5
    assert "pre-registered primary test inside" in page


def test_each_study_is_held_to_its_own_rules(tmp_path):
    report = analyze(study_log(preregistered(tmp_path)).tables())        # ctl pre-registered, free not
    assert report["exclusions"]["participants"] == 1                     # speedy-free raises fast_games too
    assert report["n"]["studies"]["free"]["participants"] == 1
    assert list(report["preregistration"]["studies"]) == ["ctl"]


def test_no_exclusions_shows_only_the_unexcluded_analysis(tmp_path):
    tables = study_log(preregistered(tmp_path)).tables().only(["ctl"])
    report = analyze(tables, no_exclusions=True)
    assert report["exclusions"] == {"flags": [], "participants": 0, "games": 0}
    assert report["n"]["participants"] == PARTICIPANTS + 1
    held = report["preregistration"]
    assert held["analysis"] == "unexcluded" and held["studies"]["ctl"]["applied"] == []
    assert set(held["labels"].values()) == {"exploratory"} and "sensitivity" not in report
    assert "--no-exclusions" in held["statement"]
    assert "EXPLORATORY" in format_summary(report, WRITTEN)


def test_other_exclusions_are_a_deviation(tmp_path):
    tables = study_log(preregistered(tmp_path)).tables().only(["ctl"])
    report = analyze(tables, exclude_flags={"straight_lined"})
    held = report["preregistration"]
    assert held["analysis"] == "deviation" and set(held["labels"].values()) == {"exploratory"}
    assert held["studies"]["ctl"]["deviation"] == ("excluded by straight_lined (--exclude) instead of the "
                                                   "pre-registered fast_games")
    assert "DEVIATION" in held["statement"] and "DEVIATION" in format_summary(report, WRITTEN)
    assert "deviation:" in render_html(report, [])
    same = analyze(tables, exclude_flags={"fast_games"})                 # --exclude as registered: no deviation
    assert same["preregistration"]["analysis"] == "preregistered"


def test_a_study_without_registration_keeps_todays_default(tmp_path):
    log = study_log(StudyConfig.from_dict(STUDY))
    report = analyze(log.tables())
    assert report["exclusions"]["participants"] == 0
    assert report["preregistration"] == {"registered": False, "analysis": "not preregistered", "labels": {},
                                         "studies": {}, "refused": {}}
    assert 'class="tag' not in render_html(report, [])


@pytest.mark.parametrize("field,value", [("agent", "strong"), ("settings", {"start_points": 50}),
                                         ("arms", ["none", "attention", "relqa", "both"]), ("nle", True),
                                         ("games_per_session", 4), ("checks", {"attention": {"every": 5}}),
                                         ("pool", "holiday"), ("consent", {"contact": "someone@example.org"}),
                                         ("questionnaire", [{"key": "effort", "text": "How hard did you try?",
                                                             "options": ["Hard", "Not hard"]}])])
def test_every_rule_of_a_registered_study_is_frozen_and_a_change_is_named(tmp_path, field, value):
    """What a new user tried: the agent changed to `strong` after registering was accepted, and a setting
    changed gave the same hash."""
    study = preregistered(tmp_path)
    changed = {**study.to_dict(), field: value}
    with pytest.raises(ValueError) as refused:
        StudyConfig.from_dict(changed)
    text = str(refused.value)
    assert "\n" not in text and "differ from its pre-registration" in text and text.count("changed: ") == 1
    assert text.split("changed: ")[1].split(")")[0] == field


def test_what_is_not_a_rule_may_change_and_a_plan_change_is_named(tmp_path):
    study = preregistered(tmp_path)
    for field, value in (("completion_code", "NEW"), ("redirect_url", "https://example.org/done"),
                         ("title", "Another title"), ("seed", 7)):
        StudyConfig.from_dict({**study.to_dict(), field: value})          # the hash still holds
    changed = {**study.to_dict(), "preregistration": {**study.preregistration, "primary": "net_of_practice"}}
    with pytest.raises(ValueError, match=r"changed: preregistration\.primary\)"):
        StudyConfig.from_dict(changed)


@pytest.mark.parametrize("order", ["abab", "baba"])
def test_a_with_vs_without_primary_needs_a_counterbalanced_order(tmp_path, order, capsys):
    path = tmp_path / "ctl.json"
    path.write_text(json.dumps({**STUDY, "order": order, "preregistration": PLAN}))
    assert main(["preregister", str(path), "--out", str(tmp_path / "doc"), "--planned-n", "10"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "practice" in error and '"order": "counterbalanced"' in error
    assert "net_of_practice" in error and not (tmp_path / "doc.json").exists()
    path.write_text(json.dumps({**STUDY, "order": order, "preregistration": {**PLAN, "primary": "net_of_practice"}}))
    assert main(["preregister", str(path), "--out", str(tmp_path / "doc"), "--planned-n", "10"]) == 0   # between arms


def test_a_study_whose_links_name_the_arm_cannot_be_registered(tmp_path, capsys):
    path = tmp_path / "ctl.json"
    path.write_text(json.dumps({**STUDY, "choose_arm": True, "preregistration": PLAN}))
    assert main(["preregister", str(path), "--out", str(tmp_path / "doc"), "--planned-n", "10"]) == 2
    assert "choose_arm cannot be pre-registered" in capsys.readouterr().err


@pytest.mark.parametrize("kind, primary, why", [
    ("at-will", "explanations_used", "players choose which games to buy explanations in"),
    ("controlled", "overall_inc_none", "mixes a change of arm with a change of block"),
    ("at-will", "offer", "needs a randomized offer of explanations"),
])
def test_associations_cannot_be_registered_and_the_offer_needs_randomizing(tmp_path, capsys, kind, primary, why):
    path = tmp_path / "study.json"
    extra = {"kind": "at-will", "arms": ["both"], "sessions": 1} if kind == "at-will" else {}
    path.write_text(json.dumps({**STUDY, **extra, "preregistration": {**PLAN, "primary": primary}}))
    assert main(["preregister", str(path), "--out", str(tmp_path / "doc"), "--planned-n", "10"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and why in error and not (tmp_path / "doc.json").exists()


def test_an_at_will_study_registers_its_randomized_offer(tmp_path, capsys):
    path = tmp_path / "aw.json"
    path.write_text(json.dumps({**STUDY, "kind": "at-will", "arms": ["both"], "sessions": 1, "offer": "randomized",
                                "preregistration": {**PLAN, "primary": "offer_iv"}}))
    assert main(["preregister", str(path), "--out", str(tmp_path / "doc"), "--planned-n", "10"]) == 0
    study = load_study(path)
    assert study.preregistration["primary"] == "offer_iv"
    changed = {**json.loads(path.read_text()), "offer": "always"}
    with pytest.raises(ValueError, match="changed: offer"):
        StudyConfig.from_dict(changed)


def test_a_study_registered_in_the_first_format_still_holds_to_it():
    """Studies registered before the whole config was frozen keep their hash (and their data its analysis)."""
    plan = {**PLAN, "planned_n": 25}
    design = {**{k: STUDY[k] for k in ("study_id", "kind", "arms", "sessions", "games_per_session")},
              "order": "counterbalanced", "checks": {}}
    document = {"format": FORMAT_1, "study": design, "preregistration": plan}
    sha256 = hashlib.sha256((json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
                            .encode()).hexdigest()
    study = StudyConfig.from_dict({**STUDY, "preregistration": {**plan, "sha256": sha256}})
    assert digest(study) == sha256
    with pytest.raises(ValueError, match="differ from its pre-registration"):
        StudyConfig.from_dict({**STUDY, "sessions": 6, "preregistration": {**plan, "sha256": sha256}})


def test_the_agent_checkpoint_is_registered_and_the_server_holds_the_study_to_it(tmp_path, tiny_agent_dir, capsys):
    from game.preregistration import check_agent
    from vqa_agent.checkpoints import checkpoint_fingerprint

    path = tmp_path / "ctl.json"
    path.write_text(json.dumps({**STUDY, "agent": str(tiny_agent_dir), "preregistration": PLAN}))
    assert main(["preregister", str(path), "--out", str(tmp_path / "doc"), "--planned-n", "10"]) == 0
    study = load_study(path)
    assert study.preregistration["registered"]["agent_fingerprint"] == checkpoint_fingerprint(tiny_agent_dir)
    assert "fingerprint" in (tmp_path / "doc.md").read_text()
    check_agent(study, str(tiny_agent_dir))                    # the registered checkpoint: served
    with pytest.raises(ValueError, match=r"^agent: the checkpoint of 'default' .* is not the one pre-registered"):
        check_agent(study, "default")                          # another one's files
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps({**STUDY, "agent": str(tmp_path / "nowhere"), "preregistration": PLAN}))
    capsys.readouterr()
    assert main(["preregister", str(missing), "--out", str(tmp_path / "doc2"), "--planned-n", "10"]) != 0
    assert "make the agent and the pool first" in capsys.readouterr().err      # nothing to freeze: refused
    nameless = tmp_path / "nameless.json"
    for field in ("agent", "pool"):
        nameless.write_text(json.dumps({**STUDY, field: "", "preregistration": PLAN}))
        assert main(["preregister", str(nameless), "--out", str(tmp_path / "doc3"), "--planned-n", "10"]) != 0
        assert f"a registered study names its {field}" in capsys.readouterr().err


def test_an_analysed_n_other_than_planned_and_another_exag_version_are_deviations(tmp_path, capsys):
    from game.preregistration import registration

    study = preregistered(tmp_path)                       # planned 25; the log has another number of participants
    older = dataclasses.replace(study, preregistration=registration(
        study, {**study.preregistration["registered"], "exag_version": "0000000 (an older exag)"}))
    data = exported(study_log(older), tmp_path / "export")
    capsys.readouterr()
    assert main(["analyze", *data, "--study", "ctl", "--out", str(tmp_path / "report")]) == 0
    printed = capsys.readouterr().out
    held = json.loads((tmp_path / "report" / "report.json").read_text())["preregistration"]["studies"]["ctl"]
    finished = held["finished"]
    assert finished != 25 and held["registered"]["exag_version"] == "0000000 (an older exag)"
    assert f"{finished} participants finished where 25 were planned" in held["deviations"]
    assert any(d.startswith("registered with exag 0000000 (an older exag), analysed with exag ")
               for d in held["deviations"])
    assert f"ctl deviation from its pre-registration: {finished} participants finished where 25" in printed
    page = (tmp_path / "report" / "report.html").read_text()
    assert "other deviations" in page and "where 25 were planned" in page


def test_the_live_report_shows_no_outcome_of_a_registered_study_before_its_planned_n(tmp_path):
    from experiments.analysis.live import live_report

    log = study_log(preregistered(tmp_path))             # registered for 25; nobody has finished yet
    page = live_report(log.events, "ctl")
    assert "stay hidden until its planned 25 participants have finished (0 so far)" in page
    assert "Stop when 25 participants have finished." in page                     # the registered stopping rule
    assert "Table 1" not in page and "win" not in page.lower() and "%" not in page and "<img" not in page
    assert "<td>attention</td>" in page and "quality flags raised" in page           # recruitment and balance
    assert "Table 1" in live_report(log.events, "free")                              # not registered: all of it

    joined = sorted(p for s, p in log.joined if s == "ctl")
    path = tmp_path / "all.json"                                                     # registered for everyone
    path.write_text(json.dumps({**STUDY, "preregistration": {**PLAN, "planned_n": len(joined)}}))
    assert main(["preregister", str(path), "--out", str(tmp_path / "all-doc")]) == 0
    log = study_log(load_study(path))
    for participant in joined:
        log._add("finish", study="ctl", participant=participant)
    page = live_report(log.events, "ctl")
    assert "stay hidden" not in page and "Table 1" in page                          # planned N reached


# --- issue 54: a registration nobody can edit after the fact ------------------------------------------------

def tampered(tables, study: str = "ctl", plan_edit=None, column_edit: dict | None = None):
    """The tables with study's exported plan edited by `plan_edit(plan)` and its row's cells by `column_edit`."""
    studies = tables.studies.copy()
    row = studies.index[studies["study"] == study][0]
    if plan_edit is not None:
        plan = json.loads(studies.at[row, "preregistration"])
        plan_edit(plan)
        studies.at[row, "preregistration"] = json.dumps(plan, sort_keys=True)
    for column, value in (column_edit or {}).items():
        studies.at[row, column] = value
    return dataclasses.replace(tables, studies=studies)


@pytest.mark.parametrize("edit, named", [
    (lambda plan: plan.update(exclusions=[]), "preregistration.exclusions"),
    (lambda plan: plan.update(primary="both"), "preregistration.primary"),
    (lambda plan: plan.update(planned_n=3), "preregistration.planned_n"),
    (lambda plan: plan.update(sha256="f" * 64), "preregistration_sha256"),
])
def test_an_edited_plan_in_an_export_is_never_analysed_as_preregistered(tmp_path, edit, named):
    tables = study_log(preregistered(tmp_path)).tables()
    assert analyze(tables)["preregistration"]["analysis"] == "preregistered"        # as exported: it verifies
    report = analyze(tampered(tables, plan_edit=edit))
    held = report["preregistration"]
    assert not held["registered"] and held["analysis"] == "not preregistered" and "ctl" not in held["studies"]
    assert named in held["refused"]["ctl"]
    assert any("does not verify" in note for note in report["notes"])
    assert not any(t.get("label") == "primary" or t.get("primary") for t in report["tests"] if isinstance(t, dict))


def test_a_consistently_rehashed_plan_fails_against_the_published_registration(tmp_path):
    """Edited plan, config and every hash made consistent again (anyone can recompute a SHA-256): only the
    document published at registration (`--registration FILE.json`) tells; the real one verifies."""
    study = preregistered(tmp_path)
    published = (tmp_path / "prereg" / "ctl.json").read_bytes()
    from game.preregistration import PLAN_KEYS, registration
    draft = dataclasses.replace(study, preregistration={**{k: study.preregistration[k] for k in PLAN_KEYS},
                                                        "exclusions": []})
    forged_plan = registration(draft, study.preregistration["registered"])
    forged = dataclasses.replace(study, preregistration=forged_plan)
    log = study_log(forged)
    tables = log.tables()
    assert analyze(tables)["preregistration"]["analysis"] == "preregistered"        # self-consistent
    held = analyze(tables, registrations_published=[published])["preregistration"]
    assert held["analysis"] == "not preregistered" and "published" in held["refused"]["ctl"]
    genuine = analyze(study_log(study).tables(), registrations_published=[published])["preregistration"]
    assert genuine["analysis"] == "preregistered" and genuine["refused"] == {}


def test_analyze_registration_reads_the_published_document(tmp_path, capsys):
    study = preregistered(tmp_path)
    base = ["analyze", *exported(study_log(study), tmp_path / "export"), "--study", "ctl"]
    assert main(base + ["--out", str(tmp_path / "r1"), "--registration", str(tmp_path / "prereg" / "ctl.json")]) == 0
    assert json.loads((tmp_path / "r1" / "report.json").read_text())["preregistration"]["analysis"] == "preregistered"
    other = tmp_path / "other.json"
    other.write_text("{}\n")
    assert main(base + ["--out", str(tmp_path / "r2"), "--registration", str(other)]) == 0
    held = json.loads((tmp_path / "r2" / "report.json").read_text())["preregistration"]
    assert held["analysis"] == "not preregistered" and "ctl" in held["refused"]
    assert main(base + ["--out", str(tmp_path / "r3"), "--registration", str(tmp_path / "nope.json")]) != 0
    assert "no such file" in capsys.readouterr().err


def test_the_registered_version_tells_one_local_edit_from_another(tmp_path):
    """Issue 54: "commit+changes" named every local edit alike (a changed analysis constant and a changed game
    rule gave the same version); now the changes are hashed, untracked sources included."""
    import subprocess

    from game.fingerprints import checkout_version as exag_version

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "rules.py").write_text("FAST_GAME_S = 10\n")
    git("add", "rules.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    clean = exag_version(tmp_path)
    assert re.fullmatch(r"[0-9a-f]{40}", clean)
    (tmp_path / "rules.py").write_text("FAST_GAME_S = 30\n")
    one = exag_version(tmp_path)
    (tmp_path / "rules.py").write_text("FAST_GAME_S = 20\n")
    other = exag_version(tmp_path)
    assert one.startswith(clean + "+changes-") and other.startswith(clean + "+changes-") and one != other
    (tmp_path / "rules.py").write_text("FAST_GAME_S = 10\n")
    (tmp_path / "plugin.py").write_text("BOOTSTRAP = 999\n")          # an untracked source counts too
    untracked = exag_version(tmp_path)
    assert untracked.startswith(clean + "+changes-") and untracked not in (one, other)
    (tmp_path / "game").mkdir()
    (tmp_path / "game" / "rule.py").write_text("X = 1\n")                 # so does one in a package
    in_package = exag_version(tmp_path)
    assert in_package not in (untracked, one, other)
    # issue 55: what docs/real-study.md's commands write into the checkout is data, not code: `exag study check`
    # after `exag preregister` found "another exag_version" once prereg/ and dry-run/ existed
    for output in ("prereg/reviewed-1.json", "prereg/reviewed-1.md", "dry-run/report/report.html",
                   "dry-run/export/games.csv", "NOTES.md"):
        (tmp_path / output).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / output).write_text("written by a command\n")
    assert exag_version(tmp_path) == in_package


def test_planned_n_counts_who_finished_so_registered_exclusions_are_no_deviation(tmp_path):
    """Issue 54: planned N meant "finished" for hiding outcomes but "analysed after exclusions" for the deviation
    check, so every registered exclusion made a spurious deviation. Now both count who finished."""
    study = preregistered(tmp_path)
    everyone = sorted({e["participant"] for e in study_log(study).events if e.get("study") == "ctl" and e.get("participant")})
    replanned = dataclasses.replace(study, preregistration=registration_with(study, planned_n=len(everyone)))
    log = study_log(replanned)
    log.events += [{"type": "finish", "time": 1e9, "study": "ctl", "participant": p} for p in everyone]
    held = analyze(log.tables())["preregistration"]["studies"]["ctl"]
    assert held["finished"] == len(everyone) == PARTICIPANTS + 1
    assert held["participants"] == PARTICIPANTS                     # the speedy one excluded, as registered
    assert not [d for d in held["deviations"] if "planned" in d]
    # one fewer finished than planned is a deviation, named so
    log.events.pop()
    held = analyze(log.tables())["preregistration"]["studies"]["ctl"]
    assert f"{PARTICIPANTS} participants finished where {PARTICIPANTS + 1} were planned" in held["deviations"]


def registration_with(study, **plan):
    """The study registered again with these plan fields changed (as `exag preregister` would)."""
    from game.preregistration import PLAN_KEYS, registration
    draft = dataclasses.replace(study, preregistration={**{k: study.preregistration[k] for k in PLAN_KEYS}, **plan})
    return registration(draft, study.preregistration["registered"])


# --- issue 54: what ran, and every look, signed by the server ---------------------------------------------------

def looked_log(study: StudyConfig, ran: dict | None = None):
    """study_log with one early look at the outcomes logged, and what the server ran it with (`ran`: edits of the
    registered facts, as a server that ran something else would log them)."""
    log = study_log(study)
    log.events.insert(2, {"type": "outcomes_looked", "time": 2.0, "study": "ctl", "where": "admin export",
                          "finished": 3, "planned_n": 25})
    if ran:
        log.events[1] = {**log.events[1], **ran}
    return log


@pytest.mark.parametrize("ran, named", [
    ({"exag_version": "0" * 40 + "+changes-000000000000"}, "exag_version"),
    ({"pool_fingerprint": "f" * 64}, "pool_fingerprint"),
    ({"agent_fingerprint": "0123456789abcdef"}, "agent_fingerprint"),
    ({"plugins": {"topk": {"distribution": "exag-topk==0.1", "files": "a" * 64}}}, "plugins"),
])
def test_a_study_run_with_other_code_agent_pool_or_plugins_is_never_analysed_as_preregistered(tmp_path, ran, named):
    study = preregistered(tmp_path)
    assert analyze(looked_log(study).tables())["preregistration"]["analysis"] == "preregistered"
    held = analyze(looked_log(study, ran).tables())["preregistration"]       # the server says what it ran
    assert held["analysis"] == "not preregistered" and named in held["refused"]["ctl"]


@pytest.mark.parametrize("edit, why", [
    ({"looks": None}, "differ from what the server signed"),                    # the early look removed
    ({"looks": "[]"}, "differ from what the server signed"),
    ({"ran_with": None}, "differ from what the server signed"),                # what ran, removed
    ({"signature": None}, "not signed by the server"),
    ({"signature": "0" * 64}, "differ from what the server signed"),
])
def test_an_emptied_look_or_an_edited_record_of_what_ran_is_never_analysed_as_preregistered(tmp_path, edit, why):
    tables = looked_log(preregistered(tmp_path)).tables()
    held = analyze(tables)["preregistration"]
    assert held["analysis"] == "preregistered" and len(held["studies"]["ctl"]["looks"]) == 1
    held = analyze(tampered(tables, column_edit=edit))["preregistration"]
    assert held["analysis"] == "not preregistered" and why in held["refused"]["ctl"]


def test_a_registered_export_is_verified_with_the_servers_key_only(tmp_path, capsys):
    log = looked_log(preregistered(tmp_path))
    unkeyed = dataclasses.replace(log.tables(), server_key=None)
    assert "server's key" in analyze(unkeyed)["preregistration"]["refused"]["ctl"]
    other = dataclasses.replace(log.tables(), server_key=b"another server")
    assert "differ from what the server signed" in analyze(other)["preregistration"]["refused"]["ctl"]
    data = exported(log, tmp_path / "export")
    assert main(["analyze", *data[:2], "--study", "ctl", "--out", str(tmp_path / "r1")]) == 0     # no key given
    assert json.loads((tmp_path / "r1" / "report.json").read_text())["preregistration"]["analysis"] == \
        "not preregistered"
    assert main(["analyze", *data, "--study", "ctl", "--out", str(tmp_path / "r2")]) == 0
    assert json.loads((tmp_path / "r2" / "report.json").read_text())["preregistration"]["analysis"] == "preregistered"
    assert main(["analyze", *data[:2], "--server-key", str(tmp_path / "none.key"), "--study", "ctl",
                 "--out", str(tmp_path / "r3")]) != 0
    assert "no server key" in capsys.readouterr().err


def test_a_study_that_names_a_plugin_registers_its_distribution_and_files(tmp_path, monkeypatch):
    from game.fingerprints import files_fingerprint, plugin_fingerprints
    package = tmp_path / "exag_fp_plugin"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "explainer.py").write_text((REPO / "examples" / "explainer_plugin" / "exag_topk" / "explainer.py")
                                          .read_text())
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("EXAG_EXPLAINERS", "exag_fp_plugin.explainer:TopKExplainer")
    name = "exag_fp_plugin.explainer:TopKExplainer"
    found = plugin_fingerprints([name, "attention"])          # built-ins are the exag version's
    assert list(found) == [name] and found[name]["files"] == files_fingerprint(package)
    before = found[name]["files"]
    (package / "explainer.py").write_text((package / "explainer.py").read_text() + "\n# edited\n")
    assert plugin_fingerprints([name])[name]["files"] != before


def test_the_total_effect_can_be_registered_under_any_order_and_is_then_the_primary(tmp_path):
    path = tmp_path / "total.json"
    path.write_text(json.dumps({**STUDY, "order": "abab", "preregistration": {**PLAN, "primary": "total_effect"}}))
    assert main(["preregister", str(path), "--out", str(tmp_path / "doc"), "--planned-n", "25"]) == 0
    report = analyze(study_log(load_study(path)).tables())
    held = report["preregistration"]["studies"]["ctl"]
    assert report["preregistration"]["analysis"] == "preregistered" and held["primary"] == "total_effect"
    assert held["result"]["claim"] == "effect" and "over all blocks" in describe(held["result"])
    assert [t["name"] for t in report["studies"]["ctl"]["tests"] if t["role"] == "primary"] == ["total_effect"]
    assert "Total effect of an arm with explanations" in render_html(report, {})
