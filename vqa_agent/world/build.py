"""Builds a world on disk: scenes, renders, masks, questions with programs and explanations.

Layout of a built world DIR:
    DIR/scenes.json      CLEVR scene JSON (plus ExAG's camera and lights)
    DIR/questions.json   CLEVR question JSON plus program, answer, explanations, family, type, split
    DIR/images/          EXAG_<split>_<index>.png
    DIR/masks/           EXAG_<split>_<index>.png, pixel = object index + 1 (0 = background)
    DIR/manifest.json    the build settings and counts per split, family and answer; written last

Work happens in chunks of images, each with its own seed, so the result does not depend on the
number of worker processes. Finished chunks are kept in DIR/.building/ until the whole world is
assembled, so an interrupted build resumes where it stopped and never leaves a half-written world:
scenes.json, questions.json and manifest.json appear only when everything is done.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import shutil
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from PIL import Image
from tqdm import tqdm

from . import clevr_io
from .explanations import explain
from .questions import FAMILIES, QuestionGenerator
from .render import RenderConfig, render, save_mask_png, visible_pixel_counts
from .scene import SceneConfig, generate_scene

FORMAT_VERSION = 1
POOL_SPLIT = "pool"  # the game's image pool: held out from all training
ALL_SPLITS = ("train", "val", "test", POOL_SPLIT)
FAMILY_INDEX = {f.name: i for i, f in enumerate(FAMILIES)}


@dataclass
class WorldConfig:
    images: int = 10_000             # train + val + test images
    pool: int = 1_500                # game pool images, held out from training
    questions_per_image: int = 10
    explanations_per_question: int = 10
    val_fraction: float = 0.1
    test_fraction: float = 0.1
    seed: int = 0
    chunk_size: int = 100            # images per unit of work (and of answer balancing)
    width: int = 320
    height: int = 240
    max_scene_tries: int = 100       # re-draws of a scene whose objects are not all visible
    # Only the chunks holding these splits (None = all). ("val", "pool") is the game world: the game's
    # images and the RelQA question bank, byte-identical to the same images of the whole world, in a
    # fifth of the time.
    splits: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.images < 1 or self.pool < 0:
            raise ValueError(f"a world needs at least 1 image and a pool of 0 or more (got {self.images}, {self.pool})")
        if self.questions_per_image < 1 or self.explanations_per_question < 1 or self.chunk_size < 1:
            raise ValueError("questions per image, explanations per question and chunk size must be at least 1")
        if not (0 <= self.val_fraction and 0 <= self.test_fraction and self.val_fraction + self.test_fraction < 1):
            raise ValueError("val and test fractions must be non-negative and leave images for training")
        if self.splits is not None:
            self.splits = tuple(self.splits)
            unknown = sorted(set(self.splits) - set(ALL_SPLITS))
            if unknown or not self.splits:
                raise ValueError(f"unknown split(s) {', '.join(unknown)}; choose from {', '.join(ALL_SPLITS)}")

    @property
    def total_images(self) -> int:
        return self.images + self.pool

    def split_of(self, index: int) -> str:
        n_val = round(self.images * self.val_fraction)
        n_test = round(self.images * self.test_fraction)
        n_train = self.images - n_val - n_test
        if index < n_train:
            return "train"
        if index < n_train + n_val:
            return "val"
        if index < self.images:
            return "test"
        return POOL_SPLIT


    def chunks(self) -> list[int]:
        """The chunks this world is made of (all of them, or those holding a wanted split)."""
        n_chunks = -(-self.total_images // self.chunk_size)
        if self.splits is None:
            return list(range(n_chunks))
        return [c for c in range(n_chunks)
                if any(self.split_of(i) in self.splits
                       for i in range(c * self.chunk_size, min((c + 1) * self.chunk_size, self.total_images)))]


def make_scene(rng: np.random.Generator, index: int, split: str, config: WorldConfig):
    """A scene whose every object shows at least SceneConfig.min_visible_pixels, with its rendering."""
    scene_config = SceneConfig(width=config.width, height=config.height)
    render_config = RenderConfig(width=config.width, height=config.height)
    for _ in range(config.max_scene_tries):
        scene = generate_scene(rng, scene_config, index=index, split=split)
        rendering = render(scene, render_config)
        if visible_pixel_counts(rendering.mask, len(scene.objects)).min() >= scene_config.min_visible_pixels:
            scene.image_filename = clevr_io.image_filename(split, index)
            return scene, rendering
    raise RuntimeError(f"could not draw a scene with all objects visible in {config.max_scene_tries} tries")


def _write_png(array: np.ndarray, path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    Image.fromarray(array).save(tmp, format="PNG")
    os.replace(tmp, path)


def build_chunk(config: WorldConfig, chunk: int, work_dir: Path) -> dict:
    """Renders and questions one chunk of images; returns (and saves) its JSON-ready records."""
    rng = np.random.default_rng([config.seed, chunk])
    generator = QuestionGenerator()
    start = chunk * config.chunk_size
    scenes, questions = [], []
    for index in range(start, min(start + config.chunk_size, config.total_images)):
        split = config.split_of(index)
        scene, rendering = make_scene(rng, index, split, config)
        _write_png(rendering.image, work_dir / "images" / scene.image_filename)
        save_mask_png(rendering.mask, work_dir / "masks" / scene.image_filename)
        scenes.append(scene)
        for k, q in enumerate(generator.for_scene(scene, config.questions_per_image, rng)):
            # explanations draw from their own stream, so changing them never changes the scenes or questions
            explanation_rng = np.random.default_rng([config.seed, index, k])
            questions.append(clevr_io.QuestionRecord(
                question_index=-1, image_index=index, image_filename=scene.image_filename, split=split,
                question=q.question, program=q.program, answer=q.answer, family=q.family, type=q.type,
                explanations=explain(q.program, scene, explanation_rng, config.explanations_per_question),
                question_family_index=FAMILY_INDEX[q.family]))
    record = {"scenes": clevr_io.scenes_to_json(scenes, {})["scenes"],
              "questions": [clevr_io.question_to_json(q) for q in questions]}
    clevr_io.write_json_atomic(work_dir / "chunks" / f"{chunk:05d}.json", record)
    return record


def _build_chunk_star(args):
    return build_chunk(*args)


def _settings(config: WorldConfig) -> dict:
    settings = {"format_version": FORMAT_VERSION, **asdict(config)}
    if config.splits is None:
        del settings["splits"]     # whole worlds keep the settings they were built with before splits existed
    else:
        settings["splits"] = list(config.splits)
    return settings


def is_built(out: Path, config: WorldConfig) -> bool:
    manifest = out / "manifest.json"
    if not manifest.exists():
        return False
    return json.loads(manifest.read_text()).get("settings") == _settings(config)


def build_world(out: Path | str, config: WorldConfig | None = None, workers: int | None = None,
                force: bool = False, progress: bool = True) -> Path:
    """Builds (or finishes, or confirms) the world in `out`. Idempotent: a complete world with the same
    settings is left alone; a different complete world is only replaced with force=True."""
    config = config or WorldConfig()
    out = Path(out)
    if is_built(out, config):
        return out
    if (out / "manifest.json").exists() and not force:
        raise FileExistsError(f"{out} holds a world built with other settings; pass force=True "
                              "(--force) to replace it, or choose another directory")
    work = out / ".building"
    settings_file = work / "settings.json"
    if work.exists() and (not settings_file.exists() or json.loads(settings_file.read_text()) != _settings(config)):
        shutil.rmtree(work)  # leftovers of an interrupted build with other settings
    for sub in ("images", "masks", "chunks"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    clevr_io.write_json_atomic(settings_file, _settings(config))

    chunks = config.chunks()
    done = {int(p.stem) for p in (work / "chunks").glob("*.json")} & set(chunks)
    todo = [c for c in chunks if c not in done]
    total = sum(min(config.chunk_size, config.total_images - c * config.chunk_size) for c in chunks)
    bar = tqdm(total=total, desc="building world", unit="img", disable=not progress,
               initial=sum(min(config.chunk_size, config.total_images - c * config.chunk_size) for c in done))
    workers = workers or os.cpu_count() or 1
    jobs = [(config, c, work) for c in todo]
    if workers == 1 or len(jobs) <= 1:
        for job in jobs:
            bar.update(len(build_chunk(*job)["scenes"]))
    else:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            for record in pool.imap_unordered(_build_chunk_star, jobs):
                bar.update(len(record["scenes"]))
    bar.close()
    _assemble(out, work, config, chunks)
    return out


def _assemble(out: Path, work: Path, config: WorldConfig, chunks: list[int]) -> None:
    scenes, questions = [], []
    for c in chunks:
        record = json.loads((work / "chunks" / f"{c:05d}.json").read_text())
        scenes.extend(record["scenes"])
        questions.extend(record["questions"])
    if config.splits is not None:   # chunks at the edge of a wanted split bring some of their neighbours
        unwanted = [s["image_filename"] for s in scenes if s["split"] not in config.splits]
        for name in unwanted:
            for sub in ("images", "masks"):
                (work / sub / name).unlink(missing_ok=True)
        scenes = [s for s in scenes if s["split"] in config.splits]
        questions = [q for q in questions if q["split"] in config.splits]
    for i, q in enumerate(questions):
        q["question_index"] = i
    info = {"name": "ExAG synthetic CLEVR-compatible world", "version": FORMAT_VERSION, "seed": config.seed}
    # A forced rebuild replaces the previous world; its manifest goes first so a crash never leaves a
    # manifest describing files that are no longer there.
    (out / "manifest.json").unlink(missing_ok=True)
    for sub in ("images", "masks"):
        if (out / sub).exists():
            shutil.rmtree(out / sub)
        os.replace(work / sub, out / sub)
    clevr_io.write_json_atomic(out / "scenes.json", {"info": info, "scenes": scenes})
    clevr_io.write_json_atomic(out / "questions.json", {"info": info, "questions": questions})
    clevr_io.write_json_atomic(out / "manifest.json", manifest(config, scenes, questions))
    shutil.rmtree(work)


def manifest(config: WorldConfig, scenes: list[dict], questions: list[dict]) -> dict:
    per_family: dict[str, Counter] = defaultdict(Counter)
    for q in questions:
        per_family[q["family"]][q["answer"]] += 1
    return {
        "settings": _settings(config),
        "images": len(scenes),
        "questions": len(questions),
        "images_per_split": dict(Counter(s["split"] for s in scenes)),
        "questions_per_split": dict(Counter(q["split"] for q in questions)),
        "questions_per_type": dict(Counter(q["type"] for q in questions)),
        "questions_per_family": {f: sum(c.values()) for f, c in sorted(per_family.items())},
        "answers": dict(Counter(q["answer"] for q in questions).most_common()),
        "answers_per_family": {f: dict(c.most_common()) for f, c in sorted(per_family.items())},
    }

