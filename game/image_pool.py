"""An imported game pool (`exag pool import`, game/pool_import.py): a folder of natural images made the same
size as the world's, with the agent's embeddings of them, and no scenes nor masks. It has the interface of
GamePool (game/pool.py), which opens a directory holding `pool.json` as one of these:

    pool = GamePool("data/pools/holiday")   # isinstance(pool, ImagePool)
    pool.has_ground_truth                   # False: scene(i) and masks(i) are None, answers are "ungraded"
    pool.objects(i)                         # the annotated object words of image i, or None (not annotated)

Its layout (written atomically by the import):

    <pool>/pool.json                        # the manifest (MANIFEST_FORMAT, kind "images", one entry per image)
    <pool>/images/00000.png ...             # 320x240 RGB copies, letterboxed
    <pool>/pool-embeddings/<key>.npy        # [N, D] by the agent named in the manifest (key: GamePool._agent_key)

Correctness of the agent's answers then comes from the rater task; ObjScene words are graded against the
annotated object words when the image has them.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from explainers.scales import EXPLANATION_SCALE

from .pool import POOL_MANIFEST, GamePool

MANIFEST_FORMAT = 1
KIND = "images"
UNGRADED = "ungraded"        # the grade of what an imported pool cannot check (no scene to check it on)
WORDS_THRESHOLDS = (0.8, 0.6, 0.4, 0.2)    # share of listed words among the annotated objects -> the scale


def read_manifest(path: str | Path) -> dict:
    """The pool's manifest, checked enough that the pool opens; ValueError with one line otherwise."""
    file = Path(path) / POOL_MANIFEST
    try:
        manifest = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise ValueError(f"{file} cannot be read as an image pool's manifest: "
                         f"{str(error).splitlines()[0] if str(error) else type(error).__name__}"[:300]) from None
    if not isinstance(manifest, dict) or manifest.get("kind") != KIND or not isinstance(manifest.get("images"), list):
        raise ValueError(f"{file} is not an image pool's manifest (kind {KIND!r} and a list of images)")
    if manifest.get("format_version") != MANIFEST_FORMAT:
        raise ValueError(f"{file} has format_version {manifest.get('format_version')!r}; this code reads "
                         f"{MANIFEST_FORMAT} (import the images again with `exag pool import`)")
    for k, entry in enumerate(manifest["images"]):
        check_entry(file, k, entry)
    return manifest


def check_entry(file: Path, k: int, entry) -> None:
    """An image's entry names a file in the pool's images/ folder: a hand-edited manifest must not make the
    server read (and show players) any other file, such as /etc/passwd or ../x.png."""
    name = entry.get("file") if isinstance(entry, dict) else None
    if not isinstance(name, str) or name in ("", ".", "..") or Path(name).name != name or "\\" in name:
        raise ValueError(f"{file}: image {k} has file {str(name)[:100]!r}; an entry names a file in the pool's "
                         "images/ folder (e.g. \"00000.png\"), no path")


class ImagePool(GamePool):
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
