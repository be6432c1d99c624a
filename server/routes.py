"""HTTP routes: the game and rating pages, game images, the raters' API, the explainer table and /healthz.
The researcher's console (/admin, behind the admin token) is server/admin.py."""
from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response, abort, current_app, jsonify, redirect, request, send_file

from vqa_agent.checkpoints import agent_name

from . import browser
from .rating_task import RatingError
from .schemas import ID

FRONTEND = Path(__file__).resolve().parent.parent / "frontend"
pages = Blueprint("pages", __name__, template_folder="templates")   # the pages Jinja renders


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
    """Gives a browser without a cookie this server signed its random id (server/browser.py): HttpOnly, so no
    script reads it; SameSite=Lax over HTTP, None (and Secure) over HTTPS so that it also works in a platform's
    iframe. A made-up or edited cookie is replaced."""
    browsers = services().play.browsers
    if browsers.key(request.cookies.get(browser.COOKIE)) is None:
        response.set_cookie(browser.COOKIE, browsers.new_id(), max_age=browser.MAX_AGE_S, httponly=True,
                            secure=request.is_secure, samesite="None" if request.is_secure else "Lax")
    return response


@pages.get("/")
def game_page():
    if "study" not in request.args:
        return redirect(f"/?study={services().config.default_study}")
    return _with_browser_cookie(send_file(FRONTEND / "index.html", max_age=0))


@pages.get("/favicon.ico")
def favicon():
    """The pages' icon, an SVG: browsers ask for /favicon.ico whatever the page links."""
    return send_file(FRONTEND / "favicon.svg", mimetype="image/svg+xml", max_age=24 * 3600)


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
    """200 once a player can play: Redis answers and a live inference worker has answered a warm-up question
    with the server's agent (503 until then). `agents`: each open study's agent, "ready" or "starting"."""
    s = services()
    redis_ok = s.store.ping()
    agents = s.agents.readiness([study.agent for study, status in s.store.studies() if status == "open"]) \
        if redis_ok else {}
    ok = redis_ok and agents[""] == "ready"
    return jsonify({"ok": ok, "redis": redis_ok, "agent": agent_name(s.config.agent), "world": str(s.config.world),
                    "pool": str(s.config.pool) if s.config.pool else None, "agents": agents,
                    "explainers": sorted(s.worker.explainers), "unavailable": s.worker.unavailable,
                    # new participants are refused at the door while it is full (server/admission.py)
                    "admission": s.play.admission.status() if redis_ok else None}), 200 if ok else 503


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
