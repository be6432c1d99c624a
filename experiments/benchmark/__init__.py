"""Benchmarks that print and save measured figures."""
import json
from pathlib import Path


def write_report(path: Path | None, report: dict) -> None:
    """Saves a benchmark's report as indented JSON (nothing when no path was asked for)."""
    if path is None:
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2))
