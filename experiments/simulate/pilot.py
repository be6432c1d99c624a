"""`exag bot --pilot STUDY.json`: test participants pilot a study file on a running server, through every check
to the completion code, with the recruiting platform's parameters: the researcher's last step before launch
(docs/real-study.md).

    exag bot --url https://exag.example.org --pilot studies/reviewed-1.json --participants 2 --json results/pilot.json

Each participant joins as the study's link does: a study with `prolific_study_id` with PROLIFIC_PID=bot-...,
STUDY_ID and SESSION_ID, as Prolific's link (`--platform` forces prolific, mturk or none: pid=bot-...), so its
participation (prolific:bot-...:SESSION) is a test one that never counts toward a planned N (game/study.py
TEST_PARTICIPATIONS). It agrees to the consent form, reads the instructions, answers the comprehension check and
the colour plates right, plays every game (game.players.SimplePlayer: a few questions, ratings, a guess), answers
each attention check right and every questionnaire item, and reaches the done page. The report gives per
participant the stage reached, games, wins, the completion code shown and the return link, which must carry that
code as `cc=` (game/completion_link.py); any participant that ends elsewhere or whose link lacks its code fails
the pilot, with one line saying why.

The right answers come from the study file (the server never sends them to a page), so the file must be the
server's study: the first view is compared with what the file makes of it (kind, games, settings, explanations,
consent form, questionnaire, demographics) and each check with the file's as the page is sent it (the colour
plates dot for dot); a difference at the door refuses the pilot in one line (PilotRefused), a later one fails the
participant and ends the pilot. With the server's admin token (--admin-token, or EXAG_ADMIN_TOKEN) the whole
stored study is compared with the file first, and the checks' results the server recorded are read back after.
The socket pilot here; the same path clicked through the real page in Chromium: pilot_browser.py.
"""
from __future__ import annotations

import json
import secrets
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from urllib.parse import parse_qs, urlsplit

import socketio
from tqdm import tqdm

from game.checks import CHECK_FLAGS, attention_view, colour_screen_view, comprehension_view, plate_key
from game.completion_link import CODE_PARAMETER, return_link
from game.players import SimplePlayer, indifferent_answers
from game.settings import settings_named
from game.study import StudyConfig, explainers_of, is_test_participation

from .bot import Bot, BotError, BotRefused, play_game

PLATFORMS = ("prolific", "mturk", "none")
ENDS = ("done", "screened_out", "declined")     # stages a participation ends in
STEPS_PER_GAME = 12          # messages a pilot participant may send per game (checks included) before it gives up
PILOT_TEXT = "pilot"         # a required text answer


class PilotRefused(ValueError):
    """The pilot cannot run (one line): the server refused the join or is unreachable, or its study is not the
    file's."""


class PilotFailed(Exception):
    """A pilot participant failed (one line). `mismatch`: because the file is not the server's study, so the next
    participants would fail alike."""

    def __init__(self, message: str, mismatch: bool = False) -> None:
        super().__init__(message)
        self.mismatch = mismatch


@dataclass
class Participation:
    """One pilot participant, as the report gives it."""
    join: dict                          # the join's participant parameters (the platform's)
    participant: str = ""               # the server's id of the participation (prolific:bot-...:SESSION)
    arm: str = ""
    stage: str = "join"                 # the last stage reached
    games: list = field(default_factory=list)
    checks: dict = field(default_factory=dict)   # check -> times answered (attention: one per check)
    completion_code: str = ""
    redirect_url: str = ""              # the done page's return link
    returned_to: str | None = None      # --browser: where the done page's return button sent the browser
    server_flags: str | None = None     # --admin-token: the quality flags the server recorded ("" = none)
    failure: str = ""
    seconds: float = 0.0

    def report(self) -> dict:
        return {**asdict(self), "wins": sum(g["won"] for g in self.games), "ok": not self.failure}


class Progress:
    """The bar over the pilot's games, shown from the first participant's admission on (`start`): a pilot refused
    at the door prints its one line alone."""

    def __init__(self, total: int, desc: str, enabled: bool) -> None:
        self.total, self.desc, self.enabled, self.bar = total, desc, enabled, None

    def start(self) -> None:
        if self.bar is None:
            self.bar = tqdm(total=self.total, desc=self.desc, disable=not self.enabled)

    def update(self, games: int = 1) -> None:
        self.start()
        self.bar.update(games)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def default_platform(study: StudyConfig) -> str:
    return "prolific" if study.prolific_study_id else "none"


def join_ids(study: StudyConfig, platform: str) -> dict:
    """A new test participant's parameters, as the platform's link carries them (server/schemas.py
    PARTICIPANT_IDS); the person's id starts with "bot-" (a test participation, game/study.py)."""
    person, session = f"bot-{secrets.token_hex(6)}", secrets.token_hex(12)
    if platform == "prolific":
        return {"PROLIFIC_PID": person, "STUDY_ID": study.prolific_study_id or "pilot", "SESSION_ID": session}
    if platform == "mturk":
        return {"workerId": person, "assignmentId": session, "hitId": "pilot"}
    if platform == "none":
        return {"pid": person}
    raise ValueError(f"--platform must be one of {', '.join(PLATFORMS)}, not {platform!r}")


def _same(a, b) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


class StudyFile:
    """The study file a pilot plays: what the server's views must show (as the file makes them) and the right
    answers, which only the file has."""

    def __init__(self, study: StudyConfig, path: str) -> None:
        self.study, self.path, self.checks = study, str(path), study.parsed_checks
        self._plates: dict | None = None

    @property
    def expected_attention_checks(self) -> int:
        attention = self.checks.attention
        return sum(attention.due(g, self.study.games) for g in range(1, self.study.games)) if attention else 0

    def refused(self, url: str, reason: str, join: dict) -> PilotRefused:
        hint = ""
        if "Prolific" in reason:
            hint = f" (the pilot sent STUDY_ID={join['STUDY_ID']!r}, the file's prolific_study_id: is it the " \
                "server's?)" if "STUDY_ID" in join else " (the study wants Prolific's parameters: --platform prolific)"
        elif "no study" in reason:
            hint = " (create the study on the server from this file first)"
        return PilotRefused(f"{self.path}: the server at {url} refused the pilot's join: {reason}{hint}")

    def differs(self, what: str) -> str:
        return f"{self.path} is not the server's study {self.study.study_id!r}: {what}"

    # --- the door ---------------------------------------------------------------------------------------

    def joined(self, run: Participation, view: dict) -> None:
        """The first view against the file: PilotRefused (one line) naming every part that differs."""
        study, who = self.study, view["participant"]
        run.participant, run.arm, run.stage = who["pid"], who["arm"], view["stage"]
        if not is_test_participation(run.participant):
            raise PilotRefused(f"the server made the pilot's participation {run.participant!r}, which is no test "
                               "participation (game/study.py TEST_PARTICIPATIONS): it would count toward the "
                               "planned N")
        mine = {"kind": study.kind, "games": study.games, "sessions": study.sessions,
                "settings": settings_named(study.kind, **study.settings).to_dict(), "offer": study.offer,
                "questionnaire": [item.public() for item in study.parsed_questionnaire],
                "demographics": [item.public() for item in self.checks.demographics],
                "comprehension check": self.checks.comprehension is not None}
        theirs = {"kind": who["kind"], "games": who["games_total"], "sessions": who["sessions"],
                  "settings": view["instructions"]["setting"], "offer": view["instructions"]["offer"],
                  "questionnaire": view["questionnaire"], "demographics": view["demographics"],
                  "comprehension check": "comprehension" in view["instructions"]}
        if view.get("consent") is not None:
            mine["consent form"], theirs["consent form"] = study.parsed_consent.public(), view["consent"]
        if who["arm"] in study.arms:
            mine["explanations"], theirs["explanations"] = list(explainers_of(study, who["arm"])), \
                view["instructions"]["modes"]
        else:
            mine["arms"], theirs["arms"] = "/".join(study.arms), f"one named {who['arm']}"
        shown = {name for name in mine if isinstance(mine[name], (str, int)) and not isinstance(mine[name], bool)}
        differ = [name + (f" (server {theirs[name]}, file {mine[name]})" if name in shown else "")
                  for name in mine if not _same(mine[name], theirs[name])]
        if differ:
            raise PilotRefused(self.differs(f"its {', '.join(differ)} differ"))

    # --- the checks and the questionnaire ---------------------------------------------------------------

    def action(self, run: Participation, view: dict) -> tuple[str, dict]:
        """The message a participant who passes every check sends at a stage other than a game's; the check's
        view compared with the file's first (PilotFailed, a mismatch, when it differs)."""
        stage = view["stage"]
        if stage == "consent":
            return "consent", {"agree": True}
        if stage == "instructions":
            return "begin", {}
        if stage == "questionnaire":
            return "questionnaire", {"answers": questionnaire_answers(view)}
        names = {"comprehension": "comprehension check", "colour_screen": "colour screen",
                 "attention_check": "attention check"}
        if stage not in names:
            raise PilotFailed(f"the server showed a stage the pilot does not know: {stage!r}")
        part = {"comprehension": self.checks.comprehension, "colour_screen": self.checks.colour_screen,
                "attention_check": self.checks.attention}[stage]
        if part is None:
            raise PilotFailed(self.differs(f"the server shows a {names[stage]} the file does not have"), True)
        expected = self.check_view(stage, view)
        if not _same(expected, view["check"]):
            what = "colour plates" if stage == "colour_screen" else f"{names[stage]}'s questions"
            raise PilotFailed(self.differs(f"the server's {what} are not the file's"), True)
        run.checks[stage] = run.checks.get(stage, 0) + 1
        if stage == "comprehension":
            return "comprehension", {"answers": {q.key: q.answer for q in part.questions}}
        if stage == "colour_screen":
            return "colour_screen", {"answers": {plate_key(i): str(n) for i, n in enumerate(part.plates)}}
        return "attention_check", {"answer": part.item(view["check"]["number"]).answer}

    def check_view(self, stage: str, view: dict) -> dict:
        if stage == "comprehension":
            return comprehension_view(self.checks.comprehension, view["check"]["attempt"] - 1)
        if stage == "colour_screen":
            if self._plates is None:        # the same plates for every participant of the study
                self._plates = colour_screen_view(self.checks.colour_screen, self.study.study_id)
            return self._plates
        return attention_view(self.checks.attention, view["check"]["number"])

    def after(self, event: str, view: dict) -> None:
        """After a check's right answers: the participant must go on (PilotFailed, a mismatch, when the server
        graded them wrong)."""
        if event == "comprehension" and view["stage"] in ("instructions", "comprehension", "screened_out"):
            raise PilotFailed(self.differs("the server graded the file's comprehension answers wrong (its right "
                                           "answers are not the file's)"), True)
        if event in ("colour_screen", "attention_check") and view["stage"] == "screened_out":
            raise PilotFailed(self.differs(f"the server screened the pilot out after the file's {event} answers"), True)

    # --- the end ----------------------------------------------------------------------------------------

    def finish(self, run: Participation, view: dict, returned_to: str | None = None) -> None:
        """The end a pilot participant must reach: the done page, after every check the file has, with the
        completion code and a return link that carries it (PilotFailed otherwise); `returned_to`: where the
        page's return button sent a browser."""
        run.stage, run.returned_to = view["stage"], returned_to
        if view["stage"] != "done":
            out = view.get("screened_out") or {}
            raise PilotFailed(f"ended at {view['stage']!r}, not the done page"
                              + (f" (screened out: code {out.get('completion_code')!r})" if out else ""))
        done = view.get("done") or {}
        run.completion_code, run.redirect_url = done.get("completion_code") or "", done.get("redirect_url") or ""
        seen = {"comprehension": bool(run.checks.get("comprehension")), "colour_screen": bool(
            run.checks.get("colour_screen")), "attention_check": run.checks.get("attention_check", 0)}
        wanted = {"comprehension": self.checks.comprehension is not None,
                  "colour_screen": self.checks.colour_screen is not None,
                  "attention_check": self.expected_attention_checks}
        missing = [f"{name} ({seen[name]:d} of {wanted[name]:d})" for name in wanted if seen[name] != wanted[name]]
        if missing:
            raise PilotFailed(self.differs(f"the server showed other checks than the file's: {', '.join(missing)}"),
                              True)
        problem = code_problem(self.study, run.completion_code, run.redirect_url, returned_to)
        if problem:
            raise PilotFailed(problem)


def questionnaire_answers(view: dict) -> dict:
    """An answer to every item the view lists, the questionnaire's and the demographics' (a required text:
    PILOT_TEXT)."""
    return indifferent_answers(view.get("questionnaire") or [], view.get("demographics") or [], PILOT_TEXT)


def code_problem(study: StudyConfig, code: str, link: str, returned_to: str | None = None) -> str:
    """What is wrong with the done page's completion code and return link ("" when nothing): per-participant codes
    need a code; a static one is the file's; a study with a redirect_url must link back to it with the code shown as
    `cc=` (game/completion_link.py), and a browser must have been sent there."""
    if study.completion_codes == "per_participant" and not code:
        return "the done page shows no completion code (the study gives per-participant codes)"
    if study.completion_codes != "per_participant" and code != study.completion_code:
        return f"the done page shows the code {code!r}, the file's completion_code is {study.completion_code!r}"
    if not study.redirect_url:
        return ""
    if not link:
        return "the done page has no return link (the study has a redirect_url)"
    carried = parse_qs(urlsplit(link).query).get(CODE_PARAMETER, [])
    if carried != [code] or not code:
        has = f"cc={carried[0]!r}" if carried else "no cc="
        return f"the return link carries {has}, not the participant's code {code!r}: {link}"
    expected = return_link(study.redirect_url, code if study.completion_codes == "per_participant" else None)
    if link != expected:
        return f"the return link is not the file's redirect_url with the code: {link} (expected {expected})"
    if returned_to is not None and returned_to != link:
        return f"the return button sent the browser to {returned_to}, not to the return link {link}"
    return ""


# --- the socket pilot -----------------------------------------------------------------------------------

def play_participation(url: str, study: StudyFile, run: Participation, player: SimplePlayer, arm: str | None,
                       bar: Progress) -> None:
    """One test participant through the real Socket.IO interface, from the join to the done page."""
    try:
        bot = Bot(url, study.study.study_id, None, arm, ids=run.join)
    except BotRefused as error:
        raise study.refused(url, error.reason, run.join) from None
    except (BotError, OSError, socketio.exceptions.ConnectionError) as error:
        raise PilotRefused(f"cannot reach the server at {url}: {error}") from None
    try:
        study.joined(run, bot.state)
        bar.start()
        min_questions = bot.state["instructions"]["setting"].get("min_questions", 0)
        for _ in range(STEPS_PER_GAME * (study.study.games + 2)):
            run.stage = bot.state["stage"]
            if run.stage in ENDS:
                break
            if run.stage == "game":
                run.games.append(play_game(bot, player, min_questions))
                bar.update(1)
                continue
            event, payload = study.action(run, bot.state)
            bot.send(event, payload)
            study.after(event, bot.state)
        else:
            raise PilotFailed(f"never reached the end of the study (still at {run.stage!r})")
        study.finish(run, bot.state)
    except BotError as error:
        raise PilotFailed(f"at {run.stage}: {error}") from None
    finally:
        bot.close()


def pilot(url: str, study: StudyFile, participants: int = 1, platform: str | None = None, arm: str | None = None,
          questions: int = 3, seed: int = 0, admin_token: str = "", progress: bool = True) -> dict:
    """`participants` test participants pilot `study` on the server at `url` over Socket.IO, one after the other;
    the report (`format_pilot`). PilotRefused when the pilot cannot run."""
    def participant(run: Participation, number: int, bar: Progress) -> None:
        play_participation(url, study, run, SimplePlayer(questions_per_game=questions, seed=seed + number), arm, bar)

    return run_pilot(url, study, participants, platform, admin_token, participant, "socket", progress)


def run_pilot(url: str, study: StudyFile, participants: int, platform: str | None, admin_token: str, participant,
              mode: str, progress: bool) -> dict:
    """The pilot's frame, the same in a browser: the admin's look at the stored study first, `participant(run,
    number, bar)` for each participant in turn (PilotFailed ends that participant; a mismatch ends the pilot), the
    recorded checks read back, and the report."""
    if participants < 1:
        raise ValueError("--participants must be at least 1")
    url = url.rstrip("/")
    platform = platform or default_platform(study.study)
    join_ids(study.study, platform)          # an unknown platform: one line before anything runs
    admin = Admin(url, admin_token, study) if admin_token else None
    if admin:
        admin.compare()
    runs: list[Participation] = []
    bar = Progress(participants * study.study.games, f"pilot games ({mode})", progress)
    try:
        for number in range(participants):
            run = Participation(join=join_ids(study.study, platform))
            runs.append(run)
            started = time.monotonic()
            try:
                participant(run, number, bar)
            except PilotFailed as failure:
                run.failure = str(failure)
                if failure.mismatch:
                    break
            finally:
                run.seconds = round(time.monotonic() - started, 2)
    finally:
        bar.close()
    if admin:
        admin.read_back(runs)
    finished = [r for r in runs if not r.failure]
    return {"url": url, "study_file": study.path, "study": study.study.study_id, "platform": platform, "mode": mode,
            "participants_planned": participants, "participants": [r.report() for r in runs],
            "reached_done": sum(r.stage == "done" for r in runs), "ok": len(finished) == participants,
            "checks_verified_by_server": admin is not None,
            "failures": [f"{r.participant or 'participant ' + str(i + 1)}: {r.failure}"
                         for i, r in enumerate(runs) if r.failure]
            + ([f"{participants - len(runs)} more participant(s) not started after the mismatch"]
               if len(runs) < participants else [])}


class Admin:
    """With the server's admin token: the stored study compared with the file before the pilot, and the checks'
    results the server recorded for the pilot's participants read back after (the console's monitor)."""

    def __init__(self, url: str, token: str, study: StudyFile) -> None:
        self.url, self.token, self.study = url, token, study

    def monitor(self) -> dict:
        request = urllib.request.Request(f"{self.url}/admin/monitor.json", headers={"X-Admin-Token": self.token})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                rows = json.load(answer)
        except urllib.error.HTTPError as error:
            raise PilotRefused(f"the server at {self.url} refused the admin token's look at the study: HTTP "
                               f"{error.code} {error.reason}") from None
        except (OSError, ValueError) as error:
            raise PilotRefused(f"cannot reach the server at {self.url}: {error}") from None
        found = [row for row in rows if row["study"]["study_id"] == self.study.study.study_id]
        if not found:
            raise PilotRefused(f"{self.study.path}: the server at {self.url} has no study "
                               f"{self.study.study.study_id!r} (create it from this file first)")
        return found[0]

    def compare(self) -> None:
        stored, mine = self.monitor()["study"], self.study.study.to_dict()
        if mine["seed"] is None:             # the server draws a seed for a file without one
            stored = {**stored, "seed": None}
        differ = sorted(name for name in set(mine) | set(stored) if not _same(mine.get(name), stored.get(name)))
        if differ:
            raise PilotRefused(self.study.differs(f"its {', '.join(differ)} differ (the admin's monitor)"))

    def read_back(self, runs: list[Participation]) -> None:
        shown = {p["pid"]: p for p in self.monitor()["participants"]}
        for run in runs:
            if run.participant not in shown:
                continue
            run.server_flags = shown[run.participant]["quality"]["flags"]
            failed = [flag for flag in CHECK_FLAGS if flag in run.server_flags.split("+")]
            if failed and not run.failure:
                run.failure = self.study.differs(f"the server recorded {'+'.join(failed)} for the pilot's right "
                                                 "answers (its right answers are not the file's)")


def format_pilot(report: dict) -> str:
    """The pilot's report as a few lines for the terminal."""
    on = {"prolific": "Prolific's parameters", "mturk": "MTurk's parameters", "none": "pid=bot-..."}[report["platform"]]
    lines = [f"pilot of {report['study_file']} (study {report['study']!r}, {on}, {report['mode']}) at {report['url']}: "
             f"{report['reached_done']} of {report['participants_planned']} participants reached the completion code"
             + ("" if report["checks_verified_by_server"] else
                "; check results not read back (give --admin-token to compare the stored study and the grading)")]
    for p in report["participants"]:
        returned = f", returned to {p['returned_to']}" if p["returned_to"] else ""
        lines.append(f"  {p['participant'] or '-'} ({p['arm'] or '-'}): {p['stage']}, {len(p['games'])} games, "
                     f"{p['wins']} won, code {p['completion_code'] or '-'}, return link {p['redirect_url'] or '-'}"
                     f"{returned}, {p['seconds']:.0f} s" + ("" if p["ok"] else "  FAILED"))
    return "\n".join(lines)
