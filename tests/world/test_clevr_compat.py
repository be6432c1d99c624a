"""CLEVR file compatibility both ways: the files our builder writes have what CLEVR's tools read (its
question generator stops with KeyError: 'split' without info.split), and question files in the layout
CLEVR's generator writes load into ours and their programs run on our scenes.

The last test runs CLEVR's own generator where a copy of it is on disk (/tmp/clevr/question_generation,
from facebookresearch/clevr-dataset-gen) and is skipped otherwise: nothing else depends on it."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from vqa_agent.world import clevr_io
from vqa_agent.world.programs import execute

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from hand_scenes import FIVE_OBJECTS, hand_scene  # noqa: E402

CLEVR_GENERATOR = Path("/tmp/clevr/question_generation")
CLEVR_TYPES = {"zero_hop", "one_hop", "two_hop", "three_hop", "single_and", "single_or", "same_relate",
               "compare_integer", "comparison"}
OBJECT_KEYS = {"color", "shape", "size", "material", "3d_coords", "pixel_coords", "rotation"}


def check_clevr_scene_file(data: dict, split: str) -> None:
    """What CLEVR's generator reads from a scene file: info.split, and per scene its image file name
    (whose last "_" field is the image index), objects with their attributes and coordinates, the four
    relationships (one list per object) and the six directions."""
    assert data["info"]["split"] == split
    assert {"version", "date", "license"} <= data["info"].keys()
    assert data["scenes"]
    for scene in data["scenes"]:
        name = scene["image_filename"]
        assert int(os.path.splitext(name)[0].split("_")[-1]) == scene["image_index"]
        assert split == "mixed" or scene["split"] == split
        n = len(scene["objects"])
        for obj in scene["objects"]:
            assert OBJECT_KEYS <= obj.keys()
            assert len(obj["3d_coords"]) == 3 and len(obj["pixel_coords"]) == 3
        assert set(scene["relationships"]) == {"left", "right", "front", "behind"}
        for rows in scene["relationships"].values():
            assert len(rows) == n and all(0 <= j < n for row in rows for j in row)
        assert set(scene["directions"]) == {"left", "right", "front", "behind", "above", "below"}


# --- our files, read as CLEVR reads them ---------------------------------------------------------------

def test_the_builders_scene_file_has_what_clevrs_generator_reads(tiny_world):
    data = json.loads((tiny_world / "scenes.json").read_text())
    check_clevr_scene_file(data, "mixed")   # the tiny world has train, val, test and pool images
    questions = json.loads((tiny_world / "questions.json").read_text())
    assert questions["info"]["split"] == "mixed"


def test_one_clevr_file_per_split_as_clevr_ships_them(tiny_world, tmp_path):
    written = clevr_io.write_clevr_split_files(tiny_world, tmp_path / "clevr")

    scenes = json.loads((tiny_world / "scenes.json").read_text())["scenes"]
    questions = json.loads((tiny_world / "questions.json").read_text())["questions"]
    assert list(written) == ["train", "val", "test", "pool"]
    for split, (scenes_file, questions_file) in written.items():
        assert scenes_file == tmp_path / "clevr" / "scenes" / f"EXAG_{split}_scenes.json"
        assert questions_file == tmp_path / "clevr" / "questions" / f"EXAG_{split}_questions.json"
        data = json.loads(scenes_file.read_text())
        check_clevr_scene_file(data, split)
        assert data["scenes"] == [s for s in scenes if s["split"] == split]   # copied as they are
        asked = json.loads(questions_file.read_text())
        assert asked["info"]["split"] == split
        assert asked["questions"] == [q for q in questions if q["split"] == split]

        # ... and they load back like CLEVR_v1.0 does, images from the world's own directory
        world = clevr_io.load_clevr(tmp_path / "clevr", split, prefix="EXAG", image_dir=tiny_world / "images")
        assert len(world.scenes) == len(data["scenes"]) and len(world.questions) == len(asked["questions"])
        for record in world.questions:
            assert execute(record.program, world.scene_of(record)) == record.answer


def test_a_file_of_one_split_says_that_split_and_others_say_mixed(tmp_path):
    one = hand_scene(FIVE_OBJECTS, index=3)
    one.split = "test"
    clevr_io.save_scenes(tmp_path / "one.json", [one], {"seed": 4})
    info = json.loads((tmp_path / "one.json").read_text())["info"]
    assert info == {"split": "test", "version": clevr_io.INFO_VERSION, "date": clevr_io.INFO_DATE,
                    "license": clevr_io.INFO_LICENSE, "seed": 4}

    other = hand_scene(FIVE_OBJECTS, index=4)
    other.split = "val"
    clevr_io.save_scenes(tmp_path / "two.json", [one, other])
    assert json.loads((tmp_path / "two.json").read_text())["info"]["split"] == "mixed"


# --- CLEVR's question files, read into ours ------------------------------------------------------------

# Five objects placed by hand (tests/hand_scenes.py), as (shape, color, size, material):
#   0 large red metal cube, 1 small blue rubber sphere, 2 large blue rubber cylinder,
#   3 small red rubber sphere, 4 small yellow metal cube
# One question of each kind, its program as CLEVR's generator writes it and its answer worked out by hand
# from the picture in hand_scenes.py (answers as the generator writes them: bools and ints).
HAND_QUESTIONS = [
    ("zero_hop.json", "How many blue things are there?",
     [("scene",), ("filter_color", [0], ["blue"]), ("count", [1])], 2),
    ("one_hop.json", "What color is the large thing right of the red cube?",
     [("scene",), ("filter_color", [0], ["red"]), ("filter_shape", [1], ["cube"]), ("unique", [2]),
      ("relate", [3], ["right"]), ("filter_size", [4], ["large"]), ("unique", [5]), ("query_color", [6])], "blue"),
    ("two_hop.json", "There is a cylinder in front of the yellow cube; what number of balls are left of it?",
     [("scene",), ("filter_color", [0], ["yellow"]), ("filter_shape", [1], ["cube"]), ("unique", [2]),
      ("relate", [3], ["front"]), ("filter_shape", [4], ["cylinder"]), ("unique", [5]), ("relate", [6], ["left"]),
      ("filter_shape", [7], ["sphere"]), ("count", [8])], 2),
    ("same_relate.json", "How many other things are the same size as the cylinder?",
     [("scene",), ("filter_shape", [0], ["cylinder"]), ("unique", [1]), ("same_size", [2]), ("count", [3])], 1),
    ("single_and.json", "Is there a sphere that is both in front of the yellow cube and right of the red cube?",
     [("scene",), ("filter_color", [0], ["yellow"]), ("filter_shape", [1], ["cube"]), ("unique", [2]),
      ("relate", [3], ["front"]), ("scene",), ("filter_color", [5], ["red"]), ("filter_shape", [6], ["cube"]),
      ("unique", [7]), ("relate", [8], ["right"]), ("intersect", [4, 9]), ("filter_shape", [10], ["sphere"]),
      ("exist", [11])], True),
    ("single_or.json", "How many things are cylinders or metal cubes?",
     [("scene",), ("filter_shape", [0], ["cylinder"]), ("scene",), ("filter_material", [2], ["metal"]),
      ("filter_shape", [3], ["cube"]), ("union", [1, 4]), ("count", [5])], 3),
    ("compare_integer.json", "Are there more spheres than cubes?",
     [("scene",), ("filter_shape", [0], ["sphere"]), ("count", [1]), ("scene",), ("filter_shape", [3], ["cube"]),
      ("count", [4]), ("greater_than", [2, 5])], False),
    ("comparison.json", "Is the tiny ball behind the red ball the same color as the cylinder?",
     [("scene",), ("filter_color", [0], ["red"]), ("filter_shape", [1], ["sphere"]), ("unique", [2]),
      ("relate", [3], ["behind"]), ("filter_size", [4], ["small"]), ("filter_shape", [5], ["sphere"]),
      ("unique", [6]), ("query_color", [7]), ("scene",), ("filter_shape", [9], ["cylinder"]), ("unique", [10]),
      ("query_color", [11]), ("equal_color", [8, 12])], True),
]
EXPECTED_ANSWERS = ["2", "blue", "2", "1", "yes", "3", "no", "yes"]


def generator_node(function, inputs=(), values=()):
    # What CLEVR's generate_questions.py writes: "type", and "value_inputs" on every node.
    return {"type": function, "inputs": list(inputs), "value_inputs": list(values)}


def v1_node(function, inputs=(), values=()):
    # What CLEVR_v1.0's released files say.
    return {"function": function, "inputs": list(inputs), "value_inputs": list(values)}


def clevr_question_file(node) -> dict:
    scene = hand_scene(FIVE_OBJECTS, index=7)
    name = clevr_io.image_filename("test", scene.index)
    questions = []
    for i, (template, text, program, answer) in enumerate(HAND_QUESTIONS):
        item = {"split": "test", "image_filename": name, "image_index": 7, "image": name[:-len(".png")],
                "question": text, "program": [node(*step) for step in program], "answer": answer,
                "template_filename": template, "question_family_index": i % 3}
        if node is v1_node:   # released files store answers as strings and number their questions
            item |= {"answer": EXPECTED_ANSWERS[i], "question_index": i}
        questions.append(item)
    return {"info": {"split": "test", "version": "1.0", "date": "2/14/2017", "license": "CC BY 4.0"},
            "questions": questions}


@pytest.mark.parametrize("node", [generator_node, v1_node], ids=["generator output", "CLEVR_v1.0"])
def test_a_clevr_question_file_loads_and_its_programs_run_on_our_scene(tmp_path, node):
    path = tmp_path / "EXAG_test_questions.json"
    path.write_text(json.dumps(clevr_question_file(node)))
    scene = hand_scene(FIVE_OBJECTS, index=7)

    records = clevr_io.load_questions(path)

    assert [r.type for r in records] == [t[:-len(".json")] for t, *_ in HAND_QUESTIONS]
    assert [r.answer for r in records] == EXPECTED_ANSWERS
    assert [r.question_index for r in records] == list(range(len(HAND_QUESTIONS)))  # its place when not given
    assert [r.question_family_index for r in records] == [i % 3 for i in range(len(HAND_QUESTIONS))]
    for record in records:
        assert execute(record.program, scene) == record.answer, record.question


def test_phrasings_are_kept_and_files_without_them_stay_as_they_were(tmp_path):
    scene = hand_scene(FIVE_OBJECTS, index=7)
    path = tmp_path / "questions.json"
    path.write_text(json.dumps(clevr_question_file(v1_node)))
    records = clevr_io.load_questions(path)
    assert all(r.phrasing == "" and r.heldout_phrasing is False for r in records)
    assert "phrasing" not in clevr_io.question_to_json(records[0])

    records[0].phrasing, records[0].heldout_phrasing = "count_what_number", True
    clevr_io.save_questions(tmp_path / "again.json", records)
    again = clevr_io.load_questions(tmp_path / "again.json")
    assert (again[0].phrasing, again[0].heldout_phrasing) == ("count_what_number", True)
    assert again == records and execute(again[0].program, scene) == "2"


# --- CLEVR's own generator on our files, where it is on disk ---------------------------------------------

def test_clevrs_generator_reads_our_split_file_and_its_answers_are_ours(tiny_world, tmp_path):
    if not (CLEVR_GENERATOR / "generate_questions.py").is_file():
        pytest.skip(f"CLEVR's question generator is not at {CLEVR_GENERATOR} (facebookresearch/clevr-dataset-gen)")
    from experiments.benchmark.clevr_phrased import run_generator

    scenes_file, _ = clevr_io.write_clevr_split_files(tiny_world, tmp_path / "clevr")["test"]
    runs = []
    for run in ("first", "again"):
        (tmp_path / run).mkdir()
        run_generator(CLEVR_GENERATOR, scenes_file, tmp_path / run / "questions.json", per_image=5, seed=3,
                      work=tmp_path / run, progress=False)
        runs.append((tmp_path / run / "questions.json").read_bytes())
    assert runs[0] == runs[1]   # seeded: the same questions every time

    records = clevr_io.load_questions(tmp_path / "first" / "questions.json")
    scenes = {s.index: s for s in clevr_io.load_scenes(scenes_file)}
    assert len(records) >= 2 * len(scenes)
    assert {r.type for r in records} <= CLEVR_TYPES
    for record in records:
        assert record.split == "test"
        # CLEVR's answer, computed by its engine from our relationships, is our executor's answer
        assert execute(record.program, scenes[record.image_index]) == record.answer, record.question
