"""The researcher's console, behind the admin token: /admin is the page (server/templates/admin.html and its
live part admin_studies.html; frontend/console/ makes it update in place and answers its forms beside them),
and beside it the routes it and researchers' scripts use: the monitor (JSON, or the live part as HTML),
studies created, checked and opened or closed, participants found and released, rater links, the live
report (whatever function `create_app` was given: the web app does not import the analysis) and exports, both
computed in child processes (server/reports.py), never in the players' web process.

Every route answers a form post with the page (or a redirect to it), and a JSON request (a JSON body,
`Accept: application/json` or `?format=json`) with JSON, refusals too (a wrong token, an unknown admin URL).
A malformed request is refused with 400 and its reason, never a server error: `Refused` carries the reason
and the status to whichever answer the request asked for. A POST another site's page sent is refused (403) even
with the admin cookie (`_same_site`).
"""
from __future__ import annotations

import hmac
import json
import time
from collections import Counter
from urllib.parse import urlsplit

from flask import Blueprint, Response, current_app, jsonify, redirect, render_template, request, send_file

from game import preregistration
from game.checks import CHECK_FLAGS
from game.export import FORMATS
from game.fingerprints import registered_run
from game.quality import PlayedGame, quality_flags
from game.study import StudyConfig, is_test_participation

from . import reports
from .participation import DONE, STAGES
from .rating_task import RatingError
from .release import bound_elsewhere, release
from .routes import services
from .schemas import ID
from .study_check import check_study, check_unchanged, paid_study_warnings

admin = Blueprint("admin", __name__, template_folder="templates")
LATEST_SHOWN = 50          # participants per study the monitor shows, and a search finds
SEVERAL_SESSIONS = ("Participant ids that joined under more than one platform session: {}. Someone may have used "
                    "another's id; each session is a participation of its own: keep the one the platform lists as "
                    "submitted (docs/real-study.md).")
MAX_PID_CHARS = 140        # a participant id as the monitor shows it: a platform prefix, an ID and a session
MAX_SEARCH_CHARS = 100
# what a malformed config raises from StudyConfig's and GameSettings' own checks: a wrong type meets a
# comparison, a constructor or a method (a list where a string is due), a number too large for a float, or
# JSON nested too deeply to be read
CONFIG_ERRORS = (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError)
WAIT_REFRESH_S = 5         # the live report's page while its first computation runs reloads itself this often
EXAMPLE_STUDY = json.dumps({"study_id": "pilot-1", "kind": "controlled", "arms": ["none", "attention", "relqa", "both"],
                            "sessions": 4, "games_per_session": 5, "completion_code": "C0DE1234",
                            "redirect_url": "https://app.prolific.com/submissions/complete?cc=C0DE1234"}, indent=1)


class Refused(ValueError):
    """An admin request refused: the reason, for the researcher, and the HTTP status."""

    def __init__(self, reason: str, status: int = 400) -> None:
        super().__init__(reason)
        self.status = status


def _wants_json() -> bool:
    return request.is_json or request.args.get("format") == "json" \
        or request.accept_mimetypes.best_match(["text/html", "application/json"]) == "application/json"


@admin.errorhandler(Refused)
def refused(error: Refused):
    if _wants_json():
        return jsonify({"error": str(error)}), error.status
    if error.status == 403:                              # the page, and its token cookie, only with the token
        return Response(str(error), 403, mimetype="text/plain")
    config = request.form.get("config")                  # a refused study comes back as sent, to be fixed
    return _admin_page(str(error), error.status, config if isinstance(config, str) else None)


def _admin() -> None:
    _same_site()
    token = request.args.get("token") or request.headers.get("X-Admin-Token") or request.cookies.get("exag_admin") \
        or request.form.get("token", "")
    if not hmac.compare_digest(token.encode(), services().config.admin_token.encode()):
        raise Refused("the admin token is missing or wrong: send ?token=, the X-Admin-Token header or the page's "
                      "cookie", 403)


def _same_site() -> None:
    """Refuses (403) a POST that another site's page sent: the admin cookie rides along with any request the
    browser makes, and SameSite=Strict alone stood between a foreign form and closing a study. Every browser
    sends a POST's Origin ("null" where it hides it); without one, its Referer is read. A request with neither
    is no browser's (a script holding the token, which needs no page) and passes. Hosts are compared without
    their ports (a proxy's Host header may drop one)."""
    if request.method != "POST":
        return
    sent = request.headers.get("Origin") or request.headers.get("Referer")
    if sent is None:
        return
    try:
        host = urlsplit(sent).hostname
    except ValueError:        # a malformed address ("http://[x")
        host = None
    if host is None or host != urlsplit(f"//{request.host}").hostname:
        raise Refused(f"refused: this request was sent by another site's page ({sent[:80]!r}); the console's "
                      "forms work from its own page (/admin)", 403)


def _sent() -> dict:
    """The request's fields: its JSON object, else its form."""
    if not request.is_json:
        return request.form
    try:
        sent = request.get_json(silent=True)
    except RecursionError:           # Flask's reader lets this one through
        sent = None
    if not isinstance(sent, dict):
        raise Refused("the body is not a JSON object: send {\"field\": value, ...} (or a form)")
    try:            # JSON may escape a lone surrogate ("\ud800"): no store or log can write it
        json.dumps(sent, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise Refused("the body has text that is not Unicode (a lone surrogate such as \\ud800)") from None
    return sent


def _text(sent: dict, field: str, limit: int, example: str) -> str:
    value = sent.get(field)
    if not isinstance(value, str) or not value or len(value) > limit:
        raise Refused(f"{field}: send text of 1-{limit} characters, e.g. {example}")
    return value


# --- the monitor -----------------------------------------------------------------------------------

def _monitor() -> list[dict]:
    s = services()
    rows = []
    refused_full = s.play.admission.status()["refused"]      # joins turned away for load (server/admission.py)
    for study, status in s.store.studies():
        participants = s.store.participants(study.study_id)
        stats = s.store.stats(study.study_id)
        finished = sum(p["stage"] == DONE and not is_test_participation(p["pid"]) for p in participants)
        arms, hidden = [], preregistration.outcomes_hidden(study, finished)
        for arm in study.arms:
            row = {"arm": arm, "participants": sum(p["arm"] == arm for p in participants),
                   "games": stats.get(f"{arm}:games", 0), "wins": stats.get(f"{arm}:wins", 0)}
            for name, prefix in (("win_rate", arm), ("win_rate_without", f"{arm}:without"),
                                 ("win_rate_with", f"{arm}:with")):
                games = stats.get(f"{prefix}:games", 0)
                row[name] = stats.get(f"{prefix}:wins", 0) / games if games and not hidden else None
            arms.append({**row, "wins": None} if hidden else row)
        latest = sorted(participants, key=lambda p: -p["last_seen"])[:LATEST_SHOWN]
        for p in latest:
            p["quality"] = _quality(p)
        closed = s.store.closed_because(study.study_id) if status == "closed" else None
        sessions = Counter(p["pid"].rsplit(":", 1)[0] for p in participants if p["pid"].count(":") == 2)
        shared = sorted(pid for pid, n in sessions.items() if n > 1)[:LATEST_SHOWN]
        effort = Counter(f for p in latest for f in p["quality"]["flags"].split("+") if f)
        rows.append({"study": study.to_dict(), "status": status, "arms": arms, "outcomes_hidden": hidden,
                     "stages": {stage: sum(p["stage"] == stage for p in participants) for stage in STAGES},
                     "participants": latest, "effort": dict(sorted(effort.items())),
                     "bound_elsewhere": bound_elsewhere(s.store, study.study_id), "closed_because": closed,
                     "several_sessions": shared, "refused_full": refused_full.get(f"refused:{study.study_id}", 0),
                     "warnings":
                     [f"This study closed itself to new joins: {closed}. Fix the agent, then open the study "
                      "again."] * bool(closed) + [SEVERAL_SESSIONS.format(", ".join(shared))] * bool(shared)
                     + paid_study_warnings(study, s.config.agent)})
    return rows


def _quality(participant: dict) -> dict:
    """The participant's quality flags (game/quality.py) from their stored games, and their failed checks."""
    games = services().store.games(participant["games"])
    played = [PlayedGame(len(state.rounds), record["finished"] - record["started"] if record.get("finished") else None)
              for state, record in games]
    flags = quality_flags(played, [r.rating for state, _ in games for r in state.rounds if r.rating])
    checks = participant.get("checks", {})     # failed participant checks (server/check_stages.py names them as flags)
    flags["flags"] = "+".join(filter(None, [flags["flags"], *(name for name in CHECK_FLAGS if checks.get(name))]))
    return flags


def _admin_page(message: str = "", status: int = 200, config: str | None = None):
    response = Response(render_template("admin.html", monitor=_monitor(), formats=FORMATS, now=time.time(),
                                        example=EXAMPLE_STUDY if config is None else config, message=message), status)
    response.set_cookie("exag_admin", services().config.admin_token, httponly=True, samesite="Strict")
    return response


@admin.get("/admin")
def console():
    _admin()
    return _admin_page()


@admin.get("/admin/monitor.json")
def admin_monitor():
    _admin()
    return jsonify(_monitor())


@admin.get("/admin/monitor.html")
def admin_monitor_html():
    """The page's live part alone, as the page shows it: the console replaces what changed in place."""
    _admin()
    return render_template("admin_studies.html", monitor=_monitor(), now=time.time())


# --- studies ---------------------------------------------------------------------------------------

def _checked_study(prove: bool = False) -> StudyConfig:
    """The study config sent (form field `config`: JSON text; or JSON {"config": text or object}), checked as
    study files are (server/study_check.py) and against the studies on the server; `prove`: its agent answers
    a warm-up question too (server/agents.py: once per agent and web process)."""
    config = _sent().get("config")
    try:
        if isinstance(config, str):
            config = json.loads(config)
        if not isinstance(config, dict):
            raise ValueError("send the study config as a JSON object: {\"study_id\": ..., \"kind\": ..., ...}")
        study = StudyConfig.from_dict(config)
        check_study(study, services().pool, services().agents, prove)   # the same checks as for study files
    except json.JSONDecodeError as error:
        raise Refused(f"the config is not valid JSON: {error}") from None
    except CONFIG_ERRORS as error:
        raise Refused(str(error)[:1000]) from None
    stored = services().store.study(study.study_id)
    if stored is not None:
        try:
            check_unchanged(study, stored[0])    # says why a changed pre-registration is refused, beyond "exists"
        except ValueError as error:
            raise Refused(str(error), 409) from None
        raise Refused(f"a study {study.study_id!r} exists already", 409)
    return study


@admin.post("/admin/studies/check")
def check_study_config():
    """What creating the study would answer, without creating it: {"ok", "error", "warnings"}. Its agent is
    proven as creation proves it (a warm-up question on a worker), so a broken one is refused here too."""
    _admin()
    try:
        study = _checked_study(prove=True)
    except Refused as error:
        if error.status == 400 and not isinstance(_sent().get("config"), (str, dict)):
            raise                                # no config sent at all: the request is malformed
        return jsonify({"ok": False, "error": str(error), "warnings": []})
    return jsonify({"ok": True, "error": None, "warnings": paid_study_warnings(study, services().config.agent)})


@admin.post("/admin/studies")
def create_study():
    _admin()
    try:
        study = _checked_study(prove=True)
        try:
            ran = registered_run(study, study.agent or services().agents.server_agent)
        except ValueError as error:
            raise Refused(str(error)[:1000]) from None
        if not services().store.save_study(study, "open", {"type": "study_created", "study": study.study_id,
                                                           "config": study.to_dict()}, only_if_new=True):
            raise Refused(f"a study {study.study_id!r} exists already", 409)
        if ran is not None:
            services().store.log({"type": "study_ran_with", "study": study.study_id, "time": time.time(), **ran})
    except Refused as error:
        raise Refused(f"Not created: {error}", error.status) from None
    if _wants_json():
        return jsonify({"created": study.study_id,
                        "warnings": paid_study_warnings(study, services().config.agent)}), 201
    return redirect("/admin")


@admin.post("/admin/studies/<study_id>/<action>")
def open_or_close_study(study_id: str, action: str):
    _admin()
    found = services().store.study(study_id)
    if found is None or action not in ("open", "close"):
        raise Refused(f"no study {study_id[:64]!r}" if found is None else
                      f"a study is opened or closed, not {action[:20]!r}", 404)
    status = "open" if action == "open" else "closed"
    services().store.save_study(found[0], status, {"type": f"study_{status}", "study": study_id})
    return jsonify({"study": study_id, "status": status}) if _wants_json() else redirect("/admin")


# --- participants ----------------------------------------------------------------------------------

def _study_named(sent, status: int = 404) -> str:
    study_id = _text(sent, "study", 64, "pilot-1")
    if not ID.fullmatch(study_id):
        raise Refused(f"study: an id of 1-64 letters, digits, '.', '_' or '-', not {study_id[:64]!r}")
    if services().store.study(study_id) is None:
        raise Refused(f"there is no study {study_id!r}", status)
    return study_id


@admin.get("/admin/participants.json")
def find_participants():
    """The participants of `study` whose id contains `q` (all without one), latest first, at most LATEST_SHOWN."""
    _admin()
    study_id = _study_named(request.args)
    query = request.args.get("q", "").strip().lower()
    if len(query) > MAX_SEARCH_CHARS:
        raise Refused(f"q: at most {MAX_SEARCH_CHARS} characters")
    found = sorted((p for p in services().store.participants(study_id) if query in p["pid"].lower()),
                   key=lambda p: -p["last_seen"])[:LATEST_SHOWN]
    return jsonify([{"pid": p["pid"], "arm": p["arm"], "stage": p["stage"], "game": p["game_number"] + 1,
                     "last_seen": p["last_seen"], "bound": p.get("binding") is not None} for p in found])


@admin.post("/admin/release")
def release_participant():
    """Clears a participation's binding to its browser and session, and closes the old binding's connections
    (server/release.py): the next join, from any browser, binds again."""
    _admin()
    sent = _sent()
    study_id = _study_named(sent)
    pid = _text(sent, "participant", MAX_PID_CHARS, "prolific:ID:SESSION, mturk:ID:ASSIGNMENT or pid:ID")
    if not release(services().store, current_app.extensions["socketio"], study_id, pid):
        raise Refused(f"Not released: study {study_id!r} has no participant {pid!r} (ids look like "
                      "prolific:ID:SESSION, mturk:ID:ASSIGNMENT or pid:ID, as in the monitor)", 404)
    if _wants_json():
        return jsonify({"released": pid, "study": study_id})
    return redirect("/admin")


@admin.route("/admin/<path:unknown>", methods=["GET", "POST"])
def unknown_admin_url(unknown: str):
    _admin()
    raise Refused(f"no admin page {('/admin/' + unknown)[:80]!r}", 404)


# --- the live report, rater links and exports -----------------------------------------------------------

@admin.get("/admin/report")
def admin_report():
    """The analysis report (`exag analyze`'s report.html) of one study, built from the live event log by the
    function `create_app` was given (`exag serve` gives experiments/analysis/live.py's) in a child process; the
    request is answered at once with the latest page (and a note when the log has grown since); it reloads itself."""
    _admin()
    study_id = request.args.get("study", "")
    if not ID.fullmatch(study_id) or services().store.study(study_id) is None:
        raise Refused(f"No report: there is no study {study_id[:64]!r}", 404)
    live_report = services().live_report
    if live_report is None:
        return Response(render_template("no_live_report.html", study=study_id), mimetype="text/html")
    view = reports.live_view(services().store.redis, _redis_url(), live_report, study_id)   # at once, from Redis
    if view["html"] is not None and view["fresh"]:
        return Response(view["html"], mimetype="text/html")
    note = render_template("live_report_note.html", view=view, ago=time.time() - view["computed"],
                           refresh_s=WAIT_REFRESH_S)
    if view["html"] is None:
        return Response(render_template("live_report_wait.html", study=study_id, note=note, refresh_s=WAIT_REFRESH_S),
                        mimetype="text/html")
    head, body, rest = view["html"].partition("<body>")      # the latest page, with the note on top
    return Response(head + body + note + rest if body else note + head, mimetype="text/html")


def _redis_url() -> str:
    return services().config.redis_url or services().redis.url


@admin.post("/admin/raters")
def issue_rater_links():
    """Signed rating links for the given rater ids (form or JSON field `raters`: ids separated by spaces or
    commas, or a JSON list); JSON {"links": {rater: url}} when asked for JSON, else a page listing them."""
    _admin()
    try:
        raters = services().rating.rater_ids(_sent().get("raters", ""))
    except RatingError as error:
        raise Refused(f"No links issued: {error}") from None
    base = request.host_url.rstrip("/")
    links = {r: base + services().rating.link(r) for r in raters}
    if _wants_json():
        return jsonify({"links": links})
    return render_template("rater_links.html", links=links)


@admin.get("/admin/export.zip")
def export_zip():
    _admin()
    fmt = request.args.get("format", "csv")
    if fmt not in FORMATS:
        raise Refused(f"format: one of {', '.join(FORMATS)}, not {fmt[:20]!r}")
    try:
        path = reports.export_zip(_redis_url(), fmt)          # written by a child process; this one only waits
    except RuntimeError as error:
        raise Refused(f"No export: {error}", 500) from None
    archive = path.open("rb")
    path.unlink()                                     # the open file is sent whole, then nothing is left
    return send_file(archive, mimetype="application/zip", as_attachment=True, download_name=f"exag-export-{fmt}.zip")
