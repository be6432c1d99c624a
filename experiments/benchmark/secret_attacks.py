"""How well a program finds the secret image from what a player is sent (Issue 10, finding 3), measured as
an outsider would: games are played through the server's real interface (the game page, Socket.IO and the
image URLs, through Flask's test clients of `create_app`), and the public agent checkpoint is replayed on
the images the player downloads.

- medoid: buy nothing; guess the medoid (the smallest summed distance to the others) of the shown images'
  agent embeddings (`agent.embed_images`, what the server chooses sets by). At-will (N=20) and controlled
  (N=5) games. Chance is 1/N when the secret is exchangeable with its distractors.
- replay: at-will games; ask one question, buy that round's explanations, then replay the agent on the 20
  shown images and rank them by how well each one's replayed outputs match what was shown about the
  secret image: the answer; ObjScene's words with p(word | image); RelQA's questions answered on each image,
  with the agent's confidence; the NLE sentence. Reported for the answer alone (what any round gives), RelQA
  answers alone, RelQA answers and confidences, ObjScene alone, and everything one bought round shows.
  Ties among the best candidates count as a uniform guess among them (success 1/ties).

Each figure comes with its 95% Wilson interval. The server runs with its default settings on a private
Redis in a temporary directory, seeded (--seed) so that a run is reproducible.

    python -m experiments.benchmark.secret_attacks --world data/game-world --games 40 --json results/secret_attacks.json
    exag bench secret-attacks --world data/game-world --games 40 --json results/secret_attacks.json
"""
from __future__ import annotations

import argparse
import io
import json
import math
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from tqdm import tqdm

from experiments.benchmark import write_report
from explainers import ExplanationRequest, load_explainer
from game.settings import RATINGS
from vqa_agent.agent import VQAAgent

QUESTIONS = ("what color is the large sphere?", "is there a red cube?", "how many cylinders are there?",
             "what material is the big cube?", "is there a metal sphere?", "what shape is the small green thing?",
             "how many things are there?", "is there anything blue?")
STUDIES = {   # like the demo studies (studies/demo*.json): the default settings of each kind
    "attack-aw": {"study_id": "attack-aw", "kind": "at-will", "arms": ["both"], "sessions": 1, "games_per_session": 1,
                  "nle": True, "choose_arm": True},
    "attack-ctl": {"study_id": "attack-ctl", "kind": "controlled", "arms": ["none"], "sessions": 4,
                   "games_per_session": 5, "choose_arm": True},
}
TIE = 1e-9                # candidates this close to the best distance are tied


class Outsider:
    """One participant's browser: the game page (which gives the browser its cookie), its Socket.IO
    connection and the image downloads; nothing else."""

    def __init__(self, app, study: str, pid: str) -> None:
        self.http = app.test_client()
        self.http.get(f"/?study={study}")
        self.socket = app.extensions["socketio"].test_client(app, flask_test_client=self.http)
        self.state: dict = {}
        self.send("join", {"study": study, "pid": pid})
        self.send("consent", {"agree": True})
        self.send("begin", {})

    def send(self, event: str, payload: dict) -> dict:
        self.socket.get_received()
        self.socket.emit(event, payload)
        received = self.socket.get_received()
        errors = [m["args"][0] for m in received if m["name"] == "error"]
        if errors:
            raise RuntimeError(f"{event} refused: {errors[-1]}")
        states = [m["args"][0] for m in received if m["name"] == "state"]
        self.state = json.loads(states[-1]) if isinstance(states[-1], str) else states[-1]
        return self.state

    @property
    def game(self) -> dict:
        return self.state["game"]

    def images(self) -> list[np.ndarray]:
        return [np.asarray(Image.open(io.BytesIO(self.http.get(self.game["image_urls"][t]).data)).convert("RGB"))
                for t in self.game["images"]]

    def play_round(self, question: str, buy: bool) -> dict:
        gid = self.game["game_id"]
        self.send("ask", {"game_id": gid, "question": question})
        if buy:
            self.send("explain", {"game_id": gid})
        shown = self.game["rounds"][-1]
        self.send("rate", {"game_id": gid, "rating": RATINGS[2]})
        return shown

    def guess(self, position: int) -> int:
        """Guesses the image at `position`; returns the secret's position (shown after the guess)."""
        self.send("guess", {"game_id": self.game["game_id"], "image": self.game["images"][position]})
        return self.game["images"].index(self.game["secret"])

    def close(self) -> None:
        if self.socket.is_connected():
            self.socket.disconnect()


def medoid(embeddings: np.ndarray) -> int:
    x = np.asarray(embeddings, dtype=np.float64)
    return int(np.linalg.norm(x[:, None] - x[None], axis=-1).sum(1).argmin())


def tie_success(distances: np.ndarray, secret: int) -> float:
    """The chance that a uniform pick among the closest candidates is the secret."""
    best = np.flatnonzero(distances <= distances.min() + TIE)
    return 1.0 / len(best) if secret in best else 0.0


def wilson(successes: float, n: int, z: float = 1.96) -> list[float]:
    if n == 0:
        return [0.0, 1.0]
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [max(0.0, centre - half), min(1.0, centre + half)]


def rate(successes: list[float], chance: float) -> dict:
    n, total = len(successes), float(sum(successes))
    return {"success": total / max(n, 1), "ci95": wilson(total, n), "chance": chance, "games": n,
            "times_chance": (total / max(n, 1)) / chance}


# --- the attacks --------------------------------------------------------------------------------------

def medoid_attack(app, agent: VQAAgent, study: str, games: int, label: str) -> dict:
    hits = []
    for g in tqdm(range(games), desc=f"medoid attack, {label}", unit="game"):
        player = Outsider(app, study, f"medoid-{label}-{g}")
        try:
            pick = medoid(agent.embed_images(player.images()))
            player.play_round(QUESTIONS[g % len(QUESTIONS)], buy=False)   # a question before the guess
            hits.append(float(player.guess(pick) == pick))
        finally:
            player.close()
    return rate(hits, 1 / len(player.game["images"]))


class Replay:
    """The public agent and explainers, replayed on a game's images."""

    def __init__(self, agent: VQAAgent, agent_name: str) -> None:
        self.agent = agent
        options = {} if Path(agent_name).exists() else {"agent_name": agent_name}
        try:
            self.nle = load_explainer("nle", agent, **options)
        except (OSError, ValueError) as error:
            print(f"(no NLE replay: {error})")
            self.nle = None

    def distances(self, images: list[np.ndarray], question: str, shown: dict, seed: int) -> dict[str, np.ndarray]:
        n = len(images)
        outputs = self.agent.answer(images, [question] * n)
        secret_payloads = {e["kind"]: e["payload"] for e in shown["explanations"]["for_the_secret"]}
        answer = np.array([float(o.answer != shown["answer"]) for o in outputs])

        words = secret_payloads.get("words", {}).get("words", [])
        objscene = np.array([sum(abs(float(w["probability"]) - o.concept_probabilities.get(w["word"], 0.0))
                                 for w in words) for o in outputs])

        pairs = secret_payloads.get("qa_pairs", {}).get("pairs", [])
        questions = [p["question"] for p in pairs]
        replies = self.agent.answer([image for image in images for _ in questions], questions * n) if pairs else []
        relqa_answers, relqa = np.zeros(n), np.zeros(n)
        for k in range(n):
            for p, o in zip(pairs, replies[k * len(pairs):(k + 1) * len(pairs)]):
                relqa_answers[k] += o.answer != p["answer"]
                relqa[k] += (o.answer != p["answer"]) + abs(float(p["probability"]) - o.probability)

        nle = np.zeros(n)
        text = secret_payloads.get("text", {}).get("text")
        if self.nle is not None and text is not None:
            explained = self.nle.explain_batch([ExplanationRequest(image, o.question, o, seed)
                                                for image, o in zip(images, outputs)])
            nle = np.array([float(e.payload["text"] != text) for e in explained])
        return {"answer": answer, "relqa_answers": relqa_answers, "relqa": relqa, "objscene": objscene,
                "one_bought_round": answer + relqa + objscene + nle}


def replay_attack(app, replay: Replay, games: int) -> dict:
    successes: dict[str, list[float]] = {}
    won = []
    for g in tqdm(range(games), desc="replay attack, at-will", unit="game"):
        player = Outsider(app, "attack-aw", f"replay-{g}")
        try:
            images, question = player.images(), QUESTIONS[g % len(QUESTIONS)]
            shown = player.play_round(question, buy=True)
            distances = replay.distances(images, question, shown, seed=1)   # the server seeds a round's
            best = np.flatnonzero(distances["one_bought_round"] <= distances["one_bought_round"].min() + TIE)
            pick = int(best[g % len(best)])                                  # explanations by its number
            secret = player.guess(pick)
            won.append(float(pick == secret))
            for name, d in distances.items():
                successes.setdefault(name, []).append(tie_success(d, secret))
        finally:
            player.close()
    chance = 1 / len(images)
    return {**{name: rate(s, chance) for name, s in successes.items()}, "games_won": rate(won, chance)}


# --- the run ------------------------------------------------------------------------------------------

def _commit() -> dict:
    try:
        root = Path(__file__).resolve().parents[2]
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True,
                                    text=True).stdout.strip())
        return {"commit": head, "uncommitted_changes": dirty, "tree": str(root)}
    except OSError:
        return {}


def benchmark_secret_attacks(world: Path, agent_name: str = "default", games: int = 40, medoid_games: int = 200,
                             seed: int = 0) -> dict:
    from server.app import create_app
    from server.config import ServerConfig

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="exag-attacks-") as tmp:
        studies = Path(tmp) / "studies"
        studies.mkdir()
        for study in STUDIES.values():
            (studies / f"{study['study_id']}.json").write_text(json.dumps(study))
        app = create_app(ServerConfig(world=world, agent=agent_name, data_dir=Path(tmp) / "data",
                                      studies_dir=studies, seed=seed, progress=False))
        try:
            agent = VQAAgent.from_pretrained(agent_name)     # the attacker's own copy of the public checkpoint
            report = {"agent": str(agent_name), "world": str(world), "seed": seed,
                      "machine": {"cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                                  "device": str(agent.device)},
                      **_commit(),
                      "medoid": {"at_will": medoid_attack(app, agent, "attack-aw", medoid_games, "at-will"),
                                 "controlled": medoid_attack(app, agent, "attack-ctl", medoid_games, "controlled")},
                      "replay": replay_attack(app, Replay(agent, agent_name), games)}
        finally:
            app.extensions["exag"].close()
    report["seconds"] = time.perf_counter() - started
    return report


def _line(name: str, r: dict) -> str:
    low, high = r["ci95"]
    return (f"  {name:<26} {r['success']:6.1%}  (95% CI {low:.1%}-{high:.1%}; chance {r['chance']:.1%}, "
            f"{r['times_chance']:.1f}x; {r['games']} games)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--world", type=Path, default=Path("data/game-world"))
    parser.add_argument("--agent", default="default", help="the public checkpoint the server runs and the attacker replays")
    parser.add_argument("--games", type=int, default=40, help="at-will games of the replay attack")
    parser.add_argument("--medoid-games", type=int, default=200, help="games of each setting for the medoid attack")
    parser.add_argument("--seed", type=int, default=0, help="the server's seed (image sets and tokens)")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", torch.get_num_threads())))
    report = benchmark_secret_attacks(args.world, args.agent, args.games, args.medoid_games, args.seed)
    print(f"agent {report['agent']}, world {report['world']}, {report['machine']['cpus']} CPUs "
          f"({report['machine']['torch_threads']} torch threads), {report['seconds']:.0f} s")
    print("medoid of the shown images' agent embeddings (nothing bought):")
    for name, r in report["medoid"].items():
        print(_line(name, r))
    print("replaying the public agent after one bought at-will round:")
    for name, r in report["replay"].items():
        print(_line(name, r))
    write_report(args.json, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
