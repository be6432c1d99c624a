"""The load profile's decisions (pure: no server)."""
from __future__ import annotations

from game.players import LoadPlayer


def view(rounds: int, *, at_will: bool = True, points: int = 20, phase: str = "asking") -> dict:
    return {"rounds": [{}] * rounds, "questions_left": 20 - rounds, "points": points, "question_cost": 1,
            "explanation_cost": 2, "explanations_at_will": at_will, "phase": phase, "images": ["a", "b", "c"]}


def test_load_player_asks_four_questions_then_guesses():
    player = LoadPlayer(seed=1)
    assert player.question_interval_s == 3.0
    assert [player.wants_question(view(n)) for n in range(6)] == [True] * 4 + [False] * 2
    assert not player.wants_guess(view(2)) and player.wants_guess(view(4))
    assert not player.wants_guess(view(4, phase="rating"))        # the last answer is rated first
    assert player.wants_question(view(1, points=5)) and not player.wants_question(view(1, points=1))


def test_load_player_buys_explanations_in_a_third_of_at_will_rounds_only():
    for seed in range(5):
        player = LoadPlayer(seed=seed)
        bought = [player.wants_explanations(view(1)) for _ in range(30)]
        assert sum(bought) == 10
        assert not any(player.wants_explanations(view(1, at_will=False)) for _ in range(30))
    assert not LoadPlayer().wants_explanations(view(1, points=2))     # not when it cannot pay
    offsets = {LoadPlayer(seed=seed).buy_offset for seed in range(20)}
    assert len(offsets) > 1                                            # players are not all in step


def test_load_player_rates_and_guesses_from_the_view():
    player = LoadPlayer(seed=2)
    assert player.guess(view(4)) in ("a", "b", "c")
    assert isinstance(player.rating(), str) and player.question().endswith("?")
