"""`exag analyze` end to end through the command line (tests/cli.py): a small synthetic export (the analysis speed
benchmark's generator, through the real game/export.py) becomes report.json, report.html, figures and
tables; bad input ends with a clear message and exit status 2, never a traceback."""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from cli import exag

from experiments.analysis.figures import FIGURES
from experiments.analysis.write import TABLES, write_report
from experiments.benchmark.analysis_speed import write_synthetic_export

GAMES = 200          # 10 participants: 8 controlled (2 per arm), 2 at-will


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> Path:
    return write_synthetic_export(tmp_path_factory.mktemp("export"), GAMES, seed=1)


def strict_json(text: str):
    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


def test_analyze_writes_the_whole_report(export, tmp_path):
    out = tmp_path / "report"
    result = exag("analyze", "--data", export, "--out", out, "--all-studies")   # both studies, pooled
    assert result.returncode == 0, result.stderr
    assert "Table 1, overall" in result.stdout and "At-will" in result.stdout and str(out / "report.html") in result.stdout

    report = strict_json((out / "report.json").read_text(encoding="utf-8"))
    assert set(report["studies"]) == {"sim-controlled", "sim-at-will"}
    assert report["n"]["games"] == GAMES
    assert {r["mode"] for r in report["controlled"]["table1"]} >= {"overall", "attention", "relqa", "both"}

    for name in FIGURES:
        for fmt in ("png", "svg"):
            path = out / "figures" / f"{name}.{fmt}"
            assert path.stat().st_size > 1000, path
        assert (out / "figures" / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
        assert "<svg" in (out / "figures" / f"{name}.svg").read_text(encoding="utf-8")[:2000]

    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Table 1" in page and "Overall" in page and "RelQAs" in page
    assert page.count('src="data:image/png;base64,') == len(FIGURES)
    links = re.findall(r'(?:src|href)\s*=\s*["\']([^"\']*)', page)
    assert links and all(not link.startswith(("http", "//")) for link in links), links
    assert "<script" not in page and "@import" not in page and "url(" not in page
    for name in FIGURES:
        assert f'id="{name}"' in page
    assert "no benchmark results" in page.lower() and "exag bench vqa" in page       # where to get them

    for name in TABLES:
        with open(out / "tables" / f"{name}.csv", newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        assert rows and rows[0]["study"] == "all", name
    table1 = list(csv.DictReader(open(out / "tables" / "table1.csv", encoding="utf-8")))
    overall = next(r for r in table1 if r["study"] == "all" and r["mode"] == "overall")
    assert 0 <= float(overall["with_expl.win_rate"]) <= 1 and float(overall["with_expl.ci_low"]) <= \
        float(overall["with_expl.win_rate"]) <= float(overall["with_expl.ci_high"])


def test_one_study_with_exclusions_and_benchmarks(export, tmp_path):
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "vqa.json").write_text(json.dumps({"agent": "medium", "accuracy": 0.71, "n": 1000}))
    out = tmp_path / "report"
    result = exag("analyze", "--data", export, "--out", out, "--study", "sim-controlled", "--bench", bench,
                  "--exclude", "fast_games,straight_lined")
    assert result.returncode == 0, result.stderr
    report = strict_json((out / "report.json").read_text(encoding="utf-8"))
    assert list(report["studies"]) == ["sim-controlled"]
    assert report["exclusions"]["flags"] == ["fast_games", "straight_lined"]
    assert report["benchmarks"]["agents"]["medium"]["vqa"]["accuracy"] == 0.71
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "71.0%" in page and "Excluded: participants flagged fast_games, straight_lined" in page
    assert "no data yet" in (out / "figures" / "fig5_adoption.svg").read_text(encoding="utf-8")   # no at-will games
    # a second run into the same directory replaces the report and leaves nothing half-written beside it
    assert exag("analyze", "--data", export, "--out", out, "--study", "sim-at-will").returncode == 0
    assert list(strict_json((out / "report.json").read_text())["studies"]) == ["sim-at-will"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench", "report"]


@pytest.mark.parametrize("case", ["missing", "foreign", "unknown_study", "no_source", "bad_flag", "no_game_id"])
def test_bad_input_is_a_clear_message_and_exit_2(case, export, tmp_path):
    data = {"missing": tmp_path / "nowhere", "foreign": tmp_path / "foreign",
            "no_game_id": tmp_path / "odd"}.get(case, export)
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "notes.txt").write_text("not an export")
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "games.csv").write_text("id,winner\n1,yes\n")
    args = {"no_source": [], "unknown_study": ["--data", data, "--study", "no-such-study"],
            "bad_flag": ["--data", data, "--all-studies", "--exclude", "sleepy"]}.get(case, ["--data", data])
    result = exag("analyze", *args, "--out", tmp_path / "report")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and result.stderr.startswith("exag: error: ")
    expected = {"missing": "does not exist", "foreign": "has no games table", "unknown_study": "no-such-study",
                "no_source": "--data", "bad_flag": "sleepy", "no_game_id": "game_id"}[case]
    assert expected in result.stderr
    assert not (tmp_path / "report").exists()


@pytest.mark.parametrize("extra", [[], ["--study", "sim-controlled", "--all-studies"]])
def test_an_export_of_several_studies_needs_the_study_named(extra, export, tmp_path):
    """One report is one study's: without --study, data of several studies is refused in one line that lists
    them and names --study ID and --all-studies (which pools them, as before, for scripts)."""
    result = exag("analyze", "--data", export, *extra, "--out", tmp_path / "report")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.startswith("exag: error: ") and len(result.stderr.strip().splitlines()) == 1
    assert "--study" in result.stderr and "--all-studies" in result.stderr
    if not extra:
        assert "sim-at-will" in result.stderr and "sim-controlled" in result.stderr
    assert not (tmp_path / "report").exists()


def test_a_report_without_data_still_builds(tmp_path):
    """Every section missing: the figures say "no data yet", the tables say why, the page says what is missing."""
    report = {"n": {"games": 0}, "controlled": {"table1": [], "missing": "no finished games of a controlled study"},
              "at_will": {"missing": "no finished games of an at-will study"}, "notes": ["games.csv is empty"],
              "methods": "Nothing to say <yet> & nothing to test."}
    written = write_report(report, tmp_path / "r", progress=False)
    page = written["html"].read_text(encoding="utf-8")
    assert "no finished games of a controlled study" in page and "games.csv is empty" in page
    assert "Nothing to say &lt;yet&gt; &amp; nothing to test." in page
    assert "no data yet" in (written["figures"] / "fig7_win_by_helpfulness.svg").read_text(encoding="utf-8")
    rows = list(csv.DictReader(open(written["tables"] / "table1.csv", encoding="utf-8")))
    assert rows == [{"study": "all", "missing": "no finished games of a controlled study"}]
    strict_json(written["json"].read_text())


def test_every_figure_draws_when_a_share_is_100_percent(tmp_path):
    """A real bot run had every at-will game use explanations: the Wilson upper bound of a 100% share sits a
    hair below it in floating point, and Fig. 5 failed to draw ('yerr' must not contain negative values)."""
    from experiments.analysis.figures import DRAW, draw_figures

    half = {"n_games": 20, "share": 1.0, "ci": [0.8388748419471804, 0.9999999999999999]}   # as the bot run had them
    by_play = [{"play": k, "n_games": 8, "share": 1.0, "ci": [0.6755924351161198, 1.0], "win_rate": 0.125}
               for k in range(1, 6)]
    report = {"at_will": {"adoption": {"first_half": half, "second_half": half, "by_play": by_play}}}
    for draw in DRAW.values():
        draw(report)                       # draw_figures would hide a failure behind "could not be drawn"
    assert len(draw_figures(report, tmp_path)) == 12


def test_a_report_of_too_few_participants_says_so_at_the_top():
    """Issue 55: the report printed "p = 1.000 effect" for 7 people without saying N is too small."""
    from experiments.analysis.html import render_html
    from experiments.analysis.report import SMALL_N, small_n_warnings
    from experiments.analysis.write import format_summary

    warned = small_n_warnings({"pilot": {"n": {"participants": 7}}, "big": {"n": {"participants": SMALL_N}}})
    assert len(warned) == 1 and warned[0].startswith("study pilot: 7 participant(s) analysed") and "pilot" in warned[0]
    report = {"warnings": warned, "n": {}, "preregistration": {}}
    page = render_html(report, {})
    assert page.index("Too few participants") < page.index("<h2>Data</h2>")
    written = {"html": "r.html", "json": "r.json", "figures": "f", "tables": "t"}
    assert format_summary(report, written).splitlines()[1].startswith("WARNING, too few participants: study pilot")
