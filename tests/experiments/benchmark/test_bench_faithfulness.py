"""Faithfulness tests (experiments/benchmark/faithfulness.py): hand-made cases with known answers first
(what an explanation mentions, question and scene edits, attention that moves, scenes rebuilt from
stated facts), then one run on the tiny agent, NLE model and world."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from explainers.attention import mask_to_rle
from experiments.benchmark.faithfulness import (EDIT_KINDS, INSERTIONS_PER_ITEM, EDITS_PER_ITEM, RANDOM_WORDS,
                                                attention_mass, describes, edit_scene, edited_region,
                                                faithfulness, input_reconstruction, insert_adjective,
                                                insert_random, mentions, moved, rebuild_scene, stated_objects,
                                                stated_predicates)
from experiments.benchmark.items import BenchItem, answer, load_items
from vqa_agent.world.facts import check_facts
from vqa_agent.world.parser import parse_program
from vqa_agent.world.programs import execute
from vqa_agent.world.questions import ADJECTIVES
from vqa_agent.world.render import RenderConfig, render
from vqa_agent.world.scene import SceneObject

from hand_scenes import FIVE_OBJECTS, hand_scene

torch.set_num_threads(1)
SCENE = hand_scene(FIVE_OBJECTS)   # 0 large red metal cube, 1 small blue sphere, 2 large blue cylinder, ...
SMALL = RenderConfig(width=160, height=120)


# --- what an explanation mentions --------------------------------------------------------------------

def test_an_explanation_naming_the_inserted_word_is_faithful_and_one_that_does_not_is_not():
    assert mentions("There is a red cube left of the sphere.", "red")
    assert not mentions("There is a cube left of the sphere.", "red")
    # synonyms of the world: the same value said with another of its words, nouns in either number
    assert mentions("The shiny ball is large.", "metallic")
    assert mentions("There are two balls.", "sphere")
    assert mentions("There are two big cubes.", "large")
    assert not mentions("There is a matte cube.", "metal")
    assert not mentions("There is a bigger cube.", "big")           # whole words only


def test_a_removed_object_is_mentioned_when_the_text_describes_something_it_fits():
    cube = SceneObject("cube", "red", "large", "metal", (0.0, 0.0, 0.5), 0.0)
    assert describes("There is a red cube.", cube)
    assert describes("There is no large shiny thing.", cube)
    assert not describes("There is a blue cube.", cube)             # "cube" alone is read inside "blue cube"
    assert not describes("There is a thing.", cube)                 # a bare "thing" fits every object
    assert not describes("There are two spheres.", cube)


# --- question edits ----------------------------------------------------------------------------------

def test_insert_adjective_keeps_the_question_parseable_and_adds_an_attribute_the_phrase_lacks():
    question = "How many large red cubes are there?"
    materials = set(ADJECTIVES["metal"]) | set(ADJECTIVES["rubber"])
    for seed in range(8):
        edited, word = insert_adjective(question, np.random.default_rng(seed))
        assert word in materials                      # size and color are taken: only material is left
        assert parse_program(edited) is not None
        assert edited.replace(word + " ", "", 1) == question
    edited, word = insert_adjective("Is the sphere left of the red cube?", np.random.default_rng(0))
    assert parse_program(edited) is not None and len(edited.split()) == 9
    # every noun phrase already has a size, a color and a material; no noun at all
    assert insert_adjective("Is there a large red metal cube?", np.random.default_rng(0)) is None
    assert insert_adjective("What is this?", np.random.default_rng(0)) is None


def test_insert_random_puts_one_word_of_the_world_anywhere():
    rng = np.random.default_rng(3)
    question = "How many cubes are there?"
    for _ in range(10):
        edited, word = insert_random(question, rng)
        assert word in RANDOM_WORDS
        words, said = re.findall(r"[a-z]+", edited), re.findall(r"[a-z]+", question)
        assert any(words[:k] + words[k + 1:] == said and words[k] == word for k in range(len(words)))


# --- scene edits and attention ------------------------------------------------------------------------

def test_edit_scene_changes_one_object_or_removes_it():
    rng = np.random.default_rng(0)
    scene, edit = edit_scene(SCENE, 0, "color", rng)
    assert edit["old"] == "red" and edit["new"] == scene.objects[0].color != "red"
    assert [o.color for o in scene.objects[1:]] == [o.color for o in SCENE.objects[1:]]
    assert SCENE.objects[0].color == "red"                         # the original is untouched
    scene, edit = edit_scene(SCENE, 1, "remove", rng)
    assert len(scene.objects) == 4 and edit["removed"] == {"size": "small", "color": "blue", "material": "rubber",
                                                           "shape": "sphere"}
    assert all(len(scene.relationships[r]) == 4 for r in scene.relationships)
    scene, edit = edit_scene(SCENE, 2, "size", rng)
    assert edit == {"kind": "size", "object": 2, "old": "large", "new": "small"}
    assert scene.objects[2].position[2] == pytest.approx(0.35)     # it rests on the ground
    # a small ball one unit from another cannot grow large: the two would touch
    close = hand_scene([("sphere", "red", "small", "rubber", 0, 0), ("sphere", "blue", "small", "rubber", 1.0, 0)])
    assert edit_scene(close, 0, "size", rng) is None
    assert edit_scene(close, 0, "color", rng) is not None
    with pytest.raises(ValueError, match="unknown edit kind"):
        edit_scene(SCENE, 0, "texture", rng)


def test_attention_moved_entirely_onto_the_edited_object_counts_as_moved():
    scene, edit = edit_scene(SCENE, 0, "color", np.random.default_rng(1))
    before, after = render(SCENE, SMALL), render(scene, SMALL)
    image = np.zeros((SMALL.height, SMALL.width, 3), np.uint8)
    item = BenchItem(0, "What color is the large cube?", "red", [], "query_color", "hand.png", SCENE, {}, image,
                     before.mask)
    region = edited_region(item, BenchItem(0, item.question, edit["new"], [], "query_color", "hand.png", scene, {},
                                           image, after.mask), edit)
    assert region.any() and (region == (after.mask == 0)).all()
    grid = [[0.0] * 4 for _ in range(3)]
    grid[0][0] = 1.0                                                  # the top left corner: no object there
    elsewhere = {"grid": grid, "objects": [{"weight": 1.0, "mask": mask_to_rle(after.mask == 1)}]}
    on_object = {"grid": grid, "objects": [{"weight": 1.0, "mask": mask_to_rle(region)}]}
    assert attention_mass(elsewhere, region) == pytest.approx(0.0)
    assert attention_mass(on_object, region) == pytest.approx(1.0)
    assert moved(attention_mass(elsewhere, region), attention_mass(on_object, region))
    assert not moved(attention_mass(on_object, region), attention_mass(on_object, region))
    # the grid alone, as drawn: its corner cell fades out before the object
    assert attention_mass(on_object, region, "grid") < 0.05
    # a removal is judged on where the object was
    scene, edit = edit_scene(SCENE, 0, "remove", np.random.default_rng(0))
    assert (edited_region(item, item, edit) == (before.mask == 0)).all()


# --- input reconstruction ----------------------------------------------------------------------------

def test_stated_objects_are_the_objects_the_facts_describe():
    assert stated_objects("There is a small purple block that has the same size as a green rubber block.") == [
        {"size": "small", "color": "purple", "shape": "cube"},
        {"color": "green", "material": "rubber", "shape": "cube"}]
    assert stated_objects("There is a cube. The cube is red.") == [{"shape": "cube", "color": "red"}]
    assert sorted(o["shape"] for o in stated_objects("There are three cubes, two spheres and one cylinder.")) == \
        ["cube"] * 3 + ["cylinder"] + ["sphere"] * 2
    assert stated_objects("There are no spheres.") == []
    # a number before a description counts; a later description merges into one of those it fits
    assert stated_objects("There are three metal spheres and there is a small blue metal sphere.") == [
        {"material": "metal", "shape": "sphere", "size": "small", "color": "blue"},
        {"material": "metal", "shape": "sphere"}, {"material": "metal", "shape": "sphere"}]


def test_a_rebuilt_scene_holds_exactly_what_the_explanation_states():
    rng = np.random.default_rng(0)
    text = "There are three cubes, two spheres and one cylinder."
    scene, rendering = rebuild_scene(text, SCENE, rng, SMALL)
    assert sorted(o.shape for o in scene.objects) == ["cube"] * 3 + ["cylinder"] + ["sphere"] * 2
    assert rendering.mask.max() == 5 and scene.camera == SCENE.camera
    text = "There is a large red cube. There are no spheres."
    scene, _ = rebuild_scene(text, SCENE, rng, SMALL)
    assert [(o.size, o.color, o.shape) for o in scene.objects] == [("large", "red", "cube")]
    assert all(f.holds for f in check_facts(text, scene))
    assert rebuild_scene("The answer is yes.", SCENE, rng, SMALL) is None     # states no fact
    # what a sentence says of a relation holds too, said or denied
    for said, expected in (("is", "yes"), ("is not", "no")):
        text = f"The rubber cube {said} to the right of the small gray metal cylinder."
        [predicate] = stated_predicates(text)
        assert predicate.question == "is the rubber cube to the right of the small gray metal cylinder?"
        for seed in range(3):
            scene, _ = rebuild_scene(text, SCENE, np.random.default_rng(seed), SMALL)
            assert execute(parse_program(predicate.question), scene) == expected


# --- the tests end to end on the tiny agent ----------------------------------------------------------

@pytest.fixture(scope="module")
def tiny(agent_world, tiny_agent_dir):
    from vqa_agent.agent import VQAAgent
    agent = VQAAgent.from_pretrained(tiny_agent_dir)
    items = load_items(agent_world, max_items=8, seed=0)
    return agent, items, answer(agent, items)


def _percent(value):
    return value is None or 0 <= value <= 100


def test_faithfulness_of_the_tiny_nle(tiny, tiny_nle_dir):
    from explainers import load_explainer
    agent, items, outputs = tiny
    nle = load_explainer("nle", agent, model=tiny_nle_dir)
    report = faithfulness(agent, nle, items, outputs, seed=0, progress=False)
    json.dumps(report)
    assert report["tests"] == ["counterfactual_text", "counterfactual_image", "input_reconstruction"]
    text = report["counterfactual_text"]
    assert text["insertions"] + text["skipped"] == len(items) * INSERTIONS_PER_ITEM * 2
    assert 0 <= text["unfaithful"] <= text["counterfactual"] <= text["insertions"]
    assert sum(r["insertions"] for r in text["by_kind"].values()) == text["insertions"]
    assert text["per_item"]["counterfactual"] <= len(items)
    image = report["counterfactual_image"]
    assert set(image["by_kind"]) == set(EDIT_KINDS)
    assert image["edits"] + image["skipped"] == len(items) * EDITS_PER_ITEM
    assert 0 <= image["unfaithful"] <= image["counterfactual"] <= image["edits"]
    rebuilt = report["input_reconstruction"]
    assert rebuilt["reconstructed"] + rebuilt["no_reasons"] + rebuilt["unbuildable"] == len(items)
    assert 0 <= rebuilt["unfaithful"] <= rebuilt["reconstructed"]
    for test in (text, image, rebuilt):
        assert test["definitions"] and all(_percent(v) for k, v in test.items() if k.startswith("pct_"))
    assert report["headline"]["text_pct_total_unfaith"] == text["pct_total_unfaith"]
    assert report["reference"]["counterfactual_pct_total_unfaith"] == [37, 59]


def test_faithfulness_of_attention_and_its_sham(tiny):
    from explainers import load_explainer
    agent, items, outputs = tiny
    for name in ("attention", "attention-shuffled"):
        report = faithfulness(agent, load_explainer(name, agent), items, outputs, seed=0, progress=False)
        json.dumps(report)
        assert report["tests"] == ["counterfactual_image"]
        image = report["counterfactual_image"]
        assert image["judged_by"] == "attention" and image["edits"] + image["skipped"] == len(items) * EDITS_PER_ITEM
        assert 0 <= image["moved"] <= image["edits"] and _percent(image["pct_moved"])
        assert image["pct_moved"] + image["pct_not_moved"] == pytest.approx(100)
        assert 0 <= image["mean_abs_change"] <= 1
    with pytest.raises(ValueError, match="kind text"):
        input_reconstruction(agent, load_explainer("attention", agent), items, outputs, progress=False)
    with pytest.raises(ValueError, match="one output per item"):
        faithfulness(agent, load_explainer("attention", agent), items, outputs[:-1], progress=False)
