"""CLEVR JSON in and out: exact round trips, real CLEVR's layout and formats, and clear errors."""
from __future__ import annotations

import copy
import json
import os
import re

import numpy as np
import pytest
from PIL import Image

from vqa_agent.world import clevr_io
from vqa_agent.world.clevr_io import QuestionRecord, WorldFormatError
from vqa_agent.world.programs import execute
from vqa_agent.world.questions import QuestionGenerator
from vqa_agent.world.scene import CAMERA_POSITION, Camera, generate_scene

# --- a tiny CLEVR_v1.0 tree, typed in CLEVR's exact format -------------------------------------------

DIRECTIONS = {  # CLEVR_val_000000's directions
    "right": [0.6563112735748291, 0.7544902563095093, -0.0],
    "behind": [-0.754490315914154, 0.6563112735748291, 0.0],
    "above": [0.0, 0.0, 1.0],
    "below": [-0.0, -0.0, -1.0],
    "left": [-0.6563112735748291, -0.7544902563095093, 0.0],
    "front": [0.754490315914154, -0.6563112735748291, -0.0],
}

CLEVR_SCENES = {
    "info": {"split": "val", "license": "Creative Commons Attribution (CC BY 4.0)", "version": "1.0",
             "date": "2/14/2017"},
    "scenes": [
        {
            "image_index": 0,
            "objects": [
                {"color": "brown", "size": "large", "rotation": 178.92387258999463, "shape": "cylinder",
                 "3d_coords": [-1.4937210083007812, -1.9936031103134155, 0.699999988079071],
                 "material": "rubber", "pixel_coords": [119, 131, 10.801968574523926]},
                {"color": "gray", "size": "large", "rotation": 243.405459279722, "shape": "cube",
                 "3d_coords": [1.555708646774292, -2.104736566543579, 0.699999988079071],
                 "material": "rubber", "pixel_coords": [198, 190, 8.60103988647461]},
                {"color": "green", "size": "small", "rotation": 230.45235024165092, "shape": "cylinder",
                 "3d_coords": [-2.342184543609619, -0.5205014944076538, 0.3499999940395355],
                 "material": "rubber", "pixel_coords": [161, 118, 12.372727394104004]},
                {"color": "purple", "size": "large", "rotation": 31.654351858799153, "shape": "sphere",
                 "3d_coords": [-0.8073106408119202, 1.914123773574829, 0.699999988079071],
                 "material": "metal", "pixel_coords": [282, 100, 12.495001792907715]},
                {"color": "gray", "size": "small", "rotation": 42.183287560575, "shape": "cube",
                 "3d_coords": [2.6763813495635986, 0.03453871235251427, 0.3499999940395355],
                 "material": "metal", "pixel_coords": [337, 195, 9.161211967468262]},
            ],
            "relationships": {
                "right": [[1, 2, 3, 4], [3, 4], [1, 3, 4], [4], []],
                "behind": [[2, 3], [0, 2, 3, 4], [3], [], [0, 2, 3]],
                "front": [[1, 4], [], [0, 1, 4], [0, 1, 2, 4], [1]],
                "left": [[], [0, 2], [0], [0, 1, 2], [0, 1, 2, 3]],
            },
            "image_filename": "CLEVR_val_000000.png",
            "split": "val",
            "directions": DIRECTIONS,
        },
        {
            "image_index": 1,
            "objects": [
                {"color": "red", "size": "small", "rotation": 12.0, "shape": "sphere",
                 "3d_coords": [-1.2, 2.3, 0.35], "material": "metal", "pixel_coords": [290, 120, 13.1]},
                {"color": "blue", "size": "large", "rotation": 80.5, "shape": "cube",
                 "3d_coords": [1.8, -0.6, 0.7], "material": "rubber", "pixel_coords": [260, 190, 9.4]},
                {"color": "yellow", "size": "large", "rotation": 200.0, "shape": "cylinder",
                 "3d_coords": [2.4, 2.9, 0.7], "material": "metal", "pixel_coords": [380, 110, 11.7]},
            ],
            "relationships": {
                "right": [[2], [0, 2], []],
                "behind": [[], [0, 2], [0]],
                "front": [[1, 2], [], [1]],
                "left": [[1], [], [0, 1]],
            },
            "image_filename": "CLEVR_val_000001.png",
            "split": "val",
            "directions": DIRECTIONS,
        },
    ],
}


def v1_node(function, inputs=(), values=()):
    return {"inputs": list(inputs), "function": function, "value_inputs": list(values)}


def old_node(function, inputs=(), values=()):
    # The release before v1.0 (and CLEVR's generator) name the function "type" and the values "side_inputs".
    node = {"type": function, "inputs": list(inputs)}
    if values:
        node["side_inputs"] = list(values)
    return node


# (image index, question, program as (function, inputs, values), answer) - answers worked out by hand.
QUESTIONS = [
    (0, "Are there any other things that are the same shape as the big metallic object?",
     [("scene",), ("filter_size", [0], ["large"]), ("filter_material", [1], ["metal"]), ("unique", [2]),
      ("same_shape", [3]), ("exist", [4])], "no"),
    (0, "How many things are right of the brown cylinder?",
     [("scene",), ("filter_color", [0], ["brown"]), ("filter_shape", [1], ["cylinder"]), ("unique", [2]),
      ("relate", [3], ["right"]), ("count", [4])], "4"),
    (0, "What color is the small cube?",
     [("scene",), ("filter_size", [0], ["small"]), ("filter_shape", [1], ["cube"]), ("unique", [2]),
      ("query_color", [3])], "gray"),
    (1, "Are there more cubes than spheres?",
     [("scene",), ("filter_shape", [0], ["cube"]), ("count", [1]), ("scene",),
      ("filter_shape", [3], ["sphere"]), ("count", [4]), ("greater_than", [2, 5])], "no"),
    (1, "What shape is the thing left of the red sphere?",
     [("scene",), ("filter_color", [0], ["red"]), ("filter_shape", [1], ["sphere"]), ("unique", [2]),
      ("relate", [3], ["left"]), ("unique", [4]), ("query_shape", [5])], "cube"),
]


def clevr_questions(node=v1_node) -> dict:
    questions = []
    for i, (image, text, program, answer) in enumerate(QUESTIONS):
        questions.append({
            "image_index": image, "program": [node(*step) for step in program], "question_index": i,
            "image_filename": f"CLEVR_val_{image:06d}.png", "question_family_index": 10 + i, "split": "val",
            "answer": answer, "question": text,
        })
    return {"info": copy.deepcopy(CLEVR_SCENES["info"]), "questions": questions}


def write_clevr_tree(root, scenes=None, questions=None):
    """CLEVR_v1.0's layout: scenes/, questions/ and images/val/ with one PNG per scene."""
    scenes = CLEVR_SCENES if scenes is None else scenes
    questions = clevr_questions() if questions is None else questions
    for sub in ("scenes", "questions", "images/val"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "scenes" / "CLEVR_val_scenes.json").write_text(json.dumps(scenes))
    (root / "questions" / "CLEVR_val_questions.json").write_text(json.dumps(questions))
    for scene in CLEVR_SCENES["scenes"]:
        Image.new("RGB", (48, 32), (120, 120, 120)).save(root / "images" / "val" / scene["image_filename"])
    return root


@pytest.mark.parametrize("node", [v1_node, old_node], ids=["v1.0", "older"])
def test_real_clevr_tree_loads_and_programs_give_its_answers(tmp_path, node):
    world = clevr_io.load_clevr(write_clevr_tree(tmp_path, questions=clevr_questions(node)), "val")

    assert [s.index for s in world.scenes] == [0, 1]
    assert len(world.questions) == len(QUESTIONS)
    for record, (_, text, _, answer) in zip(world.questions, QUESTIONS):
        assert record.question == text and record.answer == answer
        assert execute(record.program, world.scene_of(record)) == answer
    assert all(world.image_path(s).is_file() for s in world.scenes)
    assert world.questions[1].question_family_index == 11 and world.questions[1].family == ""


def test_real_clevr_scene_keeps_the_file_and_gets_default_camera_and_lights(tmp_path):
    scene = clevr_io.load_clevr(write_clevr_tree(tmp_path), "val").scenes[0]
    raw = CLEVR_SCENES["scenes"][0]

    assert scene.camera == Camera(position=CAMERA_POSITION, width=480, height=320)
    assert scene.lights == clevr_io.default_lights() and len(scene.lights) == 3
    assert scene.relationships == raw["relationships"]
    assert scene.directions == {k: tuple(v) for k, v in raw["directions"].items()}
    assert [o.pixel_coords for o in scene.objects] == [tuple(map(float, o["pixel_coords"])) for o in raw["objects"]]
    assert [o.position for o in scene.objects] == [tuple(o["3d_coords"]) for o in raw["objects"]]
    assert (scene.split, scene.image_filename) == ("val", "CLEVR_val_000000.png")


def test_clevr_test_questions_without_answer_or_program(tmp_path):
    path = tmp_path / "CLEVR_test_questions.json"
    path.write_text(json.dumps({"info": {}, "questions": [
        {"image_index": 0, "question_index": 0, "image_filename": "CLEVR_test_000000.png", "split": "test",
         "question": "Is there a big brown object of the same shape as the green thing?"}]}))

    record = clevr_io.load_questions(path)[0]

    assert (record.answer, record.program, record.question_family_index) == (None, [], -1)
    clevr_io.save_questions(tmp_path / "again.json", [record])
    saved = json.loads((tmp_path / "again.json").read_text())["questions"][0]
    assert "answer" not in saved and "program" not in saved
    assert clevr_io.load_questions(tmp_path / "again.json") == [record]


def test_generator_style_answers_become_clevr_answer_strings(tmp_path):
    data = clevr_questions(old_node)
    data["questions"][0]["answer"] = False
    data["questions"][1]["answer"] = 4
    path = tmp_path / "questions.json"
    path.write_text(json.dumps(data))
    assert [q.answer for q in clevr_io.load_questions(path)[:2]] == ["no", "4"]


# --- our own scenes and questions: exact round trips ----------------------------------------------

def our_scenes(seed: int, n: int = 4) -> list:
    rng = np.random.default_rng(seed)
    scenes = []
    for i in range(n):
        split = ("train", "val")[i % 2]
        scene = generate_scene(rng, index=100 * seed + i, split=split)
        scene.image_filename = clevr_io.image_filename(split, scene.index)
        scenes.append(scene)
    return scenes


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_scenes_round_trip_exactly(tmp_path, seed):
    scenes = our_scenes(seed)
    clevr_io.save_scenes(tmp_path / "scenes.json", scenes, {"seed": seed})

    loaded = clevr_io.load_scenes(tmp_path / "scenes.json")

    assert loaded == scenes  # dataclass equality: every float bit for bit, camera and lights included
    info = json.loads((tmp_path / "scenes.json").read_text())["info"]
    assert info == clevr_io.clevr_info([s.split for s in scenes], seed=seed)


def test_written_scenes_are_in_clevr_format(tmp_path):
    scene = our_scenes(5, n=1)[0]
    data = clevr_io.scenes_to_json([scene], {})["scenes"][0]

    assert {"split", "image_index", "image_filename", "objects", "relationships", "directions"} <= data.keys()
    assert set(data["relationships"]) == {"left", "right", "front", "behind"}
    assert set(data["directions"]) == {"left", "right", "front", "behind", "above", "below"}
    for obj, raw in zip(scene.objects, data["objects"]):
        assert {"color", "size", "shape", "material", "3d_coords", "pixel_coords", "rotation"} <= raw.keys()
        x, y, depth = raw["pixel_coords"]
        assert isinstance(x, int) and isinstance(y, int) and isinstance(depth, float)
        assert (x, y) == (round(obj.pixel_coords[0]), round(obj.pixel_coords[1]))
        assert raw["3d_coords"] == list(obj.position)


def test_a_scene_without_file_name_gets_the_standard_one():
    scene = generate_scene(np.random.default_rng(9), index=7, split="val")
    assert scene.image_filename == ""
    data = clevr_io.scene_to_json(scene)
    assert data["image_filename"] == "EXAG_val_000007.png"
    assert clevr_io.scene_from_json(data).image_filename == "EXAG_val_000007.png"


@pytest.mark.parametrize("split,index", [("train", 0), ("val", 42), ("test", 123456), ("pool", 1234567)])
def test_image_filename_ends_in_index(split, index):
    name = clevr_io.image_filename(split, index)
    assert name.startswith("EXAG_") and name.endswith(f"_{index:06d}.png")
    # CLEVR's tools read the index back from the name's last "_" field.
    assert int(re.fullmatch(r".*_(\d+)\.png", name)[1]) == index


def our_questions(scenes) -> list[QuestionRecord]:
    rng = np.random.default_rng(0)
    generator = QuestionGenerator()
    records = []
    for scene in scenes:
        for q in generator.for_scene(scene, 5, rng):
            records.append(QuestionRecord(
                question_index=len(records), image_index=scene.index, image_filename=scene.image_filename,
                split=scene.split, question=q.question, program=q.program, answer=q.answer, family=q.family,
                type=q.type, explanations=[f"because of object {len(records)}", "second reason"],
                question_family_index=len(records) % 7))
    return records


def test_questions_round_trip_exactly(tmp_path):
    records = our_questions(our_scenes(0))
    assert len(records) >= 10
    clevr_io.save_questions(tmp_path / "questions.json", records, {"seed": 0})

    assert clevr_io.load_questions(tmp_path / "questions.json") == records
    raw = json.loads((tmp_path / "questions.json").read_text())["questions"][0]
    assert {"image_index", "image_filename", "split", "question", "question_index", "question_family_index",
            "program", "answer", "family", "type", "explanations"} <= raw.keys()
    assert set(raw["program"][0]) == {"function", "inputs", "value_inputs"}


def test_our_world_directory_loads(tmp_path):
    scenes = our_scenes(1)
    records = our_questions(scenes)
    clevr_io.save_scenes(tmp_path / "scenes.json", scenes)
    clevr_io.save_questions(tmp_path / "questions.json", records)
    (tmp_path / "images").mkdir()
    for scene in scenes:
        Image.new("RGB", (32, 24)).save(tmp_path / "images" / scene.image_filename)

    world = clevr_io.load_world_dir(tmp_path)

    assert world.scenes == scenes and world.questions == records
    assert world.image_path(scenes[2]) == tmp_path / "images" / scenes[2].image_filename
    for record in world.questions:
        assert execute(record.program, world.scene_of(record)) == record.answer


# --- bad input: one error naming the file, the item and the field ---------------------------------

SCENES = "scenes/CLEVR_val_scenes.json"
QUESTIONS_FILE = "questions/CLEVR_val_questions.json"


def _set(path, value):
    """An edit of a parsed file: walk `path` (keys and indices), set the last one (delete when value is DEL)."""
    def edit(data):
        *walk, last = path
        for key in walk:
            data = data[key]
        if value is DEL:
            del data[last]
        else:
            data[last] = value
    return edit


DEL = object()

# (id, which file, edit of its parsed JSON, or raw text to write instead, expected message after "<file>: ")
CORRUPT = [
    ("not-json", SCENES, '{"scenes": [\n  {"image_index": 0,,\n', "not valid JSON (line 2, column 21)"),
    ("not-json-questions", QUESTIONS_FILE, '{"questions": [}', "not valid JSON (line 1, column 16)"),
    ("top-level", SCENES, "[1, 2]", "expected an object, got [1, 2]"),
    ("no-scenes", SCENES, _set(["scenes"], DEL), "missing field 'scenes'"),
    ("missing-color", SCENES, _set(["scenes", 1, "objects", 2, "color"], DEL),
     "scenes[1].objects[2]: missing field 'color'"),
    ("missing-relationships", SCENES, _set(["scenes", 0, "relationships"], DEL),
     "scenes[0]: missing field 'relationships'"),
    ("missing-relation", SCENES, _set(["scenes", 0, "relationships", "front"], DEL),
     "scenes[0].relationships: missing field 'front'"),
    ("missing-direction", SCENES, _set(["scenes", 1, "directions", "above"], DEL),
     "scenes[1].directions: missing field 'above'"),
    ("coords-length", SCENES, _set(["scenes", 0, "objects", 1, "3d_coords"], [1.0, 2.0]),
     "scenes[0].objects[1].3d_coords: expected a list of 3 numbers, got [1.0, 2.0]"),
    ("coords-type", SCENES, _set(["scenes", 0, "objects", 1, "3d_coords", 0], "1.5"),
     "scenes[0].objects[1].3d_coords[0]: expected a number, got '1.5'"),
    ("coords-nan", SCENES, _set(["scenes", 0, "objects", 4, "3d_coords", 2], float("nan")),
     "scenes[0].objects[4].3d_coords[2]: expected a finite number, got nan"),
    ("rotation-type", SCENES, _set(["scenes", 1, "objects", 0, "rotation"], None),
     "scenes[1].objects[0].rotation: expected a number, got None"),
    ("index-type", SCENES, _set(["scenes", 1, "image_index"], "1"),
     "scenes[1].image_index: expected an integer, got '1'"),
    ("objects-type", SCENES, _set(["scenes", 1, "objects"], {"0": {}}),
     "scenes[1].objects: expected a list, got {'0': {}}"),
    ("bad-color", SCENES, _set(["scenes", 1, "objects", 0, "color"], "pink"),
     "scenes[1].objects[0].color: 'pink' is not a CLEVR color"),
    ("bad-shape", SCENES, _set(["scenes", 0, "objects", 3, "shape"], "torus"),
     "scenes[0].objects[3].shape: 'torus' is not a CLEVR shape"),
    ("relation-range", SCENES, _set(["scenes", 0, "relationships", "left", 2], [0, 9]),
     "scenes[0].relationships.left[2]: object index 9 is out of range (5 objects)"),
    ("relation-rows", SCENES, _set(["scenes", 1, "relationships", "behind"], [[], []]),
     "scenes[1].relationships.behind: has 2 entries for 3 objects"),
    ("duplicate-index", SCENES, _set(["scenes", 1, "image_index"], 0),
     "scenes[1].image_index: 0 is used by scenes[0] too"),
    ("path-as-filename", SCENES, _set(["scenes", 0, "image_filename"], "../../secret.png"),
     "scenes[0].image_filename: '../../secret.png' is not a plain file name"),
    ("missing-question", QUESTIONS_FILE, _set(["questions", 3, "question"], DEL),
     "questions[3]: missing field 'question'"),
    ("answer-type", QUESTIONS_FILE, _set(["questions", 0, "answer"], ["no"]),
     "questions[0].answer: expected a string, got ['no']"),
    ("unknown-function", QUESTIONS_FILE, _set(["questions", 2, "program", 1, "function"], "filter_smell"),
     "questions[2].program[1]: unknown function 'filter_smell'"),
    ("bad-filter-value", QUESTIONS_FILE, _set(["questions", 4, "program", 1, "value_inputs"], ["pink"]),
     "questions[4].program[1]: 'pink' is not a color"),
    ("forward-input", QUESTIONS_FILE, _set(["questions", 1, "program", 3, "inputs"], [5]),
     "questions[1].program[3]: inputs [5] must point to earlier nodes"),
    ("input-type", QUESTIONS_FILE, _set(["questions", 1, "program", 3, "inputs"], ["2"]),
     "questions[1].program[3].inputs[0]: expected an integer, got '2'"),
    ("node-type", QUESTIONS_FILE, _set(["questions", 0, "program", 2], "scene"),
     "questions[0].program[2]: expected an object, got 'scene'"),
    ("node-without-function", QUESTIONS_FILE, _set(["questions", 1, "program", 0, "function"], DEL),
     "questions[1].program[0]: missing field 'function'"),
    ("empty-program", QUESTIONS_FILE, _set(["questions", 0, "program"], []),
     "questions[0].program: empty program"),
    ("no-such-scene", QUESTIONS_FILE, _set(["questions", 4, "image_index"], 99),
     "questions[4].image_index: 99 names no scene"),
    ("other-image", QUESTIONS_FILE, _set(["questions", 4, "image_filename"], "CLEVR_val_000000.png"),
     "questions[4].image_filename: 'CLEVR_val_000000.png' but scene 1 is 'CLEVR_val_000001.png'"),
]


@pytest.mark.parametrize("name,file,edit,expected", CORRUPT, ids=[c[0] for c in CORRUPT])
def test_corrupt_input_names_file_item_and_field(tmp_path, name, file, edit, expected):
    root = write_clevr_tree(tmp_path)
    path = root / file
    if isinstance(edit, str):
        path.write_text(edit)
    else:
        data = json.loads(path.read_text())
        edit(data)
        path.write_text(json.dumps(data))

    with pytest.raises(WorldFormatError) as error:
        clevr_io.load_clevr(root, "val")

    assert f"{path}: {expected}" in str(error.value)
    assert "\n" not in str(error.value)


def test_missing_images_are_counted_and_the_first_named(tmp_path):
    root = write_clevr_tree(tmp_path)
    (root / "images" / "val" / "CLEVR_val_000001.png").unlink()

    with pytest.raises(WorldFormatError) as error:
        clevr_io.load_clevr(root, "val")

    assert str(error.value) == (f"{root / 'images' / 'val'}: 1 of 2 images are missing, first "
                                f"{root / SCENES}: scenes[1].image_filename 'CLEVR_val_000001.png'")


def test_missing_image_directory(tmp_path):
    root = write_clevr_tree(tmp_path)
    for image in (root / "images" / "val").iterdir():
        image.unlink()
    (root / "images" / "val").rmdir()
    with pytest.raises(WorldFormatError, match="image directory not found"):
        clevr_io.load_clevr(root, "val")


# --- atomic writing --------------------------------------------------------------------------------

class Unwritable(float):
    """A coordinate that breaks serialization halfway through a file."""

    def __float__(self):
        raise RuntimeError("cannot serialize this coordinate")


def test_failed_save_leaves_no_file(tmp_path):
    scenes = our_scenes(2)
    scenes[-1].objects[-1].position = (Unwritable(1.0), 0.0, 0.35)
    target = tmp_path / "scenes.json"

    with pytest.raises(RuntimeError):
        clevr_io.save_scenes(target, scenes, {})

    assert os.listdir(tmp_path) == []  # neither the target nor a temporary file


def test_failed_save_keeps_the_previous_file_whole(tmp_path, monkeypatch):
    target = tmp_path / "scenes.json"
    clevr_io.save_scenes(target, our_scenes(3), {})
    before = target.read_bytes()

    def crash(*args):
        raise OSError("disk unplugged")

    monkeypatch.setattr(os, "replace", crash)  # fail after the temporary file is written
    with pytest.raises(OSError):
        clevr_io.save_scenes(target, our_scenes(4), {})

    assert target.read_bytes() == before
    assert os.listdir(tmp_path) == ["scenes.json"]
