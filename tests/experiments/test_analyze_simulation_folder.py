"""`exag analyze --data DIR` reads the folder `exag simulate --out DIR` writes (DIR/export/ and DIR/summary.json,
experiments/simulate/simulate.py), built here with the same export function simulate uses; a folder with no export in it or
in its export/ is a clear error that names both places."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli import exag
from test_analysis import at_will_log

from experiments.analysis import AnalysisError, analyze, load_tables
from experiments.analysis.data import SIMULATION_EXPORT
from experiments.simulate.simulate import EXPORT_DIR, SUMMARY
from game.export import write_export



def simulated_out(directory: Path, fmt: str = "csv") -> Path:
    """The layout of `exag simulate --out DIR`: 10 at-will games, 6 of them (4 won) using explanations."""
    log = at_will_log([(6, 4, True), (4, 1, False)])
    write_export(log.events, directory / EXPORT_DIR, fmt)
    (directory / SUMMARY).write_text(json.dumps({"games": 10, "export": str(directory / EXPORT_DIR)}))
    return directory


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_the_folder_exag_simulate_writes_is_read_through_its_export(tmp_path, fmt):
    assert SIMULATION_EXPORT == EXPORT_DIR
    out = simulated_out(tmp_path / "sim", fmt)
    tables = load_tables(out)
    assert tables.source == str(out / EXPORT_DIR) and len(tables.games) == 10
    used = analyze(tables)["at_will"]["explanations_used"]
    assert (used["with"]["n_games"], used["without"]["n_games"]) == (6, 4)
    assert used["with"]["win_rate"] == pytest.approx(4 / 6)
    assert len(load_tables(out / EXPORT_DIR).games) == 10          # the export itself, as before


def test_exag_analyze_takes_the_simulate_folder_on_the_command_line(tmp_path):
    out = simulated_out(tmp_path / "sim")
    result = exag("analyze", "--data", out, "--out", tmp_path / "report")
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads((tmp_path / "report" / "report.json").read_text(encoding="utf-8"))
    assert report["source"] == str(out / EXPORT_DIR) and report["n"]["games"] == 10


def test_a_folder_with_no_export_in_it_or_its_export_dir_is_a_clear_error(tmp_path):
    out = tmp_path / "sim"
    (out / EXPORT_DIR).mkdir(parents=True)                   # a simulation that wrote nothing yet
    (out / SUMMARY).write_text("{}")
    with pytest.raises(AnalysisError) as error:
        load_tables(out)
    message = str(error.value)
    assert f"{out} has no games table" in message and f"nor has {out / EXPORT_DIR}" in message
    assert "exag export --out DIR" in message and "exag simulate --out DIR" in message
