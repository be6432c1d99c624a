"""Game settings as data: the two settings of the ExAG paper, every number configurable.

- AT_WILL: 20 images; a question costs 1 point; explanations for that round cost 2 more; requesting
  them shows free-form attention for all images and ObjScene + RelQAs (+ NLE when enabled) for the
  secret image, without saying which image that is.
- CONTROLLED: 5 more similar images, P0 = 10, a question costs 1; the study arm's explanation modes are
  shown for all images in every round of the games that have explanations.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

# Image-set difficulty levels: the band of a set's neighbours, ordered by image-feature distance, as
# fractions of the pool (game/image_sets.py draws sets from it). Levels are data; add more freely.
DIFFICULTY_LEVELS: dict[str, tuple[float, float]] = {
    "hard": (0.0, 0.1),
    "medium": (0.0, 0.35),
    "easy": (0.0, 1.0),
}

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
    min_questions: int = 1            # questions a player must ask before guessing (0 = the paper's "any time")

    def __post_init__(self) -> None:
        for f in fields(self):
            value, kind = getattr(self, f.name), _FIELD_TYPES[f.name]
            if kind is tuple:
                if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
                    raise ValueError(f"{f.name} must be a list of explainer names")
            elif not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise ValueError(f"{f.name} must be {_TYPE_NAMES[kind]}, got {value!r}"[:200])
        if self.images < 2:
            raise ValueError("a game needs at least 2 images")
        for name in ("start_points", "question_cost", "explanation_cost", "max_questions", "min_questions",
                     "max_question_chars"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        if self.min_questions > self.max_questions:
            raise ValueError(f"min_questions ({self.min_questions}) cannot exceed max_questions ({self.max_questions})")
        if self.min_questions * self.question_cost > self.start_points:
            raise ValueError(f"min_questions ({self.min_questions}) cost more than the {self.start_points} start points")
        if self.difficulty not in DIFFICULTY_LEVELS:
            raise ValueError(f"unknown difficulty {self.difficulty!r}; choose from {', '.join(DIFFICULTY_LEVELS)}"[:200])

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


_FIELD_TYPES = {"name": str, "images": int, "start_points": int, "question_cost": int, "explanation_cost": int,
                "explanations_at_will": bool, "difficulty": str, "for_every_image": tuple, "for_the_secret": tuple,
                "max_questions": int, "max_question_chars": int, "min_questions": int}
_TYPE_NAMES = {int: "a whole number", bool: "true or false", str: "text"}

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
