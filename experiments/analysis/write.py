"""Writes an analysis report to a directory: report.json (every number, strict JSON), tables/*.csv (the
report's tables flattened), figures/ (PNG and SVG) and report.html (one self-contained page).

    written = write_report(analyze(load_tables("export/")), "report/")
    print(format_summary(report, written))          # what `exag analyze` prints

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

from .preregistered import describe
from .report import json_safe
from .stats import UNCALIBRATED_Z

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
    "with_expl.ci_high": .7}; any [lo, hi] pair named *ci or ci_* becomes two columns, other lists JSON text."""
    if not isinstance(row, dict):
        return {prefix or "value": row}
    flat = {}
    for key, value in row.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict):
            flat.update(_flat(value, name))
        elif _interval(key) and isinstance(value, (list, tuple)) and len(value) == 2:
            flat[f"{name}_low"], flat[f"{name}_high"] = value
        elif isinstance(value, (list, tuple)):
            flat[name] = json.dumps(json_safe(value))
        else:
            flat[name] = value
    return flat


def _interval(key) -> bool:
    """A [lo, hi] pair: "ci", "..._ci" and the named intervals "ci_wilson", "ci_bootstrap", "ci_t"."""
    return str(key).endswith("ci") or str(key).startswith("ci_")


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


def _per_kind(name: str, rows_of):
    """The rows of a section of Figs. 6-10; where the report keeps the study kinds apart (kinds.py:
    {"by_kind": {kind: section}}), each kind's rows with a `kind` column (a kind without data: why)."""
    def rows(s: dict) -> list[dict]:
        section = s.get(name)
        by_kind = section.get("by_kind") if isinstance(section, dict) else None
        if not isinstance(by_kind, dict):
            return rows_of(s)
        out = []
        for kind, part in by_kind.items():
            mine = rows_of({name: part})
            if not mine and isinstance(part, dict) and part.get("missing"):
                mine = [{"missing": part["missing"]}]
            out += [{"kind": kind, **r} for r in mine]
        return out
    return rows


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
    rows = []
    for source in ("raters", "automatic"):
        data = section.get(source)
        if not _usable(data):
            continue
        rows += _points(data.get("points"), "explainer", {"source": source})
        if isinstance(data.get("baseline"), dict):
            rows.append({"explainer": "baseline", "source": source, "rating": "games without explanations",
                         **_flat(data["baseline"]), "baseline_definition": data.get("baseline_definition")})
    return rows


def _difficulty_won_lost(s: dict) -> list[dict]:
    """Fig. 8's won vs lost games: a row per cell, per difference and for the interaction."""
    section = s.get("difficulty_by_rating")
    data = section.get("won_vs_lost") if isinstance(section, dict) else None
    if not isinstance(data, dict):
        return []
    if data.get("missing"):
        return [{"missing": data["missing"]}]
    rows = [{"row": "cell", "explanations": exposure, "outcome": outcome, **_flat(cell)}
            for exposure, cells in (data.get("cells") or {}).items() for outcome, cell in (cells or {}).items()]
    rows += [{"row": name, **_flat(d)} for name, d in (data.get("differences") or {}).items()]
    if isinstance(data.get("interaction"), dict):
        rows.append({"row": "interaction difficulty x explanations", **_flat(data["interaction"])})
    return rows


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


def _answer_correctness_low(s: dict) -> list[dict]:
    """Fig. 10's claim: games whose answers were mostly wrong, by group, their comparison and the interaction."""
    section = s.get("answer_correctness")
    if not _usable(section):
        return []
    rows = []
    for source in ("automatic", "raters"):
        low = (section.get(source) or {}).get("low_correctness") if _usable(section.get(source)) else None
        if not isinstance(low, dict):
            continue
        groups = ("explained_on_point", "without_explanations")
        rows += [{"source": source, "group": g, **_flat(low[g])} for g in groups if isinstance(low.get(g), dict)]
        rows.append({"source": source, "group": " vs ".join(groups),
                     **_scalars(low, skip=groups + ("interaction",))})
        if isinstance(low.get("interaction"), dict):
            rows.append({"source": source, "group": "interaction group x low correctness", **_flat(low["interaction"])})
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
    "by_helpfulness": _per_kind("by_helpfulness", _by_mode_points("by_helpfulness")),
    "difficulty_by_rating": _per_kind("difficulty_by_rating", _by_mode_points("difficulty_by_rating")),
    "difficulty_won_lost": _per_kind("difficulty_by_rating", _difficulty_won_lost),
    "rating_histograms": _per_kind("rating_histograms", _rating_histograms),
    "by_correctness": _per_kind("by_correctness", _by_correctness),
    "answer_correctness": _per_kind("answer_correctness", _answer_correctness),
    "answer_correctness_low": _per_kind("answer_correctness", _answer_correctness_low),
    "correlations": _correlations,
    "agreement": _agreement,
    "n": _n,
}


SECTION_OF = {"table1": "controlled", "explanations_used": "at_will", "adoption_halves": "at_will",
              "adoption_by_play": "at_will", "difficulty_won_lost": "difficulty_by_rating",
              "answer_correctness_low": "answer_correctness"}     # others: the section of the table's own name


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


# --- what `exag analyze` prints ----------------------------------------------------------------------

# Table 1's improvements, each under its own name (controlled.py's module doc); ASCII, for any terminal
PRINTED_IMPROVEMENTS = (
    ("paper's improvement", "with expl - overall-inc-none group baseline (the paper's 'Overall Improv')"),
    ("with - without", "this row's games with explanations minus its games without"),
    ("within participants", "the mean of each participant's own with - without; p (paired): the paired test "
                            "over participants (report.json names it)"))


def _printed_rate(cell: dict | None, key: str = "win_rate") -> str:
    if not cell or cell.get(key) is None:
        return "-"
    ci = cell.get("ci") or [None, None]
    interval = f" [{ci[0]:.0%}, {ci[1]:.0%}]" if None not in ci else ""
    return f"{cell[key]:.1%}{interval} (n={cell.get('n_games', 0)})"


def _printed_p(value) -> str:
    return "p -" if value is None else "p < 0.0001" if value < 1e-4 else f"p = {value:.4f}"


def _percentage_points(value, digits: int = 1) -> str:
    """A difference of rates in percentage points: '+5.5'."""
    return "-" if value is None else f"{100 * value:+.{digits}f}"


def _percentage_points_ci(ci) -> str:
    return f" [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]" if isinstance(ci, list) and None not in ci else ""


def _text_table(headers: list[str], rows: list[list[str]], indent: str = "  ") -> list[str]:
    """Plain-text columns: the first left-aligned, the others right-aligned."""
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    return [indent + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
            for r in [headers, *rows]]


def _table1_lines(controlled: dict) -> list[str]:
    """Table 1's win rates and its three improvements (percentage points), each in its own column."""
    rows = controlled.get("table1") or []
    if not rows:
        return [f"Table 1: {controlled.get('missing') or 'no controlled games'}"]

    def rate(cell) -> str:
        return "-" if not cell or cell.get("win_rate") is None else f"{cell['win_rate']:.1%}"

    def p(value) -> str:
        return "-" if value is None else "<0.0001" if value < 1e-4 else f"{value:.4f}"
    headers = ["mode", "with expl", "no expl", "group baseline", *(name for name, _ in PRINTED_IMPROVEMENTS),
               "effect", "p (effect)", "p (z-test*)", "p (clustered)", "p (paired)"]
    body = []
    for r in rows:
        paper, imp = r.get("improvement_paper") or {}, r.get("improvement") or {}
        within = r.get("improvement_within_participants") or {}
        body.append([str(r.get("mode")), rate(r.get("with_expl")), rate(r.get("no_expl")),
                     rate(r.get("group_baseline")), _percentage_points(paper.get("win_rate"), 2),
                     _percentage_points(imp.get("win_rate")), _percentage_points(within.get("win_rate")),
                     _percentage_points((r.get("effect") or {}).get("win_rate")), p((r.get("effect") or {}).get("p_value")),
                     p(r.get("p_value")), p(r.get("p_value_clustered")), p(within.get("p_value"))])
    lines = ["Table 1, win rates (improvements in percentage points):", *_text_table(headers, body)]
    lines.append("  effect: the effect of showing explanations (participant and block fixed effects, wild bootstrap): "
                 "the one p-value per row whose claim is an effect, offered when both orders were played; every "
                 "other p-value is an association (report.json's `tests` lists each with its claim)")
    lines += [f"  {name}: {meaning}" for name, meaning in PRINTED_IMPROVEMENTS]
    lines.append(f"  * {UNCALIBRATED_Z}")
    overall = next((r for r in rows if r.get("mode") == "overall"), None)
    if overall:
        imp, within = overall.get("improvement") or {}, overall.get("improvement_within_participants") or {}
        lines.append(
            f"Table 1, overall: win rate with explanations {_printed_rate(overall.get('with_expl'))}, without "
            f"{_printed_rate(overall.get('no_expl'))}, group baseline {_printed_rate(overall.get('group_baseline'))}; "
            f"with - without {_percentage_points(imp.get('win_rate'))} points"
            f"{_percentage_points_ci(imp.get('win_rate_ci'))}, {_printed_p(overall.get('p_value'))} (z-test*), "
            f"{_printed_p(overall.get('p_value_clustered'))} (clustered); within participants "
            f"{_percentage_points(within.get('win_rate'))} points{_percentage_points_ci(within.get('win_rate_ci'))}, "
            f"{_printed_p(within.get('p_value'))} (paired test, {within.get('n_participants', 0)} participants)")
    return lines + _order_lines(controlled.get("order") or {})


def _order_lines(order: dict) -> list[str]:
    """Order as a factor (controlled.by_order), or the plain statement that one order confounds it."""
    def odds(result: dict | None) -> str:
        ratio = (result or {}).get("odds_ratio")
        return "-" if ratio is None else f"odds ratio {ratio:.2f}, {_printed_p(result.get('p_value'))}"
    if order.get("confounded"):
        return [f"Order: {order.get('statement')}"]
    if not order.get("with_vs_without"):
        return []
    counts = order.get("participants_by_order") or {}
    return [f"Order as a factor ({counts.get('abab', 0)} participants started without explanations, "
            f"{counts.get('baba', 0)} with them): with vs without explanations, order held fixed: "
            f"{odds(order['with_vs_without'])}; order effect (starting with explanations): "
            f"{odds(order.get('order_effect'))}; interaction: {odds(order.get('interaction'))}"]


def _preregistration_lines(report: dict) -> list[str]:
    """What each exclusion rule removed, and, on pre-registered data, the hash, the primary test (and its
    sensitivity analysis) and the label of everything else: exploratory."""
    excluded = report.get("exclusions") or {}
    removed = (report.get("quality") or {}).get("removed_by_flag") or {}
    lines = []
    if excluded.get("flags"):
        lines.append("Excluded: " + "; ".join(f"{flag} removed {v.get('participants', 0)} participant(s) and "
                                              f"{v.get('games', 0)} game(s)" for flag, v in removed.items())
                     + f"; in all {excluded.get('participants', 0)} participants, {excluded.get('games', 0)} games")
    held = report.get("preregistration") or {}
    if not held.get("registered"):
        return lines
    lines.append(held.get("statement", ""))
    sensitivity = ((report.get("sensitivity") or {}).get("studies")) or {}
    for study, plan in (held.get("studies") or {}).items():
        label = "primary, pre-registered" if held.get("analysis") == "preregistered" else "primary, exploratory here"
        lines.append(f"{study} ({label}) {plan.get('primary')}: {describe(plan.get('result'))}; "
                     f"{plan.get('participants', 0)} of {plan.get('planned_n')} planned participants")
        lines += [f"{study} deviation from its pre-registration: {d}" for d in plan.get("deviations") or []]
        if study in sensitivity:
            again = sensitivity[study]             # {"missing"} where the study has no finished games
            lines.append(f"{study} sensitivity, no exclusions: {describe(again.get('result', again))}")
    lines.append("EXPLORATORY from here on: every analysis below, and every other in the report, is not the "
                 "pre-registered primary test")
    return lines


def _flow_lines(flow: dict) -> list[str]:
    """One line per study: where everyone who joined went (flow.py), the attrition test and the bounds for the
    games never played."""
    lines = []
    for study, f in (flow.get("studies") or {}).items():
        t, test = f.get("total") or {}, f.get("attrition_test") or {}
        line = (f"Flow, {study}: {t.get('joined', 0)} joined, {t.get('not_consented', 0)} did not consent, "
                f"{t.get('screened_out', 0)} screened out, {t.get('dropped', 0)} dropped, {t.get('finished', 0)} "
                f"finished ({t.get('excluded', 0)} excluded, {t.get('analysed', 0)} analysed); "
                f"{t.get('refilled_slots', 0)} refilled slots")
        if t.get("arm_chosen_by_link"):
            line += f", {t['arm_chosen_by_link']} arms chosen by link (not randomized)"
        line += f"; attrition by arm {_printed_p(test.get('p_value'))}"
        split = f.get("attrition_explanations") or {}
        if split.get("table"):
            line += (f", explanation arms vs the others ({split['table']['explanations']['dropped']} vs "
                     f"{split['table']['none']['dropped']} left) {_printed_p(split.get('p_value'))}")
        for kind, b in (f.get("bounds") or {}).items():
            if isinstance(b, dict) and b.get("lower") is not None:
                values = [b["lower"], b["upper"], b.get("observed")]
                if kind == "controlled":           # a difference of win rates, in percentage points
                    low, high, seen = (_percentage_points(v) for v in values)
                    line += f"; bounds for unplayed games: with - without [{low}, {high}] points, observed {seen}"
                else:
                    low, high, seen = ("-" if v is None else f"{v:.1%}" for v in values)
                    line += f"; bounds for unplayed games: win rate [{low}, {high}], observed {seen}"
        lines.append(line + ("" if f.get("adds_up", True) else " (THE COLUMNS DO NOT ADD UP: please report this)"))
    return lines


def format_summary(report: dict, written: dict) -> str:
    """What `exag analyze` prints: the counts, Table 1 (its improvements each under its own name, the
    within-participant paired test among them), at-will with/without explanations, what is missing and
    where the report went (`written`: write_report's paths)."""
    n = report.get("n") or {}
    lines = [f"{n.get('games', 0)} games of {n.get('participants', 0)} participants in "
             f"{', '.join(report.get('studies_analysed') or []) or 'no studies'}"]
    lines += [f"WARNING, too few participants: {w}." for w in report.get("warnings") or []]
    lines += _preregistration_lines(report)
    lines += _flow_lines(report.get("flow") or {})
    lines += _table1_lines(report.get("controlled") or {})
    used = (report.get("at_will") or {}).get("explanations_used") or {}
    if used.get("with") or used.get("without"):
        lines.append(f"At-will: win rate using explanations {_printed_rate(used.get('with'))}, never using them "
                     f"{_printed_rate(used.get('without'))}; {_printed_p(used.get('p_value'))} (z-test*), "
                     f"{_printed_p(used.get('p_value_clustered'))} (clustered): an association (players chose when "
                     "to buy)")
        offer = (report.get("at_will") or {}).get("offer") or {}
        if offer.get("itt"):
            lines.append(f"At-will, randomized offer: offered - not offered {_percentage_points(offer['itt'].get('win_rate'))}"
                         f" points, {_printed_p(offer['itt'].get('p_value'))} (effect, intention to treat); effect of "
                         f"use, the offer as instrument {_percentage_points((offer.get('iv') or {}).get('win_rate'))} points")
    else:
        lines.append(f"At-will: {(report.get('at_will') or {}).get('missing') or 'no at-will games'}")
    notes = report.get("notes") or []
    if notes:
        lines.append(f"{len(notes)} note(s) on what is missing: see the report's 'What is missing'")
    lines.append(f"report: {written['html']} (numbers: {written['json']}, figures: {written['figures']}, "
                 f"tables: {written['tables']})")
    return "\n".join(lines)


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
