"""Reference explanations on a hand-placed scene (every sentence worked out by hand), then a sweep over
random scenes and generated questions for crashes, completeness and the answer word."""
import re

import numpy as np
import pytest

from hand_scenes import FIVE_OBJECTS, hand_scene
from vqa_agent.world.explanations import evidence_objects, explain
from vqa_agent.world.programs import IllPosed, ProgramBuilder, ProgramError, execute, program_from_json
from vqa_agent.world.questions import ADJECTIVES, NOUNS, QuestionGenerator
from vqa_agent.world.questions import NounPhrase as NP
from vqa_agent.world.questions import Question as Q
from vqa_agent.world.scene import generate_scene

# FIVE_OBJECTS (see hand_scenes.py) plus a small green metal sphere at (3, -1)
SCENE = hand_scene(FIVE_OBJECTS + [("sphere", "green", "small", "metal", 3, -1)])
RED_CUBE = NP({"color": "red", "shape": "cube"})
BLUE_SPHERE = NP({"color": "blue", "shape": "sphere"})
RED_SPHERE = NP({"color": "red", "shape": "sphere"})
CYLINDER = NP({"shape": "cylinder"})

SHAPE_WORDS = {shape: NOUNS[shape] for shape in ("cube", "sphere", "cylinder")}
MATERIAL_WORDS = ("metal", "metallic", "shiny", "rubber", "matte")
SIZE_WORDS = ("large", "big", "small", "tiny")

# (question, program, answer, evidence, the canonical explanation)
CASES = [
    ("What color is the large cube left of the blue sphere?",
     Q("query", [NP({"size": "large", "shape": "cube"}, relations=[("left", BLUE_SPHERE)])], attr="color"),
     "red", [0, 1], "The large cube left of the blue sphere is red."),
    ("What shape is the yellow thing?", Q("query", [NP({"color": "yellow"})], attr="shape"),
     "cube", [4], "The yellow thing is a cube."),
    ("How many red things are there?", Q("count", [NP({"color": "red"})]),
     "2", [0, 3], "There are a red cube and a red sphere."),
    ("How many metal things are there?", Q("count", [NP({"material": "metal"})]),
     "3", [0, 4, 5], "There are two metal cubes and a metal sphere."),
    ("How many things are left of the blue sphere?", Q("count", [NP({}, relations=[("left", BLUE_SPHERE)])]),
     "2", [0, 1, 4], "There are two cubes left of the blue sphere."),
    ("Are there any spheres behind the cylinder?",
     Q("exist", [NP({"shape": "sphere"}, relations=[("behind", CYLINDER)])]),
     "no", [2], "There is no sphere behind the cylinder."),
    ("Are there any cubes behind the cylinder?",
     Q("exist", [NP({"shape": "cube"}, relations=[("behind", CYLINDER)])]),
     "yes", [2, 4], "There is a cube behind the cylinder."),
    ("Is the number of spheres greater than the number of cubes?",
     Q("compare_count", [NP({"shape": "sphere"}), NP({"shape": "cube"})], op="more"),
     "yes", [0, 1, 3, 4, 5], "There are three spheres and two cubes."),
    ("How many things are left of the blue sphere and in front of the yellow cube?",
     Q("count", [NP({}, relations=[("left", BLUE_SPHERE), ("front", NP({"color": "yellow"}))])]),
     "1", [0, 1, 4], "There is a cube left of the blue sphere and in front of the yellow cube."),
    ("Are there fewer small things than large things?",
     Q("compare_count", [NP({"size": "small"}), NP({"size": "large"})], op="fewer"), "no", [0, 1, 2, 3, 4, 5],
     "There are four small things: three spheres and a cube. There are two large things: a cube and a cylinder."),
    ("Is the red cube the same size as the blue sphere?", Q("compare_attr", [RED_CUBE, BLUE_SPHERE], attr="size"),
     "no", [0, 1], "The red cube is large and the blue sphere is small."),
    ("Is the red cube the same material as the yellow cube?",
     Q("compare_attr", [RED_CUBE, NP({"color": "yellow"})], attr="material"),
     "yes", [0, 4], "The red cube and the yellow cube are both metal."),
    ("How many other things are the same color as the cylinder?", Q("count", [NP({}, same=("color", CYLINDER))]),
     "1", [1, 2], "The cylinder and the sphere are both blue."),
    ("Are there other metal things of the same color as the cylinder?",
     Q("exist", [NP({"material": "metal"}, same=("color", CYLINDER))]),
     "no", [2], "There is no other metal thing that is blue like the cylinder."),
    ("How many things are red cubes or spheres?", Q("count_or", [RED_CUBE, NP({"shape": "sphere"})]),
     "4", [0, 1, 3, 5], "There are three spheres and a red cube."),
    ("How many things are green cubes or red things?",
     Q("count_or", [NP({"color": "green", "shape": "cube"}), NP({"color": "red"})]),
     "2", [0, 3], "There are a red cube, a red sphere and no green cube."),
    ("What is in the image?", Q("most_common", [NP()], attr="shape"),
     "sphere", [0, 1, 2, 3, 4, 5], "There are three spheres, two cubes and one cylinder."),
    ("Is the red cube left of the blue sphere?", Q("relation_check", [RED_CUBE, BLUE_SPHERE], op="left"),
     "yes", [0, 1], "The red cube is left of the blue sphere."),
    ("Is the red sphere left of the blue sphere?", Q("relation_check", [RED_SPHERE, BLUE_SPHERE], op="left"),
     "no", [1, 3], "The red sphere is not left of the blue sphere."),
]


@pytest.mark.parametrize("question,tree,answer,evidence,canonical", CASES, ids=[c[0] for c in CASES])
def test_canonical_explanation_and_evidence(question, tree, answer, evidence, canonical):
    program = tree.program()
    assert execute(program, SCENE) == answer
    assert evidence_objects(program, SCENE) == evidence
    texts = explain(program, SCENE, np.random.default_rng(0))
    assert texts[0] == canonical


@pytest.mark.parametrize("question,tree,answer,evidence,canonical", CASES, ids=[c[0] for c in CASES])
def test_paraphrases_are_distinct_complete_sentences(question, tree, answer, evidence, canonical):
    texts = explain(tree.program(), SCENE, np.random.default_rng(1), n=10)
    assert 1 <= len(texts) <= 10 and len(set(texts)) == len(texts)
    for text in texts:
        assert text[0].isupper() and text.endswith(".") and "  " not in text
        for index in evidence:  # completeness: every evidence object is named by its shape
            assert _mentions(text, SHAPE_WORDS[SCENE.objects[index].shape]), (text, index)


def test_one_hop_query_names_anchor_and_target_and_varies_synonyms():
    tree = Q("query", [NP({"shape": "cube", "size": "large"}, relations=[("left", BLUE_SPHERE)])], attr="color")
    texts = explain(tree.program(), SCENE, np.random.default_rng(2), n=10)
    assert len(texts) == 10
    for text in texts:
        assert _mentions(text, ("cube", "block")) and _mentions(text, ("sphere", "ball")) and "red" in text
    assert any("block" in t for t in texts) and any("ball" in t for t in texts)
    assert any("to the left of" in t for t in texts)


def test_only_relevant_attributes_are_mentioned():
    # the question filters on color only: no size or material word may appear in any paraphrase
    for tree in (Q("count", [NP({"color": "red"})]), Q("exist", [NP({"color": "blue"})]),
                 Q("compare_attr", [RED_CUBE, BLUE_SPHERE], attr="color")):
        for text in explain(tree.program(), SCENE, np.random.default_rng(3)):
            assert not _mentions(text, MATERIAL_WORDS + SIZE_WORDS), text
    # a queried attribute appears; an unasked one does not
    for text in explain(Q("query", [RED_CUBE], attr="material").program(), SCENE, np.random.default_rng(4)):
        assert _mentions(text, ADJECTIVES["metal"]) and not _mentions(text, SIZE_WORDS), text


def test_numerals_and_empty_sets():
    texts = explain(Q("count", [NP({"material": "metal"})]).program(), SCENE, np.random.default_rng(5))
    assert all("two" in t for t in texts)
    assert any(t.startswith("There are three metal ") for t in texts)  # "three metal things: two cubes and a sphere"
    texts = explain(Q("count", [NP({"color": "green", "shape": "cube"})]).program(), SCENE, np.random.default_rng(5))
    assert texts[0] == "There is no green cube."
    assert set(texts) <= {"There is no green cube.", "There is no green block.",
                          "There are no green cubes.", "There are no green blocks."}


def test_negative_relation_check_can_name_the_opposite_relation():
    tree = Q("relation_check", [RED_SPHERE, BLUE_SPHERE], op="left")
    texts = explain(tree.program(), SCENE, np.random.default_rng(6))
    assert any(re.search(r"right of the blue (sphere|ball), not", t) for t in texts)


def test_deterministic_for_a_seed():
    for _, tree, *_ in CASES:
        program = tree.program()
        assert explain(program, SCENE, np.random.default_rng(7)) == explain(program, SCENE, np.random.default_rng(7))
    assert len(explain(CASES[0][1].program(), SCENE, np.random.default_rng(7), n=1)) == 1


def test_works_from_clevr_json_programs():
    # CLEVR v1.0 format: "How many large red things are behind the cylinder?" (side_inputs is the older name)
    program = program_from_json([
        {"function": "scene", "inputs": [], "value_inputs": []},
        {"function": "filter_shape", "inputs": [0], "value_inputs": ["cylinder"]},
        {"function": "unique", "inputs": [1], "value_inputs": []},
        {"function": "relate", "inputs": [2], "value_inputs": ["front"]},
        {"type": "filter_color", "inputs": [3], "side_inputs": ["red"]},
        {"function": "count", "inputs": [4], "value_inputs": []},
    ])
    assert execute(program, SCENE) == "2"
    assert evidence_objects(program, SCENE) == [0, 2, 3]
    texts = explain(program, SCENE, np.random.default_rng(0))
    assert texts[0] == "There are a red cube and a red sphere in front of the cylinder."


def test_ill_posed_and_malformed_programs_raise():
    not_unique = Q("query", [NP({"shape": "sphere"})], attr="color").program()
    with pytest.raises(IllPosed):
        explain(not_unique, SCENE, np.random.default_rng(0))
    with pytest.raises(IllPosed):
        evidence_objects(not_unique, SCENE)
    b = ProgramBuilder()
    b.scene_filter({"color": "red"})
    with pytest.raises(ProgramError):  # ends in a set, not an answer
        explain(b.nodes, SCENE, np.random.default_rng(0))


def test_sweep_over_generated_questions():
    """200 random scenes: explain never crashes, names every evidence object's shape and, for attribute
    answers, the answer."""
    generator = QuestionGenerator()
    families = set()
    for seed in range(200):
        rng = np.random.default_rng(seed)
        scene = generate_scene(rng)
        for q in generator.for_scene(scene, 6, rng):
            families.add(q.family)
            evidence = evidence_objects(q.program, scene)
            texts = explain(q.program, scene, rng, n=5)
            assert 1 <= len(texts) <= 5 and len(set(texts)) == len(texts)
            for text in texts:
                assert text[0].isupper() and text.endswith(".") and "  " not in text, text
                for index in evidence:
                    assert _mentions(text, SHAPE_WORDS[scene.objects[index].shape]), (q.question, text, index)
                if q.answer in ADJECTIVES or q.answer in NOUNS:
                    assert _mentions(text, ADJECTIVES.get(q.answer) or NOUNS[q.answer]), (q.question, q.answer, text)
    assert len(families) >= 25  # the sweep reached (nearly) every family


def _mentions(text: str, words) -> bool:
    """Whether any of the words (or its plural) occurs as a word in the text."""
    return any(re.search(rf"\b{w}(s|es)?\b", text, re.IGNORECASE) for w in words)
