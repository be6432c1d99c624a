"""What every stage of a participant's path shares (server/play.py puts the stages together): the
participant's record and game as stored, read under the checks every message passes, the study and the
agent its rounds go to, and the events a change appends. The stages: server/game_stage.py (a game),
server/check_stages.py (the participant checks), server/play.py (joining, the path, the views).
"""
from __future__ import annotations

import threading
import time

import numpy as np

from game.pool import GamePool
from game.settings import GameSettings, settings_named
from game.state import GameState
from game.study import StudyConfig, explainers_of

from .admission import Admission
from .agents import AgentHandle, Agents, AgentUnavailable
from .config import ServerConfig
from .store import Store

# in the order a participant meets them; the checks (game/checks.py) only where the study configures them
STAGES = (CONSENT, INSTRUCTIONS, COMPREHENSION, COLOUR_SCREEN, GAME, ATTENTION_CHECK, QUESTIONNAIRE_STAGE, DONE,
          SCREENED_OUT, DECLINED) = ("consent", "instructions", "comprehension", "colour_screen", "game",
                                     "attention_check", "questionnaire", "done", "screened_out", "declined")
OVER = (DONE, SCREENED_OUT, DECLINED)      # a participation that ended: its slot is nobody's to wait for


class PlayError(ValueError):
    """A message refused; the text is for the player."""


class Participation:
    """The store, the pool, the agents and the config every stage works with, and the reads and events they
    share; `Play` (server/play.py) is the whole path built on it."""

    def __init__(self, store: Store, pool: GamePool, agents: Agents, config: ServerConfig) -> None:
        self.store, self.pool, self.agents, self.config = store, pool, agents, config
        self.admission = Admission(store.redis, agents.queue.published, config.admission)   # who may join when busy
        self._rng = np.random.default_rng()      # real studies (no seed): one unpredictable generator for all
        self._rng_lock = threading.Lock()

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

    def _participant(self, who: tuple[str, str], stage: str, doing: str) -> dict:
        participant = self.store.participant(*who)
        if participant is None:
            raise PlayError("join the study first")
        if participant["stage"] != stage:
            raise PlayError(f"cannot {doing} now")
        return participant

    def _participant_and_game(self, who: tuple[str, str], stage: str, doing: str,
                              game_id: str) -> tuple[dict, tuple[GameState, dict]]:
        """The participant (in `stage`, else refused: "cannot {doing} now") and their current game, read in one
        round trip."""
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

    def _worker(self, agent: str) -> AgentHandle:
        """A study's agent ("" = the server's), as the rounds name it."""
        try:
            return self.agents.worker(agent)
        except AgentUnavailable as error:
            raise PlayError("this study's agent could not be loaded on this server; please tell the researcher") \
                from error

    def _settings(self, study: StudyConfig) -> GameSettings:
        return settings_named(study.kind, **study.settings)

    @staticmethod
    def _event(kind: str, participant: dict, **payload) -> dict:
        return {"type": kind, "time": time.time(), "study": participant["study"], "participant": participant["pid"],
                "game": participant.get("current_game") or "", **payload}

    @staticmethod
    def _event_for(state: GameState, record: dict, event: dict) -> dict:
        return {**event, "time": time.time(), "study": record["study"], "participant": record["pid"],
                "game": state.game_id, "arm": record["arm"], "game_number": record["game_number"]}
