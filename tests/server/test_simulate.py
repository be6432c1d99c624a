"""`exag simulate`: simulated participants (game/participant.py presets) play a tiny study through the real
game, in-process and through a live server over Socket.IO, and `exag analyze` reads what they wrote."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image
from server_setup import server_config

import exag_cli
from experiments.analysis import analyze, load_tables
from experiments.simulate.simulate import (EXPORT_DIR, Eyes, SimulationConfig, format_summary, members, parse_players,
                                          simulate)
from game.pool import GamePool

# the paper's structure in small: 4 sessions of 1 game, alternating without/with explanations
STUDY = {"study_id": "simctl", "kind": "controlled", "arms": ["none", "attention", "relqa", "both"], "sessions": 4,
         "games_per_session": 1, "completion_code": "CODE-SIM"}
MIX = {"careful": 0.5, "hasty": 0.5}


def write_study(directory, **changes) -> str:
    path = directory / "study.json"
    path.write_text(json.dumps({**STUDY, **changes}))
    return path


def check_export(out, participants: int, games: int) -> dict:
    """The export is what `exag export` writes, and the analysis reads it (as `exag analyze` does)."""
    export = out / EXPORT_DIR
    for table in ("games", "rounds", "ratings", "explanations", "participants"):
        assert (export / f"{table}.csv").is_file(), table
    assert (export / "events.jsonl").is_file()
    report = analyze(load_tables(export))
    assert report["n"]["games"] == games and report["n"]["participants"] == participants
    modes = {row["mode"] for row in report["controlled"]["table1"]}
    assert "overall" in modes
    return report


def check_summary(summary: dict, participants: int, games: int) -> None:
    assert summary["errors"] == {}, summary["errors"]
    assert summary["participants"] == summary["finished"] == participants
    assert summary["games"] == games
    assert sum(cell["participants"] for cell in summary["by_arm"].values()) == participants
    assert set(summary["by_preset"]) <= set(MIX)
    overall = summary["overall"]
    assert overall["with_explanations"]["games"] + overall["without_explanations"]["games"] == overall["games"]
    assert summary["eyes"]["by_hash"] == games * 5 and summary["eyes"]["by_pixels"] == 0   # 5 images a game


def test_players_mix_and_members():
    assert parse_players("careful=0.25,hasty=0.75") == {"careful": 0.25, "hasty": 0.75}
    assert parse_players("careful,hasty") == {"careful": 0.5, "hasty": 0.5}
    assert abs(sum(parse_players(None).values()) - 1) < 1e-9
    for bad, said in (("carefull=1", "unknown preset"), ("careful=0.5,hasty=0.4", "sum to 1"),
                      ("careful=0.5,hasty", "every preset a share"), ("careful=x", "must be a number"),
                      ("careful=0.5,careful=0.5", "twice")):
        with pytest.raises(ValueError, match=said):
            parse_players(bad)
    who = members({"careful": 0.5, "hasty": 0.3, "over-trusting": 0.2}, 7, seed=3, run="t")
    assert [m.preset for m in who].count("careful") == 4 and len({m.pid for m in who}) == 7
    assert who == members({"careful": 0.5, "hasty": 0.3, "over-trusting": 0.2}, 7, seed=3, run="t")
    with pytest.raises(ValueError, match="at least 1"):
        members(MIX, 0, seed=0, run="t")


def test_eyes_recognise_images_by_content(agent_world):
    pool = GamePool(agent_world)
    eyes = Eyes(pool)
    served = pool.image_path(3).read_bytes()
    assert eyes.recognise(served) == 3 and eyes.by_hash == 1
    pixels = np.asarray(Image.open(io.BytesIO(served)).convert("RGB")).astype(int)
    pixels[::7, ::5] = np.clip(pixels[::7, ::5] + 3, 0, 255)            # re-encoded, slightly changed
    changed = io.BytesIO()
    Image.fromarray(pixels.astype(np.uint8)).save(changed, format="PNG")
    assert eyes.recognise(changed.getvalue()) == 3 and eyes.by_pixels == 1
    noise = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 256, pixels.shape, dtype=np.uint8)).save(noise, format="PNG")
    with pytest.raises(ValueError, match="none of"):
        eyes.recognise(noise.getvalue())


def test_inprocess_study_is_exported_and_analysed(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path):
    options = server_config(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path, tmp_path).explainer_options
    out = tmp_path / "out"
    # with the demographics a reviewed study collects: simulated participants answer "Prefer not to say" and finish
    study = write_study(tmp_path, checks={"demographics": {}})
    summary = simulate(SimulationConfig(study=study, participants=4, out=out, players=MIX,
                                        world=agent_world, agent=str(tiny_agent_dir), seed=1, threads=2,
                                        explainer_options=options, progress=False))
    check_summary(summary, 4, 16)
    assert set(summary["by_arm"]) == set(STUDY["arms"])        # the server balanced the arms
    assert json.loads((out / "summary.json").read_text())["games"] == 16
    report = check_export(out, 4, 16)
    assert report["n"]["rounds"] > 16                          # they asked questions, rated, explained


def test_study_through_a_live_server(live_server, agent_world, tmp_path):
    out = tmp_path / "out"
    summary = simulate(SimulationConfig(study=write_study(tmp_path, study_id="simlive", arms=["none", "both"]),
                                        participants=2, out=out, players=MIX, world=agent_world, seed=2, threads=2,
                                        url=live_server.url, admin_token="test-admin", progress=False,
                                        explanation_weight=0.0))
    check_summary(summary, 2, 8)
    assumed = summary["assumed"]               # the null, said in the summary and above the printed results
    assert assumed["null"] and set(assumed["explanation_weight"].values()) == {0.0} and "never a finding" in \
        assumed["meaning"]
    assert "(the null: explanations change nothing)" in format_summary(summary).splitlines()[1]
    assert set(summary["by_arm"]) == {"none", "both"}
    check_export(out, 2, 8)


def test_cli_errors_are_clear(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("EXAG_ADMIN_TOKEN", raising=False)
    study = write_study(tmp_path)
    cases = [(["simulate", "--study", str(tmp_path / "nope.json"), "--participants", "2", "--out", str(tmp_path)],
              "no study file"),
             (["simulate", "--study", str(study), "--participants", "2", "--out", str(tmp_path), "--players",
               "careful=0.5,reckless=0.5"], "unknown preset 'reckless'"),
             (["simulate", "--study", str(study), "--participants", "2", "--out", str(tmp_path), "--players",
               "careful=0.5,hasty=0.2"], "sum to 1"),
             (["simulate", "--participants", "2", "--out", str(tmp_path)], "--study"),
             (["simulate", "--study", str(study), "--participants", "0", "--out", str(tmp_path)], "at least 1"),
             (["simulate", "--study", str(study), "--participants", "2", "--out", str(tmp_path), "--url",
               "http://127.0.0.1:9"], "admin token"),
             (["simulate", "--study", str(study), "--participants", "2", "--out", str(tmp_path), "--null",
               "--explanation-weight", "2"], "give one of them"),
             (["simulate", "--study", str(study), "--participants", "2", "--out", str(tmp_path),
               "--explanation-weight", "-1"], ">= 0"),
             (["simulate", "power", "--study", str(study), "--sizes", "10,x", "--repeats", "2", "--out",
               str(tmp_path)], "--sizes"),
             (["simulate", "power", "--study", str(write_study(tmp_path, kind="at-will", arms=["both"], sessions=1)),
               "--sizes", "4", "--repeats", "1", "--out", str(tmp_path)], "controlled study")]
    for argv, said in cases:
        assert exag_cli.main(argv) == 2, argv
        assert said in capsys.readouterr().err, argv


def test_a_registered_study_with_checks_dry_runs_as_it_is(tmp_path, tiny_agent_dir, agent_world):
    """The documented dry run is the study file itself: the checks simulated players cannot take are left out, and
    with them the pre-registration (its hash covers the checks), and the run says so."""
    from cli import REPO, exag

    from experiments.simulate.simulate import as_dry_run
    from game.study import load_study

    path = tmp_path / "reviewed.json"
    config = json.loads((REPO / "studies" / "reviewed-controlled.json.example").read_text())
    path.write_text(json.dumps({**config, "agent": str(tiny_agent_dir), "pool": str(agent_world)}))  # made here
    assert exag("preregister", str(path), "--out", str(tmp_path / "doc"), "--planned-n", "40").returncode == 0
    study = load_study(path)
    dry, said = as_dry_run(study)
    assert study.checks and study.preregistration.get("sha256")
    assert not set(dry.checks) & {"comprehension", "colour_screen", "attention"} and dry.preregistration == {}
    assert "left out" in said and "pre-registration" in said and said.count("\n") == 0
    unchanged, nothing = as_dry_run(dry)
    assert unchanged is dry and nothing is None


def test_an_agent_typo_is_said_once_of_the_users_file(tmp_path):
    from cli import exag

    path = tmp_path / "typo.json"
    path.write_text(json.dumps({"study_id": "typo", "kind": "controlled", "sessions": 4, "games_per_session": 1,
                                "agent": "meduim"}))
    ran = exag("simulate", "--study", str(path), "--participants", "2", "--out", str(tmp_path / "out"))
    assert ran.returncode == 2 and ran.stderr.count("exag: error:") == 1 and str(path) in ran.stderr
    assert ran.stderr.count("\n") == 1 and "exag-simulate-" not in ran.stderr     # not a temporary copy
