"""`exag serve --pool DIR --device cuda` as real processes (the web process, its embedded Redis and an
`exag worker --pool DIR --device cuda` it starts, with CUDA hidden: it says so and runs on the CPU): a participant of a study on an imported pool is shown the pool's own images,
the worker answers about them, and the export grades the round `ungraded` (the pool has no scenes: a
worker that opened the world instead would have graded it)."""
from __future__ import annotations

import json
import os
import time
import urllib.request

import pandas as pd
import pytest
from PIL import Image

import exag_cli
from experiments.simulate.bot import browser_cookie
from game.image_pool import UNGRADED
from processes import START_TIMEOUT_S, Tab, Web
from server import browser
from test_worker_device import FALLBACK

STUDY = {"study_id": "photos", "kind": "at-will", "arms": ["none"], "sessions": 2, "completion_code": "CODE-P",
         "settings": {"min_questions": 0}}
PHOTOS = 24


@pytest.fixture(scope="module")
def served(agent_world, tiny_agent_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("pool-serve")
    photos = root / "photos"
    photos.mkdir()
    for k, path in enumerate(sorted((agent_world / "images").glob("*.png"))[:PHOTOS]):
        with Image.open(path) as image:       # photos of another size and format than the world's renders
            image.convert("RGB").resize((200, 150)).save(photos / f"holiday-{k:02d}.jpg", quality=90)
    pool = root / "pools" / "holiday"
    assert exag_cli.main(["pool", "import", str(photos), "--out", str(pool), "--agent", str(tiny_agent_dir)]) == 0
    studies = root / "studies"
    studies.mkdir()
    (studies / "photos.json").write_text(json.dumps({**STUDY, "pool": str(pool)}))
    hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = ""        # the processes inherit it: no GPU, whatever the machine
    try:
        web = Web("serve", ["--pool", str(pool), "--world", str(agent_world), "--agent", str(tiny_agent_dir),
                            "--workers", "1", "--device", "cuda", "--studies", str(studies),
                            "--explainer-options", json.dumps({"relqa": {"min_bank": 50}}),   # the tiny world's bank
                            "--data-dir", str(root / "data")], root)
    finally:
        if hidden is None:
            del os.environ["CUDA_VISIBLE_DEVICES"]
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = hidden
    try:
        web.wait_ready(time.monotonic() + START_TIMEOUT_S)
        yield web, pool, root
        assert web.stop() == 0, web.tail()
    finally:
        if web.alive():
            web.stop()


def test_a_study_on_an_imported_pool_served_by_real_processes(served):
    web, pool, root = served
    with urllib.request.urlopen(f"{web.url}/healthz", timeout=5) as answer:
        assert json.loads(answer.read())["pool"] == str(pool)
    cookie = browser_cookie(web.url, "photos")
    tab = Tab(web.url, cookie)
    try:
        assert tab.send("join", {"study": "photos", "pid": "p-1"})["stage"] == "consent"
        tab.send("consent", {"agree": True})
        state = tab.send("begin", {})
        while state["stage"] != "game":
            state = tab.next_state("begin")
        game = state["game"]
        pool_pngs = {path.read_bytes() for path in (pool / "images").glob("*.png")}
        for url in list(game["image_urls"].values())[:3]:
            request = urllib.request.Request(web.url + url, headers={"Cookie": f"{browser.COOKIE}={cookie}"})
            with urllib.request.urlopen(request, timeout=5) as answer:
                assert answer.read() in pool_pngs            # the pool's own letterboxed copies
        state = tab.send("ask", {"game_id": game["game_id"], "question": "Is there a red cube?"})
        [asked] = state["game"]["rounds"]
        assert asked["answer"] in ("yes", "no")
        assert FALLBACK in web.log.read_text()           # the worker got --device cuda, and fell back
    finally:
        tab.close()
    export = root / "export"
    assert exag_cli.main(["export", "--format", "csv", "--out", str(export), "--data-dir", str(root / "data")]) == 0
    rounds = pd.read_csv(export / "rounds.csv")
    assert rounds[["question", "answer_grade"]].values.tolist() == [["Is there a red cube?", UNGRADED]]
