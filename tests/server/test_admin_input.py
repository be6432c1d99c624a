"""An admin's input never runs code or breaks the server (issue 44): a study arm that names a module
nobody installed is refused without importing it, a malformed id is refused with 400 or 404 (never a
500), and a client that asks for JSON gets JSON with the reason, refusals and successes alike."""
from __future__ import annotations

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
