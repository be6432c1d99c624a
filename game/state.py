"""The state of one game, as plain dataclasses the server stores and the rules transform.

The state holds the secret; only `player_view` may leave the server, and it never says which image is
the secret until the game is finished.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from .settings import GameSettings

ASKING, RATING, FINISHED = "asking", "rating", "finished"


@dataclass(frozen=True)
class Round:
    question: str
    answer: str                          # the agent's answer about the secret image
    explained: bool = False              # explanations were shown this round
    cost: int = 0                        # points this round cost (question and explanations)
    rating: str | None = None            # the player's helpfulness rating, required before going on
    notice: str | None = None            # what the player is told of a question the agent could not read exactly
                                         # (game/unread_question.py); None: read exactly, or no parser applies


@dataclass(frozen=True)
class GameState:
    game_id: str
    participant: str
    settings: GameSettings
    images: tuple[int, ...]              # world image indices, in the order shown
    tokens: tuple[str, ...]              # per-game random names of the images (what the client sees)
    secret: int                          # position of the secret in `images`
    difficulty: float                    # mean feature distance from the secret to the distractors
    with_explanations: bool              # controlled games: the arm's explanations are shown every round
    offered: bool | None = None          # at-will games of a study that randomizes the offer (game/offer.py): whether
                                         # explanations can be bought in this game; None: no such randomization
    rounds: tuple[Round, ...] = ()
    phase: str = ASKING
    guess: int | None = None
    score: int | None = None
    won: bool | None = None

    @property
    def spent(self) -> int:
        return sum(r.cost for r in self.rounds)

    @property
    def points(self) -> int:
        return self.settings.start_points - self.spent

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "GameState":
        data = dict(data)
        data["settings"] = GameSettings.from_dict(data["settings"])
        data["rounds"] = tuple(Round(**r) for r in data["rounds"])
        data["images"], data["tokens"] = tuple(data["images"]), tuple(data["tokens"])
        return cls(**data)


def questions_allowed(state: GameState) -> int:
    """The questions the player can still ask: what is left of the game's limit (`max_questions`), and no more
    than the points pay for at the question's cost (explanations bought would leave fewer)."""
    left = state.settings.max_questions - len(state.rounds)
    if state.settings.question_cost > 0:
        left = min(left, state.points // state.settings.question_cost)
    return max(left, 0)


def sells_explanations(game: dict) -> bool:
    """Whether a player view's game (`player_view`) lets the player buy explanations: an at-will game, unless its
    study randomized the offer and this game was not offered (simulated players ask this before buying)."""
    return bool(game.get("explanations_at_will")) and game.get("offered") is not False


def player_view(state: GameState) -> dict:
    """Everything the player may see now: never the secret (nor anything that points to it) before the
    game is finished."""
    view = {"game_id": state.game_id, "setting": state.settings.name, "images": list(state.tokens),
            "points": state.points, "start_points": state.settings.start_points,
            "question_cost": state.settings.question_cost, "explanation_cost": state.settings.explanation_cost,
            "explanations_at_will": state.settings.explanations_at_will,
            "with_explanations": state.with_explanations, "offered": state.offered, "phase": state.phase,
            "rounds": [{"question": r.question, "answer": r.answer, "explained": r.explained, "cost": r.cost,
                        "rating": r.rating, "notice": r.notice} for r in state.rounds],
            "questions_left": state.settings.max_questions - len(state.rounds),
            "questions_allowed": questions_allowed(state)}
    if state.phase == FINISHED:
        view.update(secret=state.tokens[state.secret], guess=state.tokens[state.guess], score=state.score,
                    won=state.won)
    return view
