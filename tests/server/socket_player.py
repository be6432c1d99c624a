"""A participant driving the game through Flask-SocketIO's test client."""
from __future__ import annotations

import json


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


def events_of(app, game_id: str) -> list[dict]:
    return [e for e in app.extensions["exag"].store.events() if e["game"] == game_id]
