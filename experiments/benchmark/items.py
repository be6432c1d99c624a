"""The items every explainer benchmark scores: test questions of a world with everything the world
knows about them (scene, instance masks, program, reference explanations), the agent's answers, and
each explainer's explanations of those answers, asked the way the game asks them.

    items = load_items(Path("data/world"), max_items=200)
    outputs = answer(agent, items)
    explanations = explain(explainer, items, outputs, agent)      # one Explanation per item

A game round asks one question on N images, and sham explainers show another image's explanation of
that round (explainers/sham.py). So every item is explained inside a round: its own image first, then
the images of the next ROUND_SIZE - 1 items with other images, all asked the item's question and
answered by the agent.
Real explainers ignore the round; shams need it, and get it exactly as the server builds it.
"""
from __future__ import annotations

import ast
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
from PIL import Image

from vqa_agent.world.clevr_io import scene_from_json
from vqa_agent.world.render import load_mask_png
from vqa_agent.world.scene import Scene

ROUND_SIZE = 5               # images in a controlled game round
ANSWER_BATCH = 256           # questions answered per agent call


@dataclass
class BenchItem:
    index: int                     # the question's index in the world's questions.json
    question: str
    answer: str                    # the true answer
    program: list[dict]            # the question's program (CLEVR JSON)
    type: str                      # question type (count, exist, query_color, ...)
    image_filename: str
    scene: Scene
    scene_json: dict
    image: np.ndarray              # H x W x 3 uint8, as the agent sees it
    masks: np.ndarray              # instance mask: object index per pixel, -1 background
    references: list[str] = field(default_factory=list)   # reference explanations (CLEVR-X style)


def _listed(value):
    """questions.json keeps lists as JSON lists; older worlds wrote their repr."""
    return ast.literal_eval(value) if isinstance(value, str) else value


def load_items(world: Path, max_items: int | None = None, split: str = "test", seed: int = 0) -> list[BenchItem]:
    """Up to max_items questions of `split` (a seeded sample across the split's images, so a small
    card still covers many images and question types), with scenes, images and masks."""
    from vqa_agent.data import WorldTables
    tables = WorldTables.load(world)
    questions = [q for q in tables.questions if q["split"] == split]
    if not questions:
        raise ValueError(f"{world} has no {split} questions")
    if max_items is not None:
        if max_items < 1:
            raise ValueError(f"max_items must be at least 1, got {max_items}")
        questions = sorted(random.Random(seed).sample(questions, min(max_items, len(questions))),
                           key=lambda q: q["question_index"])
    scenes = {s["image_filename"]: s for s in tables.scenes}
    images: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    items = []
    for q in questions:
        name = q["image_filename"]
        if name not in images:
            with Image.open(tables.path / "images" / name) as file:
                pixels = np.asarray(file.convert("RGB"))
            images[name] = (pixels, load_mask_png(tables.path / "masks" / name))
        scene_json = scenes[name]
        items.append(BenchItem(int(q["question_index"]), q["question"], str(q["answer"]), _listed(q["program"]),
                               q["type"], name, scene_from_json(scene_json, name), scene_json, *images[name],
                               references=list(_listed(q.get("explanations") or []))))
    return items


def answer(agent, items: Sequence[BenchItem], questions: Sequence[str] | None = None) -> list:
    """The agent's output for each item (its own question, or questions[i] about item i's image)."""
    questions = [it.question for it in items] if questions is None else list(questions)
    outputs = []
    for start in range(0, len(items), ANSWER_BATCH):
        chunk = items[start:start + ANSWER_BATCH]
        outputs += agent.answer([it.image for it in chunk], questions[start:start + ANSWER_BATCH])
    return outputs


def rounds(items: Sequence[BenchItem], size: int = ROUND_SIZE) -> list[list[int]]:
    """For each item, the items whose images make its round: itself first, then the next items (in a
    circle) whose images are not in the round yet, up to `size` images (fewer when the items have fewer
    distinct images). A game never shows an image twice, and a sham must never show an image its own."""
    n = len(items)
    members = []
    for i in range(n):
        round_, seen = [i], {items[i].image_filename}
        for k in range(1, n):
            if len(round_) == size:
                break
            j = (i + k) % n
            if items[j].image_filename not in seen:
                round_.append(j)
                seen.add(items[j].image_filename)
        members.append(round_)
    return members


def explain(explainer, items: Sequence[BenchItem], outputs: Sequence, agent=None, seed: int = 0,
            size: int = ROUND_SIZE) -> list:
    """One explanation per item of the agent's output, each requested inside its round (see the module
    docstring); `agent` answers the item's question on the round's other images (needed by shams only)."""
    from explainers.base import ExplanationRequest
    from explainers.sham import ShamExplainer
    if not isinstance(explainer, ShamExplainer):
        requests = [ExplanationRequest(it.image, it.question, out, seed=seed + k)
                    for k, (it, out) in enumerate(zip(items, outputs))]
        return explainer.explain_batch(requests)
    if agent is None:
        raise ValueError(f"{explainer.name} shows another image's explanation of the round: pass the agent")
    members = rounds(items, size)
    others = [(i, j) for i, round_ in enumerate(members) for j in round_[1:]]
    other_outputs = answer(agent, [items[j] for _, j in others], [items[i].question for i, _ in others])
    by_round = {}
    for (i, j), out in zip(others, other_outputs):
        by_round.setdefault(i, []).append(ExplanationRequest(items[j].image, items[i].question, out, seed=seed + i))
    requests = []
    for i, (it, out) in enumerate(zip(items, outputs)):
        own = ExplanationRequest(it.image, it.question, out, seed=seed + i)
        requests.append(ExplanationRequest(it.image, it.question, out, seed + i, (own, *by_round.get(i, [])), 0))
    return explainer.explain_batch(requests)
