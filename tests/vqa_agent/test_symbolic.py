"""Symbolic answering on perceived scenes: hand-made perception outputs, then a real tiny symbolic agent."""
import numpy as np
import pytest
import torch
from PIL import Image

from vqa_agent.agent import VQAAgent
from vqa_agent.config import preset
from vqa_agent.model import CONCEPT_SLICES, CONCEPTS, Objects
from vqa_agent.symbolic import answer_symbolically, perceive
from vqa_agent.train import train_agent

# (shape, color, size, material, left, front): ground coordinates along the camera's left/front axes
PERCEIVED = [
    ("cube", "red", "large", "metal", 2.0, 0.0),
    ("sphere", "blue", "small", "rubber", 0.0, 0.0),
    ("cylinder", "blue", "large", "rubber", -2.0, 1.0),
]


def perception_output(objects, certainty: float = 8.0, pad: int = 1) -> Objects:
    """What the model's heads would output for these objects: confident attribute logits and ground
    positions, plus `pad` padding slots."""
    k = len(objects) + pad
    attributes = torch.zeros(1, k, len(CONCEPTS))
    ground = torch.zeros(1, k, 2)
    for i, (*values, left, front) in enumerate(objects):
        for attribute, value in zip(CONCEPT_SLICES, values):
            attributes[0, i, CONCEPTS.index(value)] = certainty
        ground[0, i] = torch.tensor([left, front])
    mask = torch.arange(k).unsqueeze(0) < len(objects)
    return Objects(features=torch.zeros(1, k, 4), mask=mask, attributes=attributes, positions=torch.zeros(1, k, 2),
                   ground=ground)


@pytest.fixture
def perceived():
    return perceive(perception_output(PERCEIVED), 0, torch.full((3,), 0.99))


def test_perceived_scene_holds_the_most_likely_attributes_and_camera_relations(perceived):
    scene = perceived.scene
    assert [(o.shape, o.color, o.size, o.material) for o in scene.objects] == [p[:4] for p in PERCEIVED]
    assert scene.related(1, "left") == [0]          # the cube stands left of the sphere
    assert sorted(scene.related(1, "right")) == [2]
    assert scene.related(0, "front") == [2]
    assert all(0.9 < c <= 0.99 for c in perceived.confidence)


@pytest.mark.parametrize("question, answer, evidence", [
    ("How many blue things are there?", "2", [1, 2]),
    ("Is there a red cube?", "yes", [0]),
    ("What color is the thing left of the small sphere?", "red", [0, 1]),
    ("What is the material of the large cylinder?", "rubber", [2]),
    ("Are there more spheres than cubes?", "no", [0, 1]),
])
def test_parsed_questions_are_answered_by_their_program(perceived, question, answer, evidence):
    result = answer_symbolically(question, perceived)
    assert result.answer == answer
    assert result.evidence == evidence
    assert 0 < result.probability <= 1


def test_unparseable_and_ill_posed_questions_are_left_to_the_classifier(perceived):
    assert answer_symbolically("what is the meaning of life", perceived) is None
    # two blue objects: "the blue thing" names no single object on this perceived scene
    assert answer_symbolically("What shape is the blue thing?", perceived) is None


def test_an_answer_about_nothing_is_as_uncertain_as_the_whole_scene():
    unsure = perceive(perception_output(PERCEIVED, certainty=1.0), 0, torch.full((3,), 0.9))
    sure = perceive(perception_output(PERCEIVED), 0, torch.full((3,), 0.9))
    assert answer_symbolically("Is there a green sphere?", unsure).answer == "no"
    assert answer_symbolically("Is there a green sphere?", unsure).probability < \
        answer_symbolically("Is there a green sphere?", sure).probability


def test_an_empty_perception_still_answers():
    empty = perceive(perception_output([], pad=1), 0, torch.zeros(0))
    assert answer_symbolically("How many cubes are there?", empty).answer == "0"


@pytest.fixture(scope="module")
def symbolic_agent_dir(agent_world, tmp_path_factory):
    config = preset("tiny", symbolic=True, epochs=3, max_train_images=80)
    return train_agent(agent_world, tmp_path_factory.mktemp("symbolic"), config, progress=False, log=lambda m: None)


def test_symbolic_agent_answers_parsed_questions_with_its_program(symbolic_agent_dir, agent_world):
    agent = VQAAgent.from_pretrained(symbolic_agent_dir)
    image = Image.open(sorted((agent_world / "images").glob("*.png"))[0])
    parsed, unparsed = agent.answer([image, image], ["How many cubes are there?", "what is the meaning of life"])
    assert parsed.answered_by == "program" and unparsed.answered_by == "classifier"
    assert parsed.answer.isdigit()
    assert parsed.top_k[0] == (parsed.answer, parsed.probability)
    weights = [p.attention for p in parsed.proposals]
    assert not weights or abs(sum(weights) - 1) < 1e-6 or sum(weights) == 0
    # the ground head survives the round trip
    again = VQAAgent.from_pretrained(symbolic_agent_dir).answer([image], ["How many cubes are there?"])[0]
    assert (again.answer, again.probability) == (parsed.answer, parsed.probability)
    assert np.allclose(again.spatial_attention, parsed.spatial_attention, atol=1e-6)


def test_an_ill_posed_question_is_answered_on_the_next_most_likely_reading():
    objects = perception_output(PERCEIVED)
    objects.attributes[0, 0, CONCEPTS.index("green")] = 7.0   # the red cube might be green
    perceived = perceive(objects, 0, torch.full((3,), 0.99))
    assert perceived.scene.objects[0].color == "red"
    result = answer_symbolically("What material is the green cube?", perceived)
    assert (result.answer, result.evidence) == ("metal", [0])
    assert result.probability < answer_symbolically("What material is the red cube?", perceived).probability
    # a proposal that is probably not an object can be dropped to make sense of "the blue thing"
    unsure = perceive(perception_output(PERCEIVED), 0, torch.tensor([0.99, 0.4, 0.99]))
    assert answer_symbolically("What shape is the blue thing?", unsure).answer == "cylinder"


@pytest.mark.parametrize("question, reach, answered", [
    ("What color is the thing left of the small sphere?", 1, True),      # one relate
    ("What color is the thing left of the small sphere?", 0, False),
    ("What color is the thing left of the small thing left of the cylinder?", 1, False),   # two
    ("What color is the thing left of the small thing left of the cylinder?", None, True),
    ("How many other things are the same size as the red cube?", 1, False),   # a same-attribute step
    ("How many other things are the same size as the red cube?", None, True),
    ("Are there more spheres than cubes?", 0, True),
])
def test_an_agent_with_a_short_reach_answers_only_short_chains_by_program(perceived, question, reach, answered):
    """symbolic_max_relations (the medium agent's 1): longer programs get no program answer, so the
    classifier answers them."""
    from vqa_agent.symbolic import program_of, within_reach

    assert program_of(question) is not None
    assert within_reach(program_of(question), reach) is answered
    assert (answer_symbolically(question, perceived, reach) is not None) is answered


def test_the_shipped_medium_agent_answers_long_chains_with_its_classifier(agent_world):
    """The default agent reaches one relation: a count is answered by program, a count over two
    relations or a same-attribute step by the classifier."""
    agent = VQAAgent.from_pretrained("medium", device="cpu")
    assert agent.config.symbolic_max_relations == 1
    image = Image.open(sorted((agent_world / "images").glob("*.png"))[0])
    short, long, same = agent.answer([image] * 3, [
        "How many cubes are there?",
        "How many things are left of the thing right of the cube?",
        "How many other things are the same size as the cube?"])
    assert short.answered_by == "program"
    assert long.answered_by == "classifier" and same.answered_by == "classifier"


def test_a_rereading_has_the_relations_of_its_objects():
    """A rereading that changes attributes keeps the scene's relations (nothing moved); one that drops a
    proposal leaves it out of them: both equal the relations computed from scratch."""
    from vqa_agent.symbolic import Rereading, reread, scene_of

    perceived = perceive(perception_output(PERCEIVED), 0, torch.full((3,), 0.99))
    for changes in ((Rereading(1.0, 0, "color", "green"),), (Rereading(1.0, 1, "exists"),),
                    (Rereading(1.0, 0, "exists"),), (Rereading(1.0, 0, "exists"), Rereading(1.0, 2, "exists")),
                    (Rereading(1.0, 0, "shape", "sphere"), Rereading(1.0, 2, "exists"))):
        scene, kept = reread(perceived, changes)
        assert scene.relationships == scene_of(list(scene.objects)).relationships
        assert kept == [k for k in range(3) if all(c.object != k or c.attribute != "exists" for c in changes)]
    assert reread(perceived, (Rereading(1.0, 0, "color", "green"),))[0].objects[0].color == "green"
