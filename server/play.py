"""What happens when a participant does something: the server side of every Socket.IO event.

Each action loads the participant's state from Redis (under the participant's lock), applies the pure
game rules, has an inference worker answer when a question needs answering (server/rounds.py: the
worker runs the agent and the explainers and grades what is shown against the ground truth), and
commits the new state with its events in one transaction. Only then is
the new view returned for the player. The view is built by `view()` alone, which never includes the
secret before the guess, an explanation's grade, or the ground truth.
"""
from __future__ import annotations

import contextlib
import functools
import json
import secrets
import threading
import time

import numpy as np
from redis.exceptions import LockError

from game import rules
from game.assignment import next_slot, study_slot
from game.checks import PREFER_NOT, grade_attention, grade_colour_screen, grade_comprehension
from game.checks import attention_view, colour_screen_view, comprehension_view
from game.image_sets import ImageSet, choose_image_set
from game.seeding import seeded_rng
from game.settings import RATINGS, GameSettings, settings_named
from game.state import FINISHED, GameState, player_view
from game.study import QUESTIONNAIRE, StudyConfig, explainers_of, fixed_order, for_the_secret, with_explanations

from . import browser
from .agents import AgentHandle, Agents, AgentUnavailable
from .completion import completion_code
from .config import ServerConfig
from .pool import GamePool
from .rounds import RoundError, RoundJob
from .store import Store

# in the order a participant meets them; the checks (game/checks.py) only where the study configures them
STAGES = (CONSENT, INSTRUCTIONS, COMPREHENSION, COLOUR_SCREEN, GAME, ATTENTION_CHECK, QUESTIONNAIRE_STAGE, DONE,
          SCREENED_OUT) = ("consent", "instructions", "comprehension", "colour_screen", "game", "attention_check",
                           "questionnaire", "done", "screened_out")
EXTERNAL_IDS = {"PROLIFIC_PID": "prolific", "workerId": "mturk", "pid": "pid"}
SESSION_IDS = ("SESSION_ID", "assignmentId")     # the platform's id of one participation (Prolific, MTurk)
CROWD_JOINING = "many people are joining this study at this moment; please try again in a few seconds"
NO_COOKIE = ("your browser did not send this study's cookie; please allow cookies for this site and reload the "
             "page from the link you were given")
ANOTHER_BROWSER = ("this participation is already open in another browser; ask the researcher to release it "
                   "if you changed device")
ANOTHER_SESSION = ("this participant id is already taking part under another session; use the link of your own "
                   "session, or ask the researcher to release it")


class PlayError(ValueError):
    """A message refused; the text is for the player."""


class Play:
    def __init__(self, store: Store, pool: GamePool, agents: Agents, config: ServerConfig) -> None:
        self.store, self.pool, self.agents, self.config = store, pool, agents, config
        self._rng = np.random.default_rng()      # real studies (no seed): one unpredictable generator for all
        self._rng_lock = threading.Lock()

    # --- joining ----------------------------------------------------------------------------------

    def join(self, payload: dict, browser_cookie: str | None,
             joined_on_this_connection: tuple[str, str] | None = None) -> tuple[tuple[str, str], dict, str | None]:
        """(study, pid) of the connection, the view, and a message when the join was a refused repeat.

        The first join binds the participation to the browser (its `browser.COOKIE`, given by the game page)
        and to the platform's session id (Prolific SESSION_ID, MTurk assignmentId); a later join from another
        browser or with another session id is refused until the researcher releases the participant
        (POST /admin/release), after which the next join binds again. `joined_on_this_connection`: whom the
        connection joined before (None: nobody); a repeated join of the same participant logs no event."""
        bound_to = browser.key(browser_cookie)
        if bound_to is None:
            raise PlayError(NO_COOKIE)
        study, status = self._study(payload["study"])
        pid, ids = self._participant_id(payload, study)
        binding = {"browser": bound_to, "session": next((ids[k] for k in SESSION_IDS if k in ids), None)}
        with self.store.locked(study.study_id, pid) as held:
            participant = self.store.participant(study.study_id, pid)
            if participant is not None:
                rebound = participant.get("binding") is None   # released by the researcher (or joined unbound)
                if not rebound and participant["binding"]["browser"] != binding["browser"]:
                    raise PlayError(ANOTHER_BROWSER)
                if not rebound and participant["binding"]["session"] != binding["session"]:
                    raise PlayError(ANOTHER_SESSION)
                participant.update(binding=binding, last_seen=time.time())
                # a connection that already joined this participant logs no second rejoin: a page joins once
                # per connection, and a join flood must not grow the study's event log
                logged = joined_on_this_connection == (study.study_id, pid) and not rebound
                self.store.commit(participant=participant,
                                  events=[] if logged else
                                  [self._event("rejoin", participant, **({"rebound": True} if rebound else {}))],
                                  release=(held,))
                message = "You have already taken part in this study. Thank you!" \
                    if participant["stage"] == DONE else None
                return (study.study_id, pid), self.view(study.study_id, pid, participant.get("current_game")), message
            if status != "open":
                raise PlayError("this study is closed")
            # the slot is dealt and its participant stored under one lock: two arrivals never take the same slot;
            # an arm named by the link takes no slot, and needs no lock (a crowd arriving at once waits on it)
            named = payload.get("arm") is not None
            try:
                with (contextlib.nullcontext(None) if named else self.store.lock(f"assign:{study.study_id}")) as assigning:
                    assigned = self._assign(study, status, payload.get("arm"))
                    now = time.time()
                    participant = {"pid": pid, "study": study.study_id, "arm": assigned["arm"],
                                   "order": assigned["order"], "slot": assigned["slot"], "ids": ids, "binding": binding,
                                   "stage": CONSENT, "game_number": 0, "games": [], "joined": now, "last_seen": now,
                                   "finished": None}
                    self.store.commit(participant=participant,
                                      events=[self._event("join", participant, ids=ids, **assigned)],
                                      release=(held,) if named else (assigning, held))
            except LockError as error:
                if "assign:" not in str(error):
                    raise
                raise PlayError(CROWD_JOINING) from error
        return (study.study_id, pid), self.view(study.study_id, pid), None

    def _study(self, study_id: str) -> tuple[StudyConfig, str]:
        found = self.store.study(study_id)
        if found is None:
            raise PlayError(f"there is no study {study_id!r}; check the link you were given")
        study, status = found
        worker = self._worker(study.agent)
        missing = [m for arm in study.arms for m in explainers_of(study, arm) if m in worker.unavailable]
        if missing:
            raise PlayError(f"this study needs the {', '.join(sorted(set(missing)))} explainer, which this server "
                            "could not load; please tell the researcher")
        return study, status

    @staticmethod
    def _participant_id(payload: dict, study: StudyConfig) -> tuple[str, dict]:
        ids = {k: v for k, v in payload.items() if k not in ("study", "arm")}
        for field, source in EXTERNAL_IDS.items():
            if field in ids:
                return f"{source}:{ids[field]}", ids
        if study.choose_arm:   # demos and pilots: an anonymous player gets an id to resume with
            return f"pid:anon-{secrets.token_hex(6)}", ids
        raise PlayError("this link has no participant id (pid, PROLIFIC_PID or workerId); use the link you were given")

    def _assign(self, study: StudyConfig, status: str, wanted: str | None) -> dict:
        """A newcomer's arm and order, and the slot of the study's seeded sequence it came from
        (game/assignment.py: the next slot, or the lowest one whose holders all dropped out). A named arm
        (demos: `choose_arm`) takes no slot and plays the study's fixed order (game/study.py fixed_order).
        The caller holds the study's assignment lock."""
        if wanted is not None:
            if not study.choose_arm:
                raise PlayError("this study assigns arms itself")
            if wanted not in study.arms:
                raise PlayError(f"unknown arm {wanted!r}; this study has {', '.join(study.arms)}")
            return {"arm": wanted, "order": fixed_order(study), "slot": None, "block": None, "refilled_slot": None,
                    "assigned_by": "link"}
        if study.seed is None:       # stored before studies had seeds: Store.save_study draws one, before any slot
            self.store.save_study(study, status)
            study, _ = self.store.study(study.study_id)
        now, dealt, held = time.time(), 0, set()
        for p in self.store.participants(study.study_id):
            if p.get("slot") is None:          # a named arm, or a participant from before slots
                continue
            dealt = max(dealt, p["slot"] + 1)
            # a screened-out participant will play no game: their slot goes to the next arrival at once
            if p["stage"] != SCREENED_OUT and (p["stage"] == DONE or now - p["last_seen"] < self.config.dropout_after_s):
                held.add(p["slot"])
        dealt_slot = study_slot(study, next_slot(dealt, held))
        return {"arm": dealt_slot.arm, "order": dealt_slot.order, "slot": dealt_slot.number, "block": dealt_slot.block,
                "refilled_slot": dealt_slot.number if dealt_slot.number < dealt else None,
                "assigned_by": "randomization"}

    # --- the participant's path -------------------------------------------------------------------

    def consent(self, who: tuple[str, str], payload: dict) -> dict:
        with self.store.locked(*who):
            participant = self._participant(who, CONSENT, "consent")
            if not payload["agree"]:
                raise PlayError("you can only take part after agreeing; close the page if you do not want to")
            participant.update(stage=INSTRUCTIONS, last_seen=time.time())
            self.store.commit(participant=participant, events=[self._event("consent", participant)])
        return self.view(*who)

    def begin(self, who: tuple[str, str], payload: dict) -> dict:
        with self.store.locked(*who):
            participant = self._participant(who, INSTRUCTIONS, "start the games")
            self._after_instructions(participant)
        return self.view(*who)

    def next_game(self, who: tuple[str, str], payload: dict) -> dict:
        with self.store.locked(*who) as held:
            participant, (state, _) = self._participant_and_game(who, GAME, "go on", payload["game_id"])
            if state.phase != FINISHED:
                raise PlayError("finish this game with a guess first")
            study, _ = self._study(participant["study"])
            participant["game_number"] += 1
            if participant["game_number"] < study.games:
                attention = study.parsed_checks.attention
                if attention and attention.due(participant["game_number"], study.games):
                    self._show_check(participant, ATTENTION_CHECK)
                else:
                    self._start_game(participant, release=(held,))
            else:
                participant.update(stage=QUESTIONNAIRE_STAGE, last_seen=time.time(), current_game=None)
                self.store.commit(participant=participant, events=[self._event("games_done", participant)],
                                  release=(held,))
        return self.view(*who, participant.get("current_game"))

    def questionnaire(self, who: tuple[str, str], payload: dict) -> dict:
        with self.store.locked(*who):
            participant = self._participant(who, QUESTIONNAIRE_STAGE, "send the questionnaire")
            answers = payload["answers"]
            demographics = self.store.study(participant["study"])[0].parsed_checks.demographics
            known = {item["key"] for item in QUESTIONNAIRE} | {item.key for item in demographics}
            unknown = sorted(set(answers) - known)
            if unknown:
                raise PlayError(f"unknown questionnaire item(s): {', '.join(unknown)}")
            for item in QUESTIONNAIRE:
                value = answers.get(item["key"])
                if item["type"] == "scale" and value not in item["options"]:
                    raise PlayError(f"please answer: {item['text']}")
            about = self._demographics(demographics, answers)
            answers = {k: v for k, v in answers.items() if k not in about}   # the questionnaire's own, as before
            participant.update(stage=DONE, last_seen=time.time(), finished=time.time())
            earned = self._earned_code(participant)
            # the completion code is shown only from the state written here, i.e. after it is stored
            self.store.commit(participant=participant,
                              events=[self._event("questionnaire", participant, answers=answers),
                                      *([self._event("demographics", participant, answers=about)] if about else []),
                                      self._event("finish", participant, **earned)])
        return self.view(*who)

    # --- participant checks (game/checks.py: the rules; here their stages) ----------------------------

    def _after_instructions(self, participant: dict, events: list[dict] | tuple = ()) -> None:
        """The stage after the instructions and after each check: the comprehension check until it is done,
        then the colour screen, then the first game; `events` (the check's result) are committed with the move."""
        study, _ = self._study(participant["study"])
        checks, done = study.parsed_checks, participant.setdefault("checks", {})
        if checks.comprehension and not done.get("comprehension_done"):
            self._show_check(participant, COMPREHENSION, events)
        elif checks.colour_screen and "colour_screen_passed" not in done:
            self._show_check(participant, COLOUR_SCREEN, events)
        else:
            self._start_game(participant, events)

    def _show_check(self, participant: dict, stage: str, events: list[dict] | tuple = ()) -> None:
        participant.update(stage=stage, current_game=None, last_seen=time.time())
        self.store.commit(participant=participant, events=[*events, self._event("check_shown", participant, check=stage)])

    def comprehension(self, who: tuple[str, str], payload: dict) -> dict:
        with self.store.locked(*who):
            participant = self._participant(who, COMPREHENSION, "answer these questions")
            study, _ = self._study(participant["study"])
            done = participant.setdefault("checks", {})
            try:
                result = grade_comprehension(study.parsed_checks.comprehension, payload["answers"],
                                             done.get("comprehension_failures", 0))
            except ValueError as error:       # unanswered or unknown: not an attempt
                raise PlayError(str(error)) from error
            # the record's results are named as the export's columns and flags (server/export.py _check_result)
            done.update(comprehension_failures=result.failures, comprehension_passed=result.passed,
                        comprehension_failed=result.flagged, comprehension_done=result.then == "continue")
            event = self._event("comprehension", participant, answers=payload["answers"], passed=result.passed,
                                wrong=list(result.wrong), failures=result.failures, flagged=result.flagged,
                                then=result.then)
            if result.then == "continue":
                self._after_instructions(participant, [event])
            elif result.then == "instructions":     # read them again, then answer again
                participant.update(stage=INSTRUCTIONS, last_seen=time.time())
                self.store.commit(participant=participant, events=[event])
            else:
                self._screen_out(participant, "comprehension", [event])
        return self.view(*who)

    def colour_screen(self, who: tuple[str, str], payload: dict) -> dict:
        with self.store.locked(*who):
            participant = self._participant(who, COLOUR_SCREEN, "answer the colour plates")
            study, _ = self._study(participant["study"])
            screen = study.parsed_checks.colour_screen
            try:
                result = grade_colour_screen(screen, payload["answers"])
            except ValueError as error:
                raise PlayError(str(error)) from error
            participant.setdefault("checks", {}).update(colour_screen_passed=result.passed,
                                                        colour_screen_correct=result.correct,
                                                        colour_screen_failed=not result.passed)
            event = self._event("colour_screen", participant, answers=payload["answers"], correct=result.correct,
                                plates=len(screen.plates), min_correct=screen.min_correct, rule=screen.rule,
                                passed=result.passed, then=result.then)
            if result.then == "screen_out":
                self._screen_out(participant, "colour_screen", [event])
            else:
                self._after_instructions(participant, [event])
        return self.view(*who)

    def attention_check(self, who: tuple[str, str], payload: dict) -> dict:
        with self.store.locked(*who):
            participant = self._participant(who, ATTENTION_CHECK, "answer this question")
            study, _ = self._study(participant["study"])
            done = participant.setdefault("checks", {})
            number = done.get("attention_total", 0)
            item = study.parsed_checks.attention.item(number)
            try:
                passed = grade_attention(item, payload["answer"])
            except ValueError as error:
                raise PlayError(str(error)) from error
            done.update(attention_total=number + 1, attention_passed=done.get("attention_passed", 0) + passed)
            done["attention_failed"] = done["attention_passed"] < done["attention_total"]
            event = self._event("attention_check", participant, item=item.key, number=number, answer=payload["answer"],
                                passed=passed, after_games=participant["game_number"])
            self._start_game(participant, [event])
        return self.view(*who)

    def _screen_out(self, participant: dict, check: str, events: list[dict]) -> None:
        """Ends the participation as the study's checks say: the page shows the platform's screened-out
        code and link (checks.screen_out), never the completion code."""
        participant.update(stage=SCREENED_OUT, screened_out=check, last_seen=time.time())
        self.store.commit(participant=participant, events=[*events, self._event("screened_out", participant, check=check)])

    @staticmethod
    def _demographics(items, answers: dict) -> dict:
        """The demographics answers among a questionnaire's: every choice item answered ("Prefer not to say"
        is always one of its options), text items may stay empty."""
        for item in items:
            if item.type == "choice" and answers.get(item.key) not in item.options:
                raise PlayError(f"please answer: {item.text} (or choose “{PREFER_NOT}”)")
        return {item.key: answers.get(item.key, "") for item in items}

    @staticmethod
    def _checks_view(study: StudyConfig, participant: dict, view: dict) -> None:
        """The checks' part of the view, rebuilt from the participant record alone (so a reload resumes):
        the current check's questions or plates (never their right answers), the comprehension attempts
        for the instructions, the demographics items, the screened-out code."""
        checks, done, stage = study.parsed_checks, participant.get("checks", {}), participant["stage"]
        view["demographics"] = [item.public() for item in checks.demographics]
        view["check"] = None
        view["screened_out"] = None
        if checks.comprehension:
            view["instructions"]["comprehension"] = {"failures": done.get("comprehension_failures", 0)}
        if stage == COMPREHENSION:
            view["check"] = comprehension_view(checks.comprehension, done.get("comprehension_failures", 0))
        elif stage == COLOUR_SCREEN:
            view["check"] = colour_screen_view(checks.colour_screen, study.study_id)
        elif stage == ATTENTION_CHECK:
            view["check"] = attention_view(checks.attention, done.get("attention_total", 0))
        elif stage == SCREENED_OUT:
            view["screened_out"] = {"completion_code": checks.screen_out.code, "redirect_url": checks.screen_out.url}

    # --- a game -----------------------------------------------------------------------------------

    def _start_game(self, participant: dict, events: list[dict] | tuple = (), release: tuple = ()) -> None:
        """Starts the participant's next game; `events` (a check's result) are committed with its start, and
        the locks in `release` (Store.lock) released by the same transaction."""
        study, _ = self._study(participant["study"])
        settings = self._settings(study)
        number = participant["game_number"]
        chosen, names = self._draw_game(study, participant["pid"], number, settings)
        game_id, tokens = names[0], names[1:]
        order = participant.get("order") or "abab"      # a participant from before orders played abab
        shown = with_explanations(study, participant["arm"], number, order)
        state, event = rules.new_game(game_id, participant["pid"], settings, list(chosen.images), tokens,
                                      chosen.secret, chosen.difficulty, shown)
        record = {"study": study.study_id, "pid": participant["pid"], "arm": participant["arm"], "game_number": number,
                  "session": number // study.games_per_session, "modes": list(explainers_of(study, participant["arm"])),
                  "nle": study.nle, "agent": study.agent, "started": time.time()}
        # the workers look at the new images ahead of the first question; nobody waits for it here
        self.agents.queue.prepare(RoundJob("prepare", list(chosen.images), agent=self._worker(study.agent).name,
                                           reply=False))
        participant.update(stage=GAME, current_game=game_id, last_seen=time.time())
        participant["games"].append(game_id)
        event.update(world_images=[self.pool.world_index(i) for i in chosen.images], arm=participant["arm"],
                     game_number=number, session=record["session"], modes=record["modes"],
                     order=participant.get("order"))
        self.store.commit(participant=participant, game=(state, record),
                          events=[*events, self._event_for(state, record, event)], release=release)

    def ask(self, who: tuple[str, str], payload: dict) -> dict:
        with self.store.locked(*who) as held:
            participant = self._participant(who, GAME, "ask")
            state, record = self._game(participant, payload["game_id"])
            question = payload["question"]
            rules.ask(state, question, "")          # refuse out-of-turn or bad questions before any work
            text = question.strip()
            controlled_explanations = state.with_explanations and not state.settings.explanations_at_will
            started = time.perf_counter()
            result, shown, graded = self._answer(state, record, text,
                                                 tuple(record["modes"]) if controlled_explanations else (), ())
            state, event = rules.ask(state, question, result["answer"])
            event.update(round=len(state.rounds) - 1, **graded, explanations=shown["log"],
                         inference_ms=result["inference_ms"], batch_rounds=result["batch_rounds"],
                         ask_to_answer_ms=(time.perf_counter() - started) * 1000)
            participant["last_seen"] = time.time()
            self.store.commit(participant=participant, game=(state, record), new_round=shown["view"],
                              events=[self._event_for(state, record, event)], release=(held,))
        return self.view(*who)

    def explain(self, who: tuple[str, str], payload: dict) -> dict:
        with self.store.locked(*who) as held:
            participant = self._participant(who, GAME, "get explanations")
            state, record = self._game(participant, payload["game_id"])
            rules.buy_explanations(state)          # refuses before any work
            result, shown, _ = self._answer(state, record, state.rounds[-1].question, state.settings.for_every_image,
                                            for_the_secret(state.settings, record["nle"]), slow=True)
            state, event = rules.buy_explanations(state)
            event.update(explanations=shown["log"], inference_ms=result["inference_ms"])
            participant["last_seen"] = time.time()
            self.store.commit(participant=participant, game=(state, record),
                              set_round=(len(state.rounds) - 1, shown["view"]),
                              events=[self._event_for(state, record, event)], release=(held,))
        return self.view(*who)

    def rate(self, who: tuple[str, str], payload: dict) -> dict:
        with self.store.locked(*who) as held:
            participant, (state, record) = self._participant_and_game(who, GAME, "rate", payload["game_id"])
            state, event = rules.rate(state, payload["rating"])
            event.update(with_explanations=state.with_explanations, question=state.rounds[-1].question)
            participant["last_seen"] = time.time()
            self.store.commit(participant=participant, game=(state, record),
                              events=[self._event_for(state, record, event)], release=(held,))
        return self.view(*who, state.game_id)

    def guess(self, who: tuple[str, str], payload: dict) -> dict:
        with self.store.locked(*who) as held:
            participant, (state, record) = self._participant_and_game(who, GAME, "guess", payload["game_id"])
            if payload["image"] not in state.tokens:
                raise PlayError("guess one of this game's images")
            state, event = rules.guess(state, state.tokens.index(payload["image"]))
            record["finished"] = time.time()
            event.update(secret_image=self.pool.world_index(state.images[state.secret]),
                         guess_image=self.pool.world_index(state.images[state.guess]),
                         seconds=record["finished"] - record["started"])
            arm, block = record["arm"], "with" if state.with_explanations else "without"
            stats = {f"{arm}:games": 1, f"{arm}:wins": int(state.won), f"{arm}:{block}:games": 1,
                     f"{arm}:{block}:wins": int(state.won)}
            participant["last_seen"] = time.time()
            self.store.commit(participant=participant, game=(state, record), stats=stats,
                              events=[self._event_for(state, record, event)], release=(held,))
        return self.view(*who, state.game_id)

    def _answer(self, state: GameState, record: dict, question: str, for_every: tuple[str, ...],
                for_secret: tuple[str, ...], slow: bool = False) -> tuple[dict, dict, dict]:
        """The round, answered by an inference worker (server/rounds.py; images by pool position): its
        result, the explanations to show (player-safe) and to log (with grades, no masks), and the parsed
        question with the answer's grade. Plain questions go to the fast stream, bought explanations to
        the slow one."""
        job = RoundJob("round", list(state.images), question, state.secret, list(state.tokens), list(for_every),
                       list(for_secret), seed=len(state.rounds), agent=self._worker(record.get("agent", "")).name)
        try:
            result = self.agents.queue.submit(job, slow=slow)
        except RoundError as error:
            raise PlayError(str(error)) from error
        return result, result["shown"], result["graded"]

    # --- views ------------------------------------------------------------------------------------

    def view(self, study_id: str, pid: str, game_id: str | None = None) -> dict:
        """The participant's whole view, as stored now. game_id: the game they are expected to be in, read with them
        in one round trip (when they are in another, that one is read after)."""
        participant, (study, _), game = self.store.participant_and_study(study_id, pid, game_id)
        modes = explainers_of(study, participant["arm"])
        view = {"stage": participant["stage"],
                "participant": {"pid": pid, "study": study_id, "kind": study.kind, "arm": participant["arm"],
                                "game_number": participant["game_number"], "games_total": study.games,
                                "session": participant["game_number"] // study.games_per_session,
                                "sessions": study.sessions},
                "ratings": list(RATINGS),
                "instructions": {"setting": self._setting_view(study), "modes": list(modes)},
                "game": None, "questionnaire": QUESTIONNAIRE, "done": None}
        if participant["stage"] == GAME and participant.get("current_game"):
            current = participant["current_game"]
            view["game"] = self.game_view(current, game if current == game_id else None)
        if participant["stage"] == DONE:
            view["done"] = {"completion_code": participant.get("completion_code") or study.completion_code,
                            "redirect_url": study.redirect_url}
        self._checks_view(study, participant, view)
        return view

    def game_view(self, game_id: str, found: tuple[GameState, dict, dict | None] | None = None) -> dict:
        """found: the game's `Store.game_with_latest_round`, when the caller read it already."""
        state, record, latest = found or self.store.game_with_latest_round(game_id)
        view = player_view(state)
        view["image_urls"] = {t: f"/image/{game_id}/{t}.png" for t in state.tokens}
        view["modes"] = record["modes"]
        if view["rounds"]:    # only the latest round's explanations: the page keeps or fetches (`history`) earlier ones
            view["rounds"][-1]["explanations"] = latest
        return view

    def history(self, who: tuple[str, str], payload: dict) -> dict:
        """An earlier round's explanations as they were shown (the state carries only the latest round's):
        {"game_id", "round", "explanations"} for any round of one of the participant's own games."""
        game_id, number = payload["game_id"], payload["round"]
        participant, found = self.store.participant_and_game(*who, game_id)
        if participant is None:
            raise PlayError("join the study first")
        found = found if game_id in participant.get("games", []) else None
        if found is None:
            raise PlayError("that is not one of your games")
        if not 0 <= number < len(found[0].rounds):
            raise PlayError(f"this game has no question {number + 1}")
        return {"game_id": game_id, "round": number, "explanations": self.store.round_explanation(game_id, number)}

    def image_path(self, game_id: str, token: str):
        found = self.store.game(game_id)
        if found is None or token not in found[0].tokens:
            return None
        state, _ = found
        return self.pool.image_path(state.images[state.tokens.index(token)])

    # --- helpers ----------------------------------------------------------------------------------

    def _draw_game(self, study: StudyConfig, pid: str, number: int,
                   settings: GameSettings) -> tuple[ImageSet, list[str]]:
        """Game `number` of a participant: its image set and its names (the game id, then one token per image).
        Real studies (no seed): the set from the server's one generator, the names unguessable. A seeded
        server (tests, simulations) draws both from the generator of (seed, study, participant, game number),
        so a participant gets the same games whatever the order in which participants' games start."""
        if self.config.seed is None:
            with self._rng_lock:
                chosen = choose_image_set(self.pool.embeddings, settings.images, settings.difficulty, self._rng)
            return chosen, [secrets.token_hex(8) for _ in range(settings.images + 1)]
        rng = seeded_rng(self.config.seed, "game", study.study_id, pid, number)
        chosen = choose_image_set(self.pool.embeddings, settings.images, settings.difficulty, rng)
        return chosen, [rng.bytes(8).hex() for _ in range(settings.images + 1)]

    def still_bound(self, who: tuple[str, str], browser_cookie: str | None) -> bool:
        """Whether the participation is still this browser's: after a release, the next join from another
        browser takes it over, and the old browser's open tab may act no more."""
        participant = self.store.participant(*who)
        binding = participant and participant.get("binding")
        return not binding or binding["browser"] == browser.key(browser_cookie)

    def _participant(self, who: tuple[str, str], stage: str, doing: str) -> dict:
        participant = self.store.participant(*who)
        if participant is None:
            raise PlayError("join the study first")
        if participant["stage"] != stage:
            raise PlayError(f"cannot {doing} now")
        return participant

    def _participant_and_game(self, who: tuple[str, str], stage: str, doing: str,
                              game_id: str) -> tuple[dict, tuple[GameState, dict]]:
        """`_participant` then `_game`, read in one round trip: the same checks in the same order."""
        participant, found = self.store.participant_and_game(*who, game_id)
        if participant is None:
            raise PlayError("join the study first")
        if participant["stage"] != stage:
            raise PlayError(f"cannot {doing} now")
        if game_id != participant.get("current_game"):
            raise PlayError("that is not your current game")
        if found is None:
            raise PlayError("unknown game")
        return participant, found

    def _game(self, participant: dict, game_id: str) -> tuple[GameState, dict]:
        if game_id != participant.get("current_game"):
            raise PlayError("that is not your current game")
        found = self.store.game(game_id)
        if found is None:
            raise PlayError("unknown game")
        return found

    def _worker(self, agent: str) -> AgentHandle:
        """A study's agent ("" = the server's), as the rounds name it."""
        try:
            return self.agents.worker(agent)
        except AgentUnavailable as error:
            raise PlayError("this study's agent could not be loaded on this server; please tell the researcher") \
                from error

    def _earned_code(self, participant: dict) -> dict:
        """A finishing participant's own completion code, stored with them (the page shows it from there) and
        returned for the finish event (the export's record), when their study gives per-participant codes."""
        study, _ = self.store.study(participant["study"])
        if study.completion_codes != "per_participant":
            return {}
        participant["completion_code"] = completion_code(self.config.secret_key, study.study_id, participant["pid"])
        return {"completion_code": participant["completion_code"]}

    def _settings(self, study: StudyConfig) -> GameSettings:
        return settings_named(study.kind, **study.settings)

    @staticmethod
    def _setting_view(study: StudyConfig) -> dict:
        """The study's game settings as the view shows them (`_settings(study).to_dict()`), made once per study
        settings: every message's view shows them."""
        return dict(_setting_view(study.kind, json.dumps(study.settings, sort_keys=True)))

    @staticmethod
    def _event(kind: str, participant: dict, **payload) -> dict:
        return {"type": kind, "time": time.time(), "study": participant["study"], "participant": participant["pid"],
                "game": participant.get("current_game") or "", **payload}

    @staticmethod
    def _event_for(state: GameState, record: dict, event: dict) -> dict:
        return {**event, "time": time.time(), "study": record["study"], "participant": record["pid"],
                "game": state.game_id, "arm": record["arm"], "game_number": record["game_number"]}


@functools.lru_cache(maxsize=64)
def _setting_view(kind: str, overrides: str) -> dict:
    """Play._setting_view, by the settings' kind and JSON overrides (a study's settings are JSON data)."""
    return settings_named(kind, **json.loads(overrides)).to_dict()
