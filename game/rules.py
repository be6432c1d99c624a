"""The rules of the game as pure functions: each takes a state and a move and returns the new state
and the event to log, or raises RuleError with a message for the player. The server calls them and
persists the result; the client never decides anything.

Score (docs/research.md §1): P = P0 - sum of costs when the guess is right, else 0; a win is a right guess
with P > 0. A question or explanation needs at least its cost in points, so points never go below 0.
"""
from __future__ import annotations

from dataclasses import replace

from .settings import RATINGS, GameSettings
from .state import ASKING, FINISHED, RATING, GameState, Round


class RuleError(ValueError):
    """A move the rules do not allow now; the message says why, for the player."""


NOT_OFFERED = "Explanations are not available in this game."


def new_game(game_id: str, participant: str, settings: GameSettings, images: list[int], tokens: list[str],
             secret: int, difficulty: float, with_explanations: bool,
             offered: bool | None = None) -> tuple[GameState, dict]:
    """offered: whether explanations can be bought in this at-will game, where the study randomizes the offer
    (game/offer.py; logged with the start, the export's `offered`); None where it does not."""
    if len(images) != settings.images or len(tokens) != settings.images:
        raise RuleError(f"a {settings.name} game has {settings.images} images, got {len(images)}")
    if len(set(tokens)) != len(tokens) or len(set(images)) != len(images):
        raise RuleError("images and their tokens must be distinct")
    if not 0 <= secret < len(images):
        raise RuleError("the secret must be one of the images")
    state = GameState(game_id, participant, settings, tuple(images), tuple(tokens), secret, difficulty,
                      with_explanations, offered)
    return state, {"type": "game_start", "images": list(images), "tokens": list(tokens), "secret": secret,
                   "difficulty": difficulty, "setting": settings.name, "with_explanations": with_explanations,
                   **({} if offered is None else {"offered": offered})}


def _expect(state: GameState, phase: str, doing: str) -> None:
    if state.phase == phase:
        return
    if state.phase == FINISHED:
        raise RuleError(f"cannot {doing}: the game is over")
    if state.phase == RATING:
        raise RuleError(f"cannot {doing}: rate how helpful the last answer was first")
    raise RuleError(f"cannot {doing} now")


def ask(state: GameState, question: str, answer: str, notice: str | None = None) -> tuple[GameState, dict]:
    """A question (already answered by the agent about the secret image) costs p_i; in controlled games
    with explanations they come with every round at no extra cost. `notice`: what the player is told of a
    question the agent could not read exactly (game/unread_question.py); such a round costs the same."""
    _expect(state, ASKING, "ask")
    text = question.strip() if isinstance(question, str) else ""
    if not text:
        raise RuleError("the question is empty")
    if len(text) > state.settings.max_question_chars:
        raise RuleError(f"questions are at most {state.settings.max_question_chars} characters")
    if len(state.rounds) >= state.settings.max_questions:
        raise RuleError(f"no questions left (at most {state.settings.max_questions}); make your guess")
    if state.points < state.settings.question_cost:
        raise RuleError(f"not enough points for another question (it costs {state.settings.question_cost}, "
                        f"you have {state.points}); make your guess")
    explained = state.with_explanations and not state.settings.explanations_at_will
    round_ = Round(text, answer, explained=explained, cost=state.settings.question_cost, notice=notice)
    state = replace(state, rounds=state.rounds + (round_,), phase=RATING)
    return state, {"type": "question", "question": text, "answer": answer, "cost": round_.cost,
                   "explained": explained, "points": state.points, **({"notice": notice} if notice else {})}


def buy_explanations(state: GameState) -> tuple[GameState, dict]:
    """At-will: explanations for the current round, for explanation_cost more points."""
    if not state.settings.explanations_at_will:
        raise RuleError("explanations cannot be bought in this game")
    if state.offered is False:              # the study's randomized offer left them out of this game
        raise RuleError(NOT_OFFERED)
    if state.phase != RATING or not state.rounds:
        raise RuleError("ask a question first; explanations belong to a question's round")
    last = state.rounds[-1]
    if last.explained:
        raise RuleError("this round already has its explanations")
    cost = state.settings.explanation_cost
    if state.points < cost:
        raise RuleError(f"not enough points for explanations (they cost {cost}, you have {state.points})")
    rounds = state.rounds[:-1] + (replace(last, explained=True, cost=last.cost + cost),)
    state = replace(state, rounds=rounds)
    return state, {"type": "explanations_bought", "round": len(rounds) - 1, "cost": cost, "points": state.points}


def rate(state: GameState, rating: str) -> tuple[GameState, dict]:
    """The helpfulness rating of the last round, before the next question or the guess."""
    _expect(state, RATING, "rate")
    if rating not in RATINGS:
        raise RuleError(f"rate with one of: {', '.join(RATINGS)}")
    rounds = state.rounds[:-1] + (replace(state.rounds[-1], rating=rating),)
    state = replace(state, rounds=rounds, phase=ASKING)
    return state, {"type": "rating", "round": len(rounds) - 1, "rating": rating,
                   "explained": rounds[-1].explained}


def guess(state: GameState, position: int) -> tuple[GameState, dict]:
    """The player may guess at any time (the paper's rule) once the study's minimum of questions is asked."""
    _expect(state, ASKING, "guess")
    needed = state.settings.min_questions - len(state.rounds)
    if needed > 0:
        raise RuleError(f"ask {'a question' if needed == 1 else f'{needed} more questions'} before you guess")
    if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < len(state.images):
        raise RuleError("guess one of the images")
    right = position == state.secret
    score = state.points if right else 0
    state = replace(state, phase=FINISHED, guess=position, score=score, won=right and score > 0)
    return state, {"type": "guess", "guess": position, "secret": state.secret, "right": right, "score": score,
                   "won": state.won, "questions": len(state.rounds), "spent": state.spent}
