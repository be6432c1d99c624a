"""Question generation: well-posed, answer-balanced, phrased with synonyms, covering CLEVR's nine types."""
from collections import Counter, defaultdict

import numpy as np
import pytest

from vqa_agent.world.programs import answer_type, execute
from vqa_agent.world.questions import FAMILIES, QuestionGenerator
from vqa_agent.world.scene import generate_scene

CLEVR_TYPES = {"zero_hop", "one_hop", "two_hop", "three_hop", "single_and", "single_or", "same_relate",
               "compare_integer", "comparison"}


@pytest.fixture(scope="module")
def generated():
    rng = np.random.default_rng(3)
    generator = QuestionGenerator()
    scenes = [generate_scene(rng, index=i) for i in range(400)]
    return scenes, [(scene, q) for scene in scenes for q in generator.for_scene(scene, 10, rng)]


def test_every_clevr_type_and_family_is_generated(generated):
    _, pairs = generated
    assert {q.type for _, q in pairs} == CLEVR_TYPES
    assert {q.family for _, q in pairs} == {f.name for f in FAMILIES}


def test_answers_are_the_programs_answers(generated):
    _, pairs = generated
    for scene, q in pairs:
        assert execute(q.program, scene) == q.answer


def test_no_answer_dominates_a_family(generated):
    _, pairs = generated
    per_family = defaultdict(Counter)
    for _, q in pairs:
        per_family[q.family][q.answer] += 1
    for family, counts in per_family.items():
        total = sum(counts.values())
        top, n = counts.most_common(1)[0]
        n_answers = len(counts)
        # a yes/no family stays near 50/50, an attribute or count family far below any one answer
        limit = 0.62 if n_answers == 2 else 0.4
        assert n / total <= limit, (family, counts)


def test_all_answer_types_appear(generated):
    _, pairs = generated
    assert {answer_type(q.answer) for _, q in pairs} == {"yes/no", "count", "attribute"}


def test_synonyms_are_used(generated):
    _, pairs = generated
    text = " ".join(q.question.lower() for _, q in pairs)
    for word in ("ball", "sphere", "block", "cube", "tiny", "small", "big", "large", "shiny", "metallic",
                 "matte", "rubber", "to the left of", "behind", "in front of"):
        assert f" {word}" in text, word


def test_no_duplicate_questions_per_image(generated):
    _, pairs = generated
    per_image = Counter((scene.index, q.question) for scene, q in pairs)
    assert max(per_image.values()) == 1


def test_player_questions_are_generated(generated):
    _, pairs = generated
    texts = {q.question for _, q in pairs if q.family.startswith("player_")}
    assert any(t.startswith("Is there a") for t in texts)
    assert any(t in ("What is in the image?", "What is in the picture?", "What do you see?") for t in texts)
    assert any(" made of?" in t for t in texts)


# --- CLEVR's 90 families, phrasings, held-out phrasings ---------------------------------------------

from hand_scenes import hand_scene  # noqa: E402
from vqa_agent.world.parser import parse  # noqa: E402
from vqa_agent.world.programs import program_key  # noqa: E402
from vqa_agent.world.questions import (HELDOUT_PHRASINGS, PHRASING_BY_ID, PHRASINGS,  # noqa: E402
                                       phrasings_for, render_question)

# Eight objects placed by hand (rightward, backward), so relations are plain: every family finds
# well-posed questions here.
EIGHT_OBJECTS = hand_scene([
    ("cube", "red", "large", "metal", -3.0, 0.0),
    ("sphere", "blue", "small", "rubber", -1.5, 1.6),
    ("cylinder", "green", "large", "rubber", 0.0, -1.2),
    ("sphere", "gray", "small", "metal", 1.5, 0.8),
    ("sphere", "yellow", "large", "rubber", 3.0, 2.4),
    ("cylinder", "red", "small", "rubber", -4.5, -2.4),
    ("cube", "blue", "small", "metal", 4.5, -1.0),
    ("sphere", "purple", "large", "metal", -0.5, 3.5),
])


def test_clevrs_ninety_families_and_the_players_are_there():
    clevr = [f for f in FAMILIES if not f.name.startswith("player_")]
    assert len(clevr) == 90
    assert {f.type for f in clevr} == CLEVR_TYPES
    per_type = Counter(f.type for f in clevr)
    assert per_type == {"zero_hop": 6, "one_hop": 6, "two_hop": 6, "three_hop": 6, "single_and": 5,
                        "single_or": 8, "same_relate": 28, "compare_integer": 9, "comparison": 16}


@pytest.mark.parametrize("family", FAMILIES, ids=[f.name for f in FAMILIES])
def test_every_family_generates_executes_and_parses_back_on_a_hand_made_scene(family):
    generator = QuestionGenerator()
    rng = np.random.default_rng(0)
    made = [q for q in (generator.generate(EIGHT_OBJECTS, family, rng) for _ in range(20)) if q is not None]
    assert made, family.name
    for q in made[:4]:
        assert execute(q.program, EIGHT_OBJECTS) == q.answer
        for phrasing in phrasings_for(q.tree):  # every phrasing of the tree, not just the one drawn
            text = phrasing.render(q.tree, rng)
            assert program_key(parse(text).program()) == program_key(q.program), (phrasing.id, text)


def test_clevr_phrasings_the_issue_names_are_generated():
    rng = np.random.default_rng(1)
    generator = QuestionGenerator()
    texts = " ".join(q.question for _ in range(30)
                     for q in generator.for_scene(EIGHT_OBJECTS, 40, rng)).lower()
    for phrase in ("what number of", "how many other", "are there any other things that", "anything else",
                   "is the number of", "the same as the number of", "have the same color as", "what is the material of",
                   "is what color", "; what is its", "; how many", " it?", "another"):
        assert phrase in texts, phrase


def test_held_out_phrasings_are_whole_phrasings_that_leave_every_kind_trainable():
    assert HELDOUT_PHRASINGS <= set(PHRASING_BY_ID)
    for kind, phrasings in PHRASINGS.items():
        assert any(p.id not in HELDOUT_PHRASINGS for p in phrasings), kind


def test_held_out_phrasings_are_never_drawn_when_not_allowed(generated):
    scenes, _ = generated
    rng = np.random.default_rng(7)
    generator = QuestionGenerator()
    training = [q for scene in scenes[:150] for q in generator.for_scene(scene, 10, rng, allow_heldout=False)]
    assert training and not any(q.heldout_phrasing or q.phrasing in HELDOUT_PHRASINGS for q in training)
    open_questions = [q for scene in scenes[:150] for q in generator.for_scene(scene, 10, rng)]
    assert any(q.heldout_phrasing for q in open_questions)
    assert all(q.heldout_phrasing == (q.phrasing in HELDOUT_PHRASINGS) for q in open_questions)
    for q in open_questions[:200]:  # a tree with a held-out phrasing also has a trainable one
        text, phrasing = render_question(q.tree, rng, HELDOUT_PHRASINGS)
        assert phrasing not in HELDOUT_PHRASINGS and program_key(parse(text).program()) == program_key(q.program)
