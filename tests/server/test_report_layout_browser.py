"""The report page fits a 1,280 px screen (issue 44): Table 1, with its notes as numbered footnotes under it,
is no wider than the window, measured in the session's Chromium (tests/server/conftest.py `browser`)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from chromium import needs_chromium

from experiments.analysis import analyze
from experiments.analysis.html import render_html

sys.path.insert(0, str(Path(__file__).parents[1] / "experiments"))
from test_report_labels import small_study  # noqa: E402

pytestmark = needs_chromium
WIDTH = 1280


@pytest.fixture(scope="module")
def report() -> dict:
    """A small controlled study: every arm's row carries notes (too few participants for a clustered test)."""
    return analyze(small_study().tables())


def test_table1_fits_a_1280_px_window(report, browser):
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    try:
        page.set_content(render_html(report, []))
        page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")   # every table
        widths = page.evaluate("""() => [...document.querySelectorAll('table')].map(t =>
            [t.getBoundingClientRect().right, t.scrollWidth, t.rows[0].cells.length])""")
        page_width = page.evaluate("() => document.documentElement.scrollWidth")
    finally:
        page.close()
    table1_right, table1_scroll, _ = next(w for w in widths if w[2] == 11)     # Table 1: eleven columns
    assert table1_scroll <= WIDTH and table1_right <= WIDTH, widths
    assert all(scroll <= WIDTH for _, scroll, _ in widths), widths      # the tests' table under Methods too
    assert page_width <= WIDTH, widths
