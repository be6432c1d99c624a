"""An admin's input never runs code or breaks the server (issue 44): a study arm that names a module
nobody installed is refused without importing it, a malformed id is refused with 400 or 404 (never a
500), and a client that asks for JSON gets JSON with the reason, refusals and successes alike. Issue 51: a POST
another site's page sent is refused even with the admin cookie, and a new study's id, redirect and settings are
checked with one line each."""
from __future__ import annotations

import json
import sys

import pytest
from socket_player import started

from game.study import StudyConfig

TOKEN = {"X-Admin-Token": "test-admin", "Accept": "application/json"}
STUDY = {"study_id": "arm-import", "kind": "controlled", "sessions": 4}


@pytest.mark.parametrize("arm", ["this:X", "unittest.__main__:X", "attention+this:Y"])
def test_a_study_arm_never_imports_a_module(app, arm, capfd):
    before = set(sys.modules)
    for route in ("/admin/studies/check", "/admin/studies"):
        answer = app.test_client().post(route, headers=TOKEN, json={"config": {**STUDY, "arms": ["none", arm]}})
        reason = answer.get_json()["error"]
        assert answer.status_code in (200, 400) and "unknown explainer" in reason, reason
        assert "install a plugin as an exag.explainers entry point" in reason and "\n" not in reason
    with pytest.raises(ValueError, match="unknown explainer"):
        StudyConfig("arm-import", arms=("none", arm))
    assert capfd.readouterr().out == ""                        # `import this` prints the Zen of Python
    assert {"this", "unittest.__main__"}.isdisjoint(set(sys.modules) - before)
    assert app.test_client().get("/admin/monitor.json", headers=TOKEN).status_code == 200   # still serving


@pytest.mark.parametrize("body", [
    {"study": "ctl", "participant": "\ud800"},
    {"study": "\ud800", "participant": "pid:x"},
    {"study": "ctl", "participant": "pid:\udfff"},
])
def test_a_lone_surrogate_is_refused_not_a_server_error(app, body):
    for headers in (TOKEN, {"X-Admin-Token": "test-admin"}):
        answer = app.test_client().post("/admin/release", headers=headers, json=body)
        assert answer.status_code == 400 and "lone surrogate" in answer.get_json()["error"]
    answer = app.test_client().post("/admin/raters", headers=TOKEN, json={"raters": ["r\ud800"]})
    assert answer.status_code == 400 and answer.get_json()["error"]
    titled = {"config": {**STUDY, "title": "\ud800"}}
    answer = app.test_client().post("/admin/studies/check", headers=TOKEN, json=titled)
    assert answer.status_code == 400 and answer.get_json()["error"]


@pytest.mark.parametrize("ask", [{"headers": {"Accept": "application/json"}}, {"query": "&format=json"}])
def test_a_json_client_gets_json_refusals_and_answers(app, ask):
    headers, query = {**ask.get("headers", {})}, ask.get("query", "")
    wrong = app.test_client().get(f"/admin/monitor.json?token=wrong{query}", headers=headers)
    assert wrong.status_code == 403 and "admin token" in wrong.get_json()["error"]
    missing = app.test_client().get(f"/admin/no-such-page?token=test-admin{query}", headers=headers)
    assert missing.status_code == 404 and "no admin page" in missing.get_json()["error"]
    gone = app.test_client().post(f"/admin/release?token=test-admin{query}", headers=headers,
                                  data={"study": "ctl", "participant": "pid:nobody"})
    assert gone.status_code == 404 and "has no participant" in gone.get_json()["error"]
    closed = app.test_client().post(f"/admin/studies/ctl/close?token=test-admin{query}", headers=headers)
    assert closed.status_code == 200 and closed.get_json() == {"study": "ctl", "status": "closed"}
    opened = app.test_client().post(f"/admin/studies/ctl/open?token=test-admin{query}", headers=headers)
    assert opened.get_json() == {"study": "ctl", "status": "open"}


def test_a_browser_with_a_wrong_token_gets_no_page_and_no_cookie(app):
    answer = app.test_client().get("/admin?token=wrong", headers={"Accept": "text/html,*/*;q=0.8"})
    assert answer.status_code == 403 and "admin token" in answer.get_data(as_text=True)
    assert "Set-Cookie" not in answer.headers


def test_a_release_sent_as_a_form_answers_json_when_asked(app, connect):
    started(connect, "ctl", "form-released", arm="both")
    answer = app.test_client().post("/admin/release?token=test-admin&format=json",
                                    data={"study": "ctl", "participant": "pid:form-released"})
    assert answer.status_code == 200 and answer.get_json() == {"released": "pid:form-released", "study": "ctl"}


# --- issue 51: another site's POST, and what a new study may be ----------------------------------------------

FOREIGN = [{"Origin": "https://evil.example"}, {"Origin": "null"},
           {"Referer": "https://evil.example/page.html"}, {"Origin": "http://localhost.evil.example"}]


def test_a_post_another_site_sent_with_the_admin_cookie_is_refused_and_the_consoles_own_work(app, connect):
    started(connect, "realb", "riding-1")
    browser = app.test_client()
    assert browser.get("/admin?token=test-admin").status_code == 200          # the console set its cookie
    store = app.extensions["exag"].store
    before = len(list(store.events()))
    config = json.dumps({"study_id": "forged", "kind": "controlled", "arms": ["none"], "sessions": 4})
    for foreign in FOREIGN:
        for url, form in (("/admin/studies/realb/close", {}), ("/admin/studies", {"config": config}),
                          ("/admin/release", {"study": "realb", "participant": "pid:riding-1"}),
                          ("/admin/raters", {"raters": "forged-1"})):
            answer = browser.post(url, data=form, headers=foreign)
            assert answer.status_code == 403 and "another site" in answer.get_data(as_text=True), (url, foreign)
    assert store.study("realb")[1] == "open" and store.study("forged") is None
    assert store.participant("realb", "pid:riding-1")["binding"] is not None
    assert len(list(store.events())) == before

    own = {"Origin": "http://localhost"}                                        # the test client's host
    assert browser.post("/admin/studies/realb/close", headers=own).status_code == 302          # the form
    assert browser.post("/admin/studies/realb/open", headers={"Referer": "http://localhost/admin"}).status_code == 302
    console = browser.post("/admin/studies/check", headers={**own, "Accept": "application/json"},   # console.js
                           json={"config": {"study_id": "own-page", "kind": "controlled", "sessions": 4}})
    assert console.status_code == 200 and console.get_json()["ok"] is True
    # a script holding the token sends no Origin: it needs none
    assert browser.post("/admin/studies/realb/open", headers={"X-Admin-Token": "test-admin"}).status_code == 302


NEW_STUDY = {"study_id": "new-one", "kind": "controlled", "arms": ["none"], "sessions": 4}


@pytest.mark.parametrize("change, reason", [
    ({"redirect_url": "javascript:alert(document.cookie)"}, "redirect_url: an https:// link"),
    ({"redirect_url": "data:text/html,<script>alert(1)</script>"}, "redirect_url: an https:// link"),
    ({"redirect_url": "http://example.org/done"}, "http:// only to localhost"),
    ({"redirect_url": "ftp://example.org/done"}, "redirect_url: an https:// link"),
    ({"redirect_url": " https://example.org/done"}, "redirect_url: an https:// link"),
    ({"redirect_url": "https:///nohost"}, "redirect_url: an https:// link"),
    ({"study_id": "."}, "study_id '.': 1-64 letters"),
    ({"study_id": ".."}, "study_id '..': 1-64 letters"),
    ({"study_id": "admin"}, "and not admin"),
    ({"study_id": "Admin"}, "and not admin"),
    ({"study_id": "-rf"}, "starting with a letter or digit"),
    ({"settings": {"zzz": 1}}, "settings: unknown setting 'zzz'; the settings are images, start_points"),
    ({"settings": {"zzz": 1, "images": 8, "aaa": 2}}, "settings: unknown settings 'aaa', 'zzz'; the settings are"),
])
def test_a_study_that_may_not_be_created_is_refused_in_one_line(app, change, reason):
    config = {**NEW_STUDY, **change}
    checked = app.test_client().post("/admin/studies/check", headers=TOKEN, json={"config": config})
    created = app.test_client().post("/admin/studies", headers=TOKEN, json={"config": config})
    error = checked.get_json()["error"]
    assert checked.status_code == 200 and checked.get_json()["ok"] is False and reason in error, error
    assert created.status_code == 400 and created.get_json()["error"] == f"Not created: {error}"
    assert "\n" not in error and "TypeError" not in error and "unexpected keyword" not in error
    assert app.extensions["exag"].store.study(config["study_id"]) is None


def test_only_an_https_redirect_or_one_to_this_machine_is_accepted(app):
    def check(url: str) -> dict:
        return app.test_client().post("/admin/studies/check", headers=TOKEN, json={"config": {
            **NEW_STUDY, "study_id": "redirected", "redirect_url": url}}).get_json()

    for url in ("https://app.prolific.com/submissions/complete?cc=C0DE", "http://localhost:8000/done",
                "http://127.0.0.1/done", "http://[::1]:5000/done", ""):
        assert check(url)["ok"] is True, (url, check(url))
    assert check("http://example.org/done")["ok"] is False
