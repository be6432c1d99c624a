"""The game pool: the world's held-out images (positions, file names, world indices), their scenes and
masks (ground truth, read by the inference workers to grade), and the agent's image embeddings that image
sets are chosen by. Nothing here imports torch: a web process reads the embeddings from a file stored
beside the world (keyed by the agent's checkpoint and the pool), which the first worker (or a build)
computes once with `compute_embeddings`.

A pool is a built world (`scenes.json`: GamePool) or a folder of images imported by `exag pool import`
(`pool.json`, its layout and manifest in game/image_pool.py: ImagePool, no scenes nor masks,
`has_ground_truth` False). `GamePool(path)` opens either; `pool_dir(name)` finds an imported pool by
directory or by name under data/pools/.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections import OrderedDict
from pathlib import Path
from threading import Lock

import numpy as np
from PIL import Image

from explainers.scales import EXPLANATION_SCALE
from vqa_agent.checkpoints import checkpoint_fingerprint
from vqa_agent.known_image import KnownImage
from vqa_agent.world.build import POOL_SPLIT, ensure_rendered, shipped_pool_embeddings
from vqa_agent.world.clevr_io import scene_from_json
from vqa_agent.world.render import load_mask_png
from vqa_agent.world.scene import Scene

from .image_pool import POOL_MANIFEST, UNGRADED, is_image_pool, read_manifest

IMAGE_CACHE = 256          # decoded images kept in memory (a 320x240 image is 230 KB)
EMBEDDINGS_DIR = "pool-embeddings"   # beside the world's images: <world>/pool-embeddings/<key>.npy
FEATURES_DIR = "pool-features"       # <world>/pool-features/<key>.pt: what a worker's agent sees of the pool
EMBED_BATCH = 64
log = logging.getLogger(__name__)


POOLS_DIR = Path("data/pools")     # `exag pool import`'s pools by name (relative to the working directory)


def pool_dir(name: str | Path) -> Path:
    """A study's "pool" (`exag serve --pool NAME`): an imported pool's directory or its name under data/pools/, or a
    built world's directory (its held-out pool images: `exag serve --world DIR` serves them)."""
    for path in (Path(name), POOLS_DIR / str(name)):
        if is_image_pool(path):
            return path.resolve()
    if (Path(name) / "scenes.json").is_file():
        return Path(name).resolve()
    raise FileNotFoundError(f"no image pool {str(name)!r}: neither a directory with {POOL_MANIFEST}, a pool in "
                            f"{POOLS_DIR}/ (make one with `exag pool import DIR --out {POOLS_DIR}/NAME`) nor a built "
                            "world (scenes.json)")


def check_pool(name: str, pool: "GamePool") -> None:
    """A study's "pool" (a name or directory, "" = whichever the server serves) against the server's pool:
    ValueError with one line unless the server serves it (one pool per server: `exag serve --pool NAME`)."""
    if not name:
        return
    try:
        wanted = pool_dir(name)
    except FileNotFoundError as error:
        raise ValueError(f"pool: {error}") from error
    if wanted != pool.world:
        raise ValueError(f"pool: this study plays on the image pool {wanted}; this server's games draw from "
                         f"{pool.world} (start it with `exag serve --pool {name}`)")


class GamePool:
    has_ground_truth = True      # scenes and masks to grade by; an imported pool (ImagePool) has none

    def __new__(cls, world: str | Path | None = None) -> "GamePool":
        # an imported pool opens as one wherever a pool is opened
        if cls is GamePool and world is not None and is_image_pool(world):
            return super().__new__(ImagePool)
        return super().__new__(cls)

    def __init__(self, world: str | Path) -> None:
        self.world = Path(world).resolve()
        scenes_file = self.world / "scenes.json"
        if not scenes_file.exists():
            raise FileNotFoundError(f"{self.world} is not a built world (no scenes.json); build it with "
                                    f"`exag world build --out {self.world}`")
        scenes = json.loads(scenes_file.read_text())["scenes"]
        self.scenes_json = [s for s in scenes if s["split"] == POOL_SPLIT]
        if len(self.scenes_json) < 2:
            raise ValueError(f"{self.world} has {len(self.scenes_json)} pool images; a game needs at least 2")
        self.filenames = [s["image_filename"] for s in self.scenes_json]
        self._scenes: dict[int, Scene] = {}
        self._start_caches()

    def _start_caches(self) -> None:
        self._images: OrderedDict[int, np.ndarray] = OrderedDict()
        self._known: dict[int, KnownImage] = {}
        self._lock = Lock()
        self.embeddings: np.ndarray | None = None    # set by load_embeddings / compute_embeddings

    def __len__(self) -> int:
        return len(self.filenames)

    def image_path(self, i: int) -> Path:
        """The image file, rendered now if the world was laid out lazily (the first start renders the
        rest in the background)."""
        ensure_rendered(self.world, self.filenames[i])
        return self.world / "images" / self.filenames[i]

    def known(self, i: int) -> KnownImage:
        """Pool image i as the agent is given it: named by the world and its file, its pixels read only if
        the agent has not looked at it (a worker keeps what it saw of the whole pool)."""
        if i not in self._known:
            self._known[i] = KnownImage(f"pool:{self.world}/{self.filenames[i]}", lambda: self.image(i))
        return self._known[i]

    def world_index(self, i: int) -> int:
        return int(self.scenes_json[i]["image_index"])

    def image(self, i: int) -> np.ndarray:
        with self._lock:
            if i in self._images:
                self._images.move_to_end(i)
                return self._images[i]
        with Image.open(self.image_path(i)) as img:
            array = np.asarray(img.convert("RGB"))
        with self._lock:
            self._images[i] = array
            while len(self._images) > IMAGE_CACHE:
                self._images.popitem(last=False)
        return array

    def scene(self, i: int) -> Scene:
        if i not in self._scenes:
            self._scenes[i] = scene_from_json(self.scenes_json[i], f"pool scene {i}")
        return self._scenes[i]

    def masks(self, i: int) -> np.ndarray:
        ensure_rendered(self.world, self.filenames[i])
        return load_mask_png(self.world / "masks" / self.filenames[i])

    # --- the agent's embeddings of the pool -------------------------------------------------------

    def embeddings_paths(self, agent: str, cache_dir: str | Path) -> list[Path]:
        """Where the embeddings of this pool by this agent are stored: beside the world, else (a world
        that cannot be written) in the server's cache."""
        key = self._agent_key(agent)
        return [self.world / EMBEDDINGS_DIR / f"{key}.npy", Path(cache_dir) / f"pool-embeddings-{key}.npy"]

    def features_paths(self, agent: str, cache_dir: str | Path) -> list[Path]:
        """Where what this agent sees of the whole pool is stored by a worker (VQAAgent.save_seen), as the
        embeddings: beside the world, else in the server's cache."""
        key = self._agent_key(agent)
        return [self.world / FEATURES_DIR / f"{key}.pt", Path(cache_dir) / f"pool-features-{key}.pt"]

    def load_features(self, agent_name: str, agent, cache_dir: str | Path) -> bool:
        """Gives `agent` (a VQAAgent, worker side) what a worker of the same agent stored of the whole pool
        (`features_paths`); whether it found any."""
        for path in self.features_paths(agent_name, cache_dir):
            if not path.exists():
                continue
            try:
                agent.load_seen(path)
            except ValueError as error:
                log.warning("%s; the pool's images are looked at again", error)
                continue
            return True
        return False

    def store_features(self, agent_name: str, agent, cache_dir: str | Path) -> None:
        """Stores what `agent` has seen of the whole pool where the next worker's `load_features` finds it."""
        for path in self.features_paths(agent_name, cache_dir):
            try:
                agent.save_seen(path)
                log.info("stored what the agent sees of the pool in %s", path)
                return
            except OSError as error:
                log.warning("could not store the pool's features at %s: %s", path, error)

    def _agent_key(self, agent: str) -> str:
        return hashlib.sha256((checkpoint_fingerprint(agent) + "\n".join(self.filenames)).encode()).hexdigest()[:16]

    def load_embeddings(self, agent: str, cache_dir: str | Path, wait_s: float = 0.0) -> np.ndarray:
        """The stored embeddings, waiting up to wait_s for a worker to write them."""
        deadline, said = time.monotonic() + wait_s, False
        while True:
            for path in self.embeddings_paths(agent, cache_dir):
                if path.exists():
                    embeddings = np.load(path)
                    if embeddings.shape[0] == len(self):
                        self.embeddings = embeddings
                        return embeddings
            if time.monotonic() >= deadline:
                raise FileNotFoundError(
                    f"the game pool's embeddings by agent {agent!r} are not stored yet "
                    f"({self.embeddings_paths(agent, cache_dir)[0]}); an inference worker (`exag worker`) "
                    "computes them when it starts")
            if not said:
                log.warning("waiting for an inference worker to embed the game pool (once per world and agent)")
                said = True
            time.sleep(0.5)

    def compute_embeddings(self, agent_name: str, agent, cache_dir: str | Path, progress: bool = False) -> np.ndarray:
        """Embeds the pool with `agent` (a VQAAgent, worker side) and stores the result, unless stored."""
        try:
            return self.load_embeddings(agent_name, cache_dir)
        except FileNotFoundError:
            pass
        from tqdm import tqdm
        parts = []
        for start in tqdm(range(0, len(self), EMBED_BATCH), desc="embedding the game pool", disable=not progress):
            batch = [self.image(i) for i in range(start, min(start + EMBED_BATCH, len(self)))]
            parts.append(agent.embed_images(batch))
        embeddings = np.concatenate(parts).astype(np.float32)
        _store_embeddings(embeddings, self.embeddings_paths(agent_name, cache_dir))
        self.embeddings = embeddings
        return embeddings


WORDS_THRESHOLDS = (0.8, 0.6, 0.4, 0.2)    # share of listed words among the annotated objects -> the scale


class ImagePool(GamePool):
    """An imported pool (game/image_pool.py), with the interface of GamePool, which opens a directory holding
    its manifest as one of these:

        pool = GamePool("data/pools/holiday")   # isinstance(pool, ImagePool)
        pool.has_ground_truth                   # False: scene(i) and masks(i) are None, answers are "ungraded"
        pool.objects(i)                         # the annotated object words of image i, or None (not annotated)
    """
    has_ground_truth = False

    def __init__(self, world: str | Path) -> None:
        self.world = Path(world).resolve()        # the pool's directory (named as a world's, for GamePool's code)
        self.manifest = read_manifest(self.world)
        self.entries: list[dict] = self.manifest["images"]
        if len(self.entries) < 2:
            raise ValueError(f"{self.world} has {len(self.entries)} pool images; a game needs at least 2")
        self.filenames = [entry["file"] for entry in self.entries]
        self._start_caches()

    @property
    def agent(self) -> str:
        """The agent whose embeddings the import stored."""
        return str(self.manifest.get("agent", {}).get("name", ""))

    def image_path(self, i: int) -> Path:
        return self.world / "images" / self.filenames[i]

    def world_index(self, i: int) -> int:
        """What the event log calls the image (`world_images`): its position in the manifest."""
        return i

    def source(self, i: int) -> str:
        """The image's file name in the imported folder."""
        return str(self.entries[i]["source"])

    def scene(self, i: int) -> None:
        """None: an imported image has no scene (check `has_ground_truth`)."""
        return None

    def masks(self, i: int) -> None:
        """None: an imported image has no instance masks (check `has_ground_truth`)."""
        return None

    def objects(self, i: int) -> list[str] | None:
        """The object words annotated for image i (`--annotations`), or None when it has no annotation."""
        words = self.entries[i].get("objects")
        return None if words is None else list(words)

    def grade_explanation(self, explanation: dict, i: int) -> str:
        """An explanation's grade on this pool: ObjScene words by the share of them among image i's annotated
        objects; anything else (and any image without annotation) UNGRADED."""
        objects = self.objects(i)
        if explanation.get("kind") != "words" or not objects:
            return UNGRADED
        words = [w["word"] for w in explanation.get("payload", {}).get("words", [])]
        if not words:
            return EXPLANATION_SCALE[2]
        share = float(np.mean([word.lower() in objects for word in words]))
        return EXPLANATION_SCALE[next((k for k, t in enumerate(WORDS_THRESHOLDS) if share >= t), len(WORDS_THRESHOLDS))]


def _store_embeddings(embeddings: np.ndarray, paths: list[Path]) -> None:
    """Writes the embeddings to the first of `paths` that can be written."""
    for path in paths:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npy")
            np.save(tmp, embeddings)
            tmp.replace(path)         # atomic: a reader never sees half a file
            return
        except OSError as error:
            log.warning("could not store the pool embeddings at %s: %s", path, error)


def seed_shipped_embeddings(world: Path, agent: str, data_dir: Path) -> None:
    """Stores the shipped pool embeddings of the agent (the default one's ship with the game world) where
    the game pool reads them, so that a first start neither renders nor embeds the whole pool."""
    try:
        embeddings = shipped_pool_embeddings(world, checkpoint_fingerprint(agent))
    except (OSError, ValueError):      # not a shipped agent name nor a checkpoint directory
        return
    if embeddings is None:
        return
    paths = GamePool(world).embeddings_paths(agent, data_dir / "cache")
    if not any(path.exists() for path in paths):
        _store_embeddings(embeddings, paths)
