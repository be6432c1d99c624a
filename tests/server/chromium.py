"""Debian's Chromium for the browser tests (Playwright's own browser download does not work offline):
where it is, and the mark that skips a test module with a reason where it is not. The `browser` fixture
(tests/server/conftest.py) launches it once per module."""
from __future__ import annotations

import os
import shutil

import pytest

CHROMIUM = os.environ.get("EXAG_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
needs_chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="no Chromium (apt-get install chromium)")
TIMEOUT_MS = 60_000
