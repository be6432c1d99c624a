"""Study design as plain data: arms, balanced assignment, and the block schedule of controlled studies.

Controlled studies (RESEARCH.md 1): each participant gets one arm for good; sessions of 5 games
alternate without/with explanations, starting without, at least 4 sessions. Block 1 is the group
baseline; the "none" arm (the paper's WithoutExpl control group) never sees explanations. At-will
studies have one arm: the player buys explanations when they like.

A study is a JSON file:
    {"study_id": "pilot-1", "kind": "controlled", "arms": ["none", "attention", "relqa", "both"],
     "sessions": 4, "games_per_session": 5, "completion_code": "C0DE", "redirect_url": "https://..."}
A sanity check adds sham arms ("attention-shuffled", "nle-other", or combined: "attention+nle-other").
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from .settings import GameSettings, settings_named

# Sham modes, for sanity checks (explainers/sham.py): each image shows a real explainer's output for another
# image of the same round, drawn and labelled like the real one. A study with a sham arm must find it
# harmful, or the instrument is blind; the analysis keeps sham arms out of Table 1's "overall" rows.
SHAM_MODES = ("attention-shuffled", "nle-other")
MODES = ("attention", "relqa", "objscene", "nle", "introspect") + SHAM_MODES   # modes an arm can combine
NAMED_ARMS = {"none": (), "both": ("attention", "relqa")}          # the paper's names; others are "a+b"
KINDS = ("controlled", "at-will")


def arm_modes(arm: str) -> tuple[str, ...]:
    """The explainers an arm shows: "none", "both", a mode, or modes joined by "+" ("attention+nle")."""
    if arm in NAMED_ARMS:
        return NAMED_ARMS[arm]
    modes = tuple(arm.split("+"))
    unknown = [m for m in modes if m not in MODES]
    if unknown or not arm:
        raise ValueError(f"unknown arm {arm!r}: use none, both, or modes from {', '.join(MODES)} joined by '+'")
    return modes


def is_sham(arm: str) -> bool:
    """Whether an arm (or a mode) shows a sham explanation: such an arm is a sanity check, not a treatment."""
    return any(mode in SHAM_MODES for mode in arm_modes(arm))


@dataclass(frozen=True)
class StudyConfig:
    study_id: str
    kind: str = "controlled"
    arms: tuple[str, ...] = ("none", "attention", "relqa", "both")
    sessions: int = 4
    games_per_session: int = 5
    completion_code: str = ""
    redirect_url: str = ""
    nle: bool = False            # at-will: offer the NLE with the other explanations
    choose_arm: bool = False     # demos, pilots and bots may name their arm in the link; never in real studies
    settings: dict = field(default_factory=dict)   # overrides of the kind's GameSettings (any number in it)
    title: str = ""              # shown to participants
    agent: str = ""              # the agent players question: a shipped name or a checkpoint directory on the
                                 # server ("" = the server's agent); paid studies can name a private one

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", self.study_id):
            raise ValueError("study_id: 1-64 letters, digits, '.', '_' or '-'")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be {' or '.join(KINDS)}")
        if not self.arms:
            raise ValueError("a study needs at least one arm")
        for arm in self.arms:
            arm_modes(arm)
        if self.kind == "controlled" and self.sessions < 4:
            raise ValueError("controlled studies have at least 4 sessions")
        if self.sessions < 1 or self.games_per_session < 1:
            raise ValueError("sessions and games_per_session must be positive")
        if not isinstance(self.agent, str) or len(self.agent) > 500 or any(c in self.agent for c in "\n\r\0"):
            raise ValueError("agent: a shipped agent name or a checkpoint directory on the server (\"\" = the server's)")
        if not isinstance(self.settings, dict):
            raise ValueError("settings must be an object of GameSettings overrides")
        try:
            settings_named(self.kind, **self.settings)
        except TypeError as error:
            raise ValueError(f"settings: {error}") from error

    @property
    def games(self) -> int:
        return self.sessions * self.games_per_session

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "StudyConfig":
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown study fields: {', '.join(unknown)}")
        data = dict(data)
        if "arms" in data:
            data["arms"] = tuple(data["arms"])
        return cls(**data)


# The end-of-session questionnaire: short, the same for every study so answers compare across arms.
AGREEMENT = ("Strongly disagree", "Disagree", "Neutral", "Agree", "Strongly agree")
QUESTIONNAIRE = [
    {"key": "trust", "text": "I could tell when the agent's answers were right.", "type": "scale", "options": AGREEMENT},
    {"key": "explanations_helped", "text": "The explanations helped me find the secret image.", "type": "scale",
     "options": AGREEMENT},
    {"key": "understood", "text": "I understood how the agent arrived at its answers.", "type": "scale",
     "options": AGREEMENT},
    {"key": "strategy", "text": "Which questions or explanations helped you most?", "type": "text"},
    {"key": "comments", "text": "Anything else you want to tell us? (optional)", "type": "text"},
]


def load_study(path: str | Path) -> StudyConfig:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: {error}") from error
    try:
        return StudyConfig.from_dict(data)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path}: {error}") from error


def assign_arm(study: StudyConfig, counts: dict[str, int]) -> str:
    """The arm with the fewest participants counted so far (those who finished or are still playing;
    dropouts are not counted, so their arm is refilled), ties broken by the study's arm order."""
    return min(study.arms, key=lambda arm: (counts.get(arm, 0), study.arms.index(arm)))


def for_the_secret(settings: GameSettings, nle: bool) -> tuple[str, ...]:
    """At-will: the explainers run on the secret image when explanations are bought (the NLE when offered)."""
    return settings.for_the_secret + (("nle",) if nle else ())


def explainers_of(study: StudyConfig, arm: str) -> tuple[str, ...]:
    """The explainers an arm's games can show: at-will, those bought per round (for every image, then for
    the secret); controlled, the arm's modes."""
    if study.kind == "at-will":
        settings = settings_named(study.kind, **study.settings)
        return settings.for_every_image + for_the_secret(settings, study.nle)
    return arm_modes(arm)


def with_explanations(study: StudyConfig, arm: str, game_number: int) -> bool:
    """Whether game `game_number` (0-based) of a participant shows the arm's explanations: sessions
    alternate without/with, starting without; at-will studies let the player decide every round."""
    if study.kind == "at-will":
        return True
    if not arm_modes(arm):
        return False
    return (game_number // study.games_per_session) % 2 == 1
