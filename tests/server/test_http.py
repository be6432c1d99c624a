"""HTTP: pages, images, /healthz, the admin pages behind their token, the rating task; and the bot
playing through a real server over a real socket."""
from __future__ import annotations

import io
import json
import zipfile

from socket_player import Player, Rater, started

from experiments.simulate.bot import play_games
from game.settings import RATINGS


def test_pages_images_and_health(app, connect):
    http = app.test_client()
    assert http.get("/").status_code == 302 and "study=demo" in http.get("/").headers["Location"]
    page = http.get("/?study=ctl")
    assert page.status_code == 200 and b"socket.io.min.js" in page.data
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    assert http.get("/static/js/main.js").status_code == 200
    health = http.get("/healthz").get_json()
    assert health["ok"] and health["redis"] and {"attention", "relqa", "nle"} <= set(health["explainers"])
    assert health["agents"][""] == "ready"        # the in-process worker answered its warm-up question
    player = started(connect, "ctl", "http-1", "none")
    game = player.game
    image = http.get(game["image_urls"][game["images"][0]])
    assert image.status_code == 200 and image.data[:4] == b"\x89PNG"
    assert http.get(f"/image/{game['game_id']}/nope.png").status_code == 404
    assert http.get(f"/image/unknown/{game['images'][0]}.png").status_code == 404


def test_admin_needs_its_token_and_manages_studies(app, connect):
    http = app.test_client()
    assert http.get("/admin").status_code == 403
    assert http.get("/admin?token=wrong").status_code == 403
    page = http.get("/admin?token=test-admin")
    assert page.status_code == 200 and b"ctl" in page.data and b"win rate" in page.data
    # the cookie set by the first visit is enough afterwards
    config = {"study_id": "made-here", "kind": "controlled", "arms": ["none", "both"], "sessions": 4}
    assert http.post("/admin/studies", data={"config": json.dumps(config)}).status_code == 302
    assert http.post("/admin/studies", data={"config": json.dumps(config)}).status_code == 409
    bad = http.post("/admin/studies", data={"config": json.dumps({**config, "study_id": "b", "sessions": 2})})
    assert bad.status_code == 400 and b"at least 4 sessions" in bad.data
    Player(connect()).ok("join", {"study": "made-here", "pid": "early"})
    assert http.post("/admin/studies/made-here/close").status_code == 302
    late = Player(connect())
    late.refused("join", {"study": "made-here", "pid": "late"}, "closed")
    Player(connect()).ok("join", {"study": "made-here", "pid": "early"})    # those already in go on
    monitor = http.get("/admin/monitor.json").get_json()
    made = next(s for s in monitor if s["study"]["study_id"] == "made-here")
    assert made["status"] == "closed" and sum(a["participants"] for a in made["arms"]) == 1
    export = http.get("/admin/export.zip?format=csv")
    names = zipfile.ZipFile(io.BytesIO(export.data)).namelist()
    assert {"games.csv", "rounds.csv", "ratings.csv", "events.jsonl"} <= set(names)
    assert app.test_client().get("/admin/export.zip").status_code == 403


def test_rating_task_gives_each_item_to_three_different_raters(app, connect):
    http = app.test_client()
    player = started(connect, "aw", "rated-player")
    gid = player.game["game_id"]
    player.ok("ask", {"game_id": gid, "question": "what shape is the red object?"})
    player.ok("explain", {"game_id": gid})
    player.ok("rate", {"game_id": gid, "rating": RATINGS[0]})
    player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})

    raters = {name: Rater(app, name) for name in ("r1", "r2", "r3", "r4", "r5")}   # each in a browser of its own
    first = raters["r1"].next().get_json()
    assert first["question"] == "what shape is the red object?" and first["explanation"]["kind"]
    assert http.get(first["image_url"]).data[:4] == b"\x89PNG"
    item = first["item"]
    for rater in ("r1", "r2", "r3"):
        assert raters[rater].rate(item).get_json() == {"ok": True}
    again = raters["r1"].rate(item)
    assert again.status_code == 400 and "already" in again.get_json()["error"]
    fourth = raters["r4"].rate(item)
    assert fourth.status_code == 400 and "3 ratings" in fourth.get_json()["error"]
    nxt = raters["r4"].next().get_json()
    assert nxt.get("item") != item
    assert raters["r5"].rate(item, answer_rating="great").status_code == 400
    assert http.post("/api/rate", data="nonsense").status_code == 400
    assert http.get("/api/rate/next?rater=<bad>").status_code == 400
    rated = [e for e in app.extensions["exag"].store.events() if e["type"] == "rater_rating" and e["item"] == item]
    assert len(rated) == 3


def test_bot_plays_through_the_real_socket(live_server):
    controlled = play_games(live_server.url, 2, "controlled", arm="both", study="ctl", progress=False)
    assert controlled["games"] == 2 and not controlled["errors"]
    assert controlled["ask_to_answer_ms"]["n"] == 6
    at_will = play_games(live_server.url, 1, "at-will", study="aw", progress=False)
    assert at_will["games"] == 1 and not at_will["errors"] and at_will["explain_ms"]["n"] >= 1


def test_the_default_agent_is_named_as_the_preset_it_stands_for():
    """README, the start message and /healthz name one agent alike: "default" is the shipped medium preset."""
    from vqa_agent.checkpoints import DEFAULT_AGENT, agent_name

    assert agent_name("default") == f"{DEFAULT_AGENT} (default)" == "medium (default)"
    assert agent_name("weak") == "weak" and agent_name("/srv/agents/private") == "/srv/agents/private"
