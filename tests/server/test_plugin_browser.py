"""A third-party explainer plays in a real browser game: the example plugin (examples/explainer_plugin/),
pip-installed and named by its entry point in a study's arm, is loaded by the server's worker, checked,
and drawn on Debian's Chromium by the page's renderer for its kind, under the label and with the
instructions' line its class declares (the page learns both from the server's explainer table)."""
from __future__ import annotations

import json

import pytest
from chromium import TIMEOUT_MS, needs_chromium
from plugin_example import install, on_path
from server_setup import LiveServer, server_config, write_studies

from game.export import tables
from server.app import create_app

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = needs_chromium
# explanations in the first game ("baba"), the plugin beside a built-in so both renderers are on the page
PLUGIN_STUDY = {"study_id": "plug", "kind": "controlled", "arms": ["topk", "attention+topk"], "sessions": 4,
                "games_per_session": 1, "order": "baba", "choose_arm": True, "completion_code": "CODE-PLUG"}


@pytest.fixture(scope="module")
def plugin_server(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("plugin-live")
    with on_path(install(root / "site")):
        studies = write_studies(root / "studies")
        (studies / "plug.json").write_text(json.dumps(PLUGIN_STUDY))
        app = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, root / "data", studies))
        server = LiveServer(app)
        server.app = app
        yield server
        server.stop()
        app.extensions["exag"].close()


def test_a_plugin_explainer_plays_in_chromium(browser, plugin_server):
    errors = []
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(f"{plugin_server.url}/?study=plug&pid=plugin-1&arm=attention%2Btopk")
    page.click("#consent-agree")
    modes = page.locator(".instructions .modes li")
    sync_api.expect(modes).to_have_count(2)
    sync_api.expect(modes.nth(1)).to_have_text("Other answers: the answers the agent weighed besides the one it gave, "
                                               "with how sure it was of each.")
    page.click("#begin")
    sync_api.expect(page.locator("#stage")).to_have_attribute("data-stage", "game")
    sync_api.expect(page.locator("button.tile")).to_have_count(5)
    page.fill("#question", "Is there a red cube?")
    page.press("#question", "Enter")
    shown = page.locator('.explanation[data-explainer="topk"][data-kind="text"]')
    sync_api.expect(shown).to_have_count(5, timeout=TIMEOUT_MS)               # one under every image
    sync_api.expect(shown.first.locator(".explanation-label")).to_have_text("Other answers it considered")
    sync_api.expect(shown.first.locator(".explanation-text")).to_contain_text("I answered ")
    assert page.locator('.explanation[data-kind="attention"]').count() >= 5      # the built-in beside it
    assert not errors, errors
    logged = tables(list(plugin_server.app.extensions["exag"].store.events()))["explanations"]
    assert set(logged["explainer"]) == {"attention", "topk"}, "the event log names the plugin's explanations"
    assert (logged[logged["explainer"] == "topk"]["kind"] == "text").all()
