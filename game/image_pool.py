"""An imported game pool on disk (`exag pool import`, game/pool_import.py, writes it): a folder of natural images
made the same size as the world's, with the agent's embeddings of them, and no scenes nor masks. game/pool.py
opens it: `GamePool(path)` is an ImagePool when `is_image_pool(path)`, and reads the manifest with
`read_manifest`. This module imports no other of the game's.

Its layout (written atomically by the import):

    <pool>/pool.json                        # the manifest (MANIFEST_FORMAT, kind "images", one entry per image)
    <pool>/images/00000.png ...             # 320x240 RGB copies, letterboxed
    <pool>/pool-embeddings/<key>.npy        # [N, D] by the agent named in the manifest (key: GamePool._agent_key)

Correctness of the agent's answers then comes from the rater task: what such a pool cannot check is UNGRADED.
ObjScene words are graded against the annotated object words when the image has them (ImagePool.grade_explanation).
"""
from __future__ import annotations

import json
from pathlib import Path

POOL_MANIFEST = "pool.json"       # what marks an imported pool
MANIFEST_FORMAT = 1
KIND = "images"
UNGRADED = "ungraded"        # the grade of what an imported pool cannot check (no scene to check it on)


def is_image_pool(path: str | Path) -> bool:
    return (Path(path) / POOL_MANIFEST).is_file()


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
