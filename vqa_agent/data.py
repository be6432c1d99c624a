"""A built world's split prepared for the model: images at the model's resolution, ground-truth boxes
and attributes from the masks and scene graphs (training targets only), and encoded questions."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from tqdm import tqdm

from .agent import pad_questions
from .config import AgentConfig
from .model import CONCEPT_ATTRIBUTES, DETECTION_STRIDE
from .tokenizer import Vocabulary
from .world.build import ensure_rendered
from .world.clevr_io import scene_from_json
from .world.programs import IllPosed, ProgramError, program_from_json, trace
from .world.render import load_mask_png
from .world.scene import ATTRIBUTES, Scene

MAX_OBJECTS = 10


@dataclass
class WorldTables:
    """scenes.json and questions.json of a world, read once."""
    path: Path
    scenes: list[dict]
    questions: list[dict]

    @classmethod
    def load(cls, world: Path | str) -> "WorldTables":
        world = Path(world)
        if not (world / "manifest.json").exists():
            raise FileNotFoundError(f"{world} is not a built world (no manifest.json); "
                                    f"run `exag world build --out {world}`")
        return cls(world, json.loads((world / "scenes.json").read_text())["scenes"],
                   json.loads((world / "questions.json").read_text())["questions"])


@dataclass
class PreparedSplit:
    images: torch.Tensor              # [N, 3, H, W] uint8 at the model's resolution
    boxes: list[torch.Tensor]         # per image [n, 4] x1 y1 x2 y2 in model pixels (visible part)
    attributes: list[torch.Tensor]    # per image [n, 4] value index of shape, color, size, material
    ground: list[torch.Tensor]        # per image [n, 2] position . left and position . front (world units)
    foreground: torch.Tensor          # [N, H/4, W/4] bool
    question_ids: torch.Tensor        # [M, L] word ids, 0-padded
    lengths: torch.Tensor             # [M]
    answers: torch.Tensor             # [M] answer index, -1 when the answer is outside the vocabulary
    image_of_question: torch.Tensor   # [M] index into images
    texts: list[str]
    families: list[str]
    types: list[str]
    answer_texts: list[str]
    heldout_phrasing: list[bool]      # written in a phrasing held out from training
    target_objects: torch.Tensor      # [M, MAX_OBJECTS] 1/0: object in the set the answer is read from; -1 unknown

    def questions_of(self, images: torch.Tensor) -> torch.Tensor:
        """Indices of every question about the given images."""
        return torch.nonzero(torch.isin(self.image_of_question, images), as_tuple=True)[0]


def ground_truth_boxes(mask: np.ndarray, n_objects: int, scale_x: float, scale_y: float) -> np.ndarray:
    boxes = np.zeros((n_objects, 4), np.float32)
    for k in range(n_objects):
        rows, cols = np.any(mask == k, axis=1), np.any(mask == k, axis=0)
        if rows.any():
            y1, y2 = np.nonzero(rows)[0][[0, -1]]
            x1, x2 = np.nonzero(cols)[0][[0, -1]]
            boxes[k] = (x1 * scale_x, y1 * scale_y, (x2 + 1) * scale_x, (y2 + 1) * scale_y)
    return boxes


def answer_set(program: list[dict], scene: Scene | dict) -> frozenset[int] | None:
    """The set of objects the answer is read from (counted, tested for existence, or the queried
    object), from the program's trace; None for answers that compare two sets or values."""
    nodes = program_from_json(program)
    if isinstance(scene, dict):
        scene = scene_from_json(scene)
    try:
        outputs = trace(nodes, scene)
    except (IllPosed, ProgramError):
        return None
    last = len(nodes) - 1
    function = nodes[last].function
    if function.startswith("query_"):
        last = nodes[last].inputs[0]            # the unique object
        return outputs[nodes[last].inputs[0]]   # ... and the one-object set it came from
    if function in ("count", "exist", "most_common"):
        return outputs[nodes[last].inputs[0]]
    return None


def prepare_split(tables: WorldTables, split: str, config: AgentConfig, vocabulary: Vocabulary,
                  max_images: int | None = None, progress: bool = True) -> PreparedSplit:
    scenes = [s for s in tables.scenes if s["split"] == split][:max_images]
    if not scenes:
        raise ValueError(f"{tables.path} has no images in split {split!r}")
    size = (config.image_width, config.image_height)
    detection_size = (config.image_width // DETECTION_STRIDE, config.image_height // DETECTION_STRIDE)
    images, boxes, attributes, ground, foreground = [], [], [], [], []
    local = {}
    for scene in tqdm(scenes, desc=f"preparing {split}", unit="img", disable=not progress, leave=False):
        local[scene["image_index"]] = len(local)
        ensure_rendered(tables.path, scene["image_filename"])   # a lazily laid out world (the game's) renders it now
        with Image.open(tables.path / "images" / scene["image_filename"]) as file:
            rgb = file.convert("RGB")
            images.append(np.asarray(rgb.resize(size, Image.BILINEAR)))
            width, height = rgb.size
        mask = load_mask_png(tables.path / "masks" / scene["image_filename"])
        objects = scene["objects"]
        boxes.append(torch.from_numpy(ground_truth_boxes(mask, len(objects), size[0] / width, size[1] / height)))
        attributes.append(torch.tensor([[ATTRIBUTES[a].index(o[a]) for a in CONCEPT_ATTRIBUTES] for o in objects]))
        axes = np.array([scene["directions"]["left"], scene["directions"]["front"]], np.float32).T
        ground.append(torch.from_numpy(np.array([o["3d_coords"] for o in objects], np.float32) @ axes))
        small = Image.fromarray(((mask >= 0) * 255).astype(np.uint8)).resize(detection_size, Image.BOX)
        foreground.append(torch.from_numpy(np.asarray(small) > 127))

    questions = [q for q in tables.questions if q["image_index"] in local]
    scene_of = {s["image_index"]: scene_from_json(s) for s in scenes}  # converted once, not per question
    targets = torch.full((len(questions), MAX_OBJECTS), -1.0)
    for i, q in enumerate(questions):
        members = answer_set(q["program"], scene_of[q["image_index"]])
        if members is not None:
            n = len(scene_of[q["image_index"]].objects)
            targets[i, :n] = torch.tensor([float(k in members) for k in range(n)])
    ids, lengths = pad_questions([vocabulary.encode(q["question"], config.max_question_words) for q in questions])
    return PreparedSplit(
        images=torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).contiguous(),
        boxes=boxes, attributes=attributes, ground=ground, foreground=torch.stack(foreground),
        question_ids=ids, lengths=lengths,
        answers=torch.tensor([vocabulary.answer_index.get(q["answer"], -1) for q in questions]),
        image_of_question=torch.tensor([local[q["image_index"]] for q in questions]),
        texts=[q["question"] for q in questions], families=[q["family"] for q in questions], types=[q["type"] for q in questions],
        answer_texts=[q["answer"] for q in questions],
        heldout_phrasing=[bool(q.get("heldout_phrasing", False)) for q in questions], target_objects=targets)
