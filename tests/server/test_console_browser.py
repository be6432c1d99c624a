"""The researcher's console in Debian's Chromium, driven by Playwright (issue 31): typing in every form for
10 s while the studies update in place many times (participants arriving meanwhile) loses nothing; a refused
study's reason is shown beside its config and in view; a release asks first, says what it did, and the old
browser's tab receives none of the owner's states after it; rater links have a copy button. The last test
writes docs/screenshot_console.png."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from chromium import TIMEOUT_MS, needs_chromium

from experiments.simulate.bot import Bot

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect
pytestmark = needs_chromium

DOCS = Path(__file__).resolve().parents[2] / "docs"
POLL_S = 0.1              # the console's update interval here (?poll=): ~100 updates while the test types
TYPING_S = 10.0
VIEWPORT = {"width": 1280, "height": 800}


def open_console(browser, url: str, errors: list[str], **context_options):
    page = browser.new_context(viewport=VIEWPORT, **context_options).new_page()
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(f"{url}/admin?token=test-admin&poll={POLL_S}")
    return page


def updates(page) -> int:
    return int(page.get_attribute("#live", "data-updates"))


def in_view(page, selector: str) -> dict:
    box = page.locator(selector).bounding_box()
    size = page.viewport_size
    assert box and box["height"] > 0, f"{selector} is not shown"
    assert 0 <= box["y"] and box["y"] + box["height"] <= size["height"], f"{selector} is out of view: {box}"
    assert 0 <= box["x"] and box["x"] + box["width"] <= size["width"], f"{selector} is out of view: {box}"
    return box


def test_typing_in_every_form_survives_live_updates(browser, live_server):
    errors, url = [], live_server.url
    page = open_console(browser, url, errors)
    arms_before = page.inner_text("#study-ctl table.arms")
    stop, arrived = threading.Event(), []

    def arrive():               # participants keep joining: the studies' counts change while the researcher types
        while not stop.is_set():
            Bot(url, "ctl", f"arrival-{len(arrived)}", arm=("none", "both")[len(arrived) % 2]).close()
            arrived.append(1)
            stop.wait(1.0)

    config = json.dumps({"study_id": "typed-1", "kind": "controlled", "arms": ["none", "both"], "sessions": 4,
                         "games_per_session": 2, "completion_code": "TYPED-1"}, indent=1)
    typed = {"#config": config, "#search-study": "ctl", "#search-q": "arrival", "#release-study": "ctl",
             "#release-pid": "pid:someone-who-changed-device", "#rater-ids": "rater-1, rater-2 rater-3"}
    chunks = {field: [text[i:i + 6] for i in range(0, len(text), 6)] for field, text in typed.items()}
    delay_ms = 1000 * TYPING_S / sum(map(len, typed.values()))
    page.fill("#config", "")
    first, started = updates(page), time.monotonic()
    thread = threading.Thread(target=arrive, daemon=True)
    thread.start()
    try:
        for round_ in range(max(map(len, chunks.values()))):      # a few characters in each field in turn
            for field, parts in chunks.items():
                if round_ < len(parts):
                    page.focus(field)
                    page.keyboard.press("Control+End")
                    page.keyboard.type(parts[round_], delay=delay_ms)
    finally:
        stop.set()
        thread.join(30)
    took = time.monotonic() - started
    assert took >= TYPING_S * 0.9, took
    for field, text in typed.items():
        assert page.input_value(field) == text, field                 # nothing typed was lost
    expect(page.locator("#config-check")).to_have_text("Can be created here.")   # checked as it was typed
    assert updates(page) - first >= 30, (updates(page) - first, took)
    assert len(arrived) >= 3 and page.inner_text("#study-ctl table.arms") != arms_before   # updated in place
    assert not errors, errors


def test_a_refused_study_shows_its_reason_beside_the_config_in_view(browser, live_server):
    errors = []
    page = open_console(browser, live_server.url, errors)
    refused = json.dumps({"study_id": "refused-1", "kind": "controlled", "arms": ["none"], "sessions": 2})
    page.fill("#config", refused)
    page.mouse.wheel(0, 5000)                                         # the researcher was reading the studies
    page.click("#create-button")
    check = page.locator("#config-check")
    expect(check).to_have_text("Not created: controlled studies have at least 4 sessions")
    box, field = in_view(page, "#config-check"), page.locator("#config").bounding_box()
    assert 0 <= box["y"] - (field["y"] + field["height"]) < 40       # right under the field
    assert page.input_value("#config") == refused                     # kept, to be fixed
    assert live_server.app.extensions["exag"].store.study("refused-1") is None

    page.fill("#config", refused.replace('"sessions": 2', '"sessions": 4'))
    page.click("#create-button")
    expect(check).to_have_text("Created study refused-1.")
    expect(page.locator("#study-refused-1")).to_be_visible()          # the new study, without a reload
    page.click("#study-ctl button.copy-config")                        # a study like ctl, to be changed
    assert json.loads(page.input_value("#config"))["study_id"] == "ctl-2"
    expect(check).to_have_text("Can be created here.")
    assert not errors, errors


def test_release_asks_first_and_the_old_tab_receives_no_more_states(browser, live_server):
    errors, url = [], live_server.url
    frames, sockets = [], []
    laptop = browser.new_context(viewport=VIEWPORT).new_page()
    laptop.set_default_timeout(TIMEOUT_MS)
    laptop.on("pageerror", lambda error: errors.append(str(error)))
    laptop.on("websocket", lambda ws: (sockets.append(ws), ws.on("framereceived", lambda frame: frames.append(frame))))
    game = f"{url}/?study=ctl&pid=mover-31&arm=both"
    laptop.goto(game)
    laptop.click("#consent-agree")
    laptop.click("#begin")
    expect(laptop.locator("button.tile").first).to_be_visible()
    phone = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
    phone.set_default_timeout(TIMEOUT_MS)
    phone.goto(game)
    expect(phone.locator("#stage")).to_contain_text("already open in another browser")

    console = open_console(browser, url, errors)
    waiting = console.locator("#study-ctl .bound-elsewhere li", has_text="pid:mover-31")
    expect(waiting).to_be_visible()                                   # listed by a live update
    dialog = console.locator("#confirm-release")
    waiting.locator("button").click()
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("pid:mover-31")
    dialog.locator('button[value="cancel"]').click()                  # a second thought: nothing happens
    expect(dialog).to_be_hidden()
    store = live_server.app.extensions["exag"].store
    assert store.participant("ctl", "pid:mover-31")["binding"] is not None

    waiting.locator("button").click()
    console.click("#confirm-release-button")
    expect(console.locator("#release-result")).to_contain_text("Released pid:mover-31 of ctl")
    expect(console.locator("#notice")).to_be_visible()
    in_view(console, "#notice")
    expect(laptop.locator("#alert")).to_contain_text("the researcher released this participation")
    deadline = time.monotonic() + 10
    while not all(ws.is_closed() for ws in sockets) and time.monotonic() < deadline:
        laptop.wait_for_timeout(100)
    assert sockets and all(ws.is_closed() for ws in sockets), "the old tab's connection is still open"
    seen = len(frames)

    phone.reload()                                                    # the owner goes on on the new device
    expect(phone.locator("button.tile").first).to_be_visible()
    phone.fill("#question", "Is there a red cube?")
    phone.press("#question", "Enter")
    expect(phone.locator("#history li.round")).to_have_count(1)
    laptop.wait_for_timeout(1000)
    assert frames[seen:] == [], "the old tab received the owner's states after the release"
    expect(console.locator("#study-ctl .bound-elsewhere li", has_text="pid:mover-31")).to_have_count(0)
    assert not errors, errors


def test_rater_links_exports_and_the_live_report_are_one_click_away(browser, live_server):
    errors = []
    page = open_console(browser, live_server.url, errors, permissions=["clipboard-read", "clipboard-write"])
    page.fill("#rater-ids", "lab-a, lab-b lab-c")
    page.click("#raters-form button")
    links = page.locator("#rater-links li")
    expect(links).to_have_count(3)
    first = links.first
    first.locator("button.copy").click()
    expect(first.locator("button.copy")).to_have_attribute("data-copied", "true")
    link = first.locator("input").input_value()
    assert "/rate?rater=lab-a&sig=" in link
    assert page.evaluate("navigator.clipboard.readText()") == link
    Bot(live_server.url, "ctl", "pictured-1", arm="none").close()
    page.fill("#search-study", "ctl")
    page.fill("#search-q", "pictured")
    page.click("#search-form button")
    expect(page.locator("#found li")).to_have_count(1)
    expect(page.locator("#found li")).to_contain_text("pid:pictured-1")
    page.fill("#config", json.dumps({"study_id": "pilot-2", "kind": "controlled", "arms": ["none", "both"],
                                     "sessions": 3}, indent=1))
    expect(page.locator("#config-check")).to_contain_text("at least 4 sessions")
    with page.expect_download() as download:
        page.click(".exports a:text-is('csv')")
    assert download.value.suggested_filename == "exag-export-csv.zip"
    with page.context.expect_page() as report:
        page.click("#study-ctl a:text-is('Live report')")
    expect(report.value.locator("h1")).to_contain_text("live report: ctl")
    report.value.close()
    page.evaluate("window.scrollTo(0, 0); document.querySelector('.tools').scrollTo(0, 0)")
    page.screenshot(path=str(DOCS / "screenshot_console.png"))
    assert not errors, errors
