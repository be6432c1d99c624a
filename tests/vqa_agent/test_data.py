"""Training data: ground-truth boxes from masks and the answer sets used to supervise attention."""
import numpy as np

from vqa_agent.data import answer_set, ground_truth_boxes
from vqa_agent.world.clevr_io import scene_to_json
from vqa_agent.world.programs import program_to_json
from vqa_agent.world.questions import NounPhrase as NP
from vqa_agent.world.questions import Question as Q
from hand_scenes import FIVE_OBJECTS, hand_scene

SCENE = scene_to_json(hand_scene(FIVE_OBJECTS))


def program(question):
    return program_to_json(question.program())


def test_answer_set_of_counts_exists_and_queries():
    assert answer_set(program(Q("count", [NP({"color": "red"})])), SCENE) == {0, 3}
    assert answer_set(program(Q("exist", [NP({"color": "green"})])), SCENE) == set()
    assert answer_set(program(Q("query", [NP({"shape": "cylinder"})], attr="color")), SCENE) == {2}


def test_no_answer_set_for_comparisons_or_ill_posed_questions():
    compare = Q("compare_count", [NP({"shape": "cube"}), NP({"shape": "sphere"})], op="more")
    assert answer_set(program(compare), SCENE) is None
    assert answer_set(program(Q("query", [NP({"shape": "sphere"})], attr="color")), SCENE) is None


def test_ground_truth_boxes_cover_each_objects_pixels():
    mask = np.full((10, 20), -1)
    mask[2:5, 3:8] = 0
    mask[6:9, 10:12] = 1
    boxes = ground_truth_boxes(mask, 3, scale_x=0.5, scale_y=1.0)
    assert boxes[0].tolist() == [1.5, 2, 4, 5]
    assert boxes[1].tolist() == [5, 6, 6, 9]
    assert boxes[2].tolist() == [0, 0, 0, 0]  # an object with no visible pixel
