"""What happens when a participant does something: the server side of every Socket.IO event.

Each action loads the participant's state from Redis (under the participant's lock), applies the pure
game rules, has an inference worker answer when a question needs answering (server/rounds.py: the
worker runs the agent and the explainers and grades what is shown against the ground truth), and
commits the new state with its events in one transaction. Only then is
the new view returned for the player. The view is built by `view()` alone, which never includes the
secret before the guess, an explanation's grade, or the ground truth.

Here: joining, the path from consent to the questionnaire, and the view. A game's stage is in
server/game_stage.py, the participant checks' in server/check_stages.py, what they share (the records, the
stages' names, PlayError) in server/participation.py; `Play` is all of them.
"""
from __future__ import annotations

import functools
import json
import time

from game.completion_link import return_link
from game.quality import platform_id
from game.settings import RATINGS, settings_named
from game.state import FINISHED
from game.consent_form import questionnaire_problem
from game.study import PILOT_SLOTS, StudyConfig, is_pilot, explainers_of, fixed_order, study_slot

from . import browser
from .check_stages import CheckStages
from .completion import completion_code
from .participation import (ATTENTION_CHECK, CONSENT, DECLINED, DONE, GAME, INSTRUCTIONS, OVER, QUESTIONNAIRE_STAGE,
                            PlayError)
from .release import claim_platform_id, consented_with, note_bound_elsewhere
from .slots import deal_slot

EXTERNAL_IDS = {"PROLIFIC_PID": "prolific", "workerId": "mturk", "pid": "pid"}
SESSION_IDS = ("SESSION_ID", "assignmentId")     # the platform's id of one participation (Prolific, MTurk)
MTURK_PREVIEW_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"   # MTurk's assignmentId while a worker only previews the HIT
MTURK_PREVIEW = "this is MTurk's preview of the HIT; accept the HIT to take part, and the study opens here"
NO_COOKIE = ("your browser did not send this study's cookie; please allow cookies for this site and reload the "
             "page from the link you were given")
ANOTHER_BROWSER = ("this participation is already open in another browser; ask the researcher to release it "
                   "if you changed device")
ANOTHER_SESSION = ("this participant id is already taking part under another session; use the link of your own "
                   "session, or ask the researcher to release it")
NOT_THE_PROLIFIC_LINK = ("this link is not this study's link on Prolific (it needs the study's STUDY_ID and your "
                         "SESSION_ID); please open the study from Prolific")
PARTICIPATION_OVER = "this participation is already finished: you have taken part in this study. Thank you!"
TAKEN_PART = ("you have already taken part in this study under another session, and each person takes part once. "
              "Thank you! If this is a mistake, please contact the researcher")


class Play(CheckStages):
    """A participant's whole path: joining, consent, instructions, the checks (CheckStages), the games
    (GameStage), the questionnaire; and their view. Each public method is the handler of the Socket.IO
    event of its name (server/events.py)."""

    # --- joining ----------------------------------------------------------------------------------

    def join(self, payload: dict, browser_cookie: str | None,
             joined_on_this_connection: tuple[str, str] | None = None) -> tuple[tuple[str, str], dict, str | None]:
        """(study, pid) of the connection, the view, and a message when the join was a refused repeat.

        The first join binds the participation to the browser (its `browser.COOKIE`, given by the game page)
        and to the platform's session id (Prolific SESSION_ID, MTurk assignmentId); a later join from another
        browser or with another session id is refused until the researcher releases the participant
        (POST /admin/release), after which the next join binds again. A platform id (PROLIFIC_PID, workerId) that
        consented in one participation of the study starts no other (another session) until that one is
        released. `joined_on_this_connection`: whom the connection joined before (None: nobody); a repeated join
        of the same participant logs no event."""
        if payload.get("assignmentId") == MTURK_PREVIEW_ID:
            raise PlayError(MTURK_PREVIEW)
        bound_to = self.browsers.key(browser_cookie)
        if bound_to is None:
            raise PlayError(NO_COOKIE)
        study, status = self._study(payload["study"])
        pid, ids = self._participant_id(payload, study, bound_to)
        binding = {"browser": bound_to, "session": next((ids[k] for k in SESSION_IDS if k in ids), None)}
        seen_as = browser.in_study(bound_to, study.study_id)    # the event log's name of the browser
        with self.store.locked(study.study_id, pid) as held:
            participant = self.store.participant(study.study_id, pid)
            if participant is None or participant["stage"] == CONSENT:   # not yet in: not if in another session
                self._not_taken_elsewhere(study.study_id, pid, consented_with(self.store, study.study_id,
                                                                              platform_id(pid)))
            if participant is not None:
                bound = participant.get("binding")
                rebound = bound is None   # released by the researcher (or joined unbound)
                refused = (None if rebound else ANOTHER_BROWSER if bound["browser"] != binding["browser"]
                           else ANOTHER_SESSION if bound["session"] != binding["session"] else None)
                if refused:
                    if participant["stage"] not in OVER:   # the console offers its release
                        note_bound_elsewhere(self.store, study.study_id, pid)
                    # a finished participation is over wherever it is opened: say so, not "open in another browser"
                    raise PlayError(PARTICIPATION_OVER if participant["stage"] in OVER else refused)
                participant.update(binding=binding, last_seen=time.time())
                # a connection that already joined this participant logs no second rejoin: a page joins once
                # per connection, and a join flood must not grow the study's event log
                logged = joined_on_this_connection == (study.study_id, pid) and not rebound
                self.store.commit(participant=participant,
                                  events=[] if logged else
                                  [self._event("rejoin", participant,
                                               **({"rebound": True, "browser": seen_as} if rebound else {}))],
                                  release=(held,))
                message = "You have already taken part in this study. Thank you!" \
                    if participant["stage"] == DONE else None
                return (study.study_id, pid), self.view(study.study_id, pid, participant.get("current_game")), message
            if status != "open":
                raise PlayError("this study is closed")
            self.admission.admit(study.study_id, pid)    # ServerFull when the workers have no room for one more
            # the slot is dealt in one atomic step (server/slots.py): two arrivals never take the same one, and a
            # crowd arriving at once is dealt in arrival order; an arm named by the link takes no slot
            assigned = self._assign(study, status, payload.get("arm"), pid)
            now = time.time()
            participant = {"pid": pid, "study": study.study_id, "arm": assigned["arm"], "order": assigned["order"],
                           "slot": assigned["slot"], "ids": ids, "binding": binding, "stage": CONSENT,
                           "game_number": 0, "games": [], "joined": now, "last_seen": now, "finished": None}
            self.store.commit(participant=participant, release=(held,),
                              events=[self._event("join", participant, ids=ids, browser=seen_as, **assigned)])
        return (study.study_id, pid), self.view(study.study_id, pid), None

    def _not_taken_elsewhere(self, study_id: str, pid: str, holder: str | None) -> None:
        """Refuses `pid` when another participation of the study, `holder`, consented with its platform id: "taken
        part" when that one is over (finished, screened out), else "under another session", and the console then
        offers the holder's release (server/release.py), after which `pid` may begin."""
        if holder is None or holder == pid:
            return
        other = self.store.participant(study_id, holder)
        if other is not None and other["stage"] not in OVER:
            note_bound_elsewhere(self.store, study_id, holder)
            raise PlayError(ANOTHER_SESSION)
        raise PlayError(TAKEN_PART)

    @functools.cached_property
    def browsers(self) -> browser.Signer:
        """Signs the browser cookies the pages give and checks those sent back (server/browser.py)."""
        return browser.Signer.kept_in(self.store.redis)

    @staticmethod
    def _participant_id(payload: dict, study: StudyConfig, browser_key: str) -> tuple[str, dict]:
        ids = {k: v for k, v in payload.items() if k not in ("study", "arm")}
        if study.prolific_study_id and (ids.get("STUDY_ID") != study.prolific_study_id or "SESSION_ID" not in ids
                                        or "PROLIFIC_PID" not in ids):
            raise PlayError(NOT_THE_PROLIFIC_LINK)
        for field, source in EXTERNAL_IDS.items():
            if field in ids:
                # keyed by the platform's session too (Prolific SESSION_ID, MTurk assignmentId), which the platform
                # gives the participant alone: someone who knows another's id, but not their session, joins as a
                # participation of their own and never locks the owner out (docs/real-study.md)
                session = next((ids[k] for k in SESSION_IDS if k in ids), None)
                return f"{source}:{ids[field]}" + (f":{session}" if session else ""), ids
        if study.choose_arm:   # demos and pilots: an anonymous player gets the id of their browser (its tabs share it)
            return f"pid:{browser.anonymous_id(browser_key, study.study_id, payload.get('arm'))}", ids
        raise PlayError("this link has no participant id (pid, PROLIFIC_PID or workerId); use the link you were given")

    def _assign(self, study: StudyConfig, status: str, wanted: str | None, pid: str) -> dict:
        """A newcomer's arm and order, and the slot of the study's seeded sequence it came from
        (game/assignment.py: the next slot, or the lowest one whose holders all dropped out). A named arm
        (demos: `choose_arm`) takes no slot and plays the study's fixed order (game/study.py fixed_order).
        The slot is dealt in one atomic Redis step (server/slots.py)."""
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
        if is_pilot(pid):        # a pilot's arm: the next of the seeded sequence dealt to pilots; no slot of it
            pilot = study_slot(study, self.store.redis.incr(PILOT_SLOTS.format(study.study_id)) - 1)
            return {"arm": pilot.arm, "order": pilot.order, "slot": None, "block": None, "refilled_slot": None,
                    "assigned_by": "pilot"}
        # the lowest slot whose holders all dropped out (a screened-out participant plays no game: theirs goes to
        # the next arrival at once), else the next new one: game/assignment.py next_slot, as one Redis step
        now = time.time()
        slot, dealt = deal_slot(self.store, study.study_id, pid, now - self.config.dropout_after_s, now)
        dealt_slot = study_slot(study, slot)
        return {"arm": dealt_slot.arm, "order": dealt_slot.order, "slot": dealt_slot.number, "block": dealt_slot.block,
                "refilled_slot": dealt_slot.number if dealt_slot.number < dealt else None,
                "assigned_by": "randomization"}

    # --- the participant's path -------------------------------------------------------------------

    def consent(self, who: tuple[str, str], payload: dict) -> dict:
        with self.store.locked(*who):
            participant = self._participant(who, CONSENT, "consent")
            form = self.store.study(participant["study"])[0].parsed_consent
            if not payload["agree"]:      # declined: the participation ends, its slot goes to the next arrival
                participant.update(stage=DECLINED, last_seen=time.time())
                self.store.commit(participant=participant,
                                  events=[self._event("decline", participant, consent_sha256=form.sha256)])
                return self.view(*who)
            # the platform id is this participation's from here on: another session of it joins no more (join)
            study_id, pid = who
            self._not_taken_elsewhere(study_id, pid, claim_platform_id(self.store, study_id, platform_id(pid), pid))
            participant.update(stage=INSTRUCTIONS, last_seen=time.time())
            self.store.commit(participant=participant, events=[self._event("consent", participant,
                                                                           consent_sha256=form.sha256)])
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
            study = self.store.study(participant["study"])[0]
            about = self._demographics(study.parsed_checks.demographics, payload["answers"])
            answers = {k: v for k, v in payload["answers"].items() if k not in about}   # the questionnaire's own
            problem = questionnaire_problem(study.parsed_questionnaire, answers)
            if problem:
                raise PlayError(problem)
            participant.update(stage=DONE, last_seen=time.time(), finished=time.time())
            earned = self._earned_code(participant)
            # the completion code is shown only from the state written here, i.e. after it is stored
            self.store.commit(participant=participant,
                              events=[self._event("questionnaire", participant, answers=answers),
                                      *([self._event("demographics", participant, answers=about)] if about else []),
                                      self._event("finish", participant, **earned)])
        return self.view(*who)

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
                "instructions": {"setting": self._setting_view(study), "modes": list(modes), "offer": study.offer},
                "game": None, "questionnaire": [item.public() for item in study.parsed_questionnaire], "done": None,
                "consent": study.parsed_consent.public() if participant["stage"] in (CONSENT, DECLINED) else None}
        if participant["stage"] == GAME and participant.get("current_game"):
            current = participant["current_game"]
            view["game"] = self.game_view(current, game if current == game_id else None)
        if participant["stage"] == DONE:
            view["done"] = {"completion_code": participant.get("completion_code") or study.completion_code,
                            "redirect_url": return_link(study.redirect_url, participant.get("completion_code"))}
        self._checks_view(study, participant, view)
        return view

    def still_bound(self, who: tuple[str, str], browser_cookie: str | None) -> bool:
        """Whether the participation is still this browser's: after a release, the next join from another
        browser takes it over, and the old browser's open tab may act no more."""
        participant = self.store.participant(*who)
        binding = participant and participant.get("binding")
        return not binding or binding["browser"] == self.browsers.key(browser_cookie)

    def _earned_code(self, participant: dict) -> dict:
        """A finishing participant's own completion code, stored with them (the page shows it from there) and
        returned for the finish event (the export's record), when their study gives per-participant codes."""
        study, _ = self.store.study(participant["study"])
        if study.completion_codes != "per_participant":
            return {}
        participant["completion_code"] = completion_code(self.config.secret_key, study.study_id, participant["pid"])
        return {"completion_code": participant["completion_code"]}

    @staticmethod
    def _setting_view(study: StudyConfig) -> dict:
        """The study's game settings as the view shows them (`_settings(study).to_dict()`), made once per study
        settings: every message's view shows them."""
        return dict(_setting_view(study.kind, json.dumps(study.settings, sort_keys=True)))


@functools.lru_cache(maxsize=64)
def _setting_view(kind: str, overrides: str) -> dict:
    """Play._setting_view, by the settings' kind and JSON overrides (a study's settings are JSON data)."""
    return settings_named(kind, **json.loads(overrides)).to_dict()
