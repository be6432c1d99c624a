"""Issue 31, the board, in Debian's Chromium against a real server: attention badges beside their objects
(never on one, on another badge, on an object's centre or on a control, never clipped), checked from the
DOM boxes on a 20-image board and enlarged; zooming selects nothing; the header counts the questions the
points pay for; an over-long question is refused whole, by the page and by the server; on a 390x844 phone
the header stays in view, the rating box is in view after an answer and, after explanations are bought, the
explanations about the secret with the rating box right below them; a refused link is one styled
message (a finished participation told so); the demo link resumes in a second tab; /favicon.ico. Writes
docs/screenshot_phone.png."""
from __future__ import annotations

from pathlib import Path

import pytest
from chromium import TIMEOUT_MS, ask, needs_chromium, new_page, to_the_game

from game.settings import settings_named

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = needs_chromium
DOCS = Path(__file__).resolve().parents[2] / "docs"
AT_WILL = settings_named("at-will")           # the `aw` study's settings (tests/server/server_setup.py)
CONTROLLED = settings_named("controlled")     # `ctl`, `quick`

# Every placed badge of the overlays under `root`, against its tile (the image), its own object's box, every
# object's centre, the other badges and the controls its tile keeps clear, in page pixels.
BADGE_PROBLEMS = """(root) => {
  const overlap = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const problems = [];
  let placed = 0, labels = 0;
  const overlays = [...document.querySelectorAll(root + " .attention-overlay")];
  overlays.forEach((overlay, index) => {
    const area = overlay.getBoundingClientRect();
    const [width, height] = overlay.dataset.imageSize.split(" ").map(Number);
    const sx = area.width / width, sy = area.height / height;
    const onPage = (text) => {
      const [x1, y1, x2, y2] = text.split(" ").map(Number);
      return {left: area.left + x1 * sx, top: area.top + y1 * sy, right: area.left + x2 * sx, bottom: area.top + y2 * sy};
    };
    const centres = (overlay.dataset.boxes ? overlay.dataset.boxes.split(";") : []).map(onPage)
      .map((b) => [(b.left + b.right) / 2, (b.top + b.bottom) / 2]);
    const tile = overlay.closest(".image-box").getBoundingClientRect();
    const scope = overlay.closest("[data-overlay-scope]");
    const controls = scope ? [...scope.querySelectorAll("[data-keep-clear]")].map((el) => el.getBoundingClientRect()) : [];
    const others = [];
    for (const label of overlay.querySelectorAll(".object-label")) {
      labels++;
      if (label.dataset.placed !== "true") continue;
      placed++;
      const r = label.getBoundingClientRect();
      const where = `badge ${label.textContent} of overlay ${index + 1}`;
      if (r.left < tile.left - 0.5 || r.top < tile.top - 0.5 || r.right > tile.right + 0.5 || r.bottom > tile.bottom + 0.5) problems.push(`${where}: clipped`);
      if (overlap(r, onPage(label.dataset.box))) problems.push(`${where}: on its object`);
      if (centres.some(([x, y]) => x > r.left && x < r.right && y > r.top && y < r.bottom)) problems.push(`${where}: on an object's centre`);
      if (others.some((o) => overlap(r, o))) problems.push(`${where}: on another badge`);
      if (controls.some((c) => overlap(r, c))) problems.push(`${where}: on a control`);
      others.push(r);
    }
  });
  return {problems, placed, labels, overlays: overlays.length};
}"""


def buy_explanations(page, images: int) -> None:
    page.click("#explain")
    sync_api.expect(page.locator("#rating-group legend")).to_contain_text("its explanations", timeout=TIMEOUT_MS)
    sync_api.expect(page.locator(".tile .attention-overlay[data-laid-out]")).to_have_count(images, timeout=TIMEOUT_MS)


def header_counts(page) -> tuple[int, int]:
    """(points, questions left) as the header shows them."""
    return int(page.locator("#points").inner_text()), int(page.locator("#questions-left").inner_text().split()[0])


def test_badges_zoom_header_and_question_limit_on_a_20_image_board(browser, live_server):
    errors = []
    page = new_page(browser, f"{live_server.url}/?study=aw&pid=board-1", errors)
    to_the_game(page)
    sync_api.expect(page.locator("button.tile")).to_have_count(AT_WILL.images)
    # the header counts the questions the points pay for, within the game's limit
    assert header_counts(page) == (AT_WILL.start_points, min(AT_WILL.start_points // AT_WILL.question_cost,
                                                              AT_WILL.max_questions))
    ask(page, "Is there a large metal sphere?")
    buy_explanations(page, AT_WILL.images)
    points = AT_WILL.start_points - AT_WILL.question_cost - AT_WILL.explanation_cost
    assert header_counts(page) == (points, min(points // AT_WILL.question_cost, AT_WILL.max_questions - 1))

    # the badges of all 20 tiles, from the DOM's boxes
    board = page.evaluate(BADGE_PROBLEMS, ".image-grid")
    assert board["overlays"] == AT_WILL.images and not board["problems"], board
    assert board["placed"] >= AT_WILL.images, board        # at least the strongest object's badge, about, per tile

    # enlarging an image shows it with its explanation, and selects nothing
    page.click("#zoom-3")
    zoom = page.locator("dialog#zoom")
    sync_api.expect(zoom).to_be_visible()
    sync_api.expect(zoom.locator(".attention-overlay[data-laid-out]")).to_have_count(1)
    enlarged = page.evaluate(BADGE_PROBLEMS, "dialog#zoom")
    assert enlarged["placed"] >= 1 and not enlarged["problems"], enlarged
    assert zoom.locator(".image-box").bounding_box()["width"] > 2 * page.locator("button.tile").nth(2).bounding_box()["width"]
    page.keyboard.press("1")                                   # the rating keys are the board's, not the zoom's
    page.keyboard.press("Escape")
    sync_api.expect(zoom).to_be_hidden()
    sync_api.expect(page.locator("#zoom-3")).to_be_focused()
    page.click("#zoom-5")
    page.click("#zoom-close")
    sync_api.expect(zoom).to_be_hidden()
    assert page.locator('button.tile[aria-pressed="true"]').count() == 0
    assert page.locator("#history li.round .round-meta").first.inner_text().endswith("not rated yet")
    page.click('button.rating[data-rating="Mostly helping"]')
    sync_api.expect(page.locator("#question")).to_be_enabled()
    sync_api.expect(page.locator("#guess")).to_be_disabled()   # no image selected: no guess

    # a 5,000-character paste is kept whole, counted, and refused with a message, not cut and sent
    rounds = page.locator("#history li.round").count()
    page.fill("#question", "r" * 5000)
    assert len(page.input_value("#question")) == 5000
    sync_api.expect(page.locator("#question-count")).to_have_text(f"5000/{AT_WILL.max_question_chars}")
    sync_api.expect(page.locator("#question-help")).to_contain_text(f"longer than {AT_WILL.max_question_chars}")
    page.press("#question", "Enter")
    sync_api.expect(page.locator("#alert")).to_contain_text("please shorten it")
    assert page.locator("#history li.round").count() == rounds
    # ... and the server refuses one sent past the page the same way (a second tab of the same browser)
    refusal = page.evaluate("""async (question) => {
      const socket = io({transports: ["websocket"], forceNew: true});
      const next = (name) => new Promise((resolve) => socket.once(name, resolve));
      await next("connect");
      socket.emit("join", {study: "aw", pid: "board-1"});
      const state = JSON.parse(await next("state"));
      socket.emit("ask", {game_id: state.game.game_id, question});
      const error = await next("error");
      socket.disconnect();
      return error;
    }""", "r" * 5000)
    assert refusal["event"] == "ask" and f"longer than {AT_WILL.max_question_chars} characters (it has 5000)" \
        in refusal["message"], refusal

    icon = page.request.get(f"{live_server.url}/favicon.ico")
    assert icon.status == 200 and icon.headers["content-type"].startswith("image/svg+xml") and b"<svg" in icon.body()
    assert not errors, errors


def test_on_a_phone_the_header_stays_and_the_rating_box_comes_first(browser, live_server):
    errors = []
    page = new_page(browser, f"{live_server.url}/?study=aw&pid=phone-1", errors, width=390, height=844)
    to_the_game(page)
    header = page.locator(".status-bar")

    def in_view(locator, below: float = 0) -> bool:
        box = locator.bounding_box()
        return box is not None and box["y"] >= below - 1 and box["y"] + box["height"] <= 844 + 1

    assert in_view(header)                                     # at game start (focus went to the question)
    # scrolled again until it moves: on a busy machine the board may still be laying out the first time
    page.wait_for_function("() => { window.scrollTo(0, document.body.scrollHeight); return window.scrollY > 100; }",
                           polling=100)
    assert in_view(header) and header.bounding_box()["y"] <= 1  # sticky
    ask(page, "Is there a small rubber cube?")
    bottom = header.bounding_box()["y"] + header.bounding_box()["height"]
    assert in_view(page.locator(".rating-box"), below=bottom), page.locator(".rating-box").bounding_box()
    buy_explanations(page, AT_WILL.images)
    bottom = header.bounding_box()["y"] + header.bounding_box()["height"]
    # the explanations about the secret in view, the rating box right below them (issue 44)
    panel = page.locator(".secret-panel")
    assert in_view(panel, below=bottom), panel.bounding_box()
    assert page.locator(".rating-box").bounding_box()["y"] >= panel.bounding_box()["y"] + panel.bounding_box()["height"] - 1
    assert in_view(header)
    board = page.evaluate(BADGE_PROBLEMS, ".image-grid")
    assert not board["problems"], board
    page.click('button.rating[data-rating="Somewhat helpful"]')
    sync_api.expect(page.locator("#question")).to_be_enabled()
    page.evaluate("() => window.scrollTo(0, 0)")
    page.mouse.move(200, 20)                                   # over the header: no tile shows its hover border
    page.wait_for_timeout(200)
    page.screenshot(path=str(DOCS / "screenshot_phone.png"))
    assert not errors, errors


def finish(page) -> None:
    """Plays a `quick` participation to its end: a guess a game, then the questionnaire."""
    for _ in range(CONTROLLED_GAMES):
        sync_api.expect(page.locator("#stage")).to_have_attribute("data-stage", "game")
        page.locator("button.tile").first.click()
        page.click("#guess")
        sync_api.expect(page.locator("#outcome")).to_be_visible()
        page.click("#next-game")
        sync_api.expect(page.locator("#outcome")).to_have_count(0)      # the next game (or the questionnaire)
    sync_api.expect(page.locator("#stage")).to_have_attribute("data-stage", "questionnaire")
    for item in page.locator("fieldset.question-item").all():
        item.locator("input").last.check()
    page.click("#questionnaire-submit")
    sync_api.expect(page.locator("#stage")).to_have_attribute("data-stage", "done")


CONTROLLED_GAMES = 4     # the `quick` study: 4 sessions of 1 game


def test_each_refused_link_is_one_styled_message(browser, live_server):
    errors, url = [], live_server.url
    owner = browser.new_context()
    page = new_page(browser, f"{url}/?study=quick&pid=err-done", errors, context=owner)
    to_the_game(page)
    # the controlled header: 10 points buy 10 questions (the game allows 20)
    assert header_counts(page) == (CONTROLLED.start_points, CONTROLLED.start_points // CONTROLLED.question_cost)
    finish(page)
    cases = {f"{url}/?study=nope&pid=err-1": "there is no study 'nope'",
             f"{url}/?study=ctl&pid=err-2&arm=telepathy": "unknown arm 'telepathy'",
             f"{url}/?study=quick&pid=err-done": "already finished: you have taken part in this study"}
    for link, message in cases.items():
        elsewhere = browser.new_context()                      # another browser: its own cookie
        other = new_page(browser, link, errors, context=elsewhere)
        sync_api.expect(other.locator("#stage")).to_have_attribute("data-stage", "refused")
        shown = other.get_by_text(message, exact=False)
        sync_api.expect(shown).to_have_count(1)
        sync_api.expect(shown).to_be_visible()
        assert other.locator(".page.refused .refused-message").count() == 1
        sync_api.expect(other.locator("#alert")).to_be_hidden()
        assert "another browser" not in other.locator("#stage").inner_text()
        elsewhere.close()
    # the finished participation's own browser gets its end page back
    again = new_page(browser, f"{url}/?study=quick&pid=err-done", errors, context=owner)
    sync_api.expect(again.locator("#stage")).to_have_attribute("data-stage", "done")
    owner.close()
    assert not errors, errors


def test_the_demo_link_resumes_in_a_second_tab_of_the_same_browser(browser, live_server):
    errors = []
    one = browser.new_context()
    first = new_page(browser, f"{live_server.url}/?study=aw", errors, context=one)
    first.click("#consent-agree")
    sync_api.expect(first.locator("#stage")).to_have_attribute("data-stage", "instructions")
    first.wait_for_url("**pid=anon-*")
    pid = first.url.split("pid=")[1].split("&")[0]
    second = new_page(browser, f"{live_server.url}/?study=aw", errors, context=one)   # a new tab, no pid
    sync_api.expect(second.locator("#stage")).to_have_attribute("data-stage", "instructions")
    second.wait_for_url(f"**pid={pid}*")
    two = browser.new_context()                                 # another browser is another participant
    third = new_page(browser, f"{live_server.url}/?study=aw", errors, context=two)
    sync_api.expect(third.locator("#stage")).to_have_attribute("data-stage", "consent")
    third.wait_for_url("**pid=anon-*")
    assert pid not in third.url
    one.close()
    two.close()
    assert not errors, errors
