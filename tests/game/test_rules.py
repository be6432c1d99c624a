"""Game rules and scoring: pure functions over dataclasses."""
import pytest

from game.rules import RuleError, ask, buy_explanations, guess, new_game, rate
from game.settings import AT_WILL, CONTROLLED, RATINGS, GameSettings, settings_named
from game.state import FINISHED, GameState, player_view


def start(settings=CONTROLLED, with_explanations=True, secret=2):
    n = settings.images
    state, event = new_game("g1", "p1", settings, list(range(100, 100 + n)), [f"t{i}" for i in range(n)],
                            secret, 0.5, with_explanations)
    return state


def play_round(state, question="is there a red cube?", answer="yes", rating=RATINGS[0], buy=False):
    state, _ = ask(state, question, answer)
    if buy:
        state, _ = buy_explanations(state)
    state, _ = rate(state, rating)
    return state


def test_presets_follow_the_paper():
    assert (CONTROLLED.images, CONTROLLED.start_points, CONTROLLED.question_cost) == (5, 10, 1)
    assert (AT_WILL.images, AT_WILL.question_cost, AT_WILL.explanation_cost) == (20, 1, 2)
    assert settings_named("controlled", start_points=12).start_points == 12
    with pytest.raises(ValueError, match="unknown setting"):
        settings_named("blitz")
    assert GameSettings.from_dict(AT_WILL.to_dict()) == AT_WILL
    with pytest.raises(ValueError, match="unknown game settings: colour"):
        GameSettings.from_dict({**AT_WILL.to_dict(), "colour": 1})


def test_a_right_guess_scores_the_points_left_and_wins():
    state = play_round(play_round(start()))
    state, event = guess(state, 2)
    assert (state.phase, state.score, state.won) == (FINISHED, 8, True)
    assert event["right"] and event["spent"] == 2


def test_a_wrong_guess_scores_zero():
    state, event = guess(play_round(start()), 0)
    assert (state.score, state.won, event["right"]) == (0, False, False)


def test_a_right_guess_with_no_points_left_is_not_a_win():
    state = start(settings_named("controlled", start_points=2))
    state = play_round(play_round(state))
    state, _ = guess(state, 2)
    assert state.score == 0 and state.won is False


def test_at_will_explanations_cost_extra_for_their_round():
    state = play_round(start(AT_WILL, with_explanations=False), buy=True)
    assert state.rounds[0].explained and state.rounds[0].cost == 3 and state.points == AT_WILL.start_points - 3
    state = play_round(state)
    assert state.points == AT_WILL.start_points - 4
    state, _ = ask(state, "how many spheres?", "2")
    state, _ = buy_explanations(state)
    with pytest.raises(RuleError, match="already"):
        buy_explanations(state)


def test_controlled_games_show_the_arms_explanations_for_free():
    assert play_round(start(CONTROLLED, with_explanations=True)).rounds[0].explained
    assert not play_round(start(CONTROLLED, with_explanations=False)).rounds[0].explained
    state, _ = ask(start(CONTROLLED), "q?", "no")
    with pytest.raises(RuleError, match="cannot be bought"):
        buy_explanations(state)


@pytest.mark.parametrize("move, message", [
    (lambda s: ask(ask(s, "q?", "no")[0], "again?", "no"), "rate"),      # skip the rating
    (lambda s: guess(ask(s, "q?", "no")[0], 1), "rate"),                 # guess before rating
    (lambda s: rate(s, RATINGS[0]), "cannot rate"),                       # rate with nothing to rate
    (lambda s: guess(guess(play_round(s), 1)[0], 2), "game is over"),    # guess twice
    (lambda s: ask(guess(play_round(s), 1)[0], "q?", "no"), "game is over"),  # ask after the guess
    (lambda s: ask(s, "   ", "no"), "empty"),
    (lambda s: ask(s, "x" * 301, "no"), "300 characters"),
    (lambda s: guess(play_round(s), 7), "one of the images"),
    (lambda s: guess(play_round(s), True), "one of the images"),
    (lambda s: guess(s, 1), "ask a question before you guess"),          # the study's minimum: 1
    (lambda s: rate(ask(s, "q?", "no")[0], "great!"), "rate with one of"),
])
def test_moves_out_of_turn_or_malformed_are_refused(move, message):
    with pytest.raises(RuleError, match=message):
        move(start())


def test_questions_run_out():
    state = start(settings_named("controlled", max_questions=1))
    state = play_round(state)
    with pytest.raises(RuleError, match="no questions left"):
        ask(state, "q?", "no")


def test_points_never_go_below_zero():
    """Issue 10, finding 6: a controlled game (P0 = 10, cost 1) took 13 questions and went to -3."""
    state = start(CONTROLLED)
    for _ in range(CONTROLLED.start_points):
        state = play_round(state)
    assert state.points == 0 and len(state.rounds) == 10
    with pytest.raises(RuleError, match="not enough points"):
        ask(state, "one more?", "no")
    state = start(AT_WILL)
    for _ in range(AT_WILL.start_points - 1):
        state = play_round(state)
    state, _ = ask(state, "last one?", "no")      # 0 points left: explanations (cost 2) are refused
    with pytest.raises(RuleError, match="not enough points for explanations"):
        buy_explanations(state)
    assert state.points == 0


def test_a_study_can_require_questions_before_the_guess():
    """Issue 10, finding 5: the paper's "guess any time" once the study's minimum is asked (default 1)."""
    assert CONTROLLED.min_questions == AT_WILL.min_questions == 1
    with pytest.raises(RuleError, match="ask a question before you guess"):
        guess(start(), 2)
    state = start(settings_named("controlled", min_questions=3))
    with pytest.raises(RuleError, match="ask 2 more questions"):
        guess(play_round(state), 2)
    assert guess(play_round(play_round(play_round(state))), 2)[0].won
    assert guess(start(settings_named("controlled", min_questions=0)), 2)[0].won   # the paper's rule
    with pytest.raises(ValueError, match="cost more than"):
        settings_named("controlled", min_questions=11)


@pytest.mark.parametrize("overrides, message", [
    ({"difficulty": "nightmare"}, "unknown difficulty"),
    ({"images": "5"}, "images must be a whole number"),
    ({"images": True}, "images must be a whole number"),
    ({"start_points": 2.5}, "start_points must be a whole number"),
    ({"explanations_at_will": "yes"}, "explanations_at_will must be true or false"),
    ({"max_questions": -1}, "must not be negative"),
    ({"min_questions": 30}, "cannot exceed max_questions"),
])
def test_settings_that_cannot_run_are_refused(overrides, message):
    with pytest.raises(ValueError, match=message):
        settings_named("controlled", **overrides)


def test_the_player_view_hides_the_secret_until_the_guess():
    state = play_round(start(secret=3))
    view = player_view(state)
    assert "secret" not in view and "t3" in view["images"] and "images_ids" not in view
    assert "103" not in str(view)    # world indices never leave the server
    finished, _ = guess(state, 3)
    assert player_view(finished)["secret"] == "t3" and player_view(finished)["won"]


def test_state_round_trips_through_plain_data():
    state = play_round(start(AT_WILL, with_explanations=False), buy=True)
    assert GameState.from_dict(state.to_dict()) == state


# --- image sets and studies ---------------------------------------------------------------------

import numpy as np  # noqa: E402

from game.image_sets import choose_image_set  # noqa: E402
from game.study import StudyConfig, arm_modes, load_study, with_explanations  # noqa: E402


def test_harder_levels_choose_more_similar_distractors():
    embeddings = np.random.default_rng(0).normal(size=(300, 16))
    mean = {level: np.mean([choose_image_set(embeddings, 5, level, np.random.default_rng(s)).difficulty
                            for s in range(40)]) for level in ("hard", "medium", "easy")}
    assert mean["hard"] < mean["medium"] < mean["easy"]
    chosen = choose_image_set(embeddings, 20, "hard", np.random.default_rng(1))
    assert len(set(chosen.images)) == 20 and 0 <= chosen.secret < 20
    with pytest.raises(ValueError, match="unknown difficulty"):
        choose_image_set(embeddings, 5, "brutal", np.random.default_rng(0))
    with pytest.raises(ValueError, match="pool of at least"):
        choose_image_set(embeddings[:3], 5, "easy", np.random.default_rng(0))


def test_the_same_seed_chooses_the_same_set():
    embeddings = np.random.default_rng(0).normal(size=(100, 8))
    assert choose_image_set(embeddings, 5, "hard", np.random.default_rng(3)) == \
        choose_image_set(embeddings, 5, "hard", np.random.default_rng(3))


def test_sessions_alternate_in_the_participants_order():
    study = StudyConfig("s1")
    schedule = [with_explanations(study, "relqa", g, "abab") for g in range(study.games)]
    assert schedule == [False] * 5 + [True] * 5 + [False] * 5 + [True] * 5
    assert [with_explanations(study, "relqa", g, "baba") for g in range(study.games)] == [not s for s in schedule]
    assert not any(with_explanations(study, "none", g, order) for g in range(study.games) for order in ("abab", "baba"))
    with pytest.raises(ValueError, match="abab or baba"):
        with_explanations(study, "relqa", 0, "counterbalanced")


def test_arms_and_study_files_are_checked(tmp_path):
    assert arm_modes("both") == ("attention", "relqa") and arm_modes("attention+nle") == ("attention", "nle")
    with pytest.raises(ValueError, match="unknown arm"):
        arm_modes("attention+magic")
    with pytest.raises(ValueError, match="at least 4 sessions"):
        StudyConfig("s", sessions=3)
    path = tmp_path / "study.json"
    path.write_text('{"study_id": "pilot", "arms": ["none", "nle"], "completion_code": "XYZ"}')
    assert load_study(path).arms == ("none", "nle")
    path.write_text('{"study_id": "pilot", "colour": 1}')
    with pytest.raises(ValueError, match="study.json: unknown study fields: colour"):
        load_study(path)


def test_studies_override_settings_and_refuse_unknown_ones():
    from game.study import QUESTIONNAIRE, StudyConfig

    study = StudyConfig.from_dict({"study_id": "s", "kind": "at-will", "sessions": 1, "settings": {"start_points": 30}})
    assert settings_named(study.kind, **study.settings).start_points == 30
    with pytest.raises(ValueError, match="settings"):
        StudyConfig(study_id="s", kind="at-will", sessions=1, settings={"lives": 3})
    assert len({item["key"] for item in QUESTIONNAIRE}) == len(QUESTIONNAIRE)
