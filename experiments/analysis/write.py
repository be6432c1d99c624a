"""Writes an analysis report to a directory: report.json (every number, strict JSON), tables/*.csv (the
report's tables flattened), figures/ (PNG and SVG) and report.html (one self-contained page).

    write_report(analyze(load_tables("export/")), "report/")

Everything is made in a temporary directory beside DIR and then renamed into place, so a crash leaves
the previous report (or none), never half of one. Only the report's own names in DIR are replaced.
"""
from __future__ import annotations

import csv
import json
import math
import os
import shutil
import tempfile
from pathlib import Path

from tqdm import tqdm

from .report import json_safe

OUTPUTS = ("figures", "tables", "report.json", "report.html")   # what a report directory holds (html last)
ALL = "all"                      # the `study` column of rows over all studies together


def write_json(report: dict, path: str | Path) -> Path:
    """report.json: strict JSON (NaN and infinities are null), UTF-8."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(json_safe(report), indent=2, allow_nan=False, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


# --- the report's tables as flat rows ---------------------------------------------------------------

def _flat(row, prefix: str = "") -> dict:
    """{"with_expl": {"win_rate": .6, "ci": [.5, .7]}} -> {"with_expl.win_rate": .6, "with_expl.ci_low": .5,
    "with_expl.ci_high": .7}; any [lo, hi] pair named *ci becomes two columns, other lists JSON text."""
    if not isinstance(row, dict):
        return {prefix or "value": row}
    flat = {}
    for key, value in row.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict):
            flat.update(_flat(value, name))
        elif str(key).endswith("ci") and isinstance(value, (list, tuple)) and len(value) == 2:
            flat[f"{name}_low"], flat[f"{name}_high"] = value
        elif isinstance(value, (list, tuple)):
            flat[name] = json.dumps(json_safe(value))
        else:
            flat[name] = value
    return flat


def _usable(section) -> bool:
    return isinstance(section, dict) and not section.get("missing")


def _scalars(section: dict, skip=()) -> dict:
    """The section's own numbers and words (tests, p-values), for every row of its points."""
    return _flat({k: v for k, v in section.items() if k not in skip and not isinstance(v, (dict, list))
                  or str(k).endswith("ci")})


def _points(by: dict, label: str, extra: dict | None = None) -> list[dict]:
    """{"overall": [point, ...], "attention": [...]} -> rows with a `label` column."""
    return [{label: key, **(extra or {}), **_flat(p)} for key, points in (by or {}).items()
            if isinstance(points, list) for p in points if isinstance(p, dict)]


def _table1(s: dict) -> list[dict]:
    controlled = s.get("controlled")
    return [_flat(r) for r in controlled.get("table1") or []] if _usable(controlled) else []


def _compared(section: dict, groups: tuple[str, ...], label: str) -> list[dict]:
    """One row per group, then one row comparing them (differences, odds ratios, p-values)."""
    if not _usable(section):
        return []
    rows = [{label: g, **_flat(section.get(g))} for g in groups if isinstance(section.get(g), dict)]
    return rows + [{label: " vs ".join(groups[:2]), **_scalars(section, skip=groups + ("by_play",))}]


def _explanations_used(s: dict) -> list[dict]:
    at_will = s.get("at_will")
    return _compared(at_will.get("explanations_used"), ("with", "without", "overall"), "group") \
        if _usable(at_will) else []


def _adoption_halves(s: dict) -> list[dict]:
    at_will = s.get("at_will")
    if not _usable(at_will) or not _usable(at_will.get("adoption")):
        return []
    adoption = at_will["adoption"]
    rows = _compared(adoption, ("first_half", "second_half"), "half")
    trend = adoption.get("trend")
    if isinstance(trend, dict):
        rows.append({"half": "trend per play", **_flat(trend)})
    return rows


def _adoption_by_play(s: dict) -> list[dict]:
    at_will = s.get("at_will")
    adoption = at_will.get("adoption") if _usable(at_will) else None
    return [_flat(p) for p in adoption.get("by_play") or []] if _usable(adoption) else []


def _by_mode_points(name: str):
    def rows(s: dict) -> list[dict]:
        section = s.get(name)
        return _points(section.get("points"), "mode") if _usable(section) else []
    return rows


def _rating_histograms(s: dict) -> list[dict]:
    section = s.get("rating_histograms")
    if not _usable(section):
        return []
    rows = _points(section.get("helpfulness"), "group", {"measure": "helpfulness"})
    rows += _points(section.get("helpfulness_without_explanations"), "group",
                    {"measure": "helpfulness without explanations"})
    for source, hists in (section.get("explanation_correctness") or {}).items():
        if _usable(hists):
            rows += _points(hists, "group", {"measure": f"explanation correctness ({source})"})
    for source, hist in (section.get("answer_correctness") or {}).items():
        if isinstance(hist, list):
            rows += _points({"overall": hist}, "group", {"measure": f"answer correctness ({source})"})
    return rows


def _by_correctness(s: dict) -> list[dict]:
    section = s.get("by_correctness")
    if not _usable(section):
        return []
    return [row for source in ("raters", "automatic") if _usable(section.get(source))
            for row in _points(section[source].get("points"), "explainer", {"source": source})]


def _answer_correctness(s: dict) -> list[dict]:
    section = s.get("answer_correctness")
    if not _usable(section):
        return []
    rows = []
    for source in ("automatic", "raters"):
        data = section.get(source)
        if _usable(data):
            tests = {f"test.{k}": v for k, v in _scalars(data).items()}
            rows += _points(data.get("points"), "group", {"source": source, **tests})
    return rows


def _correlations(s: dict) -> list[dict]:
    section = s.get("correlations")
    if not _usable(section):
        return []
    return [{"source": source, "explainer": name, **_flat(c)} for source in ("automatic", "raters")
            if _usable(section.get(source)) for name, c in section[source].items() if isinstance(c, dict)]


def _agreement(s: dict) -> list[dict]:
    section = s.get("agreement")
    if not _usable(section):
        return []
    rows = []
    raters = section.get("raters")
    if _usable(raters):
        rows += [{"between": "raters", "rating": what, "n_raters": raters.get("n_raters"), **_flat(raters[what])}
                 for what in ("explanation", "answer") if isinstance(raters.get(what), dict)]
    auto = section.get("automatic_vs_raters")
    if _usable(auto):
        rows += [{"between": "automatic and raters", "rating": what, **_flat(auto[what])}
                 for what in ("explanation", "answer") if isinstance(auto.get(what), dict)]
        rows += [{"between": "automatic and raters", "rating": f"explanation ({name})", **_flat(k)}
                 for name, k in (auto.get("by_explainer") or {}).items() if isinstance(k, dict)]
    return rows


def _n(s: dict) -> list[dict]:
    n = s.get("n") or {}
    keys = ("games", "participants", "rounds", "ratings", "items", "rater_ratings")
    rows = [{"arm": "all", **{k: n.get(k) for k in keys}}]
    return rows + [{"arm": arm, **{k: c.get(k) for k in keys}} for arm, c in (n.get("arms") or {}).items()]


# name -> the rows of one scope (the pooled report or one study's part of it)
TABLES = {
    "table1": _table1,
    "explanations_used": _explanations_used,
    "adoption_halves": _adoption_halves,
    "adoption_by_play": _adoption_by_play,
    "by_helpfulness": _by_mode_points("by_helpfulness"),
    "difficulty_by_rating": _by_mode_points("difficulty_by_rating"),
    "rating_histograms": _rating_histograms,
    "by_correctness": _by_correctness,
    "answer_correctness": _answer_correctness,
    "correlations": _correlations,
    "agreement": _agreement,
    "n": _n,
}


SECTION_OF = {"table1": "controlled", "explanations_used": "at_will", "adoption_halves": "at_will",
              "adoption_by_play": "at_will"}     # others: the section of the table's own name


def table_rows(report: dict, name: str) -> list[dict]:
    """One table of the report as flat rows: all analysed studies together (study "all"), then each study.
    A scope whose section is missing gets one row saying why (column `missing`)."""
    scopes = [(ALL, report)] + sorted((report.get("studies") or {}).items())
    rows = []
    for study, scope in scopes:
        if not isinstance(scope, dict):
            continue
        mine = TABLES[name](scope)
        section = scope.get(SECTION_OF.get(name, name))
        if not mine and isinstance(section, dict) and section.get("missing"):
            mine = [{"missing": section["missing"]}]
        rows += [{"study": study, **r} for r in mine]
    return rows


def write_tables(report: dict, directory: str | Path) -> list[Path]:
    """Each table as CSV (one file per table, even when empty: then a header and no rows)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name in TABLES:
        rows = table_rows(report, name)
        columns = list(dict.fromkeys(k for r in rows for k in r)) or ["study"]
        path = directory / f"{name}.csv"
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, columns)
            writer.writeheader()
            for r in rows:
                writer.writerow({k: _cell(r.get(k)) for k in columns})
        written.append(path)
    return written


def _cell(value):
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    if isinstance(value, str) and value.startswith(("=", "+", "-", "@", "\t", "\r")) and not _number(value):
        return "'" + value                               # spreadsheets run such cells as formulas (OWASP)
    return value


def _number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


# --- the whole report ------------------------------------------------------------------------------

def write_report(report: dict, out_dir: str | Path, progress: bool = True) -> dict[str, Path]:
    """Writes the report into out_dir; returns {"json", "html", "figures", "tables"} paths."""
    from .figures import draw_figures
    from .html import render_html

    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    try:
        with tqdm(total=4, desc="writing the report", unit="step", disable=not progress, leave=False) as bar:
            write_json(report, work / "report.json")
            bar.update()
            write_tables(report, work / "tables")
            bar.update()
            figures = draw_figures(report, work / "figures")
            bar.update()
            (work / "report.html").write_text(render_html(report, figures), encoding="utf-8")
            bar.update()
        _move_into_place(work, out_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"json": out_dir / "report.json", "html": out_dir / "report.html", "figures": out_dir / "figures",
            "tables": out_dir / "tables"}


def _move_into_place(work: Path, out_dir: Path) -> None:
    """A new directory is one rename; into an existing one each output is renamed over the old one
    (files atomically, folders by renaming the old away first), report.html last."""
    if not out_dir.exists():
        os.chmod(work, 0o755)                        # mkdtemp makes it private
        work.rename(out_dir)
        return
    if not out_dir.is_dir():
        raise FileExistsError(f"{out_dir} exists and is not a directory")
    old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
    try:
        for name in OUTPUTS:
            new, target = work / name, out_dir / name
            if new.is_dir() and target.exists():
                target.rename(old / name)
            new.replace(target)
    finally:
        shutil.rmtree(old, ignore_errors=True)
