"""`exag pool import`: a folder of images drawn here (shapes of various sizes, JPEG and PNG, a corrupt file, a
file that is no image) made a game pool with the shipped default agent's embeddings; COCO and Visual Genome
annotations; every bad input answered with one line and nothing left at --out; the pool opened as a GamePool
(ImagePool), graded as "ungraded", and found by `exag serve --pool` and a study's "pool"."""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

import exag_cli
from game.image_pool import UNGRADED
from game.image_sets import choose_image_set
from game.pool import GamePool, ImagePool, check_pool, pool_dir
import game.pool_import
from game.pool_import import FILL, HEIGHT, WIDTH, import_pool
from game.settings import AT_WILL, CONTROLLED, DIFFICULTY_LEVELS

SIZES = [(640, 480), (120, 360), (1024, 200), (48, 48), (333, 257)]
GOOD = 22          # drawn images that decode (more than the at-will game's 20)


def draw_images(folder: Path, count: int = GOOD) -> list[str]:
    """`count` pictures of shapes (every third in a subfolder, odd ones JPEG), a corrupt JPEG, a text file and a
    hidden file; the names of the good ones."""
    rng = np.random.default_rng(0)
    names = []
    for k in range(count):
        w, h = SIZES[k % len(SIZES)]
        image = Image.new("RGB", (w, h), tuple(int(c) for c in rng.integers(256, size=3)))
        draw = ImageDraw.Draw(image)
        shape = draw.ellipse if k % 2 else draw.rectangle
        shape((w // 5, h // 5, 4 * w // 5, 4 * h // 5), fill=tuple(int(c) for c in rng.integers(256, size=3)))
        name = f"{'sub/' if k % 3 == 0 else ''}photo{k:02d}.{'jpg' if k % 2 else 'png'}"
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        image.save(folder / name)
        names.append(name)
    (folder / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a JPEG")
    (folder / "notes.txt").write_text("not an image")
    (folder / ".hidden.png").write_bytes(b"junk")
    return names


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = exag_cli.main(["pool", "import", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(capsys, out_dir: Path, *argv) -> str:
    """Runs an import that must fail: exit 2, exactly one line (on stderr), nothing at --out nor beside it."""
    code, out, err = run(capsys, *argv, "--out", out_dir)
    lines = [line for line in (out + err).splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("exag: error: "), (code, out, err)
    assert not any(p.name.startswith(f".{out_dir.name}.") for p in out_dir.parent.iterdir()) \
        if out_dir.parent.exists() else True
    return lines[0]


@pytest.fixture(scope="module")
def photos(tmp_path_factory) -> tuple[Path, list[str]]:
    folder = tmp_path_factory.mktemp("photos")
    return folder, draw_images(folder)


@pytest.fixture(scope="module")
def imported(photos, tmp_path_factory) -> tuple[Path, str, str]:
    """The drawn photos imported once with the shipped default agent: (pool, stdout, stderr)."""
    out = tmp_path_factory.mktemp("pools") / "holiday"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = exag_cli.main(["pool", "import", str(photos[0]), "--out", str(out), "--agent", "default"])
    assert code == 0, stderr.getvalue()
    return out, stdout.getvalue(), stderr.getvalue()


# --- a good import --------------------------------------------------------------------------------------

def test_the_import_writes_the_manifest_images_and_embeddings(photos, imported):
    folder, names = photos
    out, stdout, stderr = imported
    assert f"image pool ready in {out}: {GOOD} images, 1 unreadable skipped" in stdout
    assert "broken.jpg" in stderr and "notes.txt" not in stderr       # the corrupt one is named
    manifest = json.loads((out / "pool.json").read_text())
    assert manifest["format_version"] == 1 and manifest["kind"] == "images"
    assert manifest["source"] == str(folder.resolve()) and manifest["resize"] == "letterbox"
    assert [e["source"] for e in manifest["images"]] == sorted(names, key=lambda n: (n.startswith("sub/"), n))
    assert [e["file"] for e in manifest["images"]] == [f"{k:05d}.png" for k in range(GOOD)]
    assert [s["source"] for s in manifest["skipped"]] == ["broken.jpg"]
    for entry in manifest["images"]:
        with Image.open(folder / entry["source"]) as original:
            assert entry["original_size"] == list(original.size)
        with Image.open(out / "images" / entry["file"]) as copy:
            assert copy.size == (WIDTH, HEIGHT) and copy.mode == "RGB" and copy.format == "PNG"
    assert "objects" not in manifest["images"][0] and manifest["annotations"] is None
    agent = manifest["agent"]
    assert agent["name"] == "default" and len(agent["fingerprint"]) == 16
    embeddings = np.load(out / agent["embeddings"])
    assert embeddings.shape == (GOOD, agent["dimensions"]) and np.isfinite(embeddings).all()
    assert set(manifest["image_sets"]) == {"at-will", "controlled"}
    assert set(manifest["image_sets"]["controlled"]["levels"]) == set(DIFFICULTY_LEVELS)
    assert not any(p.name.startswith(".") for p in out.parent.iterdir())     # no temporary folder left


def test_a_wide_image_is_letterboxed_whole(photos, imported):
    out = imported[0]
    manifest = json.loads((out / "pool.json").read_text())
    wide = next(e for e in manifest["images"] if e["original_size"] == [1024, 200])
    pixels = np.asarray(Image.open(out / "images" / wide["file"]))
    assert (pixels[0] == FILL).all() and (pixels[-1] == FILL).all()          # bars above and below
    assert not (pixels[HEIGHT // 2] == FILL).all()                          # the picture in the middle


def test_the_pool_opens_as_a_game_pool_without_ground_truth(imported, tmp_path):
    out = imported[0]
    for pool in (GamePool(out), GamePool(str(out))):
        assert isinstance(pool, ImagePool) and not pool.has_ground_truth
    pool = GamePool(out)
    assert len(pool) == GOOD and pool.world == out.resolve()
    assert pool.scene(0) is None and pool.masks(0) is None and pool.objects(0) is None
    assert [pool.world_index(i) for i in range(3)] == [0, 1, 2]
    assert pool.image(3).shape == (HEIGHT, WIDTH, 3) and pool.image_path(3).exists()
    assert pool.known(0).key == f"pool:{out.resolve()}/00000.png"
    assert pool.agent == "default"
    embeddings = pool.load_embeddings("default", tmp_path)          # where the server looks: found, not computed
    assert embeddings.shape[0] == GOOD
    for settings in (AT_WILL, CONTROLLED):                           # the server's image sets, every level
        for level in DIFFICULTY_LEVELS:
            chosen = choose_image_set(embeddings, settings.images, level, np.random.default_rng(1))
            assert len(set(chosen.images)) == settings.images and 0 <= chosen.secret < settings.images
    assert GamePool(out).has_ground_truth is False and GamePool.has_ground_truth is True


def test_an_imported_pool_is_replaced_by_a_new_import_and_force_replaces_anything(photos, tmp_path, capsys):
    folder = tmp_path / "few"
    folder.mkdir()
    for k in range(6):
        Image.new("RGB", (80 + k, 60), (40 * k, 0, 0)).save(folder / f"{k}.png")
    out = tmp_path / "pools" / "small"
    out.mkdir(parents=True)
    (out / "keep.txt").write_text("someone's file")
    assert "not an imported image pool" in one_line_error(capsys, out, folder)
    assert (out / "keep.txt").exists()
    code, stdout, stderr = run(capsys, folder, "--out", out, "--force")
    assert code == 0 and "6 images" in stdout and "only games of at most 6 images" in stderr
    assert not (out / "keep.txt").exists() and len(GamePool(out)) == 6
    code, stdout, _ = run(capsys, folder, "--out", out)                 # an imported pool: replaced freely
    assert code == 0 and not any(p.name.startswith(".") for p in out.parent.iterdir())


# --- annotations ----------------------------------------------------------------------------------------

def coco(names: list[str], extra: list[str] = ()) -> dict:
    images = [{"id": 100 + k, "file_name": Path(n).name} for k, n in enumerate([*names, *extra])]
    categories = [{"id": 1, "name": "Dog"}, {"id": 2, "name": "frisbee"}, {"id": 3, "name": "person"}]
    annotations = [{"id": k, "image_id": 100 + k % len(images), "category_id": 1 + k % 3}
                   for k in range(3 * len(images))]
    return {"images": images, "annotations": annotations, "categories": categories}


def test_coco_annotations_give_each_image_its_object_words(photos, tmp_path, capsys):
    folder, names = photos
    file = tmp_path / "instances.json"
    file.write_text(json.dumps(coco(names[:10], extra=["elsewhere.jpg"])))
    out = tmp_path / "coco"
    code, stdout, stderr = run(capsys, folder, "--out", out, "--annotations", file)
    assert code == 0 and "10 annotated" in stdout
    assert "1 of 11 annotated images are not among the imported ones" in stderr
    assert f"{GOOD - 10} image(s) have no annotation" in stderr
    manifest = json.loads((out / "pool.json").read_text())
    assert manifest["annotations"]["format"] == "coco" and manifest["annotations"]["matched"] == 10
    by_source = {e["source"]: e for e in manifest["images"]}
    assert set(by_source[names[0]]["objects"]) <= {"dog", "frisbee", "person"} and by_source[names[0]]["objects"]
    assert "objects" not in by_source[names[15]]
    pool = GamePool(out)
    i = next(k for k, e in enumerate(manifest["images"]) if e["source"] == names[0])
    assert pool.objects(i) == by_source[names[0]]["objects"]
    words = {"kind": "words", "payload": {"words": [{"word": w} for w in pool.objects(i)]}}
    assert pool.grade_explanation(words, i) == "Exactly on-point"
    assert pool.grade_explanation({"kind": "words", "payload": {"words": [{"word": "cube"}]}}, i) == "Completely wrong"
    assert pool.grade_explanation({"kind": "attention", "payload": {}}, i) == UNGRADED
    unannotated = next(k for k, e in enumerate(manifest["images"]) if "objects" not in e)
    assert pool.grade_explanation(words, unannotated) == UNGRADED


def test_visual_genome_annotations_match_by_id_or_file_name(tmp_path, capsys):
    folder = tmp_path / "vg"
    folder.mkdir()
    for k in range(1, 7):
        Image.new("RGB", (200, 150), (k * 30, 90, 10)).save(folder / f"{k}.jpg")
    entries = [{"image_id": k, "objects": [{"names": ["Tree", "tree"]}, {"names": ["man"]}]} for k in range(1, 4)]
    entries.append({"image_id": 99, "image_url": "https://cs.stanford.edu/vg/5.jpg", "objects": [{"names": ["sky"]}]})
    file = tmp_path / "objects.json"
    file.write_text(json.dumps(entries))
    out = tmp_path / "pool"
    code, stdout, stderr = run(capsys, folder, "--out", out, "--annotations", file)
    assert code == 0 and "4 annotated" in stdout, stderr
    manifest = json.loads((out / "pool.json").read_text())
    assert manifest["annotations"]["format"] == "visual-genome"
    words = {e["source"]: e.get("objects") for e in manifest["images"]}
    assert words["1.jpg"] == ["tree", "man"] and words["5.jpg"] == ["sky"] and words["6.jpg"] is None


@pytest.mark.parametrize("content, expected", [
    ("{not json", "cannot be read as JSON"),
    (json.dumps({"info": {}}), "not COCO"),
    (json.dumps({"images": [{"file_name": "a.jpg"}], "annotations": [], "categories": []}), "not COCO nor Visual"),
    (json.dumps([{"image_id": 1, "objects": "tree"}]), "not COCO nor Visual"),
    (json.dumps([]), "not COCO"),
    (json.dumps("a string"), "not COCO"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply to be read as JSON"),       # no RecursionError traceback
])
def test_malformed_annotations_are_one_line(photos, tmp_path, capsys, content, expected):
    file = tmp_path / "bad.json"
    file.write_text(content)
    out = tmp_path / "pools" / "never"
    assert expected in one_line_error(capsys, out, photos[0], "--annotations", file)
    assert not out.exists() and not out.parent.exists()


def test_annotations_of_other_images_are_one_line(photos, tmp_path, capsys):
    file = tmp_path / "instances.json"
    file.write_text(json.dumps(coco(["x1.jpg", "x2.jpg"])))
    out = tmp_path / "never"
    assert "name none of the images" in one_line_error(capsys, out, photos[0], "--annotations", file)
    assert not out.exists()
    assert "cannot be read" in one_line_error(capsys, out, photos[0], "--annotations", tmp_path / "missing.json")


# --- bad input ------------------------------------------------------------------------------------------

def test_bad_input_is_one_line_and_leaves_nothing(photos, tmp_path, capsys):
    out = tmp_path / "pools" / "never"
    assert "is not a directory" in one_line_error(capsys, out, tmp_path / "no-such-folder")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "readme.md").write_text("no pictures here")
    assert "no images in" in one_line_error(capsys, out, empty)
    few = tmp_path / "few"
    few.mkdir()
    Image.new("RGB", (10, 10)).save(few / "one.png")
    (few / "two.png").write_bytes(b"\x89PNG\r\n\x1a\n broken")
    line = one_line_error(capsys, out, few)
    assert "1 usable image(s)" in line and "1 unreadable" in line
    assert not out.exists() and not out.parent.exists()
    existing = tmp_path / "taken"
    existing.mkdir()
    (existing / "data.csv").write_text("1,2")
    assert "pass --force" in one_line_error(capsys, existing, photos[0])
    assert (existing / "data.csv").read_text() == "1,2"
    assert "holds the images" in one_line_error(capsys, photos[0], photos[0], "--force")
    assert "--agent no-such-agent: no agent" in one_line_error(capsys, out, photos[0], "--agent", "no-such-agent")
    assert not out.exists() and not out.parent.exists()


def test_an_image_named_like_one_that_is_no_regular_file_is_never_opened(tmp_path, capsys):
    folder = tmp_path / "with-fifo"
    folder.mkdir()
    draw_images(folder, 6)
    os.mkfifo(folder / "x.png")                  # opening it would wait for a writer forever
    code, stdout, stderr = run(capsys, folder, "--out", tmp_path / "pool")
    assert code == 0, stderr
    assert "no regular files skipped, never opened" in stdout + stderr and "x.png" in stdout + stderr
    assert "x.png" not in [e["source"] for e in json.loads((tmp_path / "pool" / "pool.json").read_text())["images"]]


def test_an_interrupted_import_leaves_no_temporary_folder(photos, tmp_path, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(game.pool_import, "_embed", interrupted)
    with pytest.raises(KeyboardInterrupt):
        import_pool(photos[0], tmp_path / "pools" / "never", progress=False)
    assert not (tmp_path / "pools").exists()


@pytest.mark.parametrize("file", ["/etc/passwd", "../x.png", "sub/00001.png", "..", "", 5])
def test_a_hand_edited_manifest_cannot_point_outside_the_pool(imported, tmp_path, file):
    pool = tmp_path / "edited"
    shutil.copytree(imported[0], pool)
    manifest = json.loads((pool / "pool.json").read_text())
    manifest["images"][1]["file"] = file
    (pool / "pool.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError) as refused:
        GamePool(pool)
    assert f"image 1 has file {str(file)!r}" in str(refused.value) and "\n" not in str(refused.value)
    (pool / "pool.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="cannot be read as an image pool's manifest"):
        GamePool(pool)


# --- playing on it --------------------------------------------------------------------------------------

def test_serve_and_worker_find_the_pool_by_name_or_directory(imported, tmp_path, monkeypatch, capsys):
    """How `exag serve --pool` names the pool and hands it to its workers; the served pool itself is played
    by real processes in tests/server/test_pool_serve.py."""
    from server.config import ServerConfig
    from server.processes import worker_arguments

    out = imported[0]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data" / "pools").mkdir(parents=True)
    (tmp_path / "data" / "pools" / "holiday").symlink_to(out)
    assert pool_dir("holiday") == out.resolve() == pool_dir(out)
    arguments = worker_arguments(ServerConfig(pool=pool_dir("holiday")), threads=1)
    assert arguments[arguments.index("--pool") + 1] == str(out.resolve())
    assert "--pool" not in worker_arguments(ServerConfig(), threads=1)        # a world: as before
    assert exag_cli.main(["serve", "--pool", "nowhere", "--workers", "0"]) == 2
    assert "no image pool 'nowhere'" in capsys.readouterr().err
    assert not (tmp_path / "data" / "game-world").exists()    # refused before a world is laid out and rendered
    assert exag_cli.main(["worker", "--redis-url", "redis://127.0.0.1:1/0", "--pool", "nowhere"]) == 2
    assert "no image pool 'nowhere'" in capsys.readouterr().err


def test_a_study_names_the_pool_the_server_must_serve(imported, tmp_path):
    from game.study import StudyConfig

    out = imported[0]
    study = StudyConfig.from_dict({"study_id": "photos", "kind": "at-will", "arms": ["none"], "sessions": 1,
                                   "pool": str(out)})
    served = GamePool(out)
    check_pool(study.pool, served)
    check_pool("", served)
    with pytest.raises(ValueError, match="this server's games draw from"):
        check_pool(study.pool, type("World", (), {"world": tmp_path})())
    with pytest.raises(ValueError, match="no image pool"):
        check_pool(str(tmp_path / "nothing"), served)
    with pytest.raises(ValueError, match="pool:"):
        StudyConfig(study_id="x", pool="a\nb")


def test_a_round_on_the_pool_is_ungraded_with_words_graded_by_annotations(imported):
    from explainers.base import ExplanationRequest
    from explainers.objscene import ObjSceneExplainer
    from server.inference import RoundResult
    from server.respond import finish_round
    from server.rounds import RoundJob
    from vqa_agent.agent import VQAAgent

    pool = GamePool(imported[0])
    agent = VQAAgent.from_pretrained("default", device="cpu")
    images = [0, 1, 2]
    outputs = agent.answer([pool.known(i) for i in images], ["is there a red cube?"] * 3)
    [words] = ObjSceneExplainer(agent).explain_batch([ExplanationRequest(pool.known(1), "is there a red cube?",
                                                                         outputs[1])])
    job = RoundJob("round", images, "is there a red cube?", secret=1, tokens=["a", "b", "c"],
                   for_the_secret=["objscene"])
    result = finish_round(job, RoundResult(outputs, [[], [], []], [words]), pool)
    assert result["graded"]["answer_grade"] == UNGRADED and result["graded"]["truth"] is None
    assert result["graded"]["answer"] == outputs[1].answer
    assert [x["grade"] for x in result["shown"]["log"]] == [UNGRADED]       # image 1 has no annotation
    assert result["shown"]["view"]["for_the_secret"]
