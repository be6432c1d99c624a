"""CLEVR's scene and question JSON, in and out, with errors that say exactly what is wrong and where.

Our world is written in CLEVR's own format so the public CLEVR tools can read it, and real CLEVR
(CLEVR_v1.0 on disk) loads into the same `Scene` objects. ExAG keeps a few things CLEVR does not store
under extra keys that CLEVR's tools ignore:

    scene:    "camera" {position, look_at, fov_deg, width, height}, "lights" [{position, intensity}]
    object:   "pixel_coords_exact" [x, y, depth] (CLEVR's "pixel_coords" rounds x and y to ints)
    question: "family", "type", "explanations"

so scene -> JSON -> scene gives back an equal Scene. A real CLEVR scene has none of these; it gets
CLEVR's default camera and lights and keeps its relationships, directions and pixel coordinates as
the file gives them (nothing is recomputed or guessed).

Every reader validates as it goes and stops at the first problem with one `WorldFormatError` that
names the file, the item and the field, e.g.
    data/scenes.json: scenes[12].objects[3]: missing field 'color'
"""
from __future__ import annotations

import json
import math
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .programs import Node, Program, ProgramError, answer_text, program_to_json, validate
from .scene import (ATTRIBUTES, CAMERA_POSITION, RELATIONS, Camera, Light, Scene, SceneConfig,
                    SceneObject, jittered_lights)

IMAGE_PREFIX = "EXAG"
DIRECTIONS = ("left", "right", "front", "behind", "above", "below")  # the six vectors CLEVR stores
# CLEVR's images are 480x320; its camera is the unjittered default.
CLEVR_WIDTH, CLEVR_HEIGHT = 480, 320

# Our world directory (written by build.py).
SCENES_FILE = "scenes.json"
QUESTIONS_FILE = "questions.json"
IMAGES_DIR = "images"


class WorldFormatError(ValueError):
    """A scene or question file (or the images it names) is not what CLEVR's format promises."""


def image_filename(split: str, index: int) -> str:
    """Ends in `_<index>.png` like CLEVR's names, which some CLEVR tools parse for the image index."""
    return f"{IMAGE_PREFIX}_{split}_{index:06d}.png"


def default_camera() -> Camera:
    """The camera of a real CLEVR image: CLEVR's unjittered camera at CLEVR's resolution."""
    return Camera(position=CAMERA_POSITION, width=CLEVR_WIDTH, height=CLEVR_HEIGHT)


def default_lights() -> list[Light]:
    """CLEVR's key, fill and back light without jitter (scene.py's arrangement, jitter set to zero)."""
    return jittered_lights(np.random.default_rng(0), SceneConfig(light_jitter=0.0))


# --- checks: each reads one field and names it in the error --------------------------------------

def _fail(where: str, message: str) -> WorldFormatError:
    return WorldFormatError(f"{where}: {message}")


def _get(data: dict, key: str, where: str):
    if key not in data:
        raise _fail(where, f"missing field {key!r}")
    return data[key]


def _dict(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise _fail(where, f"expected an object, got {_short(value)}")
    return value


def _list(value, where: str) -> list:
    if not isinstance(value, list):
        raise _fail(where, f"expected a list, got {_short(value)}")
    return value


def _str(value, where: str) -> str:
    if not isinstance(value, str):
        raise _fail(where, f"expected a string, got {_short(value)}")
    return value


def _int(value, where: str) -> int:
    # bool is an int in Python, but `true` is never a count or an index in these files.
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(where, f"expected an integer, got {_short(value)}")
    return value


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(where, f"expected a number, got {_short(value)}")
    if not math.isfinite(value):
        raise _fail(where, f"expected a finite number, got {value!r}")
    return float(value)


def _vector(value, where: str, length: int = 3) -> tuple[float, ...]:
    if not isinstance(value, list) or len(value) != length:
        raise _fail(where, f"expected a list of {length} numbers, got {_short(value)}")
    return tuple(_number(x, f"{where}[{i}]") for i, x in enumerate(value))


def _plain_filename(value, where: str) -> str:
    # Image names are joined to an image directory; a path here could point anywhere on disk.
    name = _str(value, where)
    if not name or name in (".", "..") or "/" in name or "\\" in name:
        raise _fail(where, f"{name!r} is not a plain file name")
    return name


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- scenes --------------------------------------------------------------------------------------

def _object_to_json(obj: SceneObject) -> dict:
    x, y, depth = (float(v) for v in obj.pixel_coords)
    return {
        "color": obj.color, "size": obj.size, "shape": obj.shape, "material": obj.material,
        "3d_coords": [float(v) for v in obj.position],  # never rounded: floats must survive exactly
        "pixel_coords": [round(x), round(y), depth],   # CLEVR: ints for x and y, float depth
        "pixel_coords_exact": [x, y, depth],
        "rotation": float(obj.rotation),
    }


def scene_to_json(scene: Scene) -> dict:
    """One scene in CLEVR's format plus ExAG's camera and lights. A scene without an image file name
    gets the standard one, since CLEVR's tools find images by it."""
    cam = scene.camera
    return {
        "split": scene.split,
        "image_index": int(scene.index),
        "image_filename": scene.image_filename or image_filename(scene.split, scene.index),
        "objects": [_object_to_json(o) for o in scene.objects],
        "relationships": {rel: [[int(j) for j in row] for row in rows] for rel, rows in scene.relationships.items()},
        "directions": {name: [float(v) for v in vec] for name, vec in scene.directions.items()},
        "camera": {"position": [float(v) for v in cam.position], "look_at": [float(v) for v in cam.look_at],
                   "fov_deg": float(cam.fov_deg), "width": int(cam.width), "height": int(cam.height)},
        "lights": [{"position": [float(v) for v in light.position], "intensity": float(light.intensity)}
                   for light in scene.lights],
    }


def scenes_to_json(scenes: list[Scene], info: dict | None = None) -> dict:
    return {"info": dict(info or {}), "scenes": [scene_to_json(s) for s in scenes]}


def _attribute(data: dict, name: str, where: str) -> str:
    value = _str(_get(data, name, where), f"{where}.{name}")
    if value not in ATTRIBUTES[name]:
        raise _fail(f"{where}.{name}", f"{value!r} is not a CLEVR {name} (one of {', '.join(ATTRIBUTES[name])})")
    return value


def _object_from_json(data, where: str) -> SceneObject:
    data = _dict(data, where)
    attrs = {name: _attribute(data, name, where) for name in ("shape", "color", "size", "material")}
    position = _vector(_get(data, "3d_coords", where), f"{where}.3d_coords")
    rotation = _number(_get(data, "rotation", where), f"{where}.rotation")
    pixel = _vector(_get(data, "pixel_coords", where), f"{where}.pixel_coords")
    if "pixel_coords_exact" in data:
        pixel = _vector(data["pixel_coords_exact"], f"{where}.pixel_coords_exact")
    return SceneObject(**attrs, position=position, rotation=rotation, pixel_coords=pixel)


def _relationships_from_json(data, n_objects: int, where: str) -> dict[str, list[list[int]]]:
    data = _dict(data, where)
    for rel in RELATIONS:
        _get(data, rel, where)
    result = {}
    for rel, rows in data.items():
        here = f"{where}.{rel}"
        rows = _list(rows, here)
        if len(rows) != n_objects:
            raise _fail(here, f"has {len(rows)} entries for {n_objects} objects")
        result[rel] = []
        for i, row in enumerate(rows):
            indices = [_int(j, f"{here}[{i}]") for j in _list(row, f"{here}[{i}]")]
            for j in indices:
                if not 0 <= j < n_objects:
                    raise _fail(f"{here}[{i}]", f"object index {j} is out of range ({n_objects} objects)")
            result[rel].append(indices)
    return result


def _camera_from_json(data, where: str) -> Camera:
    data = _dict(data, where)
    width, height = (_int(_get(data, k, where), f"{where}.{k}") for k in ("width", "height"))
    if width <= 0 or height <= 0:
        raise _fail(where, f"image size {width}x{height} must be positive")
    return Camera(position=_vector(_get(data, "position", where), f"{where}.position"),
                  look_at=_vector(_get(data, "look_at", where), f"{where}.look_at"),
                  fov_deg=_number(_get(data, "fov_deg", where), f"{where}.fov_deg"),
                  width=width, height=height)


def _lights_from_json(data, where: str) -> list[Light]:
    lights = []
    for i, item in enumerate(_list(data, where)):
        here = f"{where}[{i}]"
        item = _dict(item, here)
        lights.append(Light(position=_vector(_get(item, "position", here), f"{here}.position"),
                            intensity=_number(_get(item, "intensity", here), f"{here}.intensity")))
    return lights


def scene_from_json(data, where: str = "scene") -> Scene:
    """One scene from CLEVR's format (ours or real CLEVR's). `where` prefixes every error message,
    e.g. "data/scenes.json: scenes[12]"."""
    data = _dict(data, where)
    objects = [_object_from_json(o, f"{where}.objects[{i}]")
               for i, o in enumerate(_list(_get(data, "objects", where), f"{where}.objects"))]
    directions_data = _dict(_get(data, "directions", where), f"{where}.directions")
    for name in DIRECTIONS:
        _get(directions_data, name, f"{where}.directions")
    directions = {name: _vector(vec, f"{where}.directions.{name}") for name, vec in directions_data.items()}
    return Scene(
        index=_int(_get(data, "image_index", where), f"{where}.image_index"),
        objects=objects,
        camera=_camera_from_json(data["camera"], f"{where}.camera") if "camera" in data else default_camera(),
        lights=_lights_from_json(data["lights"], f"{where}.lights") if "lights" in data else default_lights(),
        split=_str(_get(data, "split", where), f"{where}.split"),
        image_filename=_plain_filename(_get(data, "image_filename", where), f"{where}.image_filename"),
        directions=directions,
        relationships=_relationships_from_json(_get(data, "relationships", where), len(objects),
                                               f"{where}.relationships"),
    )


def scenes_from_json(data, source: str) -> list[Scene]:
    """All scenes of a parsed scene file; `source` (the file name) starts every error message."""
    items = _list(_get(_dict(data, source), "scenes", source), f"{source}: scenes")
    scenes, seen = [], {}
    for i, item in enumerate(items):
        scene = scene_from_json(item, f"{source}: scenes[{i}]")
        if scene.index in seen:  # questions find their scene by image_index, so it must be unique
            raise _fail(f"{source}: scenes[{i}].image_index",
                        f"{scene.index} is used by scenes[{seen[scene.index]}] too")
        seen[scene.index] = i
        scenes.append(scene)
    return scenes


# --- questions -----------------------------------------------------------------------------------

@dataclass
class QuestionRecord:
    """One question as stored on disk. Real CLEVR test questions have no answer and no program."""
    question_index: int
    image_index: int
    image_filename: str
    split: str
    question: str
    program: Program
    answer: str | None
    family: str = ""                 # ExAG's question family ("" for CLEVR's own questions)
    type: str = ""                   # CLEVR's question type (zero_hop, ...), "" when unknown
    explanations: list[str] = field(default_factory=list)  # reference explanations
    question_family_index: int = -1  # CLEVR's template index, -1 when unknown


def question_to_json(record: QuestionRecord) -> dict:
    data = {
        "split": record.split, "image_index": int(record.image_index), "image_filename": record.image_filename,
        "question_index": int(record.question_index), "question": record.question,
        "question_family_index": int(record.question_family_index),
        "family": record.family, "type": record.type, "explanations": [str(e) for e in record.explanations],
    }
    # Like CLEVR's test questions, a question without program or answer simply has no such key.
    if record.program:
        data["program"] = program_to_json(record.program)
    if record.answer is not None:
        data["answer"] = str(record.answer)
    return data


def questions_to_json(records: list[QuestionRecord], info: dict | None = None) -> dict:
    return {"info": dict(info or {}), "questions": [question_to_json(r) for r in records]}


_NODE_IN_ERROR = re.compile(r"node (\d+): (.*)", re.DOTALL)


def _node_from_json(data, where: str, position: int) -> Node:
    # Checked quietly first and explained only when wrong: CLEVR's train split has millions of nodes, and
    # building an error location for each of their fields would dominate the loading time.
    if not isinstance(data, dict):
        raise _fail(f"{where}[{position}]", f"expected an object, got {_short(data)}")
    function_key = "function" if "function" in data or "type" not in data else "type"
    values_key = "value_inputs" if "value_inputs" in data or "side_inputs" not in data else "side_inputs"
    if not (isinstance(data.get(function_key), str)
            and _all_of(data.get("inputs", []), int) and _all_of(data.get(values_key, []), str)):
        where = f"{where}[{position}]"
        _str(_get(data, function_key, where), f"{where}.{function_key}")
        for key, check in (("inputs", _int), (values_key, _str)):
            for i, value in enumerate(_list(data.get(key, []), f"{where}.{key}")):
                check(value, f"{where}.{key}[{i}]")
    # CLEVR v1.0 says function/value_inputs; the older release says type/side_inputs. Node knows both.
    return Node.from_json(data)


def _all_of(values, kind: type) -> bool:
    return isinstance(values, list) and all(type(v) is kind for v in values)


def _program_from_json(data, where: str) -> Program:
    program = [_node_from_json(node, where, i) for i, node in enumerate(_list(data, where))]
    try:
        validate(program)
    except ProgramError as e:
        # programs.py says "node 2: ..."; point at the node the way the rest of the file is addressed.
        match = _NODE_IN_ERROR.fullmatch(str(e))
        raise (_fail(f"{where}[{match[1]}]", match[2]) if match else _fail(where, str(e))) from None
    return program


def _answer_from_json(value, where: str) -> str:
    # CLEVR v1.0 stores answers as strings; the generator's raw output has true/false and counts.
    if isinstance(value, (str, bool, int)):
        return answer_text(value)
    raise _fail(where, f"expected a string, got {_short(value)}")


def question_from_json(data, where: str = "question") -> QuestionRecord:
    """One question from CLEVR's format (v1.0 or older) or ours; `where` prefixes every error."""
    data = _dict(data, where)

    def get(key, check, default=None):
        if key not in data and default is not None:
            return default
        return check(_get(data, key, where), f"{where}.{key}")

    explanations = [_str(e, f"{where}.explanations[{i}]")
                    for i, e in enumerate(get("explanations", _list, default=[]))]
    return QuestionRecord(
        question_index=get("question_index", _int),
        image_index=get("image_index", _int),
        image_filename=get("image_filename", _plain_filename),
        split=get("split", _str),
        question=get("question", _str),
        program=_program_from_json(data["program"], f"{where}.program") if "program" in data else [],
        answer=_answer_from_json(data["answer"], f"{where}.answer") if "answer" in data else None,
        family=get("family", _str, default=""),
        type=get("type", _str, default=""),
        explanations=explanations,
        question_family_index=get("question_family_index", _int, default=-1),
    )


def questions_from_json(data, source: str) -> list[QuestionRecord]:
    items = _list(_get(_dict(data, source), "questions", source), f"{source}: questions")
    return [question_from_json(item, f"{source}: questions[{i}]") for i, item in enumerate(items)]


# --- files ---------------------------------------------------------------------------------------

def _read_json(path: Path):
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise WorldFormatError(f"{path}: not UTF-8 text (byte {e.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise WorldFormatError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}): {e.msg}") from None


def write_json_atomic(path: Path | str, data) -> None:
    """Readers see either the old file or the complete new one, never a half-written file: the text
    is built first, written to a temporary file beside the target, and renamed over it."""
    path = Path(path)
    text = json.dumps(data, allow_nan=False)  # NaN is not JSON; other tools would reject the file
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "x", encoding="utf-8") as f:  # "x": a fresh file with the usual permissions
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def save_scenes(path: Path | str, scenes: list[Scene], info: dict | None = None) -> None:
    write_json_atomic(path, scenes_to_json(scenes, info))


def load_scenes(path: Path | str) -> list[Scene]:
    return scenes_from_json(_read_json(Path(path)), str(path))


def save_questions(path: Path | str, records: list[QuestionRecord], info: dict | None = None) -> None:
    write_json_atomic(path, questions_to_json(records, info))


def load_questions(path: Path | str) -> list[QuestionRecord]:
    return questions_from_json(_read_json(Path(path)), str(path))


# --- whole worlds: scenes + questions + images ----------------------------------------------------

@dataclass
class ClevrWorld:
    scenes: list[Scene]
    questions: list[QuestionRecord]
    image_dir: Path
    _by_index: dict[int, Scene] = field(default_factory=dict, init=False, repr=False, compare=False)

    def image_path(self, scene: Scene) -> Path:
        return self.image_dir / scene.image_filename

    def scene_of(self, question: QuestionRecord) -> Scene:
        """The scene a question is about (found by image_index, as in CLEVR)."""
        if len(self._by_index) != len(self.scenes):  # built on first use, rebuilt if scenes were added
            self._by_index = {s.index: s for s in self.scenes}
        return self._by_index[question.image_index]


def _load_world(scenes_path: Path, questions_path: Path, image_dir: Path) -> ClevrWorld:
    scenes = load_scenes(scenes_path)
    questions = load_questions(questions_path)
    by_index = {s.index: s for s in scenes}
    for i, q in enumerate(questions):
        where = f"{questions_path}: questions[{i}]"
        scene = by_index.get(q.image_index)
        if scene is None:
            raise _fail(f"{where}.image_index", f"{q.image_index} names no scene in {scenes_path}")
        if q.image_filename != scene.image_filename:
            raise _fail(f"{where}.image_filename",
                        f"{q.image_filename!r} but scene {q.image_index} is {scene.image_filename!r}")
    if not image_dir.is_dir():
        raise WorldFormatError(f"{image_dir}: image directory not found (the images of {scenes_path})")
    present = set(os.listdir(image_dir))  # one directory read instead of a stat per image
    missing = [(i, s.image_filename) for i, s in enumerate(scenes) if s.image_filename not in present]
    if missing:
        i, name = missing[0]
        raise WorldFormatError(f"{image_dir}: {len(missing)} of {len(scenes)} images are missing, first "
                               f"{scenes_path}: scenes[{i}].image_filename {name!r}")
    return ClevrWorld(scenes=scenes, questions=questions, image_dir=image_dir)


def load_clevr(root: Path | str, split: str) -> ClevrWorld:
    """One split of CLEVR_v1.0 as unpacked: scenes/, questions/ and images/<split>/ under `root`."""
    root = Path(root)
    return _load_world(root / "scenes" / f"CLEVR_{split}_scenes.json",
                       root / "questions" / f"CLEVR_{split}_questions.json",
                       root / "images" / split)


def load_world_dir(directory: Path | str) -> ClevrWorld:
    """A world written by build.py: scenes.json, questions.json and images/ in one directory."""
    directory = Path(directory)
    return _load_world(directory / SCENES_FILE, directory / QUESTIONS_FILE, directory / IMAGES_DIR)
