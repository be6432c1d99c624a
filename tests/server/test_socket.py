"""The game through Socket.IO (Flask-SocketIO's test client) against a real Redis, the tiny agent and
its explainers: whole games in both settings, the event log they leave, and refusals of bad input."""
from __future__ import annotations

import time

from game.settings import RATINGS
from server.events import CPU_FLUSH_S, CPU_STATS

from socket_player import Player, events_of, joined, next_game, started


def test_controlled_games_alternate_without_and_with_explanations(app, connect):
    player = started(connect, "ctl", "alice", arm="both")
    assert player.state["participant"]["arm"] == "both"
    for number in range(4):
        game = player.game
        assert len(game["images"]) == 5 and game["points"] == 10
        assert game["with_explanations"] == (number % 2 == 1)      # sessions alternate, starting without
        player.ok("ask", {"game_id": game["game_id"], "question": "Is there a red cube?"})
        last = player.game["rounds"][-1]
        assert last["answer"] in ("yes", "no") and player.game["points"] == 9 and player.game["phase"] == "rating"
        if game["with_explanations"]:
            shown = last["explanations"]["for_every_image"]
            assert set(shown) == set(game["images"])
            assert {e["kind"] for e in shown[game["images"][0]]} == {"attention", "qa_pairs"}
            assert all("grade" not in e for es in shown.values() for e in es)
        else:
            assert last["explanations"] is None
        player.ok("rate", {"game_id": game["game_id"], "rating": RATINGS[1]})
        player.ok("guess", {"game_id": game["game_id"], "image": game["images"][0]})
        assert player.game["phase"] == "finished" and player.game["secret"] in game["images"]
        assert player.game["score"] == (9 if player.game["won"] else 0)
        player.ok("next_game", {"game_id": game["game_id"]})
    assert player.state["stage"] == "questionnaire" and player.state["done"] is None
    player.refused("questionnaire", {"answers": {"trust": "Agree"}}, "please answer")
    answers = {item["key"]: item["options"][0] if item["type"] == "scale" else "fine"
               for item in player.state["questionnaire"]}
    player.ok("questionnaire", {"answers": answers})
    assert player.state["stage"] == "done"
    assert player.state["done"] == {"completion_code": "CODE-CTL", "redirect_url": "https://example.org/done?cc=CODE-CTL"}

    # repeat participation is refused; the completion page stays
    again = Player(connect())
    kind, message = again.send("join", {"study": "ctl", "pid": "alice"})
    assert kind == "error" and "already taken part" in message["message"]
    assert again.state["stage"] == "done"


def test_at_will_game_buys_explanations_and_logs_everything(app, connect):
    player = started(connect, "aw", "bob")
    game = player.game
    assert len(game["images"]) == 20 and game["points"] == 20 and game["explanations_at_will"]
    gid = game["game_id"]
    player.ok("ask", {"game_id": gid, "question": "How many spheres are there?"})
    assert player.game["rounds"][-1]["explanations"] is None and player.game["points"] == 19
    player.ok("explain", {"game_id": gid})
    last = player.game["rounds"][-1]
    assert player.game["points"] == 17 and last["explained"] and last["cost"] == 3
    assert set(last["explanations"]["for_every_image"]) == set(game["images"])
    assert {e["kind"] for e in last["explanations"]["for_the_secret"]} == {"words", "qa_pairs", "text"}
    player.refused("explain", {"game_id": gid}, "already")
    player.ok("rate", {"game_id": gid, "rating": RATINGS[0]})
    player.ok("guess", {"game_id": gid, "image": game["images"][3]})
    assert player.game["score"] in (0, 17)

    events = events_of(app, gid)
    kinds = [e["type"] for e in events]
    assert kinds == ["game_start", "question", "explanations_bought", "rating", "guess"]
    start, question, bought, rating, guess = events
    assert start["secret"] == game["images"].index(player.game["secret"]) and start["difficulty"] > 0
    assert question["parsed"] and question["program"] and question["truth"] is not None
    assert question["answer_grade"] in ("correct", "somewhat correct", "completely wrong")
    assert question["ask_to_answer_ms"] > 0
    assert len(bought["explanations"]) == 20 + 3
    assert all(x["grade"] for x in bought["explanations"])
    assert all("mask" not in o for x in bought["explanations"] if x["kind"] == "attention" for o in x["payload"]["objects"])
    assert rating["rating"] == RATINGS[0] and rating["explained"]
    assert guess["right"] == (player.game["secret"] == game["images"][3])


def test_refresh_and_reconnect_resume_the_exact_state(app, connect):
    player = started(connect, "aw", "carol")
    gid = player.game["game_id"]
    player.ok("ask", {"game_id": gid, "question": "is there a metal cylinder?"})
    before = player.state
    player.client.disconnect()
    again = joined(connect, "aw", "carol")
    assert again.state == before
    again.ok("rate", {"game_id": gid, "rating": RATINGS[2]})


BAD_MESSAGES = [
    ("ask", None, "must be a JSON object"),
    ("ask", "just a string", "must be a JSON object"),
    ("ask", [1, 2], "must be a JSON object"),
    ("ask", {"game_id": 5, "question": "x"}, "must be a string"),
    ("ask", {"question": "is there a cube?"}, "missing"),
    ("ask", {"game_id": "GAME", "question": "x", "extra": 1}, "unknown field"),
    ("ask", {"game_id": "GAME", "question": "x" * 301}, "longer than 300"),
    ("ask", {"game_id": "GAME", "question": "   "}, "empty"),
    ("ask", {"game_id": "someone-elses-game", "question": "is there a cube?"}, "not your current game"),
    ("ask", {"game_id": "../../etc/passwd", "question": "is there a cube?"}, "may only hold"),
    ("guess", {"game_id": "GAME", "image": "not-a-token"}, "one of this game's images"),
    ("guess", {"game_id": "GAME", "image": True}, "must be a string"),
    ("rate", {"game_id": "GAME", "rating": "Great"}, "cannot rate"),
    ("rate", {"game_id": "GAME", "rating": RATINGS[0]}, "cannot rate"),
    ("explain", {"game_id": "GAME"}, "cannot be bought"),
    ("next_game", {"game_id": "GAME"}, "guess first"),
    ("consent", {"agree": True}, "cannot consent now"),
    ("questionnaire", {"answers": {"trust": "Agree"}}, "cannot send"),
    ("begin", {}, "cannot start"),
    ("nonsense", {"x": 1}, "unknown event"),
]


def test_bad_messages_are_refused_and_change_nothing(app, connect):
    player = started(connect, "ctl", "dave", arm="none")
    gid = player.game["game_id"]
    before = player.state
    for event, payload, match in BAD_MESSAGES:
        if isinstance(payload, dict):
            payload = {k: gid if v == "GAME" else v for k, v in payload.items()}
        player.refused(event, payload, match)
    player.client.get_received()
    player.ok("join", {"study": "ctl", "pid": "dave"})
    assert player.state == before
    store = app.extensions["exag"].store
    refused = [e for e in store.diagnostics(1000) if e["kind"] == "refused" and e["participant"] == "pid:dave"]
    assert len(refused) >= 10
    assert not [e for e in store.events() if e["type"] == "refused"]     # refusals are not study events


def test_out_of_turn_moves_are_refused(app, connect):
    player = started(connect, "ctl", "erin", arm="none")
    gid = player.game["game_id"]
    player.ok("ask", {"game_id": gid, "question": "<i>is there a cube?</i>"})
    assert player.game["rounds"][-1]["question"] == "<i>is there a cube?</i>"   # kept as text
    player.refused("ask", {"game_id": gid, "question": "is there a sphere?"}, "rate how helpful")
    player.refused("guess", {"game_id": gid, "image": player.game["images"][0]}, "rate how helpful")
    player.refused("rate", {"game_id": gid, "rating": "Great"}, "rate with one of")
    player.ok("rate", {"game_id": gid, "rating": RATINGS[4]})
    player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})
    player.refused("guess", {"game_id": gid, "image": player.game["images"][1]}, "game is over")
    player.refused("ask", {"game_id": gid, "question": "is there a sphere?"}, "game is over")


def test_join_refuses_garbage_ids_unknown_studies_and_chosen_arms_in_real_studies(app, connect):
    player = Player(connect())
    player.refused("join", {"study": "ctl", "pid": "<img src=x>"}, "may only hold")
    player.refused("join", {"study": "ctl", "pid": "a" * 65}, "longer than 64")
    player.refused("join", {"study": "nope", "pid": "frank"}, "no study")
    player.refused("join", {"study": "realb", "pid": "frank", "arm": "both"}, "assigns arms itself")
    player.refused("join", {"study": "realb"}, "no participant id")
    player.refused("join", {"study": "ctl", "pid": "frank", "arm": "telepathy"}, "unknown arm")
    player.refused("ask", {"game_id": "x", "question": "hi"}, "join the study first")
    prolific = Player(connect())
    prolific.ok("join", {"study": "realb", "PROLIFIC_PID": "5f0c", "STUDY_ID": "s1", "SESSION_ID": "x9"})
    assert prolific.state["participant"]["pid"] == "prolific:5f0c:x9"
    anonymous = Player(connect())
    anonymous.ok("join", {"study": "aw"})
    assert anonymous.state["participant"]["pid"].startswith("pid:anon-")


def test_assignment_is_balanced_and_ignores_dropouts(app, connect):
    store = app.extensions["exag"].store
    arms = [joined(connect, "real", f"p{i}").state["participant"]["arm"] for i in range(8)]
    assert sorted(arms) == sorted(["none", "attention", "relqa", "both"] * 2)
    # a participant who went silent long ago no longer holds a place in their arm
    dropout = store.participant("real", "pid:p0")
    dropout["last_seen"] -= 10 * app.extensions["exag"].config.dropout_after_s
    store.commit(participant=dropout)
    assert joined(connect, "real", "p8").state["participant"]["arm"] == dropout["arm"]


def test_one_players_unreadable_question_fails_only_their_round(app, connect):
    """Issue 10, finding 1: six at-will players ask at once; one asks what the agent cannot read. The
    five innocent asks are answered; the sixth gets an honest message, not "the question is empty"."""
    import threading

    players = [started(connect, "aw", f"six-{i}") for i in range(6)]
    questions = ["is there a red cube?"] * 5 + ["есть ли красный куб?"]
    replies: list = [None] * 6

    def ask(i):
        replies[i] = players[i].send("ask", {"game_id": players[i].game["game_id"], "question": questions[i]})

    for _ in range(2):     # the second time with "???" as the odd one out
        threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [kind for kind, _ in replies[:5]] == ["state"] * 5, replies[:5]
        assert replies[5][0] == "error"
        assert "I only understand English questions" in replies[5][1]["message"]
        for player in players[:5]:
            player.ok("rate", {"game_id": player.game["game_id"], "rating": RATINGS[0]})
        questions[5] = "???"


def test_the_web_process_accounts_its_cpu_per_event(app, connect):
    """Each handler's own CPU (server/events.py) is summed per event in the hash exag:cpu:web, which the web
    process adds to by itself, at most once a second; refused messages count too."""
    services = app.extensions["exag"]
    services.cpu.flush()           # earlier tests' totals are in the hash before this one's are counted

    def totals() -> dict[str, float]:
        return {k: float(v) for k, v in services.store.redis.hgetall(CPU_STATS).items()}

    before = totals()
    player = started(connect, "ctl", "cpu-account", arm="none")              # join, consent, begin
    player.refused("rate", {"game_id": player.game["game_id"], "rating": RATINGS[0]}, "cannot rate")
    next_game(player)                                                         # ask, rate, guess, next_game
    sent = {"join": 1, "consent": 1, "begin": 1, "ask": 1, "rate": 2, "guess": 1, "next_game": 1}

    def counted(now: dict) -> dict[str, float]:
        return {e: now.get(f"{e}:n", 0) - before.get(f"{e}:n", 0) for e in sent}

    deadline = time.monotonic() + 5 * CPU_FLUSH_S
    while counted(after := totals()) != sent and time.monotonic() < deadline:
        time.sleep(0.05)
    assert counted(after) == sent
    for event in sent:
        spent = after[f"{event}:cpu_ms"] - before.get(f"{event}:cpu_ms", 0)
        assert 0 < spent < 1000 * sent[event], (event, spent)       # milliseconds of this thread's CPU
