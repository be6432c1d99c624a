"""A player is sent only what the page shows, at the precision it shows it (Issue 10, finding 3): every
explanation payload carries exactly the fields its renderer (frontend/js/explanations/) reads, shares in
whole percent (dom.js percent()), ObjScene's score to 3 significant digits (the tooltip's toPrecision(3)),
boxes in whole pixels; and no other number in a player's state is a fraction."""
from __future__ import annotations

import math

from game.settings import RATINGS
from game.study import StudyConfig
from server.player_safe import unpack_counts, unpack_grid

from socket_player import next_game, started

FIELDS = {   # kind -> the payload's fields, and each listed item's fields
    "attention": ({"grid", "objects"}, {"box", "weight", "mask"}),
    "words": ({"words"}, {"word", "probability", "score"}),
    "qa_pairs": ({"pairs"}, {"question", "answer", "probability"}),
    "text": ({"text"}, set()),
}


def whole_percent(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1 \
        and round(value, 2) == value


def three_digits(value) -> bool:
    return value is None or (isinstance(value, float) and math.isfinite(value) and float(f"{value:.3g}") == value)


def check_explanation(explanation: dict) -> None:
    assert set(explanation) == {"explainer", "kind", "payload"}, explanation.keys()
    kind, payload = explanation["kind"], explanation["payload"]
    fields, item_fields = FIELDS[kind]
    assert set(payload) == fields, (kind, set(payload))
    if kind == "attention":
        assert set(payload["grid"]) == {"rows", "cols", "percent"}     # one byte a cell: whole percent
        grid = unpack_grid(payload["grid"])
        assert all(whole_percent(v) for row in grid for v in row), grid
        assert max((v for row in grid for v in row), default=1) in (0, 1)   # shares of the largest cell
        for o in payload["objects"]:
            assert set(o) == item_fields, set(o)
            assert all(isinstance(v, int) for v in o["box"]), o["box"]
            assert whole_percent(o["weight"]), o["weight"]
            assert set(o["mask"]) == {"size", "rle"} and all(isinstance(v, int) for v in o["mask"]["size"])
            counts = unpack_counts(o["mask"]["rle"])        # exact run lengths, packed as text
            assert min(counts, default=0) >= 0 and sum(counts) == o["mask"]["size"][0] * o["mask"]["size"][1]
    elif kind == "words":
        for w in payload["words"]:
            assert set(w) == item_fields, set(w)
            assert isinstance(w["word"], str) and whole_percent(w["probability"]), w
            assert three_digits(w["score"]), w
    elif kind == "qa_pairs":
        for p in payload["pairs"]:
            assert set(p) == item_fields, set(p)
            assert isinstance(p["question"], str) and isinstance(p["answer"], str) and whole_percent(p["probability"]), p
    else:
        assert isinstance(payload["text"], str)


def check_state(state: dict) -> int:
    """Checks every explanation in a state and that no other number in it is a fraction; returns how many
    explanations it held."""
    seen = 0

    def walk(value, where: str) -> None:
        nonlocal seen
        if isinstance(value, dict):
            if "payload" in value and "kind" in value:
                check_explanation(value)
                seen += 1
                return
            for k, v in value.items():
                walk(v, f"{where}.{k}")
        elif isinstance(value, list):
            for v in value:
                walk(v, where)
        elif isinstance(value, float):
            raise AssertionError(f"{where}: a fraction {value!r} outside the explanations")

    walk(state, "state")
    return seen


def play(player, questions: list[str], buy: bool) -> list[dict]:
    states, gid = [player.state], player.game["game_id"]
    for question in questions:
        states.append(player.ok("ask", {"game_id": gid, "question": question}))
        if buy:
            states.append(player.ok("explain", {"game_id": gid}))
        states.append(player.ok("rate", {"game_id": gid, "rating": RATINGS[2]}))
    return states


def test_at_will_payloads_carry_only_what_the_page_shows(app, connect):
    player = started(connect, "aw", "precise-1")
    states = play(player, ["what color is the large sphere?", "is there a cylinder?"], buy=True)
    counts = [check_state(s) for s in states]
    # attention on 20 images, ObjScene, RelQA and NLE for the secret: the state holds the latest round's ...
    assert counts[-1] == 20 + 3, counts
    # ... and `history` answers the earlier round's, as precise
    kind, answer = player.history({"game_id": player.game["game_id"], "round": 0})
    assert kind == "round" and check_state(answer) == 20 + 3


def test_controlled_payloads_carry_only_what_the_page_shows(app, connect):
    store = app.extensions["exag"].store
    store.save_study(StudyConfig("precise-ctl", kind="controlled", arms=("both", "objscene+introspect+nle"),
                                 games_per_session=1, choose_arm=True), "open",
                     {"type": "study_created", "study": "precise-ctl"}, only_if_new=True)
    for number, (arm, kinds) in enumerate((("both", 2), ("objscene+introspect+nle", 3))):
        player = started(connect, "precise-ctl", f"precise-ctl-{number}", arm)
        next_game(player, rating=RATINGS[2])
        assert player.game["with_explanations"]
        states = play(player, ["how many spheres are there?"], buy=False)
        assert max(check_state(s) for s in states) == 5 * kinds


def test_the_event_log_keeps_full_precision(app, connect):
    player = started(connect, "aw", "precise-log")
    play(player, ["is there a metal cube?"], buy=True)
    events = [e for e in app.extensions["exag"].store.events() if e["game"] == player.game["game_id"]]
    logged = {x["kind"]: x["payload"] for e in events if e["type"] == "explanations_bought" for x in e["explanations"]}
    assert "distance" in logged["words"]["words"][0] and "distance" in logged["qa_pairs"]["pairs"][0]
    shares = [w["probability"] for w in logged["words"]["words"]] + [p["probability"] for p in logged["qa_pairs"]["pairs"]]
    assert any(round(v, 2) != v for v in shares)
