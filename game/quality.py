"""Quality flags per participant, for preregistered exclusions (docs/research.md §7): games without a
question, implausibly fast games, and the same helpfulness rating for every round (straight-lining).

The flags only describe; excluding is the researcher's decision, made in the analysis. The same
function serves the export (from the event log) and the admin monitor (from the stored games).
"""
from __future__ import annotations

from dataclasses import dataclass

from .checks import CHECK_FLAGS

FAST_GAME_S = 10.0               # nobody looks at the images, asks, reads the answer, rates and guesses faster
STRAIGHT_LINE_MIN_RATINGS = 5    # fewer identical ratings than this can be honest agreement
# every flag a participant can raise: the names a pre-registration may exclude by (game/preregistration.py)
# and `exag analyze --exclude` takes (experiments/analysis/frames.py)
FLAGS = ("no_questions", "fast_games", "straight_lined") + CHECK_FLAGS   # the last from participant checks


@dataclass(frozen=True)
class PlayedGame:
    questions: int
    seconds: float | None        # from the game's start to the guess; None while unfinished


def quality_flags(games: list[PlayedGame], ratings: list[str]) -> dict:
    finished = [g for g in games if g.seconds is not None]
    without = sum(g.questions == 0 for g in finished)
    fast = sum(g.seconds < FAST_GAME_S for g in finished)
    straight = len(ratings) >= STRAIGHT_LINE_MIN_RATINGS and len(set(ratings)) == 1
    flags = [name for name, raised in (("no_questions", without), ("fast_games", fast), ("straight_lined", straight))
             if raised]
    return {"games_finished": len(finished), "games_without_questions": without, "fast_games": fast,
            "straight_lined": straight, "flags": "+".join(flags)}
