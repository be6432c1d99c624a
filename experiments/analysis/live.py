"""The live report: `exag analyze`'s report.html of one study, built from a running server's event log, so
the researcher watches the effect form while the study runs. `exag serve` hands `live_report` to the web
app (server/app.py `create_app(config, live_report=...)`), whose admin page /admin/report serves it; the
web app itself never imports the analysis.

    html = live_report(list(store.events()), "pilot-1")
"""
from __future__ import annotations

import tempfile

from game.export import tables

from .data import AnalysisError, Tables
from .figures import draw_figures
from .html import render_html
from .report import analyze

REFRESH_S = 60      # the page reloads itself this often


def live_report(events: list[dict], study_id: str) -> str:
    """The report page of `study_id` from these events; before its first game it builds empty and says so."""
    source = f"the live event log (study {study_id})"
    frames = tables(events)
    try:
        live = Tables.from_frames(frames, source)
        live = live.only([study_id]) if study_id in live.study_ids() else None
    except AnalysisError:                         # not expected of the export's own tables; report it empty
        live = None
    if live is None:                              # no game yet: the report builds, empty, and says so
        live = Tables.from_frames({name: frame.iloc[0:0] for name, frame in frames.items()}, source,
                                  notes=[f"study {study_id} has no games yet"])
    report = analyze(live)
    with tempfile.TemporaryDirectory(prefix="exag-live-report-") as tmp:
        return render_html(report, draw_figures(report, tmp), title=f"ExAG live report: {study_id}",
                           refresh_s=REFRESH_S)
