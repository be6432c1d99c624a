"""Automatic grading on hand-made cases: a rendered hand-placed scene and agent outputs written by hand."""
import numpy as np
import pytest

from explainers.attention import attention_payload, mask_to_rle, rle_to_mask
from explainers.base import Explanation
from explainers.grading import (EXPLANATION_SCALE, GroundTruth, check_facts, grade_answer, grade_explanation,
                                grade_text)
from explainers.introspect import introspect_payload
from hand_scenes import FIVE_OBJECTS, hand_scene
from vqa_agent.agent import AgentOutput, Proposal
from vqa_agent.world.render import render

# FIVE_OBJECTS: 0 large red metal cube, 1 small blue rubber sphere, 2 large blue rubber cylinder,
#               3 small red rubber sphere, 4 small yellow metal cube


@pytest.fixture(scope="module")
def scene_and_masks():
    scene = hand_scene(FIVE_OBJECTS)
    return scene, render(scene).mask


def output_attending(masks, weights: dict[int, float], answer: str = "red", top_k=None) -> AgentOutput:
    """An agent output whose proposals are exactly the scene's objects, attended with `weights`."""
    proposals = []
    for k in range(int(masks.max()) + 1):
        mask = masks == k
        ys, xs = np.nonzero(mask)
        proposals.append(Proposal(box=(xs.min(), ys.min(), xs.max() + 1, ys.max() + 1), score=0.9, mask=mask,
                                  attention=weights.get(k, 0.0), attributes={}))
    grid = np.full((15, 20), 1 / 300, np.float32)
    return AgentOutput(question="q", answer=answer, probability=0.9, top_k=top_k or [(answer, 0.9)],
                       spatial_attention=grid, proposals=proposals, concept_probabilities={},
                       question_embedding=np.zeros(4, np.float32))


def attention_explanation(output) -> Explanation:
    return Explanation("attention", "attention", attention_payload(output))


def test_masks_survive_run_length_coding(scene_and_masks):
    _, masks = scene_and_masks
    for k in range(5):
        assert np.array_equal(rle_to_mask(mask_to_rle(masks == k)), masks == k)
    corner = np.zeros((3, 4), bool)
    corner[0, 0] = True
    assert mask_to_rle(corner)["counts"][:2] == [0, 1]
    assert np.array_equal(rle_to_mask(mask_to_rle(corner)), corner)


def test_attention_on_the_queried_object_is_on_point_and_elsewhere_wrong(scene_and_masks):
    scene, masks = scene_and_masks
    truth = GroundTruth.for_question("What color is the large cube?", scene, masks)
    assert truth.answer == "red" and truth.evidence() == [0]
    right = grade_explanation(attention_explanation(output_attending(masks, {0: 0.9, 1: 0.1})), None, truth)
    wrong = grade_explanation(attention_explanation(output_attending(masks, {2: 0.8, 3: 0.2})), None, truth)
    split = grade_explanation(attention_explanation(output_attending(masks, {0: 0.55, 2: 0.45})), None, truth)
    assert right.label == "Exactly on-point"
    assert wrong.label == "Completely wrong"
    assert split.label == "Mostly on-point"


def test_spatial_attention_alone_is_graded_by_its_mass_on_the_evidence(scene_and_masks):
    scene, masks = scene_and_masks
    truth = GroundTruth.for_question("What color is the large cube?", scene, masks)
    output = output_attending(masks, {})
    output.spatial_attention = np.zeros((15, 20), np.float32)
    ys, xs = np.nonzero(masks == 0)
    output.spatial_attention[int(ys.mean()) * 15 // masks.shape[0], int(xs.mean()) * 20 // masks.shape[1]] = 1
    output.proposals = []
    assert grade_explanation(attention_explanation(output), None, truth).rank <= 1


def test_an_answer_about_absence_has_no_evidence_to_attend(scene_and_masks):
    scene, masks = scene_and_masks
    truth = GroundTruth.for_question("Is there a green cylinder?", scene, masks)
    grade = grade_explanation(attention_explanation(output_attending(masks, {0: 1.0})), None, truth)
    assert grade.label == "Indifferent"


def test_answers_on_the_three_point_scale(scene_and_masks):
    scene, masks = scene_and_masks
    count = GroundTruth.for_question("How many spheres are there?", scene, masks)
    assert grade_answer(output_attending(masks, {}, "2"), count).label == "correct"
    assert grade_answer(output_attending(masks, {}, "3"), count).label == "somewhat correct"
    assert grade_answer(output_attending(masks, {}, "5"), count).label == "completely wrong"
    color = GroundTruth.for_question("What color is the large cube?", scene, masks)
    assert grade_answer(output_attending(masks, {}, "blue", [("blue", 0.5), ("red", 0.4)]), color).label == \
        "somewhat correct"
    assert grade_answer(output_attending(masks, {}, "blue", [("blue", 0.9), ("red", 0.05)]), color).label == \
        "completely wrong"
    assert grade_answer(output_attending(masks, {}), GroundTruth.for_question("why is the sky blue", scene, masks)).label \
        == "ungradable"


def test_a_false_fact_in_a_text_explanation_grades_wrong(scene_and_masks):
    scene, masks = scene_and_masks
    truth = GroundTruth.for_question("What color is the large cube?", scene, masks)
    assert grade_text("The large cube is red.", truth).label == "Exactly on-point"
    assert grade_text("The large cube is blue.", truth).label == "Completely wrong"
    assert grade_text("There is a large red cube and a green sphere.", truth).rank >= 3
    assert grade_text("There are two spheres.", truth).label in EXPLANATION_SCALE[1:3]


@pytest.mark.parametrize("text, holds", [
    ("There are two spheres and one cylinder.", [True, True]),
    ("There are three spheres.", [False]),
    ("There is no green thing.", [True]),
    ("There is no red sphere.", [False]),
    ("The small sphere left of the large cylinder is blue.", [True, True]),
    ("There are two red things: a cube and a sphere.", [True, True, True]),
    ("There are two cubes and no cylinder.", [True, False]),
    ("There is a large cylinder and no green thing.", [True, True]),
])
def test_stated_facts_are_checked_on_the_scene(scene_and_masks, text, holds):
    scene, _ = scene_and_masks
    assert [f.holds for f in check_facts(text, scene)] == holds


def test_introspection_names_what_the_agent_attended(scene_and_masks):
    scene, masks = scene_and_masks
    output = output_attending(masks, {0: 0.7, 3: 0.25, 1: 0.05})
    for k, p in enumerate(output.proposals):
        o = scene.objects[k]
        p.attributes = {a: (getattr(o, a), 0.9) for a in ("shape", "color", "size", "material")}
    payload = introspect_payload(output)
    assert payload["text"] == "I answered red looking at a large red metal cube (70%) and a small red rubber sphere (25%)."
    assert [o["proposal"] for o in payload["objects"]] == [0, 3]
    truth = GroundTruth.for_question("What color is the large cube?", scene, masks)
    assert grade_text(payload["text"], truth).rank <= 2
    output.proposals[0].attributes["color"] = ("green", 0.9)   # the agent saw the cube wrongly
    assert grade_text(introspect_payload(output)["text"], truth).rank >= 3
