"""The simulated participant on hand-made scenes: seeded, right belief updates, explanations read as the
page shows them, and nothing but the player view used."""
from __future__ import annotations

import numpy as np
import pytest
from hand_scenes import hand_scene

from game import rules
from game.evidence import agreement, facts_hold
from game.participant import PRESETS, ParticipantConfig, SimulatedParticipant
from game.perception import PerceptionErrors, perceive
from game.settings import RATINGS, settings_named
from game.state import player_view
from vqa_agent.world.clevr_io import scene_to_json
from vqa_agent.world.questions import NounPhrase, Question

EXACT = PerceptionErrors(0.0, 0.0, 0.0, 0.0)
# Three images: only A has a red cube; A and B have a sphere; C has two cylinders.
A = [("cube", "red", "large", "metal", -2, 0), ("sphere", "blue", "large", "rubber", 1, 0)]
B = [("cube", "green", "large", "rubber", -2, 0), ("sphere", "blue", "large", "rubber", 1, 0)]
C = [("cylinder", "red", "large", "metal", -2, 0), ("cylinder", "gray", "large", "rubber", 1, 1)]
TOKENS = ["a", "b", "c"]


def scenes() -> dict[str, dict]:
    return {t: scene_to_json(hand_scene(objects, i)) for i, (t, objects) in enumerate(zip(TOKENS, (A, B, C)))}


def exact(**changes) -> ParticipantConfig:
    return ParticipantConfig("test", EXACT, **changes)


def game(secret: int = 0, **settings) -> rules.GameState:
    state, _ = rules.new_game("g", "p", settings_named("controlled", images=3, **settings), [10, 11, 12], TOKENS,
                              secret, 0.0, False)
    return state


def started(config: ParticipantConfig, seed: int = 0, secret: int = 0) -> SimulatedParticipant:
    player = SimulatedParticipant(config, seed)
    player.start_game(player_view(game(secret)), scenes())
    return player


def test_belief_update_on_three_images_is_bayes_rule():
    player = started(exact(trust_prior=0.8, perception_confidence=1.0))
    exist_red_cube = Question("exist", [NounPhrase({"color": "red", "shape": "cube"})])
    belief = player._update(np.full(3, 1 / 3), exist_red_cube, "yes", np.full(3, 0.8))
    # P(yes | A) = 0.8 + 0.2/2 = 0.9; P(yes | B) = P(yes | C) = 0.2/2 = 0.1
    assert belief == pytest.approx([0.9 / 1.1, 0.1 / 1.1, 0.1 / 1.1])
    count_spheres = Question("count", [NounPhrase({"shape": "sphere"})])
    belief = player._update(np.full(3, 1 / 3), count_spheres, "1", np.full(3, 0.8))
    # P("1" | A) = P("1" | B) = 0.8 + 0.2/11, P("1" | C) = 0.2/11
    p_right, p_chance = 0.8 + 0.2 / 11, 0.2 / 11
    assert belief == pytest.approx(np.array([p_right, p_right, p_chance]) / (2 * p_right + p_chance))


def test_an_explanation_that_exposes_a_wrong_answer_keeps_the_secret_in_play():
    player = started(exact(trust_prior=0.8, perception_confidence=1.0, explanation_weight=3.0))
    q = Question("exist", [NounPhrase({"color": "red", "shape": "cube"})])
    plain = player._update(np.full(3, 1 / 3), q, "no", player._trusts(None))
    # the agent said "no" about A's red cube; attention on A lies on the sphere, not the cube
    exposed = player._update(np.full(3, 1 / 3), q, "no", player._trusts([0.0, None, None]))
    assert exposed[0] > plain[0] * 3
    # a perfect fit counts more than no explanation, a poor one much less
    fair, perfect, poor = player._trusts([None, 1.0, 0.2])
    assert poor < 0.5 < fair < perfect


def test_it_asks_only_while_the_next_answer_is_worth_its_point():
    # (no minimum number of questions: the study's minimum always comes first)
    player = started(exact(trust_prior=0.9, perception_confidence=1.0, guess_confidence=0.99, min_questions=0))
    view = player_view(game())
    exist_red_cube = Question("exist", [NounPhrase({"color": "red", "shape": "cube"})])
    # at 1/3 each, "is there a red cube?" from an agent it trusts picks out A or rules it out
    assert player._worth_asking(view, exist_red_cube, player.trust)
    # from an agent it believes right one time in ten, the answer moves A from 1/3 to at most 0.37:
    # 0.37 * 9 points after it is worth less than 1/3 * 10 points now
    doubtful = started(exact(trust_prior=0.1, trust_strength=1000.0, perception_confidence=1.0, min_questions=0))
    assert not doubtful._worth_asking(view, exist_red_cube, doubtful.trust)
    # nearly sure of A with 10 points: even a good question costs more than it can add
    player.belief = np.array([0.95, 0.03, 0.02])
    assert not player._worth_asking(view, exist_red_cube, player.trust)
    # effort: the question raises the expected score from 10/3 to 0.63 * 9 = 5.7 points; a player for whom
    # asking costs 2 points more still asks, one for whom it costs 3 does not
    for effort, asks in ((2.0, True), (3.0, False)):
        tired = started(exact(trust_prior=0.9, perception_confidence=1.0, guess_confidence=0.99, min_questions=0,
                              effort=effort))
        assert tired._worth_asking(view, exist_red_cube, tired.trust) is asks


def test_explanations_that_keep_failing_make_it_expect_less_from_the_next_answer():
    player = started(exact(trust_prior=0.9, explanation_weight=4.0, perception_confidence=1.0, guess_confidence=0.99,
                           min_questions=0))
    with_explanations = player_view(game()) | {"with_explanations": True}
    without = player_view(game())
    assert player._foreseen_trust(with_explanations) == player.trust      # nothing read yet
    player.recent_fits = [1.0] * 9 + [0.0]       # one exposed answer among good explanations
    assert player._foreseen_trust(with_explanations) > 0.85
    player.recent_fits = [0.0] * 10              # a sham: they never fit
    sham = player._foreseen_trust(with_explanations)
    assert sham < 0.35 and player._foreseen_trust(without) == player.trust
    at_will = player_view(game(explanations_at_will=True)) | {"with_explanations": True}
    assert player._foreseen_trust(at_will) == pytest.approx(0.5 * sham + 0.5 * player.trust)   # buy_rate 0.5
    # A at 0.6: guessing now scores 6 points expected; trusted at 0.9, "is there a red cube?" promises
    # 0.86 * 9 = 7.7 points, trusted at 0.31 only 0.59 * 9 = 5.3
    player.belief = np.array([0.6, 0.3, 0.1])
    exist_red_cube = Question("exist", [NounPhrase({"color": "red", "shape": "cube"})])
    assert player._worth_asking(without, exist_red_cube, player._foreseen_trust(without))
    assert not player._worth_asking(with_explanations, exist_red_cube, sham)


def test_the_participant_is_deterministic_for_a_seed():
    def moves(seed):
        player, state, out = started(PRESETS["hasty"], seed), game(), []
        while state.phase != "finished":
            move, payload = player.next_move(player_view(state))
            out.append((move, payload))
            if move == "ask":
                state, _ = rules.ask(state, payload["question"], "yes")
            elif move == "rate":
                state, _ = rules.rate(state, payload["rating"])
            else:
                state, _ = rules.guess(state, TOKENS.index(payload["image"]))
        return out
    assert moves(3) == moves(3)
    assert any(moves(3) != moves(s) for s in range(4, 10))


def play_to_the_end(player: SimulatedParticipant, state, answer_for) -> tuple:
    moves = []
    while state.phase != "finished":
        view = player_view(state)
        move, payload = player.next_move(view)
        moves.append((move, payload))
        if move == "ask":
            state, _ = rules.ask(state, payload["question"], answer_for(payload["question"]))
        elif move == "rate":
            state, _ = rules.rate(state, payload["rating"])
        else:
            state, _ = rules.guess(state, TOKENS.index(payload["image"]))
    return state, moves


def test_it_finds_the_secret_with_a_truthful_agent():
    from game.evidence import answer_on
    for secret in range(3):
        seen = perceive(scenes()[TOKENS[secret]], EXACT, np.random.default_rng(0))
        state, moves = play_to_the_end(started(exact(), secret=secret), game(secret),
                                       lambda q: answer_on(q, seen))
        assert state.won, moves
        assert all(r.rating in RATINGS for r in state.rounds)


def test_it_never_reads_the_secret_only_the_player_view():
    """Two games that differ only in which image is the secret, with the same answers: the player view is
    the same, and so is every move."""
    runs = [play_to_the_end(started(PRESETS["careful"], 5, secret), game(secret), lambda q: "no")[1]
            for secret in range(3)]
    assert runs[0] == runs[1] == runs[2]
    view = player_view(game(2))
    assert "secret" not in view and set(view["images"]) == set(TOKENS)


def test_questions_are_in_the_worlds_player_phrasings_and_parse():
    from vqa_agent.world.parser import parse_program
    player = started(PRESETS["careful"], 1)
    for _ in range(5):
        move, payload = player.next_move(player_view(game()))
        assert move == "ask" and parse_program(payload["question"]) is not None


def test_attention_on_the_asked_objects_agrees_and_elsewhere_disagrees():
    scene = perceive(scenes()["a"], EXACT, np.random.default_rng(0))
    cube, sphere = (o.pixel_coords for o in scene.objects)

    def attention_at(x, y):
        return {"kind": "attention", "payload": {"objects": [{"box": [x - 5, y - 5, x + 5, y + 5], "weight": 0.9}]}}
    target = [{"color": "red", "shape": "cube"}]
    assert agreement(attention_at(*cube[:2]), scene, target) == 1.0
    assert agreement(attention_at(*sphere[:2]), scene, target) == -1.0
    assert agreement(attention_at(*sphere[:2]), scene, [{"shape": "cylinder"}]) is None   # nothing to check
    # "more cubes than spheres?" is about both: attention on the cube alone covers half of it, and
    # lies on the asked objects only, so the fit is 1 x 1/2 (agreement 0)
    assert agreement(attention_at(*cube[:2]), scene, [{"shape": "cube"}, {"shape": "sphere"}]) == 0.0


def test_attention_that_leaves_an_asked_object_dark_fits_worse():
    """How many large things? Attention on both objects fits; on one of them only, it missed one."""
    scene = perceive(scenes()["a"], EXACT, np.random.default_rng(0))
    cube, sphere = (o.pixel_coords for o in scene.objects)
    box = lambda x, y, w: {"box": [x - 5, y - 5, x + 5, y + 5], "weight": w}
    both = {"kind": "attention", "payload": {"objects": [box(*cube[:2], 0.5), box(*sphere[:2], 0.5)]}}
    one = {"kind": "attention", "payload": {"objects": [box(*cube[:2], 0.98), box(*sphere[:2], 0.02)]}}
    assert agreement(both, scene, [{"size": "large"}]) == 1.0
    assert agreement(one, scene, [{"size": "large"}]) == 0.0      # on target 100%, looked at half of them


def test_related_answers_that_contradict_the_answer_are_incoherent():
    from game.evidence import coherent, qa_coherence, question_of
    small_cylinders = question_of("How many small cylinders are there?")
    assert coherent(small_cylinders, "2", question_of("How many cylinders are there?"), "1") is False
    assert coherent(small_cylinders, "2", question_of("How many cylinders are there?"), "3") is True
    assert coherent(small_cylinders, "2", question_of("How many small rubber cylinders are there?"), "3") is False
    assert coherent(small_cylinders, "0", question_of("Is there a small red cylinder?"), "yes") is False
    assert coherent(question_of("Is there a red cube?"), "yes", question_of("How many cubes are there?"), "0") is False
    assert coherent(small_cylinders, "2", question_of("How many red spheres are there?"), "5") is None   # unrelated sets
    assert coherent(small_cylinders, "2", question_of("What color is the cube?"), "red") is None
    assert coherent(small_cylinders, "3", question_of("How many objects are there?"), "2") is False
    more_cubes = question_of("Are there more cubes than balls?")
    assert coherent(more_cubes, "yes", question_of("Are there fewer cubes than balls?"), "yes") is False
    assert coherent(more_cubes, "yes", question_of("Are there more balls than rubber cubes?"), "yes") is True
    assert coherent(more_cubes, "no", question_of("Are there more rubber cubes than balls?"), "yes") is False
    assert coherent(more_cubes, "yes", question_of("How many cubes are there?"), "0") is False
    pairs = {"pairs": [{"question": "How many cylinders are there?", "answer": "1", "probability": 0.9},
                       {"question": "How many small rubber cylinders are there?", "answer": "1", "probability": 0.9},
                       {"question": "What color is the cube?", "answer": "red", "probability": 0.9}]}
    assert qa_coherence(pairs, small_cylinders, "2") == 0.5
    assert qa_coherence({"pairs": []}, small_cylinders, "2") is None


def test_an_image_whose_related_answers_contradict_the_answer_is_less_likely_the_secret():
    player = started(exact(explanation_weight=4.0))
    q = Question("count", [NounPhrase({"shape": "sphere"})])
    pairs = lambda n: [{"kind": "qa_pairs", "payload": {"pairs": [
        {"question": "How many rubber spheres are there?", "answer": n, "probability": 0.9}]}}]
    every = {"a": pairs("1"), "b": pairs("2"), "c": pairs("0")}        # the answer will be "1"
    belief = player._coherence_evidence(np.full(3, 1 / 3), q, "1", every)
    assert belief[0] == pytest.approx(belief[2]) and belief[1] < belief[0] / 2


def test_related_answers_and_stated_facts_are_checked_against_the_image():
    scene = perceive(scenes()["a"], EXACT, np.random.default_rng(0))
    pairs = {"kind": "qa_pairs", "payload": {"pairs": [
        {"question": "Is there a red cube?", "answer": "yes", "probability": 0.9},
        {"question": "How many spheres are there?", "answer": "2", "probability": 0.6}]}}
    assert agreement(pairs, scene, []) == 0.0          # one of two agrees
    assert facts_hold("There are no yellow cylinders.", scene) == 1.0      # a denial holds where absent
    assert agreement({"kind": "text", "payload": {"text": "There is a red cube."}}, scene, []) == 1.0
    assert agreement({"kind": "text", "payload": {"text": "There is a yellow cylinder."}}, scene, []) == -1.0
    words = {"kind": "words", "payload": {"words": [{"word": "red", "probability": 0.97, "score": 1.0},
                                                    {"word": "cylinder", "probability": 0.03, "score": 0.5}]}}
    assert agreement(words, scene, []) == 1.0


def test_explanations_for_the_secret_favour_the_images_where_they_hold():
    player = started(exact(explanation_weight=2.0))
    belief = player._secret_evidence(np.full(3, 1 / 3), [{"kind": "text", "payload": {"text": "There are two cylinders."}}])
    assert belief.argmax() == 2


def test_ignoring_explanations_means_they_change_nothing():
    player = started(PRESETS["ignores-explanations"], 0)
    state = game()
    move, payload = player.next_move(player_view(state))
    state, _ = rules.ask(state, payload["question"], "yes")
    view = player_view(state)
    view["rounds"][-1]["explanations"] = {"for_every_image": {t: [{"kind": "text", "payload": {"text": "a red cube"}}]
                                                              for t in TOKENS}, "for_the_secret": []}
    plain = player_view(state)
    other = SimulatedParticipant(PRESETS["ignores-explanations"], 0)
    other.start_game(player_view(game()), scenes())
    other.next_move(player_view(game()))
    assert player.next_move(view) == other.next_move(plain)


def test_perception_misses_and_confuses_with_its_rates():
    scene = scenes()["a"]
    never = perceive(scene, PerceptionErrors(1.0, 0.0, 1.0, 0.0), np.random.default_rng(0))
    assert never.objects[0].color in ("brown", "purple") and never.objects[1].color in ("cyan", "purple")
    blind = perceive(scene, PerceptionErrors(0.0, 0.0, 0.0, 1.0), np.random.default_rng(0))
    assert [o.material for o in blind.objects] == ["rubber", "metal"]
    with pytest.raises(ValueError):
        PerceptionErrors(miss_small=1.5)


def test_presets_span_people():
    assert set(PRESETS) >= {"careful", "hasty", "ignores-explanations", "over-trusting"}
    assert PRESETS["ignores-explanations"].explanation_weight == 0
    assert PRESETS["over-trusting"].trust_prior > PRESETS["careful"].trust_prior
    with pytest.raises(ValueError):
        ParticipantConfig(trust_prior=0.0)


def test_at_will_it_buys_explanations_in_its_share_of_rounds_and_never_when_ignoring_them():
    def bought(config, seed):
        player = SimulatedParticipant(config, seed)
        state, _ = rules.new_game("g", "p", settings_named("at-will", images=3), [10, 11, 12], TOKENS, 0, 0.0, True)
        player.start_game(player_view(state), scenes())
        move, payload = player.next_move(player_view(state))
        state, _ = rules.ask(state, payload["question"], "maybe")     # an answer no image explains: still unsure
        return player.next_move(player_view(state))[0] == "explain"
    assert all(bought(exact(buy_rate=1.0), s) for s in range(5))
    assert not any(bought(exact(buy_rate=0.0), s) for s in range(5))
    assert not any(bought(PRESETS["ignores-explanations"], s) for s in range(5))
    # the null (explanations change nothing: weight 0) still buys in its share of rounds
    assert all(bought(exact(buy_rate=1.0, explanation_weight=0.0), s) for s in range(5))
