"""`exag bot`: simulated players that play whole games through the real Socket.IO interface (exactly
the messages the browser sends) and report outcomes and the ask-to-answer times they saw.

    exag bot --url http://127.0.0.1:5000 --games 10 --setting controlled --arm both --json results/bot.json

With `--players N --duration S` it is a load test (`run_load`): N participants at once, each on a
connection of its own, playing back to back with the load profile of `game.players.LoadPlayer`; it
reports p50/p95/p99 per event, errors, timeouts, throughput, and the server's CPU and RSS. Every failure is
counted: a message refused, or lost with its connection (the participant then reconnects, as a reload), and
a participant that fails in any other way (the slot plays on with the next).

    exag bot --url http://127.0.0.1:5000 --players 50 --duration 60 --mix at-will=0.5 --server-pid PID

With `--pilot STUDY.json` test participants pilot a study file through its checks to the completion code
(pilot.py; in Chromium with `--browser`: pilot_browser.py).
"""
from __future__ import annotations

import json
import queue
import secrets
import threading
import time
import urllib.parse
import urllib.request
from http.cookies import SimpleCookie

import numpy as np
import socketio
from tqdm import tqdm

from game.players import LoadPlayer, SimplePlayer, indifferent_answers
from server import browser

DEMO_STUDIES = {"at-will": "demo", "controlled": "demo-controlled"}
REPLY_TIMEOUT_S = 60
MIN_INTERVAL_S = 0.15     # the server refuses floods (ServerConfig.max_events_per_second); bots stay polite


class BotError(RuntimeError):
    pass


class BotTimeout(BotError):
    """No reply within the reply timeout."""


class BotDisconnected(BotError):
    """The connection is gone (the server, or its web process, stopped or was killed): no reply will come."""


class BotRefused(BotError):
    """The server answered `error`."""

    def __init__(self, message: str, error: dict | None = None) -> None:
        super().__init__(message)
        self.full = bool((error or {}).get("full"))    # a join refused at the door: the server is full
        self.reason = str((error or {}).get("message", message))    # the server's own words



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
    browser of its own: it gets its cookie from the study page and sends it with the Socket.IO handshake.
    `ids`: the join's participant parameters in place of {"pid": pid} (a platform's: pilot.py join_ids)."""

    def __init__(self, url: str, study: str, pid: str | None, arm: str | None = None, *, cookie: str | None = None,
                 reply_timeout_s: float = REPLY_TIMEOUT_S, ids: dict | None = None) -> None:
        self.replies: queue.Queue = queue.Queue()
        self.reply_timeout_s = reply_timeout_s
        self.client = socketio.Client(reconnection=False)
        self.client.on("state", lambda text: self.replies.put(("state", json.loads(text))))
        self.client.on("error", lambda error: self.replies.put(("error", error)))
        self.client.on("disconnect", lambda *reason: self.replies.put(("disconnect", None)))
        self.cookie = cookie or browser_cookie(url, study)
        self.client.connect(url, transports=["websocket"], wait_timeout=30,
                            headers={"Cookie": f"{browser.COOKIE}={self.cookie}"})
        self.errors: list[dict] = []
        self._last_sent = 0.0
        self.last_reply_ms = 0.0
        self.join_payload = {"study": study, **(ids if ids is not None else {"pid": pid})}
        if arm is not None:
            self.join_payload["arm"] = arm
        try:
            self.state = self.send("join", self.join_payload)
        except BaseException:
            self.close()
            raise

    def send(self, event: str, payload: dict) -> dict:
        while not self.replies.empty():        # drop stale replies (a lost connection stays lost)
            if self.replies.get_nowait()[0] == "disconnect":
                raise BotDisconnected(f"{event} not sent: the connection is gone")
        time.sleep(max(0.0, self._last_sent + MIN_INTERVAL_S - time.monotonic()))
        self._last_sent = time.monotonic()
        sent = time.perf_counter()
        try:
            self.client.emit(event, payload)
        except socketio.exceptions.SocketIOError as error:      # BadNamespaceError: not connected any more
            raise BotDisconnected(f"{event} not sent: the connection is gone ({type(error).__name__})") from error
        while True:
            try:
                kind, data = self.replies.get(timeout=self.reply_timeout_s)
            except queue.Empty:
                raise BotTimeout(f"no reply to {event} within {self.reply_timeout_s:g} s") from None
            if kind == "disconnect":
                raise BotDisconnected(f"no reply to {event}: the connection is gone")
            if kind == "error":
                self.errors.append(data)
                raise BotRefused(f"{event} refused: {data['message']}", data)
            self.state = data
            self.last_reply_ms = (time.perf_counter() - sent) * 1000   # emit to state, without the pacing
            return data

    def close(self) -> None:
        try:
            self.client.disconnect()
        except Exception:     # an overloaded or stopped server: the connection is gone either way
            pass


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
            per_game.append({**play_game(bot, player, times={"ask": ask_ms, "explain": explain_ms}),
                             "arm": bot.state["participant"]["arm"]})
            bar.update(1)
            if bot.state["stage"] == "questionnaire":
                bot.send("questionnaire", {"answers": indifferent_answers(bot.state["questionnaire"],
                                                                          bot.state.get("demographics") or [])})
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


def play_game(bot: Bot, player: SimplePlayer, min_questions: int = 0, times: dict[str, list] | None = None) -> dict:
    """The current game, to its guess (at least `min_questions` questions; a game left in its rating phase is rated
    first), then on to the next: what it came to. `times`: event ("ask", "explain") -> a list that gets each of its
    reply times (ms)."""
    game = bot.state["game"]
    gid = game["game_id"]

    def send(event: str, payload: dict) -> dict:
        game = bot.send(event, {"game_id": gid, **payload})["game"]
        if times is not None and event in times:
            times[event].append(bot.last_reply_ms)
        return game

    if game["phase"] == "rating":
        game = send("rate", {"rating": player.rating()})
    while game["phase"] == "asking" and (len(game["rounds"]) < min_questions or player.wants_question(game)):
        game = send("ask", {"question": player.question()})
        if player.wants_explanations(game):
            game = send("explain", {})
        game = send("rate", {"rating": player.rating()})
    if game["phase"] != "finished":
        game = send("guess", {"image": player.guess(game)})
    played = {"game_id": gid, "won": game["won"], "score": game["score"], "questions": len(game["rounds"]),
              "with_explanations": game["with_explanations"]}
    bot.send("next_game", {"game_id": gid})
    return played


def _percentiles(times: list[float]) -> dict:
    if not times:
        return {"n": 0}
    return {"n": len(times), "p50": float(np.percentile(times, 50)), "p95": float(np.percentile(times, 95)),
            "mean": float(np.mean(times))}


# --- load test ---------------------------------------------------------------------------------------
# One thread per simulated participant, each with a python-socketio Client (websocket-client underneath,
# two I/O threads each): the participants spend nearly all their time waiting, so threads cost little
# CPU; the report gives the bot's own CPU so that a run on the server's machine can be judged.

FULL_RETRY_S = 10.0              # a participant refused at the door (the server is full) tries again after this
FAILED_RETRY_S = 1.0             # a participant whose connection or thread failed: the next one starts after this
LOAD_TIMEOUT_S = 30.0            # no reply within this is a timeout (the participant then reconnects)
DEMO_CONTROLLED_ARMS = ("none", "attention", "relqa", "both", "nle", "introspect")   # studies/demo-controlled.json
SAMPLE_EVERY_S = 1.0             # server CPU / RSS sampling


def parse_mix(text: str | None) -> float:
    """`at-will=0.5` (or `controlled=0.5`, or a bare fraction of at-will players) -> the at-will fraction."""
    if not text:
        return 0.5
    key, _, value = text.partition("=") if "=" in text else ("at-will", "", text)
    try:
        share = float(value)
    except ValueError:
        raise ValueError(f"--mix wants at-will=FRACTION, got {text!r}") from None
    if key.strip() not in ("at-will", "controlled") or not 0.0 <= share <= 1.0:
        raise ValueError(f"--mix wants at-will=FRACTION (0-1), got {text!r}")
    return share if key.strip() == "at-will" else 1.0 - share


def _stats(times: list[float]) -> dict:
    if not times:
        return {"n": 0}
    values = np.asarray(times)
    return {"n": len(times), "p50": float(np.percentile(values, 50)), "p95": float(np.percentile(values, 95)),
            "p99": float(np.percentile(values, 99)), "mean": float(values.mean()), "max": float(values.max())}


class _Recorder:
    """Every reply time, refusal and timeout of a load test, from all participant threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.times: dict[str, list[float]] = {}
        self.errors: dict[str, int] = {}
        self.timeouts: dict[str, int] = {}
        self.examples: list[str] = []      # the first few error messages, for the report
        self.sent = 0
        self.games = 0
        self.participants = 0
        self.refused_at_door = 0           # joins the server refused because it was full (server/admission.py)

    def send(self, bot: Bot, event: str, payload: dict) -> dict:
        with self.lock:
            self.sent += 1
        try:
            state = bot.send(event, payload)
        except BotTimeout:
            self._count(self.timeouts, event)
            raise
        except BotError as error:          # refused, or the connection is gone
            self._count(self.errors, event, str(error))
            raise
        with self.lock:
            self.times.setdefault(event, []).append(bot.last_reply_ms)
            self.games += event == "guess"
        return state

    def _count(self, counts: dict, event: str, message: str | None = None) -> None:
        with self.lock:
            counts[event] = counts.get(event, 0) + 1
            if message and len(self.examples) < 20:
                self.examples.append(message)


class _ServerSampler(threading.Thread):
    """Samples CPU (sum over the process trees, % of one core) and RSS of the given server processes and
    all their children (web processes, inference workers, redis-server) every SAMPLE_EVERY_S."""

    def __init__(self, pids: list[int], stop: threading.Event) -> None:
        super().__init__(daemon=True, name="server-sampler")
        import psutil
        self.psutil, self.pids, self.stop = psutil, pids, stop
        self.cpu: list[float] = []
        self.rss_mb: list[float] = []
        self.machine_cpu: list[float] = []
        self.peak: dict[int, dict] = {}   # per process: name, command line, peak RSS, CPU seconds while sampled
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._last_t = 0.0

    def _tree(self) -> list:
        processes = []
        for pid in self.pids:
            try:
                root = self.psutil.Process(pid)
                processes += [root] + root.children(recursive=True)
            except self.psutil.Error:
                continue
        return list({p.pid: p for p in processes}.values())

    def sample(self) -> None:
        now, busy, rss = time.monotonic(), {}, 0
        for process in self._tree():
            try:
                with process.oneshot():
                    times, memory = process.cpu_times(), process.memory_info().rss
                    busy[process.pid] = times.user + times.system
                    rss += memory
                    peak = self.peak.setdefault(process.pid, {"pid": process.pid, "name": process.name(),
                                                              "cmdline": " ".join(process.cmdline())[:160],
                                                              "rss_mb": 0.0})
                    peak["rss_mb"] = max(peak["rss_mb"], memory / 2**20)
                    first = self._first.setdefault(process.pid, busy[process.pid])
                    peak["cpu_s"] = busy[process.pid] - first
            except self.psutil.Error:
                continue
        if self._last_t:
            used = sum(busy[pid] - self._last[pid] for pid in busy if pid in self._last)
            self.cpu.append(100.0 * used / (now - self._last_t))
            self.rss_mb.append(rss / 2**20)
            self.machine_cpu.append(self.psutil.cpu_percent(None))
        self._last, self._last_t = busy, now

    def run(self) -> None:
        self.psutil.cpu_percent(None)
        self.sample()
        while not self.stop.wait(SAMPLE_EVERY_S):
            self.sample()

    def report(self) -> dict:
        def summary(values: list[float]) -> dict:
            return {"mean": float(np.mean(values)), "p95": float(np.percentile(values, 95)),
                    "max": float(np.max(values))} if values else {}
        return {"pids": self.pids, "samples": len(self.cpu), "cpu_percent": summary(self.cpu),
                "rss_mb": summary(self.rss_mb), "machine_cpu_percent": summary(self.machine_cpu),
                "cores": self.psutil.cpu_count(), "processes": sorted(self.peak.values(), key=lambda p: p["pid"])}


class _LoadParticipant(threading.Thread):
    """One slot of the load: plays participant after participant (a new one when the study is done) until
    `stop`; the request in flight at `stop` is still awaited (at most the reply timeout)."""

    def __init__(self, slot: int, url: str, study: str, arm: str | None, player: LoadPlayer, start_after_s: float,
                 recorder: _Recorder, stop: threading.Event, reply_timeout_s: float) -> None:
        super().__init__(daemon=True, name=f"load-player-{slot}")
        self.slot, self.url, self.study, self.arm, self.player = slot, url, study, arm, player
        self.start_after_s, self.recorder, self.stop = start_after_s, recorder, stop
        self.reply_timeout_s = reply_timeout_s
        self.next_turn = 0.0     # when the next question (or the guess) may go out

    def run(self) -> None:
        if self.stop.wait(self.start_after_s):
            return
        while not self.stop.is_set():
            try:
                self.play_participant(f"load-{self.slot}-{secrets.token_hex(4)}")
            except Exception as error:     # noqa: BLE001 - counted, never a thread that ends unseen: the next one plays
                self.recorder._count(self.recorder.errors, "participant",
                                     f"participant failed: {type(error).__name__}: {error}")
                self.stop.wait(FAILED_RETRY_S)

    def connect(self, pid: str, cookie: str | None) -> Bot | None:
        """A connection and its `join` (timed as the event `join`); None when it failed (counted)."""
        with self.recorder.lock:
            self.recorder.sent += 1
        try:
            bot = Bot(self.url, self.study, pid, self.arm, cookie=cookie, reply_timeout_s=self.reply_timeout_s)
        except BotTimeout:
            self.recorder._count(self.recorder.timeouts, "join")
            return None
        except BotRefused as error:
            if error.full:      # refused at the door, as a full server should: not an error; come back later
                with self.recorder.lock:
                    self.recorder.refused_at_door += 1
                self.stop.wait(FULL_RETRY_S)
                return None
            self.recorder._count(self.recorder.errors, "join", str(error))
            return None
        except Exception as error:        # refused or failed connection, or the study page failed
            self.recorder._count(self.recorder.errors, "connect", f"connect: {type(error).__name__}: {error}")
            self.stop.wait(FAILED_RETRY_S)
            return None
        with self.recorder.lock:
            self.recorder.times.setdefault("join", []).append(bot.last_reply_ms)
        return bot

    def play_participant(self, pid: str) -> None:
        bot = self.connect(pid, None)
        if bot is None:
            return
        with self.recorder.lock:
            self.recorder.participants += 1
        cookie, failures = bot.cookie, 0
        try:
            while not self.stop.is_set() and failures < 3:
                try:
                    if not self.step(bot):
                        return                 # the study is done: the next participant
                    failures = 0
                except BotRefused:
                    failures += 1              # state unchanged; `join` again resynchronises (a page refresh)
                    self.recorder.send(bot, "join", bot.join_payload)
                except (BotTimeout, BotDisconnected):
                    failures += 1              # a late reply may come, or none can: a fresh connection (a reload)
                    bot.close()
                    bot = None if self.stop.is_set() else self.connect(pid, cookie)
                    if bot is None:
                        return
        except BotError:
            return                             # the resynchronisation failed too (counted): the next participant
        finally:
            if bot is not None:
                bot.close()

    def wait_turn(self) -> bool:
        """Waits for the next question turn; False when the load test stopped meanwhile."""
        if self.stop.wait(max(0.0, self.next_turn - time.monotonic())):
            return False
        self.next_turn = time.monotonic() + self.player.question_interval_s
        return True

    def step(self, bot: Bot) -> bool:
        """One action of the load profile on the current state; False when this participant is done."""
        state, send = bot.state, self.recorder.send
        stage = state["stage"]
        if stage == "consent":
            send(bot, "consent", {"agree": True})
        elif stage == "instructions":
            send(bot, "begin", {})
        elif stage == "questionnaire":
            send(bot, "questionnaire", {"answers": indifferent_answers(state["questionnaire"],
                                                                       state.get("demographics") or [])})
        elif stage != "game" or state["game"] is None:
            return False
        else:
            game = state["game"]
            gid = game["game_id"]
            if game["phase"] == "finished":
                send(bot, "next_game", {"game_id": gid})
            elif game["phase"] == "rating":        # only after a resynchronisation: the usual rating is below
                send(bot, "rate", {"game_id": gid, "rating": self.player.rating()})
            elif self.player.wants_question(game):
                if not self.wait_turn():
                    return True
                game = send(bot, "ask", {"game_id": gid, "question": self.player.question()})["game"]
                if self.player.wants_explanations(game):
                    send(bot, "explain", {"game_id": gid})
                send(bot, "rate", {"game_id": gid, "rating": self.player.rating()})
            else:
                if not self.wait_turn():
                    return True
                send(bot, "guess", {"game_id": gid, "image": self.player.guess(game)})
        return True


def run_load(url: str, players: int, duration_s: float, mix: float = 0.5, *,
             studies: dict[str, str] | None = None, arms: tuple[str, ...] = DEMO_CONTROLLED_ARMS,
             server_pids: list[int] | tuple[int, ...] = (), reply_timeout_s: float = LOAD_TIMEOUT_S,
             question_interval_s: float = 3.0, ramp_s: float | None = None, seed: int = 0,
             progress: bool = True, raw_times: bool = False) -> dict:
    """N participants at once for `duration_s`: a share `mix` of them in the at-will study, the others in
    the controlled study spread over every arm in `arms`; see the module docstring for the report. With
    `raw_times` the report also holds every reply time by event (to merge loads: load_processes.py)."""
    import psutil

    if players < 1 or duration_s <= 0:
        raise ValueError("a load test needs at least 1 player and a positive duration")
    studies = {**DEMO_STUDIES, **(studies or {})}
    ramp_s = question_interval_s if ramp_s is None else ramp_s
    recorder, stop = _Recorder(), threading.Event()
    slots, controlled = [], 0
    for slot in range(players):
        at_will = int((slot + 1) * mix) > int(slot * mix)      # at-will and controlled interleaved, in proportion
        arm = None if at_will else arms[controlled % len(arms)]
        controlled += not at_will
        slots.append(_LoadParticipant(
            slot, url.rstrip("/"), studies["at-will" if at_will else "controlled"], arm,
            LoadPlayer(seed=seed * 100_003 + slot, question_interval_s=question_interval_s),
            ramp_s * slot / players, recorder, stop, reply_timeout_s))
    sampler = _ServerSampler(list(server_pids), stop) if server_pids else None
    me = psutil.Process()
    my_cpu, started = me.cpu_times(), time.monotonic()
    if sampler:
        sampler.start()
    for participant in slots:
        participant.start()
    bar = tqdm(total=int(duration_s), desc=f"load test ({players} players)", disable=not progress, unit="s")
    try:
        while (left := started + duration_s - time.monotonic()) > 0:
            time.sleep(min(1.0, left))
            bar.n = int(min(duration_s, time.monotonic() - started))
            bar.set_postfix(answered=sum(len(t) for t in recorder.times.values()),
                            errors=sum(recorder.errors.values()), timeouts=sum(recorder.timeouts.values()))
    except BaseException:         # Ctrl-C: no draining; the participants' threads are daemons
        stop.set()
        raise
    finally:
        bar.close()
    stop.set()
    active = time.monotonic() - started
    threads = threading.active_count()
    drain_until = time.monotonic() + reply_timeout_s + 10      # requests in flight finish or time out
    for participant in slots:
        participant.join(timeout=max(0.0, drain_until - time.monotonic()))
    if sampler:
        sampler.join(timeout=5)
    elapsed = time.monotonic() - started
    cpu = me.cpu_times()
    with recorder.lock:
        answered = sum(len(t) for t in recorder.times.values())
        events = {event: _stats(times) for event, times in sorted(recorder.times.items())}
        for event in {**recorder.errors, **recorder.timeouts}:
            events.setdefault(event, {"n": 0})
        report = {
            "url": url, "players": players, "duration_s": duration_s, "mix": {"at-will": mix, "controlled": 1 - mix},
            "studies": studies, "arms": list(arms),
            "profile": {"question_interval_s": question_interval_s, "questions_per_game": slots[0].player.questions_per_game,
                        "explanations_in_at_will_rounds": f"1 in {slots[0].player.buy_every}",
                        "reply_timeout_s": reply_timeout_s, "ramp_s": ramp_s},
            "events": events,
            "errors": {"total": sum(recorder.errors.values()), "by_event": dict(recorder.errors),
                       "examples": list(recorder.examples)},
            "timeouts": {"total": sum(recorder.timeouts.values()), "by_event": dict(recorder.timeouts)},
            "messages": {"sent": recorder.sent, "answered": answered, "per_second": answered / active},
            "games_finished": recorder.games, "participants": recorder.participants,
            "refused_at_door": recorder.refused_at_door,
            "elapsed_s": elapsed, "stopped_cleanly": not any(p.is_alive() for p in slots),
            "bot": {"cpu_percent": 100.0 * (cpu.user + cpu.system - my_cpu.user - my_cpu.system) / elapsed,
                    "rss_mb": me.memory_info().rss / 2**20, "threads_at_peak": threads},
        }
        if raw_times:
            report["raw_times"] = {event: list(times) for event, times in recorder.times.items()}
    if sampler:
        report["server"] = sampler.report()
    return report


def format_load(report: dict) -> str:
    """The load test's report as a few lines for the terminal."""
    lines = [f"{report['players']} players for {report['duration_s']:g} s: {report['messages']['answered']} replies "
             f"({report['messages']['per_second']:.1f}/s), {report['games_finished']} games, "
             f"{report['errors']['total']} errors, {report['timeouts']['total']} timeouts; "
             f"{report['participants']} participants admitted, {report.get('refused_at_door', 0)} joins refused at the "
             "door (server full)"]
    for event, s in report["events"].items():
        if s["n"]:
            lines.append(f"  {event:<13} n={s['n']:<6} p50 {s['p50']:8.0f} ms  p95 {s['p95']:8.0f} ms  "
                         f"p99 {s['p99']:8.0f} ms")
    if "server" in report and report["server"]["samples"]:
        server = report["server"]
        lines.append(f"  server: CPU mean {server['cpu_percent']['mean']:.0f}% (max {server['cpu_percent']['max']:.0f}%, "
                     f"100% = one core of {server['cores']}), RSS max {server['rss_mb']['max']:.0f} MB")
    lines.append(f"  bot: CPU {report['bot']['cpu_percent']:.0f}%, RSS {report['bot']['rss_mb']:.0f} MB")
    for message in report["errors"]["examples"][:5]:
        lines.append(f"  error: {message}")
    return "\n".join(lines)
