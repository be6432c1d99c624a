"""Small states (Issue 12): a state carries every round's question, answer, rating and cost but only the
latest round's explanations; the page fetches an earlier round's with `history` (answered by `round`,
exactly as the state showed it then); masks and heatmaps are packed (server/player_safe.py).

Sizes are measured on the JSON text the server emits. "Before" is what HEAD's state (every round's
explanations, masks as JSON lists of run lengths, the grid as rows of 2-decimal shares) would have held,
rebuilt from the same rounds."""
from __future__ import annotations

import json

from game.settings import RATINGS
from game.study import StudyConfig
from experiments.benchmark.state_size import size, unpacked
from server.events import as_text
from server.store import StoredJSON

from socket_player import next_game, started

QUESTIONS = ["what color is the large sphere?", "is there a cylinder?", "how many cubes are there?",
             "is there a red thing?", "what material is the small cube?", "are there more spheres than cubes?",
             "is there a metal cylinder?", "what shape is the blue thing?"]
SMALL_BYTES = 5_000            # a late state without its latest round's explanations: "a few KB"
LONG_AT_WILL = StudyConfig("small-aw", kind="at-will", arms=("both",), games_per_session=2, nle=True, choose_arm=True,
                           settings={"start_points": 30})     # 8 rounds with explanations (3 points each)


def test_a_late_at_will_state_is_small_and_history_returns_earlier_rounds(app, connect):
    app.extensions["exag"].store.save_study(LONG_AT_WILL, "open", {"type": "study_created", "study": "small-aw"},
                                            only_if_new=True)
    player = started(connect, "small-aw", "small-1")
    gid = player.game["game_id"]
    shown = []                        # each round's explanations as the state showed them when it was the latest
    for question in QUESTIONS:
        player.ok("ask", {"game_id": gid, "question": question})
        player.ok("explain", {"game_id": gid})
        shown.append(player.game["rounds"][-1]["explanations"])
        player.ok("rate", {"game_id": gid, "rating": RATINGS[2]})
    state = player.state
    rounds = state["game"]["rounds"]
    assert len(rounds) == len(QUESTIONS) and all(r["explained"] and r["rating"] for r in rounds)
    assert all("explanations" not in r for r in rounds[:-1]) and rounds[-1]["explanations"] == shown[-1]

    after = size(state)
    latest = size(rounds[-1]["explanations"])
    without = after - latest
    before = size({**state, "game": {**state["game"], "rounds": [
        {**r, "explanations": unpacked(e)} for r, e in zip(rounds, shown)]}})
    print(f"\nlate at-will state ({len(rounds)} rounds, 20 images, explanations every round): "
          f"before {before:,} B, after {after:,} B ({without:,} B + the latest round's explanations {latest:,} B; "
          f"unpacked they were {size(unpacked(shown[-1])):,} B)")
    assert without < SMALL_BYTES, without
    assert latest < 0.6 * size(unpacked(shown[-1]))          # packed masks and heatmaps (the tiny world: ~0.5)
    assert after < before / 10

    # the latest round's explanations are sent as the text they were stored as (not encoded again): the same text
    view = app.extensions["exag"].play.view("small-aw", "pid:small-1")
    assert isinstance(view["game"]["rounds"][-1]["explanations"], StoredJSON)
    assert as_text(view) == json.dumps(view, separators=(",", ":")) and json.loads(as_text(view)) == state

    # history: an earlier round's explanations, exactly as shown then; any round of the game
    for number in (0, 3, len(QUESTIONS) - 1):
        kind, answer = player.history({"game_id": gid, "round": number})
        assert kind == "round" and answer == {"game_id": gid, "round": number, "explanations": shown[number]}


def test_history_refuses_bad_messages(app, connect):
    player = started(connect, "aw", "small-2")
    gid = player.game["game_id"]
    player.ok("ask", {"game_id": gid, "question": "is there a cube?"})
    kind, answer = player.history({"game_id": gid, "round": 0})
    assert kind == "round" and answer["explanations"] is None           # a round without explanations
    other = started(connect, "aw", "small-3")
    refusals = [
        ({"game_id": "nosuchgame", "round": 0}, "not one of your games"),
        ({"game_id": other.game["game_id"], "round": 0}, "not one of your games"),   # another player's game
        ({"game_id": gid, "round": 1}, "no question 2"),
        ({"game_id": gid, "round": -1}, "round must be from 0"),
        ({"game_id": gid, "round": 10_000}, "round must be from 0"),
        ({"game_id": gid, "round": "0"}, "round must be a integer"),
        ({"game_id": gid, "round": True}, "round must be a integer"),
        ({"game_id": gid, "round": 0.5}, "round must be a integer"),
        ({"game_id": gid}, "round is missing"),
        ({"game_id": gid, "round": 0, "extra": 1}, "unknown field"),
        ([gid, 0], "JSON object"),
    ]
    for payload, message in refusals:
        kind, answer = player.history(payload)
        assert kind == "error" and answer["event"] == "history", (payload, answer)
        assert message in answer["message"], (payload, answer["message"])
    # a connection that has not joined gets no one's rounds
    stranger = connect(browser_id="stranger")
    stranger.emit("history", {"game_id": gid, "round": 0})
    received = stranger.get_received()
    assert [m["name"] for m in received] == ["error"] and "join" in received[0]["args"][0]["message"]


def test_a_controlled_state_carries_only_its_latest_round(app, connect):
    player = started(connect, "ctl", "small-ctl", "both")
    next_game(player, rating=RATINGS[1])
    assert player.game["with_explanations"]
    gid = player.game["game_id"]
    shown = []
    for question in QUESTIONS[:4]:
        player.ok("ask", {"game_id": gid, "question": question})
        shown.append(player.game["rounds"][-1]["explanations"])
        player.ok("rate", {"game_id": gid, "rating": RATINGS[1]})
        if player.game["phase"] != "asking":
            break
    rounds = player.game["rounds"]
    assert all("explanations" not in r for r in rounds[:-1]) and rounds[-1]["explanations"] == shown[len(rounds) - 1]
    latest = size(rounds[-1]["explanations"])
    print(f"\ncontrolled state ({len(rounds)} rounds, 5 images): {size(player.state):,} B "
          f"({latest:,} B the latest round's explanations)")
    assert size(player.state) - latest < SMALL_BYTES
    kind, answer = player.history({"game_id": gid, "round": 0})
    assert kind == "round" and answer["explanations"] == shown[0]
