"""The report as one self-contained HTML page a researcher can send to a co-author: Table 1, the
at-will results, Figures 5-10 with captions, correlations, agreement, the benchmarks beside the study's
own measures, the methods paragraph and what is missing, then each study on its own.

    page = render_html(report, draw_figures(report, "report/figures"))

Nothing is fetched from the network: figures are embedded as PNG data URIs, the style is inline and
there is no script. Every text from the report (study ids, arms, notes) is escaped.
"""
from __future__ import annotations

import base64
import contextvars
import datetime
import re
from html import escape
from pathlib import Path

from .claims import ASSOCIATION, EFFECT
from .figures import FIGURES, caption, mode_name, scopes
from .preregistered import describe
from .stats import UNCALIBRATED_Z, join_notes

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1180px;padding:0 1em;color:#222}
h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
h3{margin-top:1.4em}table{border-collapse:collapse;margin:.6em 0 1em;font-size:13px}
td,th{border:1px solid #d5d5d5;padding:3px 7px;text-align:left;vertical-align:top}th{background:#f3f3f3}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}.muted{color:#777}.small{font-size:12px}
table.table1{font-size:12px}table.table1 td,table.table1 th{padding:2px 5px}
table.table1 td.num{white-space:normal;min-width:6.5em}table.table1 th{font-weight:600;font-size:11.5px}
p.warning{background:#fff4e0;border:1px solid #e0a040;padding:.5em .8em}ol.footnotes{margin:-.5em 0 1em;padding-left:1.6em}sup.fn{color:#8a5300;font-size:10px;margin-left:1px}
figure{margin:1.2em 0 2em}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:13px;color:#333;margin-top:.4em;max-width:1000px}
.notes{background:#fff8e5;border:1px solid #f0d68a;padding:.6em 1em;border-radius:4px}
.notes li{margin:.15em 0}.methods{background:#f6f8fa;border:1px solid #e1e4e8;padding:.6em 1em;border-radius:4px}
code{background:#f2f2f2;padding:0 3px;border-radius:3px}details{margin:.5em 0}summary{cursor:pointer;font-weight:600}
.tag{font-size:12px;font-weight:normal;padding:1px 6px;border-radius:3px;margin-left:.5em;vertical-align:middle}
.tag.exploratory{background:#fff0d9;color:#8a5300}.tag.primary{background:#e3f4e3;color:#1d5e1d}
.prereg{background:#f3f9f3;border:1px solid #b9dcb9;padding:.6em 1em;border-radius:4px}
.claim{font-size:11px;padding:0 4px;border-radius:3px;white-space:nowrap}.claim.effect{background:#e3f4e3;color:#1d5e1d}
.claim.association{background:#eee;color:#555}
.tests code{word-break:break-all}.tests td{max-width:22em}
"""
DASH = "–"
PAPER_IMPROVEMENT = "paper's improvement: with expl − overall-inc-none group baseline"
TABLE1_HEADERS = ["mode", "with expl.", "no expl.", "group baseline", PAPER_IMPROVEMENT, "with − without expl.",
                  "within participants: mean of own with − without", "effect of showing explanations [95% CI], p",
                  "p (z-test*)", "p (clustered)", "participants"]


# --- number formatting -------------------------------------------------------------------------------

def _num(x, digits: int = 2) -> str:
    return DASH if not isinstance(x, (int, float)) or isinstance(x, bool) else f"{x:.{digits}f}"


def _pct(x, digits: int = 1) -> str:
    return DASH if not isinstance(x, (int, float)) else f"{100 * x:.{digits}f}%"


def _signed(x, digits: int = 2, scale: float = 1.0) -> str:
    return DASH if not isinstance(x, (int, float)) else f"{scale * x:+.{digits}f}"


def _ci(ci, percent: bool = True, digits: int = 1) -> str:
    if not isinstance(ci, (list, tuple)) or len(ci) != 2 or None in ci:
        return ""
    if percent:
        return f" [{100 * ci[0]:.{digits}f}, {100 * ci[1]:.{digits}f}]"
    return f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def _p_text(p) -> str:
    if not isinstance(p, (int, float)):
        return DASH
    return "< 0.0001" if p < 1e-4 else f"{p:.4f}" if p < 0.01 else f"{p:.3f}"


def _claim(claim: str) -> str:
    """The claim a p-value makes (claims.py), beside it: a randomized contrast's effect, or an association."""
    return f' <span class="claim {_e(claim)}">{_e(claim)}</span>'


def _p(p, claim: str = ASSOCIATION) -> str:
    """'0.012 association': a p-value with what it claims (every p-value the page prints has its claim beside it;
    only the tests claims.py lists as "effect" pass claim="effect")."""
    text = _p_text(p)
    return text if text == DASH else text + _claim(claim)


def _p_is(p, claim: str = ASSOCIATION) -> str:
    """'p = 0.012 association' or 'p < 0.0001 effect'."""
    text = _p_text(p)
    said = f"p {text}" if text.startswith("<") else f"p = {text}"
    return said if text == DASH else said + _claim(claim)


def _e(text) -> str:
    return escape("" if text is None else str(text), quote=True)


def _missing(section) -> str | None:
    if section is None:
        return "not in the report"
    if isinstance(section, dict) and section.get("missing"):
        return str(section["missing"])
    return None


# While a table is built with footnotes (_Footnotes), _note gives a numbered marker and the note goes under the
# table: a note inside a cell widened its column (Table 1 was wider than a 1,280 px screen).
_FOOTNOTES: contextvars.ContextVar["_Footnotes | None"] = contextvars.ContextVar("footnotes", default=None)


class _Footnotes:
    """Notes gathered while a table is built: each distinct sentence once, numbered in order of first use."""

    def __init__(self):
        self.sentences: list[str] = []

    def mark(self, text: str) -> str:
        numbers = []
        for sentence in dict.fromkeys(part for part in text.split("; ") if part):
            if sentence not in self.sentences:
                self.sentences.append(sentence)
            numbers.append(self.sentences.index(sentence) + 1)
        return f'<sup class="fn">{",".join(map(str, numbers))}</sup>'

    def __enter__(self) -> "_Footnotes":
        self._token = _FOOTNOTES.set(self)
        return self

    def __exit__(self, *exc) -> None:
        _FOOTNOTES.reset(self._token)

    def html(self) -> str:
        if not self.sentences:
            return ""
        return ('<ol class="footnotes small muted">' + "".join(f"<li>{_e(s)}</li>" for s in self.sentences)
                + "</ol>")


def _note(*notes) -> str:
    """A cell's note on a line of its own, each sentence once (stats.join_notes), or '' when there is none; inside
    `with _Footnotes()`, a numbered marker instead, the sentence going under the table."""
    text = join_notes(*notes)
    footnotes = _FOOTNOTES.get()
    if text and footnotes is not None:
        return footnotes.mark(text)
    return f'<br><span class="muted small">{_e(text)}</span>' if text else ""


def _two_cis(score_ci, win_rate_ci) -> str:
    """'[-0.52, 1.10] / [-3.1, 5.2]': the score's and the win rate's intervals under their 'score / win rate'
    line; a dash for one not computed, and '' when neither was (never a '/' with nothing beside it)."""
    score, win = _ci(score_ci, False, 2).strip(), _ci(win_rate_ci).strip()
    return f"{score or DASH} / {win or DASH}" if score or win else ""


def _rate(cell, key: str = "win_rate", with_score: bool = False) -> str:
    """'6.23 / 66.7% [61.2, 71.8] (n=210)' for a report cell."""
    if not isinstance(cell, dict) or not cell.get("n_games") and not cell.get("n"):
        return '<span class="muted">no games</span>'
    score = f"{_num(cell.get('score'))} / " if with_score else ""
    n = cell.get("n_games", cell.get("n"))
    return (f"{score}{_pct(cell.get(key))}{'<br>' if with_score else ''}<span class=\"muted small\">"
            f"{_ci(cell.get('ci'))} (n={_e(n)})</span>")


def _table(headers: list[str], rows: list[list[str]], numeric_from: int = 1, numeric_to: int | None = None,
           css: str = "") -> str:
    """Headers are escaped here; cells are HTML already (built from escaped parts). Columns numeric_from to
    numeric_to (exclusive; default: the last) are numbers, aligned right."""
    numeric_to = len(headers) if numeric_to is None else numeric_to
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td class=\"num\">{c}</td>" if numeric_from <= i < numeric_to else f"<td>{c}</td>"
                                    for i, c in enumerate(r)) + "</tr>" for r in rows)
    opening = f'<table class="{_e(css)}">' if css else "<table>"
    return f"{opening}<tr>{head}</tr>{body}</table>"


def _unbroken(cell: str) -> str:
    """A Table 1 cell whose lines may wrap between its parts but never inside an interval, a "+0.2 pts" or a
    "p = 0.03" (its numeric cells wrap, so that the table fits a 1,280 px screen)."""
    cell = re.sub(r"\[[^\]<]*\]", lambda m: m.group().replace(" ", "&nbsp;"), cell)
    cell = re.sub(r"(?<=\d) pts\b", "&nbsp;pts", cell)
    return re.sub(r"\bp (=|<) ", r"p&nbsp;\1&nbsp;", cell).replace("OR ", "OR&nbsp;")


def _why(reason: str) -> str:
    return f'<p class="muted">No data yet: {_e(reason)}</p>'


# --- sections ------------------------------------------------------------------------------------------

def table1(controlled, paper: dict | None = None) -> str:
    reason = _missing(controlled)
    rows = (controlled or {}).get("table1") or [] if not reason else []
    if not rows:
        return _why(reason or (controlled or {}).get("missing") or "no controlled games")
    body = []
    paired_test = next((w["test"] for w in (r.get("improvement_within_participants") for r in rows)
                        if isinstance(w, dict) and w.get("test")), "its method is not in the report")
    with _Footnotes() as footnotes:                  # notes numbered under the table, not inside its cells
        for r in rows:
            body.append([f"{_e(mode_name(str(r.get('mode'))))}{_note(r.get('note'))}",
                         _rate(r.get("with_expl"), with_score=True), _rate(r.get("no_expl"), with_score=True),
                         _rate(r.get("group_baseline"), with_score=True), _paper_improvement(r.get("improvement_paper")),
                         _with_minus_without(r.get("improvement")),
                         _within_participants(r.get("improvement_within_participants")), _effect(r.get("effect")),
                         _p(r.get("p_value")), _p(r.get("p_value_clustered")), _e(r.get("n_participants", DASH))])
    out = ("<p>Score / win rate [95% CI] (n games). Three improvements, each in points of score / percentage "
           "points of win rate: <b>the paper's improvement</b> (its “Overall Improv” column) is the row's "
           "with-explanations figure minus the group baseline of the “overall inc. no-expl. group” row, one "
           "baseline for every row, so it mixes showing explanations with practice; <b>with − without expl.</b> "
           "is the row's games with explanations minus its games without (odd blocks), with its participant-"
           "clustered interval and odds ratio; <b>within participants</b> is the mean of each participant's own with "
           f"− without difference, with the paired test over participants ({_e(paired_test)}). p (clustered): a "
           "participant-clustered test of with vs without: the wild cluster bootstrap, and for the overall-inc.-no-expl. "
           "row, whose “with” games come from some participants only, the randomization test that re-draws "
           "which participants are in the explanation arms (report.json's test_clustered names each). "
           f"* {_e(UNCALIBRATED_Z)}. <b>Effect of showing explanations</b>: the one test per row whose claim is an "
           "effect (the registrable primary): the win on showing explanations with a fixed effect per participant "
           "and per block, wild cluster bootstrap over participants; offered only when both orders were played "
           "(counterbalanced), since under one order showing explanations and practice coincide. Every other "
           "p-value on this page is labelled an association: it compares games pooled, or games the player chose.</p>"
           + _table(TABLE1_HEADERS, [[_unbroken(c) for c in row] for row in body], css="table1") + footnotes.html())
    extra = []
    group = (controlled or {}).get("control_group") or {}
    if isinstance(group, dict) and not group.get("missing") and group.get("even_blocks"):
        extra.append(f"Control group ({_e(', '.join(group.get('arms') or []))}, never shown explanations): the "
                     "blocks that would show explanations in the participant's order (even blocks for abab) "
                     f"{_rate(group.get('even_blocks'))} vs the others {_rate(group.get('odd_blocks'))}, "
                     f"{_p_is(group.get('p_value'))} (clustered {_p(group.get('p_value_clustered'))}); the practice "
                     "effect the explanation arms' with − without difference has to beat.")
    net = (controlled or {}).get("net_of_practice") or {}
    if isinstance(net, dict) and (net.get("odds_ratio") is not None or net.get("p_value") is not None):
        extra.append(f"Net of practice (<code>{_e(net.get('model'))}</code>, {_e(net.get('method'))}): odds ratio "
                     f"{_num(net.get('odds_ratio'))}{_ci(net.get('odds_ratio_ci'), False, 2)}; own with-block − other-block "
                     f"win rate, explanation arms − the others {_signed(net.get('difference'), 1, 100)} pts"
                     f"{_ci(net.get('difference_ci'))}, {_p_is(net.get('p_value'), EFFECT)} "
                     f"({_e(net.get('n_clusters'))} participants, {_e(net.get('n'))} games)"
                     f'<br><span class="muted small">{_e(net.get("test"))}</span>')
    elif isinstance(net, dict) and net.get("missing"):
        extra.append(f"Net of practice: {_e(net['missing'])}")
    overall = next((r.get("effect") for r in (controlled or {}).get("table1") or [] if r.get("mode") == "overall"), None)
    if isinstance(overall, dict) and overall.get("win_rate") is not None:
        beside = [f"{name} {_signed((overall.get(key) or {}).get('win_rate'), 1, 100)} pts"
                  f"{_ci((overall.get(key) or {}).get('win_rate_ci'))}"
                  for key, name in (("completers", "completers only (the earlier fit)"),
                                    ("all_holders", "every holder of a re-dealt slot"))
                  if isinstance(overall.get(key), dict)]
        if beside:
            extra.append("Beside the overall effect (sensitivity, no test): " + "; ".join(beside) + ".")
    total = (controlled or {}).get("total_effect") or {}
    if isinstance(total, dict) and (total.get("win_rate") is not None or total.get("note")):
        extra.append(f"Total effect of an arm with explanations (all blocks, explanation arms − the others; what "
                     f"learning carries into later blocks is in it): {_signed(total.get('win_rate'), 1, 100)} pts"
                     f"{_ci(total.get('win_rate_ci'))}, {_p_is(total.get('p_value'), EFFECT)}{_note(total.get('note'))}"
                     f'<br><span class="muted small">{_e(total.get("test"))}</span>')
    order = _order((controlled or {}).get("order"))
    if order:
        extra.append(order)
    out += "".join(f"<p>{x}</p>" for x in extra)
    paper_rows = ((paper or {}).get("controlled") or {}).get("table1") or []
    if paper_rows:
        p_body = [[_e(mode_name(r["mode"])), *(f"{_num(r[k]['score'])} / {_pct(r[k]['win_rate'], 2)}"
                                               for k in ("with_expl", "no_expl", "group_baseline",
                                                         "improvement_paper")),
                   _p(r.get("p_value"))] for r in paper_rows]
        p_info = (paper or {}).get("controlled") or {}
        out += (f"<details><summary>The paper's Table 1 (Ray et al. 2019: {_e(p_info.get('n_participants'))} workers, "
                f"{_e(p_info.get('n_games'))} games)</summary>"
                + _table(["mode", "with expl.", "no expl.", "group baseline", PAPER_IMPROVEMENT, "p"], p_body)
                + "</details>")
    return out


def _effect(effect) -> str:
    """A Table 1 row's effect test (controlled.crossover): the estimate in points, its interval and p-value, or why
    it is not offered."""
    if not isinstance(effect, dict):
        return DASH
    if effect.get("p_value") is None and effect.get("win_rate") is None:
        if effect.get("note") and _FOOTNOTES.get() is not None:     # in Table 1: the reason under the table
            return f'<span class="muted small">not offered</span>{_note(effect["note"])}'
        return f'<span class="muted small">{_e(effect.get("note") or "not computed")}</span>'
    return (f"{_signed(effect.get('win_rate'), 1, 100)} pts{_ci(effect.get('win_rate_ci'))}<br>"
            f"{_p_is(effect.get('p_value'), EFFECT)}{_note(effect.get('note'))}")


def _gee(result: dict) -> str:
    if not isinstance(result, dict) or result.get("odds_ratio") is None:
        return f"not estimated ({_e((result or {}).get('note') or 'no data')})"
    return (f"odds ratio {_num(result['odds_ratio'])}{_ci(result.get('odds_ratio_ci'), False, 2)}, "
            f"{_p_is(result.get('p_value'))}")


def _order(order) -> str:
    """Order as a factor (controlled.by_order): the order effect and with vs without net of it, or the
    plain statement that an all-abab (or all-baba) study confounds them."""
    if not isinstance(order, dict) or order.get("missing"):
        return ""
    counts = order.get("participants_by_order") or {}
    who = (f"{_e(counts.get('abab', 0))} participants started without explanations (abab), "
           f"{_e(counts.get('baba', 0))} with them (baba)")
    if order.get("confounded"):
        return f"<b>Order and explanations are confounded.</b> {who}: {_e(order.get('statement'))}."
    difference = order.get("win_rate_difference") or {}
    return (f"Order as a factor ({who}; <code>{_e(order.get('model'))}</code>): with vs without explanations, order "
            f"held fixed: {_gee(order.get('with_vs_without'))} (with − without win rate "
            f"{_signed(difference.get('abab'), 1, 100)} pts starting without, "
            f"{_signed(difference.get('baba'), 1, 100)} pts starting with, mean {_signed(difference.get('mean_of_orders'), 1, 100)} pts); order effect "
            f"(starting with explanations): {_gee(order.get('order_effect'))}; interaction: "
            f"{_gee(order.get('interaction'))}." + _first_period(order.get("first_period"))
            + _carryover_check(order.get("carryover_check")))


def _carryover_check(check) -> str:
    """The crossover estimate minus the first-period one (controlled.carryover_check): an association."""
    if not isinstance(check, dict) or (check.get("difference") is None and not check.get("note")):
        return ""
    return (f" Crossover minus block-1 estimate (does a block leave something the carryover term misses?): "
            f"{_signed(check.get('difference'), 1, 100)} pts, {_p_is(check.get('p_value'))}{_note(check.get('note'))}.")


def _first_period(first) -> str:
    """The carryover check (controlled.first_period): block 1, starting with vs without explanations."""
    if not isinstance(first, dict):
        return ""
    return (f" Carryover check, block 1 only (starting with − without explanations, between randomized groups): "
            f"{_signed(first.get('win_rate'), 1, 100)} pts{_ci(first.get('win_rate_ci'))}, "
            f"{_p_is(first.get('p_value'), EFFECT)}{_note(first.get('note'))}.")


def balance_section(design) -> str:
    """One line per study: arms by arrival quarter and the chi-square test (design.py)."""
    balance = (design or {}).get("balance") if isinstance(design, dict) else None
    if not isinstance(balance, dict) or balance.get("missing"):
        return ""
    lines = []
    for study, b in balance.items():
        counts = "; ".join(f"{_e(arm)} {'/'.join(str(c) for c in row)}" for arm, row in (b.get("counts") or {}).items())
        note = f" ({_e(b['note'])})" if b.get("note") else ""
        lines.append(f"Balance of arms over arrival time, study {_e(study)}: participants per arrival quarter "
                     f"{counts}; chi-square {_p_is(b.get('p_value'))}{note}.")
    return "".join(f'<p class="small">{x}</p>' for x in lines)


def _flow_section(flow) -> str:
    """Everyone who joined accounted for (flow.py): per study, and pooled where there are several, the flow by
    arm x order, the attrition test, the bounds for the games never played, the flags and the sample by arm."""
    if not isinstance(flow, dict) or not (flow.get("studies") or flow.get("notes")):
        return ""

    def small(html: str) -> str:
        return f'<br><span class="muted small">{html}</span>' if html else ""

    def by(counts: dict | None) -> str:
        return ", ".join(f"{_e(k)} {_e(v)}" for k, v in (counts or {}).items())

    def row(r: dict) -> list[str]:
        after = "; ".join(f"after block {_e(b)}: {_e(n)}" for b, n in (r.get("dropped_after_block") or {}).items())
        before, unknown = r.get("dropped_before_any_game"), r.get("dropped_block_unknown")
        flagged = r.get("dropped_excluded")
        where = [f"before any game: {_e(before)}" if before else "", after,
                 f"block unknown: {_e(unknown)}" if unknown else "",
                 f"excluded by the rules: {_e(flagged)}" if flagged else ""]
        linked = r.get("arm_chosen_by_link") or 0
        declined = r.get("declined")
        arm = f"<b>{_e(r.get('arm'))}</b>" if r.get("arm") == "all" else _e(r.get("arm"))
        return [arm, _e(r.get("order") or DASH), _e(r.get("joined")),
                f"{_e(r.get('not_consented'))}{small(f'declined: {_e(declined)}' if declined else '')}",
                f"{_e(r.get('screened_out'))}{small(by(r.get('screened_out_by')))}",
                f"{_e(r.get('dropped'))}{small('; '.join(w for w in where if w))}", _e(r.get("finished")),
                f"{_e(r.get('excluded'))}{small(by(r.get('excluded_by')))}", _e(r.get("analysed")),
                _e(r.get("finished_without_analysed_games")), _e(r.get("dropped_analysed")),
                _e(r.get("refilled_slots")), f"<b>{linked}</b> (not randomized)" if linked else "0"]

    def bounds(b: dict) -> str:
        if not isinstance(b, dict) or b.get("missing"):
            return f"Bounds for the games never played: {_e((b or {}).get('missing') or 'not computed')}."
        lines = []
        for kind, x in b.items():
            def value(v, kind=kind) -> str:          # controlled: a difference of win rates; at-will: a win rate
                return f"{_signed(v, 1, 100)} pts" if kind == "controlled" else _pct(v)
            lines.append(f"Bounds for the games never played ({_e(kind.replace('_', '-'))}: {_e(x.get('measure'))}; "
                         f"{_e(x.get('n_randomized'))} randomized participants, {_e(x.get('n_with_missing_games'))} "
                         f"of them with {_e(x.get('missing_games'))} games never played): lower bound "
                         f"{value(x.get('lower'))}, upper bound {value(x.get('upper'))}; observed "
                         f"{value(x.get('observed'))} ({_e(x.get('n_observed'))} participants){_note(x.get('note'))}"
                         f'<br><span class="muted small">{_e(x.get("definition"))}</span>')
        return "<br>".join(lines)

    def attrition(t: dict) -> str:
        t = t or {}
        table = "; ".join(f"{_e(arm)} {_e(c.get('finished'))} of {_e(c.get('finished', 0) + c.get('not_finished', 0))}"
                          for arm, c in (t.get("table") or {}).items())
        result = _p_is(t.get("p_value")) if t.get("p_value") is not None else "no test"
        return (f"Differential attrition: finished by arm {table or DASH}; {result}{_note(t.get('note'))}"
                f'<br><span class="muted small">{_e(t.get("test"))}</span>')

    def where_it_bites(f: dict) -> str:
        test, by_block = f.get("attrition_explanations") or {}, f.get("attrition_by_last_block") or {}
        table = "; ".join(f"{_e(g)} {_e(c.get('dropped'))} of {_e(c.get('dropped', 0) + c.get('finished', 0))} left"
                          for g, c in (test.get("table") or {}).items())
        result = _p_is(test.get("p_value")) if test.get("p_value") is not None else "no test"
        text = (f"Leaving, explanation arms vs the arms without: {table or DASH}; {result}{_note(test.get('note'))}"
                f'<br><span class="muted small">{_e(test.get("test"))}</span>')
        counts = by_block.get("counts") or {}
        if any(any(c.values()) for c in counts.values()):
            kinds = list(next(iter(counts.values())))
            text += _table(["group", *(k.replace("_", " ") for k in kinds)],
                           [[_e(g), *(_e(c.get(k, 0)) for k in kinds)] for g, c in counts.items()])
            text += f'<span class="muted small">{_e(by_block.get("definition"))}</span>'
        return text

    def flags(f: dict) -> str:
        arms = (f or {}).get("arms") or {}
        applied = set((f or {}).get("applied") or [])
        names = [n for n in next(iter(arms.values()), {}).get("flags", {})
                 if n in applied or any(a["flags"].get(n) for a in arms.values())]
        if not names:
            return '<p class="muted small">No quality flag raised.</p>'
        headers = ["arm", "joined", *(f"{n} (excluded by)" if n in applied else n for n in names)]
        return _table(headers, [[_e(arm), _e(a.get("participants")), *(_e(a["flags"].get(n, 0)) for n in names)]
                                for arm, a in arms.items()])

    def sample(smp: dict) -> str:
        items, n = (smp or {}).get("items") or {}, (smp or {}).get("n") or {}
        if not items:
            return ""
        rows = []
        for key, item in items.items():
            test = item.get("test") or {}
            p = (_p_is(test.get("p_value")) if test.get("p_value") is not None else DASH) + _note(test.get("note"))
            for i, category in enumerate(item.get("categories") or []):
                cells = [f"{_e(item['counts'][arm].get(category, 0))} ({_pct(item['shares'][arm].get(category), 0)})"
                         for arm in n]
                rows.append([_e(key) if i == 0 else "", _e(category), *cells, p if i == 0 else ""])
        return (f"<details><summary>Sample by arm (demographics of the analysed participants)</summary>"
                f'<p class="muted small">{_e(smp.get("definition"))}</p>'
                + _table(["item", "answer", *(f"{arm} (n={c})" for arm, c in n.items()), "chi-square (descriptive)"],
                         rows, 2) + "</details>")

    headers = ["arm", "order", "joined", "not consented", "screened out", "dropped", "finished", "excluded",
               "analysed", "finished, no analysed game", "dropped, games analysed", "refilled slots",
               "arm chosen by link"]
    scopes = [(f"Study {study}", f) for study, f in (flow.get("studies") or {}).items()]
    if flow.get("pooled"):
        scopes.append(("All studies, pooled", flow["pooled"]))
    out = ['<h3 id="flow">Participant flow: everyone who joined</h3>',
           f'<p class="small">{_e(flow.get("definition"))}</p>']
    for title, f in scopes:
        if not isinstance(f, dict):
            continue
        adds = "" if f.get("adds_up", True) else ' <b>(the columns do not add up: please report this)</b>'
        out += [f"<h4>{_e(title)}{adds}</h4>",
                _table(headers, [row(r) for r in [*(f.get("rows") or []), f.get("total") or {}] if r], 2),
                f'<p class="small">{attrition(f.get("attrition_test"))}</p>',
                f'<div class="small">{where_it_bites(f)}</div>',
                f'<p class="small">{bounds(f.get("bounds"))}</p>',
                '<p class="small">Quality flags by arm (every participant who joined):</p>'
                + flags(f.get("flags_by_arm")),
                sample(f.get("sample"))]
        if f.get("notes"):
            out.append(notes_section(f["notes"]))
    if flow.get("notes"):
        out.append(notes_section(flow["notes"]))
    return "\n".join(out)


def _paper_improvement(imp) -> str:
    """The paper's "Overall Improv" of a row, to two decimals like the paper's column."""
    imp = imp or {}
    return f"{_signed(imp.get('score'))} / {_signed(imp.get('win_rate'), 2, 100)} pts{_note(imp.get('note'))}"


def _with_minus_without(imp) -> str:
    imp = imp or {}
    out = f"{_signed(imp.get('score'))} / {_signed(imp.get('win_rate'), 1, 100)} pts"
    cis = _two_cis(imp.get("score_ci"), imp.get("win_rate_ci"))
    if cis:
        out += f'<br><span class="muted small">{cis}</span>'
    if isinstance(imp.get("odds_ratio"), (int, float)):
        odds = f'OR {_num(imp["odds_ratio"])}{_ci(imp.get("odds_ratio_ci"), False, 2)}'
        out += f'<br><span class="muted small">{odds}</span>'
    return out


def _within_participants(within) -> str:
    """Mean of the participants' own with - without differences, its CIs and the paired test over participants."""
    within = within or {}
    if not within.get("n_participants"):
        return '<span class="muted small">no participant played both ways</span>'
    cis = _two_cis(within.get("score_ci"), within.get("win_rate_ci"))
    return (f"{_signed(within.get('score'))} / {_signed(within.get('win_rate'), 1, 100)} pts<br>"
            f"<span class=\"muted small\">{cis + '<br>' if cis else ''}paired test {_p_is(within.get('p_value'))} "
            f"(n={_e(within.get('n_participants'))})</span>{_note(within.get('note'))}")


def at_will_section(at_will) -> str:
    reason = _missing(at_will)
    if reason:
        return _why(reason)
    used = at_will.get("explanations_used") or {}
    out = ""
    if _missing(used):
        out += _why(_missing(used))
    else:
        rows = [[_e(label), _rate(used.get(key)), _num((used.get(key) or {}).get("score"))]
                for key, label in (("with", "used explanations at least once"), ("without", "never used them"),
                                   ("overall", "all at-will games"))]
        out += ("<h3>Explanations used</h3>" + _table(["games", "win rate [95% CI] (n)", "mean score"], rows) +
                f"<p>Difference {_pct(used.get('difference'))}{_ci(used.get('difference_ci'))}, odds ratio "
                f"{_num(used.get('odds_ratio'))}{_ci(used.get('odds_ratio_ci'), False, 2)}; {_p_is(used.get('p_value'))} "
                f"(the paper's z-test, games as independent: not calibrated), {_p(used.get('p_value_clustered'))} (participant-clustered; "
                f"{_e(used.get('n_participants', DASH))} participants). <b>{_e(used.get('statement'))}.</b></p>")
    out += _within_at_will(at_will.get("within_participants")) + _offer(at_will.get("offer"))
    adoption = at_will.get("adoption") or {}
    if _missing(adoption):
        out += _why(_missing(adoption))
    else:
        rows = [[_e(label), _rate(adoption.get(key), key="share")]
                for key, label in (("first_half", "first half of plays"), ("second_half", "second half of plays"))]
        trend = adoption.get("trend") or {}
        out += ("<h3>Adoption</h3>" + _table(["plays", "share of games using explanations [95% CI] (n)"], rows) +
                f"<p>{_p_is(adoption.get('p_value'))} (z-test), {_p(adoption.get('p_value_clustered'))} "
                f"(participant-clustered). Trend: odds ratio per play {_num(trend.get('odds_ratio_per_play'), 3)}"
                f"{_ci(trend.get('odds_ratio_ci'), False, 3)}, {_p_is(trend.get('p_value'))}. "
                f"<span class=\"muted small\">{_e(adoption.get('ordering'))}</span></p>")
    return out


def _within_at_will(within) -> str:
    """The use-vs-no-use comparison within participants (at_will.within_participants): an association too."""
    if not isinstance(within, dict):
        return ""
    buying, paired = within.get("buying") or {}, within.get("paired") or {}
    return (f"<h3>Within participants</h3><p>Conditional logit, adjusted for {_e(', '.join(within.get('adjusted_for') or []) or 'nothing')}: "
            f"odds ratio of a win using explanations {_num(within.get('odds_ratio'))}"
            f"{_ci(within.get('odds_ratio_ci'), False, 2)}, {_p_is(within.get('p_value'))}{_note(within.get('note'))}; "
            f"paired over the {_e(buying.get('both', 0))} participants who played both ways: "
            f"{_signed(paired.get('mean'), 1, 100)} pts{_ci(paired.get('ci'))}, {_p_is(paired.get('p_value'))}. "
            f"Of {_e(buying.get('participants', 0))} participants, {_e(buying.get('never_bought', 0))} never bought "
            f"explanations and {_e(buying.get('always_bought', 0))} always did. <b>{_e(within.get('statement'))}.</b>"
            f'<br><span class="muted small">{_e(within.get("method"))}</span></p>')


def _offer(offer) -> str:
    """The randomized offer (at_will.offer): intention to treat and the instrumented effect of use, both effects."""
    if not isinstance(offer, dict):
        return ""
    if offer.get("missing"):
        return f"<h3>Randomized offer</h3>{_why(offer['missing'])}"
    itt, iv, uptake = offer.get("itt") or {}, offer.get("iv") or {}, offer.get("uptake") or {}
    rows = [[_e(label), _rate(offer.get(key))] for key, label in (("offered", "explanations offered"),
                                                                  ("not_offered", "not offered"))]
    return ("<h3>Randomized offer</h3>" + _table(["games", "win rate [95% CI] (n)"], rows)
            + f"<p>Use of explanations: {_pct(uptake.get('share_used_offered'))} of offered games, "
              f"{_pct(uptake.get('share_used_not_offered'))} of the others. Intention to treat (offered − not "
              f"offered, mean over {_e(offer.get('n_participants'))} participants): {_signed(itt.get('win_rate'), 1, 100)} pts"
              f"{_ci(itt.get('win_rate_ci'))}, {_p_is(itt.get('p_value'), EFFECT)}{_note(itt.get('note'))}. Effect of "
              f"using explanations, the offer as instrument: {_signed(iv.get('win_rate'), 1, 100)} pts"
              f"{_ci(iv.get('win_rate_ci'))}, {_p_is(iv.get('p_value'), EFFECT)}{_note(iv.get('note'))}."
              f'<br><span class="muted small">{_e(itt.get("test"))}; {_e(iv.get("test"))}</span></p>')


def tests_section(tests) -> str:
    """Every test the report prints, with what it claims (claims.py; report.json's `tests`)."""
    if not isinstance(tests, list) or not tests:
        return ""
    rows = [[f"<code>{_e(t.get('name'))}</code>" + (' <span class="tag primary">pre-registered primary</span>'
                                                  if t.get("role") == "primary" else ""),
             _num(t.get("estimate"), 3) + (f' <span class="muted small">({_e(t.get("estimate_of"))})</span>'
                                           if t.get("estimate_of") else ""),
             _p(t.get("p_value"), t.get("claim") or ASSOCIATION)
             + (f'<br><span class="small">adjusted {_num(t.get("p_adjusted"), 3)}</span>'
                if t.get("p_adjusted") is not None else "")
             + f'<br><span class="muted small">{_e(t.get("correction") or "not corrected")}</span>', _e(t.get("unit")),
             _e(t.get("estimand") or DASH) + ("<br>" + "".join(f'<span class="muted small">assumes: {_e(a)}</span><br>'
                                                             for a in t.get("assumptions") or [])
                                               if t.get("assumptions") else ""),
             _e(", ".join(t.get("calibrated_under") or []) or "not calibrated by simulation")]
            for t in tests]
    effects = sum(t.get("claim") == EFFECT for t in tests)
    return (f"<details><summary>Every test on this page and what it claims ({len(tests)} p-values, {effects} of "
            "them effects)</summary><p class=\"small\">An <b>effect</b> is a contrast the design randomized, tested "
            "so that it keeps its 5% level on simulated crowds with practice, counterbalanced order, skill-linked "
            "dropout and uneven effects (docs/results.md, “Null calibration under real crowds”); an "
            "<b>association</b> is anything else: games pooled, games the player chose to buy explanations in, "
            "ratings given after seeing the explanation. A significant association is not evidence that "
            "explanations caused anything.</p>"
            + '<div class="tests">' + _table(["test", "estimate", "p", "unit", "estimand (whose effect) and "
                                              "assumptions", "calibrated under (null scenarios)"],
                                             rows, 1, 3) + "</div></details>")


def _corr(c: dict) -> list[str]:
    return [_e(c.get("n", DASH)), f"{_num(c.get('pearson'))}{_ci(c.get('pearson_ci'), False, 2)}", _p(c.get("pearson_p")),
            f"{_num(c.get('spearman'))}{_ci(c.get('spearman_ci'), False, 2)}", _p(c.get("spearman_p"))]


def correlations_section(correlations) -> str:
    reason = _missing(correlations)
    if reason:
        return _why(reason)
    rows = []
    for source in ("automatic", "raters"):
        data = correlations.get(source)
        why = _missing(data)
        if why:
            rows.append([_e(source), f'<span class="muted">{_e(why)}</span>', "", "", "", "", ""])
            continue
        for name, c in data.items():
            if isinstance(c, dict):
                rows.append([_e(source), _e(mode_name(name)), *_corr(c)])
    paper = correlations.get("paper") or {}
    reported = ", ".join(f"{mode_name(k)} {v}" for k, v in paper.items())
    return (f"<p>{_e(correlations.get('measure'))}. The paper reports {_e(reported)}.</p>"
            + _table(["grades", "explainer", "n", "Pearson r [95% CI]", "p", "Spearman ρ [95% CI]", "p"], rows, 2))


def agreement_section(agreement) -> str:
    reason = _missing(agreement)
    if reason:
        return _why(reason)
    out = ""
    raters = agreement.get("raters")
    if _missing(raters):
        out += f"<p>Raters among themselves: {_e(_missing(raters))}</p>"
    else:
        rows = [[_e(what), _num((raters.get(what) or {}).get("krippendorff_alpha"), 3),
                 _num((raters.get(what) or {}).get("fleiss_kappa"), 3), _e((raters.get(what) or {}).get("n_items", DASH)),
                 _e((raters.get(what) or {}).get("n_ratings", DASH))] for what in ("explanation", "answer")]
        out += (f"<h3>Raters among themselves ({_e(raters.get('n_raters', DASH))} raters)</h3>" +
                _table(["rating", "Krippendorff's α (ordinal)", "Fleiss' κ", "items", "ratings"], rows))
    auto = agreement.get("automatic_vs_raters")
    if _missing(auto):
        out += f"<p>Automatic grades vs raters: {_e(_missing(auto))}</p>"
    else:
        kappas = [("explanation", auto.get("explanation")), ("answer", auto.get("answer"))] + \
                 [(f"explanation, {mode_name(k)}", v) for k, v in (auto.get("by_explainer") or {}).items()]
        rows = [[_e(name), f"{_num(k.get('weighted_kappa'), 3)}{_ci(k.get('ci'), False, 2)}", _p(k.get("p_value")),
                 _pct(k.get("exact_agreement")), _e(k.get("n_items", DASH))] for name, k in kappas if isinstance(k, dict)]
        out += ("<h3>Automatic grades vs the raters' consensus</h3>" +
                _table(["rating", "weighted κ (linear) [95% CI]", "p", "exact agreement", "items"], rows))
    return out


def _latency(lat) -> str:
    if not isinstance(lat, dict) or lat.get("p50_ms") is None:
        return DASH
    return f"{_num(lat.get('p50_ms'), 0)} / {_num(lat.get('p95_ms'), 0)} ms"


def benchmarks_section(bench) -> str:
    """The offline benchmarks of the agent and explainers beside the study's own measures of them."""
    if not isinstance(bench, dict):
        return _why("not in the report")
    out = ""
    if bench.get("missing"):
        out += (f"<p><b>No benchmark scores in this report.</b> {_e(bench['missing'])}. For example: "
                "<code>exag bench vqa --agent AGENT --json bench/vqa.json</code>, <code>exag bench nle --agent AGENT "
                "--json bench/nle.json</code>, <code>exag bench explainers --agent AGENT --json bench/explainers.json"
                "</code>, <code>exag bench latency --agent AGENT --json bench/latency.json</code>, or the whole card "
                "<code>exag bench card --agent AGENT --out bench/</code>, then "
                "<code>exag analyze ... --bench bench/</code>.</p>")
    study = bench.get("study") or {}
    agent = study.get("agent") or {}
    agents = bench.get("agents") or {}
    rows = [["this study (from the logs)", _rate(agent.get("answer_accuracy"), key="share"),
             _latency(agent.get("ask_to_answer_ms")) + ' <span class="muted small">ask-to-answer</span>', DASH]]
    for name, a in agents.items():
        vqa = a.get("vqa") or {}
        lat = a.get("latency_ms") or {}
        rounds = a.get("rounds_ms") or {}
        card = a.get("card") or {}
        accuracy = f"{_pct(vqa.get('accuracy'))} <span class=\"muted small\">(n={_e(vqa.get('n', DASH))})</span>" \
            if vqa else f"{_num(card.get('accuracy'), 1)}% <span class=\"muted small\">(card, n={_e(card.get('n', DASH))})" \
            "</span>" if card else DASH
        rows.append([f"benchmark: agent {_e(name)}", accuracy,
                     "; ".join(f"{_e(k)} {_latency(v)}" for k, v in lat.items()) or DASH,
                     "; ".join(f"{_e(k)} {_latency(v)}" for k, v in rounds.items()) or DASH])
    out += ("<h3>The agent</h3>" + _table(["source", "answers right [95% CI]", "latency p50 / p95", "rounds p50 / p95"],
                                          rows))
    by = bench.get("by_explainer") or {}
    if by:
        rows = []
        for name, both in by.items():
            s = (both or {}).get("study") or {}
            b = (both or {}).get("bench") or {}
            bench_text = []
            for agent_name, x in b.items():
                parts = []
                if x.get("latency_ms"):
                    parts.append(f"latency {_latency(x['latency_ms'])}")
                nle = x.get("nle") or {}
                if nle:
                    parts.append(", ".join(f"{_e(k)} {_num(v, 3)}" for k, v in nle.items() if isinstance(v, (int, float))))
                card = x.get("card") or {}
                if card:
                    parts.append(", ".join(f"{_e(k)} {_num(v, 1)}" for k, v in card.items()))
                bench_text.append(f"{_e(agent_name)}: {'; '.join(parts) or DASH}")
            effect = s.get("effect") or {}
            effect_text = (f"{_num(100 * effect['win_rate'], 1)} points "
                           f"<span class=\"muted small\">(p = {_num(effect.get('p_value_clustered'), 3)} clustered, "
                           f"n={_e(effect.get('n_games', DASH))})</span>") if effect.get("win_rate") is not None else DASH
            rows.append([_e(mode_name(name)), _e(s.get("n_items", DASH)),
                         _rate(s.get("on_point_automatic"), key="share") if s else DASH,
                         _rate(s.get("on_point_raters"), key="share") if s else DASH,
                         _rate(s.get("win_rate")) if s else DASH, effect_text, "<br>".join(bench_text) or DASH])
        out += ("<h3>The explainers</h3><p>Study: the secret image's explanations, the share graded on-point "
                "(Exactly or Mostly) automatically and by the raters, the win rate of their games, and the effect of "
                "the arm showing it alone (Table 1: win rate with minus without explanations); benchmark: the "
                "offline scores of the same explainer (a benchmark card's scores are percentages).</p>" +
                _table(["explainer", "items", "on-point (automatic)", "on-point (raters)", "win rate",
                        "effect on players", "benchmarks"], rows))
    skipped = bench.get("skipped") or []
    if skipped:
        out += "<p class=\"muted small\">Skipped: " + "; ".join(f"{_e(s.get('file'))} ({_e(s.get('reason'))})"
                                                               for s in skipped) + "</p>"
    return out


def counts_section(report: dict) -> str:
    n = report.get("n") or {}
    rows = []
    for study, c in (n.get("studies") or {}).items():
        arms = ", ".join(f"{_e(a)} {_e(v.get('games'))}" for a, v in (c.get("arms") or {}).items())
        rows.append([_e(study), _e(c.get("kind") or DASH), _e(c.get("games")), _e(c.get("participants")),
                     _e(c.get("rounds")), _e(c.get("ratings")), _e(c.get("rater_ratings")), arms or DASH])
    rows.append(["<b>all</b>", "", _e(n.get("games", 0)), _e(n.get("participants", 0)), _e(n.get("rounds", 0)),
                 _e(n.get("ratings", 0)), _e(n.get("rater_ratings", 0)), ""])
    return _table(["study", "kind", "games", "participants", "rounds", "ratings", "rater ratings", "games per arm"],
                  rows, 2, 7)


def ungraded_section(ungraded) -> str:
    """The rounds the automatic grades leave out, by study and arm (correctness.ungraded_rounds)."""
    if not isinstance(ungraded, dict) or _missing(ungraded):
        return f'<p class="muted">Ungraded rounds: {_e((ungraded or {}).get("missing", "not computed"))}</p>'

    def row(study: str, arm: str, c: dict) -> list[str]:
        return [study, arm, _e(c.get("rounds")), _e(c.get("graded")),
                f"{_e(c.get('ungraded'))} ({_pct(c.get('share_ungraded'))})",
                f"{_e(c.get('not_parsed'))} ({_pct(c.get('share_not_parsed'))})", _e(c.get("ill_posed")),
                _e(c.get("no_ground_truth"))]
    rows = []
    for study, of_study in (ungraded.get("studies") or {}).items():
        rows += [row(_e(study), _e(arm), c) for arm, c in (of_study.get("arms") or {}).items()]
        if len(of_study.get("arms") or {}) > 1:
            rows.append(row(_e(study), "<i>all arms</i>", of_study.get("overall") or {}))
    if len(ungraded.get("studies") or {}) > 1:
        rows.append(row("<b>all</b>", "", ungraded.get("overall") or {}))
    return ('<h3 id="ungraded-rounds">Rounds without an automatic grade</h3>'
            + _table(["study", "arm", "rounds", "graded", "ungraded", "question not read by the parser", "ill-posed",
                      "imported pool"], rows, 2)
            + f'<p class="muted small">{_e(ungraded.get("definition"))}.</p>')


def figures_section(report: dict, figures: list[Path]) -> str:
    pngs = {Path(p).stem: Path(p) for p in figures if Path(p).suffix == ".png"}
    out = ""
    for name in FIGURES:
        text = caption(name, report)
        path = pngs.get(name)
        if path is None or not path.exists():
            out += f"<figure><p class=\"muted\">({_e(name)} was not drawn)</p><figcaption>{_e(text)}</figcaption></figure>"
            out += figure_numbers(name, report)
            continue
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        out += (f'<figure id="{_e(name)}"><img alt="{_e(text)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{_e(text)} <span class=\"muted\">(figures/{_e(name)}.png, .svg)</span></figcaption></figure>")
        out += figure_numbers(name, report)
    return out


# --- numbers beside Figs. 7-10 -------------------------------------------------------------------------

def figure_numbers(name: str, report: dict) -> str:
    """What a figure's panels only hint at, in numbers: each point's interval and Holm-corrected test against
    its baseline (Figs. 7, 9), the difficulty of won vs lost games (Fig. 8) and the paper's claim about games
    whose answers were mostly wrong (Fig. 10); one block per study kind where the report keeps them apart."""
    make = FIGURE_NUMBERS.get(name)
    if make is None:
        return ""
    parts = []
    for kind, section in scopes(report, FIGURE_SECTIONS[name]):
        body = make(section) if isinstance(section, dict) else ""
        if body:
            parts.append((f"<h4>{_e(kind.capitalize())} studies</h4>" if kind else "") + body)
    return "".join(parts)


def _pct_rate(cell) -> str:
    """'66.7% [55.1, 76.5] (n=120, 12 participants)' for a point or baseline with its drawn interval."""
    if not isinstance(cell, dict) or cell.get("win_rate") is None:
        return '<span class="muted">none</span>'
    n = cell.get("n", cell.get("n_games"))
    who = f", {_e(cell['n_participants'])} participants" if cell.get("n_participants") is not None else ""
    return f"{_pct(cell['win_rate'])}<span class=\"muted small\">{_ci(cell.get('ci'))} (n={_e(n)}{who})</span>"


def _points_table(points: list[dict], baseline, label: str) -> str:
    rows = [[_e(p.get("rating")), _pct_rate(p), _ci(p.get("ci_wilson")).strip() or DASH,
             _p(p.get("p_value_vs_baseline_holm"))] for p in points if isinstance(p, dict)]
    if isinstance(baseline, dict):
        rows.append([f"<i>{_e(label)}</i>", _pct_rate(baseline), _ci(baseline.get("ci_wilson")).strip() or DASH, ""])
    return _table(["rating", "win rate [interval drawn] (n)", "Wilson CI (rows as independent)",
                   "p vs baseline (clustered, Holm)"], rows, 1)


def _trend(trend, per_game=None) -> str:
    """A figure's trend test, and the same with one row per game (stats.game_level_trend) when there is one."""
    if not isinstance(trend, dict) or trend.get("odds_ratio") is None:
        why = trend.get("note") if isinstance(trend, dict) else None
        return f"Trend: no clustered test{f' ({_e(why)})' if why else ''}."
    out = (f"Trend: odds ratio per step {_num(trend['odds_ratio'])}{_ci(trend.get('odds_ratio_ci'), False, 2)}, "
           f"{_p_is(trend.get('p_value'))} ({_e(trend.get('n_clusters'))} participants)")
    if isinstance(per_game, dict) and per_game.get("odds_ratio") is not None:
        out += (f"; one row per game: {_num(per_game['odds_ratio'])}{_ci(per_game.get('odds_ratio_ci'), False, 2)}, "
                f"{_p_is(per_game.get('p_value'))} ({_e(per_game.get('n_games'))} games)")
    return out + "."


def _fig7_numbers(section: dict) -> str:
    if _missing(section):
        return ""
    out = ""
    for mode, points in (section.get("points") or {}).items():
        out += (f"<p><b>{_e(mode_name(mode))}</b>. {_trend((section.get('trend') or {}).get(mode), (section.get('trend_per_game') or {}).get(mode))}</p>"
                + _points_table(points, (section.get("baseline") or {}).get(mode), "baseline: games without explanations"))
    return (f"<details><summary>Fig. 7 in numbers: each point's intervals and test</summary><p class=\"small\">"
            f"Interval drawn: {_e(section.get('interval'))}. Test against the baseline: "
            f"{_e(section.get('test_vs_baseline'))}.</p>{out}</details>")


def _fig8_numbers(section: dict) -> str:
    data = section.get("won_vs_lost")
    if not isinstance(data, dict):
        return ""
    if _missing(data):
        return "<h3>Set difficulty of won vs lost games</h3>" + _why(_missing(data))
    cells, differences = data.get("cells") or {}, data.get("differences") or {}

    def mean(cell) -> str:
        cell = cell or {}
        return (f"{_num(cell.get('mean_difficulty'), 3)}<span class=\"muted small\">{_ci(cell.get('ci'), False, 3)} "
                f"(n={_e(cell.get('n_games', 0))})</span>")

    def diff(d) -> str:
        d = d or {}
        return (f"{_signed(d.get('difference'), 3)}<span class=\"muted small\">{_ci(d.get('ci'), False, 3)}</span>, "
                f"{_p_is(d.get('p_value'))}" if d.get("difference") is not None else DASH)
    rows = [[_e(label), mean((cells.get(exposure) or {}).get("won")), mean((cells.get(exposure) or {}).get("lost")),
             diff(differences.get(f"won_minus_lost_{exposure}"))]
            for exposure, label in (("without_explanations", "without explanations"),
                                    ("with_explanations", "with explanations"))]
    rows.append(["<i>with − without</i>", diff(differences.get("with_minus_without_won")),
                 diff(differences.get("with_minus_without_lost")), ""])
    interaction = data.get("interaction") or {}
    return ("<h3>Set difficulty of won vs lost games</h3><p>The paper's difficulty analysis: mean set difficulty "
            f"({_e(data.get('difficulty'))}) of won and lost games, without and with explanations. Intervals: "
            f"{_e(data.get('interval'))}; differences: {_e(data.get('test_differences'))}.</p>"
            + _table(["games", "won", "lost", "won − lost (clustered)"], rows)
            + f"<p>Does difficulty decide the game less with explanations? {_e(data.get('test_interaction'))}: "
              f"odds ratio {_num(interaction.get('odds_ratio'))}{_ci(interaction.get('odds_ratio_ci'), False, 2)}, "
              f"{_p_is(interaction.get('p_value'))}"
            + (f" <span class=\"muted small\">({_e(interaction['note'])})</span>" if interaction.get("note") else "")
            + ".</p>")


def _fig9_numbers(section: dict) -> str:
    if _missing(section):
        return ""
    out = ""
    for source in ("raters", "automatic"):
        data = section.get(source)
        if _missing(data):
            continue
        out += (f"<p><b>{_e(source)}</b>, overall. {_trend(data.get('trend'), data.get('trend_per_game'))} Baseline: "
                f"{_e(data.get('baseline_definition'))}.</p>"
                + _points_table((data.get("points") or {}).get("overall") or [], data.get("baseline"),
                                "adjusted baseline: games without explanations"))
    if not out:
        return ""
    return (f"<details><summary>Fig. 9 in numbers: the overall points against the adjusted baseline</summary>"
            f"<p class=\"small\">Interval drawn: {_e(section.get('interval'))}. Test against the baseline: "
            f"{_e(section.get('test_vs_baseline'))}.</p>{out}</details>")


def _fig10_numbers(section: dict) -> str:
    if _missing(section):
        return ""
    rows = []
    for source in ("automatic", "raters"):
        data = section.get(source)
        low = (data or {}).get("low_correctness") if not _missing(data) else None
        if not isinstance(low, dict):
            continue
        interaction = low.get("interaction") or {}
        rows.append([_e(f"'on point' by {source}"), _pct_rate(low.get("explained_on_point")),
                     _pct_rate(low.get("without_explanations")),
                     f"{_signed(low.get('difference'), 1, 100)} pts{_ci(low.get('difference_ci'))}",
                     f"{_num(low.get('odds_ratio'))}{_ci(low.get('odds_ratio_ci'), False, 2)}",
                     _p(low.get("p_value_clustered")),
                     f"{_num(interaction.get('odds_ratio'))}{_ci(interaction.get('odds_ratio_ci'), False, 2)}, "
                     f"{_p_is(interaction.get('p_value'))}"])
    if not rows:
        return ""
    threshold = next((section[s]["low_correctness"].get("definition") for s in ("automatic", "raters")
                      if isinstance((section.get(s) or {}).get("low_correctness"), dict)), "")
    subgroup = _e(threshold[:1].upper() + threshold[1:]) if threshold else "Answers mostly wrong"
    return ("<h3>Fig. 10's claim: games whose answers were mostly wrong (exploratory)</h3>"
            f"<p>{subgroup}: games with at least one explanation rated above "
            "Indifferent vs games without explanations, compared with a participant-clustered test, and the "
            f"interaction group x low correctness over all games. <b>{_e(section.get('post_hoc'))}.</b></p>"
            + _table(["grouping", "explained on point", "without explanations", "difference", "odds ratio",
                      "p (clustered)", "interaction OR, p"], rows))


FIGURE_SECTIONS = {"fig7_win_by_helpfulness": "by_helpfulness", "fig8_difficulty_by_rating": "difficulty_by_rating",
                   "fig9_win_by_correctness": "by_correctness", "fig10_answer_correctness": "answer_correctness"}
FIGURE_NUMBERS = {"fig7_win_by_helpfulness": _fig7_numbers, "fig8_difficulty_by_rating": _fig8_numbers,
                  "fig9_win_by_correctness": _fig9_numbers, "fig10_answer_correctness": _fig10_numbers}


def notes_section(notes) -> str:
    notes = [n for n in notes or [] if n]
    if not notes:
        return "<p class=\"muted\">Nothing missing.</p>"
    return '<div class="notes"><ul>' + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul></div>"


def study_section(study_id: str, study: dict) -> str:
    kind = study.get("kind")
    n = study.get("n") or {}
    body = counts_section({"n": {**n, "studies": {study_id: {"kind": kind, **n}}}})
    if kind == "controlled" or not _missing(study.get("controlled")):
        body += "<h3>Table 1</h3>" + table1(study.get("controlled"))
    if kind == "at-will" or not _missing(study.get("at_will")):
        body += "<h3>At-will</h3>" + at_will_section(study.get("at_will"))
    if study.get("notes"):
        body += "<h3>Missing</h3>" + notes_section(study.get("notes"))
    return (f'<details id="study-{_e(study_id)}"><summary>Study {_e(study_id)} ({_e(kind or "unknown kind")})</summary>'
            f"{body}</details>")


# --- the pre-registration -------------------------------------------------------------------------------

def _label(report: dict, section: str) -> str:
    """The tag beside a section's heading on pre-registered data: where the primary test is, or exploratory."""
    labels = (report.get("preregistration") or {}).get("labels") or {}
    if not labels:
        return ""
    if labels.get(section) == "primary":
        return ' <span class="tag primary">pre-registered primary test inside; its other comparisons exploratory</span>'
    return ' <span class="tag exploratory">exploratory</span>'


def _when(seconds) -> str:
    """A logged time (Unix seconds) as 'YYYY-MM-DD HH:MM UTC'."""
    if not isinstance(seconds, (int, float)):
        return DASH
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def preregistration_section(report: dict) -> str:
    """On pre-registered data: the hash, the plan, the exclusions applied and what each removed, the primary
    test's result and its sensitivity analysis (no exclusions); nothing otherwise."""
    held = report.get("preregistration") or {}
    if not held.get("registered"):
        return ""
    removed = (report.get("quality") or {}).get("removed_by_flag") or {}
    sensitivity = (report.get("sensitivity") or {}).get("studies") or {}
    out = ['<h2 id="preregistration">Pre-registration</h2><div class="prereg">',
           f"<p><b>{_e(held.get('statement'))}</b></p>"]
    for study, plan in (held.get("studies") or {}).items():
        again = sensitivity.get(study)
        rows = [["SHA-256", f"<code>{_e(plan.get('sha256'))}</code>"],
                ["hypotheses", "<br>".join(_e(h) for h in plan.get("hypotheses") or []) or DASH],
                ["primary test", f"<code>{_e(plan.get('primary'))}</code>: {_e(plan.get('primary_test'))}"],
                ["primary outcome", _e(plan.get("primary_outcome"))],
                ["result", _e(describe(plan.get("result")))],
                ["sensitivity (no exclusions)", _e(describe(again.get("result", again))) if again else
                 '<span class="muted">not run (no participant excluded, or --no-exclusions)</span>'],
                ["participants", f"{_e(plan.get('participants'))} analysed, {_e(plan.get('planned_n'))} planned"],
                ["stopping rule", _e(plan.get("stopping_rule"))],
                ["exclusions registered", _e(", ".join(plan.get("exclusions") or []) or "none")],
                ["exclusions applied", _e(", ".join(plan.get("applied") or []) or "none")
                 + (f' <b>(deviation: {_e(plan["deviation"])})</b>' if plan.get("deviation") else "")],
                ["registered with", _e(f"exag {(plan.get('registered') or {}).get('exag_version') or '(not recorded)'}"
                                       f", agent checkpoint "
                                       f"{(plan.get('registered') or {}).get('agent_fingerprint') or '(not registered)'}")],
                ["looks at outcomes (exports)", "<br>".join(
                    f"{_when(look.get('time'))}, "
                    f"{_e(look.get('where'))}, {_e(look.get('finished'))} of {_e(look.get('planned_n'))} finished"
                    for look in plan.get("looks") or []) or "none"],
                ["other deviations", "<br>".join(f"<b>{_e(d)}</b>" for d in plan.get("deviations") or []) or "none"]]
        out.append(f"<h3>{_e(study)}</h3>" + _table(["", ""], rows, 2))
    if removed:
        out.append("<p>What each exclusion removed (a participant with two flags counts under both): "
                   + "; ".join(f"{_e(flag)} {_e(v.get('participants'))} participants ({_e(v.get('games'))} games)"
                               for flag, v in removed.items()) + ".</p>")
    return "\n".join(out) + "</div>"


# --- the page ------------------------------------------------------------------------------------------

def render_html(report: dict, figures: list[Path], title: str | None = None, refresh_s: int | None = None) -> str:
    """The whole page. `figures`: draw_figures' paths (the PNGs are embedded); `refresh_s`: reload the page
    every so many seconds (the admin's live report)."""
    studies = report.get("studies_analysed") or sorted(report.get("studies") or {})
    title = title or f"ExAG analysis: {', '.join(studies) or 'no studies yet'}"
    n = report.get("n") or {}
    generated = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    exclusions = report.get("exclusions") or {}
    flagged = ((report.get("quality") or {}).get("flagged_participants")) or {}
    refresh = f'<meta http-equiv="refresh" content="{int(refresh_s)}">' if refresh_s else ""
    parts = [
        f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">{refresh}"
        f"<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{_e(title)}</title>"
        f"<style>{STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f"<p class=\"muted\">From {_e(report.get('source') or 'the event log')}, made {generated} by "
        f"<code>exag analyze</code>. {_e(n.get('games', 0))} games of {_e(n.get('participants', 0))} participants, "
        f"{_e(n.get('rounds', 0))} rounds, {_e(n.get('rater_ratings', 0))} rater ratings. Rates are percentages of "
        "games with 95% confidence intervals in brackets.</p>",
        "<nav class=\"small\"><a href=\"#table1\">Table 1</a> · <a href=\"#at-will\">At-will</a> · "
        "<a href=\"#figures\">Figures 5-10</a> · <a href=\"#correlations\">Correlations</a> · "
        "<a href=\"#agreement\">Agreement</a> · <a href=\"#benchmarks\">Benchmarks</a> · <a href=\"#methods\">Methods</a>"
        " · <a href=\"#missing\">Missing</a> · <a href=\"#studies\">Per study</a></nav>",
        "".join(f'<p class="warning"><b>Too few participants.</b> {_e(w)}.</p>' for w in report.get("warnings") or []),
        preregistration_section(report),
        "<h2>Data</h2>", counts_section(report), ungraded_section(report.get("ungraded_rounds")),
        balance_section(report.get("design")),
        _flow_section(report.get("flow")),
        f"<h2 id=\"table1\">Table 1: controlled study, score / win rate by mode{_label(report, 'controlled')}</h2>",
        table1(report.get("controlled"), report.get("paper")),
        f"<h2 id=\"at-will\">At-will study{_label(report, 'at_will')}</h2>", at_will_section(report.get("at_will")),
        f"<h2 id=\"figures\">Figures{_label(report, 'by_helpfulness')}</h2>", figures_section(report, figures),
        "<h2 id=\"correlations\">Correlation of explanation and answer correctness"
        f"{_label(report, 'correlations')}</h2>",
        correlations_section(report.get("correlations")),
        f"<h2 id=\"agreement\">Agreement{_label(report, 'agreement')}</h2>", agreement_section(report.get("agreement")),
        f"<h2 id=\"benchmarks\">Benchmarks beside the study{_label(report, 'benchmarks')}</h2>",
        benchmarks_section(report.get("benchmarks")),
        "<h2 id=\"methods\">Methods</h2>", f"<div class=\"methods\"><p>{_e(report.get('methods') or '')}</p>",
        f"<p>Exclusions: {_e(', '.join(exclusions.get('flags') or []) or 'none')} "
        f"({_e(exclusions.get('participants', 0))} participants, {_e(exclusions.get('games', 0))} games excluded). "
        f"Participants flagged: {_e(', '.join(f'{k} {v}' for k, v in flagged.items()) or 'none')} "
        "(<code>exag analyze --exclude fast_games,no_questions,straight_lined</code> excludes them).</p>"
        + tests_section(report.get("tests")) + "</div>",
        "<h2 id=\"missing\">What is missing</h2>", notes_section(report.get("notes")),
        "<h2 id=\"studies\">Per study</h2>",
        "".join(study_section(s, v) for s, v in (report.get("studies") or {}).items() if isinstance(v, dict))
        or "<p class=\"muted\">No studies with finished games yet.</p>",
        "</body></html>",
    ]
    return "\n".join(parts)
