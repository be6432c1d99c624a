"""The randomized offer of explanations in at-will studies (game/offer.py, issue 43): the config refuses it where
it means nothing, in one line; `offered` is a pure function of the study's seed, the participant and the game,
offers exactly half of each participant's games (of an odd number, half rounded either way), differs between
participants and says None where the offer is not randomized; the rules refuse to sell explanations in a game
not offered, and the simulated players do not try; a pre-registration freezes the offer without breaking the
studies registered before it existed."""
from __future__ import annotations

import numpy as np
import pytest

from game.offer import OFFERS, offered, offered_games, participant_key
from game.players import LoadPlayer, SimplePlayer
from game.preregistration import document, registration
from game.rules import NOT_OFFERED, RuleError, ask, buy_explanations, new_game, rate
from game.settings import AT_WILL, RATINGS
from game.state import player_view, sells_explanations
from game.study import StudyConfig

SEED = 20_250_143
PLAN = {"hypotheses": ["Offered explanations raise the win rate."], "primary": "explanations_used",
        "stopping_rule": "Stop at 40 finished participants.", "exclusions": [], "planned_n": 40}


def randomized(games_per_session: int = 5, sessions: int = 2, seed: int | None = SEED) -> StudyConfig:
    return StudyConfig("itt", kind="at-will", arms=("both",), sessions=sessions, games_per_session=games_per_session,
                       offer="randomized", seed=seed)


def test_the_config_refuses_a_randomized_offer_where_it_means_nothing_in_one_line():
    assert StudyConfig("aw", kind="at-will", arms=("both",), sessions=1).offer == "always"
    assert StudyConfig("ctl").offer == "always" and OFFERS == ("always", "randomized")
    with pytest.raises(ValueError) as refused:
        StudyConfig("ctl", offer="randomized")
    assert "\n" not in str(refused.value) and str(refused.value).startswith("offer: only at-will studies")
    for bad in ("sometimes", "", 1, None, ["randomized"]):
        with pytest.raises(ValueError) as refused:
            StudyConfig.from_dict({"study_id": "aw", "kind": "at-will", "arms": ["both"], "offer": bad})
        assert "\n" not in str(refused.value)
        assert str(refused.value).startswith("offer must be always or randomized, got"), refused.value
    study = randomized()
    assert StudyConfig.from_dict(study.to_dict()) == study                 # stored and read back as it was


def test_offered_is_none_unless_the_study_randomizes_the_offer():
    at_will = StudyConfig("aw", kind="at-will", arms=("both",), sessions=2, seed=SEED)
    controlled = StudyConfig("ctl", seed=SEED)
    assert {offered(s, k, n) for s in (at_will, controlled) for k in (0, 7, "pid:ann") for n in range(8)} == {None}
    with pytest.raises(ValueError, match="has no seed yet"):             # the server draws it before any game
        offered(randomized(seed=None), 0, 0)
    with pytest.raises(ValueError, match="has games 0 to 9, not 10"):
        offered(randomized(), 0, 10)


def test_offered_is_a_pure_function_of_seed_participant_and_game():
    study = randomized()
    first = [offered(study, 3, n) for n in range(study.games)]
    assert [offered(StudyConfig.from_dict(study.to_dict()), 3, n) for n in range(study.games)] == first
    assert all(isinstance(o, bool) for o in first)
    # a slot read back from an export (NumPy's integer, a float in a column with gaps) is the same slot
    assert [offered(study, np.int64(3), n) for n in range(10)] == [offered(study, 3.0, n) for n in range(10)] == first
    assert participant_key(3, "prolific:x") == 3 and participant_key(None, "pid:ann") == "pid:ann"
    other_seed = [offered(randomized(seed=SEED + 1), 3, n) for n in range(study.games)]
    other_participants = {tuple(offered(study, k, n) for n in range(study.games)) for k in range(30)}
    assert other_seed != first or len(other_participants) > 1
    assert len(other_participants) > 20                          # 252 ways to choose 5 of 10: rarely the same
    named = [offered(study, "pid:ann", n) for n in range(study.games)]
    assert named == [offered(study, "pid:ann", n) for n in range(study.games)]


def test_each_participant_is_offered_exactly_half_of_their_games():
    study = randomized()
    for key in [*range(200), "pid:ann", "pid:bob"]:
        assert sum(offered(study, key, n) for n in range(study.games)) == study.games // 2
    # every game is offered to about half the participants: no game number is favoured
    shares = np.mean([[offered(study, k, n) for n in range(study.games)] for k in range(400)], axis=0)
    assert shares.min() > 0.4 and shares.max() < 0.6
    odd = randomized(games_per_session=7, sessions=1)
    counts = {sum(offered(odd, k, n) for n in range(odd.games)) for k in range(100)}
    assert counts == {3, 4}                                      # the extra game goes either way, by the seed
    assert offered_games(SEED, 0, 1) in (frozenset(), frozenset({0}))


def start(offer: bool | None):
    n = AT_WILL.images
    return new_game("g1", "p1", AT_WILL, list(range(100, 100 + n)), [f"t{i}" for i in range(n)], 2, 0.5, True, offer)


def test_the_rules_sell_no_explanations_in_a_game_not_offered():
    state, event = start(False)
    assert event["offered"] is False and player_view(state)["offered"] is False
    assert not sells_explanations(player_view(state))
    state, _ = ask(state, "is there a red cube?", "yes")
    with pytest.raises(RuleError) as refused:
        buy_explanations(state)
    assert str(refused.value) == NOT_OFFERED == "Explanations are not available in this game."
    assert state.points == AT_WILL.start_points - AT_WILL.question_cost and not state.rounds[-1].explained
    rate(state, RATINGS[0])                                      # the round goes on as without explanations

    state, event = start(True)
    assert event["offered"] is True and sells_explanations(player_view(state))
    state, _ = ask(state, "is there a red cube?", "yes")
    state, bought = buy_explanations(state)
    assert bought["cost"] == AT_WILL.explanation_cost and state.rounds[-1].explained

    state, event = start(None)                                   # no randomization: as before, nothing logged
    assert "offered" not in event and player_view(state)["offered"] is None
    assert sells_explanations(player_view(state))


def test_simulated_players_do_not_try_to_buy_in_a_game_not_offered():
    def view(offer):
        return {"rounds": [{}], "questions_left": 19, "points": 19, "question_cost": 1, "explanation_cost": 2,
                "explanations_at_will": True, "offered": offer, "phase": "rating", "images": ["a", "b"]}

    for offer, buys in ((None, True), (True, True), (False, False)):
        assert SimplePlayer(buy_every=2).wants_explanations(view(offer)) is buys
        player = LoadPlayer(seed=0, buy_every=1)
        assert player.wants_explanations(view(offer)) is buys


def test_a_preregistration_freezes_the_offer_and_keeps_the_studies_registered_before_it():
    always = StudyConfig("aw", kind="at-will", arms=("both",), sessions=2, preregistration=PLAN)
    # an "always" offer is what every study had before the field: left out of the document, so a study
    # registered then still hashes as it did
    assert "offer" not in document(always)["study"]
    section = registration(always, {"exag_version": "test", "agent_fingerprint": None})
    registered = StudyConfig.from_dict({**always.to_dict(), "preregistration": section})
    assert "offer" not in section["fields"]
    with pytest.raises(ValueError, match=r"differ from its pre-registration .*changed: offer\)"):
        StudyConfig.from_dict({**registered.to_dict(), "offer": "randomized"})
    # a registered randomized offer is frozen the same way
    draft = StudyConfig.from_dict({**always.to_dict(), "offer": "randomized"})
    assert document(draft)["study"]["offer"] == "randomized"
    section = registration(draft, {"exag_version": "test", "agent_fingerprint": None})
    StudyConfig.from_dict({**draft.to_dict(), "preregistration": section})
    with pytest.raises(ValueError, match=r"changed: offer\)"):
        StudyConfig.from_dict({**draft.to_dict(), "preregistration": section, "offer": "always"})
