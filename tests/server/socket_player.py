"""A participant driving the game through Flask-SocketIO's test client."""
from __future__ import annotations

import json
from urllib.parse import parse_qsl, urlencode, urlsplit

from server import browser


def signed_cookie(app_or_play, browser_id: str) -> str:
    """The cookie value the server gives the browser `browser_id` (signed, server/browser.py): the same for the
    same id on every app of one Redis. `app_or_play`: a Flask app, or a Play."""
    play = app_or_play.extensions["exag"].play if hasattr(app_or_play, "extensions") else app_or_play
    return play.browsers.cookie(f"test-{browser_id}")


def socket_client(app, browser_id: str = "browser-1"):
    """A Socket.IO test client in a browser of its own: its handshake sends the browser cookie (the one the
    game page gives, server/browser.py) of the Flask test client it shares; the same `browser_id` is the
    same browser, also across apps (a restarted server). `browser_id=None`: a browser without the cookie."""
    http = app.test_client()
    if browser_id is not None:
        http.set_cookie(browser.COOKIE, signed_cookie(app, browser_id))
    return app.extensions["socketio"].test_client(app, flask_test_client=http)


class Player:
    def __init__(self, client) -> None:
        self.client = client
        self.state = None

    def send(self, event: str, payload=None) -> tuple[str, dict]:
        self.client.get_received()
        if payload is None:
            self.client.emit(event)
        else:
            self.client.emit(event, payload)
        received = self.client.get_received()
        errors = [m["args"][0] for m in received if m["name"] == "error"]
        states = [json.loads(m["args"][0]) for m in received if m["name"] == "state"]
        if states:
            self.state = states[-1]
        if errors:
            return "error", errors[-1]
        assert states, f"no reply to {event}"
        return "state", states[-1]

    def ok(self, event: str, payload=None) -> dict:
        kind, data = self.send(event, payload)
        assert kind == "state", f"{event} refused: {data}"
        return data

    def refused(self, event: str, payload=None, match: str = "") -> str:
        kind, data = self.send(event, payload)
        assert kind == "error", f"{event} {payload!r} was accepted"
        assert match.lower() in data["message"].lower(), data["message"]
        return data["message"]

    def history(self, payload) -> tuple[str, dict]:
        """Sends `history`: ("round", {"game_id", "round", "explanations"}) or ("error", {...})."""
        self.client.get_received()
        self.client.emit("history", payload)
        received = self.client.get_received()
        assert not any(m["name"] == "state" for m in received), "history changed the state"
        answers = [("round", json.loads(m["args"][0])) if m["name"] == "round" else ("error", m["args"][0])
                   for m in received if m["name"] in ("round", "error")]
        assert len(answers) == 1, received
        return answers[0]

    @property
    def game(self) -> dict:
        return self.state["game"]


def joined(connect, study: str, pid: str, arm: str | None = None) -> Player:
    player = Player(connect())
    payload = {"study": study, "pid": pid}
    if arm:
        payload["arm"] = arm
    player.ok("join", payload)
    return player


def started(connect, study: str, pid: str, arm: str | None = None) -> Player:
    player = joined(connect, study, pid, arm)
    assert player.state["stage"] == "consent"
    player.ok("consent", {"agree": True})
    assert player.state["stage"] == "instructions"
    player.ok("begin", {})
    assert player.state["stage"] == "game"
    return player


def next_game(player: Player, question: str = "is there a red cube?", rating: str = "Somewhat helpful") -> dict:
    """Plays the current game with one question and a guess, then goes on; the new state."""
    gid = player.game["game_id"]
    player.ok("ask", {"game_id": gid, "question": question})
    player.ok("rate", {"game_id": gid, "rating": rating})
    player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})
    return player.ok("next_game", {"game_id": gid})


class Rater:
    """An independent rater's browser, opened at a rating link (by default the researcher's signed link for
    `rater_id`); opening the page gives the browser its cookie. Answers are Flask test responses."""

    def __init__(self, app, rater_id: str, link: str | None = None, http=None) -> None:
        self.http = http or app.test_client()
        link = link or app.extensions["exag"].rating.link(rater_id)
        assert self.http.get(link).status_code == 200
        self.link = dict(parse_qsl(urlsplit(link).query))

    def next(self):
        return self.http.get(f"/api/rate/next?{urlencode(self.link)}")

    def rate(self, item: str, explanation_rating: str = "Mostly on-point", answer_rating: str = "correct"):
        return self.http.post("/api/rate", json={**self.link, "item": item, "explanation_rating": explanation_rating,
                                                 "answer_rating": answer_rating})


def events_of(app, game_id: str) -> list[dict]:
    return [e for e in app.extensions["exag"].store.events() if e["game"] == game_id]


def guessed_to_the_end(player: Player, text_answer: str = "") -> None:
    """Plays a started participation to its end: a guess a game, then the questionnaire (`text_answer` for
    its text items)."""
    while player.state["stage"] == "game":
        gid = player.game["game_id"]
        player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})
        player.ok("next_game", {"game_id": gid})
    player.ok("questionnaire", {"answers": {item["key"]: item["options"][0] if item["type"] == "scale" else text_answer
                                            for item in player.state["questionnaire"]}})
    assert player.state["stage"] == "done"
