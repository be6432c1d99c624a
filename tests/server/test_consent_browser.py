"""Issue 55, the consent form as study data in Debian's Chromium against a real server: the page shows the study's
information sheet (researcher, contact, ethics approval, duration, payment, its paragraphs), agreeing needs every
statement ticked, and declining ends the participation on a page with the platform's "no consent" code and link."""
from __future__ import annotations

import json

import pytest
from chromium import TIMEOUT_MS, needs_chromium, new_page

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = needs_chromium
CONSENT = {"title": "Images and explanations: information and consent",
           "researcher": "Dr A. Researcher, University of Y", "contact": "a.researcher@y.example.ac.uk",
           "ethics": "Y ethics committee, ref. CS-2026-123", "duration_minutes": 20, "payment": "£3",
           "information": ["You play a guessing game with an AI agent.", "We record your moves."],
           "data": "Anonymised records are deposited in a public archive.",
           "statements": ["I am 18 or older.", "I agree that my anonymised records are published."],
           "agree": "Yes, start", "decline": "No, thanks", "declined_message": "Please return the study on Prolific.",
           "declined_code": "NOCONSENT", "declined_url": "https://app.prolific.com/submissions/complete?cc=NOCONSENT"}
STUDY = {"study_id": "consent-page", "kind": "controlled", "arms": ["none"], "sessions": 4, "games_per_session": 1,
         "choose_arm": True, "completion_code": "CODE-C", "consent": CONSENT}


@pytest.fixture(scope="module")
def study(live_server):
    http = live_server.app.test_client()
    assert http.post("/admin/studies?token=test-admin", data={"config": json.dumps(STUDY)}).status_code == 302
    return f"{live_server.url}/?study=consent-page"


def test_the_consent_page_shows_the_studys_sheet_and_agreeing_needs_every_statement(browser, study):
    errors = []
    page = new_page(browser, f"{study}&pid=agrees", errors, width=390, height=844)
    sync_api.expect(page.locator("h1")).to_have_text(CONSENT["title"])
    sheet = page.locator("#stage").inner_text()
    for text in (CONSENT["researcher"], CONSENT["contact"], CONSENT["ethics"], "about 20 minutes", "£3",
                 *CONSENT["information"], CONSENT["data"], *CONSENT["statements"]):
        assert text in sheet, text
    page.click("#consent-agree")                         # nothing ticked: the browser asks, nothing is sent
    page.wait_for_timeout(500)
    assert page.locator("#stage").get_attribute("data-stage") == "consent"
    page.check("#consent-statement-0")
    page.click("#consent-agree")                         # one of two
    page.wait_for_timeout(500)
    assert page.locator("#stage").get_attribute("data-stage") == "consent"
    page.check("#consent-statement-1")
    page.click("#consent-agree")
    sync_api.expect(page.locator("#stage")).to_have_attribute("data-stage", "instructions", timeout=TIMEOUT_MS)
    assert not errors, errors


def test_declining_ends_on_a_page_with_the_platforms_no_consent_code_and_link(browser, study):
    errors = []
    page = new_page(browser, f"{study}&pid=declines", errors)
    page.click("#consent-decline")
    sync_api.expect(page.locator("#stage")).to_have_attribute("data-stage", "declined", timeout=TIMEOUT_MS)
    assert CONSENT["declined_message"] in page.locator("#stage").inner_text()
    assert page.locator("#declined-code").inner_text() == "NOCONSENT"
    assert page.locator("#declined-redirect").get_attribute("href") == CONSENT["declined_url"]
    page.reload()                                         # the decision holds
    sync_api.expect(page.locator("#stage")).to_have_attribute("data-stage", "declined", timeout=TIMEOUT_MS)
    assert not errors, errors
