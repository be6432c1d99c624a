"""The report page fits a 1,280 px screen (issue 44): Table 1, with its notes as numbered footnotes under it
rather than inside its cells, is no wider than the window, measured in Chromium (tests/server/chromium.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_report_labels import small_study

from experiments.analysis import analyze
from experiments.analysis.html import render_html, table1

sys.path.insert(0, str(Path(__file__).parents[1] / "server"))
from chromium import CHROMIUM, needs_chromium  # noqa: E402

WIDTH = 1280


@pytest.fixture(scope="module")
def report() -> dict:
    """A small controlled study: every arm's row carries notes (too few participants for a clustered test)."""
    return analyze(small_study().tables())


def test_table1_notes_are_numbered_footnotes_under_the_table(report):
    html = table1(report["controlled"])
    table, after = html.split("</table>", 1)[0], html.split("</table>", 1)[1]
    assert 'class="footnotes' in after and "<sup" in table
    rows = [r for r in report["controlled"]["table1"] if r.get("note")]
    assert rows
    first_cells = [row.split("</td>")[0] for row in table.split("<tr>")[2:]]
    for cell in first_cells:                         # the mode cell holds the mode and a marker, no sentence
        assert "muted small" not in cell and len(cell) < 200, cell


@needs_chromium
def test_table1_fits_a_1280_px_window(report):
    sync_api = pytest.importorskip("playwright.sync_api")
    page_html = render_html(report, [])
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": 900})
            page.set_content(page_html)
            widths = page.evaluate("""() => [...document.querySelectorAll('table')].map(t =>
                [t.getBoundingClientRect().right, t.scrollWidth, t.rows[0].cells.length])""")
            page_width = page.evaluate("() => document.documentElement.scrollWidth")
        finally:
            browser.close()
    table1_right, table1_scroll, _ = next(w for w in widths if w[2] == 11)     # Table 1: eleven columns
    assert table1_scroll <= WIDTH and table1_right <= WIDTH, widths
    assert page_width <= WIDTH, widths
