"""The researcher's console beside its page (issue 31): its JSON routes (a study checked without being
created, participants found, releases), a release that closes every connection of the old binding (also on
another web process, through the Socket.IO message queue), joins refused as bound elsewhere listed for the
console and kept out of the event log, and malformed admin requests refused with 400 and a reason."""
from __future__ import annotations

import json
import threading
import urllib.request

import pytest
from server_setup import LiveServer, server_config
from socket_player import Player, started

from experiments.simulate.bot import Bot
from server.app import create_app
from server.release import RELEASED

TOKEN = {"X-Admin-Token": "test-admin", "Accept": "application/json"}
VALID = {"study_id": "console-new", "kind": "controlled", "arms": ["none", "both"], "sessions": 4}


def admin(app, method: str, url: str, **kwargs):
    return getattr(app.test_client(), method)(url, headers=TOKEN, **kwargs)


def monitor_row(app, study: str) -> dict:
    return next(s for s in admin(app, "get", "/admin/monitor.json").get_json() if s["study"]["study_id"] == study)


def test_a_study_is_checked_as_creating_it_would_without_being_created(app):
    def check(config) -> dict:
        answer = admin(app, "post", "/admin/studies/check", json={"config": config})
        assert answer.status_code == 200
        return answer.get_json()

    assert check(json.dumps(VALID)) == {"ok": True, "error": None, "warnings": []}
    assert check(VALID)["ok"]                                                     # text or object
    assert "at least 4 sessions" in check({**VALID, "sessions": 2})["error"]
    assert "not valid JSON" in check('{"study_id": "x",')["error"]
    assert "exists already" in check({**VALID, "study_id": "ctl"})["error"]
    assert app.extensions["exag"].store.study("console-new") is None             # nothing was created

    created = admin(app, "post", "/admin/studies", json={"config": VALID})
    assert created.status_code == 201 and created.get_json() == {"created": "console-new", "warnings": []}
    again = admin(app, "post", "/admin/studies", json={"config": VALID})
    assert again.status_code == 409 and again.get_json()["error"] == "Not created: a study 'console-new' exists already"
    closed = admin(app, "post", "/admin/studies/console-new/close")
    assert closed.get_json() == {"study": "console-new", "status": "closed"}


def test_the_page_updates_in_place_instead_of_reloading(app):
    page = app.test_client().get("/admin?token=test-admin").get_data(as_text=True)
    assert 'http-equiv="refresh"' not in page and "/static/console/console.js" in page
    live = admin(app, "get", "/admin/monitor.html").get_data(as_text=True)
    assert 'id="study-ctl"' in live and 'href="/admin/report?study=ctl"' in live and "<html" not in live
    assert app.test_client().get("/admin/monitor.html").status_code == 403


def test_release_closes_every_connection_of_the_old_binding_and_lists_refused_joins(app, connect):
    laptop = started(connect, "ctl", "evicted", arm="both")
    second_tab = Player(connect())                                       # the same browser's other tab
    second_tab.ok("join", {"study": "ctl", "pid": "evicted"})
    store = app.extensions["exag"].store
    logged = len(list(store.events()))
    phone = Player(connect(browser_id="phone-31"))
    phone.refused("join", {"study": "ctl", "pid": "evicted"}, "another browser")
    assert len(list(store.events())) == logged                           # a refusal is no study event
    [listed] = [b for b in monitor_row(app, "ctl")["bound_elsewhere"] if b["pid"] == "pid:evicted"]
    assert 'value="pid:evicted"' in admin(app, "get", "/admin/monitor.html").get_data(as_text=True)

    found = admin(app, "get", "/admin/participants.json?study=ctl&q=EVICT").get_json()
    assert [(p["pid"], p["bound"], p["stage"]) for p in found] == [("pid:evicted", True, "game")]

    answer = admin(app, "post", "/admin/release", json={"study": "ctl", "participant": "pid:evicted"})
    assert answer.status_code == 200 and answer.get_json() == {"released": "pid:evicted", "study": "ctl"}
    assert not laptop.client.is_connected() and not second_tab.client.is_connected()   # evicted at once
    assert not [b for b in monitor_row(app, "ctl")["bound_elsewhere"] if b["pid"] == "pid:evicted"]
    phone.ok("join", {"study": "ctl", "pid": "evicted"})                 # the new device takes it over
    assert phone.state["stage"] == "game"
    assert admin(app, "get", "/admin/participants.json?study=ctl&q=evicted").get_json()[0]["bound"]


def test_a_release_on_one_web_process_closes_the_tabs_on_another(app, tiny_agent_dir, agent_world, tiny_nle_dir,
                                                                  server_dirs):
    """Two web processes' apps on the same Redis and message queue (no in-process workers: no round is
    asked): the owner's tab is on the first, the researcher releases on the second."""
    data_dir, studies = server_dirs
    config = server_config(tiny_agent_dir, agent_world, tiny_nle_dir, data_dir, studies, inprocess_workers=0,
                           message_queue=True, redis_url=app.extensions["exag"].redis.url)
    apps = [create_app(config) for _ in range(2)]
    servers = [LiveServer(web) for web in apps]
    owner = None
    try:
        owner = Bot(servers[0].url, "ctl", "two-processes", arm="both")
        closed = threading.Event()
        owner.client.on("disconnect", lambda *reason: closed.set())
        body = json.dumps({"study": "ctl", "participant": "pid:two-processes"}).encode()
        request = urllib.request.Request(f"{servers[1].url}/admin/release", method="POST", data=body,
                                         headers=TOKEN | {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert json.load(answer) == {"released": "pid:two-processes", "study": "ctl"}
        assert closed.wait(10), "the owner's tab on the other web process was not closed"
        assert owner.replies.get(timeout=5) == ("error", {"event": "release", "message": RELEASED})
    finally:
        if owner is not None:
            owner.close()
        for server, web in zip(servers, apps):
            server.stop()
            web.extensions["socketio"].server.manager.close()
            web.extensions["exag"].close()


TOO_DEEP = "[" * 50_000
NEVER = {**VALID, "study_id": "never-created"}      # valid but for the one field each case breaks
MALFORMED = [                      # (method, url, request arguments): each a 400 with its reason
    ("post", "/admin/studies", {"json": {"config": 5}}),
    ("post", "/admin/studies", {"json": {"config": ["a"]}}),
    ("post", "/admin/studies", {"json": {}}),
    ("post", "/admin/studies", {"json": [1, 2]}),
    ("post", "/admin/studies", {"data": "{not json", "content_type": "application/json"}),
    ("post", "/admin/studies", {"data": TOO_DEEP, "content_type": "application/json"}),
    ("post", "/admin/studies", {"json": {"config": TOO_DEEP}}),
    ("post", "/admin/studies", {"json": {"config": {**NEVER, "sessions": "4"}}}),
    ("post", "/admin/studies", {"json": {"config": {**NEVER, "sessions": 10 ** 30}}}),
    ("post", "/admin/studies", {"json": {"config": {**NEVER, "games_per_session": 1e308}}}),
    ("post", "/admin/studies", {"json": {"config": {**NEVER, "arms": 5}}}),
    ("post", "/admin/studies", {"json": {"config": {**NEVER, "arms": [["none"]]}}}),
    ("post", "/admin/studies", {"json": {"config": {**NEVER, "study_id": ["x"]}}}),
    ("post", "/admin/studies", {"json": {"config": {**NEVER, "kind": {"a": 1}}}}),
    ("post", "/admin/studies", {"json": {"config": {**NEVER, "settings": [1]}}}),
    ("post", "/admin/studies", {"json": {"config": {**NEVER, "settings": {"images": 10 ** 12}}}}),
    ("post", "/admin/studies", {"json": {"config": {**NEVER, "settings": {"images": "20"}}}}),
    ("post", "/admin/studies", {"json": {"config": {**NEVER, "checks": "attention"}}}),
    ("post", "/admin/studies", {"json": {"config": {**NEVER, "preregistration": [1]}}}),
    ("post", "/admin/studies", {"json": {"config": {**NEVER, "order": None}}}),
    ("post", "/admin/studies", {"json": {"config": {**NEVER, "completion_code": 5}}}),
    ("post", "/admin/studies", {"json": {"config": {**NEVER, "title": "x" * 60_000}}}),
    ("post", "/admin/studies", {"json": {"config": {**NEVER, "choose_arm": "yes"}}}),
    ("post", "/admin/studies", {"data": {"config": "x" * 60_000}}),
    ("post", "/admin/studies/check", {"json": {"config": 5}}),
    ("post", "/admin/studies/check", {"json": ["config"]}),
    ("post", "/admin/studies/check", {"data": TOO_DEEP, "content_type": "application/json"}),
    ("post", "/admin/release", {"json": {"study": 5, "participant": "pid:x"}}),
    ("post", "/admin/release", {"json": {"study": "ctl", "participant": ["pid:x"]}}),
    ("post", "/admin/release", {"json": {"study": "ctl"}}),
    ("post", "/admin/release", {"json": "ctl"}),
    ("post", "/admin/release", {"data": {}}),
    ("post", "/admin/release", {"json": {"study": "ctl", "participant": "p" * 50_000}}),
    ("post", "/admin/release", {"json": {"study": "../etc", "participant": "pid:x"}}),
    ("post", "/admin/raters", {"json": {"raters": 5}}),
    ("post", "/admin/raters", {"json": {"raters": [5]}}),
    ("post", "/admin/raters", {"json": {"raters": {"r1": "r2"}}}),
    ("post", "/admin/raters", {"json": {"raters": None}}),
    ("post", "/admin/raters", {"json": [1]}),
    ("post", "/admin/raters", {"json": {"raters": [f"r{i}" for i in range(501)]}}),
    ("post", "/admin/raters", {"json": {"raters": "x" * 60_000}}),
    ("post", "/admin/raters", {"data": {}}),
    ("get", "/admin/export.zip?format=xlsx", {}),
    ("get", "/admin/export.zip?format=" + "x" * 5000, {}),
    ("get", "/admin/participants.json", {}),
    ("get", "/admin/participants.json?study=../etc", {}),
    ("get", "/admin/participants.json?study=ctl&q=" + "x" * 500, {}),
]


@pytest.mark.parametrize("method, url, arguments", MALFORMED, ids=lambda v: str(v)[:60] if isinstance(v, str) else None)
def test_a_malformed_admin_request_is_refused_with_400_and_its_reason(app, method, url, arguments):
    answer = admin(app, method, url, **arguments)
    assert answer.status_code == 400, answer.get_data(as_text=True)[:300]
    reason = answer.get_json()["error"]
    assert isinstance(reason, str) and 10 < len(reason) <= 1200


def test_a_malformed_form_post_is_answered_on_the_page_with_its_config(app):
    sent = json.dumps({**VALID, "sessions": 2})
    page = app.test_client().post("/admin/studies?token=test-admin", data={"config": sent})
    text = page.get_data(as_text=True)
    assert page.status_code == 400 and "<p><b>Not created: controlled studies have at least 4 sessions" in text
    assert "&#34;sessions&#34;: 2" in text or "&quot;sessions&quot;: 2" in text or '"sessions": 2' in text
    raters = app.test_client().post("/admin/raters?token=test-admin", data={"raters": ""})
    assert raters.status_code == 400 and "No links issued" in raters.get_data(as_text=True)


def test_what_is_not_there_is_answered_404_with_its_reason(app):
    for method, url in (("get", "/admin/report?study=" + "x" * 5000), ("get", "/admin/report"),
                        ("post", "/admin/studies/no-such-study/close"), ("post", "/admin/studies/ctl/delete"),
                        ("get", "/admin/participants.json?study=no-such-study")):
        answer = admin(app, method, url)
        assert answer.status_code == 404 and len(answer.get_json()["error"]) > 10, url
    unknown = admin(app, "post", "/admin/release", json={"study": "ctl", "participant": "pid:nobody"})
    assert unknown.status_code == 404 and "Not released" in unknown.get_json()["error"]
