"""Validation of every incoming Socket.IO message: each event's payload must be a JSON object with
exactly the fields below, of the right types and sizes. Anything else is refused with a message that
says what was wrong, before any state is touched."""
from __future__ import annotations

import re
from dataclasses import dataclass

ID = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
MAX_QUESTION_CHARS = 300
MAX_ANSWER_CHARS = 2000
MAX_ROUND = 999          # `history`: a round's index (no game has this many questions)


class SchemaError(ValueError):
    pass


@dataclass(frozen=True)
class Field:
    kind: type | tuple[type, ...]
    required: bool = True
    max_length: int | None = None
    pattern: re.Pattern | None = None
    minimum: int | None = None      # integers: the smallest and largest allowed
    maximum: int | None = None
    too_long: str | None = None     # the refusal of a longer text, for the player: {length} and {limit} filled in


def _id(required: bool = False) -> Field:
    return Field(str, required, 64, ID)


PARTICIPANT_IDS = ("pid", "PROLIFIC_PID", "STUDY_ID", "SESSION_ID", "workerId", "assignmentId", "hitId")

SCHEMAS: dict[str, dict[str, Field]] = {
    "join": {"study": _id(True), "arm": Field(str, False, 64), **{name: _id() for name in PARTICIPANT_IDS}},
    "consent": {"agree": Field(bool)},
    "begin": {},
    "ask": {"game_id": _id(True), "question": Field(str, True, MAX_QUESTION_CHARS, too_long=(
        "your question is longer than {limit} characters (it has {length}); please shorten it"))},
    "explain": {"game_id": _id(True)},
    "rate": {"game_id": _id(True), "rating": Field(str, True, 64)},
    "guess": {"game_id": _id(True), "image": _id(True)},
    "next_game": {"game_id": _id(True)},
    "history": {"game_id": _id(True), "round": Field(int, True, minimum=0, maximum=MAX_ROUND)},
    "questionnaire": {"answers": Field(dict)},
    # participant checks (game/checks.py): answers are option texts (comprehension) or typed numbers (plates)
    "comprehension": {"answers": Field(dict)},
    "colour_screen": {"answers": Field(dict)},
    "attention_check": {"answer": Field(str, True, MAX_ANSWER_CHARS)},
}
ANSWERS = ("questionnaire", "comprehension", "colour_screen")    # events whose `answers` are {key: text}


def check_text(where: str, value: str) -> None:
    """Text must be valid Unicode: a lone surrogate (JSON "\\ud800") is accepted by the JSON parser but
    cannot be written as UTF-8, so stored it would break every export."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise SchemaError(f"{where} contains invalid Unicode (a lone surrogate); please retype it") from None
    if "\x00" in value:
        raise SchemaError(f"{where} contains a NUL character")


def validate(event: str, payload) -> dict:
    if event not in SCHEMAS:
        raise SchemaError(f"unknown event {event!r}")
    if payload is None and not any(f.required for f in SCHEMAS[event].values()):
        payload = {}
    if not isinstance(payload, dict):
        raise SchemaError(f"{event}: the message must be a JSON object")
    schema = SCHEMAS[event]
    unknown = sorted(set(payload) - set(schema))
    if unknown:
        raise SchemaError(f"{event}: unknown field(s) {', '.join(map(str, unknown))[:200]}")
    for name, spec in schema.items():
        if name not in payload or payload[name] is None:
            if spec.required:
                raise SchemaError(f"{event}: {name} is missing")
            continue
        value = payload[name]
        if not isinstance(value, spec.kind) or (spec.kind is not bool and isinstance(value, bool)):
            raise SchemaError(f"{event}: {name} must be a {_kind_name(spec.kind)}")
        if isinstance(value, str):
            check_text(f"{event}: {name}", value)
        if spec.max_length is not None and len(value) > spec.max_length:
            if spec.too_long:      # refused whole, never cut: a cut question would be answered as another
                raise SchemaError(spec.too_long.format(length=len(value), limit=spec.max_length))
            raise SchemaError(f"{event}: {name} is longer than {spec.max_length} characters")
        if (spec.minimum is not None and value < spec.minimum) or (spec.maximum is not None and value > spec.maximum):
            raise SchemaError(f"{event}: {name} must be from {spec.minimum} to {spec.maximum}")
        if spec.pattern is not None and not spec.pattern.fullmatch(value):
            raise SchemaError(f"{event}: {name} may only hold letters, digits, '_', '-' and '.' (1-64 characters)")
    if event in ANSWERS:
        validate_answers(payload["answers"], event)
    return {k: v for k, v in payload.items() if v is not None}


def validate_answers(answers: dict, event: str = "questionnaire") -> None:
    """Every answer is text (scale items answer with one of their options' texts)."""
    if len(answers) > 50:
        raise SchemaError(f"{event}: too many answers")
    for key, value in answers.items():
        if not ID.fullmatch(str(key)):
            raise SchemaError(f"{event}: answer keys are short ids")
        if not isinstance(value, str):
            raise SchemaError(f"{event}: the answer to {key} must be text")
        check_text(f"{event}: the answer to {key}", value)
        if len(value) > MAX_ANSWER_CHARS:
            raise SchemaError(f"{event}: the answer to {key} is longer than {MAX_ANSWER_CHARS} characters")


def _kind_name(kind) -> str:
    names = {str: "string", bool: "boolean", dict: "JSON object", int: "integer"}
    if isinstance(kind, tuple):
        return " or ".join(names.get(k, k.__name__) for k in kind)
    return names.get(kind, kind.__name__)
