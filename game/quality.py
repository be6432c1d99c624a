"""Quality flags per participant, for preregistered exclusions (docs/research.md §7): games without a
question, a habit of implausibly fast games, and the same helpfulness rating for every round
(straight-lining); and repeat participation, what the server's one-participation rule cannot refuse
(`repeat_flags`): a platform id that consented in several participations of a study (another session after a
release, or data from before the rule), and a browser that several consenting participations of a study came
from (several platform ids, or a platform id and a lab link, in one browser).

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
REPEAT_FLAGS = ("several_sessions", "shared_browser")     # repeat participation (repeat_flags)
FLAGS = ("no_questions", "fast_games", "straight_lined") + CHECK_FLAGS + REPEAT_FLAGS   # checks: game/checks.py
PLATFORMS = ("prolific", "mturk")    # participant ids PLATFORM:ID:SESSION (server/play.py); "pid:" links have none


@dataclass(frozen=True)
class Participation:
    """One participation of a study, as repeat_flags sees it."""
    study: str
    participant: str                 # its participant id (server/play.py: prolific:PID:SESSION, mturk:W:A, pid:X)
    browsers: frozenset[str]         # the browsers it was bound to (the event log's names: server/browser.py in_study)
    consented: bool


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


def platform_id(participant: str) -> str | None:
    """The person on their platform, `prolific:PID` of the participation `prolific:PID:SESSION` (mturk likewise);
    None for ids that carry none (lab links `pid:X`, anonymous demo players)."""
    source, _, rest = str(participant).partition(":")
    return f"{source}:{rest.split(':')[0]}" if source in PLATFORMS and rest else None


def repeat_flags(participations: list[Participation]) -> dict[tuple[str, str], list[str]]:
    """(study, participant) -> the repeat-participation flags it raises, among the participations that consented
    (a join alone is no participation: whoever guesses a participant's PROLIFIC_PID and joins with another session
    flags nobody): `several_sessions`, its platform id consented in another participation of the study too;
    `shared_browser`, a browser it was bound to was also bound to another of the study's. Both raise it on each
    of the participations concerned: which one is the person's own is for the researcher to judge."""
    consented = [p for p in participations if p.consented]
    by_platform: dict[tuple[str, str], set[str]] = {}
    by_browser: dict[tuple[str, str], set[str]] = {}
    for p in consented:
        if platform_id(p.participant):
            by_platform.setdefault((p.study, platform_id(p.participant)), set()).add(p.participant)
        for b in p.browsers:
            by_browser.setdefault((p.study, b), set()).add(p.participant)
    flags = {}
    for p in consented:
        several = len(by_platform.get((p.study, platform_id(p.participant)), ())) > 1
        shared = any(len(by_browser[(p.study, b)]) > 1 for b in p.browsers)
        flags[(p.study, p.participant)] = [name for name, raised in zip(REPEAT_FLAGS, (several, shared)) if raised]
    return flags
