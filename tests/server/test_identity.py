"""Issue 10, finding 4: the participant id is not the only credential. A participation is bound to the
browser that began it (an HttpOnly cookie the game page gives) and to the platform's session id; the
researcher can release it; rater ids come only from links the researcher issues, one browser one rater."""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from socket_player import Player, Rater, guessed_to_the_end, started

from game.export import tables
from game.settings import RATINGS
from game.study import StudyConfig
from server import browser

PROLIFIC = {"study": "realb", "PROLIFIC_PID": "5f0c1d", "STUDY_ID": "st-1", "SESSION_ID": "sess-1"}


def browser_at(app, url: str):
    """A browser that opened `url` (the game or rating page) and got its cookie from the server."""
    http = app.test_client()
    page = http.get(url)
    assert page.status_code == 200
    return http, page


def socket_in(app, http) -> Player:
    return Player(app.extensions["socketio"].test_client(app, flask_test_client=http))


@pytest.fixture
def tab(app):
    """Socket.IO tabs in browsers a test made (browser_at), closed after the test: an address holds at most
    max_connections_per_address at once."""
    opened = []

    def make(http) -> Player:
        opened.append(socket_in(app, http))
        return opened[-1]

    yield make
    for player in opened:
        if player.client.is_connected():
            player.client.disconnect()


def test_the_game_page_gives_each_browser_an_httponly_cookie_once(app):
    http, page = browser_at(app, "/?study=realb&PROLIFIC_PID=x&SESSION_ID=y")
    cookie = page.headers["Set-Cookie"]
    assert cookie.startswith(f"{browser.COOKIE}=") and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert "Set-Cookie" not in http.get("/?study=realb").headers          # the browser keeps its id
    assert browser.COOKIE in app.test_client().get("/rate").headers["Set-Cookie"]


def test_an_impostor_with_the_same_participant_id_is_refused_and_the_owner_resumes(app):
    owner_http, _ = browser_at(app, "/?study=realb&PROLIFIC_PID=5f0c1d&STUDY_ID=st-1&SESSION_ID=sess-1")
    owner = socket_in(app, owner_http)
    owner.ok("join", PROLIFIC)
    owner.ok("consent", {"agree": True})
    owner.ok("begin", {})
    gid = owner.game["game_id"]
    owner.ok("ask", {"game_id": gid, "question": "is there a red cube?"})
    before = owner.state

    impostor_http, _ = browser_at(app, "/?study=realb")                   # another browser, another cookie
    impostor = socket_in(app, impostor_http)
    impostor.refused("join", PROLIFIC, "already open in another browser")   # even with the owner's session
    assert impostor.state is None                                        # nothing of the owner's game was shown
    impostor.refused("rate", {"game_id": gid, "rating": RATINGS[0]}, "join the study first")
    impostor.refused("guess", {"game_id": gid, "image": before["game"]["images"][0]}, "join the study first")

    # the owner's browser resumes the exact game and plays on
    owner.client.disconnect()
    back = socket_in(app, owner_http)
    back.ok("join", PROLIFIC)
    assert back.state == before
    back.ok("rate", {"game_id": gid, "rating": RATINGS[1]})
    store = app.extensions["exag"].store
    assert [e["type"] for e in store.events() if e["game"] == gid and e["type"] != "rejoin"] == \
        ["game_start", "question", "rating"]

    # MTurk: the assignment is the session
    worker = {"study": "realb", "workerId": "A1B2", "assignmentId": "as-1", "hitId": "h-1"}
    Player(app.extensions["socketio"].test_client(app, flask_test_client=owner_http)).ok("join", worker)
    other = socket_in(app, browser_at(app, "/?study=realb")[0])
    other.refused("join", worker, "another browser")


def test_knowing_a_platform_id_does_not_lock_its_owner_out(app, tab):
    """Issue 44: whoever joined first with a participant's PROLIFIC_PID bound it, and its owner was locked out
    until the researcher released it. A participation is keyed by the platform's session id too, which the
    platform gives the participant alone: a squatter who guesses it wrong plays a participation of their own,
    the owner joins with theirs, and the console lists the id as joined under several sessions. Issue 51: the
    platform id is claimed at consent, so a squatter's join blocks nobody, and once the owner consented the
    squatter's participation cannot consent (one person, one participation)."""
    owned = {**PROLIFIC, "PROLIFIC_PID": "7a7a"}
    squatter = tab(browser_at(app, "/?study=realb")[0])
    squatter.ok("join", {**owned, "SESSION_ID": "guessed"})

    owner_http, _ = browser_at(app, "/?study=realb&PROLIFIC_PID=7a7a&STUDY_ID=st-1&SESSION_ID=sess-1")
    owner = tab(owner_http)
    owner.ok("join", owned)
    assert owner.state["participant"]["pid"] == "prolific:7a7a:sess-1"
    assert squatter.state["participant"]["pid"] == "prolific:7a7a:guessed"
    owner.ok("consent", {"agree": True})
    owner.ok("begin", {})
    squatter.refused("consent", {"agree": True}, "already taking part under another session")
    assert app.extensions["exag"].store.participant("realb", "prolific:7a7a:guessed")["stage"] == "consent"
    tab(browser_at(app, "/?study=realb")[0]).refused("join", owned, "already open in another browser")

    row = next(r for r in app.test_client().get("/admin/monitor.json?token=test-admin").get_json()
               if r["study"]["study_id"] == "realb")
    assert row["several_sessions"] == ["prolific:7a7a"]
    assert any("more than one platform session: prolific:7a7a" in w for w in row["warnings"])

    # MTurk's assignment is its session in the same way
    worker = {"study": "realb", "workerId": "A9", "assignmentId": "guessed", "hitId": "h-1"}
    tab(browser_at(app, "/?study=realb")[0]).ok("join", worker)
    mturk_owner = tab(browser_at(app, "/?study=realb")[0])
    mturk_owner.ok("join", {**worker, "assignmentId": "as-9"})
    assert mturk_owner.state["participant"]["pid"] == "mturk:A9:as-9"


def test_the_researcher_releases_a_participant_who_changed_device(app, connect):
    laptop = started(connect, "ctl", "mover", arm="both")
    gid = laptop.game["game_id"]
    laptop.ok("ask", {"game_id": gid, "question": "is there a sphere?"})
    before = laptop.state
    phone = Player(connect(browser_id="phone"))
    phone.refused("join", {"study": "ctl", "pid": "mover"}, "ask the researcher to release it")

    admin = app.test_client()
    assert admin.post("/admin/release", data={"study": "ctl", "participant": "pid:mover"}).status_code == 403
    page = admin.get("/admin?token=test-admin")                       # the monitor offers the release
    assert b'action="/admin/release"' in page.data and b'value="pid:mover"' in page.data
    missing = admin.post("/admin/release", data={"study": "ctl", "participant": "pid:nobody"})
    assert missing.status_code == 404 and b"Not released" in missing.data
    assert admin.post("/admin/release", data={"study": "ctl", "participant": "pid:mover"}).status_code == 302
    assert not laptop.client.is_connected()                           # the old binding's tab is closed at once
    store = app.extensions["exag"].store
    assert store.participant("ctl", "pid:mover")["binding"] is None
    released = [e for e in store.events() if e["type"] == "release" and e["participant"] == "pid:mover"]
    assert len(released) == 1 and released[0]["study"] == "ctl" and released[0]["game"] == gid

    # the next join, from the new device, takes the participation over; the old browser is now the other one
    phone.ok("join", {"study": "ctl", "pid": "mover"})
    assert phone.state == before
    phone.ok("rate", {"game_id": gid, "rating": RATINGS[0]})
    Player(connect()).refused("join", {"study": "ctl", "pid": "mover"}, "another browser")
    phone.ok("join", {"study": "ctl", "pid": "mover"})
    assert len(phone.game["rounds"]) == 1


def test_a_join_without_the_browser_cookie_is_refused(app, connect):
    for payload in ({"study": "ctl", "pid": "no-cookie"}, {"study": "aw"}, dict(PROLIFIC, PROLIFIC_PID="nc")):
        player = Player(connect(browser_id=None))
        player.refused("join", payload, "allow cookies")
        assert player.state is None
    store = app.extensions["exag"].store
    assert store.participant("ctl", "pid:no-cookie") is None and store.participant("realb", "prolific:nc") is None


def finished_game_with_explanations(connect, pid: str) -> str:
    player = started(connect, "aw", pid)
    gid = player.game["game_id"]
    player.ok("ask", {"game_id": gid, "question": "what color is the cube?"})
    player.ok("explain", {"game_id": gid})
    player.ok("rate", {"game_id": gid, "rating": RATINGS[0]})
    player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})
    return gid


def rater_events(app, rater: str) -> list[dict]:
    return [e for e in app.extensions["exag"].store.events() if e["type"] == "rater_rating" and e["rater"] == rater]


def test_unsigned_and_forged_rater_ids_are_refused(app, connect):
    finished_game_with_explanations(connect, "rated-1")
    vote = {"explanation_rating": "Mostly on-point", "answer_rating": "correct"}
    http, _ = browser_at(app, "/rate?rater=sybil-a1")
    for rater in ("sybil-a1", "sybil-a2", "sybil-a3"):                 # self-chosen ids, as in the finding
        unsigned = http.get(f"/api/rate/next?rater={rater}")
        assert unsigned.status_code == 403 and "not valid" in unsigned.get_json()["error"]
    item = app.extensions["exag"].rating.next_item("someone")["item"]
    for rater in ("sybil-a1", "sybil-a2", "sybil-a3"):
        assert http.post("/api/rate", json={"rater": rater, "item": item, **vote}).status_code == 403
    sig = parse_qs(urlsplit(app.extensions["exag"].rating.link("a-real-rater")).query)["sig"][0]   # a real one ...
    forged = [{"rater": "sybil-a1", "sig": sig},                        # ... on another id
              {"rater": "sybil-a1", "sig": "A" * len(sig)}, {"rater": "sybil-a1", "sig": ""}]
    for link in forged:
        assert http.get("/api/rate/next", query_string=link).status_code == 403
        assert http.post("/api/rate", json={**link, "item": item, **vote}).status_code == 403
    assert http.get("/api/rate/next?rater=<bad>&sig=x").status_code == 400
    assert not any(rater_events(app, f"sybil-a{i}") for i in (1, 2, 3))


def test_one_browser_is_one_rater(app, connect):
    finished_game_with_explanations(connect, "rated-2")
    first = Rater(app, "solo-1")
    item = first.next().get_json()["item"]
    assert first.rate(item).get_json() == {"ok": True}
    # the same browser with another genuine rater link cannot act as a second rater
    second_in_same_browser = Rater(app, "solo-2", http=first.http)
    refused = second_in_same_browser.next()
    assert refused.status_code == 403 and "one browser is one rater" in refused.get_json()["error"]
    assert second_in_same_browser.rate(item).status_code == 403
    assert first.next().status_code == 200                              # still its own rater
    # the second rater in a browser of their own rates normally
    assert Rater(app, "solo-2").rate(item).get_json() == {"ok": True}
    assert [len(rater_events(app, r)) for r in ("solo-1", "solo-2")] == [1, 1]


def test_the_researcher_issues_rater_links_that_work(app, connect):
    gid = finished_game_with_explanations(connect, "rated-3")
    admin = app.test_client()
    assert admin.post("/admin/raters", data={"raters": "lab-1"}).status_code == 403
    issued = admin.post("/admin/raters", json={"raters": ["lab-1", "lab-2"]}, headers={"X-Admin-Token": "test-admin"})
    links = issued.get_json()["links"]
    assert set(links) == {"lab-1", "lab-2"} and all("sig=" in link and "/rate?" in link for link in links.values())
    page = admin.post("/admin/raters", data={"raters": "lab-1, lab-3", "token": "test-admin"})
    assert page.status_code == 200 and b"lab-3" in page.data
    assert links["lab-1"].replace("&", "&amp;").encode() in page.data          # the page lists the same link
    assert admin.post("/admin/raters", data={"raters": "<bad>", "token": "test-admin"}).status_code == 400

    rater = Rater(app, "lab-1", link=links["lab-1"].removeprefix("http://localhost"))
    seen = []
    while True:
        nxt = rater.next().get_json()
        if nxt.get("done"):
            break
        assert rater.rate(nxt["item"], "Exactly on-point", "somewhat correct").get_json() == {"ok": True}
        seen.append(nxt["item"])
    assert seen and any(e["game"] == gid for e in rater_events(app, "lab-1"))
    assert {e["answer_rating"] for e in rater_events(app, "lab-1")} == {"somewhat correct"}


def test_a_study_with_its_prolific_id_takes_only_its_own_prolific_links(app):
    """`prolific_study_id`: a join must carry that STUDY_ID and a SESSION_ID, so every participation has the
    session Prolific gave its participant (and a link of another Prolific study is refused)."""
    store = app.extensions["exag"].store
    store.save_study(StudyConfig("on-prolific", arms=("none", "both"), prolific_study_id="60a1"), "open",
                     {"type": "study_created", "study": "on-prolific"}, only_if_new=True)
    link = {"study": "on-prolific", "PROLIFIC_PID": "p1", "STUDY_ID": "60a1", "SESSION_ID": "s1"}
    for refused in ({**link, "STUDY_ID": "other"}, {k: v for k, v in link.items() if k != "SESSION_ID"},
                    {"study": "on-prolific", "pid": "p1"}):
        socket_in(app, browser_at(app, "/?study=on-prolific")[0]).refused("join", refused, "open the study from Prolific")
    joined = socket_in(app, browser_at(app, "/?study=on-prolific")[0])
    joined.ok("join", link)
    assert joined.state["participant"]["pid"] == "prolific:p1:s1"
    with pytest.raises(ValueError, match="prolific_study_id"):
        StudyConfig("s", prolific_study_id="no spaces allowed")


# --- issue 51: one person, one participation -------------------------------------------------------------

def prolific(pid: str, session: str) -> dict:
    return {"study": "quick", "PROLIFIC_PID": pid, "STUDY_ID": "st-q", "SESSION_ID": session}


def played_to_the_end(player: Player) -> None:
    """A participation of `quick` (4 games, guesses without questions) from consent to its completion code."""
    player.ok("consent", {"agree": True})
    player.ok("begin", {})
    guessed_to_the_end(player)


def participants_exported(app, study: str):
    rows = tables(app.extensions["exag"].store.events())["participants"]
    return rows[rows["study"] == study].set_index("participant")


def test_a_finished_participant_cannot_take_the_study_again_under_another_session(app, tab):
    """Found from outside: a finished Prolific participant edited SESSION_ID in the link and took the study again,
    with a fresh consent and a fresh arm. A platform id that consented starts no other session of the study, from
    any browser, and the refusal is no study event; the researcher's release of the consented participation
    allows the next one, and the export flags both."""
    store = app.extensions["exag"].store
    first_http, _ = browser_at(app, "/?study=quick")
    first = tab(first_http)
    first.ok("join", prolific("again1", "s-1"))
    played_to_the_end(first)
    logged = len(list(store.events()))
    for http in (first_http, browser_at(app, "/?study=quick")[0]):     # the same browser, and another
        again = tab(http)
        again.refused("join", prolific("again1", "s-2"), "already taken part in this study under another session")
        assert again.state is None
    assert store.participant("quick", "prolific:again1:s-2") is None and len(list(store.events())) == logged
    back = tab(first_http)
    back.send("join", prolific("again1", "s-1"))                        # their own link still shows their code
    assert back.state["stage"] == "done" and back.state["done"]["completion_code"] == "CODE-QUICK"

    # a participation still going on: the other session is told so, and the console offers the release
    going = tab(browser_at(app, "/?study=quick")[0])
    going.ok("join", prolific("going1", "s-1"))
    going.ok("consent", {"agree": True})
    tab(browser_at(app, "/?study=quick")[0]).refused("join", prolific("going1", "s-2"),
                                                                "already taking part under another session")
    monitor = next(r for r in app.test_client().get("/admin/monitor.json?token=test-admin").get_json()
                   if r["study"]["study_id"] == "quick")
    assert "prolific:going1:s-1" in [b["pid"] for b in monitor["bound_elsewhere"]]

    # the researcher releases the finished participation: its platform id may begin another session
    admin = app.test_client()
    released = admin.post("/admin/release", json={"study": "quick", "participant": "prolific:again1:s-1"},
                          headers={"X-Admin-Token": "test-admin"})
    assert released.get_json() == {"released": "prolific:again1:s-1", "study": "quick"}
    second = tab(browser_at(app, "/?study=quick")[0])
    second.ok("join", prolific("again1", "s-2"))
    second.ok("consent", {"agree": True})
    rows = participants_exported(app, "quick")
    for pid in ("prolific:again1:s-1", "prolific:again1:s-2"):
        assert rows.loc[pid, "several_sessions"] and "several_sessions" in rows.loc[pid, "flags"].split("+")
    assert not rows.loc["prolific:going1:s-1", "several_sessions"]


def test_a_join_with_the_platform_id_alone_flags_nobody(app, tab):
    """Someone who knows a PROLIFIC_PID but not its session joins a participation of their own: it cannot consent
    once the owner did, and a join without consent raises no flag on the owner."""
    owner = tab(browser_at(app, "/?study=quick")[0])
    squatter = tab(browser_at(app, "/?study=quick")[0])
    squatter.ok("join", prolific("owned2", "guessed"))
    owner.ok("join", prolific("owned2", "s-1"))
    owner.ok("consent", {"agree": True})
    squatter.refused("consent", {"agree": True}, "under another session")
    rows = participants_exported(app, "quick")
    assert rows.loc["prolific:owned2:s-1", "flags"] == ""
    assert not rows.loc["prolific:owned2:guessed", "several_sessions"]


def test_one_browser_with_several_platform_ids_is_flagged(app, tab):
    """Several Prolific accounts taken part from one browser: each is a platform id of its own, so the server
    cannot refuse them; the export flags every participation of the study that shares a consenting browser."""
    http, _ = browser_at(app, "/?study=quick")
    for pid in ("acct-a", "acct-b"):
        player = tab(http)
        player.ok("join", prolific(pid, "s-1"))
        player.ok("consent", {"agree": True})
    tab(http).ok("join", prolific("acct-c", "s-1"))          # joined, never consented: no participation
    elsewhere = tab(browser_at(app, "/?study=quick")[0])
    elsewhere.ok("join", prolific("acct-d", "s-1"))
    elsewhere.ok("consent", {"agree": True})
    rows = participants_exported(app, "quick")
    shared = [bool(rows.loc[f"prolific:{p}:s-1", "shared_browser"]) for p in ("acct-a", "acct-b", "acct-c", "acct-d")]
    assert shared == [True, True, False, False]
    assert "shared_browser" in rows.loc["prolific:acct-a:s-1", "flags"].split("+")
    assert rows.loc["prolific:acct-a:s-1", "browsers"] == rows.loc["prolific:acct-b:s-1", "browsers"] != \
        rows.loc["prolific:acct-d:s-1", "browsers"]


def test_mturk_preview_is_no_session(app, tab):
    """MTurk opens the HIT's page in preview with assignmentId ASSIGNMENT_ID_NOT_AVAILABLE: that is nobody's
    session, refused with what to do, and no participation is made."""
    player = tab(browser_at(app, "/?study=realb")[0])
    preview = {"study": "realb", "assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "h-1"}
    for payload in ({**preview, "workerId": "W-preview"}, preview):
        player.refused("join", payload, "accept the HIT")
    assert player.state is None
    assert app.extensions["exag"].store.participant("realb", "mturk:W-preview:ASSIGNMENT_ID_NOT_AVAILABLE") is None


def test_a_cookie_the_server_did_not_sign_is_no_browser(app, tab):
    """Any cookie value was a browser id. The page's cookie is signed by the server (server/browser.py); a made-up
    one, an edited one, or another id under a real signature is no browser: the page gives a new one, a join is
    refused as without a cookie, the rating API as well."""
    http, page = browser_at(app, "/?study=ctl")
    genuine = page.headers["Set-Cookie"].split(";")[0].split("=", 1)[1]
    browser_id, _, signature = genuine.rpartition(".")
    edited = genuine[:-1] + ("A" if genuine[-1] != "A" else "B")
    forged = ["browser-1", "test-browser-1", edited, f"someone-else.{signature}", f"{browser_id}x.{signature}"]
    for cookie in forged:
        http.set_cookie(browser.COOKIE, cookie)
        assert browser.COOKIE in http.get("/?study=ctl").headers.get("Set-Cookie", "")     # a new one replaces it
        http.set_cookie(browser.COOKIE, cookie)                                             # the forger's again
        player = tab(http)
        player.refused("join", {"study": "ctl", "pid": "forger", "arm": "none"}, "allow cookies")
        assert player.state is None
        link = parse_qs(urlsplit(app.extensions["exag"].rating.link("forger-rater")).query)
        rating = http.get("/api/rate/next", query_string={k: v[0] for k, v in link.items()})
        assert rating.status_code == 403 and "cookie" in rating.get_json()["error"]
    assert app.extensions["exag"].store.participant("ctl", "pid:forger") is None
    http.set_cookie(browser.COOKIE, genuine)
    tab(http).ok("join", {"study": "ctl", "pid": "forger", "arm": "none"})
