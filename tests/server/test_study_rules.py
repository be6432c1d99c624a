"""Rules fixed before data and safe defaults for paid studies (issue 28), through the real server: a study's
pre-registration cannot change once the study exists (admin form, study files, `exag serve`'s check), a
malformed one is refused in one line, a paid study playing a public agent is warned of, effort flags show
in the console, and per-participant completion codes differ, verify, and reach the export."""
from __future__ import annotations

import json
import re
import pandas as pd
import pytest
from socket_player import Player, started

from game.export import tables
from game.preregistration import registration
from game.study import StudyConfig
from server.app import load_studies
from server.completion import completion_code, verify
from server.study_check import check_study_files, paid_study_warnings

PLAN = {"hypotheses": ["Explanations raise the win rate."], "primary": "overall", "planned_n": 20,
        "stopping_rule": "Stop at 20 finished participants.", "exclusions": ["fast_games"]}
STUDY = {"study_id": "prereg", "kind": "controlled", "arms": ["none", "both"], "sessions": 4, "games_per_session": 1}


def registered(config: dict, plan: dict, facts: dict | None = None) -> dict:
    """The config as `exag preregister` leaves it: the plan, what it registered (`facts`: none here unless given,
    so the rules are what is tested) and the hash of its document."""
    draft = StudyConfig.from_dict({**config, "preregistration": plan})
    return {**config, "preregistration": registration(draft, facts or {})}


def create(app, config: dict):
    return app.test_client().post("/admin/studies?token=test-admin", data={"config": json.dumps(config)})


def message(response) -> str:
    """The admin page's one-line answer to a form."""
    return re.search(r"<p><b>(.*?)</b></p>", response.get_data(as_text=True), re.S).group(1)


def test_a_preregistered_study_keeps_its_rules(app, tmp_path):
    first = registered(STUDY, PLAN)
    assert create(app, first).status_code == 302
    admin = app.test_client().get("/admin?token=test-admin").get_data(as_text=True)
    assert first["preregistration"]["sha256"][:12] in admin and "its rules cannot change now" in admin

    changed = registered(STUDY, {**PLAN, "exclusions": ["no_questions"]})      # registered again, other rules
    refused = create(app, changed)
    assert refused.status_code == 409
    text = message(refused)
    assert "\n" not in text and text.startswith("Not created: study prereg was pre-registered (sha256 "
                                                f"{first['preregistration']['sha256'][:12]}...)")
    assert "exclusions [&#39;fast_games&#39;] -&gt; [&#39;no_questions&#39;]" in text and "new study_id" in text
    unregistered = create(app, STUDY)
    assert unregistered.status_code == 409 and "this config has no pre-registration" in message(unregistered)
    assert "exists already" in message(create(app, first))                  # the same registration: just a repeat

    # a study file (at a server's start, and `exag serve`'s check before it) is held to the same rule
    (tmp_path / "prereg.json").write_text(json.dumps(changed))
    services = app.extensions["exag"]
    with pytest.raises(ValueError, match=r"prereg\.json: study prereg was pre-registered .* cannot change"):
        load_studies(services.store, tmp_path, services.pool, services.agents)
    with pytest.raises(ValueError, match=r"prereg\.json: study prereg was pre-registered"):
        check_study_files(tmp_path, services.store, services.config.agent)
    (tmp_path / "prereg.json").write_text(json.dumps(first))
    load_studies(services.store, tmp_path, services.pool, services.agents)   # unchanged: accepted, nothing new
    assert services.store.study("prereg")[0].preregistration == first["preregistration"]


def test_a_study_without_registration_cannot_gain_one_later(app):
    config = {**STUDY, "study_id": "late"}
    assert create(app, config).status_code == 302
    refused = create(app, registered(config, PLAN))
    assert refused.status_code == 409 and "exists on this server without a pre-registration" in message(refused)


def test_a_rule_edited_without_registering_again_is_refused(app):
    edited = registered({**STUDY, "study_id": "edited"}, PLAN)
    edited["preregistration"]["exclusions"] = ["straight_lined"]
    refused = create(app, edited)
    assert refused.status_code == 400
    assert message(refused).startswith("Not created: preregistration: the study&#39;s rules differ from its "
                                       "pre-registration")
    assert app.extensions["exag"].store.study("edited") is None


def test_unknown_exclusion_flags_are_refused_in_one_line(app, tmp_path):
    bad = {**STUDY, "study_id": "bad-flags", "preregistration": {**PLAN, "exclusions": ["sleepy", "fast_games"]}}
    refused = create(app, bad)
    assert refused.status_code == 400
    assert re.fullmatch(r"Not created: preregistration\.exclusions: unknown quality flag\(s\) &#39;sleepy&#39;; "
                        r"flags: no_questions, fast_games, [a-z_, ]+", message(refused))
    (tmp_path / "bad-flags.json").write_text(json.dumps(bad))            # `exag serve`'s study files alike
    services = app.extensions["exag"]
    with pytest.raises(ValueError) as error:
        check_study_files(tmp_path, services.store, services.config.agent)
    assert "\n" not in str(error.value)
    assert str(error.value).startswith(f"{tmp_path / 'bad-flags.json'}: preregistration.exclusions: unknown quality "
                                       "flag(s) 'sleepy'")


def test_a_paid_study_with_a_public_agent_is_warned_of(app, tmp_path):
    paid = {**STUDY, "study_id": "paid-public", "agent": "weak", "completion_code": "PAID",
            "redirect_url": "https://app.prolific.com/submissions/complete?cc=PAID"}
    assert create(app, paid).status_code == 302           # a warning, not a refusal
    monitor = {row["study"]["study_id"]: row for row in
               app.test_client().get("/admin/monitor.json?token=test-admin").get_json()}
    [warning] = monitor["paid-public"]["warnings"]
    assert "public agent 'weak'" in warning
    assert "find the secret almost every time" in warning and "exag train agent" in warning
    page = app.test_client().get("/admin?token=test-admin").get_data(as_text=True)
    assert "<b>Warning:</b> study paid-public pays through a platform" in page
    # the server's own agent here is a private checkpoint, and demos name their arm: neither is warned of
    assert monitor["real"]["warnings"] == [] and monitor["ctl"]["warnings"] == []

    # `exag serve` prints what check_study_files returns; a server playing the shipped default agent
    (tmp_path / "paid.json").write_text(json.dumps({**STUDY, "study_id": "paid-default", "completion_code": "P"}))
    [printed] = check_study_files(tmp_path, app.extensions["exag"].store, "default")
    assert "public agent 'default'" in printed and "docs/threat-model.md" in printed
    assert paid_study_warnings(StudyConfig.from_dict({**STUDY, "choose_arm": True, "completion_code": "P"}),
                               "default") == []
    assert paid_study_warnings(StudyConfig.from_dict(STUDY), "default") == []           # no platform link


def finish(player) -> dict:
    """Plays every game (one question each) and answers the questionnaire; the done view."""
    while player.state["stage"] == "game":
        gid = player.game["game_id"]
        player.ok("ask", {"game_id": gid, "question": "is there a red cube?"})
        player.ok("rate", {"game_id": gid, "rating": "Somewhat helpful"})
        player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})
        player.ok("next_game", {"game_id": gid})
    answers = {item["key"]: item["options"][0] if item.get("options") else "" for item in player.state["questionnaire"]}
    player.ok("questionnaire", {"answers": answers})
    assert player.state["stage"] == "done"
    return player.state["done"]


def test_per_participant_completion_codes_differ_and_verify(app, connect):
    config = {**STUDY, "study_id": "codes", "arms": ["none"], "completion_code": "STATIC", "choose_arm": True,
              "completion_codes": "per_participant",
              "redirect_url": "https://app.prolific.com/submissions/complete?cc=STATIC&lang=en"}
    assert create(app, config).status_code == 302
    secret = app.extensions["exag"].config.secret_key
    done = {pid: finish(started(connect, "codes", pid, "none")) for pid in ("ann", "bob")}
    codes = {pid: view["completion_code"] for pid, view in done.items()}
    assert len(set(codes.values())) == 2 and "STATIC" not in codes.values()
    for pid, view in done.items():          # issue 55: the return link carries the participant's own code to Prolific
        assert view["redirect_url"] == f"https://app.prolific.com/submissions/complete?lang=en&cc={codes[pid]}"
    for pid, code in codes.items():
        assert code == completion_code(secret, "codes", f"pid:{pid}") and verify(secret, "codes", f"pid:{pid}", code)
    assert not verify(secret, "codes", "pid:bob", codes["ann"])       # a code passed on names who earned it

    again = Player(connect())                                            # a reload: the same code, not a new one
    assert again.send("join", {"study": "codes", "pid": "ann"})[1]["message"].startswith("You have already taken part")
    assert again.state["done"]["completion_code"] == codes["ann"]
    exported = tables(list(app.extensions["exag"].store.events()))["participants"]
    rows = exported[exported["study"] == "codes"].set_index("participant")["completion_code"]
    assert rows.to_dict() == {f"pid:{pid}": code for pid, code in codes.items()}

    static = finish(started(connect, "real", "static-1"))               # the default: the study's one code
    assert static["completion_code"] == "CODE-REAL"


def test_the_console_shows_effort_flags_per_participant(app, connect):
    player = started(connect, "quick", "hasty-1")                        # min_questions 0: guess at once
    for _ in range(3):              # fast_games is a habit (game/quality.py): 3 of these 3 games, well under 10 s
        gid = player.game["game_id"]
        player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})   # no question
        player.ok("next_game", {"game_id": gid})
    monitor = {row["study"]["study_id"]: row for row in
               app.test_client().get("/admin/monitor.json?token=test-admin").get_json()}
    [hasty] = [p for p in monitor["quick"]["participants"] if p["pid"] == "pid:hasty-1"]
    assert set(hasty["quality"]["flags"].split("+")) >= {"no_questions", "fast_games"}
    assert monitor["quick"]["effort"]["no_questions"] >= 1 and monitor["quick"]["effort"]["fast_games"] >= 1
    page = app.test_client().get("/admin?token=test-admin").get_data(as_text=True)
    assert re.search(r"Effort flags among the \d+ latest participants: fast_games \d+\s*&middot; no_questions", page)


def test_the_exported_studies_table_carries_the_registration(app):
    config = registered({**STUDY, "study_id": "exported"}, PLAN)
    assert create(app, config).status_code == 302
    studies = tables(list(app.extensions["exag"].store.events()))["studies"].set_index("study")
    row = studies.loc["exported"]
    assert row["preregistration_sha256"] == config["preregistration"]["sha256"]
    assert json.loads(row["preregistration"]) == config["preregistration"]
    assert json.loads(row["config"])["arms"] == ["none", "both"] and pd.isna(studies.loc["real", "preregistration"])
    assert StudyConfig.from_dict(json.loads(row["config"])).preregistration == config["preregistration"]


def test_a_registered_studys_outcomes_are_hidden_from_the_console_until_its_planned_n(app):
    from game.preregistration import outcomes_hidden

    config = registered({**STUDY, "study_id": "hidden"}, PLAN)              # planned 20
    assert create(app, config).status_code == 302
    page = app.test_client().get("/admin?token=test-admin").get_data(as_text=True)
    section = page[page.index('id="study-hidden"'):]
    assert "Outcomes hidden: the study is pre-registered" in section
    assert "planned 20 participants have finished (0 so far)" in section
    study = StudyConfig.from_dict(config)
    assert outcomes_hidden(study, 19) and outcomes_hidden(study, 20) is None           # shown once 20 have finished
    assert outcomes_hidden(StudyConfig.from_dict({**STUDY, "study_id": "free"}), 0) is None   # not registered


def test_a_server_refuses_a_registered_study_it_would_run_with_another_pool_agent_or_plugin(app, tiny_agent_dir,
                                                                                      agent_world):
    from game.fingerprints import ran_with
    from vqa_agent.checkpoints import checkpoint_fingerprint

    config = {**STUDY, "study_id": "ran", "agent": str(tiny_agent_dir), "pool": str(agent_world)}
    facts = ran_with(StudyConfig.from_dict(config), checkpoint_fingerprint(tiny_agent_dir))
    for field, value, said in (("pool_fingerprint", "f" * 64, "pre-registered with other pool_fingerprint"),
                               ("agent_fingerprint", "0123456789abcdef", "is not the one pre-registered"),
                               ("plugins", {"topk": {"distribution": "exag-topk==0.1", "files": "a" * 64}},
                                "pre-registered with other plugins")):
        refused = create(app, registered(config, PLAN, {**facts, field: value}))
        assert refused.status_code == 400 and said in message(refused)
    assert create(app, registered(config, PLAN, facts)).status_code == 302
    store = app.extensions["exag"].store
    logged = [e for e in store.events() if e["type"] == "study_ran_with" and e["study"] == "ran"]
    assert len(logged) == 1 and {k: logged[0][k] for k in facts} == facts
