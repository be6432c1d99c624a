"""The live report: `exag analyze`'s report.html of one study, built from a running server's event log.
`exag serve` hands `live_report` to the web app (server/app.py `create_app(config, live_report=...)`), whose
admin page /admin/report serves it; the web app itself never imports the analysis: a child process of its own
computes the page and leaves it in Redis (server/reports.py).

    html = live_report(list(store.events()), "pilot-1")

A pre-registered study shows no outcome until its planned N have finished: watching an effect form and
stopping when it looks good makes its p-values wrong. Until then the page monitors the study without
outcomes: recruitment, balance of arms and orders, checks and quality flags, attrition.
"""
from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from html import escape

import pandas as pd

from game.export import tables
from game.study import is_test_participation

from .data import AnalysisError, Tables
from .figures import draw_figures
from .html import render_html
from .report import analyze

REFRESH_S = 60      # the page reloads itself this often
HIDDEN = ("Study {study} is pre-registered (sha256 {sha}...): its outcomes, by arm or overall, stay hidden until "
          "its planned {planned} participants have finished ({finished} so far). Watching an effect form and "
          "stopping when it looks good would make its tests wrong; the stopping rule registered is: {rule}")


def live_report(events: list[dict], study_id: str, server_key: bytes | None = None) -> str:
    """The report page of `study_id` from these events; before its first game it builds empty and says so; a
    pre-registered study before its planned N shows the monitoring page instead (no outcome). `server_key`: the
    server's (game/export_signature.py server_key), which verifies the registration's signed cells."""
    source = f"the live event log (study {study_id})"
    frames = tables(events, server_key)
    plan = carried_plan(frames["studies"], study_id)
    if plan is not None and isinstance(plan.get("planned_n"), int):
        finished = _finished(frames["participants"], study_id)
        if finished < plan["planned_n"]:
            return monitoring_page(frames["participants"], study_id, plan, finished)
    try:
        live = Tables.from_frames(frames, source)
        live = live.only([study_id]).without_pilots() if study_id in live.study_ids() else None
    except AnalysisError:                         # not expected of the export's own tables; report it empty
        live = None
    if live is None:                              # no game yet: the report builds, empty, and says so
        live = Tables.from_frames({name: frame.iloc[0:0] for name, frame in frames.items()}, source,
                                  notes=[f"study {study_id} has no games yet"])
    report = analyze(replace(live, server_key=server_key))
    with tempfile.TemporaryDirectory(prefix="exag-live-report-") as tmp:
        return render_html(report, draw_figures(report, tmp), title=f"ExAG live report: {study_id}",
                           refresh_s=REFRESH_S)


def carried_plan(studies: pd.DataFrame, study_id: str) -> dict | None:
    """The plan a study's row carries, verified or not: a plan that does not verify hides the outcomes all the same
    (an edited plan must not open them)."""
    if studies.empty or "preregistration" not in studies.columns:
        return None
    texts = studies.loc[studies["study"] == study_id, "preregistration"]
    try:
        plan = json.loads(texts.iloc[-1]) if len(texts) and isinstance(texts.iloc[-1], str) else None
    except ValueError:
        return None
    return plan if isinstance(plan, dict) and plan.get("sha256") else None


def _finished(participants: pd.DataFrame, study_id: str) -> int:
    """The study's real participants who finished (test participations never count toward the planned N)."""
    if participants.empty or "finished" not in participants.columns:
        return 0
    mine = participants[(participants["study"] == study_id) & ~participants["participant"].map(is_test_participation)]
    return int(mine["finished"].notna().sum())


def monitoring_page(participants: pd.DataFrame, study_id: str, plan: dict, finished: int) -> str:
    """Recruitment, balance, checks and attrition by arm and order: everything but outcomes."""
    mine = participants[participants["study"] == study_id] if not participants.empty else participants
    rows = []
    if not mine.empty:
        mine = mine.assign(arm=mine["arm"].fillna("?"), order=mine["order"].fillna("-"))
        for (arm, order), group in mine.groupby(["arm", "order"], sort=True):
            consented = int(group["consented"].notna().sum()) if "consented" in group else 0
            done = int(group["finished"].notna().sum())
            screened = int(group["screened_out"].notna().sum()) if "screened_out" in group else 0
            flagged = int(group["flags"].fillna("").astype(str).ne("").sum()) if "flags" in group else 0
            rows.append([arm, order, len(group), consented, screened, len(group) - done - screened, done, flagged])
    head = ["arm", "order", "joined", "consented", "screened out", "not finished (playing or dropped)", "finished",
            "quality flags raised"]
    table = ("<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"
             + "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
             + "</table>") if rows else "<p>Nobody has joined yet.</p>"
    statement = HIDDEN.format(study=study_id, sha=plan["sha256"][:12], planned=plan["planned_n"], finished=finished,
                              rule=plan.get("stopping_rule") or "(none)")
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta http-equiv=\"refresh\" content=\"{REFRESH_S}\"><title>ExAG live report: {escape(study_id)}</title>"
            "<style>body{font-family:system-ui,sans-serif;max-width:70em;margin:2em auto;padding:0 1em}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}"
            "</style></head><body>"
            f"<h1>ExAG live report: {escape(study_id)}</h1><p><b>{escape(statement)}</b></p>"
            "<h2>Recruitment, balance and attrition</h2>" + table
            + f"<p>{finished} of {plan['planned_n']} planned participants have finished.</p></body></html>")
