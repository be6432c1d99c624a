"""Quality flags (game/quality.py): fast_games is a habit, not one quick game, because games without
explanations are faster by design and a one-game rule would flag those arms more often."""
from __future__ import annotations

from game.quality import FAST_GAME_S, FAST_GAMES_MIN, FAST_GAMES_MIN_SHARE, PlayedGame, quality_flags

QUICK, SLOW = FAST_GAME_S - 1, FAST_GAME_S + 50


def flags(fast: int, slow: int, unfinished: int = 0) -> dict:
    games = [PlayedGame(2, QUICK)] * fast + [PlayedGame(2, SLOW)] * slow + [PlayedGame(2, None)] * unfinished
    return quality_flags(games, [])


def raised(result: dict) -> set[str]:
    return set(filter(None, result["flags"].split("+")))


def test_the_rule_is_three_games_and_fifteen_percent():
    assert (FAST_GAMES_MIN, FAST_GAMES_MIN_SHARE) == (3, 0.15)


def test_one_or_two_quick_games_flag_nobody():
    for fast in (1, 2):
        result = flags(fast, 0)
        assert result["fast_games"] == fast and "fast_games" not in raised(result)


def test_three_quick_games_of_twenty_flag_the_participant():
    result = flags(3, 17)                      # exactly 15%: flagged
    assert result["fast_games"] == 3 and "fast_games" in raised(result)
    assert "fast_games" in raised(flags(3, 0))
    assert "fast_games" in raised(flags(15, 85))                  # exactly 15% of 100 (no rounding loss)


def test_three_quick_games_among_many_are_not_a_habit():
    result = flags(3, 18)                      # 3 of 21 is 14.3%: below the share
    assert result["fast_games"] == 3 and "fast_games" not in raised(result)
    assert "fast_games" not in raised(flags(14, 86))


def test_unfinished_games_do_not_count():
    result = flags(3, 17, unfinished=10)
    assert result["games_finished"] == 20 and "fast_games" in raised(result)


def test_the_other_flags_are_unchanged():
    result = quality_flags([PlayedGame(0, SLOW)], ["Helping a lot"] * 5)
    assert raised(result) == {"no_questions", "straight_lined"}
    assert raised(quality_flags([], [])) == set()
