"""The paper's Figures 5-10 drawn from a report dict (report.py's docstring is the shape it reads):
nothing is computed here beyond picking the report's numbers. Error bars are the report's 95% intervals
("ci": in Figs. 7-10 the participant bootstrap's, never narrower than Wilson's), every point is annotated
with the number of ratings, items or games behind it, and each caption says which interval and which test
its figure shows. Figs. 6-10 draw one row of panels per study kind when the report keeps the kinds apart
(kinds.py), so at-will and controlled games are never drawn as one.

    paths = draw_figures(report, "report/figures")      # fig5_adoption.png, fig5_adoption.svg, ...
    text = caption("fig7_win_by_helpfulness", report)    # what a figure shows, for the HTML report

A figure without data still renders, with "no data yet: ..." and the report's reason. Drawing uses
matplotlib's object API on the Agg canvas (no pyplot state), so it is safe in a server thread.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .bootstrap import METHOD as BOOTSTRAP
from .correctness import POST_HOC
from .frames import sham
from .paper import PAPER
from .points import INTERVAL, TEST_VS_BASELINE
from .scales import RATINGS

FIGURES = ("fig5_adoption", "fig6_ratings", "fig7_win_by_helpfulness", "fig8_difficulty_by_rating",
           "fig9_win_by_correctness", "fig10_answer_correctness")
FORMATS = ("png", "svg")
DPI = 110
PANEL_SIZE = (4.3, 3.5)           # inches per panel
COLORS = ("#1f5fa8", "#d0672a", "#2f8f46", "#8e44ad", "#b03a48", "#6b6b6b", "#c9a227")
BASELINE_COLOR = "#7a7a7a"
TICK_CHARS = 11                   # a category's tick label longer than this takes two lines
LEGEND_WIDTH = 1.7                # inches beside each panel whose legend sits outside its axes (Fig. 9)
XLABEL_CHARS = 64                 # an x label's second line (Fig. 7's trend) wraps at this width, within its panel
LEGEND_CHARS = 26                 # a legend entry beside the axes wraps at this width
MODE_NAMES = {"overall": "Overall", "overall_inc_none": "Overall inc. no-expl. group", "attention": "Attention",
              "relqa": "RelQAs", "both": "Both", "objscene": "ObjScene", "nle": "NLE", "introspect": "Introspect",
              "none": "WithoutExpl", "attention-shuffled": "Sham: attention shuffled",
              "nle-other": "Sham: NLE of another image"}
GROUP_NAMES = {"explained_on_point": "with explanations rated above Indifferent",
               "without_explanations": "without explanations"}


# --- reading the report ------------------------------------------------------------------------------

def _section(report: dict, *path: str):
    value = report
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def missing(section, what: str) -> str | None:
    """Why a section has nothing to draw, or None when it has."""
    if section is None:
        return f"the report has no {what}"
    if isinstance(section, dict) and section.get("missing"):
        return str(section["missing"])
    return None


def mode_name(mode: str) -> str:
    if mode in MODE_NAMES:
        return MODE_NAMES[mode]
    return ("Sham: " if sham(mode) else "") + mode.replace("+", " + ")    # e.g. "Sham: attention + nle-other"


def _label(text) -> str:
    """A category's tick label: the scale's own words as the players and raters clicked them (the report's
    "rating" values, from game/settings.py and explainers/scales.py); one longer than TICK_CHARS is split
    between words into two lines as even as can be ("Helping / a lot", "Completely / confusing")."""
    text = str(text)
    words = text.split()
    if len(text) <= TICK_CHARS or len(words) < 2:
        return text
    cut = min(range(1, len(words)), key=lambda i: max(len(" ".join(words[:i])), len(" ".join(words[i:]))))
    return f"{' '.join(words[:cut])}\n{' '.join(words[cut:])}"


def _fmt_p(p) -> str:
    if p is None:
        return "n/a"
    return "< 0.0001" if p < 1e-4 else f"{p:.4f}" if p < 0.001 else f"{p:.3f}" if p < 0.1 else f"{p:.2f}"


def _p_is(p) -> str:
    """'p = 0.012', 'p < 0.0001' or 'p n/a'."""
    text = _fmt_p(p)
    return f"p {text}" if text.startswith("<") or text == "n/a" else f"p = {text}"


def _n_range(points: list[dict], key: str = "n_games") -> str:
    values = [p.get(key) for p in points if isinstance(p.get(key), (int, float))]
    if not values:
        return "none"
    lo, hi = int(min(values)), int(max(values))
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


# --- drawing helpers -----------------------------------------------------------------------------------

def _figure(panels: int, rows: int = 1, sharey: bool = False, extra_width: float = 0.0) -> tuple[Figure, list]:
    """`extra_width`: inches more per panel, for what sits beside its axes (a legend outside them)."""
    figure = Figure(figsize=((PANEL_SIZE[0] + extra_width) * panels, PANEL_SIZE[1] * rows + 0.4),
                    layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, panels, squeeze=False, sharey=sharey).ravel().tolist()
    return figure, axes


def _no_data(ax, reason: str) -> None:
    ax.set_xticks([])
    ax.set_yticks([])
    for side in ax.spines.values():
        side.set_color("#cccccc")
    ax.text(0.5, 0.5, "\n".join(textwrap.wrap(f"no data yet: {reason}", 40)), ha="center", va="center",
            transform=ax.transAxes, fontsize=9, color="#555555")


def _panel_title(ax, letter: str, title: str) -> None:
    ax.set_title(f"({letter}) {title}", fontsize=10, loc="left")


def _errorbars(ax, points: list[dict], ykey: str, *, color: str, label: str | None = None, offset: float = 0.0,
               nkey: str | None = "n_games", nlabel: str = "", line: bool = True, linewidth: float = 1.3,
               n_on_top: bool = False) -> bool:
    """Points with their CI as error bars and n above each; returns whether anything had a value."""
    xs, ys, lows, highs = [], [], [], []
    for i, p in enumerate(points):
        y = p.get(ykey)
        if y is None:
            continue
        ci = p.get("ci") or [None, None]
        lo = ci[0] if ci[0] is not None else y
        hi = ci[1] if ci[1] is not None else y
        xs.append(i + offset)
        ys.append(y)
        lows.append(max(0.0, y - lo))
        highs.append(max(0.0, hi - y))
    if not xs:
        return False
    ax.errorbar(xs, ys, yerr=[lows, highs], fmt="o-" if line else "o", color=color, label=label, capsize=3,
                markersize=4.5, linewidth=linewidth, elinewidth=1)
    for x, y, high, p in zip(xs, ys, highs, [p for p in points if p.get(ykey) is not None]):
        n = p.get(nkey) if nkey else None
        if n is None:
            continue
        if n_on_top:                              # along the top edge, clear of the other series
            ax.annotate(f"{nlabel}{int(n)}", (x, 0.985), xycoords=("data", "axes fraction"), ha="center", va="top",
                        fontsize=6.5, color=color)
        else:
            ax.annotate(f"{nlabel}{int(n)}", (x, y + high), textcoords="offset points", xytext=(0, 3), ha="center",
                        fontsize=6.5, color=color)
    return True


def _legend_beside(ax) -> None:
    """The legend to the right of the axes, where it cannot cover a point, a bar or the baseline's band;
    constrained layout keeps it inside the figure (the figure is LEGEND_WIDTH wider per panel for it)."""
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, [textwrap.fill(label, LEGEND_CHARS) for label in labels], fontsize=6.5, loc="upper left",
              bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


def _corner(ax, text: str) -> None:
    ax.text(0.98, 0.02, text, transform=ax.transAxes, ha="right", va="bottom", fontsize=7, color="#333333",
            bbox={"facecolor": "white", "edgecolor": "#cccccc", "boxstyle": "round,pad=0.25", "alpha": 0.9})


def _categories(ax, labels: list[str]) -> None:
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels([_label(t) for t in labels], fontsize=7.5)
    ax.set_xlim(-0.5, len(labels) - 0.5)


def _percent_axis(ax, label: str) -> None:
    ax.set_ylim(0, 1.08)
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.set_yticklabels(["0%", "25%", "50%", "75%", "100%"], fontsize=8)
    ax.set_ylabel(label, fontsize=9)
    ax.grid(axis="y", color="#e6e6e6", linewidth=0.8)
    ax.set_axisbelow(True)


def _baseline(ax, rate: dict | None, label: str) -> None:
    if not isinstance(rate, dict) or rate.get("win_rate") is None:
        return
    y = rate["win_rate"]
    ax.axhline(y, color=BASELINE_COLOR, linestyle="--", linewidth=1,
               label=f"{label} {y:.0%} (n={rate.get('n_games', 0)} games)")
    ci = rate.get("ci")
    if ci and None not in ci:
        ax.axhspan(ci[0], ci[1], color=BASELINE_COLOR, alpha=0.12, linewidth=0)


# --- the figures ---------------------------------------------------------------------------------------

def fig5_adoption(report: dict) -> Figure:
    figure, (by_play_ax, halves_ax) = _figure(2)
    adoption = _section(report, "at_will", "adoption")
    reason = missing(_section(report, "at_will"), "at-will section") or missing(adoption, "adoption")
    _panel_title(by_play_ax, "a", "games using explanations, by play")
    _panel_title(halves_ax, "b", "first vs second half of plays")
    if reason:
        _no_data(by_play_ax, reason)
        _no_data(halves_ax, reason)
        return figure
    points = adoption.get("by_play") or []
    if _errorbars(by_play_ax, points, "share", color=COLORS[0], nkey="n_games"):
        by_play_ax.set_xticks(range(len(points)))
        by_play_ax.set_xticklabels([str(p.get("play")) for p in points], fontsize=7)
        by_play_ax.set_xlabel("play (the participant's n-th game)", fontsize=9)
        _percent_axis(by_play_ax, "games with explanations")
    else:
        _no_data(by_play_ax, "no at-will games")
    halves = [adoption.get("first_half") or {}, adoption.get("second_half") or {}]
    if any(h.get("share") is not None for h in halves):
        for i, half in enumerate(halves):
            if half.get("share") is None:
                continue
            ci = half.get("ci") or [half["share"], half["share"]]
            halves_ax.bar(i, half["share"], width=0.55, color=COLORS[i], alpha=0.85,
                          yerr=[[max(0.0, half["share"] - ci[0])], [max(0.0, ci[1] - half["share"])]], capsize=4)
            halves_ax.annotate(f"{half['share']:.0%}\nn={half.get('n_games', 0)}", (i, ci[1]),
                               textcoords="offset points", xytext=(0, 3), ha="center", fontsize=8)
        _categories(halves_ax, ["first half", "second half"])
        _percent_axis(halves_ax, "games with explanations")
        _corner(halves_ax, f"{_p_is(adoption.get('p_value'))} (z-test)\n"
                           f"{_p_is(adoption.get('p_value_clustered'))} (participant-clustered)")
    else:
        _no_data(halves_ax, "no at-will games")
    return figure


# --- Figs. 6-10: a row of panels per study kind ----------------------------------------------------------

LETTERS = "abcdefghijklmnopqrstuvwxyz"
SIGNIFICANT = 0.05                # a point marked * differs from its baseline at this level (Holm-corrected)


def scopes(report: dict, key: str) -> list[tuple[str | None, object]]:
    """A section of Figs. 6-10 as (kind, section) pairs: one per study kind where the report keeps the kinds
    apart (kinds.py: {"by_kind": {kind: section}}), else [(None, the section)]."""
    section = _section(report, key)
    by_kind = section.get("by_kind") if isinstance(section, dict) else None
    if isinstance(by_kind, dict) and by_kind:
        return list(by_kind.items())
    return [(None, section)]


def _rows(scoped: list, panels_of, extra_width: float = 0.0) -> tuple[Figure, list[list]]:
    """A figure with one row of panels per scope, as wide as the widest row; the unused places left empty
    (their axes removed, so the layout engine has nothing to place there)."""
    counts = [max(1, panels_of(section)) for _, section in scoped]
    width = max(counts)
    figure, axes = _figure(width, rows=len(scoped), extra_width=extra_width)
    grid = [axes[r * width:(r + 1) * width] for r in range(len(scoped))]
    for row, n in zip(grid, counts):
        for ax in row[n:]:
            figure.delaxes(ax)
    return figure, [row[:n] for row, n in zip(grid, counts)]


def _title(ax, letters, kind: str | None, title: str) -> None:
    _panel_title(ax, next(letters), f"{kind}: {title}" if kind else title)


def _usable(section) -> bool:
    return isinstance(section, dict) and not section.get("missing")


def _stars(ax, points: list[dict], ykey: str, offset: float = 0.0, color: str = "#000000") -> None:
    """A * beside each point whose Holm-corrected test against the baseline is below SIGNIFICANT."""
    for i, p in enumerate(points):
        q = p.get("p_value_vs_baseline_holm")
        if p.get(ykey) is not None and isinstance(q, (int, float)) and q < SIGNIFICANT:
            ax.annotate("*", (i + offset, p[ykey]), textcoords="offset points", xytext=(7, -4), fontsize=11,
                        color=color, fontweight="bold")


def _trend_text(trend, what: str = "trend") -> str:
    if not isinstance(trend, dict) or trend.get("odds_ratio") is None:
        return f"{what}: no clustered test" + (f" ({trend['note']})" if isinstance(trend, dict) and
                                               trend.get("note") else "")
    return f"{what}: OR {trend['odds_ratio']:.2f} per step, {_p_is(trend.get('p_value'))} (clustered)"


def _histogram(ax, hists: dict, title: str, letter: str) -> None:
    """Grouped bars of shares per rating, one group per key of `hists` (each a list of bins)."""
    _panel_title(ax, letter, title)
    usable = {k: v for k, v in hists.items() if isinstance(v, list) and v and sum(b.get("count") or 0 for b in v)}
    if not usable:
        reasons = [v.get("missing") for v in hists.values() if isinstance(v, dict) and v.get("missing")]
        _no_data(ax, reasons[0] if reasons else f"no {title.lower()}")
        return
    labels = [b.get("rating") for b in max(usable.values(), key=len)]
    width = 0.8 / len(usable)
    for j, (name, bins) in enumerate(usable.items()):
        by_label = {b.get("rating"): b for b in bins}
        total = sum(b.get("count") or 0 for b in bins)
        xs = [i - 0.4 + width * (j + 0.5) for i in range(len(labels))]
        shares = [(by_label.get(label) or {}).get("share") or 0 for label in labels]
        ax.bar(xs, shares, width=width * 0.92, color=COLORS[j % len(COLORS)], label=f"{name} (n={total})")
        for x, label, share in zip(xs, labels, shares):
            count = (by_label.get(label) or {}).get("count") or 0
            ax.annotate(str(count), (x, share), textcoords="offset points", xytext=(0, 2), ha="center", fontsize=6)
    _categories(ax, labels)
    _percent_axis(ax, "share of ratings")
    ax.set_ylim(0, max(0.5, min(1.08, max((b.get("share") or 0) for v in usable.values() for b in v) + 0.15)))
    ax.set_yticks([t for t in (0, 0.25, 0.5, 0.75, 1.0) if t <= ax.get_ylim()[1]])
    ax.set_yticklabels([f"{t:.0%}" for t in ax.get_yticks()], fontsize=8)
    ax.legend(fontsize=6.5, loc="upper right")


def fig6_ratings(report: dict) -> Figure:
    scoped = scopes(report, "rating_histograms")
    figure, grid = _rows(scoped, lambda section: 3)
    letters = iter(LETTERS)
    titles = ("helpfulness (players)", "explanation correctness", "answer correctness")
    for (kind, hist), axes in zip(scoped, grid):
        named = [f"{kind}: {t}" if kind else t for t in titles]
        reason = missing(hist, "rating histograms")
        if reason:
            for ax, title in zip(axes, named):
                _panel_title(ax, next(letters), title)
                _no_data(ax, reason)
            continue
        helpfulness = {mode_name(m): h for m, h in (hist.get("helpfulness") or {}).items()}
        _histogram(axes[0], helpfulness, named[0], next(letters))
        expl = hist.get("explanation_correctness") or {}
        _histogram(axes[1], {f"{source}, {mode_name(k)}": v
                             for source in ("automatic", "raters") if isinstance(expl.get(source), dict)
                             for k, v in expl[source].items() if k == "overall"} or
                   {source: expl.get(source) for source in ("automatic", "raters") if expl.get(source) is not None},
                   named[1], next(letters))
        answer = hist.get("answer_correctness") or {}
        _histogram(axes[2], {source: answer.get(source) for source in ("automatic", "raters")
                             if answer.get(source) is not None}, named[2], next(letters))
    return figure


def _modes(points: dict) -> list[str]:
    """The report's order (the paper's), overall first."""
    return sorted(points, key=lambda m: m not in ("overall", "overall_inc_none"))


def _points_of(section) -> dict:
    return (section.get("points") or {}) if _usable(section) else {}


def fig7_win_by_helpfulness(report: dict) -> Figure:
    scoped = scopes(report, "by_helpfulness")
    figure, grid = _rows(scoped, lambda section: len(_modes(_points_of(section))))
    letters = iter(LETTERS)
    for (kind, section), axes in zip(scoped, grid):
        reason = missing(section, "win rates by helpfulness")
        points = _points_of(section)
        for ax, mode in zip(axes, _modes(points) or ["overall"]):
            _title(ax, letters, kind, mode_name(mode))
            mine = points.get(mode) or []
            if reason or not _errorbars(ax, mine, "win_rate", color=COLORS[0], label="win rate by rating", nkey="n",
                                        nlabel="n="):
                _no_data(ax, reason or "no rated rounds with explanations")
                continue
            _baseline(ax, (section.get("baseline") or {}).get(mode), "no-expl. baseline")
            _stars(ax, mine, "win_rate")
            _categories(ax, [p.get("rating") for p in mine])
            _percent_axis(ax, "win rate")
            trend = textwrap.fill(_trend_text((section.get("trend") or {}).get(mode)), XLABEL_CHARS)
            ax.set_xlabel(f"helpfulness rating of the round\n{trend}", fontsize=7.5)   # wrapped: within its panel
            ax.legend(fontsize=6.5, loc="lower left")
    return figure


def _won_lost_panel(ax, data) -> None:
    """Fig. 8's last panel: mean difficulty of won and lost games, without and with explanations."""
    reason = missing(data, "difficulty of won and lost games")
    cells = (data or {}).get("cells") or {} if not reason else {}
    exposures = ("without_explanations", "with_explanations")
    drawn = False
    for j, outcome in enumerate(("won", "lost")):
        points = [dict((cells.get(e) or {}).get(outcome) or {}) for e in exposures]
        drawn |= _errorbars(ax, points, "mean_difficulty", color=COLORS[3 + j], label=f"{outcome} games",
                            offset=(j - 0.5) * 0.16, nkey="n_games", nlabel="n=", line=False)
    if not drawn:
        _no_data(ax, reason or "no games with a known set difficulty")
        return
    _categories(ax, ["no expl.", "with expl."])
    _difficulty_axis(ax, 8)
    ax.grid(axis="y", color="#e6e6e6", linewidth=0.8)
    _legend_beside(ax)        # inside the axes it covered error bars and their n= labels
    interaction = data.get("interaction") or {}
    ax.set_xlabel(textwrap.fill(f"difficulty x explanations: {_p_is(interaction.get('p_value'))} (clustered)",
                                XLABEL_CHARS), fontsize=7.5)


def _difficulty_axis(ax, fontsize: float) -> None:
    """Set difficulty is a distance from the secret to its distractors (lower = harder): the axis is inverted, so
    that a point higher up is a harder set, as a reader expects of "difficulty"."""
    ax.invert_yaxis()
    ax.set_ylabel("set difficulty (harder \u2191)\nmean secret-distractor distance", fontsize=fontsize)


def _fig8_panels(section) -> int:
    return len(_modes(_points_of(section)) or ["overall"]) + 1


def fig8_difficulty_by_rating(report: dict) -> Figure:
    scoped = scopes(report, "difficulty_by_rating")
    figure, grid = _rows(scoped, _fig8_panels)
    width, height = figure.get_size_inches()
    figure.set_size_inches(width + LEGEND_WIDTH, height)    # room for the last panel's legend beside it
    letters = iter(LETTERS)
    for (kind, section), axes in zip(scoped, grid):
        reason = missing(section, "difficulty by rating")
        points = _points_of(section)
        for ax, mode in zip(axes, _modes(points) or ["overall"]):
            _title(ax, letters, kind, mode_name(mode))
            mine = points.get(mode) or []
            if reason or not _errorbars(ax, mine, "mean_difficulty", color=COLORS[2], nkey="n", nlabel="n="):
                _no_data(ax, reason or "no rated rounds with a known set difficulty")
                continue
            _categories(ax, [p.get("rating") for p in mine])
            _difficulty_axis(ax, 8)
            ax.grid(axis="y", color="#e6e6e6", linewidth=0.8)
            corr = ((section.get("correlation") or {}).get(mode) or {})
            trend = ((section.get("trend") or {}).get(mode) or {})
            lines = []
            if corr.get("spearman") is not None:
                lines.append(f"Spearman {corr['spearman']:.2f}, {_p_is(corr.get('spearman_p'))} (ratings)")
            if trend.get("slope_per_step") is not None:
                ci = trend.get("ci_bootstrap")
                lines.append(f"slope {trend['slope_per_step']:+.3f}/step" +
                             (f" [{ci[0]:+.3f}, {ci[1]:+.3f}] (participant bootstrap)" if ci else ""))
            # under the axes, not in a corner: an inverted axis puts the easiest sets where a corner box sits
            ax.set_xlabel("\n".join(["helpfulness rating of the round"] +
                                     [textwrap.fill(line, XLABEL_CHARS) for line in lines]), fontsize=7.5)
        _title(axes[-1], letters, kind, "won vs lost games")
        _won_lost_panel(axes[-1], (section or {}).get("won_vs_lost") if isinstance(section, dict) else None)
    return figure


def fig9_win_by_correctness(report: dict) -> Figure:
    scoped = scopes(report, "by_correctness")
    figure, grid = _rows(scoped, lambda section: 2, extra_width=LEGEND_WIDTH)
    letters = iter(LETTERS)
    for (kind, section), axes in zip(scoped, grid):
        top = missing(section, "win rates by correctness")
        for ax, source, title in zip(axes, ("raters", "automatic"), ("by independent raters", "graded automatically")):
            _title(ax, letters, kind, f"correctness {title}")
            data = None if top else section.get(source)
            reason = top or missing(data, f"{source} correctness")
            by = (data or {}).get("points") or {} if not reason else {}
            drawn = False
            for j, name in enumerate(_modes(by)):
                offset = (j - (len(by) - 1) / 2) * 0.1
                drawn |= _errorbars(ax, by[name], "win_rate", color=COLORS[j % len(COLORS)],
                                    label=f"{mode_name(name)} (n={_n_range(by[name], 'n')} per point)",
                                    offset=offset, nkey="n" if name == "overall" else None,
                                    nlabel="n=", n_on_top=True, linewidth=2.2 if name == "overall" else 1.0)
                if name == "overall":
                    _stars(ax, by[name], "win_rate", offset)
            if not drawn:
                _no_data(ax, reason or "no rated explanations of the secret image")
                continue
            _baseline(ax, data.get("baseline"), "adjusted no-expl. baseline")
            _categories(ax, [p.get("rating") for p in max(by.values(), key=len)])
            _percent_axis(ax, "win rate")
            ax.set_xlabel(f"explanation correctness\n{_trend_text(data.get('trend'), 'overall trend')}", fontsize=7.5)
            _legend_beside(ax)            # a line per explainer and the baseline's band leave no free corner
    kappas = [(kind, section.get("agreement")) for kind, section in scoped if _usable(section)]
    text = "\n".join(f"{kind + ': ' if kind else ''}raters vs automatic: weighted kappa {k['weighted_kappa']:.2f} "
                     f"(n={k.get('n_items', 0)} items)" for kind, k in kappas
                     if isinstance(k, dict) and k.get("weighted_kappa") is not None)
    if text:
        figure.suptitle(text, fontsize=9)
    return figure


def _fig10_text(data: dict) -> str:
    lines = [f"adjusted: {_p_is(data.get('p_value'))} (games), {_fmt_p(data.get('p_value_clustered'))} (clustered)"]
    low = data.get("low_correctness") or {}
    if low:
        interaction = low.get("interaction") or {}
        lines.append(f"answers mostly wrong (exploratory): {_p_is(low.get('p_value_clustered'))} (clustered),\n"
                     f"interaction with low correctness: {_p_is(interaction.get('p_value'))} (clustered)")
    return "\n".join(lines)


def fig10_answer_correctness(report: dict) -> Figure:
    scoped = scopes(report, "answer_correctness")
    figure, grid = _rows(scoped, lambda section: 2, extra_width=LEGEND_WIDTH)
    letters = iter(LETTERS)
    for (kind, section), axes in zip(scoped, grid):
        top = missing(section, "win rates by answer correctness")
        bins = [b.get("bin") for b in (section or {}).get("bins") or []] if not top else []
        for ax, source in zip(axes, ("automatic", "raters")):
            _title(ax, letters, kind, f"'on point' by {'automatic grades' if source == 'automatic' else 'the raters'}")
            data = None if top else section.get(source)
            reason = top or missing(data, f"{source} answer correctness")
            groups = (data or {}).get("points") or {} if not reason else {}
            drawn = False
            for j, (group, points) in enumerate(groups.items()):
                by_bin = {p.get("bin"): p for p in points}
                ordered = [by_bin.get(b, {"bin": b}) for b in bins] if bins else points
                drawn |= _errorbars(ax, ordered, "win_rate", color=COLORS[j % len(COLORS)],
                                    label=f"{GROUP_NAMES.get(group, group)} "
                                          f"(n={((data.get('n_games') or {}).get(group)) or 0} games)",
                                    offset=(j - 0.5) * 0.1)
            if not drawn:
                _no_data(ax, reason or "no games in either group")
                continue
            _categories(ax, bins or [p.get("bin") for p in next(iter(groups.values()))])
            _percent_axis(ax, "win rate")
            ax.set_xlabel(f"the game's mean answer correctness\n"
                          f"{textwrap.fill(_fig10_text(data), XLABEL_CHARS)}", fontsize=7)
            _legend_beside(ax)            # inside the axes it covered the points' n= labels
    return figure


DRAW = {"fig5_adoption": fig5_adoption, "fig6_ratings": fig6_ratings,
        "fig7_win_by_helpfulness": fig7_win_by_helpfulness, "fig8_difficulty_by_rating": fig8_difficulty_by_rating,
        "fig9_win_by_correctness": fig9_win_by_correctness, "fig10_answer_correctness": fig10_answer_correctness}


def draw_figures(report: dict, out_dir: str | Path) -> list[Path]:
    """Every figure as PNG and SVG in out_dir; a figure that fails to draw is drawn as "no data yet" with
    the error, so the report always has all six."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in FIGURES:
        try:
            figure = DRAW[name](report)
        except Exception as error:                       # noqa: BLE001: one odd section must not lose the report
            figure, (ax,) = _figure(1)
            _no_data(ax, f"this figure could not be drawn ({type(error).__name__}: {error})")
        for fmt in FORMATS:
            path = out_dir / f"{name}.{fmt}"
            with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": name}):   # SVG text stays text
                figure.savefig(path, format=fmt, dpi=DPI,
                               metadata={"Date": None} if fmt == "svg" else {"Software": None})
            figure.set_layout_engine("none")             # laid out once: the SVG keeps the PNG's layout
            written.append(path)
    return written


# --- captions ------------------------------------------------------------------------------------------

def caption(name: str, report: dict) -> str:
    """What figure `name` shows, from the report: its measure, its intervals and the n behind each point."""
    return CAPTIONS[name](report)


def _points_n(points_by_mode: dict, key: str) -> str:
    return "; ".join(f"{mode_name(m)} {_n_range(v, key)}" for m, v in points_by_mode.items() if isinstance(v, list)) \
        or "none"


def _sentence(label: str, text) -> str:
    return f" {label}: {str(text).rstrip('.')}." if text else ""


def _caption5(report: dict) -> str:
    adoption = _section(report, "at_will", "adoption")
    base = ("Fig. 5. Adoption of explanations in at-will games: (a) the share of games in which the player bought "
            "explanations at least once, by the participant's n-th play; (b) the first vs the second half of all "
            "plays (z-test for proportions, games as independent, and the participant-clustered wild cluster "
            "bootstrap test). Error bars: Wilson 95% CIs.")
    reason = missing(_section(report, "at_will"), "at-will section") or missing(adoption, "adoption")
    if reason:
        return f"{base} No data yet: {reason}."
    halves = [adoption.get(k) or {} for k in ("first_half", "second_half")]
    return (f"{base} Games behind each play: {_n_range(adoption.get('by_play') or [])}; halves: "
            f"{halves[0].get('n_games', 0)} and {halves[1].get('n_games', 0)} games "
            f"({adoption.get('n_participants', 0)} participants)." + _sentence("Order", adoption.get("ordering")))


def _scoped(report: dict, key: str, what: str, details) -> str:
    """The per-kind part of a caption of Figs. 6-10: details(section) per kind, or why there is none."""
    scoped = scopes(report, key)
    parts = []
    for kind, section in scoped:
        reason = missing(section, what)
        text = f"No data yet: {str(reason).rstrip('.')}." if reason else details(section)
        parts.append(f"{kind.capitalize()} studies (row {len(parts) + 1}): {text}" if kind else text)
    apart = ("Controlled and at-will studies are drawn in separate rows, never pooled. " if len(scoped) > 1 else "")
    return apart + " ".join(parts)


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _method(report: dict, key: str, field: str, default: str) -> str:
    """A method's description as the report states it (the first kind that has one), else `default`."""
    for _, section in scopes(report, key):
        if isinstance(section, dict) and section.get(field):
            return str(section[field]).rstrip(".")
    return default


def scale_note() -> str:
    """Said once (Fig. 6's caption): the figures label every rating with the players' and raters' own words,
    and the paper's figures named the helpfulness scale's points differently."""
    paper = PAPER.get("rating_names") or ()
    said = "" if tuple(paper) in ((), tuple(RATINGS)) else (
        f" (the paper's figures name the same points {', '.join(paper)})")
    return (f"Every rating in Figs. 6-9 is labelled with the words the player or rater clicked; the players' "
            f"helpfulness scale: {', '.join(RATINGS)}{said}.")


def _caption6(report: dict) -> str:
    base = ("Fig. 6. Histograms of the ratings: (a) the players' helpfulness ratings of rounds with explanations, "
            "per mode; (b) explanation correctness of the secret image's explanations, graded automatically and "
            "by independent raters; (c) answer correctness, automatic and by raters. Bars are shares; the number "
            f"above each bar is its count. {scale_note()}")

    def details(hist: dict) -> str:
        counts = {mode_name(m): sum(b.get("count") or 0 for b in h)
                  for m, h in (hist.get("helpfulness") or {}).items() if isinstance(h, list)}
        return (f"Ratings per mode: {', '.join(f'{k} {v}' for k, v in counts.items()) or 'none'}." +
                _sentence("Counted", hist.get("unit")))
    return f"{base} {_scoped(report, 'rating_histograms', 'rating histograms', details)}"


# Figs. 7-9 group games by something nobody randomized, observed after the explanation was seen: what they show
# is an association, never an effect of explanations (issue 43).
ASSOCIATION = ("Association, not effect: {what} is not randomized ({why}), so the points show which games went "
               "with which {short}, not what explanations cause.")


def _caption7(report: dict) -> str:
    key = "by_helpfulness"
    base = ("Fig. 7. Win rate by the helpfulness rating the player gave a round with explanations, overall and per "
            "mode; the dashed line is the win rate of the same arms' games without explanations (band: its "
            f"interval). Error bars: {_method(report, key, 'interval', INTERVAL)}. One trend test per panel "
            f"(under its axis): {_method(report, key, 'trend_test', 'participant-clustered logistic regression')}. "
            f"A point marked * differs from the baseline at {SIGNIFICANT:.0%} by "
            f"{_method(report, key, 'test_vs_baseline', TEST_VS_BASELINE)}. The label on each point is the number of "
            "ratings behind it. " + ASSOCIATION.format(
                what="the helpfulness rating", short="ratings",
                why="the player gives it after seeing the round, knowing how the game is going"))

    def details(section: dict) -> str:
        points = section.get("points") or {}
        return (f"Ratings per point: {_points_n(points, 'n')}; games per point: {_points_n(points, 'n_games')}; "
                f"participants per point: {_points_n(points, 'n_participants')}."
                + _sentence("Unit", section.get("unit")) + _sentence("Baseline", section.get("baseline_definition")))
    return f"{base} {_scoped(report, key, 'win rates by helpfulness', details)}"


def _caption8(report: dict) -> str:
    key = "difficulty_by_rating"
    base = ("Fig. 8. Mean difficulty of the image set by the helpfulness rating given, per mode, and in the last "
            "panel of each row the mean difficulty of won and of lost games, without and with explanations (the "
            f"paper's difficulty analysis). The difficulty axis is inverted: higher is a harder set (a smaller mean "
            "distance from the secret to its distractors). Error bars: "
            f"{_method(report, key, 'interval', BOOTSTRAP)}. Under each panel: "
            "Spearman's rho with its p-value (ratings as independent) and the trend, "
            f"{_method(report, key, 'trend_test', 'the slope with its participant-bootstrap interval')}; in the last "
            "panel the test of difficulty x explanations (participant-clustered logistic regression). The label on "
            "each point is the number of ratings (games, in the last panel) behind it. " + ASSOCIATION.format(
                what="the helpfulness rating, like winning or losing", short="ratings",
                why="the player gives the rating after seeing the round; wins follow play"))

    def details(section: dict) -> str:
        return (f"Ratings per point: {_points_n(section.get('points') or {}, 'n')}. "
                f"Difficulty: {section.get('difficulty') or 'as exported'}.")

    def won_lost(section) -> str:
        data = section.get("won_vs_lost") if isinstance(section, dict) else None
        if missing(data, "won vs lost"):
            return ""
        cells = data.get("cells") or {}
        n = {e: sum((c or {}).get("n_games") or 0 for c in (cells.get(e) or {}).values()) for e in cells}
        return (f" Won vs lost: {n.get('without_explanations', 0)} games without and {n.get('with_explanations', 0)} "
                "with explanations.")
    scoped = _scoped(report, key, "difficulty by rating", lambda s: details(s) + won_lost(s))
    return f"{base} {scoped}"


def _caption9(report: dict) -> str:
    key = "by_correctness"
    base = ("Fig. 9. Win rate by the correctness of the secret image's explanations: (a) as rated by independent "
            "raters (consensus of three), (b) as graded automatically against the ground truth, overall and per "
            "explainer; the dashed line is the paper's adjusted baseline, the win rate of the games without "
            f"explanations that have correctness ratings from that source. Error bars: "
            f"{_method(report, key, 'interval', INTERVAL)}. One trend test per panel (overall, under its axis): "
            f"{_method(report, key, 'trend_test', 'participant-clustered logistic regression')}. An overall point "
            f"marked * differs from the baseline at {SIGNIFICANT:.0%} by "
            f"{_method(report, key, 'test_vs_baseline', TEST_VS_BASELINE)}. The label on each point is the number of "
            "explanations behind it. " + ASSOCIATION.format(
                what="an explanation's correctness", short="grades",
                why="it follows from the agent's answer on that round's question and images"))

    def details(section: dict) -> str:
        parts = []
        for source in ("raters", "automatic"):
            data = section.get(source)
            why = missing(data, source)
            per_point = "" if why else _points_n(data.get("points") or {}, "n")
            parts.append(f"{source}: " + (f"no data yet ({why})" if why else
                                          f"{data.get('n_items', 0)} explanations, {per_point} per point; baseline: "
                                          f"{data.get('baseline_definition') or 'none'}"))
        return f"{'; '.join(parts)}." + _sentence("Unit", section.get("unit"))
    return f"{base} {_scoped(report, key, 'win rates by correctness', details)}"


def _caption10(report: dict) -> str:
    key = "answer_correctness"
    base = ("Fig. 10. Win rate by the game's mean answer correctness, for games with at least one explanation "
            "rated above Indifferent vs games without explanations; (a) 'above Indifferent' by the automatic "
            f"grades, (b) by the raters. Error bars: {_method(report, key, 'interval', INTERVAL)}; the label on each "
            "point is its number of games. Under each axis: the test adjusted for answer correctness (games as independent, "
            "and participant-clustered), and the paper's claim itself: among games whose answers were mostly wrong, "
            "the two groups compared and the interaction group x low correctness (both participant-clustered). "
            f"{_upper_first(_method(report, key, 'post_hoc', POST_HOC))}.")

    def details(section: dict) -> str:
        parts = []
        for source in ("automatic", "raters"):
            data = section.get(source)
            why = missing(data, source)
            if why:
                parts.append(f"{source}: no data yet ({why})")
                continue
            groups = data.get("points") or {}
            low = data.get("low_correctness") or {}
            parts.append(f"{source}: " + ", ".join(f"{GROUP_NAMES.get(g, g)} {(data.get('n_games') or {}).get(g, 0)} "
                                                   f"games ({_n_range(p)} per bin)" for g, p in groups.items())
                         + f"; {_p_is(data.get('p_value'))} ({data.get('test') or 'test'}), clustered "
                           f"{_fmt_p(data.get('p_value_clustered'))}"
                         + (f"; answers mostly wrong: {(low.get('explained_on_point') or {}).get('n_games', 0)} vs "
                            f"{(low.get('without_explanations') or {}).get('n_games', 0)} games, clustered "
                            f"{_p_is(low.get('p_value_clustered'))}, interaction "
                            f"{_p_is((low.get('interaction') or {}).get('p_value'))}" if low else ""))
        return f"{'; '.join(parts)}." + _sentence("Answer correctness", section.get("answer_measure"))
    return f"{base} {_scoped(report, key, 'win rates by answer correctness', details)}"


CAPTIONS = {"fig5_adoption": _caption5, "fig6_ratings": _caption6, "fig7_win_by_helpfulness": _caption7,
            "fig8_difficulty_by_rating": _caption8, "fig9_win_by_correctness": _caption9,
            "fig10_answer_correctness": _caption10}
