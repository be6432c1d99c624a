"""The world builder: layout, CLEVR formats, splits by image, idempotence, resume, determinism."""
import json
import math
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from cli import exag

from vqa_agent.world import build as world_build
from vqa_agent.world.build import WorldConfig, build_world
from vqa_agent.world.clevr_io import load_questions, load_scenes
from vqa_agent.world.dataset import WorldDataset
from vqa_agent.world.programs import execute
from vqa_agent.world.render import load_mask_png

SMALL = WorldConfig(images=12, pool=4, chunk_size=4, questions_per_image=4, explanations_per_question=2, seed=3)
REPO = Path(__file__).resolve().parents[2]


def test_layout_and_counts(tiny_world):
    manifest = json.loads((tiny_world / "manifest.json").read_text())
    scenes = load_scenes(tiny_world / "scenes.json")
    questions = load_questions(tiny_world / "questions.json")
    assert manifest["images"] == len(scenes) == 40
    assert manifest["questions"] == len(questions)
    assert manifest["images_per_split"] == {"train": 24, "val": 3, "test": 3, "pool": 10}
    assert sum(manifest["answers"].values()) == len(questions)
    for scene in scenes:
        assert re.fullmatch(rf"EXAG_{scene.split}_0*{scene.index}\.png", scene.image_filename)
        image = Image.open(tiny_world / "images" / scene.image_filename)
        assert image.size == (320, 240) and image.mode == "RGB"
        mask = load_mask_png(tiny_world / "masks" / scene.image_filename)
        assert set(np.unique(mask)) - {-1} == set(range(len(scene.objects)))


def test_questions_are_right_about_their_scenes(tiny_world):
    scenes = {s.index: s for s in load_scenes(tiny_world / "scenes.json")}
    questions = load_questions(tiny_world / "questions.json")
    assert [q.question_index for q in questions] == list(range(len(questions)))
    for q in questions:
        scene = scenes[q.image_index]
        assert q.split == scene.split and q.image_filename == scene.image_filename
        assert execute(q.program, scene) == q.answer
        assert q.family and q.type and 1 <= len(q.explanations) <= 3


def test_splits_are_by_image_and_pool_is_held_out(tiny_world):
    questions = load_questions(tiny_world / "questions.json")
    splits_of_image = {}
    for q in questions:
        splits_of_image.setdefault(q.image_index, set()).add(q.split)
    assert all(len(s) == 1 for s in splits_of_image.values())
    assert WorldDataset(tiny_world, "train").records  # training reads train only
    assert all(q.split == "pool" for q in WorldDataset(tiny_world, "pool").records)


def test_dataset_items(tiny_world):
    data = WorldDataset(tiny_world, "val")
    item = data[0]
    assert item["image"].shape == (3, 240, 320) and item["image"].dtype.is_floating_point is False
    assert item["question"].endswith("?") and item["answer"]
    with pytest.raises(ValueError, match="no split"):
        WorldDataset(tiny_world, "holdout")


def test_rebuild_with_same_settings_does_nothing(tiny_world):
    from tiny_worlds import TINY_WORLD
    before = {p: p.stat().st_mtime_ns for p in tiny_world.glob("*.json")}
    build_world(tiny_world, TINY_WORLD, workers=1, progress=False)
    assert {p: p.stat().st_mtime_ns for p in tiny_world.glob("*.json")} == before


def test_other_settings_need_force(tiny_world, tmp_path):
    out = build_world(tmp_path / "w", SMALL, workers=1, progress=False)
    with pytest.raises(FileExistsError, match="other settings"):
        build_world(out, replace(SMALL, seed=4), workers=1, progress=False)
    build_world(out, replace(SMALL, seed=4), workers=1, progress=False, force=True)
    assert json.loads((out / "manifest.json").read_text())["settings"]["seed"] == 4
    assert not (out / ".building").exists()


def test_same_world_whatever_the_number_of_workers(tmp_path):
    one = build_world(tmp_path / "one", SMALL, workers=1, progress=False)
    two = build_world(tmp_path / "two", SMALL, workers=2, progress=False)
    for name in ("scenes.json", "questions.json", "manifest.json"):
        assert (one / name).read_bytes() == (two / name).read_bytes()
    for image in (one / "images").iterdir():
        assert image.read_bytes() == (two / "images" / image.name).read_bytes()


def test_interrupted_build_leaves_no_world_and_resumes(tmp_path, monkeypatch):
    out = tmp_path / "w"
    calls = []
    real_build_chunk = world_build.build_chunk

    def crash_on_third_chunk(config, chunk, work_dir):
        calls.append(chunk)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_build_chunk(config, chunk, work_dir)

    monkeypatch.setattr(world_build, "build_chunk", crash_on_third_chunk)
    with pytest.raises(KeyboardInterrupt):
        build_world(out, SMALL, workers=1, progress=False)
    assert not (out / "manifest.json").exists() and not (out / "scenes.json").exists()
    assert len(list((out / ".building" / "chunks").glob("*.json"))) == 2

    calls.clear()
    monkeypatch.setattr(world_build, "build_chunk", lambda *a: calls.append(a[1]) or real_build_chunk(*a))
    build_world(out, SMALL, workers=1, progress=False)
    assert calls == [2, 3]  # only the chunks that were not finished
    reference = build_world(tmp_path / "ref", SMALL, workers=1, progress=False)
    assert (out / "questions.json").read_bytes() == (reference / "questions.json").read_bytes()


def test_killed_build_process_leaves_nothing_half_written(tmp_path):
    out = tmp_path / "w"
    code = ("import sys; sys.path.insert(0, %r);"
            "from vqa_agent.world.build import WorldConfig, build_world;"
            "build_world(%r, WorldConfig(images=400, pool=0, chunk_size=2), workers=1, progress=False)"
            % (str(REPO), str(out)))
    process = subprocess.Popen([sys.executable, "-c", code])
    chunks = out / ".building" / "chunks"
    try:
        while process.poll() is None and len(list(chunks.glob("*.json"))) < 2:    # however long a busy machine takes
            time.sleep(0.05)
        assert process.poll() is None, "the build ended before it could be killed mid-way"
    finally:
        process.kill()
        process.wait()
    assert not list(out.glob("*.json"))  # no scenes, questions or manifest of a half-built world
    finished = [json.loads(p.read_text()) for p in chunks.glob("*.json")]
    assert len(finished) >= 2 and all(len(c["scenes"]) == 2 for c in finished)  # every chunk file is whole


def test_cli_builds_and_draws_a_contact_sheet(tmp_path):
    world = tmp_path / "w"
    result = exag("world", "build", "--out", world, "--images", "8", "--pool", "2", "--questions-per-image", "3",
                  "--workers", "1")
    assert result.returncode == 0, result.stderr
    assert "10 images" in result.stdout
    sheet = tmp_path / "sheet.png"
    result = exag("world", "sheet", "--world", world, "--out", sheet, "--n", "4")
    assert result.returncode == 0, result.stderr
    assert Image.open(sheet).size[0] > 4 * 320
    result = exag("world", "sheet", "--world", tmp_path / "nothing", "--out", sheet)
    assert result.returncode == 2 and "exag: error:" in result.stderr


@pytest.mark.parametrize("settings", [dict(images=0), dict(pool=-1), dict(questions_per_image=0),
                                      dict(val_fraction=0.5, test_fraction=0.5)])
def test_bad_settings_are_refused(settings):
    with pytest.raises(ValueError):
        WorldConfig(**settings)


def test_a_game_world_holds_exactly_the_whole_worlds_val_and_pool(tiny_world, tmp_path):
    from tiny_worlds import TINY_WORLD

    game = build_world(tmp_path / "game", replace(TINY_WORLD, splits=("val", "pool")), workers=1, progress=False)
    whole_scenes = {s["image_filename"]: s for s in json.loads((tiny_world / "scenes.json").read_text())["scenes"]}
    game_scenes = json.loads((game / "scenes.json").read_text())["scenes"]
    assert {"val", "pool"} <= {s["split"] for s in game_scenes}
    assert "train" not in {s["split"] for s in game_scenes}
    for scene in game_scenes:
        assert scene == whole_scenes[scene["image_filename"]]
        name = scene["image_filename"]
        assert (game / "images" / name).read_bytes() == (tiny_world / "images" / name).read_bytes()
    questions = lambda world: [(q["image_filename"], q["question"], q["answer"])   # noqa: E731
                               for q in json.loads((world / "questions.json").read_text())["questions"]
                               if q["split"] in ("val", "pool")]
    assert questions(game) == questions(tiny_world)
    manifest = json.loads((game / "manifest.json").read_text())
    assert manifest["settings"]["splits"] == ["val", "pool"]
    assert world_build.is_built(game, replace(TINY_WORLD, splits=("val", "pool")))
    assert not world_build.is_built(game, TINY_WORLD)
    with pytest.raises(ValueError, match="unknown split"):
        WorldConfig(splits=("holdout",))


# --- shipped worlds: laid out from their scenes and questions, rendered eagerly or lazily ------------------

def test_a_world_laid_out_from_shipped_files_is_byte_identical_eager_or_lazy(tiny_world, tmp_path):
    from tiny_worlds import TINY_WORLD

    config = replace(TINY_WORLD, splits=world_build.GAME_WORLD_SPLITS)
    built = build_world(tmp_path / "built", config, workers=1, progress=False)
    source = tmp_path / "shipped"
    world_build.write_source(built, source)
    assert {p.name for p in source.iterdir()} == {"scenes.json.xz", "questions.json.xz", "manifest.json",
                                                  "settings.json"}

    def same_files(world, names=None):
        for name in ("scenes.json", "questions.json", "manifest.json"):
            assert (world / name).read_bytes() == (built / name).read_bytes(), name
        for sub in ("images", "masks"):
            for path in (built / sub).iterdir():
                if names is None or path.name in names:
                    assert (world / sub / path.name).read_bytes() == path.read_bytes(), path.name

    eager = build_world(tmp_path / "eager", config, workers=1, progress=False, shipped=source)
    same_files(eager)
    assert world_build.render_progress(eager) == {"rendered": 40 - 24 - 3, "total": 13, "done": True}

    lazy = build_world(tmp_path / "lazy", config, progress=False, shipped=source, lazy=True)
    assert world_build.is_built(lazy, config)
    same_files(lazy, names=set())              # the JSON files at once, no image yet
    assert not list((lazy / "images").iterdir()) and not world_build.render_progress(lazy)["done"]
    missing = world_build.missing_images(lazy, pool_backwards=True)
    pool = sorted(p.name for p in (built / "images").glob("EXAG_pool_*.png"))
    assert missing[:len(pool)] == pool[::-1] and len(missing) == 13   # the pool first, from its end
    world_build.ensure_rendered(lazy, pool[0])        # what a game asks for, on demand
    same_files(lazy, names={pool[0]})
    world_build.ensure_rendered(lazy, pool[0])        # already there: nothing to do
    assert len(world_build.missing_images(lazy)) == 12
    assert world_build.render_missing(lazy, workers=1, progress=False) == 12
    same_files(lazy)
    assert not [p for p in (lazy / "images").iterdir() if p.name.startswith(".")]   # no temporary files left
    with pytest.raises(FileNotFoundError):
        world_build.ensure_rendered(lazy, "EXAG_train_000000.png")
    assert build_world(lazy, config, progress=False) == lazy     # an eager call finishes a lazy world


def test_lazy_rendering_from_threads_at_once_writes_whole_files(tiny_world, tmp_path):
    import threading

    from tiny_worlds import TINY_WORLD

    config = replace(TINY_WORLD, splits=world_build.GAME_WORLD_SPLITS)
    source = tmp_path / "shipped"
    world_build.write_source(build_world(tmp_path / "built", config, workers=1, progress=False), source)
    lazy = build_world(tmp_path / "lazy", config, progress=False, shipped=source, lazy=True)
    name = world_build.missing_images(lazy)[0]
    threads = [threading.Thread(target=world_build.ensure_rendered, args=(lazy, name)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (lazy / "images" / name).read_bytes() == (tmp_path / "built" / "images" / name).read_bytes()
    assert sorted(p.name for p in (lazy / "images").iterdir()) == [name]


def same_but_rounding(a, b) -> bool:
    """Equal JSON-like data, floats equal to 12 significant digits."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_but_rounding(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(map(same_but_rounding, a, b))
    return a == b


def test_the_shipped_game_world_is_what_the_build_makes(tmp_path):
    """The shipped scenes and questions of the game world: their settings are the game world's, and the
    first pool scene, drawn again by the build's own code, is the shipped one (scene, questions, image)."""
    from vqa_agent.world.clevr_io import scenes_to_json
    from vqa_agent.world.questions import QuestionGenerator

    config = WorldConfig(splits=world_build.GAME_WORLD_SPLITS)
    source = world_build.shipped_source(config)
    assert source is not None
    assert sum(p.stat().st_size for p in source.iterdir()) < 5 << 20      # a few MB in the repo
    world = build_world(tmp_path / "game", config, progress=False, lazy=True)
    manifest = json.loads((world / "manifest.json").read_text())
    assert manifest["images_per_split"] == {"val": 1000, "pool": 1500} and manifest["questions"] == 25000
    assert manifest == world_build.manifest(config, json.loads((world / "scenes.json").read_text())["scenes"],
                                            json.loads((world / "questions.json").read_text())["questions"])

    index = config.images                          # the first pool image
    chunk = index // config.chunk_size
    rng = np.random.default_rng([config.seed, chunk])
    scene, rendering = world_build.make_scene(rng, index, "pool", config)
    shipped = next(s for s in json.loads((world / "scenes.json").read_text())["scenes"] if s["image_index"] == index)
    # the same scene up to the last bits of a float: numpy's sin and cos differ in them between releases
    assert same_but_rounding(scenes_to_json([scene], {})["scenes"][0], shipped)
    questions = [q for q in json.loads((world / "questions.json").read_text())["questions"]
                 if q["image_index"] == index]
    drawn = list(QuestionGenerator().for_scene(scene, config.questions_per_image, rng))
    assert [(q.question, q.answer, q.family) for q in drawn] == \
        [(q["question"], q["answer"], q["family"]) for q in questions]
    world_build.ensure_rendered(world, shipped["image_filename"])
    reference = tmp_path / "ref.png"
    world_build._write_png(rendering.image, reference)
    assert (world / "images" / shipped["image_filename"]).read_bytes() == reference.read_bytes()


def test_the_default_agents_shipped_pool_embeddings_are_current(tmp_path):
    """Keyed by the checkpoint's fingerprint: a retrained default agent finds none (and computes its own);
    this test then says to ship new ones (`python -m vqa_agent.world.build ship ...`)."""
    from vqa_agent.agent import VQAAgent
    from vqa_agent.checkpoints import checkpoint_fingerprint

    config = WorldConfig(splits=world_build.GAME_WORLD_SPLITS)
    world = build_world(tmp_path / "game", config, progress=False, lazy=True)
    embeddings = world_build.shipped_pool_embeddings(world, checkpoint_fingerprint("default"))
    assert embeddings is not None, ("the default agent changed: ship its pool embeddings with "
                                    "`python -m vqa_agent.world.build ship data/game-world "
                                    "vqa_agent/world/data/game-world default`")
    assert embeddings.shape[0] == 1500 and embeddings.dtype == np.float32
    assert world_build.shipped_pool_embeddings(world, "0" * 16) is None
    pool = [s["image_filename"] for s in json.loads((world / "scenes.json").read_text())["scenes"]
            if s["split"] == "pool"][:4]
    for name in pool:
        world_build.ensure_rendered(world, name)
    agent = VQAAgent.from_pretrained("default", device="cpu")
    fresh = agent.embed_images([np.asarray(Image.open(world / "images" / n).convert("RGB")) for n in pool])
    np.testing.assert_allclose(fresh, embeddings[:4], rtol=1e-4, atol=1e-5)


def test_held_out_phrasings_never_reach_the_training_split(tiny_world):
    questions = load_questions(tiny_world / "questions.json")
    assert all(q.phrasing for q in questions)
    train = [q for q in questions if q.split == "train"]
    assert train and not any(q.heldout_phrasing for q in train)
    from vqa_agent.world.questions import HELDOUT_PHRASINGS
    assert not {q.phrasing for q in train} & HELDOUT_PHRASINGS
    assert all(q.heldout_phrasing == (q.phrasing in HELDOUT_PHRASINGS) for q in questions)
