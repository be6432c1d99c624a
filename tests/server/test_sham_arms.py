"""Sham arms (explainers/sham.py) reach the page like the real ones: a controlled study with arms
"attention-shuffled" and "nle-other" loads and runs on a real server (real Redis, the tiny agent and its
NLE model), each image token gets another image's real explanation of the same round under the real
kind, the event log and the export name the sham, and the analysis gives it its own row."""
from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image
from server_setup import server_config
from socket_player import events_of, next_game, started

from experiments.analysis import Tables, analyze
from explainers.sham import derangement
from game.export import tables
from game.study import StudyConfig
from server.app import create_app
from server.inference import Predictor, RoundRequest
from server.study_check import check_study
from vqa_agent.agent import VQAAgent

# a real study's sham arms, and each paired with its real explainer so one round shows both to compare
ARMS = ["none", "attention", "attention-shuffled", "nle-other", "attention+attention-shuffled", "nle+nle-other"]
STUDY = {"study_id": "sham", "kind": "controlled", "arms": ARMS, "sessions": 4, "games_per_session": 1,
         "choose_arm": True, "completion_code": "CODE-SHAM"}
REAL = {"attention-shuffled": "attention", "nle-other": "nle"}
KIND = {"attention-shuffled": "attention", "nle-other": "text"}


@pytest.fixture(scope="module")
def app(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("sham")
    studies = root / "studies"
    studies.mkdir()
    (studies / "sham.json").write_text(json.dumps(STUDY))
    app = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, root / "data", studies))
    yield app
    app.extensions["exag"].close()


def explained_round(connect, arm: str, pid: str) -> tuple[dict, dict]:
    """Plays the arm's first game (no explanations) and asks once in its second (with): the game, and the
    last round's explanations as the page got them."""
    player = started(connect, "sham", pid, arm=arm)
    assert player.state["instructions"]["modes"] == arm.split("+")
    next_game(player)
    game = player.game
    assert game["with_explanations"]
    player.ok("ask", {"game_id": game["game_id"], "question": "Is there a red cube?"})
    return player.game, player.game["rounds"][-1]["explanations"]


@pytest.mark.parametrize("sham", ["attention-shuffled", "nle-other"])
def test_a_sham_arm_reaches_the_page_like_the_real_one(app, connect, sham):
    real = REAL[sham]
    game, shown = explained_round(connect, f"{real}+{sham}", f"pair-{sham}")
    tokens = game["images"]
    assert set(shown["for_every_image"]) == set(tokens) and shown["for_the_secret"] == []
    by_name = {name: {t: next(e for e in shown["for_every_image"][t] if e["explainer"] == name) for t in tokens}
               for name in (real, sham)}
    for t in tokens:
        assert by_name[sham][t]["kind"] == by_name[real][t]["kind"] == KIND[sham]
        assert by_name[sham][t]["payload"], "a payload the page draws, as the real one's"
    # each token shows the real explanation of another token of the same round, each real one once
    shams = [by_name[sham][t]["payload"] for t in tokens]
    reals = [by_name[real][t]["payload"] for t in tokens]
    assert sorted(map(json.dumps, shams)) == sorted(map(json.dumps, reals))
    for k, payload in enumerate(shams):
        assert any(payload == reals[j] for j in range(len(tokens)) if j != k)
    if sham == "attention-shuffled":     # attention maps of different images differ: none is on its own image
        assert all(s != r for s, r in zip(shams, reals))

    # the event log names the sham, with the real kind, one per image, graded against the image it is shown on
    [question] = [e for e in events_of(app, game["game_id"]) if e["type"] == "question"]
    logged = [x for x in question["explanations"] if x["explainer"] == sham]
    assert sorted(x["position"] for x in logged) == list(range(len(tokens)))
    assert all(x["kind"] == KIND[sham] and x["grade"] and not x["for_the_secret"] for x in logged)


@pytest.mark.parametrize("arm", ["attention-shuffled", "nle-other"])
def test_a_plain_sham_arm_shows_only_the_sham(app, connect, arm):
    game, shown = explained_round(connect, arm, f"plain-{arm}")
    for token in game["images"]:
        [explanation] = shown["for_every_image"][token]
        assert (explanation["explainer"], explanation["kind"]) == (arm, KIND[arm])


def test_a_study_with_sham_arms_passes_the_checks_exports_and_is_analysed(app, connect):
    services = app.extensions["exag"]
    study = StudyConfig.from_dict({**STUDY, "study_id": "sham-2", "arms": ["none", "attention", "attention-shuffled",
                                                                             "nle-other"]})
    check_study(study, services.pool, services.agents)         # what the admin form and study files go through
    # a participant of each arm plays the whole study (4 games, the 2nd and 4th with explanations)
    for arm in ("none", "attention", "attention-shuffled", "nle-other"):
        player = started(connect, "sham", f"whole-{arm}", arm=arm)
        for _ in range(4):
            next_game(player)
        assert player.state["stage"] == "questionnaire"
    exported = tables(services.store.events())
    shown = exported["explanations"]
    assert {"attention-shuffled", "nle-other"} <= set(shown["explainer"])
    assert set(shown.loc[shown["explainer"] == "attention-shuffled", "kind"]) == {"attention"}
    assert set(shown.loc[shown["explainer"] == "nle-other", "kind"]) == {"text"}
    report = analyze(Tables.from_frames(exported, "sham server"))
    controlled = report["studies"]["sham"]["controlled"]
    modes = [r["mode"] for r in controlled["table1"]]
    assert {"attention-shuffled", "nle-other"} <= set(modes) and set(controlled["sham_arms"]) >= {"attention-shuffled",
                                                                                                  "nle-other"}
    rows = {r["mode"]: r for r in controlled["table1"]}
    assert rows["overall"]["arms"] == ["attention"] and rows["overall_inc_none"]["arms"] == ["attention", "none"]


def test_the_predictor_keeps_every_round_of_a_batch_to_itself(tiny_agent_dir, agent_world, tiny_nle_dir):
    """Rounds of different games in one batch: a sham shows another image of its own round, the secret's
    nle-other is the sentence of the image the round's derangement gives it."""
    agent = VQAAgent.from_pretrained(tiny_agent_dir)
    predictor = Predictor(agent, {"relqa": {"world": agent_world, "min_bank": 50, "progress": False},
                                  "nle": {"model": tiny_nle_dir}})
    assert predictor.explainers["nle-other"].explainer is predictor.explainers["nle"], "one NLE model, shared"
    paths = sorted((agent_world / "images").glob("*.png"))
    image = lambda i: np.asarray(Image.open(paths[i]).convert("RGB"))   # noqa: E731
    rounds = [RoundRequest([image(i) for i in range(5 * g, 5 * g + n)], q, secret=g % n,
                           for_every_image=("attention", "attention-shuffled", "nle"), for_the_secret=("nle-other",),
                           seed=g)
              for g, (n, q) in enumerate([(5, "is there a red cube?"), (3, "how many spheres are there?"),
                                          (4, "is there a metal thing?")])]
    results = predictor.predict(rounds)
    for request, result in zip(rounds, results):
        n = len(request.images)
        p = derangement(n, request.seed)
        real = [[e for e in es if e.explainer == "attention"][0].payload for es in result.for_every_image]
        sham = [[e for e in es if e.explainer == "attention-shuffled"][0].payload for es in result.for_every_image]
        nle = [[e for e in es if e.explainer == "nle"][0].payload for es in result.for_every_image]
        assert sham == [real[p[k]] for k in range(n)]
        [secret] = result.for_the_secret
        assert (secret.explainer, secret.kind) == ("nle-other", "text")
        assert secret.payload == nle[p[request.secret]]
