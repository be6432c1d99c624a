"""The game pool: the world's held-out images with their scenes and masks (ground truth for grading),
and the agent's image embeddings that image sets are chosen by (cached next to the server's data)."""
from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from pathlib import Path
from threading import Lock

import numpy as np
from PIL import Image
from tqdm import tqdm

from explainers.relqa_index import agent_fingerprint

from vqa_agent.agent import VQAAgent
from vqa_agent.world.build import POOL_SPLIT
from vqa_agent.world.clevr_io import scene_from_json
from vqa_agent.world.render import load_mask_png
from vqa_agent.world.scene import Scene

IMAGE_CACHE = 256          # decoded images kept in memory (a 320x240 image is 230 KB)


class GamePool:
    def __init__(self, world: str | Path, agent: VQAAgent, cache_dir: str | Path, progress: bool = False) -> None:
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
        self._images: OrderedDict[int, np.ndarray] = OrderedDict()
        self._scenes: dict[int, Scene] = {}
        self._lock = Lock()
        self.embeddings = self._embeddings(agent, Path(cache_dir), progress)

    def __len__(self) -> int:
        return len(self.filenames)

    def image_path(self, i: int) -> Path:
        return self.world / "images" / self.filenames[i]

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
        return load_mask_png(self.world / "masks" / self.filenames[i])

    def _embeddings(self, agent: VQAAgent, cache_dir: Path, progress: bool) -> np.ndarray:
        key = hashlib.sha256((agent_fingerprint(agent) + "\n".join(self.filenames) + str(self.world.resolve()))
                             .encode()).hexdigest()[:16]
        path = cache_dir / f"pool-embeddings-{key}.npy"
        if path.exists():
            embeddings = np.load(path)
            if embeddings.shape[0] == len(self):
                return embeddings
        parts = []
        for start in tqdm(range(0, len(self), 64), desc="embedding the game pool", disable=not progress):
            batch = [self.image(i) for i in range(start, min(start + 64, len(self)))]
            parts.append(agent.embed_images(batch))
        embeddings = np.concatenate(parts).astype(np.float32)
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, embeddings)
        tmp.replace(path)
        return embeddings
