"""Issue 33's acceptance, end to end: 200 images drawn here (shapes of many colours and sizes, JPEG and PNG)
imported with `exag pool import --agent hf:DIR` (a tiny random-weight ViLT, vqa_agent/hf_tiny.py), a server
playing that ViLT on that pool (embedded Redis, an in-process worker), a study that shows the attention
explainer, one whole game played on Debian's Chromium (question, heat map, rating, guess), then `exag export`
(the game's rounds, answers "ungraded") and `exag analyze` (which says what it cannot compute without
ground truth)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from chromium import TIMEOUT_MS, ask, needs_chromium
from PIL import Image, ImageDraw
from server_setup import SCRIPTED_PLAY, LiveServer

import exag_cli
from game.image_pool import UNGRADED
from game.settings import RATINGS
from server.app import create_app
from server.config import ServerConfig
from vqa_agent.hf_tiny import make_tiny_vilt

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = needs_chromium

IMAGES = 200
SIZES = [(320, 240), (640, 480), (200, 300), (96, 64), (500, 180), (257, 333)]
COLOURS = {"red": (200, 30, 30), "blue": (30, 60, 210), "green": (40, 170, 60), "yellow": (230, 210, 40),
           "gray": (128, 128, 128), "purple": (130, 40, 160), "brown": (120, 80, 40), "cyan": (40, 200, 210)}
ANSWERS = ("yes", "no", "0", "1", "2", "3", *COLOURS, "cube", "sphere", "cylinder")
STUDY = {"study_id": "own", "kind": "controlled", "arms": ["attention"], "sessions": 4, "games_per_session": 1,
         "order": "baba", "choose_arm": True, "completion_code": "CODE-OWN"}     # explanations in game 1


def draw_photos(folder: Path, count: int = IMAGES) -> None:
    """`count` pictures: a background and one to three shapes (rectangles, ellipses, triangles) of the
    colours, in six sizes, every other one a JPEG, every fifth in a subfolder."""
    rng = np.random.default_rng(33)
    palette = list(COLOURS.values())
    for k in range(count):
        w, h = SIZES[k % len(SIZES)]
        image = Image.new("RGB", (w, h), tuple(int(c) for c in rng.integers(0, 256, 3)))
        draw = ImageDraw.Draw(image)
        for _ in range(int(rng.integers(1, 4))):
            x0, y0 = int(rng.integers(0, w * 2 // 3)), int(rng.integers(0, h * 2 // 3))
            x1, y1 = x0 + int(rng.integers(w // 8, w // 3)), y0 + int(rng.integers(h // 8, h // 3))
            colour = palette[int(rng.integers(len(palette)))]
            shape = int(rng.integers(3))
            if shape == 0:
                draw.rectangle((x0, y0, x1, y1), fill=colour)
            elif shape == 1:
                draw.ellipse((x0, y0, x1, y1), fill=colour)
            else:
                draw.polygon([(x0, y1), ((x0 + x1) // 2, y0), (x1, y1)], fill=colour)
        name = f"{'more/' if k % 5 == 0 else ''}photo{k:03d}.{'jpg' if k % 2 else 'png'}"
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        image.save(folder / name)


@pytest.fixture(scope="module")
def own_server(agent_world, tmp_path_factory):
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("own-model")
    draw_photos(root / "photos")
    vilt = make_tiny_vilt(root / "vilt", answers=ANSWERS)
    pool = root / "pools" / "p"
    assert exag_cli.main(["pool", "import", str(root / "photos"), "--out", str(pool), "--agent", f"hf:{vilt}"]) == 0
    studies = root / "studies"
    studies.mkdir()
    (studies / "own.json").write_text(json.dumps({**STUDY, "pool": str(pool)}))
    config = ServerConfig(world=agent_world, pool=pool, agent=f"hf:{vilt}", data_dir=root / "data",
                          studies_dir=studies, admin_token="test-admin", seed=3, progress=False,
                          inprocess_workers=1, message_queue=False, explainer_options={"relqa": {"min_bank": 50}},
                          **SCRIPTED_PLAY)
    app = create_app(config)
    server = LiveServer(app)
    server.app, server.root, server.pool = app, root, pool
    yield server
    server.stop()
    app.extensions["exag"].close()
    torch.set_num_threads(threads)


def test_the_server_refuses_a_study_of_an_explainer_the_agent_cannot_support(own_server):
    from game.study import StudyConfig
    from server.study_check import check_study

    services = own_server.app.extensions["exag"]
    nle = StudyConfig.from_dict({**STUDY, "study_id": "own-nle", "arms": ["attention+nle"]})
    with pytest.raises(ValueError, match="shows the nle explainer, which needs concepts and proposals of the agent"):
        check_study(nle, services.pool, services.agents)
    check_study(StudyConfig.from_dict({**STUDY, "arms": ["attention", "both"]}), services.pool, services.agents)


def test_a_study_on_an_imported_pool_with_a_transformers_agent(browser, own_server):
    manifest = json.loads((own_server.pool / "pool.json").read_text())
    assert len(manifest["images"]) == IMAGES and manifest["agent"]["name"].startswith("hf:")
    errors = []
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(f"{own_server.url}/?study=own&pid=own-1&arm=attention")
    page.click("#consent-agree")
    page.click("#begin")
    sync_api.expect(page.locator("#stage")).to_have_attribute("data-stage", "game")
    sync_api.expect(page.locator("button.tile")).to_have_count(5)
    ask(page, "Is there a red cube?")
    assert page.locator("#history li.round .answer").last.inner_text().strip() in ANSWERS
    heat = page.locator('.explanation[data-kind="attention"] canvas.attention-canvas')
    sync_api.expect(heat.first).to_be_visible()
    assert heat.count() >= 5                                          # one heat map on every image
    page.click(f'button.rating[data-rating="{RATINGS[1]}"]')
    sync_api.expect(page.locator("#question")).to_be_enabled(timeout=TIMEOUT_MS)
    page.locator("button.tile").first.click()
    page.click("#guess")
    sync_api.expect(page.locator("#outcome")).to_be_visible(timeout=TIMEOUT_MS)
    sync_api.expect(page.locator("#next-game")).to_be_visible()
    assert not errors, errors

    export, report = own_server.root / "export", own_server.root / "report"
    url = own_server.app.extensions["exag"].redis.url
    assert exag_cli.main(["export", "--format", "csv", "--out", str(export), "--redis-url", url]) == 0
    games, rounds, ratings, explanations = (pd.read_csv(export / f"{name}.csv")
                                            for name in ("games", "rounds", "ratings", "explanations"))
    assert games[["study", "arm", "with_explanations", "n_images"]].values.tolist() == [["own", "attention", True, 5]]
    assert 0 <= games["secret_image"].iloc[0] < IMAGES and games["finished"].notna().all()
    assert rounds[["question", "answer_grade"]].values.tolist() == [["Is there a red cube?", UNGRADED]]
    assert rounds["answer"].iloc[0] in ANSWERS and rounds["truth"].isna().all()      # no scene to check it on
    assert ratings["rating"].tolist() == [RATINGS[1]]
    assert set(explanations["explainer"]) == {"attention"} and len(explanations) == 5
    assert set(explanations["grade"]) == {UNGRADED}

    assert exag_cli.main(["analyze", "--data", str(export), "--out", str(report)]) == 0
    result = json.loads((report / "report.json").read_text())
    assert (report / "report.html").is_file() and result["n"]["games"] == 1 and result["n"]["ratings"] == 1
    assert result["controlled"]["table1"][0]["with_expl"]["n_games"] == 1
    # what needs the ground truth the pool lacks is said, not computed: answer correctness and the
    # automatic grades of explanations (raters can still grade them: /rate)
    assert "no graded answers" in result["answer_correctness"]["missing"]
    assert "imported image pool" in result["answer_correctness"]["missing"]          # and why
    assert "no automatic grades" in result["by_correctness"]["automatic"]["missing"]
