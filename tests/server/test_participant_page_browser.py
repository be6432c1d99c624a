"""Issue 44, the participant's page, in Debian's Chromium against a real server: on a 390x844 phone the
explanations bought come into view with the rating box after them (issue 55: after the board's too); after an answer no rating button
has the focus (a stray Enter rates nothing); the instructions say what the study's points pay for; the
question box shows its whole placeholder on a phone and a desktop; the screen-reader region forgets the last
game's answer at the next game; an error banner lies over the page and does not move the board."""
from __future__ import annotations

import pytest
from chromium import TIMEOUT_MS, ask, needs_chromium, new_page, to_the_game

from game.settings import settings_named

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = needs_chromium
CONTROLLED = settings_named("controlled")     # `quick` (tests/server/server_setup.py)
PHONE = {"width": 390, "height": 844}


def test_on_a_phone_the_explanations_bought_are_in_view_with_the_rating_below(browser, live_server):
    errors = []
    page = new_page(browser, f"{live_server.url}/?study=aw&pid=rated-1", errors, **PHONE)
    to_the_game(page)
    ask(page, "Is there a small rubber cube?")
    page.click("#explain")
    sync_api.expect(page.locator("#rating-group legend")).to_contain_text("its explanations", timeout=TIMEOUT_MS)
    panel = page.locator(".secret-panel")
    sync_api.expect(panel.locator(".explanation").first).to_be_visible()
    page.wait_for_timeout(300)                                  # any scrolling settled
    header = page.locator(".status-bar").bounding_box()
    text, rating = panel.bounding_box(), page.locator(".rating-box").bounding_box()
    # the explanation text on screen, below the sticky header, not three screens down under the board
    assert text["y"] >= header["y"] + header["height"] - 1, (header, text)
    assert text["y"] + text["height"] <= PHONE["height"] + 1, text
    # ... and the rating after what it rates: the explanations about the secret and the board's heatmaps (issue 55)
    assert rating["y"] >= text["y"] + text["height"] - 1, (text, rating)
    board = page.locator(".grid-section").bounding_box()
    assert rating["y"] >= board["y"] + board["height"] - 1, (board, rating)
    assert not errors, errors


def test_after_an_answer_no_rating_is_focused_and_enter_rates_nothing(browser, live_server):
    errors = []
    page = new_page(browser, f"{live_server.url}/?study=quick&pid=rated-2", errors)
    to_the_game(page)
    ask(page, "Is there a red cube?")
    focused = "() => { const el = document.activeElement; return {id: el.id, rating: el.classList.contains('rating')}; }"
    assert page.evaluate(focused) == {"id": "rating-group", "rating": False}   # the group, for screen readers
    page.keyboard.press("Enter")
    page.keyboard.press("Space")
    page.wait_for_timeout(500)
    sync_api.expect(page.locator("#question")).to_be_disabled()        # still waiting for a rating
    assert page.locator("#history li.round .round-meta").last.inner_text().endswith("not rated yet")
    assert page.locator("#stage .phase-rating").count() == 1
    page.keyboard.press("Tab")                                          # a deliberate choice: Tab, then Enter
    assert page.evaluate(focused)["rating"] is True
    page.keyboard.press("Enter")
    sync_api.expect(page.locator("#question")).to_be_enabled()
    assert not errors, errors


def test_the_instructions_say_what_the_points_pay_for(browser, live_server):
    errors = []
    page = new_page(browser, f"{live_server.url}/?study=quick&pid=rules-1", errors)
    page.click("#consent-agree")
    rule = page.locator("#points-rule")
    sync_api.expect(rule).to_be_visible()
    text = rule.inner_text()
    paid = CONTROLLED.start_points // CONTROLLED.question_cost
    assert paid < CONTROLLED.max_questions                              # the case the issue is about
    assert f"start each game with {CONTROLLED.start_points} points" in text, text
    assert f"Each question costs {CONTROLLED.question_cost} point," in text, text
    assert f"at most {paid} questions" in text, text
    assert f"up to {CONTROLLED.max_questions}" not in text, text
    assert "When your points run out you can ask no more questions" in text and "scores 0" in text, text
    assert not errors, errors


def placeholder_fits(page) -> bool:
    """Whether the question box shows its whole placeholder (measured with the placeholder as its value)."""
    return page.evaluate("""() => {
      const input = document.getElementById("question");
      const value = input.value;
      input.value = input.placeholder;
      const fits = input.placeholder.length > 0 && input.scrollWidth <= input.clientWidth;
      input.value = value;
      return fits;
    }""")


def test_placeholder_live_region_and_error_banner(browser, live_server):
    errors = []
    phone = new_page(browser, f"{live_server.url}/?study=aw&pid=page-1", errors, **PHONE)
    to_the_game(phone)
    assert placeholder_fits(phone)
    phone.close()

    page = new_page(browser, f"{live_server.url}/?study=quick&pid=page-2", errors)
    to_the_game(page)
    assert placeholder_fits(page)
    # an error banner lies over the page: the board stays where it was
    board = page.locator(".grid-section").bounding_box()
    page.press("#question", "Enter")                                    # nothing typed: refused by the page
    sync_api.expect(page.locator("#alert")).to_contain_text("Type a question first")
    assert page.locator(".grid-section").bounding_box() == board
    page.click("#alert .alert-close")

    # the screen-reader region tells the answer, and no longer after "Next game"
    ask(page, "Is there a red cube?")
    sync_api.expect(page.locator("#announce")).to_contain_text("The agent answered")
    page.keyboard.press("1")
    sync_api.expect(page.locator("#question")).to_be_enabled()
    page.locator("button.tile").first.click()
    page.click("#guess")
    sync_api.expect(page.locator("#outcome")).to_be_visible()
    page.click("#next-game")
    sync_api.expect(page.locator("#outcome")).to_have_count(0)
    sync_api.expect(page.locator("#stage")).to_have_attribute("data-stage", "game")
    sync_api.expect(page.locator("#announce")).to_have_text("")
    assert not errors, errors


def test_a_question_for_an_agent_still_starting_says_so_on_the_page(browser, app, tiny_agent_dir, agent_world,
                                                                     tiny_nle_dir, tmp_path):
    """Issue 45: a server whose workers have not warmed up its agent yet (here: none comes) tells the player
    their question waits for it, then why it was not answered; the question box is usable again."""
    from server_setup import LiveServer, server_config, write_studies

    from server.app import create_app

    web = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path / "data",
                                   write_studies(tmp_path / "studies"), inprocess_workers=0, round_timeout_s=4))
    server = LiveServer(web)
    try:
        errors = []
        page = new_page(browser, f"{server.url}/?study=quick&pid=waits-1", errors)
        to_the_game(page)
        page.fill("#question", "Is there a red cube?")
        page.press("#question", "Enter")
        sync_api.expect(page.locator("#alert")).to_contain_text("still starting", timeout=3_000)
        sync_api.expect(page.locator("#alert")).to_contain_text("did not answer in time", timeout=TIMEOUT_MS)
        sync_api.expect(page.locator("#question")).to_be_enabled()
        assert not errors, errors
    finally:
        server.stop()
        web.extensions["exag"].close()
