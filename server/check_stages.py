"""The participant checks' stages (game/checks.py: the rules; here their stages): the comprehension check
and the colour screen after the instructions, the attention check between games, the demographics with
the questionnaire; a failed check may screen the participant out. Each result is named in the record as
the export's columns and flags name it (game/export.py _check_result), and the view of a check is rebuilt
from the record alone, so a reload resumes.
"""
from __future__ import annotations

import time

from game.checks import PREFER_NOT, grade_attention, grade_colour_screen, grade_comprehension
from game.checks import attention_view, colour_screen_view, comprehension_view
from game.study import StudyConfig

from .game_stage import GameStage
from .participation import ATTENTION_CHECK, COLOUR_SCREEN, COMPREHENSION, INSTRUCTIONS, SCREENED_OUT, PlayError


class CheckStages(GameStage):
    """The checks lead into the games (a passed check starts the next game), so they build on GameStage."""

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
            # the record's results are named as the export's columns and flags (game/export.py _check_result)
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
