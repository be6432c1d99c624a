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

Shipped worlds. The game world (the "val" and "pool" splits of the default world) ships its scenes.json
and questions.json, xz-compressed, in vqa_agent/world/data/<name>/ (a few MB). Building it then only
lays those files out (a couple of seconds) and renders the images and masks, which build_world does at
once or, with lazy=True, leaves to ensure_rendered (one image on demand, ~0.1 s) and render_missing (a
background process that `exag serve` starts). Either way every file is byte-identical to the full
build's: rendering is deterministic and a scene read back from scenes.json renders exactly as drawn.
The default agent's pool embeddings ship beside them (shipped_pool_embeddings), keyed by the agent's
fingerprint, so a first start needs neither every pool image nor a pass of the agent over them.
"""
from __future__ import annotations

import hashlib
import json
import lzma
import multiprocessing
import os
import shutil
import sys
import threading
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
from PIL import Image
from tqdm import tqdm

from ..threads import thread_env
from . import clevr_io
from .explanations import explain
from .questions import FAMILIES, QuestionGenerator
from .render import RenderConfig, render, save_mask_png, visible_pixel_counts
from .scene import SceneConfig, generate_scene

FORMAT_VERSION = 2  # 2: CLEVR's 90 families, phrasing ids, held-out phrasings
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
        # whole phrasings are held out of training (questions.HELDOUT_PHRASINGS); val and test keep
        # them, flagged, so `exag bench vqa` can report how agents do on wordings they never saw
        for k, q in enumerate(generator.for_scene(scene, config.questions_per_image, rng,
                                                  allow_heldout=split != "train")):
            questions.append(clevr_io.QuestionRecord(
                question_index=-1, image_index=index, image_filename=scene.image_filename, split=split,
                question=q.question, program=q.program, answer=q.answer, family=q.family, type=q.type,
                explanations=_explanations(config, scene, index, k, q.program, q.question),
                question_family_index=FAMILY_INDEX[q.family], phrasing=q.phrasing,
                heldout_phrasing=q.heldout_phrasing))
    record = {"scenes": clevr_io.scenes_to_json(scenes, {})["scenes"],
              "questions": [clevr_io.question_to_json(q) for q in questions]}
    clevr_io.write_json_atomic(work_dir / "chunks" / f"{chunk:05d}.json", record)
    return record


def _explanations(config: WorldConfig, scene, index: int, k: int, program, question: str) -> list[str]:
    # explanations draw from their own stream (the image's k-th question), so changing them never
    # changes the scenes or questions, and rewrite_explanations gives what a new build would
    rng = np.random.default_rng([config.seed, index, k])
    return explain(program, scene, rng, config.explanations_per_question, question=question)


def _built_config(world: Path) -> WorldConfig:
    """The settings a built world was made with (its manifest's)."""
    settings = json.loads((world / "manifest.json").read_text())["settings"]
    return WorldConfig(**{k: v for k, v in settings.items() if k != "format_version"})


def rewrite_explanations(world: Path | str, progress: bool = True) -> None:
    """Writes the reference explanations of a built world's questions again, as a new build of the same
    settings would write them: for a change of explanations.py without rendering or questioning anew."""
    world = Path(world)
    config = _built_config(world)
    scenes = {s.index: s for s in clevr_io.load_scenes(world / "scenes.json")}
    data = json.loads((world / "questions.json").read_text())
    seen: Counter = Counter()
    for q in tqdm(data["questions"], desc="explaining", unit="q", disable=not progress):
        index = q["image_index"]
        program = clevr_io.question_from_json(q).program
        q["explanations"] = _explanations(config, scenes[index], index, seen[index], program, q["question"])
        seen[index] += 1
    clevr_io.write_json_atomic(world / "questions.json", data)


def derive_world(full: Path | str, out: Path | str, splits: tuple[str, ...] = ("val", "pool")) -> Path:
    """The world of `splits` (the game world by default) from a built full world of the same settings, in
    seconds: the same JSON a build of those splits writes; images are rendered on demand (ensure_rendered)."""
    full, out = Path(full), Path(out)
    config = replace(_built_config(full), splits=tuple(splits))
    scenes = [s for s in json.loads((full / "scenes.json").read_text())["scenes"] if s["split"] in splits]
    questions = [q for q in json.loads((full / "questions.json").read_text())["questions"] if q["split"] in splits]
    out.mkdir(parents=True, exist_ok=True)
    for sub in ("images", "masks"):
        (out / sub).mkdir(exist_ok=True)
    _write_world_json(out, config, scenes, questions)
    return out


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
                force: bool = False, progress: bool = True, lazy: bool = False,
                shipped: Path | None = None) -> Path:
    """Builds (or finishes, or confirms) the world in `out`. Idempotent: a complete world with the same
    settings is left alone; a different complete world is only replaced with force=True.

    A world whose scenes and questions ship with the package (see shipped_source; `shipped` names another
    such directory) is laid out from them; its images are then rendered here, or with lazy=True left
    to ensure_rendered / render_missing. A lazily laid out world is finished by any later eager call."""
    config = config or WorldConfig()
    out = Path(out)
    if is_built(out, config):
        if not lazy:
            render_missing(out, workers=workers, progress=progress)
        return out
    if (out / "manifest.json").exists() and not force:
        raise FileExistsError(f"{out} holds a world built with other settings; pass force=True "
                              "(--force) to replace it, or choose another directory")
    source = shipped if shipped is not None else shipped_source(config)
    if source is not None and _source_settings(source) == _settings(config):
        lay_out_world(out, source, config)
        if not lazy:
            render_missing(out, workers=workers, progress=progress)
        return out
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
    # A forced rebuild replaces the previous world; its manifest goes first so a crash never leaves a
    # manifest describing files that are no longer there.
    (out / "manifest.json").unlink(missing_ok=True)
    for sub in ("images", "masks"):
        if (out / sub).exists():
            shutil.rmtree(out / sub)
        os.replace(work / sub, out / sub)
    _write_world_json(out, config, scenes, questions)
    shutil.rmtree(work)


def _write_world_json(out: Path, config: WorldConfig, scenes: list[dict], questions: list[dict]) -> None:
    """scenes.json, questions.json (numbered in order) and, last, manifest.json."""
    (out / "manifest.json").unlink(missing_ok=True)
    for i, q in enumerate(questions):
        q["question_index"] = i
    # CLEVR's info block (info.split is what CLEVR's question generator reads), with ours on top
    info = clevr_io.clevr_info((s["split"] for s in scenes), name="ExAG synthetic CLEVR-compatible world",
                               version=FORMAT_VERSION, seed=config.seed)
    clevr_io.write_json_atomic(out / "scenes.json", {"info": info, "scenes": scenes})
    clevr_io.write_json_atomic(out / "questions.json", {"info": info, "questions": questions})
    clevr_io.write_json_atomic(out / "manifest.json", manifest(config, scenes, questions))


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



# --- shipped worlds: laid out from their scenes and questions, rendered eagerly or lazily ------------------

SHIPPED_DIR = Path(__file__).resolve().parent / "data"
GAME_WORLD_SPLITS = ("val", "pool")
_SOURCE_FILES = ("scenes.json", "questions.json")


def shipped_source(config: WorldConfig) -> Path | None:
    """The shipped directory whose settings are `config`'s, if any (the game world's today)."""
    if not SHIPPED_DIR.is_dir():
        return None
    for directory in sorted(SHIPPED_DIR.iterdir()):
        if (directory / "settings.json").exists() and _source_settings(directory) == _settings(config):
            return directory
    return None


def _source_settings(source: Path) -> dict:
    return json.loads((source / "settings.json").read_text())["settings"]


def write_source(world: Path, source: Path) -> None:
    """Writes a built world's scenes.json and questions.json, xz-compressed, with its settings and their
    SHA-256 into `source` (how vqa_agent/world/data/game-world is made: `python -m
    vqa_agent.world.build ship WORLD SOURCE`)."""
    world, source = Path(world), Path(source)
    manifest_ = json.loads((world / "manifest.json").read_text())
    source.mkdir(parents=True, exist_ok=True)
    digests = {}
    for name in _SOURCE_FILES:
        data = (world / name).read_bytes()
        digests[name] = hashlib.sha256(data).hexdigest()
        (source / f"{name}.xz").write_bytes(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
    shutil.copyfile(world / "manifest.json", source / "manifest.json")   # 5 KB; saves reading 40 MB of JSON
    clevr_io.write_json_atomic(source / "settings.json", {"settings": manifest_["settings"], "sha256": digests})


def lay_out_world(out: Path, source: Path, config: WorldConfig) -> Path:
    """Writes scenes.json, questions.json (the shipped bytes, checked) and manifest.json (last) into
    `out`, with empty images/ and masks/: a built world whose images are rendered on demand."""
    out = Path(out)
    digests = json.loads((source / "settings.json").read_text())["sha256"]
    data = {}
    for name in _SOURCE_FILES:
        data[name] = lzma.decompress((source / f"{name}.xz").read_bytes())
        if hashlib.sha256(data[name]).hexdigest() != digests[name]:
            raise ValueError(f"{source / name}.xz is damaged (its SHA-256 is not the one in settings.json)")
    (out / "manifest.json").unlink(missing_ok=True)
    for sub in ("images", "masks"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    for name in _SOURCE_FILES:
        tmp = out / f".{name}.tmp"
        tmp.write_bytes(data[name])
        os.replace(tmp, out / name)
    shutil.rmtree(out / ".building", ignore_errors=True)
    if (source / "manifest.json").exists():
        tmp = out / ".manifest.json.tmp"
        shutil.copyfile(source / "manifest.json", tmp)
        os.replace(tmp, out / "manifest.json")
    else:
        scenes = json.loads(data["scenes.json"])["scenes"]
        questions = json.loads(data["questions.json"])["questions"]
        clevr_io.write_json_atomic(out / "manifest.json", manifest(config, scenes, questions))
    return out


_scene_cache: dict[tuple[str, int], tuple[dict, RenderConfig]] = {}
_scene_cache_lock = threading.Lock()


def _world_scenes(world: Path) -> tuple[dict, RenderConfig]:
    """{image filename: scene JSON} of a built world and its render settings (cached per scenes.json)."""
    scenes_file = world / "scenes.json"
    key = (str(scenes_file.resolve()), scenes_file.stat().st_mtime_ns)
    with _scene_cache_lock:
        if key not in _scene_cache:
            settings = json.loads((world / "manifest.json").read_text())["settings"]
            scenes = {s["image_filename"]: s for s in json.loads(scenes_file.read_text())["scenes"]}
            _scene_cache.clear()
            _scene_cache[key] = scenes, RenderConfig(width=settings["width"], height=settings["height"])
        return _scene_cache[key]


def is_rendered(world: Path | str, filename: str) -> bool:
    world = Path(world)
    return (world / "masks" / filename).exists() and (world / "images" / filename).exists()


def ensure_rendered(world: Path | str, filename: str) -> None:
    """Makes sure world/images/FILENAME and world/masks/FILENAME exist: nothing to do (two stats) when
    they do, else that scene is rendered from scenes.json (~0.1 s) and both are written atomically
    (image first, mask last: the mask's presence means both are there). Safe from any number of
    threads and processes at once: each writes a private temporary file and renames it."""
    world = Path(world)
    if is_rendered(world, filename):
        return
    scenes, render_config = _world_scenes(world)
    if filename not in scenes:
        raise FileNotFoundError(f"{world} has no image {filename}")
    rendering = render(clevr_io.scene_from_json(scenes[filename], filename), render_config)
    tag = f"{os.getpid()}-{threading.get_ident()}"
    image_tmp = world / "images" / f".{filename}.{tag}.png"
    Image.fromarray(rendering.image).save(image_tmp, format="PNG")
    os.replace(image_tmp, world / "images" / filename)
    mask_tmp = world / "masks" / f".{filename}.{tag}.png"
    save_mask_png(rendering.mask, mask_tmp)
    os.replace(mask_tmp, world / "masks" / filename)


def missing_images(world: Path | str, pool_backwards: bool = False,
                   splits: tuple[str, ...] | None = None) -> list[str]:
    """The images of a built world (of `splits`, None: all) not yet rendered, pool first (the game needs
    those), then the rest; with pool_backwards the pool from its end (a worker warms up from its start)."""
    world = Path(world)
    scenes = [s for s in json.loads((world / "scenes.json").read_text())["scenes"]
              if splits is None or s["split"] in splits]
    present = {p.name for p in (world / "masks").glob("*.png")} & {p.name for p in (world / "images").glob("*.png")}
    missing = [s for s in scenes if s["image_filename"] not in present]
    pool = [s["image_filename"] for s in missing if s["split"] == POOL_SPLIT]
    rest = [s["image_filename"] for s in missing if s["split"] != POOL_SPLIT]
    return (pool[::-1] if pool_backwards else pool) + rest


def render_progress(world: Path | str) -> dict:
    """{"rendered": n, "total": m, "done": bool} of a built world (counts files; cheap)."""
    world = Path(world)
    total = json.loads((world / "manifest.json").read_text())["images"]
    rendered = sum(1 for p in (world / "masks").glob("*.png") if not p.name.startswith("."))
    return {"rendered": min(rendered, total), "total": total, "done": rendered >= total}


def _render_one(args: tuple[str, str]) -> str:
    ensure_rendered(Path(args[0]), args[1])
    return args[1]


def render_missing(world: Path | str, workers: int | None = None, progress: bool = True,
                   parent: int | None = None, pool_backwards: bool = False,
                   splits: tuple[str, ...] | None = None) -> int:
    """Renders every image of `world` not yet rendered (pool first); returns how many. With `parent`,
    stops as soon as that process is gone (a background renderer never outlives its server)."""
    world = Path(world)
    todo = missing_images(world, pool_backwards, splits)
    if not todo:
        return 0
    bar = tqdm(total=len(todo), desc="rendering the world's images", unit="img", disable=not progress)
    workers = min(workers or os.cpu_count() or 1, len(todo))
    done = 0
    if workers == 1:
        for name in todo:
            if parent is not None and os.getppid() != parent:
                break
            ensure_rendered(world, name)
            done += 1
            bar.update()
    else:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            for _ in pool.imap_unordered(_render_one, [(str(world), n) for n in todo], chunksize=8):
                done += 1
                bar.update()
    bar.close()
    return done


def start_background_render(world: Path | str, nice: int = 10) -> "subprocess.Popen | None":
    """A low-priority process (one core) that renders what `world` still lacks, pool first (from its end:
    inference workers warm up from its start and render on demand), and ends when done or when this
    process ends; None when nothing is missing."""
    import subprocess

    world = Path(world)
    if render_progress(world)["done"]:
        return None
    code = ("import os, sys; os.nice(%d); from vqa_agent.world.build import render_missing; "
            "render_missing(sys.argv[1], workers=1, progress=False, parent=int(sys.argv[2]), pool_backwards=True)"
            % nice)
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
               **thread_env(1))       # one core at most, BLAS and OpenMP included
    return subprocess.Popen([sys.executable, "-c", code, str(world), str(os.getpid())], env=env,
                            stdin=subprocess.DEVNULL)


def shipped_pool_embeddings(world: Path | str, fingerprint: str) -> np.ndarray | None:
    """The pool embeddings [n_pool, dim] float32 (pool order of scenes.json) by the agent whose checkpoint
    has this fingerprint (vqa_agent.checkpoints.checkpoint_fingerprint: a hash of its files), when they ship for
    `world`'s settings, else None. They are what agent.embed_images gives on the rendered pool images."""
    world = Path(world)
    try:
        manifest_ = json.loads((world / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    source = next((d for d in (sorted(SHIPPED_DIR.iterdir()) if SHIPPED_DIR.is_dir() else [])
                   if (d / "settings.json").exists() and _source_settings(d) == manifest_.get("settings")), None)
    path = source / f"pool-embeddings-{fingerprint}.npy" if source is not None else None
    if path is None or not path.exists():
        return None
    embeddings = np.load(path, allow_pickle=False)
    if embeddings.shape[0] != manifest_["images_per_split"].get(POOL_SPLIT, 0):
        return None
    return embeddings.astype(np.float32, copy=False)


def write_shipped_pool_embeddings(world: Path | str, agent_name: str, source: Path) -> Path:
    """Renders `world` fully, embeds its pool with the agent (as the inference worker does, 64 at a time)
    and saves the result into the shipped `source` directory as pool-embeddings-<fingerprint>.npy."""
    from vqa_agent.agent import VQAAgent
    from vqa_agent.checkpoints import checkpoint_fingerprint

    world = Path(world)
    render_missing(world, progress=False)
    agent = VQAAgent.from_pretrained(agent_name, device="cpu")
    names = [s["image_filename"] for s in json.loads((world / "scenes.json").read_text())["scenes"]
             if s["split"] == POOL_SPLIT]
    parts = []
    for start in range(0, len(names), 64):
        batch = [np.asarray(Image.open(world / "images" / n).convert("RGB")) for n in names[start:start + 64]]
        parts.append(agent.embed_images(batch))
    path = Path(source) / f"pool-embeddings-{checkpoint_fingerprint(agent_name)}.npy"
    np.save(path, np.concatenate(parts).astype(np.float32))
    return path


if __name__ == "__main__":   # python -m vqa_agent.world.build ship WORLD SOURCE [AGENT] | explain WORLD | derive FULL OUT
    if len(sys.argv) == 3 and sys.argv[1] == "explain":
        rewrite_explanations(Path(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] == "derive":
        print(derive_world(Path(sys.argv[2]), Path(sys.argv[3])))
    elif len(sys.argv) >= 4 and sys.argv[1] == "ship":
        write_source(Path(sys.argv[2]), Path(sys.argv[3]))
        if len(sys.argv) > 4:
            print(write_shipped_pool_embeddings(Path(sys.argv[2]), sys.argv[4], Path(sys.argv[3])))
    else:
        raise SystemExit("usage: python -m vqa_agent.world.build ship WORLD SOURCE [AGENT] | explain WORLD | "
                         "derive FULL_WORLD OUT")
