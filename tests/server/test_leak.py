"""The secret never reaches the client before the guess: every payload emitted and every HTTP response
of whole games in both settings is recorded and searched for any way to tell the secret apart."""
from __future__ import annotations

import json

from game.settings import RATINGS

from socket_player import Player, Rater, joined, started

FORBIDDEN_KEYS = {"secret", "guess", "score", "won", "truth", "grade", "answer_grade", "program",
                  "world_images", "is_secret", "position", "probability_of_secret"}


PAYLOAD_FORBIDDEN_KEYS = {"secret", "is_secret", "truth", "grade", "guess", "won"}   # ("score" is ObjScene's S(O))


def keys_of(value, skip_payloads: bool = True) -> set[str]:
    """Every key in a message (by default not looking inside explanation payloads)."""
    if isinstance(value, dict):
        keys = set(value)
        for k, v in value.items():
            if not (skip_payloads and k == "payload"):
                keys |= keys_of(v, skip_payloads)
        return keys
    if isinstance(value, list):
        return set().union(set(), *(keys_of(v, skip_payloads) for v in value))
    return set()


def payload_keys(value) -> set[str]:
    """Every key inside the explanation payloads of a message."""
    if isinstance(value, dict):
        inside = keys_of(value["payload"], skip_payloads=False) if "payload" in value else set()
        return inside.union(*(payload_keys(v) for k, v in value.items() if k != "payload"))
    if isinstance(value, list):
        return set().union(set(), *(payload_keys(v) for v in value))
    return set()


def play_recorded(player: Player, client_http, questions: list[str], buy: bool) -> tuple[list[dict], dict, list]:
    """Plays the player's current game, recording every message received and every image response."""
    received, responses = [player.state], []
    game = player.game
    gid = game["game_id"]
    for token in game["images"]:
        response = client_http.get(game["image_urls"][token])
        assert response.status_code == 200
        responses.append(response)

    def send(event, payload):
        kind, data = player.send(event, payload)
        assert kind == "state", data
        received.append(data)

    for question in questions:
        send("ask", {"game_id": gid, "question": question})
        if buy:
            send("explain", {"game_id": gid})
        send("rate", {"game_id": gid, "rating": RATINGS[2]})
    final = player.state["game"]
    send("guess", {"game_id": gid, "image": final["images"][0]})
    return received[:-1], received[-1], responses


def assert_nothing_points_to_the_secret(before_guess: list[dict], after: dict, responses: list) -> None:
    tokens = after["game"]["images"]
    secret = after["game"]["secret"]
    for message in before_guess:
        assert not (keys_of(message) & FORBIDDEN_KEYS), keys_of(message) & FORBIDDEN_KEYS
        assert not (payload_keys(message) & PAYLOAD_FORBIDDEN_KEYS), payload_keys(message) & PAYLOAD_FORBIDDEN_KEYS
        text = json.dumps(message)
        assert "EXAG_" not in text            # no world file names
        # every image token occurs equally often: nothing is said about one image that is not said about all
        counts = {t: text.count(t) for t in tokens}
        assert len(set(counts.values())) == 1, counts
        game = message.get("game") or {}
        assert "difficulty" not in game       # the set's measured difficulty stays on the server
        for round_ in game.get("rounds", []):
            shown = round_.get("explanations")
            if shown:
                assert set(shown["for_every_image"]) in (set(), set(tokens))
                assert not any(t in json.dumps(shown["for_the_secret"]) for t in tokens)
        for url in (game.get("image_urls") or {}).values():
            assert url.startswith(f"/image/{game['game_id']}/") and "pool" not in url
    # image responses differ in their bytes only
    headers = [{k: v for k, v in r.headers.items() if k.lower() != "content-length"} for r in responses]
    assert all(h == headers[0] for h in headers)
    assert not any(k.lower() in ("etag", "last-modified") for k in headers[0])
    assert secret in tokens and after["game"]["phase"] == "finished"


def test_no_payload_or_response_identifies_the_secret(app, connect):
    http = app.test_client()
    player = started(connect, "ctl", "leak-1", "both")
    controlled = play_recorded(player, http, ["is there a red cube?", "how many spheres are there?"], buy=False)
    assert_nothing_points_to_the_secret(*controlled)
    # the second controlled game shows the arm's explanations for every image
    player.ok("next_game", {"game_id": player.state["game"]["game_id"]})
    assert player.state["game"]["with_explanations"]
    with_explanations = play_recorded(player, http, ["is there a metal thing?"], buy=False)
    assert any(r.get("explanations") for m in with_explanations[0] if m.get("game") for r in m["game"]["rounds"])
    assert_nothing_points_to_the_secret(*with_explanations)
    at_will = play_recorded(started(connect, "aw", "leak-2"), http, ["what color is the large sphere?", "is there a cylinder?"], buy=True)
    assert any(r["explanations"]["for_the_secret"] for m in at_will[0] if m.get("game") for r in m["game"]["rounds"]
               if r.get("explanations"))
    assert_nothing_points_to_the_secret(*at_will)


def test_rating_items_appear_only_after_the_guess(app, connect):
    player = started(connect, "aw", "leak-3")
    gid = player.game["game_id"]
    player.ok("ask", {"game_id": gid, "question": "is there a rubber cube?"})
    player.ok("explain", {"game_id": gid})
    player.ok("rate", {"game_id": gid, "rating": RATINGS[0]})
    rater = Rater(app, "leak-rater")

    def items() -> set[str]:
        seen = set()
        store = app.extensions["exag"].store
        for item_id in store.redis.lrange("exag:rate:items", 0, -1):
            seen.add(json.loads(store.redis.hget(f"exag:rate:item:{item_id}", "item"))["game"])
        assert rater.next().status_code == 200
        for item_id in store.redis.lrange("exag:rate:items", 0, -1):
            seen.add(json.loads(store.redis.hget(f"exag:rate:item:{item_id}", "item"))["game"])
        return seen

    assert gid not in items()
    player.ok("guess", {"game_id": gid, "image": player.game["images"][1]})
    assert gid in items()


def test_checks_never_send_their_right_answers(app, connect):
    """The server grades every participant check (game/checks.py): no state says which option is right or
    which number a colour plate shows, not even after a wrong attempt."""
    checks = {"comprehension": {}, "colour_screen": {}, "attention": {"every": 1}, "demographics": {}}
    config = {"study_id": "leak-checks", "kind": "controlled", "arms": ["none"], "sessions": 4,
              "games_per_session": 1, "choose_arm": True, "settings": {"min_questions": 0}, "checks": checks}
    assert app.test_client().post("/admin/studies?token=test-admin",
                                  data={"config": json.dumps(config)}).status_code == 302
    player = joined(connect, "leak-checks", "checked", arm="none")
    seen = [player.ok("consent", {"agree": True}), player.ok("begin", {})]
    first = {q["key"]: q["options"][0] for q in player.state["check"]["questions"]}
    seen += [player.ok("comprehension", {"answers": first}), player.ok("begin", {})]
    seen.append(player.ok("comprehension", {"answers": first}))
    plates = player.state["check"]["plates"]
    seen.append(player.ok("colour_screen", {"answers": {p["key"]: "" for p in plates}}))
    gid = player.game["game_id"]
    player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})
    seen.append(player.ok("next_game", {"game_id": gid}))
    assert player.state["stage"] == "attention_check"
    for state in seen:
        check = state["check"] or {}
        assert not keys_of(check) & {"answer", "correct", "right", "wrong", "passed"}, check
        assert all(set(p) == {"key", "dots"} for p in check.get("plates", []))
        assert not keys_of(state.get("instructions", {}).get("comprehension") or {}) & {"wrong", "answer"}
