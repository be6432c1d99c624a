"""`exag bot`: simulated players that play whole games through the real Socket.IO interface (exactly
the messages the browser sends) and report outcomes and the ask-to-answer times they saw.

    exag bot --url http://127.0.0.1:5000 --games 10 --setting controlled --arm both --json results/bot.json
"""
from __future__ import annotations

import json
import queue
import secrets
import time
import urllib.parse
import urllib.request
from http.cookies import SimpleCookie

import numpy as np
import socketio
from tqdm import tqdm

from game.players import SimplePlayer

from . import browser

DEMO_STUDIES = {"at-will": "demo", "controlled": "demo-controlled"}
REPLY_TIMEOUT_S = 60
MIN_INTERVAL_S = 0.15     # the server refuses floods (ServerConfig.max_events_per_second); bots stay polite


class BotError(RuntimeError):
    pass


def browser_cookie(url: str, study: str) -> str:
    """Opens the study page as a browser does, and returns the browser cookie it set (server/browser.py)."""
    cookies = SimpleCookie()
    with urllib.request.urlopen(f"{url.rstrip('/')}/?{urllib.parse.urlencode({'study': study})}", timeout=30) as page:
        for header in page.headers.get_all("Set-Cookie") or []:
            cookies.load(header)
    if browser.COOKIE not in cookies:
        raise BotError(f"the study page at {url} set no {browser.COOKIE} cookie")
    return cookies[browser.COOKIE].value


class Bot:
    """One participant's connection: every emit waits for the server's `state` (or `error`). Each bot is a
    browser of its own: it gets its cookie from the study page and sends it with the Socket.IO handshake."""

    def __init__(self, url: str, study: str, pid: str, arm: str | None = None) -> None:
        self.replies: queue.Queue = queue.Queue()
        self.client = socketio.Client(reconnection=False)
        self.client.on("state", lambda text: self.replies.put(("state", json.loads(text))))
        self.client.on("error", lambda error: self.replies.put(("error", error)))
        cookie = browser_cookie(url, study)
        self.client.connect(url, transports=["websocket"], wait_timeout=30,
                            headers={"Cookie": f"{browser.COOKIE}={cookie}"})
        self.errors: list[dict] = []
        self._last_sent = 0.0
        self.last_reply_ms = 0.0
        join = {"study": study, "pid": pid}
        if arm is not None:
            join["arm"] = arm
        self.state = self.send("join", join)

    def send(self, event: str, payload: dict) -> dict:
        while not self.replies.empty():        # drop stale replies
            self.replies.get_nowait()
        time.sleep(max(0.0, self._last_sent + MIN_INTERVAL_S - time.monotonic()))
        self._last_sent = time.monotonic()
        sent = time.perf_counter()
        self.client.emit(event, payload)
        while True:
            try:
                kind, data = self.replies.get(timeout=REPLY_TIMEOUT_S)
            except queue.Empty:
                raise BotError(f"no reply to {event} within {REPLY_TIMEOUT_S} s") from None
            if kind == "error":
                self.errors.append(data)
                raise BotError(f"{event} refused: {data['message']}")
            self.state = data
            self.last_reply_ms = (time.perf_counter() - sent) * 1000   # emit to state, without the pacing
            return data

    def close(self) -> None:
        self.client.disconnect()


def play_games(url: str, games: int, setting: str, arm: str | None = None, study: str | None = None,
               player: SimplePlayer | None = None, progress: bool = True) -> dict:
    study = study or DEMO_STUDIES[setting]
    player = player or SimplePlayer()
    per_game, ask_ms, explain_ms, errors = [], [], [], []
    bot = None
    bar = tqdm(total=games, desc=f"bot games ({setting})", disable=not progress)
    try:
        while len(per_game) < games:
            if bot is None or bot.state["stage"] not in ("game", "instructions", "consent"):
                if bot is not None:
                    bot.close()
                bot = Bot(url, study, f"bot-{secrets.token_hex(5)}", arm)
                if bot.state["stage"] == "consent":
                    bot.send("consent", {"agree": True})
                bot.send("begin", {})
            game = bot.state["game"]
            gid = game["game_id"]
            while player.wants_question(game):
                game = bot.send("ask", {"game_id": gid, "question": player.question()})["game"]
                ask_ms.append(bot.last_reply_ms)
                if player.wants_explanations(game):
                    game = bot.send("explain", {"game_id": gid})["game"]
                    explain_ms.append(bot.last_reply_ms)
                game = bot.send("rate", {"game_id": gid, "rating": player.rating()})["game"]
            game = bot.send("guess", {"game_id": gid, "image": player.guess(game)})["game"]
            per_game.append({"game_id": gid, "won": game["won"], "score": game["score"], "questions": len(game["rounds"]),
                             "arm": bot.state["participant"]["arm"], "with_explanations": game["with_explanations"]})
            bar.update(1)
            bot.send("next_game", {"game_id": gid})
            if bot.state["stage"] == "questionnaire":
                bot.send("questionnaire", {"answers": {"trust": "Neutral", "explanations_helped": "Neutral",
                                                       "understood": "Neutral", "strategy": "bot", "comments": ""}})
    except BotError as error:
        errors.append(str(error))
    finally:
        bar.close()
        if bot is not None:
            errors += [e["message"] for e in bot.errors if e["message"] not in errors]
            bot.close()
    wins = sum(g["won"] for g in per_game)
    return {"url": url, "study": study, "setting": setting, "arm": arm, "games": len(per_game), "wins": wins,
            "win_rate": wins / len(per_game) if per_game else None,
            "mean_score": float(np.mean([g["score"] for g in per_game])) if per_game else None,
            "ask_to_answer_ms": _percentiles(ask_ms), "explain_ms": _percentiles(explain_ms),
            "errors": errors, "per_game": per_game}


def _percentiles(times: list[float]) -> dict:
    if not times:
        return {"n": 0}
    return {"n": len(times), "p50": float(np.percentile(times, 50)), "p95": float(np.percentile(times, 95)),
            "mean": float(np.mean(times))}
