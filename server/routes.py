"""HTTP routes: the game and rating pages, game images, the raters' API, the admin pages (behind the
admin token), export downloads and /healthz. Admin pages are server-rendered and refresh themselves; the
live report is whatever function `create_app` was given (the web app does not import the analysis)."""
from __future__ import annotations

import hmac
import io
import json
import tempfile
import zipfile
from collections import Counter
from pathlib import Path

from flask import Blueprint, Response, abort, current_app, jsonify, redirect, render_template, request, send_file

from game.checks import CHECK_FLAGS
from game.export import FORMATS, write_export
from game.quality import PlayedGame, quality_flags
from game.study import StudyConfig

from . import browser
from .participation import STAGES
from .rating_task import RatingError
from .schemas import ID
from .study_check import check_study, check_unchanged, paid_study_warnings

FRONTEND = Path(__file__).resolve().parent.parent / "frontend"
pages = Blueprint("pages", __name__, template_folder="templates")   # the admin pages (Jinja)


def services():
    return current_app.extensions["exag"]


@pages.after_app_request
def security_headers(response: Response) -> Response:
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    response.headers.setdefault("Content-Security-Policy",
                                "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; "
                                "connect-src 'self' ws: wss:; script-src 'self'")
    return response


def _with_browser_cookie(response: Response) -> Response:
    """Gives a browser without one its random id (server/browser.py): HttpOnly, so no script reads it;
    SameSite=Lax over HTTP, None (and Secure) over HTTPS so that it also works in a platform's iframe."""
    if browser.key(request.cookies.get(browser.COOKIE)) is None:
        response.set_cookie(browser.COOKIE, browser.new_id(), max_age=browser.MAX_AGE_S, httponly=True,
                            secure=request.is_secure, samesite="None" if request.is_secure else "Lax")
    return response


@pages.get("/")
def game_page():
    if "study" not in request.args:
        return redirect(f"/?study={services().config.default_study}")
    return _with_browser_cookie(send_file(FRONTEND / "index.html", max_age=0))


@pages.get("/image/<game_id>/<token>.png")
def game_image(game_id: str, token: str):
    path = services().play.image_path(game_id, token)
    if path is None:
        abort(404)
    return _png(path)


def _png(path: Path) -> Response:
    """The image's bytes and nothing else about it: no file name, date or tag that could tell images apart."""
    return Response(path.read_bytes(), mimetype="image/png", headers={"Cache-Control": "private, max-age=3600"})


@pages.get("/healthz")
def healthz():
    s = services()
    ok = s.store.ping()
    return jsonify({"ok": ok, "redis": ok, "agent": s.config.agent, "world": str(s.config.world),
                    "explainers": sorted(s.worker.explainers), "unavailable": s.worker.unavailable}), 200 if ok else 503


# --- the explainer table -----------------------------------------------------------------------------

@pages.get("/api/explainers")
def explainer_table():
    """What the page shows of each explainer (explainers/registry.py page_table: kind, label, the
    instructions' line): the built-ins, and those `?study=` shows (third-party explainers included)."""
    from explainers.registry import BUILTIN_NAMES, page_table
    from game.study import explainers_of
    study_id = request.args.get("study", "")
    found = services().store.study(study_id) if ID.fullmatch(study_id) else None
    shown = [name for arm in found[0].arms for name in explainers_of(found[0], arm)] if found else []
    return jsonify(page_table([*BUILTIN_NAMES, *shown]))


# --- the rating task -------------------------------------------------------------------------------

@pages.get("/rate")
def rating_page():
    return _with_browser_cookie(send_file(FRONTEND / "rate.html", max_age=0))


def _rater() -> str:
    """The rater of a signed link (`?rater=ID&sig=SIG`, or the JSON body's), bound to this browser."""
    sent = request.args if request.method == "GET" else (request.get_json(silent=True) or {})
    return services().rating.check_rater(sent.get("rater"), sent.get("sig"), request.cookies.get(browser.COOKIE))


@pages.errorhandler(RatingError)
def rating_error(error):
    return jsonify({"error": str(error)}), error.status


@pages.get("/api/rate/next")
def next_rating_item():
    item = services().rating.next_item(_rater())
    return jsonify(item if item is not None else {"done": True})


@pages.post("/api/rate")
def rate_item():
    data = request.get_json(silent=True)
    fields = {"rater", "sig", "item", "explanation_rating", "answer_rating"}
    if not isinstance(data, dict) or set(data) | {"sig"} != fields or not all(isinstance(v, str) for v in data.values()):
        raise RatingError("send JSON {rater, sig, item, explanation_rating, answer_rating} (all strings)")
    services().rating.rate(_rater(), data["item"], data["explanation_rating"], data["answer_rating"])
    return jsonify({"ok": True})


@pages.get("/rate/image/<item_id>.png")
def rating_image(item_id: str):
    position = services().rating.item_image(item_id)
    if position is None:
        abort(404)
    return _png(services().pool.image_path(position))


# --- admin -----------------------------------------------------------------------------------------

def _admin() -> None:
    token = request.args.get("token") or request.headers.get("X-Admin-Token") or request.cookies.get("exag_admin") \
        or request.form.get("token", "")
    if not hmac.compare_digest(token.encode(), services().config.admin_token.encode()):
        abort(403)


def _monitor() -> list[dict]:
    s = services()
    rows = []
    for study, status in s.store.studies():
        participants = s.store.participants(study.study_id)
        stats = s.store.stats(study.study_id)
        arms = []
        for arm in study.arms:
            row = {"arm": arm, "participants": sum(p["arm"] == arm for p in participants),
                   "games": stats.get(f"{arm}:games", 0), "wins": stats.get(f"{arm}:wins", 0)}
            for name, prefix in (("win_rate", arm), ("win_rate_without", f"{arm}:without"),
                                 ("win_rate_with", f"{arm}:with")):
                games = stats.get(f"{prefix}:games", 0)
                row[name] = stats.get(f"{prefix}:wins", 0) / games if games else None
            arms.append(row)
        latest = sorted(participants, key=lambda p: -p["last_seen"])[:50]
        for p in latest:
            p["quality"] = _quality(p)
        effort = Counter(f for p in latest for f in p["quality"]["flags"].split("+") if f)
        rows.append({"study": study.to_dict(), "status": status, "arms": arms,
                     "stages": {stage: sum(p["stage"] == stage for p in participants) for stage in STAGES},
                     "participants": latest, "effort": dict(sorted(effort.items())),
                     "warnings": paid_study_warnings(study, s.config.agent)})
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


EXAMPLE_STUDY = json.dumps({"study_id": "pilot-1", "kind": "controlled", "arms": ["none", "attention", "relqa", "both"],
                            "sessions": 4, "games_per_session": 5, "completion_code": "C0DE1234",
                            "redirect_url": "https://app.prolific.com/submissions/complete?cc=C0DE1234"}, indent=1)


def _admin_page(message: str = "", status: int = 200):
    import time

    response = Response(render_template("admin.html", monitor=_monitor(), formats=FORMATS, now=time.time(),
                                        example=EXAMPLE_STUDY, message=message), status)
    response.set_cookie("exag_admin", services().config.admin_token, httponly=True, samesite="Strict")
    return response


@pages.get("/admin")
def admin():
    _admin()
    return _admin_page()


@pages.get("/admin/monitor.json")
def admin_monitor():
    _admin()
    return jsonify(_monitor())


@pages.post("/admin/studies")
def create_study():
    _admin()
    try:
        study = StudyConfig.from_dict(json.loads(request.form.get("config", "")))
        check_study(study, services().pool, services().agents)   # the same checks as for study files
    except (ValueError, TypeError) as error:
        return _admin_page(f"Not created: {error}", 400)
    stored = services().store.study(study.study_id)
    try:
        if stored is not None:
            check_unchanged(study, stored[0])    # says why a changed pre-registration is refused, beyond "exists"
    except ValueError as error:
        return _admin_page(f"Not created: {error}", 409)
    if not services().store.save_study(study, "open", {"type": "study_created", "study": study.study_id,
                                                       "config": study.to_dict()}, only_if_new=True):
        return _admin_page(f"Not created: a study {study.study_id!r} exists already", 409)
    return redirect("/admin")


@pages.post("/admin/studies/<study_id>/<action>")
def open_or_close_study(study_id: str, action: str):
    _admin()
    found = services().store.study(study_id)
    if found is None or action not in ("open", "close"):
        abort(404)
    status = "open" if action == "open" else "closed"
    services().store.save_study(found[0], status, {"type": f"study_{status}", "study": study_id})
    return redirect("/admin")


@pages.post("/admin/release")
def release_participant():
    """Clears a participation's binding to its browser and session: the next join binds again."""
    _admin()
    store, study_id, pid = services().store, request.form.get("study", ""), request.form.get("participant", "")
    if not ID.fullmatch(study_id) or store.participant(study_id, pid) is None:
        return _admin_page(f"Not released: study {study_id!r} has no participant {pid!r} (ids look like "
                           "prolific:ID, mturk:ID or pid:ID, as in the monitor)", 404)
    with store.locked(study_id, pid):
        participant = store.participant(study_id, pid)
        participant["binding"] = None
        store.commit(participant=participant, events=[{"type": "release", "study": study_id, "participant": pid,
                                                       "game": participant.get("current_game") or ""}])
    return redirect("/admin")


@pages.get("/admin/report")
def admin_report():
    """The analysis report (`exag analyze`'s report.html) of one study, built from the live event log by the
    function `create_app` was given (`exag serve` gives experiments/analysis/live.py's); it reloads itself."""
    _admin()
    study_id = request.args.get("study", "")
    if not ID.fullmatch(study_id) or services().store.study(study_id) is None:
        abort(404)
    live_report = services().live_report
    if live_report is None:
        return Response(render_template("no_live_report.html", study=study_id), mimetype="text/html")
    return Response(live_report(list(services().store.events()), study_id), mimetype="text/html")


@pages.post("/admin/raters")
def issue_rater_links():
    """Signed rating links for the given rater ids (form or JSON field `raters`: ids separated by spaces or
    commas); JSON {"links": {rater: url}} when asked for JSON, else a page listing them."""
    _admin()
    sent = request.get_json(silent=True) if request.is_json else request.form
    raters = (sent or {}).get("raters", "")
    raters = raters.replace(",", " ").split() if isinstance(raters, str) else raters
    if not raters or not all(isinstance(r, str) and ID.fullmatch(r) for r in raters):
        return _admin_page("No links issued: give rater ids of 1-64 letters, digits, '_', '-' or '.'", 400)
    base = request.host_url.rstrip("/")
    links = {r: base + services().rating.link(r) for r in dict.fromkeys(raters)}
    if request.is_json or request.accept_mimetypes.best == "application/json":
        return jsonify({"links": links})
    return render_template("rater_links.html", links=links)


@pages.get("/admin/export.zip")
def export_zip():
    _admin()
    fmt = request.args.get("format", "csv")
    if fmt not in FORMATS:
        abort(400)
    events = list(services().store.events())
    buffer = io.BytesIO()
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in write_export(events, tmp, fmt):
            archive.write(path, path.name)
    buffer.seek(0)
    return send_file(buffer, mimetype="application/zip", as_attachment=True, download_name=f"exag-export-{fmt}.zip")

