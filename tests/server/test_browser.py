"""Debian's Chromium, driven by Playwright, plays a whole controlled session (5 games) and an at-will
game with bought explanations through the real page and server; then the exported events are checked."""
from __future__ import annotations

import json

import pytest
from chromium import TIMEOUT_MS, ask, needs_chromium

from game.export import tables
from game.settings import RATINGS

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = needs_chromium


def rate(page, rating: str) -> None:
    page.click(f'button.rating[data-rating="{rating}"]')
    sync_api.expect(page.locator("#question")).to_be_enabled(timeout=TIMEOUT_MS)


def guess_first(page) -> bool:
    page.locator("button.tile").first.click()
    page.click("#guess")
    outcome = page.locator("#outcome")
    sync_api.expect(outcome).to_be_visible(timeout=TIMEOUT_MS)
    return outcome.get_attribute("data-won") == "true"


def open_game(browser, url: str, errors: list[str]):
    """A new page at `url`, through consent and instructions to the first game; page errors collected."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    page.click("#consent-agree")
    page.click("#begin")
    return page


def test_controlled_session_and_at_will_game_in_chromium(browser, live_server):
    errors = []
    page = open_game(browser, f"{live_server.url}/?study=ctl5&pid=browser-1&arm=both", errors)
    for number in range(5):
        sync_api.expect(page.locator("#stage")).to_have_attribute("data-stage", "game")
        sync_api.expect(page.locator("button.tile")).to_have_count(5)
        ask(page, "Is there a red cube?")
        assert page.locator("#history li.round .answer").last.inner_text().strip() in ("yes", "no")
        assert page.locator(".explanation").count() == 0          # session 1: without explanations
        rate(page, RATINGS[number % 5])
        guess_first(page)
        page.click("#next-game")
        sync_api.expect(page.locator("#history li.round")).to_have_count(0)   # the next game is on screen
    # session 2 shows the arm's explanations (attention and related Q&As) on every image
    # markup in a question is shown as text (a script payload's words are outside the world: refused)
    ask(page, "<i>how many spheres are there?</i>")
    assert "<i>how many" in page.locator("#history li.round .question").last.inner_text()
    assert page.locator('.explanation[data-kind="attention"]').count() >= 5
    assert page.locator('.explanation[data-kind="qa_pairs"]').count() >= 5
    page.reload()                                                  # a refresh resumes the exact game
    sync_api.expect(page.locator("#history li.round")).to_have_count(1)
    sync_api.expect(page.locator("button.rating").first).to_be_enabled()
    page.keyboard.press("2")                                       # ratings work from the keyboard
    sync_api.expect(page.locator("#question")).to_be_enabled()
    # another browser (its own cookies) with the same participant id is refused, and sees no game
    other = browser.new_page()
    other.on("pageerror", lambda error: errors.append(str(error)))
    other.goto(f"{live_server.url}/?study=ctl5&pid=browser-1&arm=both")
    sync_api.expect(other.locator("#stage")).to_contain_text("already open in another browser", timeout=TIMEOUT_MS)
    assert other.locator("button.tile").count() == 0
    other.close()

    at_will = open_game(browser, f"{live_server.url}/?study=aw&pid=browser-2", errors)
    sync_api.expect(at_will.locator("button.tile")).to_have_count(20)
    points = at_will.locator("#points").inner_text()
    ask(at_will, "What color is the large sphere?")
    at_will.click("#explain")
    for kind in ("attention", "words", "qa_pairs", "text"):
        sync_api.expect(at_will.locator(f'.explanation[data-kind="{kind}"]').first).to_be_visible()
    assert at_will.locator("#points").inner_text() != points
    rate(at_will, RATINGS[0])
    ask(at_will, "Is there a cylinder?")
    at_will.click("#explain")
    sync_api.expect(at_will.locator('.secret-panel .explanation[data-kind="words"]')).to_be_visible()
    rate(at_will, RATINGS[1])
    # the state carries only the latest round's explanations: the page kept the first round's ...
    at_will.click('#history button[data-round="0"]')
    sync_api.expect(at_will.locator("#show-latest")).to_be_visible()
    sync_api.expect(at_will.locator(".secret-panel .hint")).to_contain_text("For question 1")
    at_will.click("#show-latest")
    # ... and after a reload fetches them from the server (`history`) when the player opens them
    at_will.reload()
    sync_api.expect(at_will.locator("#history li.round")).to_have_count(2)
    sync_api.expect(at_will.locator(".secret-panel .hint")).to_contain_text("For question 2")
    at_will.click('#history button[data-round="0"]')
    sync_api.expect(at_will.locator(".secret-panel .hint")).to_contain_text("For question 1")
    sync_api.expect(at_will.locator(".showing-round")).to_contain_text("question 1")
    assert at_will.locator('.tile .explanation[data-kind="attention"]').count() == 20
    sync_api.expect(at_will.locator('#history button[data-round="0"]')).to_have_attribute("aria-pressed", "true")
    won = guess_first(at_will)

    # an independent rater opens the researcher's signed link and rates one of the finished game's items
    rater = browser.new_page()
    rater.on("pageerror", lambda error: errors.append(str(error)))
    rater.goto(live_server.url + live_server.app.extensions["exag"].rating.link("browser-rater"))
    sync_api.expect(rater.locator("#progress")).to_contain_text("rated 0 items", timeout=TIMEOUT_MS)
    rater.locator('input[name="explanation_rating"]').first.check()
    rater.locator('input[name="answer_rating"]').first.check()
    rater.click("#rate-submit")
    sync_api.expect(rater.locator("#progress")).to_contain_text("rated 1 item", timeout=TIMEOUT_MS)
    rater.goto(f"{live_server.url}/rate?rater=self-chosen")           # no signed link: no rating
    sync_api.expect(rater.locator("#rate")).to_contain_text("personal rating link", timeout=TIMEOUT_MS)
    assert not errors, errors

    events = list(live_server.app.extensions["exag"].store.events())
    exported = tables(events)
    games = exported["games"]
    session = games[(games["participant"] == "pid:browser-1") & games["finished"].notna()]
    assert len(session) == 5 and not session["with_explanations"].any()
    rounds = exported["rounds"]
    mine = rounds[rounds["participant"] == "pid:browser-1"]
    assert len(mine) == 6 and list(mine["rating"][:5]) == [RATINGS[i] for i in range(5)]
    assert mine["rating"].iloc[5] == RATINGS[1]
    aw = games[games["participant"] == "pid:browser-2"].iloc[0]
    assert bool(aw["won"]) == won and aw["spent"] == 6
    shown = exported["explanations"]
    assert set(shown[shown["participant"] == "pid:browser-2"]["explainer"]) == {"attention", "objscene", "relqa", "nle"}
    assert list(exported["rater_ratings"]["rater"]) == ["browser-rater"]


# Participant checks (game/checks.py) as a study configures them; the test knows the right answers, the page never does.
RULES = [{"key": "guesses", "text": "How many guesses do you have in a game?", "options": ["One", "Three"],
          "answer": "One"}]
CHECKED = {"kind": "controlled", "arms": ["none"], "sessions": 4, "games_per_session": 1, "choose_arm": True,
           "settings": {"min_questions": 0}, "completion_code": "CODE-CHECKED"}


def create_study(page, url: str, study_id: str, checks: dict) -> None:
    """Through the admin form, as a researcher would."""
    answer = page.request.post(f"{url}/admin/studies?token=test-admin", max_redirects=0,
                               form={"config": json.dumps({"study_id": study_id, **CHECKED, "checks": checks})})
    assert answer.status == 302, answer.text()


def painted(page) -> int:
    """Painted pixels of the first colour plate."""
    return page.evaluate("""() => { const c = document.querySelector("canvas.plate-canvas");
        const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; }""")


def test_participant_checks_in_chromium(browser, live_server):
    errors, url = [], live_server.url
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_default_timeout(TIMEOUT_MS)
    create_study(page, url, "chk-out", {"comprehension": {"questions": RULES, "on_fail": "screen_out"},
                                         "screen_out": {"code": "SCREENED-7", "url": "https://example.org/out"}})
    create_study(page, url, "chk", {"comprehension": {"questions": RULES}, "attention": {"every": 2},
                                     "colour_screen": {"plates": [12, 8], "min_correct": 1}, "demographics": {}})
    stage = page.locator("#stage")

    # fails the comprehension check twice (a reload in between) and is screened out, as configured
    page.goto(f"{url}/?study=chk-out&pid=checks-1&arm=none")
    page.click("#consent-agree")
    page.click("#begin")
    sync_api.expect(stage).to_have_attribute("data-stage", "comprehension")
    page.check('fieldset[data-key="guesses"] input[value="Three"]')
    page.click("#comprehension-submit")
    sync_api.expect(page.locator("#comprehension-retry")).to_be_visible()    # back to the instructions
    page.click("#begin")
    page.reload()                                                            # resumes at the questions
    sync_api.expect(stage).to_have_attribute("data-stage", "comprehension")
    page.check('fieldset[data-key="guesses"] input[value="Three"]')
    page.click("#comprehension-submit")
    sync_api.expect(stage).to_have_attribute("data-stage", "screened_out")
    sync_api.expect(page.locator("#screened-out-code")).to_have_text("SCREENED-7")
    sync_api.expect(page.locator("#screened-out-redirect")).to_have_attribute("href", "https://example.org/out")

    # passes, reads the colour plates (a reload redraws them), answers an attention check and the demographics
    page.goto(f"{url}/?study=chk&pid=checks-2&arm=none")
    page.click("#consent-agree")
    page.click("#begin")
    page.check('fieldset[data-key="guesses"] input[value="One"]')
    page.click("#comprehension-submit")
    sync_api.expect(stage).to_have_attribute("data-stage", "colour_screen")
    sync_api.expect(page.locator("canvas.plate-canvas")).to_have_count(2)
    drawn = painted(page)
    page.reload()
    sync_api.expect(page.locator("canvas.plate-canvas")).to_have_count(2)
    assert drawn > 10_000 and painted(page) == drawn
    page.fill("#plate-0", "12")                          # the second left empty: 1 of 2, the rule's minimum
    page.click("#colour-submit")
    for number in range(4):
        sync_api.expect(stage).to_have_attribute("data-stage", "game")
        guess_first(page)
        page.click("#next-game")
        if number == 1:                                  # after every 2 games
            sync_api.expect(stage).to_have_attribute("data-stage", "attention_check")
            page.check('input[value="Purple"]')          # the answer the question states
            page.click("#attention-submit")
    sync_api.expect(stage).to_have_attribute("data-stage", "questionnaire")
    for item in page.locator("fieldset.question-item").all():
        item.locator("input").last.check()               # the demographics' last option: "Prefer not to say"
    page.click("#questionnaire-submit")
    sync_api.expect(stage).to_have_attribute("data-stage", "done")
    assert not errors, errors

    participants = tables(live_server.app.extensions["exag"].store.events())["participants"].set_index("participant")
    out, passed = participants.loc["pid:checks-1"], participants.loc["pid:checks-2"]
    assert out["screened_out"] == "comprehension" and out["comprehension_failures"] == 2
    assert "comprehension_failed" in out["flags"].split("+")
    assert passed["comprehension_passed"] and passed["comprehension_failures"] == 0
    assert passed["colour_screen_correct"] == 1 and passed["colour_screen_passed"]
    assert (passed["attention_passed"], passed["attention_total"]) == (1, 1)
    assert passed["demo_age"] == "Prefer not to say" and passed["q_trust"] == "Strongly agree"
    assert not {"comprehension_failed", "attention_failed", "colour_screen_failed"} & set(str(passed["flags"]).split("+"))
