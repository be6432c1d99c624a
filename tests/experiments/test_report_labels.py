"""The report speaks the players' language and reads cleanly (issue 31): every figure labels a rating with
the words the player (or rater) clicked, taken from the one scale the game uses; Table 1 gives each note
once per cell and never a "/" with nothing beside it; Fig. 9's legend covers no data."""
from __future__ import annotations

import ast
import re
from html import escape, unescape
from pathlib import Path

import numpy as np
import pytest
from test_analysis import Log, rated_log

import game.settings
from experiments.analysis import analyze, scales
from experiments.analysis.figures import (caption, fig6_ratings, fig7_win_by_helpfulness, fig8_difficulty_by_rating,
                                          fig9_win_by_correctness)
from experiments.analysis.html import table1
from experiments.analysis.paper import PAPER
from experiments.analysis.scales import ANSWER_SCALE, EXPLANATION_SCALE, RATINGS
from experiments.analysis.stats import join_notes
from experiments.analysis.wild_bootstrap import too_few

ANALYSIS = Path(scales.__file__).parent


@pytest.fixture(scope="module")
def rated_report() -> dict:
    return analyze(rated_log(with_raters=True).tables())


def ticks(ax) -> list[str]:
    """An axis's category labels as words (a tick label wraps between words)."""
    return [" ".join(t.get_text().split()) for t in ax.get_xticklabels()]


def drawn(figure) -> list:
    """The panels that drew data (a "no data yet" panel has no ticks)."""
    return [ax for ax in figure.axes if ax.get_xticklabels()]


# --- the players' own labels ---------------------------------------------------------------------------

def test_the_analysis_reads_the_one_scale_the_game_shows_the_players():
    assert scales.RATINGS is game.settings.RATINGS
    # no second copy: no string in the analysis's code is one of the scales' labels
    labels = {*RATINGS, *EXPLANATION_SCALE, *ANSWER_SCALE}
    for path in sorted(ANALYSIS.glob("*.py")):
        copies = [node.value for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                  if isinstance(node, ast.Constant) and node.value in labels]
        assert not copies, (path.name, copies)


def test_every_figure_labels_ratings_with_the_players_words(rated_report):
    fig6 = drawn(fig6_ratings(rated_report))
    assert [ticks(ax) for ax in fig6] == [list(RATINGS), list(EXPLANATION_SCALE), list(ANSWER_SCALE)]
    fig7 = drawn(fig7_win_by_helpfulness(rated_report))
    assert len(fig7) == 3 and all(ticks(ax) == list(RATINGS) for ax in fig7)      # overall, attention, relqa
    *by_rating, won_lost = drawn(fig8_difficulty_by_rating(rated_report))
    assert len(by_rating) == 3 and all(ticks(ax) == list(RATINGS) for ax in by_rating)
    assert ticks(won_lost) == ["no expl.", "with expl."]
    fig9 = drawn(fig9_win_by_correctness(rated_report))
    assert len(fig9) == 2 and all(ticks(ax) == list(EXPLANATION_SCALE) for ax in fig9)


def test_the_papers_names_are_said_once_beside_the_players_labels(rated_report):
    paper = PAPER["rating_names"]
    assert len(paper) == len(RATINGS) and not set(paper) & set(RATINGS)
    captions = {name: caption(name, rated_report) for name in ("fig6_ratings", "fig7_win_by_helpfulness",
                                                               "fig8_difficulty_by_rating", "fig9_win_by_correctness")}
    assert all(name in captions["fig6_ratings"] for name in (*paper, *RATINGS))
    assert not any(paper[1] in text for name, text in captions.items() if name != "fig6_ratings")


# --- Table 1: each note once per cell, no stray "/" --------------------------------------------------------

def small_study() -> Log:
    """A controlled study too small for participant-level tests: 3 participants per arm (no clustered interval
    or p-value in any arm's row, for the win rate and the score alike), games won at random."""
    log, rng = Log(), np.random.default_rng(3)
    for arm in ("attention", "relqa", "both", "none"):
        for p in range(3):
            for number in range(20):
                shows = arm != "none" and (number // 5) % 2 == 1
                won = bool(rng.random() < 0.5)
                log.game("small", f"{arm}-{p}", arm, number, won=won, score=6 if won else 0, with_explanations=shows,
                         rounds=[{"explained": shows, "rating": RATINGS[int(rng.integers(0, 5))]}])
    return log


def cells(page: str) -> list[str]:
    return re.findall(r"<td[^>]*>(.*?)</td>", page, flags=re.S)


def lines(cell: str) -> list[str]:
    """A cell's lines as the reader sees them (tags gone)."""
    return [unescape(re.sub(r"<[^>]+>", "", part)).strip() for part in re.split(r"<br\s*/?>", cell)]


def test_table1_gives_each_note_once_per_cell_and_no_stray_slash():
    controlled = analyze(small_study().tables())["controlled"]
    rows = {r["mode"]: r for r in controlled["table1"]}
    assert rows["attention"]["improvement"]["win_rate_ci"] is None        # the case that printed a bare "/"
    reason = too_few(3)
    assert rows["attention"]["note"].count(reason) == 1                   # win rate and score: the same reason
    page = table1(controlled)
    notes = {part for r in rows.values() for key in ("note",) if r.get(key) for part in r[key].split("; ")}
    notes |= {part for r in rows.values() for sub in ("improvement_paper", "improvement_within_participants")
              if (r.get(sub) or {}).get("note") for part in r[sub]["note"].split("; ")}
    assert reason in notes
    for cell in cells(page):
        for note in notes:
            assert cell.count(escape(note, quote=True)) <= 1, (note, cell)
        for line in lines(cell):
            assert not line.startswith("/") and not line.endswith("/"), (line, cell)
    # said once, as a numbered footnote under the table (issue 44: notes in cells made it too wide), and each
    # arm's row points to it
    table, footnotes = page.split("</table>", 1)
    number = re.findall(r"<li>(.*?)</li>", footnotes.split("</ol>", 1)[0]).index(escape(reason, quote=True)) + 1
    assert page.count(escape(reason, quote=True)) == 1
    marked = [row for row in table.split("<tr>")[2:]
              if re.search(rf'<sup class="fn">(?:\d+,)*{number}(?:,\d+)*</sup>', row)]
    assert len(marked) >= 3


def test_join_notes_splits_and_gives_each_sentence_once():
    assert join_notes("a; b", None, "b", "", "a; c") == "a; b; c"
    assert join_notes(None, "") is None


# --- Fig. 9's legend clear of the data ---------------------------------------------------------------------

def extreme_correctness() -> dict:
    """Fig. 9's section with points in every corner: lines from 2% to 98% and back, and a baseline band."""
    modes = ("overall", "attention", "relqa", "objscene", "nle")
    shapes = ([0.02, 0.3, 0.6, 0.9, 0.98], [0.98, 0.9, 0.5, 0.1, 0.02], [0.5, 0.02, 0.98, 0.02, 0.5],
              [0.02, 0.98, 0.02, 0.98, 0.02], [0.9, 0.1, 0.9, 0.1, 0.9])

    def source() -> dict:
        points = {mode: [{"rating": label, "rank": rank, "win_rate": y, "ci": [max(0, y - 0.1), min(1, y + 0.1)],
                          "n": 40, "n_games": 40} for rank, (label, y) in enumerate(zip(EXPLANATION_SCALE, ys))]
                  for mode, ys in zip(modes, shapes)}
        return {"points": points, "n_items": 200, "baseline": {"win_rate": 0.5, "ci": [0.4, 0.6], "n_games": 90},
                "trend": {"odds_ratio": 1.2, "p_value": 0.04}}
    return {"by_correctness": {"raters": source(), "automatic": source(),
                               "agreement": {"weighted_kappa": 0.5, "n_items": 100}}}


def data_points(ax) -> np.ndarray:
    """Every drawn point of an axes in display pixels: line vertices (points, caps, the baseline) and points
    along each error bar."""
    out = [line.get_transform().transform(line.get_xydata()) for line in ax.lines if len(line.get_xydata())]
    for collection in ax.collections:
        for segment in getattr(collection, "get_segments", lambda: [])():
            segment = np.asarray(segment)
            along = np.linspace(0, 1, 25)[:, None]
            out.append(collection.get_transform().transform(segment[0] + along * (segment[-1] - segment[0])))
    return np.concatenate(out) if out else np.zeros((0, 2))


def assert_legends_clear(figure) -> int:
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    legends = 0
    for ax in figure.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        legends += 1
        box = legend.get_window_extent(renderer)
        inside = [(x, y) for x, y in data_points(ax) if box.x0 <= x <= box.x1 and box.y0 <= y <= box.y1]
        assert not inside, (ax.get_title(), inside[:5])
        for other in figure.axes:                       # beside its panel, over no panel's plotting area
            assert not box.overlaps(other.get_window_extent(renderer)), (ax.get_title(), other.get_title())
        whole = figure.bbox
        assert whole.x0 <= box.x0 and box.x1 <= whole.x1 and whole.y0 <= box.y0 and box.y1 <= whole.y1
    return legends


def test_fig9_legend_covers_no_data(rated_report):
    assert assert_legends_clear(fig9_win_by_correctness(extreme_correctness())) == 2
    assert assert_legends_clear(fig9_win_by_correctness(rated_report)) == 2


def test_figs_7_to_9_are_captioned_as_associations_not_effects(rated_report):
    """They group games by a rating or grade nobody randomized, observed after the explanation was seen."""
    from experiments.analysis.figures import caption

    for name in ("fig7_win_by_helpfulness", "fig8_difficulty_by_rating", "fig9_win_by_correctness"):
        assert "Association, not effect:" in caption(name, rated_report), name
    for name in ("fig5_adoption", "fig6_ratings", "fig10_answer_correctness"):
        assert "Association, not effect" not in caption(name, rated_report), name


def crowded(report: dict) -> dict:
    """`report` with four panels a row in Figs. 7 and 8 (a "both" arm beside overall, attention and relqa)
    whose trends all carry the longest note a trend has (too few participants for a test)."""
    import copy

    from experiments.analysis.figures import scopes
    report = copy.deepcopy(report)
    for key in ("by_helpfulness", "difficulty_by_rating"):
        for _, section in scopes(report, key):
            if not isinstance(section, dict) or not section.get("points"):
                continue
            section["points"].setdefault("both", copy.deepcopy(section["points"]["attention"]))
            for mode in section["points"]:
                section.setdefault("trend", {})[mode] = {"note": too_few(3), "n_participants": 3}
    return report


def text_boxes(figure) -> list[tuple[str, object]]:
    """Every piece of text a figure draws (titles, axis labels, corner notes, legends), with its box in pixels."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    boxes = []
    for ax in figure.axes:
        for text in [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label, *ax.texts]:
            if text.get_visible() and text.get_text().strip():
                boxes.append((text.get_text(), text.get_window_extent(renderer)))
        if ax.get_legend() is not None:
            boxes.append((f"legend of {ax.get_title(loc='left')}", ax.get_legend().get_window_extent(renderer)))
    for text in figure.texts:
        boxes.append((text.get_text(), text.get_window_extent(renderer)))
    return boxes


@pytest.mark.parametrize("crowd", [False, True])
def test_no_figures_text_boxes_overlap(rated_report, crowd):
    """Titles, axis labels (Fig. 7's trend lines among them), corner notes and legends: none prints over another,
    and each stays inside the figure."""
    from experiments.analysis.figures import DRAW, FIGURES
    report = crowded(rated_report) if crowd else rated_report
    for name in FIGURES:
        figure = DRAW[name](report)
        boxes = text_boxes(figure)
        whole = figure.bbox
        for i, (text, box) in enumerate(boxes):
            assert whole.x0 - 1 <= box.x0 and box.x1 <= whole.x1 + 1, (name, text)
            for other, other_box in boxes[i + 1:]:
                assert not box.overlaps(other_box), (name, text, other)


def test_fig8_and_fig10_legends_cover_no_data(rated_report):
    assert assert_legends_clear(fig8_difficulty_by_rating(rated_report)) >= 1
    from experiments.analysis.figures import fig10_answer_correctness
    assert assert_legends_clear(fig10_answer_correctness(rated_report)) >= 1


def test_fig8_difficulty_axis_reads_higher_is_harder(rated_report):
    """Set difficulty is a distance (lower = harder): the axis is inverted so a harder set sits higher, and says so."""
    figure = fig8_difficulty_by_rating(rated_report)
    for ax in drawn(figure):
        assert ax.yaxis_inverted() and "harder \u2191" in ax.get_ylabel() and "lower = harder" not in ax.get_ylabel()
