"""`exag simulate`: a whole study played by simulated participants (game/participant.py) through the real
game, written as `exag export` writes it, with a summary: win rate by arm, with and without explanations.

    exag simulate --study studies/pilot.json --participants 69 --out results/sim            # in-process
    exag simulate --study studies/pilot.json --participants 8 --out results/sim --url http://127.0.0.1:5000

In-process (the default) the study runs on the server's own parts, built by `create_app` exactly as for
`exag serve`: the `Play` service, the game rules, an inference worker (a thread here) and a private
embedded Redis in a temporary directory, deleted afterwards. Each message goes the way the Socket.IO
handler sends it (schemas.validate, then Play), without sockets. With `--url` the participants play a
running server over Socket.IO (bot.py's `Bot`, one browser each); the study is created there through the
admin form when it is missing, and its events come back through the admin export (both need the admin
token). Either way the server assigns the arms, as for real participants.

How a simulated participant looks. It is never given the secret, the world's indices or anything of the
agent's beyond the page: it gets the game view the page gets, and, for each image token, the scene of the
image the page shows. That image is the PNG the image route serves (in-process: the file
`Play.image_path(game_id, token)` names; with --url: a GET of the view's `image_urls`), recognised among the
world's pool images BY ITS CONTENT (`Eyes`: a hash of its pixels, or, should no hash match, the nearest
image by downsampled pixels), and the participant gets that image's scene from the world's scenes, as a
person reads the objects off the picture; the participant then applies its own perception error.

Parallelism. `threads` participants play at once (threads of this process): while one waits for its
answer, the others think, and the inference worker takes their rounds as they come (each answered alone:
see Determinism). The worker runs the agent with one torch thread; the participants, the Play service and
the redis-server process share the other core. A progress bar counts games.

Determinism. In-process, a seed fixes the study: the same --seed on the same checkout, world and agent
gives the same export, every table equal but for the columns RUN_DEPENDENT names (clock times, durations
and the quality flag counted from durations), whatever --threads, the machine's load or how the worker's
rounds happened to arrive together. What makes it so:
- whatever the server draws is a function of the seed and of whose it is: a game's image set, its id and
  its image tokens come from the generator of (seed, study, participant, game number) (server/game_stage.py),
  not from one generator drawn in the order games start;
- arms: the server deals each newcomer the next slot of the study's seeded sequence (game/assignment.py),
  the study's seed derived from --seed when the study file has none (`seeded_study`); members join in
  their order (each waits until the one before it has joined; they play at once afterwards), and none
  counts as a dropout by the clock (dropout_after_s is infinite here), so member k gets the same slot, arm
  and order in every run;
- each member's own randomness comes from its seed (`members`: the seed and its position), and it sees
  only its own games;
- the inference worker is batch-invariant (server/inference.py BatchSettings.batch_invariant): a round is
  answered by agent and explainer calls of its own, each image's features computed alone, because a batch's
  shape changes the last bits of the agent's sums, and with them the probabilities and explanation payloads
  the export logs, and now and then an answer or an explanation's order (it costs 12-25% of the games a
  second);
- the event log is exported grouped by participant, in member order (each one's events as they happened),
  not interleaved as the threads happened to write them.
Not covered: a round that waits longer than ROUND_TIMEOUT_S fails (a refused move the summary counts) and
the participant moves on differently; with --url the server is someone else's (its seed, its other
participants) and the participant ids carry a random run token, so only the participants' side is seeded.

Output: OUT/export/ (what `exag export` writes: games, rounds, ratings, ... and events.jsonl, so that
`exag analyze --data OUT/export` runs unchanged) and OUT/summary.json (the printed summary).
"""
from __future__ import annotations

import hashlib
import io
import json
import logging
import math
import secrets
import shutil
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from PIL import Image
from redis.exceptions import LockError
from tqdm import tqdm

from game.export import write_export
from game.participant import DEFAULT_MIX, PRESETS, SimulatedParticipant, with_min_questions
from game.players import indifferent_answers
from game.rules import RuleError
from game.seeding import seeded_rng
from game.settings import RATINGS, settings_named
from game.study import AGREEMENT, QUESTIONNAIRE, StudyConfig, arm_modes, is_sham, load_study, missing_checkpoint
from server import browser
from server.app import create_app, load_studies
from server.config import ServerConfig
from server.events import as_text
from server.play import PlayError
from game.pool import GamePool
from server.schemas import SchemaError, validate
from server.store import EVENTS

from .bot import Bot, BotRefused

DEFAULT_THREADS = 8                # participants at once: while one waits for its answer, the others think
ROUND_TIMEOUT_S = 600.0            # nobody waits at a screen: a round may queue behind many others
MAX_REFUSALS_IN_A_ROW = 5          # a participant whose moves are refused this often in a row gives up (an error)
THUMBNAIL = (32, 24)               # downsampled pixels the eyes fall back to when no hash matches
MAX_THUMBNAIL_DISTANCE = 12.0      # mean absolute difference (0-255) beyond which an image is not the world's
SHARE_TOLERANCE = 1e-6
EXPORT_DIR, SUMMARY = "export", "summary.json"
# What a seed does not fix: the export's columns that hold clock times, durations or what is counted from
# durations (participants' fast_games, games under 10 s, and the flags naming it). For events.jsonl: the
# events' keys, "id" being the Redis stream's (made from the clock), and "explanations.seconds" the compute
# time of each explanation an event lists. Every other column is the same for a seed
# (tests/server/test_simulate_reproducible.py compares them).
RUN_DEPENDENT = {
    "games": ("started", "finished", "seconds"),
    "rounds": ("time", "inference_ms", "ask_to_answer_ms"),
    "ratings": ("time",),
    "explanations": (),
    "participants": ("joined", "consented", "finished", "fast_games", "flags", "browsers"),   # browsers: random ids
    "assignments": ("assigned",),
    "studies": ("created",),
    "rater_ratings": ("time",),
    "problems": (),
    "events": ("id", "time", "inference_ms", "ask_to_answer_ms", "seconds", "explanations.seconds", "browser"),
}


log = logging.getLogger(__name__)


class Refused(RuntimeError):
    """The server refused a participant's message; the text is the server's."""


# --- who plays -----------------------------------------------------------------------------------------

def parse_players(text: str | None) -> dict[str, float]:
    """`careful=0.4,hasty=0.6` -> {preset: share}; a bare `careful` is all careful, `careful,hasty` halves;
    None or "" -> DEFAULT_MIX. Presets are game/participant.py's PRESETS; shares must sum to 1."""
    if not text:
        return dict(DEFAULT_MIX)
    parts = [p.strip() for p in text.split(",") if p.strip()]
    named = [p.partition("=") for p in parts]
    if any(sep for _, sep, _ in named) and not all(sep for _, sep, _ in named):
        raise ValueError(f"--players: give every preset a share (careful=0.5,hasty=0.5) or none, got {text!r}")
    mix: dict[str, float] = {}
    for name, sep, value in named:
        name = name.strip()
        if name not in PRESETS:
            raise ValueError(f"--players: unknown preset {name!r}; presets: {', '.join(PRESETS)}")
        if name in mix:
            raise ValueError(f"--players: {name} is given twice")
        try:
            share = float(value) if sep else 1.0 / len(named)
        except ValueError:
            raise ValueError(f"--players: the share of {name} must be a number, got {value!r}") from None
        if not 0.0 < share <= 1.0:
            raise ValueError(f"--players: the share of {name} must be in (0, 1], got {value}")
        mix[name] = share
    if abs(sum(mix.values()) - 1.0) > SHARE_TOLERANCE:
        raise ValueError(f"--players: shares must sum to 1, got {sum(mix.values()):g} ({text})")
    return mix


@dataclass(frozen=True)
class Member:
    """One simulated participant of a study: the id it joins with, its preset and its seed."""
    pid: str
    preset: str
    seed: int


def members(mix: dict[str, float], n: int, seed: int, run: str) -> list[Member]:
    """n participants: each preset's count by largest remainder of its share, in a seeded random order
    (so that the server's randomized assignment spreads the presets over the arms)."""
    if n < 1:
        raise ValueError(f"--participants must be at least 1, got {n}")
    exact = {name: share * n for name, share in mix.items()}
    counts = {name: int(v) for name, v in exact.items()}
    for name in sorted(exact, key=lambda k: (counts[k] - exact[k], list(mix).index(k)))[:n - sum(counts.values())]:
        counts[name] += 1
    presets = [name for name in mix for _ in range(counts[name])]
    rng = np.random.default_rng(np.random.SeedSequence([seed, n]))
    order = rng.permutation(n)
    seeds = np.random.SeedSequence(seed).generate_state(n)
    return [Member(f"sim-{run}-{k:04d}-{presets[i]}", presets[i], int(seeds[k])) for k, i in enumerate(order)]


# --- eyes ----------------------------------------------------------------------------------------------

class Eyes:
    """Recognises a served image among the world's pool images by its content, and gives its scene.

    The index holds a hash of each pool image file's bytes (what the image route serves); an image whose
    hash is unknown (re-encoded on the way, say) is the pool image nearest in downsampled pixels (that
    index is made on the first such image), unless even that one is far: then the server plays another
    world than ours, an error that says so."""

    def __init__(self, pool: GamePool, progress: bool = False) -> None:
        from vqa_agent.world.build import POOL_SPLIT, is_rendered, render_missing

        if not pool.has_ground_truth:       # simulated participants see a scene's objects; photos have none
            raise ValueError(f"{pool.world} is an imported image pool: simulated participants need a world's scenes")
        if not all(is_rendered(pool.world, name) for name in pool.filenames):   # a lazily laid out world
            render_missing(pool.world, progress=progress, splits=(POOL_SPLIT,))       # its pool, once, in parallel
        self.pool = pool
        self._by_hash = {self._hash(pool.image_path(i).read_bytes()): i for i in range(len(pool))}
        self._thumbnails: np.ndarray | None = None
        self.by_hash = self.by_pixels = 0        # how images were recognised (the summary reports it)
        self._lock = threading.Lock()

    @staticmethod
    def _hash(data: bytes) -> str:
        return hashlib.blake2b(data, digest_size=16).hexdigest()

    @staticmethod
    def _thumbnail(png: bytes | Path) -> np.ndarray:
        with Image.open(io.BytesIO(png) if isinstance(png, bytes) else png) as img:
            return np.asarray(img.convert("RGB").resize(THUMBNAIL, Image.Resampling.BILINEAR), dtype=np.float32).ravel()

    def recognise(self, png: bytes) -> int:
        """The pool position of the image these bytes show."""
        found = self._by_hash.get(self._hash(png))
        if found is not None:
            with self._lock:
                self.by_hash += 1
            return found
        with self._lock:
            if self._thumbnails is None:
                self._thumbnails = np.stack([self._thumbnail(self.pool.image_path(i)) for i in range(len(self.pool))])
        distances = np.abs(self._thumbnails - self._thumbnail(png)).mean(axis=1)
        nearest = int(distances.argmin())
        if distances[nearest] > MAX_THUMBNAIL_DISTANCE:
            raise ValueError(f"a game image is none of {self.pool.world}'s pool images (nearest differs by "
                             f"{distances[nearest]:.0f}/255 per pixel): pass the server's world with --world")
        with self._lock:
            self.by_pixels += 1
        return nearest

    def scenes(self, connection, game: dict) -> dict[str, dict]:
        """token -> the CLEVR scene of the image the page shows for it."""
        return {token: self.pool.scenes_json[self.recognise(connection.image(game["game_id"], token,
                                                                             game["image_urls"][token]))]
                for token in game["images"]}


# --- servers: in this process, or one running elsewhere -------------------------------------------------

class InProcessConnection:
    """One participant's messages, sent the way the Socket.IO handler sends them (server/events.py):
    validated (server/schemas.py), then Play; the view comes back as the JSON the page would receive."""

    def __init__(self, play, study_id: str, pid: str) -> None:
        self.play = play
        self.cookie = play.browsers.new_id()      # each participant is a browser of its own (a signed cookie)
        self.who: tuple[str, str] | None = None
        self.view = self.send("join", {"study": study_id, "pid": pid})

    def send(self, event: str, payload: dict) -> dict:
        try:
            data = validate(event, payload)
            if event == "join":
                self.who, view, message = self.play.join(data, self.cookie)
                if message:
                    raise Refused(f"join: {message}")
            else:
                view = getattr(self.play, event)(self.who, data)
        except (SchemaError, PlayError, RuleError, LockError) as error:
            raise Refused(f"{event} refused: {error}") from None
        return json.loads(as_text(view))

    def image(self, game_id: str, token: str, url: str) -> bytes:
        path = self.play.image_path(game_id, token)      # what the image route serves
        if path is None:
            raise Refused(f"no image {token} in game {game_id}")
        return path.read_bytes()

    def close(self) -> None:
        pass


class InProcessServer:
    """The server's services in this process: `create_app` with in-process inference workers, on a private
    embedded Redis in a temporary directory (removed by `close`). Studies are added as study files, which
    `load_studies` checks and loads as at a server's start."""

    def __init__(self, world: Path, agent: str = "default", seed: int = 0, explainer_options: dict | None = None,
                 workers: int = 1) -> None:
        self._tmp = Path(tempfile.mkdtemp(prefix="exag-simulate-"))
        self.studies_dir = self._tmp / "studies"
        self.studies_dir.mkdir()
        # reproducible for a seed (the module's "Determinism"): rounds answered bit-identically however they
        # arrive together, and no participant counted out of the arm balance by the clock as a dropout
        config = ServerConfig(world=world, agent=agent, data_dir=self._tmp / "server", studies_dir=self.studies_dir,
                              inprocess_workers=workers, message_queue=False, seed=seed, progress=False,
                              explainer_options=explainer_options or {}, round_timeout_s=ROUND_TIMEOUT_S,
                              batch_invariant=True, dropout_after_s=math.inf)
        try:
            self.app = create_app(config)
        except BaseException:
            shutil.rmtree(self._tmp, ignore_errors=True)
            raise
        self.services = self.app.extensions["exag"]
        self.pool = self.services.pool
        # nothing to survive a crash of: the event log is exported at the end (an fsync per event is slow)
        self.services.store.redis.config_set("appendfsync", "no")

    def add_study(self, study: StudyConfig) -> StudyConfig:
        (self.studies_dir / f"{study.study_id}.json").write_text(json.dumps(study.to_dict()))
        load_studies(self.services.store, self.studies_dir, self.pool, self.services.agents)
        return study

    def connect(self, study_id: str, pid: str) -> InProcessConnection:
        return InProcessConnection(self.services.play, study_id, pid)

    def events(self, study_id: str, pids: set[str]) -> list[dict]:
        """The study's creation (its config and seed) and these participants' events."""
        return [e for e in self.services.store.events()
                if e["study"] == study_id and (e["participant"] in pids or e["type"] == "study_created")]

    def forget(self, study_id: str) -> None:
        """Deletes a finished study's participants, games and the event log (store.py's keys) from the
        private Redis, once its events are read: a power run plays study after study on one server, and
        kept they would fill its memory (a game's explanations are tens of KB) and lengthen every read."""
        store = self.services.store
        participants = store.participants(study_id)
        keys = [f"exag:game:{game}{suffix}" for p in participants for game in p.get("games", [])
                for suffix in ("", ":explanations")]
        keys += [f"exag:participant:{study_id}:{p['pid']}" for p in participants]
        keys += [f"exag:participants:{study_id}", f"exag:stats:{study_id}", EVENTS]
        for start in range(0, len(keys), 1000):
            store.redis.delete(*keys[start:start + 1000])

    def close(self) -> None:
        try:
            self.services.close()
        finally:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> "InProcessServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):    # the admin form answers with a redirect: success
        return None


class RemoteConnection:
    """One participant on a running server over Socket.IO: bot.py's Bot (its own browser cookie)."""

    def __init__(self, url: str, study_id: str, pid: str) -> None:
        self.url = url.rstrip("/")
        self.bot = Bot(url, study_id, pid)       # joins
        self.view = self.bot.state

    def send(self, event: str, payload: dict) -> dict:
        try:
            return self.bot.send(event, payload)
        except BotRefused as error:
            raise Refused(str(error)) from None

    def image(self, game_id: str, token: str, url: str) -> bytes:
        request = urllib.request.Request(urllib.parse.urljoin(self.url + "/", url),
                                         headers={"Cookie": f"{browser.COOKIE}={self.bot.cookie}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.read()

    def close(self) -> None:
        self.bot.close()


class RemoteServer:
    """A running server (`exag serve`): participants over Socket.IO; the study created and the events read
    through the admin pages, with the admin token."""

    def __init__(self, url: str, admin_token: str, world: Path) -> None:
        if not admin_token:
            raise ValueError("--url needs the server's admin token (--admin-token or EXAG_ADMIN_TOKEN): the study "
                             "is created and its events exported through the admin pages")
        self.url, self.token = url.rstrip("/"), admin_token
        self.pool = GamePool(world)       # the world's images and scenes, for the participants' eyes

    def _admin(self, path: str, form: dict | None = None) -> bytes:
        query = urllib.parse.urlencode({"token": self.token})
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            with opener.open(f"{self.url}{path}{'&' if '?' in path else '?'}{query}", data=data, timeout=120) as reply:
                return reply.read()
        except urllib.error.HTTPError as error:
            if error.code in (302, 303):
                return b""
            if error.code == 403:
                raise ValueError(f"{self.url} refused the admin token") from None
            detail = error.read().decode(errors="replace")
            note = detail.split("<b>", 1)[1].split("</b>", 1)[0] if "<b>" in detail else detail[:200]
            raise ValueError(f"{self.url}{path}: HTTP {error.code}: {note}") from None

    def add_study(self, study: StudyConfig) -> StudyConfig:
        """The server's study of that id, as the server has it (created from the file when it has none)."""
        for entry in json.loads(self._admin("/admin/monitor.json")):
            if entry["study"]["study_id"] == study.study_id:
                if entry["status"] != "open":
                    raise ValueError(f"study {study.study_id} is closed on {self.url}")
                return StudyConfig.from_dict(entry["study"])
        self._admin("/admin/studies", {"config": json.dumps(study.to_dict())})
        return study

    def connect(self, study_id: str, pid: str) -> RemoteConnection:
        return RemoteConnection(self.url, study_id, pid)

    def events(self, study_id: str, pids: set[str]) -> list[dict]:
        with zipfile.ZipFile(io.BytesIO(self._admin("/admin/export.zip?format=jsonl"))) as archive:
            lines = archive.read("events.jsonl").decode().splitlines()
        return [e for e in map(json.loads, filter(None, lines))
                if e.get("study") == study_id and (e.get("participant") in pids or e.get("type") == "study_created")]

    def close(self) -> None:
        pass

    def __enter__(self) -> "RemoteServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --- playing -------------------------------------------------------------------------------------------

@dataclass
class Played:
    """What one simulated participant did, from the views it was sent."""
    pid: str
    preset: str
    arm: str | None = None
    games: list[dict] = field(default_factory=list)     # per game: won, score, questions, with_explanations,
                                                        # explained (a round was), explained_ratings
    refusals: list[str] = field(default_factory=list)
    error: str | None = None
    finished: bool = False


def questionnaire(games: list[dict], items: list[dict] = QUESTIONNAIRE, demographics: list[dict] = ()) -> dict[str, str]:
    """The end questionnaire, the study's items as the page is sent them: "the explanations helped me" (the default
    item `explanations_helped`) from the participant's own helpfulness ratings of rounds with explanations (their
    mean, 5 = "Helping a lot", on the agreement scale); every other choice its middle option, a required text
    "simulated participant", an optional one empty. A simulated participant has no age or country: each
    demographics item (the study's `checks`) is answered "Prefer not to say", a text item left empty."""
    scores = [len(RATINGS) - RATINGS.index(r) for g in games for r in g["explained_ratings"]]
    helped = AGREEMENT[int(round(np.mean(scores))) - 1] if scores else "Neutral"
    answers = indifferent_answers(items, demographics, "simulated participant")
    if answers.get("explanations_helped") in AGREEMENT:
        answers["explanations_helped"] = helped
    return answers


def play_participant(connection, participant: SimulatedParticipant, eyes: Eyes, played: Played,
                     on_game=lambda: None) -> Played:
    """Consent, begin, every game (next_move until the guess), the questionnaire."""
    view = connection.view
    played.arm = view["participant"]["arm"]
    if view["stage"] == "consent":
        view = connection.send("consent", {"agree": True})
    if view["stage"] == "instructions":
        view = connection.send("begin", {})
    while view["stage"] == "game":
        game = view["game"]
        participant.start_game(game, eyes.scenes(connection, game))
        refused = 0
        while game["phase"] != "finished":
            kind, payload = participant.next_move(game)
            try:
                game = connection.send(kind, {"game_id": game["game_id"], **payload})["game"]
                refused = 0
            except Refused as error:            # as a person retypes: the participant sees the view again
                played.refusals.append(str(error))
                refused += 1
                if refused >= MAX_REFUSALS_IN_A_ROW:
                    raise
        participant.end_game(game)
        rounds = game["rounds"]
        played.games.append({"won": bool(game["won"]), "score": game["score"], "questions": len(rounds),
                             "with_explanations": bool(game["with_explanations"]),
                             "explained": any(r["explained"] for r in rounds),
                             "explained_ratings": [r["rating"] for r in rounds if r["explained"] and r["rating"]]})
        on_game()
        view = connection.send("next_game", {"game_id": game["game_id"]})
    if view["stage"] == "questionnaire":
        view = connection.send("questionnaire", {"answers": questionnaire(played.games, view["questionnaire"],
                                                                          view.get("demographics", []))})
    played.finished = view["stage"] == "done"
    return played


ASSUMED_EFFECT = ("the assumed effect of explanations on the simulated participants: explanation_weight, how far an "
                  "explanation's fit (0 to 1: does it show what the answer claims, on what the participant sees) moves "
                  "its trust in that round's answer, in log-odds of trust per unit of fit above 0.75 (0: explanations "
                  "change nothing, the null). An input of the simulation, never a finding: a study simulated under it "
                  "shows what the game and the analysis do if people used explanations so, not whether they do")


def assumed_effect(explanation_weight: float | None, mix: dict[str, float]) -> dict:
    """What a simulated study assumed about explanations, for its summary and power report."""
    weights = {name: (PRESETS[name].explanation_weight if explanation_weight is None else explanation_weight)
               for name in mix}
    return {"explanation_weight": weights, "set_for_every_preset": explanation_weight is not None,
            "null": all(w == 0 for w in weights.values()), "meaning": ASSUMED_EFFECT}


def assumption_line(assumed: dict) -> str:
    """One line that says what the simulation assumed, printed above its results."""
    weights = ", ".join(f"{name} {weight:g}" for name, weight in assumed["explanation_weight"].items())
    what = "the null: explanations change nothing" if assumed["null"] else "an assumption, not a finding"
    return f"ASSUMED effect of explanations (explanation_weight, log-odds of trust per unit of fit): {weights} ({what})"


def play_study(server, study: StudyConfig, who: list[Member], eyes: Eyes, threads: int = DEFAULT_THREADS,
               on_game=lambda: None, explanation_weight: float | None = None) -> list[Played]:
    """Every member plays the whole study, `threads` at once; a participant that fails stops there (its
    error is kept), the others go on. Members join in the order of `who`: each joins once the one before it
    has (then plays alongside the others), because the server deals a newcomer the next slot of the study's
    sequence, and so arms follow the members' order, not the threads' timing.
    `explanation_weight` (None: each preset's own) is the assumed effect of explanations, ASSUMED_EFFECT."""
    min_questions = settings_named(study.kind, **study.settings).min_questions   # the view does not say it
    joined = [threading.Event() for _ in who]      # the pool takes members in order: k waits only for k - 1

    def one(k: int, member: Member) -> Played:
        played = Played(member.pid, member.preset)
        connection = None
        try:
            if k:
                joined[k - 1].wait()
            try:
                connection = server.connect(study.study_id, member.pid)
            finally:
                joined[k].set()
            config = with_min_questions(PRESETS[member.preset], min_questions)
            if explanation_weight is not None:
                config = replace(config, explanation_weight=explanation_weight)
            play_participant(connection, SimulatedParticipant(config, seed=member.seed), eyes, played, on_game)
        except Exception as error:      # noqa: BLE001: one participant's failure is reported, not fatal
            played.error = f"{type(error).__name__}: {error}"[:500]
            log.warning("participant %s stopped", member.pid, exc_info=True)   # where, for whoever debugs it
        finally:
            if connection is not None:
                connection.close()
        return played

    with ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="participant") as pool:
        return list(pool.map(one, range(len(who)), who))


# --- the summary ---------------------------------------------------------------------------------------

def _rate(games: list[dict]) -> dict:
    wins = sum(g["won"] for g in games)
    return {"games": len(games), "wins": wins, "win_rate": wins / len(games) if games else None}


def _shown(study: StudyConfig, game: dict) -> bool:
    """The game showed explanations: controlled, its block did; at-will, a round of it was explained."""
    return game["with_explanations"] if study.kind == "controlled" else game["explained"]


def summarize(study: StudyConfig, played: list[Played]) -> dict:
    """Win rates by arm and by preset, each with and without explanations, and "overall" over the arms
    that show real explanations (Table 1's "overall" grouping: no sham arm; games as the unit)."""
    def split(players: list[Played]) -> dict:
        games = [g for p in players for g in p.games]
        return {"participants": len(players), **_rate(games),
                "with_explanations": _rate([g for g in games if _shown(study, g)]),
                "without_explanations": _rate([g for g in games if not _shown(study, g)])}
    arms = sorted({p.arm for p in played if p.arm})
    showing = [p for p in played if p.arm and (study.kind == "at-will" or (arm_modes(p.arm) and not is_sham(p.arm)))]
    return {"study": study.study_id, "kind": study.kind, "participants": len(played),
            "finished": sum(p.finished for p in played), "games": sum(len(p.games) for p in played),
            "by_arm": {arm: split([p for p in played if p.arm == arm]) for arm in arms},
            "overall": split(showing),
            "by_preset": {preset: split([p for p in played if p.preset == preset])
                          for preset in sorted({p.preset for p in played})},
            "refused_moves": sum(len(p.refusals) for p in played),
            "refusal_examples": list(dict.fromkeys(r for p in played for r in p.refusals))[:10],
            "errors": {p.pid: p.error for p in played if p.error}}


def format_summary(summary: dict) -> str:
    def pct(cell: dict) -> str:
        return "-" if cell["win_rate"] is None else f"{cell['win_rate']:.0%} of {cell['games']}"

    lines = [f"{summary['participants']} simulated participants ({summary['finished']} finished), "
             f"{summary['games']} games of study {summary['study']} ({summary['kind']})"]
    if "seconds" in summary:
        lines[0] += (f" in {summary['seconds']:.0f} s (playing {summary['play_seconds']:.0f} s, "
                     f"{summary['games_per_second'] or 0:.1f} games/s)")
    if "assumed" in summary:
        lines.append(assumption_line(summary["assumed"]))
    lines.append(f"{'':28}{'participants':>13}{'win rate':>14}{'with expl.':>14}{'without expl.':>15}")
    rows = [(f"arm {arm}", cell) for arm, cell in summary["by_arm"].items()]
    rows += [("overall (expl. arms)", summary["overall"])]
    rows += [(f"preset {name}", cell) for name, cell in summary["by_preset"].items()]
    for name, cell in rows:
        lines.append(f"{name:28}{cell['participants']:>13}{pct(cell):>14}{pct(cell['with_explanations']):>14}"
                     f"{pct(cell['without_explanations']):>15}")
    if summary["refused_moves"]:
        lines.append(f"{summary['refused_moves']} moves refused, e.g. {summary['refusal_examples'][0]}")
    for pid, error in list(summary["errors"].items())[:5]:
        lines.append(f"participant {pid} stopped: {error}")
    return "\n".join(lines)


# --- the whole run -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SimulationConfig:
    study: Path                                   # a study file (game/study.py)
    participants: int
    out: Path
    players: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_MIX))   # preset -> share
    world: Path = Path("data/world")              # in-process: the games' world; --url: the server's world
    agent: str = "default"                        # in-process: the server's agent (a study naming one keeps it)
    url: str | None = None                        # a running server instead of the in-process one
    admin_token: str = ""                         # --url: the server's admin token
    seed: int = 0
    threads: int = DEFAULT_THREADS                # participants playing at once
    workers: int = 1                              # in-process inference workers (threads, one torch thread each)
    export_format: str = "csv"
    explainer_options: dict = field(default_factory=dict)    # in-process: as ServerConfig.explainer_options
    explanation_weight: float | None = None       # the assumed effect (ASSUMED_EFFECT); None: each preset's own
    progress: bool = True


def simulate(config: SimulationConfig) -> dict:
    """Runs the study, writes OUT/export/ and OUT/summary.json; returns the summary."""
    study, left_out = as_dry_run(load_study(study_file(config.study)))
    missing = not config.url and study.agent and missing_checkpoint(study.agent)
    if missing:       # said once, of the user's file, before a server copies it anywhere
        raise ValueError(f"{config.study}: the study's agent {study.agent!r} cannot be loaded here: {missing}")
    study = seeded_study(study, config.seed)
    if left_out and config.progress:
        print(left_out, file=sys.stderr, flush=True)
    run = f"s{config.seed}" + (f"-{secrets.token_hex(3)}" if config.url else "")   # a server's ids stay new
    who = members(config.players, config.participants, config.seed, run)
    started = time.perf_counter()
    if config.progress:
        print(f"starting {config.url or f'the in-process server (agent {config.agent}, world {config.world})'}",
              file=sys.stderr, flush=True)
    server = (RemoteServer(config.url, config.admin_token, config.world) if config.url else
              InProcessServer(config.world, config.agent, config.seed, config.explainer_options, config.workers))
    with server:
        study = server.add_study(study)
        eyes = Eyes(server.pool, progress=config.progress)
        bar = tqdm(total=len(who) * study.games, desc=f"simulated games ({study.study_id})", unit="game",
                   disable=not config.progress)
        playing = time.perf_counter()
        played = play_study(server, study, who, eyes, config.threads, on_game=lambda: bar.update(1),
                            explanation_weight=config.explanation_weight)
        play_seconds = time.perf_counter() - playing
        bar.close()
        events = in_member_order(server.events(study.study_id, {f"pid:{m.pid}" for m in who}), who)
    written = write_export(events, Path(config.out) / EXPORT_DIR, config.export_format)
    games = sum(len(p.games) for p in played)
    summary = {**summarize(study, played), "seconds": time.perf_counter() - started, "play_seconds": play_seconds,
               "games_per_second": games / play_seconds if play_seconds else None,
               "players": config.players, "assumed": assumed_effect(config.explanation_weight, config.players),
               "seed": config.seed, "server": config.url or "in-process",
               "agent": config.agent if not config.url else "the server's", "world": str(config.world),
               "threads": config.threads, "eyes": {"by_hash": eyes.by_hash, "by_pixels": eyes.by_pixels},
               "events": len(events), "export": str(written[0].parent), "presets": {p.pid: p.preset for p in played},
               "left_out": left_out}
    (Path(config.out) / SUMMARY).write_text(json.dumps(summary, indent=1))
    return summary


def in_member_order(events: list[dict], who: list[Member]) -> list[dict]:
    """The events grouped by participant in the order of `who`, each participant's in the order they were
    logged (the sort is stable): the log interleaves participants as the threads happened to write, and the
    export's rows follow the log."""
    position = {f"pid:{m.pid}": k for k, m in enumerate(who)}
    return sorted(events, key=lambda e: position.get(e.get("participant"), -1))    # the study's own events first


SIMULATED_CANNOT_TAKE = ("comprehension", "colour_screen", "attention")


def as_dry_run(study: StudyConfig) -> tuple[StudyConfig, str | None]:
    """The study as simulated participants can play it, and what was left out (None: nothing): the participant
    checks they cannot take go, and with them a pre-registration (its hash covers the checks, and a simulation is
    never the registered study's data). So `exag simulate --study` dry-runs the real study file as it is."""
    staged = [part for part in SIMULATED_CANNOT_TAKE if part in study.checks]
    if not staged:
        return study, None
    registered = bool(study.preregistration.get("sha256"))
    dry = replace(study, checks={k: v for k, v in study.checks.items() if k not in SIMULATED_CANNOT_TAKE},
                  preregistration={} if registered else study.preregistration)
    return dry, (f"dry run of study {study.study_id}: simulated participants do not take participant checks, so "
                 f"{', '.join(staged)} {'is' if len(staged) == 1 else 'are'} left out"
                 + (", and with them its pre-registration (a simulation is never the registered study's data)"
                    if registered else ""))


def seeded_study(study: StudyConfig, seed: int) -> StudyConfig:
    """The study with its assignment's seed: its own, or one derived from the simulation's seed (and the
    study's id), so the same --seed deals the same arms and orders."""
    staged = [part for part in ("comprehension", "colour_screen", "attention") if part in study.checks]
    if staged:
        raise ValueError(f"study {study.study_id}: simulated participants do not take participant checks "
                         f"({', '.join(staged)}); as_dry_run leaves them out")
    if study.seed is not None:
        return study
    return replace(study, seed=int(seeded_rng(seed, "study", study.study_id).integers(2**63)))


def study_file(path: Path) -> Path:
    """The study file, or FileNotFoundError that says what is wanted."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"no study file {path} (a study JSON file, e.g. studies/demo-controlled.json)")
    return Path(path)
