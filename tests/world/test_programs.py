"""The executor on a hand-placed scene, with every answer worked out by hand (one case per CLEVR type)."""
import pytest

from hand_scenes import FIVE_OBJECTS, hand_scene
from vqa_agent.world.programs import (IllPosed, ProgramError, execute, program_from_json, program_to_json,
                                      trace, validate)
from vqa_agent.world.questions import NounPhrase as NP
from vqa_agent.world.questions import Question as Q

SCENE = hand_scene(FIVE_OBJECTS)  # positions are listed in hand_scenes.py
YELLOW_CUBE = NP({"color": "yellow", "shape": "cube"})
BLUE_SPHERE = NP({"color": "blue", "shape": "sphere"})
LARGE_RIGHT_OF_YELLOW_CUBE = NP({"size": "large"}, relations=[("right", YELLOW_CUBE)])   # the cylinder
BEHIND_THAT = NP({}, relations=[("behind", LARGE_RIGHT_OF_YELLOW_CUBE)])                  # the yellow cube

CASES = [
    # zero hop
    ("how many spheres", Q("count", [NP({"shape": "sphere"})]), "2"),
    ("how many red things", Q("count", [NP({"color": "red"})]), "2"),
    ("any green things", Q("exist", [NP({"color": "green"})]), "no"),
    ("color of the cylinder", Q("query", [NP({"shape": "cylinder"})], attr="color"), "blue"),
    ("material of the large cube", Q("query", [NP({"size": "large", "shape": "cube"})], attr="material"), "metal"),
    # one hop: left of the blue sphere are the red cube and the yellow cube
    ("things left of blue sphere", Q("count", [NP({}, relations=[("left", BLUE_SPHERE)])]), "2"),
    ("sphere in front of blue sphere", Q("query", [NP({"shape": "sphere"}, relations=[("front", BLUE_SPHERE)])],
                                         attr="color"), "red"),
    # two hop: the large thing right of the yellow cube is the cylinder; behind it is the yellow cube
    ("count behind the large thing", Q("count", [BEHIND_THAT]), "1"),
    ("shape behind the large thing", Q("query", [BEHIND_THAT], attr="shape"), "cube"),
    # three hop: left of the yellow cube is only the red cube
    ("three hop", Q("query", [NP({}, relations=[("left", BEHIND_THAT)])], attr="color"), "red"),
    # single and: left of the cylinder {0,1,3,4} and in front of the yellow cube {0,1,2,3}
    ("single and", Q("count", [NP({}, relations=[("left", NP({"shape": "cylinder"})), ("front", YELLOW_CUBE)])]), "3"),
    # single or: red {0,3} or sphere {1,3}
    ("single or", Q("count_or", [NP({"color": "red"}), NP({"shape": "sphere"})]), "3"),
    # same relate
    ("same color as blue sphere", Q("count", [NP({}, same=("color", BLUE_SPHERE))]), "1"),
    ("same material as large cube", Q("count", [NP({}, same=("material", NP({"size": "large", "shape": "cube"})))]), "1"),
    ("other thing same size as cylinder", Q("query", [NP({}, same=("size", NP({"shape": "cylinder"})))], attr="shape"), "cube"),
    # compare integer
    ("more spheres than cylinders", Q("compare_count", [NP({"shape": "sphere"}), NP({"shape": "cylinder"})], op="more"), "yes"),
    ("same number cubes and spheres", Q("compare_count", [NP({"shape": "cube"}), NP({"shape": "sphere"})], op="equal"), "yes"),
    ("fewer cylinders than red things", Q("compare_count", [NP({"shape": "cylinder"}), NP({"color": "red"})], op="fewer"), "yes"),
    # comparison
    ("cylinder same color as blue sphere", Q("compare_attr", [NP({"shape": "cylinder"}), BLUE_SPHERE], attr="color"), "yes"),
    ("large cube same size as yellow cube", Q("compare_attr", [NP({"size": "large", "shape": "cube"}), YELLOW_CUBE], attr="size"), "no"),
    # player questions
    ("cylinder right of blue sphere", Q("relation_check", [NP({"shape": "cylinder"}), BLUE_SPHERE], op="right"), "yes"),
    ("cylinder left of blue sphere", Q("relation_check", [NP({"shape": "cylinder"}), BLUE_SPHERE], op="left"), "no"),
    ("most common material", Q("most_common", [NP()], attr="material"), "rubber"),
]


@pytest.mark.parametrize("name,question,answer", CASES, ids=[c[0] for c in CASES])
def test_hand_computed_answers(name, question, answer):
    assert execute(question.program(), SCENE) == answer


@pytest.mark.parametrize("question", [
    Q("query", [NP({"shape": "sphere"})], attr="color"),                 # two spheres
    Q("query", [NP({"shape": "cube", "color": "green"})], attr="size"),   # no such cube
    Q("most_common", [NP()], attr="shape"),                               # two cubes, two spheres: a tie
    Q("relation_check", [NP({"shape": "cube"}), BLUE_SPHERE], op="left"),  # "the cube" is not one object
])
def test_ill_posed_questions_are_refused(question):
    with pytest.raises(IllPosed):
        execute(question.program(), SCENE)


def test_trace_gives_every_intermediate_result():
    outputs = trace(Q("count", [NP({"color": "red"})]).program(), SCENE)
    assert outputs == [frozenset(range(5)), frozenset({0, 3}), 2]


def test_clevr_json_programs_of_both_releases_run():
    v10 = [{"function": "scene", "inputs": [], "value_inputs": []},
           {"function": "filter_shape", "inputs": [0], "value_inputs": ["cube"]},
           {"function": "count", "inputs": [1], "value_inputs": []}]
    old = [{"type": "scene", "inputs": [], "side_inputs": []},
           {"type": "filter_shape", "inputs": [0], "side_inputs": ["cube"]},
           {"type": "count", "inputs": [1], "side_inputs": []}]
    assert execute(program_from_json(v10), SCENE) == execute(program_from_json(old), SCENE) == "2"
    assert program_to_json(program_from_json(v10)) == v10


@pytest.mark.parametrize("nodes,message", [
    ([], "empty"),
    ([{"function": "smell", "inputs": [], "value_inputs": []}], "unknown function"),
    ([{"function": "scene"}, {"function": "filter_color", "inputs": [0], "value_inputs": ["pink"]}], "not a color"),
    ([{"function": "scene"}, {"function": "count", "inputs": [3]}], "earlier nodes"),
    ([{"function": "scene"}, {"function": "unique", "inputs": [0]},
      {"function": "relate", "inputs": [1], "value_inputs": ["above"]}], "relation"),
    ([{"function": "scene"}, {"function": "count", "inputs": [0]}, {"function": "query_color", "inputs": [1]}],
     "needs one object"),
    ([{"function": "scene"}], "must end in an answer"),
    ([{"function": "scene"}, {"function": "unique", "inputs": [0, 0]}], "takes 1 inputs"),
])
def test_malformed_programs_are_errors(nodes, message):
    with pytest.raises(ProgramError, match=message):
        validate(program_from_json(nodes))


def test_kind_errors_are_reported_before_running():
    program = program_from_json([{"function": "scene"}, {"function": "query_color", "inputs": [0]}])
    with pytest.raises(ProgramError, match="needs one object"):
        execute(program, SCENE)
