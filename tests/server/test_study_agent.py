"""A study may name its own agent (Issue 10, finding 3: paid studies can use a private checkpoint): its rounds
are answered by that agent, on its own inference worker; a study whose agent cannot be loaded is refused
when it is created and when a participant joins."""
from __future__ import annotations

import json
import shutil

import pytest
from safetensors.torch import load_file, save_file

from game.settings import RATINGS
from game.study import StudyConfig
from server.app import load_studies

from hf_models import make_tiny_vilt
from socket_player import Player, started

ANSWER = "cyan"     # what the study's agent answers, whatever it is asked


@pytest.fixture(scope="module")
def stubborn_agent(tiny_agent_dir, tmp_path_factory):
    """A private checkpoint: the tiny agent with its answer classifier biased to one answer, so a round shows
    which agent answered it."""
    path = tmp_path_factory.mktemp("private") / "agent"
    shutil.copytree(tiny_agent_dir, path)
    answers = json.loads((path / "vocabulary.json").read_text())["answers"]
    weights = load_file(path / "model.safetensors")
    last_bias = [k for k in weights if k.startswith("classifier.") and k.endswith(".bias")][-1]
    weights[last_bias][answers.index(ANSWER)] += 1000.0
    save_file(weights, path / "model.safetensors")
    return path


def create(app, config: dict):
    return app.test_client().post("/admin/studies?token=test-admin", data={"config": json.dumps(config)})


def test_a_study_plays_with_the_agent_it_names(app, connect, stubborn_agent):
    services = app.extensions["exag"]
    config = {"study_id": "private-agent", "kind": "controlled", "arms": ["attention"], "games_per_session": 1,
              "choose_arm": True, "agent": str(stubborn_agent), "order": "abab"}   # explanations in the 2nd game
    assert create(app, config).status_code == 302
    assert len(services.agents.workers) == 2          # loaded once, at creation, with its own worker

    player = started(connect, "private-agent", "private-1")
    gid = player.game["game_id"]
    player.ok("ask", {"game_id": gid, "question": "is there a red cube?"})
    assert player.game["rounds"][-1]["answer"] == ANSWER
    player.ok("rate", {"game_id": gid, "rating": RATINGS[2]})
    player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})
    player.ok("next_game", {"game_id": gid})        # the second game shows the arm's explanations, by that agent
    gid = player.game["game_id"]
    player.ok("ask", {"game_id": gid, "question": "what color is the sphere?"})
    last = player.game["rounds"][-1]
    assert last["answer"] == ANSWER and {e["kind"] for es in last["explanations"]["for_every_image"].values()
                                         for e in es} == {"attention"}
    assert len(services.agents.workers) == 2

    # the server's own agent still answers the other studies
    other = started(connect, "ctl", "private-2", "none")
    other.ok("ask", {"game_id": other.game["game_id"], "question": "is there a red cube?"})
    assert other.game["rounds"][-1]["answer"] in ("yes", "no")


def test_a_study_whose_agent_cannot_be_loaded_is_refused(app, connect, tmp_path):
    missing = tmp_path / "no-such-agent"
    response = create(app, {"study_id": "missing-agent", "kind": "controlled", "arms": ["none"],
                            "agent": str(missing)})
    assert response.status_code == 400 and "could not be loaded" in response.get_data(as_text=True)
    assert app.extensions["exag"].store.study("missing-agent") is None

    # a study stored while its agent was there (a study file, another server): joining is refused
    app.extensions["exag"].store.save_study(
        StudyConfig("agent-gone", arms=("none",), choose_arm=True, agent=str(missing)), "open",
        {"type": "study_created", "study": "agent-gone"}, only_if_new=True)
    Player(connect()).refused("join", {"study": "agent-gone", "pid": "gone-1"}, "agent could not be loaded")

    # a new study file naming it stops the server's start with the reason, like any invalid study file
    (tmp_path / "studies").mkdir()
    (tmp_path / "studies" / "file-agent.json").write_text(json.dumps({"study_id": "file-agent", "agent": str(missing)}))
    with pytest.raises(ValueError, match="file-agent.json: the agent .* could not be loaded"):
        services = app.extensions["exag"]
        load_studies(services.store, tmp_path / "studies", services.pool, services.agents)


def test_the_agent_field_is_validated():
    assert StudyConfig("s").agent == ""
    with pytest.raises(ValueError, match="agent"):
        StudyConfig.from_dict({"study_id": "s", "agent": 3})


@pytest.fixture
def broken_agents(tiny_agent_dir, tmp_path):
    """Agents whose checkpoints are all there but cannot answer (issue 44): a transformers folder without
    weights, and our checkpoint with garbage weights."""
    hf = make_tiny_vilt(tmp_path / "hf-without-weights")
    for weights in hf.glob("*.safetensors"):
        weights.unlink()
    garbage = tmp_path / "garbage-weights"
    shutil.copytree(tiny_agent_dir, garbage)
    (garbage / "model.safetensors").write_bytes(b"not a safetensors file" * 10)
    return {"hf": f"hf:{hf}", "garbage": str(garbage)}


@pytest.mark.parametrize("kind", ["hf", "garbage"])
def test_a_study_whose_agent_cannot_answer_a_warm_up_question_is_refused(app, broken_agents, kind):
    """Created only once a worker answered a warm-up question with its agent: the one line says why not."""
    agent = broken_agents[kind]
    response = app.test_client().post("/admin/studies?token=test-admin", json={"config": {
        "study_id": f"broken-{kind}", "kind": "controlled", "arms": ["none"], "agent": agent}})
    reason = response.get_json()["error"]
    assert response.status_code == 400 and "could not answer a warm-up question on this server" in reason, reason
    assert agent in reason and "\n" not in reason
    assert app.extensions["exag"].store.study(f"broken-{kind}") is None
    # the console's check proves the agent as creation does (issue 51: it said "Can be created here"), and
    # refuses it with the same one line
    checked = app.test_client().post("/admin/studies/check?token=test-admin", json={"config": {
        "study_id": f"broken-{kind}", "kind": "controlled", "arms": ["none"], "agent": agent}}).get_json()
    assert checked["ok"] is False and f"Not created: {checked['error']}" == reason


def test_a_study_whose_agent_fails_later_closes_itself_to_new_joins(app, connect, broken_agents, tiny_agent_dir):
    """A study stored while its agent worked (a study file, another server) whose agent then fails on a worker:
    the round is refused with a message for the player, the study closes to newcomers, and the console says
    why; fixed and opened again by the researcher, it plays."""
    services = app.extensions["exag"]
    services.store.save_study(StudyConfig("agent-broke", arms=("none",), choose_arm=True, games_per_session=1,
                                          agent=broken_agents["garbage"]), "open",
                              {"type": "study_created", "study": "agent-broke"}, only_if_new=True)
    player = started(connect, "agent-broke", "broke-1", "none")
    player.refused("ask", {"game_id": player.game["game_id"], "question": "is there a red cube?"},
                   "agent could not be loaded")
    assert services.store.study("agent-broke")[1] == "closed"
    Player(connect()).refused("join", {"study": "agent-broke", "pid": "broke-2", "arm": "none"}, "closed")
    row = next(r for r in app.test_client().get("/admin/monitor.json?token=test-admin").get_json()
               if r["study"]["study_id"] == "agent-broke")
    assert "failed on a worker" in row["closed_because"] and "safetensor" in row["closed_because"].lower()
    assert row["warnings"][0].startswith("This study closed itself to new joins")
    assert any(e["type"] == "study_closed" and e["study"] == "agent-broke" for e in services.store.events())

    shutil.copy(tiny_agent_dir / "model.safetensors", broken_agents["garbage"] + "/model.safetensors")
    assert app.test_client().post("/admin/studies/agent-broke/open?token=test-admin",
                                  headers={"Accept": "application/json"}).status_code == 200
    assert services.store.closed_because("agent-broke") is None
    again = started(connect, "agent-broke", "broke-3", "none")
    again.ok("ask", {"game_id": again.game["game_id"], "question": "is there a red cube?"})
