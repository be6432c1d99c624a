"""Issue 55, in Debian's Chromium against a real server: a player is never asked to rate before the
explanations of that answer were in view (found by an outside test: on phones a controlled game asked to rate
"this answer and its explanations" a full screen above them, on the board below). On a 390x844 phone (touch)
and a 1280x800 desktop, in controlled games of the attention, relqa and nle arms (their explanations lie on
the board) and in an at-will game whose explanations are bought (on the board and about the secret): the
rating buttons appear with the explanations already drawn, after the answer the explanations come into view,
and every explanation's top lies at or above the rating buttons in the page (on one column, every explanation
lies wholly above the rating box: the player reaches the rating by passing them). And a question the agent
cannot read exactly is said so under its answer (game/unread_question.py)."""
from __future__ import annotations

import json

import pytest
from chromium import TIMEOUT_MS, ask, needs_chromium, to_the_game
from server_setup import LiveServer, server_config

from server.app import create_app

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = needs_chromium
SCREENS = {"phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
                     "device_scale_factor": 2},
           "desktop": {"viewport": {"width": 1280, "height": 800}}}
STUDIES = {   # order "baba": the first game shows the arm's explanations
    "first": {"study_id": "first", "kind": "controlled", "arms": ["attention", "relqa", "nle"], "sessions": 4,
              "games_per_session": 1, "order": "baba", "choose_arm": True, "settings": {"min_questions": 0},
              "completion_code": "CODE-FIRST"},
    "buy": {"study_id": "buy", "kind": "at-will", "arms": ["both"], "sessions": 1, "games_per_session": 2, "nle": True,
            "choose_arm": True, "completion_code": "CODE-BUY"},
}
# Records, when the rating buttons first become enabled after an answer, how many explanations are drawn then.
WATCH_RATING = """
window.ratingShown = [];
let enabled = false;
new MutationObserver(() => {
  const now = Boolean(document.querySelector("button.rating:not([disabled])"));
  if (now && !enabled) window.ratingShown.push(document.querySelectorAll("#stage .explanation").length);
  enabled = now;
}).observe(document, {childList: true, subtree: true, attributes: true, attributeFilter: ["disabled"]});
"""
# Page coordinates: each explanation's top and bottom, the rating buttons' and box's; the scroll, the header's bottom.
LAYOUT = """() => {
  const page = (el) => { const r = el.getBoundingClientRect(); return {top: r.top + scrollY, bottom: r.bottom + scrollY}; };
  return {explanations: [...document.querySelectorAll("#stage .explanation")].map(page),
          buttons: page(document.querySelector(".rating-buttons")), box: page(document.querySelector(".rating-box")),
          scrollY, height: innerHeight,
          header: document.querySelector(".status-bar").getBoundingClientRect().bottom,
          oneColumn: getComputedStyle(document.querySelector(".game-side")).display === "contents"};
}"""


@pytest.fixture(scope="module")
def placed_server(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("placed")
    studies = root / "studies"
    studies.mkdir()
    for study in STUDIES.values():
        (studies / f"{study['study_id']}.json").write_text(json.dumps(study))
    app = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, root / "data", studies))
    server = LiveServer(app)
    yield server
    server.stop()
    app.extensions["exag"].close()


@pytest.fixture(params=list(SCREENS))
def screen(request, browser):
    context = browser.new_context(**SCREENS[request.param])
    context.add_init_script(WATCH_RATING)
    yield request.param, context
    context.close()


def open_game(context, url: str, errors: list[str]):
    page = context.new_page()
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    to_the_game(page)
    return page


def settled(page) -> dict:
    """The layout once the page's own scrolling after the answer is over."""
    page.wait_for_timeout(300)
    return page.evaluate(LAYOUT)


def assert_rated_after_explanations(page, kinds: set[str]) -> None:
    explanations = page.locator("#stage .explanation")
    assert {explanations.nth(k).get_attribute("data-kind") for k in range(explanations.count())} >= kinds
    sync_api.expect(page.locator("#rating-group legend")).to_contain_text("its explanations")
    layout = settled(page)
    # after the answer the explanations come into view (their top below the sticky header)
    first = min(e["top"] for e in layout["explanations"])
    assert layout["scrollY"] + layout["header"] - 1 <= first <= layout["scrollY"] + layout["height"], layout
    # the rating buttons come after every explanation's top; on one column after every explanation whole
    late = [e for e in layout["explanations"] if e["top"] > layout["buttons"]["top"] + 1]
    assert not late, (layout["buttons"], late)
    if layout["oneColumn"]:
        below = [e for e in layout["explanations"] if e["bottom"] > layout["box"]["top"] + 1]
        assert not below, (layout["box"], below)
    # and once the player reaches the rating, those explanations were passed: they lie above it on screen
    page.locator(".rating-buttons").scroll_into_view_if_needed()
    buttons = page.locator(".rating-buttons").bounding_box()
    assert all(page.locator("#stage .explanation").nth(k).bounding_box()["y"] <= buttons["y"] + 1
               for k in range(page.locator("#stage .explanation").count()))


@pytest.mark.parametrize("arm, kinds", [("attention", {"attention"}), ("relqa", {"qa_pairs"}), ("nle", {"text"})])
def test_a_controlled_game_asks_for_the_rating_after_its_explanations(placed_server, screen, arm, kinds):
    name, context = screen
    errors = []
    page = open_game(context, f"{placed_server.url}/?study=first&pid=placed-{arm}-{name}&arm={arm}", errors)
    sync_api.expect(page.locator("#stage .highlight")).to_have_text("This game shows explanations")
    ask(page, "Is there a red cube?")
    shown = page.evaluate("window.ratingShown")
    assert len(shown) == 1 and shown[0] == 5, shown          # enabled with the 5 images' explanations drawn
    assert_rated_after_explanations(page, kinds)
    assert not errors, errors


def test_explanations_bought_come_before_the_rating_and_an_unread_question_is_said_so(placed_server, screen):
    name, context = screen
    errors = []
    page = open_game(context, f"{placed_server.url}/?study=buy&pid=placed-buy-{name}", errors)
    # a question the agent cannot read exactly: its answer is marked, with how to ask instead
    ask(page, "What color is the biggest object?")
    notice = page.locator("#question-notice")
    sync_api.expect(notice).to_be_visible()
    sync_api.expect(notice).to_contain_text("does not know the word 'biggest'")
    sync_api.expect(notice).to_contain_text("guess")
    sync_api.expect(page.locator("#history .round-notice")).to_have_count(1)
    assert page.evaluate("window.ratingShown") == [0]        # no explanations: the rating is of the answer only
    page.click("#explain")
    sync_api.expect(page.locator(".secret-panel .explanation").first).to_be_visible(timeout=TIMEOUT_MS)
    assert_rated_after_explanations(page, {"attention", "words", "qa_pairs", "text"})
    page.click('button.rating[data-rating="Somewhat helpful"]')
    sync_api.expect(page.locator("#question")).to_be_enabled()
    ask(page, "Is there a red cube?")                        # read exactly: nothing said
    sync_api.expect(page.locator("#question-notice")).to_have_count(0)
    sync_api.expect(page.locator("#history .round-notice")).to_have_count(1)
    assert not errors, errors
