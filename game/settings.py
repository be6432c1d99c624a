"""Game settings as data: the two settings of the ExAG paper, every number configurable.

- AT_WILL: 20 images; a question costs 1 point; explanations for that round cost 2 more; requesting
  them shows free-form attention for all images and ObjScene + RelQAs (+ NLE when enabled) for the
  secret image, without saying which image that is.
- CONTROLLED: 5 more similar images, P0 = 10, a question costs 1; the study arm's explanation modes are
  shown for all images in every round of the games that have explanations.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

RATINGS = ("Helping a lot", "Mostly helping", "Somewhat helpful", "Not helping much", "Completely confusing")


@dataclass(frozen=True)
class GameSettings:
    name: str
    images: int                       # N: the secret and N-1 distractors
    start_points: int                 # P0
    question_cost: int                # p_i
    explanation_cost: int             # extra cost of a round with explanations (at-will only)
    explanations_at_will: bool        # True: the player buys them per round; False: the arm decides
    difficulty: str                   # image-set difficulty level (see image_sets.LEVELS)
    for_every_image: tuple[str, ...]  # explainers shown on every image of a round with explanations
    for_the_secret: tuple[str, ...]   # explainers shown for the secret image only (at-will)
    max_questions: int = 20           # a game ends in a guess at the latest after this many rounds
    max_question_chars: int = 300

    def __post_init__(self) -> None:
        if self.images < 2:
            raise ValueError("a game needs at least 2 images")
        for name in ("start_points", "question_cost", "explanation_cost", "max_questions"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "GameSettings":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown game settings: {', '.join(unknown)}")
        data = dict(data)
        for key in ("for_every_image", "for_the_secret"):
            if key in data:
                data[key] = tuple(data[key])
        return cls(**data)


AT_WILL = GameSettings(name="at-will", images=20, start_points=20, question_cost=1, explanation_cost=2,
                       explanations_at_will=True, difficulty="medium", for_every_image=("attention",),
                       for_the_secret=("objscene", "relqa"))
CONTROLLED = GameSettings(name="controlled", images=5, start_points=10, question_cost=1, explanation_cost=0,
                          explanations_at_will=False, difficulty="hard", for_every_image=(), for_the_secret=())
SETTINGS = {"at-will": AT_WILL, "controlled": CONTROLLED}


def settings_named(name: str, **overrides) -> GameSettings:
    if name not in SETTINGS:
        raise ValueError(f"unknown setting {name!r}; choose {' or '.join(SETTINGS)}")
    for key in ("for_every_image", "for_the_secret"):
        if key in overrides:
            overrides[key] = tuple(overrides[key])
    return replace(SETTINGS[name], **overrides)
