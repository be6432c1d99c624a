"""Participant checks, configured in a study as data: a comprehension check after the instructions,
attention checks between games, a colour-vision screen, and demographics in the questionnaire.

A study's `checks` (game/study.py StudyConfig.checks); every part is optional, and an empty object takes
that part's defaults (the questions below):

    {"comprehension": {"questions": [{"key": "guesses", "text": "How many guesses ...?",
                                      "options": ["One", "Three"], "answer": "One"}],
                       "attempts": 2, "on_fail": "flag" | "instructions" | "screen_out"},
     "colour_screen": {"plates": [12, 8, 29, 5], "min_correct": 3, "on_fail": "flag" | "screen_out"},
     "attention": {"every": 5, "items": [{"key", "text", "options", "answer"}]},
     "demographics": {"items": [{"key": "age", "text": "Your age", "type": "choice" | "text", "options": [...]}]},
     "screen_out": {"code": "SCREENED1", "url": "https://app.prolific.com/submissions/complete?cc=SCREENED1"}}

The rules: a comprehension check comes after the instructions; a participant who gets any answer wrong reads
the instructions again and answers again; one who fails `attempts` times is flagged (`comprehension_failed`)
and then, as `on_fail` says, goes on ("flag"), goes back to the instructions until they pass
("instructions"), or is ended with the platform's "screened out" code and link ("screen_out"). The colour
screen follows: plates of coloured dots the page draws, a number in red-green confusion colours; fewer than
`min_correct` numbers right is flagged (`colour_screen_failed`) and, with "screen_out", ends the
participation. An attention check (a question whose answer the question itself states) comes after every
`every` games; any wrong answer is flagged (`attention_failed`). Demographics items join the
questionnaire; every choice item offers "Prefer not to say", text items may stay empty.

Pure: parsing (a ValueError of one line naming the field), grading, and what the page may be sent, which
never includes a right answer (`public` projections; the plates carry dots, not their number).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .seeding import seeded_rng

ON_FAIL = ("flag", "instructions", "screen_out")
COLOUR_ON_FAIL = ("flag", "screen_out")          # a colour screen cannot be re-read: pass or not, once
CHECK_FLAGS = ("comprehension_failed", "attention_failed", "colour_screen_failed")   # quality flags they raise
PREFER_NOT = "Prefer not to say"
KEY = re.compile(r"[A-Za-z0-9_]{1,32}")          # an item's key: an export column name part
MAX_TEXT = 1000                                  # a question's or option's characters
DEMOGRAPHIC_TYPES = ("choice", "text")


@dataclass(frozen=True)
class Question:
    """A multiple-choice question with one right answer (comprehension and attention checks)."""
    key: str
    text: str
    options: tuple[str, ...]
    answer: str

    def public(self) -> dict:
        """What the page is sent: never the answer."""
        return {"key": self.key, "text": self.text, "options": list(self.options)}


@dataclass(frozen=True)
class Comprehension:
    questions: tuple[Question, ...]
    attempts: int = 2            # failed attempts that flag the participant (the "fails twice")
    on_fail: str = "flag"


@dataclass(frozen=True)
class ColourScreen:
    plates: tuple[int, ...]      # the number each plate shows, 0-99
    min_correct: int             # the rule: plates that must be read right to pass
    on_fail: str = "flag"

    @property
    def rule(self) -> str:
        return f"at least {self.min_correct} of {len(self.plates)} plates read right"


@dataclass(frozen=True)
class Attention:
    every: int                   # a check after every `every` games (never after the last)
    items: tuple[Question, ...]  # used in turn: check n asks item n mod len(items)

    def due(self, games_played: int, games_total: int) -> bool:
        return 0 < games_played < games_total and games_played % self.every == 0

    def item(self, number: int) -> Question:
        return self.items[number % len(self.items)]


@dataclass(frozen=True)
class Demographic:
    key: str
    text: str
    type: str = "choice"         # "choice": one of `options` (PREFER_NOT always among them); "text": optional
    options: tuple[str, ...] = ()

    def public(self) -> dict:
        return {"key": self.key, "text": self.text, "type": self.type, "options": list(self.options)}


@dataclass(frozen=True)
class ScreenOut:
    code: str = ""               # the platform's "screened out" completion code
    url: str = ""                # and/or its link back


@dataclass(frozen=True)
class Checks:
    comprehension: Comprehension | None = None
    colour_screen: ColourScreen | None = None
    attention: Attention | None = None
    demographics: tuple[Demographic, ...] = ()
    screen_out: ScreenOut | None = None


# --- the defaults: questions every setting's instructions answer ---------------------------------------

DEFAULT_COMPREHENSION = (
    Question("about", "Which image does the agent's answer describe?",
             ("The secret image", "The image I selected", "All images at once"), "The secret image"),
    Question("guesses", "How many guesses do you have in each game?", ("One", "Three", "As many as I like"), "One"),
    Question("wrong_guess", "What is your score in a game when your guess is wrong?",
             ("0", "The points I have left", "Half of my points"), "0"),
    Question("agent_right", "Is the agent always right?", ("Yes", "No, it can be wrong"), "No, it can be wrong"),
)
DEFAULT_ATTENTION = (
    Question("purple", "This question checks that you read carefully: please choose “Purple”, whatever your "
             "favourite colour is. Which colour do you like best?",
             ("Red", "Green", "Blue", "Purple", "Yellow"), "Purple"),
    Question("cylinder", "To show that you are paying attention, select “A cylinder” as your answer. Which shape "
             "did you see most often in the last game?",
             ("A sphere", "A cube", "A cylinder", "I do not remember"), "A cylinder"),
    Question("three", "Please select the number three below to show that you are reading. How many breaks have "
             "you taken so far?", ("None", "One", "Two", "Three", "More than three"), "Three"),
)
DEFAULT_PLATES = (12, 8, 29, 74)         # numbers the classic red-green plates show; all readable with normal vision
DEFAULT_DEMOGRAPHICS = (
    Demographic("age", "Your age", "choice", ("18-24", "25-34", "35-44", "45-54", "55-64", "65 or older")),
    Demographic("gender", "Your gender", "choice", ("Woman", "Man", "Non-binary", "Another gender")),
    Demographic("education", "Your highest completed education", "choice",
                ("Secondary school or less", "Vocational training", "Bachelor's degree", "Master's degree or higher")),
    Demographic("english", "Is English your first language?", "choice", ("Yes", "No")),
    Demographic("ai_use", "How often do you use AI systems such as chatbots?", "choice",
                ("Never", "Less than monthly", "Monthly", "Weekly", "Daily")),
)


# --- parsing ---------------------------------------------------------------------------------------

PARTS = ("comprehension", "colour_screen", "attention", "demographics", "screen_out")


def parse_checks(data: dict, games: int | None = None, reserved_keys: frozenset[str] = frozenset()) -> Checks:
    """The checks of a study config; ValueError (one line, naming the field) for anything wrong.
    `games`: the study's games, so that an attention check that would never come is refused;
    `reserved_keys`: the questionnaire's keys, which demographics items may not reuse."""
    if not isinstance(data, dict):
        raise ValueError("checks must be an object (see game/checks.py)")
    _known("checks", data, PARTS)
    part = {name: _object(f"checks.{name}", data[name]) for name in PARTS if name in data}
    checks = Checks(
        comprehension=_comprehension(part["comprehension"]) if "comprehension" in part else None,
        colour_screen=_colour_screen(part["colour_screen"]) if "colour_screen" in part else None,
        attention=_attention(part["attention"], games) if "attention" in part else None,
        demographics=_demographics(part["demographics"], reserved_keys) if "demographics" in part else (),
        screen_out=_screen_out(part["screen_out"]) if "screen_out" in part else None)
    screening = [name for name in ("comprehension", "colour_screen")
                 if getattr(checks, name) is not None and getattr(checks, name).on_fail == "screen_out"]
    if screening and (checks.screen_out is None or not (checks.screen_out.code or checks.screen_out.url)):
        raise ValueError(f"checks.{screening[0]}.on_fail is screen_out: give checks.screen_out's code or url "
                         "(the platform's screened-out completion code or link)")
    return checks


def _comprehension(data: dict) -> Comprehension:
    _known("checks.comprehension", data, ("questions", "attempts", "on_fail"))
    questions = _questions("checks.comprehension.questions", data["questions"]) if "questions" in data \
        else DEFAULT_COMPREHENSION
    attempts = _integer("checks.comprehension.attempts", data.get("attempts", 2), 1, 10)
    on_fail = _choice("checks.comprehension.on_fail", data.get("on_fail", "flag"), ON_FAIL)
    return Comprehension(questions, attempts, on_fail)


def _colour_screen(data: dict) -> ColourScreen:
    _known("checks.colour_screen", data, ("plates", "min_correct", "on_fail"))
    plates = data.get("plates", DEFAULT_PLATES)
    if not isinstance(plates, (list, tuple)) or not 1 <= len(plates) <= 12:
        raise ValueError("checks.colour_screen.plates: a list of 1-12 numbers (0-99), one per plate")
    plates = tuple(_integer(f"checks.colour_screen.plates[{i}]", p, 0, 99) for i, p in enumerate(plates))
    min_correct = _integer("checks.colour_screen.min_correct", data.get("min_correct", len(plates)), 1, len(plates))
    on_fail = _choice("checks.colour_screen.on_fail", data.get("on_fail", "flag"), COLOUR_ON_FAIL)
    return ColourScreen(plates, min_correct, on_fail)


def _attention(data: dict, games: int | None) -> Attention:
    _known("checks.attention", data, ("every", "items"))
    if "every" not in data:
        raise ValueError("checks.attention.every: how many games between attention checks is missing")
    every = _integer("checks.attention.every", data["every"], 1, 1000)
    if games is not None and every >= games:
        raise ValueError(f"checks.attention.every: {every} games between checks would show none in a study of "
                         f"{games} games (no check follows the last game)")
    items = _questions("checks.attention.items", data["items"]) if "items" in data else DEFAULT_ATTENTION
    return Attention(every, items)


def _demographics(data: dict, reserved: frozenset[str]) -> tuple[Demographic, ...]:
    _known("checks.demographics", data, ("items",))
    if "items" not in data:
        return tuple(Demographic(d.key, d.text, d.type, d.options + (PREFER_NOT,)) for d in DEFAULT_DEMOGRAPHICS)
    items = _list("checks.demographics.items", data["items"])
    parsed = []
    for i, raw in enumerate(items):
        where = f"checks.demographics.items[{i}]"
        raw = _object(where, raw)
        _known(where, raw, ("key", "text", "type", "options"))
        key, text = _key(f"{where}.key", raw.get("key")), _text(f"{where}.text", raw.get("text"))
        if key in reserved:
            raise ValueError(f"{where}.key: {key!r} is a questionnaire item already")
        kind = _choice(f"{where}.type", raw.get("type", "choice"), DEMOGRAPHIC_TYPES)
        options = ()
        if kind == "choice":
            options = _options(f"{where}.options", raw.get("options"))
            if PREFER_NOT not in options:     # nobody has to disclose: every choice can be declined
                options += (PREFER_NOT,)
        elif "options" in raw:
            raise ValueError(f"{where}.options: a text item has no options")
        parsed.append(Demographic(key, text, kind, options))
    _unique("checks.demographics.items", [d.key for d in parsed])
    return tuple(parsed)


def _screen_out(data: dict) -> ScreenOut:
    _known("checks.screen_out", data, ("code", "url"))
    code, url = data.get("code", ""), data.get("url", "")
    if not isinstance(code, str) or len(code) > 200:
        raise ValueError("checks.screen_out.code: text of at most 200 characters")
    if not isinstance(url, str) or len(url) > 2000 or (url and not url.startswith(("https://", "http://"))):
        raise ValueError("checks.screen_out.url: an http(s) link of at most 2000 characters")
    return ScreenOut(code, url)


def _questions(where: str, value) -> tuple[Question, ...]:
    questions = []
    for i, raw in enumerate(_list(where, value)):
        at = f"{where}[{i}]"
        raw = _object(at, raw)
        _known(at, raw, ("key", "text", "options", "answer"))
        key, text = _key(f"{at}.key", raw.get("key")), _text(f"{at}.text", raw.get("text"))
        options = _options(f"{at}.options", raw.get("options"))
        if "answer" not in raw:
            raise ValueError(f"{at}: no right answer (\"answer\": one of its options)")
        if raw["answer"] not in options:
            raise ValueError(f"{at}.answer: {raw['answer']!r} is not one of its options")
        questions.append(Question(key, text, options, raw["answer"]))
    _unique(where, [q.key for q in questions])
    return tuple(questions)


def _known(where: str, data: dict, names: tuple[str, ...]) -> None:
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(map(str, unknown))}; known: {', '.join(names)}")


def _object(where: str, value) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be an object ({{}} takes the defaults)")
    return value


def _list(where: str, value) -> list:
    if not isinstance(value, list) or not value or len(value) > 50:
        raise ValueError(f"{where}: a list of 1-50 items")
    return value


def _key(where: str, value) -> str:
    if not isinstance(value, str) or not KEY.fullmatch(value):
        raise ValueError(f"{where}: 1-32 letters, digits or '_'")
    return value


def _text(where: str, value, limit: int = MAX_TEXT) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise ValueError(f"{where}: text of 1-{limit} characters")
    return value


def _options(where: str, value) -> tuple[str, ...]:
    if not isinstance(value, list) or not 2 <= len(value) <= 20:
        raise ValueError(f"{where}: a list of 2-20 options")
    options = tuple(_text(f"{where}[{i}]", v) for i, v in enumerate(value))
    _unique(where, options)
    return options


def _unique(where: str, values) -> None:
    seen = set()
    for v in values:
        if v in seen:
            raise ValueError(f"{where}: {v!r} appears twice")
        seen.add(v)


def _integer(where: str, value, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"{where}: a whole number from {low} to {high}")
    return value


def _choice(where: str, value, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{where}: {value!r} is not one of {', '.join(choices)}")
    return value


# --- grading ---------------------------------------------------------------------------------------

def answered(questions: tuple[Question, ...] | tuple[Demographic, ...], answers: dict) -> None:
    """Refuses (ValueError, for the participant) answers that are not one answer per question, each one of
    its options: such a message is not an attempt, it changes nothing."""
    known = {q.key for q in questions}
    unknown = sorted(set(answers) - known)
    if unknown:
        raise ValueError(f"unknown question(s): {', '.join(unknown)}")
    for q in questions:
        if answers.get(q.key) not in q.options:
            raise ValueError(f"please answer: {q.text}")


@dataclass(frozen=True)
class ComprehensionResult:
    passed: bool
    wrong: tuple[str, ...]       # the keys answered wrong (logged; the page is told only how many)
    failures: int                # failed attempts so far, this one included
    flagged: bool                # failed `attempts` times: the quality flag comprehension_failed
    then: str                    # "continue" (to the next stage), "instructions" (read, answer again), "screen_out"


def grade_comprehension(check: Comprehension, answers: dict, failures_before: int) -> ComprehensionResult:
    """One attempt. Wrong before the last attempt: back to the instructions to answer again; wrong at the
    last: flagged and handled as `on_fail` says (answering right later never clears the flag)."""
    answered(check.questions, answers)
    wrong = tuple(q.key for q in check.questions if answers[q.key] != q.answer)
    failures = failures_before + bool(wrong)
    flagged = failures >= check.attempts
    if not wrong:
        then = "continue"
    elif failures < check.attempts:
        then = "instructions"
    else:
        then = {"flag": "continue", "instructions": "instructions", "screen_out": "screen_out"}[check.on_fail]
    return ComprehensionResult(not wrong, wrong, failures, flagged, then)


def grade_attention(item: Question, answer: str) -> bool:
    answered((item,), {item.key: answer})
    return answer == item.answer


@dataclass(frozen=True)
class ColourResult:
    correct: int
    passed: bool                 # correct >= min_correct; failing raises the flag colour_screen_failed
    then: str                    # "continue" or "screen_out"


def plate_key(index: int) -> str:
    return f"p{index}"


def grade_colour_screen(screen: ColourScreen, answers: dict) -> ColourResult:
    """Answers: plate key -> the number typed ("" for "I see no number"); any other text counts as wrong."""
    keys = [plate_key(i) for i in range(len(screen.plates))]
    unknown = sorted(set(answers) - set(keys))
    if unknown:
        raise ValueError(f"unknown plate(s): {', '.join(unknown)}")
    missing = [k for k in keys if k not in answers]
    if missing:
        raise ValueError("please answer for every plate (leave the box empty if you see no number)")
    correct = sum(_number(answers[k]) == number for k, number in zip(keys, screen.plates))
    passed = correct >= screen.min_correct
    return ColourResult(correct, passed, "continue" if passed or screen.on_fail == "flag" else "screen_out")


def _number(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 3 else None


# --- the plates ------------------------------------------------------------------------------------
# A plate is a disc of dots; the dots whose centre lies on the number's strokes take the figure's
# colours, the others the ground's. Figure (orange-reds) and ground (olive-greens) differ in hue along the
# red-green confusion line at about the same lightness, so a reader who does not tell red from green sees
# no number; dot sizes and shades are random on both, so neither gives the number away.

PLATE_SIZE = 1000                # dots are in whole units of a PLATE_SIZE x PLATE_SIZE canvas
PALETTE = ("#d2763f", "#c8693a", "#dc8a52", "#e09a62",      # figure shades
           "#8b9441", "#7c8a39", "#9ba452", "#abae64")      # ground shades, each at its figure shade's CIE L*
FIGURE_SHADES = 4
DOT_SPACING = 0.062              # between dot centres, in plate radii (about 800 dots a plate)
STROKE = 0.11                    # half the width of a digit's strokes, in plate radii
SEGMENTS = {                     # seven-segment digits on a 1 x 2 box, y downwards: segment -> ends
    "a": ((0, 0), (1, 0)), "b": ((1, 0), (1, 1)), "c": ((1, 1), (1, 2)), "d": ((0, 2), (1, 2)),
    "e": ((0, 1), (0, 2)), "f": ((0, 0), (0, 1)), "g": ((0, 1), (1, 1))}
DIGITS = {"0": "abcdef", "1": "bc", "2": "abged", "3": "abgcd", "4": "fgbc", "5": "afgcd", "6": "afgedc",
          "7": "abc", "8": "abcdefg", "9": "abcdfg"}


def _strokes(number: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The number's segments in plate coordinates (a disc of radius 1 about the origin)."""
    text = str(number)
    width, height, gap = (0.38, 0.9, 0.42) if len(text) == 2 else (0.5, 1.0, 0.0)
    left = -(len(text) * width + (len(text) - 1) * gap) / 2
    strokes = []
    for i, digit in enumerate(text):
        x0 = left + i * (width + gap) - (width / 2 if digit == "1" else 0)   # a lone stroke centred in its box
        for segment in DIGITS[digit]:
            (ax, ay), (bx, by) = SEGMENTS[segment]
            strokes.append((np.array([x0 + ax * width, -height / 2 + ay * height / 2]),
                            np.array([x0 + bx * width, -height / 2 + by * height / 2])))
    return strokes


def plate_dots(number: int, rng: np.random.Generator) -> list[int]:
    """A plate showing `number`, as the page draws it: [x, y, radius, colour index into PALETTE, ...] for
    every dot, in whole units of a PLATE_SIZE canvas (flat: about 10 KB of JSON a plate)."""
    step = DOT_SPACING
    rows = np.arange(-1, 1 + step, step * np.sqrt(3) / 2)
    centres = np.array([(x + (step / 2 if r % 2 else 0), y) for r, y in enumerate(rows)
                        for x in np.arange(-1, 1 + step, step)])
    centres = centres + rng.uniform(-0.18, 0.18, centres.shape) * step
    centres = centres[np.hypot(centres[:, 0], centres[:, 1]) < 0.97]
    distance = np.full(len(centres), np.inf)
    for a, b in _strokes(number):
        t = np.clip((centres - a) @ (b - a) / ((b - a) @ (b - a)), 0, 1)
        distance = np.minimum(distance, np.hypot(*(centres - (a + t[:, None] * (b - a))).T))
    figure = distance <= STROKE
    radius = rng.uniform(0.28, 0.48, len(centres)) * step
    shade = rng.integers(0, FIGURE_SHADES, len(centres)) + np.where(figure, 0, FIGURE_SHADES)
    scale = PLATE_SIZE / 2
    dots = np.stack([np.round((centres[:, 0] + 1) * scale), np.round((centres[:, 1] + 1) * scale),
                     np.maximum(np.round(radius * scale), 1), shade], axis=1).astype(int)
    return dots.ravel().tolist()


# --- what the page is sent -------------------------------------------------------------------------

def comprehension_view(check: Comprehension, failures: int) -> dict:
    return {"questions": [q.public() for q in check.questions], "attempt": failures + 1, "attempts": check.attempts}


def attention_view(check: Attention, number: int) -> dict:
    return {"number": number, **check.item(number).public()}


def colour_screen_view(screen: ColourScreen, study_id: str) -> dict:
    """The plates, the same for every participant of a study (so a reload redraws them exactly)."""
    return {"size": PLATE_SIZE, "palette": list(PALETTE),
            "plates": [{"key": plate_key(i), "dots": plate_dots(number, seeded_rng(0, "plate", study_id, i))}
                       for i, number in enumerate(screen.plates)]}
