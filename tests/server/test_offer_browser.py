"""Debian's Chromium plays an at-will study that randomizes the offer of explanations (issue 43, game/offer.py)
through the real page and server: the instructions say that some games have none, a game not offered shows
"Explanations are not available in this game." where the button to buy them would be, and an offered game
sells them as ever."""
from __future__ import annotations

import json

import pytest
from chromium import TIMEOUT_MS, ask, needs_chromium

from experiments.analysis.data import Tables
from experiments.analysis.report import analyze
from game.export import tables
from game.offer import offered, participant_key
from game.settings import RATINGS

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = needs_chromium

STUDY = {"study_id": "itt-page", "kind": "at-will", "arms": ["both"], "sessions": 1, "games_per_session": 4,
         "offer": "randomized", "settings": {"images": 6}, "completion_code": "CODE-ITT-PAGE"}


def test_the_page_sells_explanations_only_in_the_games_offered(browser, live_server):
    errors, url = [], live_server.url
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_default_timeout(TIMEOUT_MS)
    created = page.request.post(f"{url}/admin/studies?token=test-admin", max_redirects=0,
                                form={"config": json.dumps(STUDY)})
    assert created.status == 302, created.text()
    page.goto(f"{url}/?study=itt-page&pid=offer-page-1")
    page.click("#consent-agree")
    sync_api.expect(page.locator("#offer-rule")).to_contain_text(
        "In some games explanations are not available; which games is decided at random.")
    page.click("#begin")

    store = live_server.app.extensions["exag"].store
    study, _ = store.study("itt-page")
    joined = store.participant("itt-page", "pid:offer-page-1")
    key = participant_key(joined["slot"], joined["pid"])
    expected = [offered(study, key, number) for number in range(study.games)]
    assert sorted(expected) == [False, False, True, True]
    stage = page.locator("#stage")
    for number, offer in enumerate(expected):
        sync_api.expect(stage).to_have_attribute("data-stage", "game")
        sync_api.expect(page.locator("#game-count")).to_have_text(f"Game {number + 1} of 4")
        sync_api.expect(page.locator("button.tile")).to_have_count(6)
        ask(page, "Is there a red cube?")
        points = page.locator("#points").inner_text()
        if offer:
            assert page.locator("#explain-unavailable").count() == 0 and page.locator("#not-offered").count() == 0
            page.click("#explain")
            sync_api.expect(page.locator('.explanation[data-kind="attention"]').first).to_be_visible()
            sync_api.expect(page.locator("#points")).not_to_have_text(points)
        else:
            sync_api.expect(page.locator("#explain-unavailable")).to_have_text(
                "Explanations are not available in this game.")
            sync_api.expect(page.locator("#not-offered")).to_be_visible()
            assert page.locator("#explain").count() == 0 and page.locator(".explanation").count() == 0
        page.click(f'button.rating[data-rating="{RATINGS[2]}"]')
        sync_api.expect(page.locator("#question")).to_be_enabled(timeout=TIMEOUT_MS)
        page.locator("button.tile").first.click()
        page.click("#guess")
        sync_api.expect(page.locator("#outcome")).to_be_visible(timeout=TIMEOUT_MS)
        page.click("#next-game")
    sync_api.expect(stage).to_have_attribute("data-stage", "questionnaire")
    assert not errors, errors

    bought = {e["game"] for e in store.events() if e["type"] == "explanations_bought" and e["study"] == "itt-page"}
    starts = sorted((e for e in store.events() if e["type"] == "game_start" and e["study"] == "itt-page"),
                    key=lambda e: e["game_number"])
    assert [e["offered"] for e in starts] == expected
    assert bought == {e["game"] for e in starts if e["offered"]}
    page.close()

    # its analysis: the randomized offer's intention-to-treat and instrumented effects, listed as effects, beside
    # the self-selected use of explanations, an association
    report = analyze(Tables.from_frames(tables(store.events()), "the offer page's log").only(["itt-page"]))
    listed = {t["name"]: t for t in report["studies"]["itt-page"]["tests"]}
    assert listed["at_will.offer"]["claim"] == listed["at_will.offer_iv"]["claim"] == "effect"
    assert listed["at_will.explanations_used"]["claim"] == "association"
    offer = report["at_will"]["offer"]
    assert offer["offered"]["n_games"] == offer["not_offered"]["n_games"] == 2
    assert offer["uptake"]["share_used_offered"] == 1.0 and offer["uptake"]["share_used_not_offered"] == 0.0
    assert offer["itt"]["win_rate"] is not None        # one participant: an estimate, too few for a p-value
    assert offer["itt"]["p_value"] is None and "fewer than 4 participants" in offer["itt"]["note"]
