"""`exag pool import DIR --out data/pools/NAME`: a folder of images (JPEG/PNG, any size, subfolders included)
made a game pool (game/image_pool.py) that `exag serve --pool NAME` plays on.

    summary = import_pool(Path("photos"), Path("data/pools/holiday"), agent="default",
                          annotations=Path("instances.json"))

Each image is opened and decoded (one that cannot be is named, skipped and counted), turned upright by its
EXIF orientation, and letterboxed to the world's size (WIDTH x HEIGHT, 320x240): scaled to fit whole, centred
on a grey (FILL) canvas. Nothing of it is cut off, so that every annotated object is still in the picture.
The agent's image encoder (`embed_images`) embeds the copies, and its embeddings are stored where the game
pool reads them (GamePool.embeddings_paths), so the server's image sets (game/image_sets.py, the same
difficulty levels and the same secret-exchangeability rule as on a world) need no worker to start.

Annotations (optional) give each image its object words: COCO ({"images": [{"id", "file_name"}],
"annotations": [{"image_id", "category_id"}], "categories": [{"id", "name"}]}) or Visual Genome ([{"image_id"
or a file name ("file_name", "image", "filename", "url", "image_url"), "objects": [{"names": [...]}]}], VG's
objects.json). An entry names an image by its path under DIR, its file name, or (VG) its stem being the id.

Everything is written into a temporary sibling of --out and renamed into place at the end: a failed import
leaves nothing. Bad input raises ValueError / FileNotFoundError / FileExistsError with one line.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from .image_pool import KIND, MANIFEST_FORMAT, POOL_MANIFEST, is_image_pool
from .image_sets import choose_image_set
from .pool import ImagePool
from .settings import DIFFICULTY_LEVELS, SETTINGS

WIDTH, HEIGHT = 320, 240                   # the world's images (vqa_agent/world/build.py WorldConfig)
FILL = (128, 128, 128)                     # the letterbox's bars
SUFFIXES = (".jpg", ".jpeg", ".png")
PREVIEW_SETS = 50                          # sets drawn per level for the manifest's difficulty summary
MIN_SET = min(s.images for s in SETTINGS.values())    # the smallest game (controlled: 5 images)
MAX_SET = max(s.images for s in SETTINGS.values())    # the largest (at-will: 20)


def import_pool(source: Path, out: Path, agent: str = "default", annotations: Path | None = None,
                force: bool = False, device: str = "cpu", progress: bool | None = None) -> dict:
    """Imports the images of `source` into the pool directory `out`; returns the summary the command prints:
    images, skipped (name -> why), ignored (files that are not images), warnings, the embeddings' shape, the
    annotations' summary and the image sets' preview."""
    source, out = Path(source), Path(out)
    progress = sys.stderr.isatty() if progress is None else progress
    if not source.is_dir():
        raise FileNotFoundError(f"{source} is not a directory of images")
    _check_out(out, source, force)
    candidates, ignored, special = _walk(source)
    if not candidates:
        raise ValueError(f"no images in {source} (looked for {', '.join(SUFFIXES)} files, subfolders included)")
    kind, words = _read_annotations(annotations) if annotations is not None else (None, None)
    fingerprint = _fingerprint(agent)          # an agent that is not there fails now, before the images are read
    made = [p for p in (out.parent, *out.parent.parents) if not p.exists()]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.importing-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        (tmp / "images").mkdir(parents=True)
        entries, skipped = _load(source, candidates, tmp / "images", progress)
        if len(entries) < max(2, MIN_SET):
            raise ValueError(f"{len(entries)} usable image(s) in {source} ({len(skipped)} unreadable); a game needs "
                             f"at least {max(2, MIN_SET)}")
        warnings = [f"{len(skipped)} unreadable image(s) skipped: {', '.join(sorted(skipped))}"[:2000]] * bool(skipped)
        warnings += [f"{len(special)} file(s) that are no regular files skipped, never opened (a FIFO, socket or "
                     f"device named like an image): {', '.join(special)}"[:2000]] * bool(special)
        if len(entries) < MAX_SET:
            warnings.append(f"{len(entries)} images: only games of at most {len(entries)} images fit (the at-will "
                            f"game shows {MAX_SET})")
        annotation_info = None if words is None else {"file": str(Path(annotations).resolve()), "format": kind,
                                                      **_match(words, entries, annotations, warnings)}
        manifest = {"format_version": MANIFEST_FORMAT, "kind": KIND, "source": str(source.resolve()),
                    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "image_size": [WIDTH, HEIGHT],
                    "resize": "letterbox", "fill": list(FILL), "annotations": annotation_info,
                    "skipped": [{"source": name, "reason": why} for name, why in sorted(skipped.items())],
                    "agent": {"name": str(agent)}, "images": entries}
        _write_manifest(tmp, manifest)
        embeddings, stored = _embed(tmp, agent, device, progress)
        manifest["agent"].update(fingerprint=fingerprint, embeddings=stored.relative_to(tmp).as_posix(),
                                 dimensions=int(embeddings.shape[1]))
        manifest["image_sets"] = _preview_sets(embeddings)
        _write_manifest(tmp, manifest)
        _replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        for path in made:               # folders made for --out, when the import failed
            if path.is_dir() and not any(path.iterdir()):
                path.rmdir()
    return {"out": str(out), "images": len(entries), "skipped": skipped, "ignored": ignored, "warnings": warnings,
            "embeddings": list(embeddings.shape), "agent": str(agent), "annotations": annotation_info,
            "image_sets": manifest["image_sets"]}


# --- the images -----------------------------------------------------------------------------------------

def _check_out(out: Path, source: Path, force: bool) -> None:
    """--out may be new, empty, or an imported pool (replaced); anything else only with --force, never the
    images' own folder or one holding it."""
    if source.resolve().is_relative_to(out.resolve()):
        raise FileExistsError(f"--out {out} holds the images being imported; choose another directory")
    if not out.exists() or is_image_pool(out) or (out.is_dir() and not any(out.iterdir())) or force:
        return
    raise FileExistsError(f"{out} exists and is not an imported image pool; pass --force to replace it")


def _walk(source: Path) -> tuple[list[str], int, list[str]]:
    """The candidate images (paths under `source`, sorted; hidden files and folders left out), how many
    other files there are, and the image names that are no regular files (opening a FIFO waits forever)."""
    found, ignored, special = [], 0, []
    for root, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            if not name.lower().endswith(SUFFIXES):
                ignored += 1
                continue
            relative = (Path(root) / name).relative_to(source).as_posix()
            try:
                regular = stat.S_ISREG(os.stat(Path(root) / name).st_mode)
            except OSError:                 # a dangling link: _load names why it cannot be read
                regular = True
            (found if regular else special).append(relative)
    return found, ignored, special


def _load(source: Path, names: list[str], images: Path, progress: bool) -> tuple[list[dict], dict[str, str]]:
    """Writes each image that decodes to `images` (letterboxed, PNG, numbered in order); its manifest entries,
    and name -> why of the images that do not decode."""
    from tqdm import tqdm
    entries, skipped = [], {}
    for name in tqdm(names, desc="reading the images", unit="image", disable=not progress):
        try:
            with Image.open(source / name) as img:
                img.verify()                        # a damaged file fails here or in load()
            with Image.open(source / name) as img:
                img.load()
                upright = ImageOps.exif_transpose(img)
                picture = letterbox(upright)
        except (OSError, UnidentifiedImageError, ValueError, SyntaxError, Image.DecompressionBombError) as error:
            skipped[name] = f"{type(error).__name__}: {error}"[:200]
            continue
        entry = {"file": f"{len(entries):05d}.png", "source": name, "original_size": list(upright.size)}
        picture.save(images / entry["file"])
        entries.append(entry)
    return entries, skipped


def letterbox(image: Image.Image, size: tuple[int, int] = (WIDTH, HEIGHT)) -> Image.Image:
    """The whole image scaled to fit `size` and centred on a FILL canvas (RGB)."""
    rgb = image.convert("RGB")
    scale = min(size[0] / rgb.width, size[1] / rgb.height)
    fitted = rgb.resize((max(1, round(rgb.width * scale)), max(1, round(rgb.height * scale))), Image.LANCZOS)
    canvas = Image.new("RGB", size, FILL)
    canvas.paste(fitted, ((size[0] - fitted.width) // 2, (size[1] - fitted.height) // 2))
    return canvas


# --- annotations ----------------------------------------------------------------------------------------

def _read_annotations(path: Path) -> tuple[str, dict[str, list[str]]]:
    """The file's format ("coco" or "visual-genome") and image key (a path, a file name or "id:N") -> its
    object words."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"annotations {path} cannot be read as JSON: {str(error).splitlines()[0]}"[:300]) from error
    except RecursionError:
        raise ValueError(f"annotations {path} are nested too deeply to be read as JSON") from None
    try:
        if isinstance(data, dict) and "images" in data:
            return "coco", _coco_words(data)
        if isinstance(data, list) and data:
            return "visual-genome", _vg_words(data)
    except KeyError as error:
        raise ValueError(f"annotations {path} are not COCO nor Visual Genome shaped: an entry lacks {error}"[:300]) \
            from error
    except (TypeError, AttributeError) as error:
        raise ValueError(f"annotations {path} are not COCO nor Visual Genome shaped: a value of the wrong kind "
                         f"({error})"[:300]) from error
    raise ValueError(f"annotations {path} are not COCO ({{images, annotations, categories}}) nor Visual Genome "
                     "([{image_id, objects: [{names}]}]) shaped")


def _coco_words(data: dict) -> dict[str, list[str]]:
    categories = {c["id"]: str(c["name"]).strip().lower() for c in data["categories"]}
    counts: dict[object, Counter] = {image["id"]: Counter() for image in data["images"]}
    for annotation in data["annotations"]:
        counts[annotation["image_id"]][categories[annotation["category_id"]]] += 1
    return {str(image["file_name"]): _words(counts[image["id"]]) for image in data["images"]}


def _vg_words(data: list) -> dict[str, list[str]]:
    words = {}
    for entry in data:
        name = next((entry[k] for k in ("file_name", "image", "filename", "url", "image_url") if entry.get(k)), None)
        key = str(name) if name is not None else f"id:{entry['image_id']}"
        counts = Counter(str(n).strip().lower() for o in entry["objects"] for n in o["names"])
        words[key] = _words(counts)
    return words


def _words(counts: Counter) -> list[str]:
    return [word for word, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0])) if word]


def _match(words: dict[str, list[str]], entries: list[dict], path: Path, warnings: list[str]) -> dict:
    """Gives each entry its object words; the annotations' summary. An annotation names an image by its path,
    its file name (a URL's last part) or, as "id:N", by the image's stem N."""
    by_path = {entry["source"]: entry for entry in entries}
    by_name: dict[str, list[dict]] = {}
    for entry in entries:
        by_name.setdefault(Path(entry["source"]).name, []).append(entry)
        by_name.setdefault(f"id:{Path(entry['source']).stem}", []).append(entry)
    matched, unmatched = 0, 0
    for key, object_words in words.items():
        found = [by_path[key]] if key in by_path else by_name.get(key.rsplit("/", 1)[-1], [])
        if not found:
            unmatched += 1
        for entry in found:
            entry["objects"] = object_words
        matched += bool(found)
    if not matched:
        raise ValueError(f"annotations {path} name none of the images ({len(words)} entries; e.g. "
                         f"{next(iter(words), '?')!r})"[:300])
    without = sum("objects" not in entry for entry in entries)
    if unmatched:
        warnings.append(f"{unmatched} of {len(words)} annotated images are not among the imported ones")
    if without:
        warnings.append(f"{without} image(s) have no annotation (their answers and words stay ungraded)")
    return {"matched": matched, "unmatched": unmatched, "images_without": without}


# --- embeddings, image sets, writing --------------------------------------------------------------------

def _fingerprint(agent: str) -> str:
    """The agent's checkpoint fingerprint (what the pool's embeddings are keyed by); one line if it has none."""
    from vqa_agent.checkpoints import checkpoint_fingerprint
    try:
        return checkpoint_fingerprint(agent)
    except OSError as error:            # no such agent, or an hf: directory that is no VQA model
        raise ValueError(f"--agent {agent}: {str(error).splitlines()[0]}"[:300]) from error


def _embed(pool_dir: Path, agent_name: str, device: str, progress: bool) -> tuple[np.ndarray, Path]:
    """The agent's embeddings of the pool's images, stored beside them where the game pool reads them."""
    pool = ImagePool(pool_dir)
    from vqa_agent.loading import load_agent          # also hf:PATH (transformers) agents
    agent = load_agent(agent_name, device)
    embeddings = np.asarray(pool.compute_embeddings(agent_name, agent, pool_dir / ".cache", progress))
    if embeddings.ndim != 2 or embeddings.shape[0] != len(pool) or not np.isfinite(embeddings).all():
        raise ValueError(f"agent {agent_name!r} embedded {len(pool)} images as an array of shape {embeddings.shape} "
                         f"(needs [{len(pool)}, D], finite)")
    stored = pool.embeddings_paths(agent_name, pool_dir / ".cache")[0]
    if not stored.exists():
        raise OSError(f"could not write the embeddings to {stored}")
    return embeddings, stored


def _preview_sets(embeddings: np.ndarray) -> dict:
    """Per difficulty level and game size: the mean difficulty of PREVIEW_SETS seeded sets (game/image_sets.py,
    as the server draws them), so a researcher sees how much harder "hard" is on these images."""
    rng = np.random.default_rng(0)
    preview = {}
    for setting in SETTINGS.values():
        n = min(setting.images, len(embeddings))
        preview[setting.name] = {"images": n, "levels": {
            level: round(float(np.mean([choose_image_set(embeddings, n, level, rng).difficulty
                                        for _ in range(PREVIEW_SETS)])), 4) for level in DIFFICULTY_LEVELS}}
    return preview


def _write_manifest(pool_dir: Path, manifest: dict) -> None:
    (pool_dir / POOL_MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")


def _replace(tmp: Path, out: Path) -> None:
    """Puts the finished pool at `out`: a rename, after moving whatever was there aside (deleted after)."""
    old = out.parent / f".{out.name}.replaced-{os.getpid()}"
    if out.is_dir() and not out.is_symlink():
        os.replace(out, old)
    elif out.exists() or out.is_symlink():         # a file, or a link (its target is left alone)
        out.unlink()
    os.replace(tmp, out)
    shutil.rmtree(old, ignore_errors=True)
