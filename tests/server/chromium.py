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
