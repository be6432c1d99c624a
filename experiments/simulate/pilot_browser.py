"""`exag bot --pilot STUDY.json --browser`: the pilot of pilot.py clicked through the real game page in Chromium
(Playwright), as a participant's browser takes the study.

    exag bot --url http://127.0.0.1:5000 --pilot studies/reviewed-1.json --browser

Each participant opens the study link with the platform's parameters (?study=ID&PROLIFIC_PID=bot-...&STUDY_ID=...
&SESSION_ID=...), ticks every box of the consent form and clicks button#consent-agree, starts, picks the file's
right answers in the comprehension check, types the colour plates' numbers, plays every game (types questions,
clicks ratings, a tile and "Guess"), answers each attention check and every questionnaire item, and on the done
page clicks the return button: that navigation is intercepted (page.route: nothing leaves the machine), and the URL
it went to must carry the participant's code as `cc=`. The server's views are read off the page's own WebSocket
(the `state` frames it is sent), so every view is compared with the file as the socket pilot compares it; the
page's script errors fail the participant.

Chromium: EXAG_CHROMIUM, else Debian's `chromium` on the PATH (Playwright's own download needs the internet),
else Playwright's. Without Playwright or a Chromium it can start, --browser says how to install them, in one line.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from urllib.parse import urlencode

from game.players import SimplePlayer

from .bot import MIN_INTERVAL_S
from .pilot import ENDS, STEPS_PER_GAME, Participation, PilotFailed, PilotRefused, StudyFile, run_pilot

TIMEOUT_S = 60.0               # for any reply, render or navigation
POLL_MS = 50
INSTALL = ("install Chromium (apt-get install chromium, or python -m playwright install chromium) or set "
           "EXAG_CHROMIUM to a Chromium binary")
INTERCEPTED = "<!doctype html><title>exag pilot</title><p>exag bot --pilot: the return link, intercepted.</p>"


def chromium_executable() -> str | None:
    """EXAG_CHROMIUM (as given: a wrong one is said so), else a Chromium on the PATH; None: Playwright's own."""
    return os.environ.get("EXAG_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def pilot_in_browser(url: str, study: StudyFile, participants: int = 1, platform: str | None = None,
                     arm: str | None = None, questions: int = 3, seed: int = 0, admin_token: str = "",
                     progress: bool = True) -> dict:
    """pilot.pilot, with each participant a Chromium page of its own (a fresh browser context: its own cookie)."""
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        raise PilotRefused("--browser needs Playwright: pip install playwright (it is in the dev extra), and "
                           f"{INSTALL}") from None
    url = url.rstrip("/")
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=chromium_executable(), args=["--no-sandbox"])
        except Error as error:
            first = (str(error).strip().splitlines() or [""])[0][:160]
            raise PilotRefused(f"--browser could not start Chromium ({first}): {INSTALL}") from None
        try:
            def participant(run: Participation, number: int, bar) -> None:
                player = SimplePlayer(questions_per_game=questions, seed=seed + number)
                BrowserParticipant(browser, url, study, run, player, arm, bar).play()

            return run_pilot(url, study, participants, platform, admin_token, participant, "browser", progress)
        finally:
            browser.close()


class _Refused(Exception):
    """The server answered the page's message with `error`."""


class BrowserParticipant:
    """One pilot participant on the real page: clicks what a participant clicks and reads the server's views off
    the page's WebSocket."""

    def __init__(self, browser, url: str, study: StudyFile, run: Participation, player: SimplePlayer,
                 arm: str | None, bar) -> None:
        self.url, self.study, self.run, self.player, self.bar = url, study, run, player, bar
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.page.set_default_timeout(TIMEOUT_S * 1000)
        self.states: list[dict] = []
        self.errors: list[str] = []
        self.page_errors: list[str] = []
        self.errors_seen = 0
        self.last_action = 0.0
        self.page.on("websocket", lambda socket: socket.on("framereceived", self._frame))
        self.page.on("pageerror", lambda error: self.page_errors.append(str(error)))
        self.link = f"{url}/?" + urlencode({"study": study.study.study_id, **run.join, **({"arm": arm} if arm else {})})

    def _frame(self, payload) -> None:
        """A Socket.IO event the server sent the page ("42" + JSON [name, argument])."""
        if isinstance(payload, dict):
            payload = payload.get("payload")
        if not isinstance(payload, str) or not payload.startswith("42"):
            return
        try:
            name, *args = json.loads(payload[2:])
        except (ValueError, TypeError):
            return
        if name == "state" and args:
            self.states.append(json.loads(args[0]) if isinstance(args[0], str) else args[0])
        elif name == "error" and args:
            self.errors.append(str((args[0] or {}).get("message", args[0])) if isinstance(args[0], dict) else
                               str(args[0]))

    @property
    def state(self) -> dict:
        return self.states[-1]

    def wait(self, condition, what: str) -> None:
        """Lets the page run until `condition()`; _Refused when the server answered `error`, PilotFailed after
        TIMEOUT_S."""
        deadline = time.monotonic() + TIMEOUT_S
        while not condition():
            if len(self.errors) > self.errors_seen:
                self.errors_seen = len(self.errors)
                raise _Refused(self.errors[-1])
            if time.monotonic() > deadline:
                raise PilotFailed(f"at {self.run.stage}: no {what} within {TIMEOUT_S:g} s")
            self.page.wait_for_timeout(POLL_MS)

    def act(self, what: str, do) -> dict:
        """Does `do()` on the page and waits for the server's next view, and for the page to show its stage."""
        sent = len(self.states)
        # as polite as `exag bot`'s connections: the server refuses a flood (a whole study clicked through at a
        # browser's speed ran past its sustained 10 messages a second, with the page's own messages)
        time.sleep(max(0.0, self.last_action + MIN_INTERVAL_S - time.monotonic()))
        self.last_action = time.monotonic()
        do()
        self.wait(lambda: len(self.states) > sent, f"reply to {what}")
        self.page.locator(f'#stage[data-stage="{self.state["stage"]}"]').wait_for(state="attached")
        return self.state

    def play(self) -> None:
        run, study = self.run, self.study
        try:
            self.page.goto(self.link)
            try:
                self.wait(lambda: self.states, "view after opening the study link")
            except _Refused as refused:
                raise study.refused(self.url, str(refused), run.join) from None
            study.joined(run, self.state)
            self.bar.start()
            setting = self.state["instructions"]["setting"]
            for _ in range(STEPS_PER_GAME * (study.study.games + 2)):
                run.stage = self.state["stage"]
                self.page.locator(f'#stage[data-stage="{run.stage}"]').wait_for(state="attached")
                if run.stage in ENDS:
                    break
                if run.stage == "game":
                    run.games.append(self.play_game(setting.get("min_questions", 0)))
                    self.bar.update(1)
                    continue
                event, payload = study.action(run, self.state)
                self.act(event, lambda: self.answer(event, payload))
                study.after(event, self.state)
            else:
                raise PilotFailed(f"never reached the end of the study (still at {run.stage!r})")
            returned_to = self.follow_return_link() if self.state["stage"] == "done" else None
            study.finish(run, self.state, returned_to)
            if self.page_errors:
                raise PilotFailed(f"the page raised a script error: {self.page_errors[0][:200]}")
        except _Refused as refused:
            raise PilotFailed(f"at {run.stage}: the server refused: {refused}") from None
        finally:
            self.context.close()

    # --- what a participant clicks ----------------------------------------------------------------------

    def answer(self, event: str, payload: dict) -> None:
        """The page's way of sending `event` with `payload` (pilot.StudyFile.action's message)."""
        page = self.page
        if event == "consent":
            page.locator("form#consent").wait_for()
            for box in page.locator("form#consent input[type=checkbox]").all():
                box.check()
            page.click("button#consent-agree")
        elif event == "begin":
            page.click("#begin")
        elif event == "comprehension":
            for key, option in payload["answers"].items():
                self.choose(f'#comprehension fieldset[data-key="{key}"]', option)
            page.click("#comprehension-submit")
        elif event == "colour_screen":
            for key, number in payload["answers"].items():
                page.fill(f'#colour-screen input[data-key="{key}"]', number)
            page.click("#colour-submit")
        elif event == "attention_check":
            self.choose("#attention-check fieldset", payload["answer"])
            page.click("#attention-submit")
        elif event == "questionnaire":
            page.locator("form#questionnaire").wait_for()
            for key, value in payload["answers"].items():
                if page.locator(f'#questionnaire fieldset[data-key="{key}"]').count():
                    self.choose(f'#questionnaire fieldset[data-key="{key}"]', value)
                elif value:
                    page.fill(f'#questionnaire textarea[data-key="{key}"]', value)
            page.click("#questionnaire-submit")
        else:
            raise PilotFailed(f"the browser pilot cannot send {event!r}")

    def choose(self, fieldset: str, option: str) -> None:
        """Ticks the radio button of `option` in `fieldset` (found by its value, whatever characters it has)."""
        self.page.locator(fieldset).first.wait_for()
        for radio in self.page.locator(f"{fieldset} input[type=radio]").all():
            if radio.get_attribute("value") == option:
                radio.check()
                return
        raise PilotFailed(f"at {self.run.stage}: the page offers no option {option!r} in {fieldset}")

    def play_game(self, min_questions: int) -> dict:
        page, player = self.page, self.player
        game = self.state["game"]
        gid = game["game_id"]
        if game["phase"] == "rating":
            rating = player.rating()
            game = self.act("rate", lambda: page.click(f'button.rating[data-rating="{rating}"]'))["game"]
        while game["phase"] == "asking" and (len(game["rounds"]) < min_questions or player.wants_question(game)):
            question = player.question()

            def ask() -> None:
                page.fill("#question", question)
                page.press("#question", "Enter")

            game = self.act("ask", ask)["game"]
            if player.wants_explanations(game):
                game = self.act("explain", lambda: page.click("#explain"))["game"]
            rating = player.rating()
            game = self.act("rate", lambda: page.click(f'button.rating[data-rating="{rating}"]'))["game"]
        if game["phase"] != "finished":
            page.click(f'button.tile[data-token="{player.guess(game)}"]')     # selects it: the page alone
            game = self.act("guess", lambda: page.click("#guess"))["game"]
        played = {"game_id": gid, "won": game["won"], "score": game["score"], "questions": len(game["rounds"]),
                  "with_explanations": game["with_explanations"]}
        self.act("next_game", lambda: page.click("#next-game"))
        return played

    def follow_return_link(self) -> str | None:
        """Clicks the done page's return button and gives the URL it sent the browser to (the navigation is
        intercepted and answered here); None when the page has none. The page must show the view's code."""
        page, done = self.page, self.state.get("done") or {}
        if done.get("completion_code"):
            shown = page.locator("#completion-code").inner_text().strip()
            if shown != done["completion_code"]:
                raise PilotFailed(f"the done page shows the code {shown!r}, the server sent {done['completion_code']!r}")
        button = page.locator("a#redirect")
        if not button.count():
            return None
        sent: list[str] = []

        def intercept(route) -> None:
            if route.request.is_navigation_request():
                sent.append(route.request.url)
                route.fulfill(status=200, content_type="text/html", body=INTERCEPTED)
            else:
                route.continue_()

        page.route("**/*", intercept)
        button.click()
        self.wait(lambda: sent, "navigation from the return button")
        return sent[0]
