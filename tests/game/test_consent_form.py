"""The consent form and the end questionnaire as study data (game/consent_form.py, issue 55): the defaults, a
study's own texts, one-line refusals naming the field, the check of a participant's answers, and what `exag study
check` tells a paid study that its information sheet lacks."""
from __future__ import annotations

import json

import pytest

from game.consent_form import (DEFAULT_CONSENT, DEFAULT_QUESTIONNAIRE, parse_consent, parse_questionnaire,
                               questionnaire_problem)
from game.study import StudyConfig, check_new_study
from game.study_check_command import check_file

CONSENT = {"researcher": "Dr A. Researcher, University of Y", "contact": "a.researcher@y.example.ac.uk",
           "ethics": "Y ethics committee, ref. CS-2026-123", "duration_minutes": 30, "payment": "£4.50",
           "information": ["What happens.", "What is recorded."], "statements": ["I am 18 or older."],
           "declined_code": "NOCONSENT", "declined_url": "https://app.prolific.com/submissions/complete?cc=NOCONSENT"}
QUESTIONNAIRE = [{"key": "effort", "text": "How hard did you try?", "type": "choice", "options": ["Hard", "Not hard"]},
                 {"key": "strategy", "text": "What did you ask?", "type": "text", "required": True},
                 {"key": "comments", "text": "Anything else?", "type": "text"}]


def test_a_study_without_texts_shows_the_defaults_which_promise_no_aggregate_only_publication():
    study = StudyConfig("s")
    assert study.parsed_consent == DEFAULT_CONSENT and study.parsed_questionnaire == DEFAULT_QUESTIONNAIRE
    assert [item.key for item in DEFAULT_QUESTIONNAIRE] == ["trust", "explanations_helped", "understood", "strategy",
                                                            "comments"]
    # the old text promised "anonymous, aggregated form only", which forbade sharing any participant's records
    assert "aggregated" not in " ".join(DEFAULT_CONSENT.information) + DEFAULT_CONSENT.data
    assert "shared" in DEFAULT_CONSENT.data


def test_a_studys_own_consent_fills_the_rest_from_the_defaults():
    form = parse_consent(CONSENT)
    assert (form.researcher, form.duration_minutes, form.statements) == (CONSENT["researcher"], 30, ("I am 18 or older.",))
    assert form.information == ("What happens.", "What is recorded.")
    assert form.agree == DEFAULT_CONSENT.agree and form.decline == DEFAULT_CONSENT.decline
    assert form.public()["statements"] == ["I am 18 or older."]
    assert form.sha256 != DEFAULT_CONSENT.sha256 and len(form.sha256) == 64


def test_a_studys_own_questionnaire_replaces_the_default_and_says_what_is_required():
    items = parse_questionnaire(QUESTIONNAIRE)
    assert [(i.key, i.type, i.required) for i in items] == [("effort", "choice", True), ("strategy", "text", True),
                                                           ("comments", "text", False)]
    assert parse_questionnaire([{"key": "k", "text": "t", "options": ["a", "b"]}])[0].type == "scale"


@pytest.mark.parametrize("consent, named", [
    ({"phone": "123"}, "consent: unknown field(s) phone"),
    ({"agree": ""}, "consent.agree: may not be empty"),
    ({"duration_minutes": 0}, "consent.duration_minutes"),
    ({"duration_minutes": "30"}, "consent.duration_minutes"),
    ({"information": []}, "consent.information"),
    ({"information": ["fine", ""]}, "consent.information[1]"),
    ({"statements": "I agree"}, "consent.statements"),
    ({"contact": 7}, "consent.contact"),
    ("yes", "consent must be an object"),
])
def test_a_bad_consent_form_is_refused_in_one_line_naming_the_field(consent, named):
    with pytest.raises(ValueError) as refused:
        StudyConfig("s", consent=consent)
    assert named in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("items, named", [
    ({"key": "x"}, "questionnaire: a list of 1-50 items"),
    ([{"key": "bad key", "text": "t", "type": "text"}], "questionnaire[0].key"),
    ([{"key": "k", "text": "t", "type": "slider", "options": ["a", "b"]}], "questionnaire[0].type"),
    ([{"key": "k", "text": "t", "type": "text", "options": ["a", "b"]}], "questionnaire[0].options"),
    ([{"key": "k", "text": "t", "type": "choice"}], "questionnaire[0].options"),
    ([{"key": "k", "text": "t", "type": "text", "required": "yes"}], "questionnaire[0].required"),
    ([{"key": "k", "text": "t", "type": "text"}, {"key": "k", "text": "u", "type": "text"}], "'k' appears twice"),
])
def test_a_bad_questionnaire_is_refused_in_one_line_naming_the_item(items, named):
    with pytest.raises(ValueError) as refused:
        StudyConfig("s", questionnaire=items)
    assert named in str(refused.value) and "\n" not in str(refused.value)


def test_demographics_may_not_reuse_a_key_of_the_studys_own_questionnaire():
    with pytest.raises(ValueError, match="'effort' is a questionnaire item already"):
        StudyConfig("s", questionnaire=QUESTIONNAIRE,
                    checks={"demographics": {"items": [{"key": "effort", "text": "t", "options": ["a", "b"]}]}})
    StudyConfig("s", questionnaire=QUESTIONNAIRE,             # the default questionnaire's keys are free again
                checks={"demographics": {"items": [{"key": "trust", "text": "t", "options": ["a", "b"]}]}})


def test_a_declined_link_must_be_one_participants_may_be_sent_to():
    check_new_study(StudyConfig("s", consent=CONSENT))
    with pytest.raises(ValueError, match="consent.declined_url: an https:// link"):
        check_new_study(StudyConfig("s", consent={"declined_url": "javascript:alert(1)"}))


@pytest.mark.parametrize("answers, problem", [
    ({"effort": "Hard", "strategy": "colours"}, ""),
    ({"effort": "Hard", "strategy": "colours", "comments": "fine"}, ""),
    ({"effort": "Very", "strategy": "colours"}, "please answer: How hard"),
    ({"strategy": "colours"}, "please answer: How hard"),
    ({"effort": "Hard", "strategy": "  "}, "please answer: What did you ask?"),
    ({"effort": "Hard", "strategy": "x", "age": "30"}, "unknown questionnaire item(s): age"),
    ({"effort": "Hard", "strategy": ["x"]}, "please answer with text"),
    ({"effort": "Hard", "strategy": "x" * 2001}, "at most 2000 characters"),
])
def test_a_participants_answers_are_checked_against_the_studys_items(answers, problem):
    found = questionnaire_problem(parse_questionnaire(QUESTIONNAIRE), answers)
    assert found.startswith(problem) if problem else found == ""


def test_an_optional_choice_may_stay_unanswered_but_not_answered_wrongly():
    items = parse_questionnaire([{"key": "k", "text": "Optional?", "options": ["a", "b"], "required": False}])
    assert questionnaire_problem(items, {}) == "" and questionnaire_problem(items, {"k": "a"}) == ""
    assert questionnaire_problem(items, {"k": "c"}) == "please answer: Optional?"


def test_study_check_tells_a_paid_study_what_its_information_sheet_lacks(tmp_path):
    study = {"study_id": "paid", "kind": "controlled", "arms": ["none"], "completion_code": "C1",
             "redirect_url": "https://app.prolific.com/submissions/complete"}
    path = tmp_path / "paid.json"
    path.write_text(json.dumps(study))
    said = check_file(path)
    assert "warning: the consent form gives no researcher, contact, ethics, payment, duration_minutes" in said
    assert "warning: redirect_url carries no cc=" in said
    path.write_text(json.dumps({**study, "consent": CONSENT,
                                "redirect_url": "https://app.prolific.com/submissions/complete?cc=C1"}))
    assert "warning" not in check_file(path)
    path.write_text(json.dumps({"study_id": "lab", "kind": "controlled", "arms": ["none"]}))
    assert "warning" not in check_file(path)         # not recruited on a platform: the defaults will do


def test_simulated_participants_answer_a_studys_own_questionnaire_as_the_server_checks_it():
    from experiments.simulate.simulate import questionnaire

    items = parse_questionnaire(QUESTIONNAIRE)
    answers = questionnaire([], [item.public() for item in items])
    assert questionnaire_problem(items, answers) == ""
    assert answers == {"effort": "Not hard", "strategy": "simulated participant", "comments": ""}
    default = questionnaire([{"explained_ratings": ["Helping a lot"]}], [item.public() for item in DEFAULT_QUESTIONNAIRE])
    assert default["explanations_helped"] == "Strongly agree" and default["trust"] == "Neutral"
