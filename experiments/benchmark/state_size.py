"""Bytes per `state` a player receives, late in an at-will game and in a controlled game with
explanations: the server (the given world and agent) in this process behind a real HTTP server, a
Socket.IO client playing through it, sizes measured on the JSON text the server sends.

"after" is what the server sends now: every round's question, answer, rating and cost, but only the
latest round's explanations, with packed masks and heatmaps (server/player_safe.py); the page fetches an
earlier round's with `history`. "before" is the same state as the code before Issue 12 sent it (rebuilt
from the same rounds): every round's explanations, masks as JSON lists of run lengths, the heatmap grid
as rows of 2-decimal shares.

    python -m experiments.benchmark.state_size --world data/game-world --agent default --json results/state_size.json
"""
from __future__ import annotations

import argparse
import json
import queue
import tempfile
import threading
import time
from pathlib import Path

import socketio
from werkzeug.serving import make_server

from experiments.benchmark import write_report
from experiments.simulate.bot import browser_cookie
from game.settings import RATINGS
from server import browser
from server.player_safe import unpack_counts, unpack_grid

QUESTIONS = ["What color is the large sphere?", "Is there a cylinder?", "How many cubes are there?",
             "Is there a red thing?", "What material is the small cube?", "Are there more spheres than cubes?",
             "Is there a metal cylinder?", "What shape is the blue thing?"]
STUDIES = {   # an at-will game long enough for 8 rounds with explanations (3 points each); controlled, "both" arm
    "size-at-will": {"study_id": "size-at-will", "kind": "at-will", "arms": ["both"], "sessions": 1,
                     "games_per_session": 1, "nle": True, "choose_arm": True, "settings": {"start_points": 30}},
    "size-controlled": {"study_id": "size-controlled", "kind": "controlled", "arms": ["both"], "sessions": 4,
                        "games_per_session": 1, "choose_arm": True},
}
REPLY_TIMEOUT_S = 120


def size(value) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


def unpacked(explanations):
    """A round's explanations in the format before Issue 12."""
    if explanations is None:
        return None

    def one(e: dict) -> dict:
        if e["kind"] != "attention":
            return e
        p = e["payload"]
        return {**e, "payload": {"grid": unpack_grid(p["grid"]), "objects": [
            {**o, "mask": {"size": o["mask"]["size"], "counts": unpack_counts(o["mask"]["rle"])}} for o in p["objects"]]}}
    return {"for_every_image": {t: [one(e) for e in es] for t, es in explanations["for_every_image"].items()},
            "for_the_secret": [one(e) for e in explanations["for_the_secret"]]}


def before_bytes(state: dict, shown: list) -> int:
    rounds = [{**r, "explanations": unpacked(e)} for r, e in zip(state["game"]["rounds"], shown)]
    return size({**state, "game": {**state["game"], "rounds": rounds}})


class Player:
    """A Socket.IO client that keeps each reply's text as sent."""

    def __init__(self, url: str, study: str, pid: str, arm: str | None = None) -> None:
        self.replies: queue.Queue = queue.Queue()
        self.client = socketio.Client(reconnection=False)
        for name in ("state", "round", "error"):
            self.client.on(name, lambda data, name=name: self.replies.put((name, data)))
        cookie = f"{browser.COOKIE}={browser_cookie(url, study)}"     # the page's signed cookie (server/browser.py)
        self.client.connect(url, transports=["websocket"], wait_timeout=30, headers={"Cookie": cookie})
        self.state, self.text = None, ""
        self.send("join", {"study": study, "pid": pid, **({"arm": arm} if arm else {})})
        self.send("consent", {"agree": True})
        self.send("begin", {})

    def send(self, event: str, payload: dict) -> tuple[str, object]:
        time.sleep(0.12)      # under the server's 10 messages a second
        self.client.emit(event, payload)
        name, data = self.replies.get(timeout=REPLY_TIMEOUT_S)
        if name == "error":
            raise RuntimeError(f"{event} refused: {data['message']}")
        if name == "state":
            self.state, self.text = json.loads(data), data
        return name, data

    @property
    def game(self) -> dict:
        return self.state["game"]


def play(player: Player, questions: list[str], buy: bool) -> dict:
    gid, shown, rows = player.game["game_id"], [], []
    for question in questions:
        if player.game["phase"] != "asking" or player.game["points"] < player.game["question_cost"] + 2 * buy:
            break
        player.send("ask", {"game_id": gid, "question": question})
        if buy:
            player.send("explain", {"game_id": gid})
        shown.append(player.game["rounds"][-1]["explanations"])
        latest = size(shown[-1])
        rows.append({"round": len(shown), "after_bytes": len(player.text.encode()),
                     "latest_explanations_bytes": latest,
                     "without_explanations_bytes": len(player.text.encode()) - latest,
                     "before_bytes": before_bytes(player.state, shown)})
        player.send("rate", {"game_id": gid, "rating": RATINGS[2]})
    first = player.send("history", {"game_id": gid, "round": 0})[1]
    return {"rounds": rows, "history_round_bytes": len(first.encode()),
            "history_matches": json.loads(first)["explanations"] == shown[0]}


def run(world: Path, agent: str) -> dict:
    from server.app import create_app
    from server.config import ServerConfig

    with tempfile.TemporaryDirectory() as tmp:
        studies = Path(tmp) / "studies"
        studies.mkdir()
        for study in STUDIES.values():
            (studies / f"{study['study_id']}.json").write_text(json.dumps(study))
        app = create_app(ServerConfig(world=world, agent=agent, data_dir=Path(tmp) / "data", studies_dir=studies,
                                      seed=1, progress=False))
        server = make_server("127.0.0.1", 0, app, threaded=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        url = f"http://127.0.0.1:{server.server_port}"
        try:
            at_will = Player(url, "size-at-will", "size-aw")
            report = {"world": str(world), "agent": agent, "at_will": play(at_will, QUESTIONS, buy=True)}
            at_will.client.disconnect()
            controlled = Player(url, "size-controlled", "size-ctl", "both")
            gid = controlled.game["game_id"]      # session 1 without explanations: one round, then the next game
            controlled.send("ask", {"game_id": gid, "question": QUESTIONS[0]})
            controlled.send("rate", {"game_id": gid, "rating": RATINGS[2]})
            controlled.send("guess", {"game_id": gid, "image": controlled.game["images"][0]})
            controlled.send("next_game", {"game_id": gid})
            report["controlled"] = play(controlled, QUESTIONS, buy=False)
            controlled.client.disconnect()
        finally:
            server.shutdown()
            thread.join(timeout=10)
            app.extensions["exag"].close()
    return report


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world", type=Path, default=Path("data/game-world"))
    parser.add_argument("--agent", default="default")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    report = run(args.world, args.agent)
    for setting in ("at_will", "controlled"):
        print(f"{setting}: round  before_B  after_B  (without the latest round's explanations + them)")
        for row in report[setting]["rounds"]:
            print(f"  {row['round']:>5} {row['before_bytes']:>9,} {row['after_bytes']:>8,}  "
                  f"({row['without_explanations_bytes']:,} + {row['latest_explanations_bytes']:,})")
        print(f"  history answer for round 1: {report[setting]['history_round_bytes']:,} B, "
              f"as shown then: {report[setting]['history_matches']}")
    write_report(args.json, report)
    return report


if __name__ == "__main__":
    main()
