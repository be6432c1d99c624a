"""Table 1's notes are numbered footnotes under it rather than inside its cells (issue 44), so the table fits a
1,280 px screen (measured in Chromium: tests/server/test_report_layout_browser.py)."""
from __future__ import annotations

import pytest
from test_report_labels import small_study

from experiments.analysis import analyze
from experiments.analysis.html import table1


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
