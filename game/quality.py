"""Quality flags per participant, for preregistered exclusions (docs/research.md §7): games without a
question, a habit of implausibly fast games, and the same helpfulness rating for every round
(straight-lining).

The flags only describe; excluding is the researcher's decision, made in the analysis. The same
function serves the export (from the event log) and the admin monitor (from the stored games).
"""
from __future__ import annotations

from dataclasses import dataclass

from .checks import CHECK_FLAGS

FAST_GAME_S = 10.0               # nobody looks at the images, asks, reads the answer, rates and guesses faster
# fast_games flags a habit, not one slip: games without explanations are faster by design, so the rule "any
# game under FAST_GAME_S" flagged (and excluded) more participants of the arms without explanations, and an
# exclusion that depends on the arm biases the comparison of arms. Flagged: at least FAST_GAMES_MIN of a
# participant's finished games AND at least FAST_GAMES_MIN_SHARE of them under FAST_GAME_S.
FAST_GAMES_MIN = 3               # one or two quick guesses happen to anyone (a lucky first question, say)
FAST_GAMES_MIN_SHARE = 0.15      # of their finished games: 3 of a paper-size study's 20, more in a longer one
STRAIGHT_LINE_MIN_RATINGS = 5    # fewer identical ratings than this can be honest agreement
# every flag a participant can raise: the names a pre-registration may exclude by (game/preregistration.py)
# and `exag analyze --exclude` takes (experiments/analysis/frames.py)
FLAGS = ("no_questions", "fast_games", "straight_lined") + CHECK_FLAGS   # the last from participant checks


@dataclass(frozen=True)
class PlayedGame:
    questions: int
    seconds: float | None        # from the game's start to the guess; None while unfinished


def quality_flags(games: list[PlayedGame], ratings: list[str]) -> dict:
    """The flags and the counts behind them; `fast_games` (the column) counts the games under FAST_GAME_S,
    the flag of that name is raised by the proportion rule above."""
    finished = [g for g in games if g.seconds is not None]
    without = sum(g.questions == 0 for g in finished)
    fast = sum(g.seconds < FAST_GAME_S for g in finished)
    rushed = fast >= FAST_GAMES_MIN and fast / len(finished) >= FAST_GAMES_MIN_SHARE   # exact at 15 of 100
    straight = len(ratings) >= STRAIGHT_LINE_MIN_RATINGS and len(set(ratings)) == 1
    flags = [name for name, raised in (("no_questions", without), ("fast_games", rushed), ("straight_lined", straight))
             if raised]
    return {"games_finished": len(finished), "games_without_questions": without, "fast_games": fast,
            "straight_lined": straight, "flags": "+".join(flags)}
