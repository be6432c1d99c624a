"""Debian's Chromium for the browser tests (Playwright's own browser download does not work offline):
where it is, the mark that skips a test module with a reason where it is not, and what every game test
does the same way (asking a question). The `browser` fixture (tests/server/conftest.py) launches it once
per module."""
from __future__ import annotations

import os
import shutil

import pytest

CHROMIUM = os.environ.get("EXAG_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
needs_chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="no Chromium (apt-get install chromium)")
TIMEOUT_MS = 60_000


def ask(page, question: str) -> None:
    """Types a question into the game page and waits for its answer and the rating buttons."""
    from playwright.sync_api import expect

    rounds = page.locator("#history li.round").count()
    page.fill("#question", question)
    page.press("#question", "Enter")
    expect(page.locator("#history li.round")).to_have_count(rounds + 1, timeout=TIMEOUT_MS)
    expect(page.locator("button.rating").first).to_be_enabled(timeout=TIMEOUT_MS)


def new_page(browser, url: str, errors: list[str], width: int = 1280, height: int = 800, context=None):
    """A page at `url` whose script errors land in `errors` (a context's, or a browser of its own)."""
    page = context.new_page() if context else browser.new_page()
    page.set_viewport_size({"width": width, "height": height})
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    return page


def to_the_game(page) -> None:
    """From the consent page to the first game (a study without checks)."""
    from playwright.sync_api import expect

    page.click("#consent-agree")
    page.click("#begin")
    expect(page.locator("#stage")).to_have_attribute("data-stage", "game")
