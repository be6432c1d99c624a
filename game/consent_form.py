"""A study's consent form and end questionnaire, as study data: what the page shows and asks, frozen with the rest
of the study by its pre-registration (game/preregistration.py) and exported with the study (game/export.py).

The study file's "consent" (every field optional; {} or a missing field takes the default below):

    "consent": {"title": "Finding images with an AI agent",
                "researcher": "Dr A. Researcher, Department of X, University of Y",
                "contact": "a.researcher@y.ac.uk", "ethics": "Approved by the Y ethics board, ref. 2026/123",
                "duration_minutes": 25, "payment": "£4.50",
                "information": ["What the study is ...", "What you will do ..."],
                "data": "How the records are kept, published and shared ...",
                "statements": ["I am 18 or older.", "I have read the information above."],
                "agree": "I agree, continue", "decline": "I do not agree",
                "declined_message": "Thank you. Please return the study on Prolific.",
                "declined_code": "NOCONSENT", "declined_url": "https://app.prolific.com/submissions/complete?cc=NOCONSENT"}

The page shows the information sheet (who runs the study, whom to contact, the ethics approval, how long it takes
and what it pays, what happens and what is recorded), one box to tick per statement (all of them before agreeing),
and two buttons: agreeing starts the study; declining ends the participation at once (stage "declined"): nothing
of it is recorded but the decline, its slot goes to the next arrival, and the page shows `declined_message` and,
when given, the platform's "no consent" code and link.

The study file's "questionnaire" (a list; [] or missing: the default below, the same for every study so that
answers compare across arms): items {"key", "text", "type": "scale" | "choice" | "text", "options" (scale and
choice), "required"} (default: scale and choice items required, text items optional). Their answers are the
export's participants columns q_KEY; the checks' demographics items follow them on the same page (game/checks.py).

Pure: parsing (a ValueError of one line naming the field), what the page is sent, and the check of a participant's
answers.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from .checks import _integer, _key, _known, _list, _object, _options, _text, _unique

MAX_PARAGRAPH = 4000           # an information paragraph's characters
MAX_ANSWER = 2000              # a text answer's characters (the page's textarea maxlength)
ITEM_TYPES = ("scale", "choice", "text")
CHOICES = ("scale", "choice")  # the types answered with one of their options


@dataclass(frozen=True)
class ConsentForm:
    title: str
    researcher: str
    contact: str
    ethics: str
    duration_minutes: int | None
    payment: str
    information: tuple[str, ...]
    data: str
    statements: tuple[str, ...]
    agree: str
    decline: str
    declined_message: str
    declined_code: str
    declined_url: str

    def public(self) -> dict:
        """What the page is sent: all of it (a consent form has no secret)."""
        return {**asdict(self), "information": list(self.information), "statements": list(self.statements)}

    @property
    def sha256(self) -> str:
        """The hash of the form as shown: the consent event records which text the participant agreed to."""
        return hashlib.sha256(json.dumps(self.public(), sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Item:
    key: str
    text: str
    type: str                    # ITEM_TYPES
    options: tuple[str, ...]     # scale and choice items: the answers to choose from; text items: ()
    required: bool

    def public(self) -> dict:
        return {"key": self.key, "text": self.text, "type": self.type, "options": list(self.options),
                "required": self.required}


DEFAULT_CONSENT = ConsentForm(
    title="Welcome: consent to take part",
    researcher="", contact="", ethics="", duration_minutes=None, payment="",
    information=(
        "This is a research study about how explanations help people work with an AI system that answers questions "
        "about images.",
        "You will play a short guessing game several times: a computer picks one image out of a set in secret, and "
        "you find it by asking an AI agent questions about that image. The agent is not always right. After every "
        "answer you say how helpful it was.",
        "Taking part is voluntary. You may stop at any time by closing this page.",
    ),
    data="We record what you do in the game: your questions, the agent's answers, which explanations you saw, your "
         "ratings, your guesses, the times of these actions, and your answers to a few questions at the end. We record "
         "no name or contact details; the platform's anonymous id links your answers. The records are used for "
         "research; results are published in anonymous form, and the anonymised records may be shared with other "
         "researchers so that they can check and reuse them.",
    statements=(),
    agree="I agree, continue",
    decline="I do not want to take part",
    declined_message="Thank you for your time. You have not taken part, and nothing you did here is kept but your "
                     "decision. You may close this page.",
    declined_code="", declined_url="",
)
TEXT_FIELDS = ("title", "researcher", "contact", "ethics", "payment", "data", "agree", "decline", "declined_message",
               "declined_code", "declined_url")
CONSENT_FIELDS = TEXT_FIELDS + ("duration_minutes", "information", "statements")

AGREEMENT = ("Strongly disagree", "Disagree", "Neutral", "Agree", "Strongly agree")
DEFAULT_QUESTIONNAIRE = (
    Item("trust", "I could tell when the agent's answers were right.", "scale", AGREEMENT, True),
    Item("explanations_helped", "The explanations helped me find the secret image.", "scale", AGREEMENT, True),
    Item("understood", "I understood how the agent arrived at its answers.", "scale", AGREEMENT, True),
    Item("strategy", "Which questions or explanations helped you most?", "text", (), False),
    Item("comments", "Anything else you want to tell us? (optional)", "text", (), False),
)


def parse_consent(data: object) -> ConsentForm:
    """The consent form of a study config ({}: the default); ValueError, one line naming the field."""
    data = _object("consent", data)
    _known("consent", data, CONSENT_FIELDS)
    form = asdict(DEFAULT_CONSENT)
    for name in TEXT_FIELDS:
        if name in data:
            value = data[name]
            if not isinstance(value, str) or len(value) > MAX_PARAGRAPH:
                raise ValueError(f"consent.{name}: text of at most {MAX_PARAGRAPH} characters")
            form[name] = value
    for name in ("title", "agree", "decline", "declined_message"):     # what the page cannot do without
        if not form[name].strip():
            raise ValueError(f"consent.{name}: may not be empty (leave it out for the default)")
    if data.get("duration_minutes") is not None:
        form["duration_minutes"] = _integer("consent.duration_minutes", data["duration_minutes"], 1, 600)
    if "information" in data:
        form["information"] = tuple(_text(f"consent.information[{i}]", text, MAX_PARAGRAPH)
                                    for i, text in enumerate(_list("consent.information", data["information"])))
    if "statements" in data:
        statements = data["statements"]
        if not isinstance(statements, list) or len(statements) > 20:
            raise ValueError("consent.statements: a list of at most 20 statements the participant ticks")
        form["statements"] = tuple(_text(f"consent.statements[{i}]", s) for i, s in enumerate(statements))
    return ConsentForm(**form)


def parse_questionnaire(data: object) -> tuple[Item, ...]:
    """The end questionnaire of a study config ([]: the default); ValueError, one line naming the item."""
    if data in ([], ()):
        return DEFAULT_QUESTIONNAIRE
    items = []
    for i, raw in enumerate(_list("questionnaire", data)):
        where = f"questionnaire[{i}]"
        raw = _object(where, raw)
        _known(where, raw, ("key", "text", "type", "options", "required"))
        key, text = _key(f"{where}.key", raw.get("key")), _text(f"{where}.text", raw.get("text"))
        kind = raw.get("type", "scale")
        if kind not in ITEM_TYPES:
            raise ValueError(f"{where}.type: {kind!r} is not one of {', '.join(ITEM_TYPES)}")
        if kind in CHOICES:
            options = _options(f"{where}.options", raw.get("options"))
        elif "options" in raw:
            raise ValueError(f"{where}.options: a text item has no options")
        else:
            options = ()
        required = raw.get("required", kind in CHOICES)
        if not isinstance(required, bool):
            raise ValueError(f"{where}.required: true or false")
        items.append(Item(key, text, kind, options, required))
    _unique("questionnaire", [item.key for item in items])
    return tuple(items)


def questionnaire_problem(items: tuple[Item, ...], answers: dict) -> str:
    """What is wrong with a participant's questionnaire answers, for them to put right ("" when nothing): an
    answer to a question not asked (`answers` holds the questionnaire's answers only), a choice not among its
    options, a required answer missing, or a text too long."""
    unknown = sorted(set(answers) - {item.key for item in items})
    if unknown:
        return f"unknown questionnaire item(s): {', '.join(str(k)[:40] for k in unknown[:5])}"
    for item in items:
        value = answers.get(item.key, "")
        if not isinstance(value, str):
            return f"please answer with text: {item.text}"
        if item.type in CHOICES and (value not in item.options if value or item.required else False):
            return f"please answer: {item.text}"
        if item.type == "text" and item.required and not value.strip():
            return f"please answer: {item.text}"
        if len(value) > MAX_ANSWER:
            return f"at most {MAX_ANSWER} characters, please: {item.text}"
    return ""


def missing_researcher(form: ConsentForm) -> list[str]:
    """The fields a paid study's information sheet should give and this one leaves empty (`exag study check` warns):
    who runs it, whom to contact, its ethics approval, how long it takes and what it pays."""
    return [name for name in ("researcher", "contact", "ethics", "payment") if not getattr(form, name).strip()] + \
        (["duration_minutes"] if form.duration_minutes is None else [])
