"""`exag study check FILE` (issue 55): a study file checked offline, every problem in one line, exit status 2 when
any file fails; a registered study is held to what it registered, as a server would hold it."""
from __future__ import annotations

import json
import shutil

import pytest

from exag_cli import main

STUDY = {"study_id": "checked", "kind": "controlled", "arms": ["none", "attention"], "sessions": 4,
         "games_per_session": 2, "order": "counterbalanced"}


@pytest.fixture
def study_file(tmp_path, tiny_agent_dir, agent_world):
    def write(**fields) -> str:
        path = tmp_path / f"{fields.get('study_id', 'checked')}.json"
        path.write_text(json.dumps({**STUDY, "agent": str(tiny_agent_dir), "pool": str(agent_world), **fields}))
        return str(path)
    return write


def test_a_good_study_file_passes_and_says_what_it_is(study_file, capsys):
    assert main(["study", "check", study_file()]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and ": ok (controlled, 2 arms, 8 games a participant" in out and "not pre-registered" in out


@pytest.mark.parametrize("fields, said", [
    ({"arms": ["none", "sparkles"]}, "unknown explainer 'sparkles'"),
    ({"sessions": 0}, "sessions"),
    ({"study_id": "no spaces allowed"}, "study_id"),
    ({"redirect_url": "http://example.org/done"}, "redirect_url"),
    ({"agent": "/nowhere/agent"}, "agent"),
    ({"pool": "/nowhere/pool"}, "no image pool"),
])
def test_each_problem_is_one_line_and_fails_the_check(study_file, capsys, fields, said):
    good, bad = study_file(), study_file(**{"study_id": "other", **fields})
    assert main(["study", "check", good, bad]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].endswith(")") and ": ok (" in lines[0]
    assert lines[1].startswith(f"{bad}: ") and said in lines[1] and ": ok" not in lines[1]


def test_unreadable_json_and_a_missing_file_fail_in_one_line(tmp_path, capsys):
    broken = tmp_path / "broken.json"
    broken.write_text("{\"study_id\": ")
    assert main(["study", "check", str(broken), str(tmp_path / "absent.json")]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and "Expecting value" in lines[0] and "no such file" in lines[1]


def test_a_registered_study_is_checked_against_what_it_registered(study_file, tmp_path, capsys):
    path = study_file(preregistration={"hypotheses": ["Explanations raise the win rate."], "primary": "overall",
                                       "stopping_rule": "Stop at 20.", "exclusions": [], "planned_n": 20})
    assert main(["preregister", path, "--out", str(tmp_path / "doc")]) == 0
    capsys.readouterr()
    assert main(["study", "check", path]) == 0
    assert "pre-registered sha256" in capsys.readouterr().out
    data = json.loads(open(path).read())
    data["preregistration"]["registered"]["pool_fingerprint"] = "f" * 64     # as if the pool changed since
    from game.preregistration import registration
    from game.study import StudyConfig
    plan = {k: data["preregistration"][k] for k in ("hypotheses", "primary", "stopping_rule", "exclusions",
                                                     "planned_n")}
    draft = StudyConfig.from_dict({**data, "preregistration": plan})
    data["preregistration"] = registration(draft, data["preregistration"]["registered"])
    open(path, "w").write(json.dumps(data))
    assert main(["study", "check", path]) == 2
    assert "pre-registered with other pool_fingerprint" in capsys.readouterr().out


def test_a_private_agent_without_its_nle_model_fails_a_study_that_shows_nle(study_file, tiny_agent_dir, tiny_nle_dir,
                                                                            tmp_path, capsys):
    """Issue 55: the study checked ok, then the private agent's server had no NLE to show. Now one line says so and
    what makes it; with the agent's own model in its directory (what `exag train nle --agent DIR` writes) it passes."""
    private = tmp_path / "private-agent"
    shutil.copytree(tiny_agent_dir, private)
    nle, sham, plain = (study_file(study_id=f"s{k}", arms=arms, agent=str(private))
                        for k, arms in enumerate((["none", "nle"], ["nle", "nle-other"], ["none", "attention"])))
    assert main(["study", "check", nle, sham, plain]) == 2
    lines = capsys.readouterr().out.splitlines()
    for line in lines[:2]:
        assert f"the nle explainer has no model for the agent {private}" in line
        assert f"exag train nle --agent {private} --world WORLD" in line
    assert ": ok (" in lines[2]
    shutil.copytree(tiny_nle_dir, private / "nle")
    assert main(["study", "check", nle, sham]) == 0
