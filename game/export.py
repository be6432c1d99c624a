"""The event log as tidy tables: one row per game, per question round, per helpfulness rating, per
explanation shown, per participant, per independent rater's rating and per study (its config and
pre-registration, from `study_created`) and per assignment (each join's arm, order and slot of the study's
seeded sequence, game/assignment.py); plus the raw events. READ_BY_ANALYSIS names the columns `exag
analyze` reads (experiments/analysis/data.py imports it): the contract between the two is written once, here.

    exag export --format csv|jsonl|parquet --out DIR [--redis-url URL | --data-dir DIR]
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from game.checks import CHECK_FLAGS
from game.consent_form import parse_consent, parse_questionnaire
from game.export_signature import sign
from game.preregistration import RAN_WITH
from game.quality import REPEAT_FLAGS, Participation, PlayedGame, quality_flags, repeat_flags
from game.settings import RATINGS
from game.study import is_test_participation

FORMATS = ("csv", "jsonl", "parquet")
RATING_SCORE = {r: len(RATINGS) - i for i, r in enumerate(RATINGS)}   # "Helping a lot" = 5 ... "Completely confusing" = 1
GAME_KEYS = ("study", "participant", "arm", "game_number")
ASSIGNMENT_COLUMNS = ["study", "participant", "slot", "block", "arm", "order", "assigned", "refilled_slot",
                      "assigned_by"]
STUDY_COLUMNS = ["study", "created", "kind", "config", "preregistration", "preregistration_sha256", "looks", "ran_with",
                 "signature", "consent_form", "questionnaire"]
CHECK_EVENTS = ("comprehension", "colour_screen", "attention_check", "demographics", "screened_out")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")   # OWASP: a spreadsheet runs cells that start so

# The contract with the analysis (experiments/analysis/data.py): the columns it reads from each table, and
# what it cannot compute without them (its notes say so when an export lacks one).
READ_BY_ANALYSIS: dict[str, dict[str, str]] = {
    "games": {
        "game_id": "", "study": "", "participant": "", "arm": "",
        "game_number": "the order of a participant's games (adoption over plays)",
        "session": "the block structure of controlled studies (Table 1 uses with_explanations instead, "
                   "and has no group baseline)",
        "setting": "the study's kind (controlled or at-will)",
        "with_explanations": "which controlled games showed explanations",
        "difficulty": "set difficulty by rating (Fig. 8)",
        "score": "scores (Table 1)", "won": "win rates", "started": "the time order of games",
    },
    "rounds": {
        "game_id": "", "round": "", "explained": "which games used explanations",
        "answer_correct": "answer correctness (Fig. 10)", "answer_grade": "automatic answer grades",
        "parsed": "the rounds whose question the parser could not read (ungraded_rounds)",
    },
    "ratings": {
        "game_id": "", "round": "", "rating": "helpfulness ratings (Figs. 6-8)",
        "explained": "whether a rated round showed explanations",
    },
    "explanations": {
        "game_id": "", "round": "", "explainer": "", "is_secret": "which explanations were of the secret image",
        "grade": "automatic explanation grades",
    },
    "participants": {"study": "", "participant": "", "flags": "quality flags and exclusions"},
    "rater_ratings": {
        "game": "", "round": "", "explainer": "", "rater": "rater agreement",
        "explanation_rating": "raters' explanation correctness", "answer_rating": "raters' answer correctness",
    },
    "problems": {},
    "studies": {"study": "", "preregistration": "the pre-registration (its exclusions applied by default, its "
                                                "primary test; experiments/analysis/preregistered.py)"},
    "assignments": {"study": "", "participant": ""},     # each join's slot, arm and order (game/assignment.py)
}
TABLE_KEYS = {"games": ("game_id",), "rounds": ("game_id", "round"), "ratings": ("game_id", "round"),
              "explanations": ("game_id", "round", "explainer"), "participants": ("study", "participant"),
              "rater_ratings": ("game", "round", "explainer"), "studies": ("study",),
              "assignments": ("study", "participant")}   # without these the analysis cannot use a table


def clean(value):
    """Anything stored, made safe to write: text as valid UTF-8 (a lone surrogate becomes U+FFFD, NUL is
    dropped) and numbers as finite JSON (NaN and infinities become null). Export never fails on a field."""
    if isinstance(value, str):
        if value.isascii():
            return value.replace("\x00", "")
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace").replace("\x00", "")
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {clean(str(k)): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def neutralise_formula(value):
    """A CSV cell a spreadsheet would run as a formula gets a leading apostrophe (OWASP's advice);
    JSONL and Parquet keep the raw text."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def tables(events: Iterable[dict], server_key: bytes | None = None) -> dict[str, pd.DataFrame]:
    """The tidy tables. An event that cannot be tabulated (a missing or malformed field) costs only its
    own row: it is listed in the `problems` table, and events.jsonl keeps it whole. `server_key` (a server's
    export: game/export_signature.py server_key) signs each registered study's looks and ran_with."""
    games: dict[str, dict] = {}
    rounds: dict[tuple[str, int], dict] = {}
    ratings, explanations, participants, rater, problems = [], [], {}, [], []
    studies: dict[str, dict] = {}
    assignments: list[dict] = []
    for e in events:
        try:
            _tabulate(clean(e), games, rounds, ratings, explanations, participants, rater, studies, assignments)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as error:
            problems.append({"id": clean(str(e.get("id", ""))), "type": clean(str(e.get("type", ""))),
                             "error": f"{type(error).__name__}: {clean(str(error))}"[:300]})
    for row in ratings:
        row["game_won"] = games.get(row["game_id"], {}).get("won")
    for row in studies.values():
        if server_key is not None and row["preregistration_sha256"]:
            row["signature"] = sign(server_key, row)
    _add_quality_flags(participants, games, ratings)
    return {"games": pd.DataFrame(list(games.values())), "rounds": pd.DataFrame(list(rounds.values())),
            "ratings": pd.DataFrame(ratings), "explanations": pd.DataFrame(explanations),
            "participants": pd.DataFrame(list(participants.values())), "rater_ratings": pd.DataFrame(rater),
            "studies": pd.DataFrame(list(studies.values()), columns=STUDY_COLUMNS),
            "assignments": pd.DataFrame(assignments, columns=ASSIGNMENT_COLUMNS),
            "problems": pd.DataFrame(problems, columns=["id", "type", "error"])}


def _add_quality_flags(participants: dict, games: dict, ratings: list[dict]) -> None:
    played: dict[tuple, list[PlayedGame]] = {}
    for g in games.values():
        played.setdefault((g["study"], g["participant"]), []).append(PlayedGame(g["questions"] or 0, g["seconds"]))
    rated: dict[tuple, list[str]] = {}
    for r in ratings:
        rated.setdefault((r["study"], r["participant"]), []).append(r["rating"])
    repeats = repeat_flags([Participation(study, who, frozenset(row["browsers"]), row["consented"] is not None)
                            for (study, who), row in participants.items()])
    for key, row in participants.items():
        row.update(quality_flags(played.get(key, []), rated.get(key, [])))
        raised = [name for name in CHECK_FLAGS if row.get(name)]     # the participant checks' flags (_check_result)
        repeated = repeats.get(key, [])
        row.update({name: name in repeated for name in REPEAT_FLAGS}, browsers="+".join(sorted(row["browsers"])))
        row["flags"] = "+".join(filter(None, [row["flags"], *raised, *repeated]))


def _tabulate(e: dict, games: dict, rounds: dict, ratings: list, explanations: list, participants: dict,
              rater: list, studies: dict, assignments: list) -> None:
    kind, game = e["type"], e.get("game")
    if kind == "study_created":
        studies[e["study"]] = _study_row(e)
    if kind == "join":
        participants[(e["study"], e["participant"])] = {
            "study": e["study"], "participant": e["participant"], "arm": e.get("arm"), "order": e.get("order"),
            "slot": e.get("slot"), "joined": e["time"], "consented": None, "declined": None, "finished": None,
            # the browsers the participation was bound to (server/browser.py in_study; none in logs from before)
            "browsers": {str(e["browser"])} if e.get("browser") else set(),
            **{f"id_{k}": v for k, v in (e.get("ids") or {}).items()}}
        # every assignment as the join logged it: reproducible from the study's seed (studies table's config;
        # game/assignment.py); assigned_by "link" where a demo named its arm, empty for joins from before slots
        assignments.append({"study": e["study"], "participant": e["participant"], "slot": e.get("slot"),
                            "block": e.get("block"), "arm": e.get("arm"), "order": e.get("order"),
                            "assigned": e["time"], "refilled_slot": e.get("refilled_slot"),
                            "assigned_by": e.get("assigned_by")})
    elif kind == "rejoin" and e.get("browser") and (e["study"], e["participant"]) in participants:
        participants[(e["study"], e["participant"])]["browsers"].add(str(e["browser"]))   # bound again after a release
    elif kind in ("consent", "decline") and (e["study"], e["participant"]) in participants:
        participants[(e["study"], e["participant"])]["consented" if kind == "consent" else "declined"] = e["time"]
    elif kind in CHECK_EVENTS and (e["study"], e["participant"]) in participants:
        _check_result(participants[(e["study"], e["participant"])], e)
    elif kind == "questionnaire" and (e["study"], e["participant"]) in participants:
        participants[(e["study"], e["participant"])].update(
            {f"q_{k}": v for k, v in (e.get("answers") or {}).items()})
    elif kind == "finish" and (e["study"], e["participant"]) in participants:
        participants[(e["study"], e["participant"])]["finished"] = e["time"]
        if "completion_code" in e:          # per-participant codes (server/completion.py): what the researcher verifies
            participants[(e["study"], e["participant"])]["completion_code"] = e["completion_code"]
    elif kind == "game_start":
        games[game] = {"game_id": game, **{k: e.get(k) for k in GAME_KEYS}, "session": e.get("session"),
                       "setting": e.get("setting"), "with_explanations": e.get("with_explanations"),
                       # at-will studies that randomize the offer (game/offer.py): None elsewhere
                       "offered": e.get("offered"),
                       "order": e.get("order"), "modes": "+".join(e.get("modes") or []), "difficulty": e.get("difficulty"),
                       "n_images": len(e.get("images") or []),
                       "secret_image": (e.get("world_images") or e["images"])[e["secret"]],
                       "started": e["time"], "guess_image": None, "right": None, "score": None, "won": None,
                       "questions": 0, "spent": None, "finished": None, "seconds": None}
    elif kind == "question":
        rounds[(game, e["round"])] = {
            "game_id": game, **{k: e.get(k) for k in GAME_KEYS}, "round": e["round"], "question": e["question"],
            "parsed": e.get("parsed"), "notice": e.get("notice"),   # what the player was told (game/unread_question.py)
            "program": json.dumps(e.get("program")) if e.get("program") else None,
            "answer": e["answer"], "probability": e.get("probability"), "answered_by": e.get("answered_by"),
            "truth": e.get("truth"), "answer_correct": (e["answer"] == e["truth"]) if e.get("truth") is not None else None,
            "answer_grade": e.get("answer_grade"), "explained": e.get("explained"), "cost": e.get("cost"),
            "points_after": e.get("points"), "rating": None, "inference_ms": e.get("inference_ms"),
            "ask_to_answer_ms": e.get("ask_to_answer_ms"), "time": e["time"]}
        explanations += _explanation_rows(e, e["round"])
    elif kind == "explanations_bought" and (game, e["round"]) in rounds:
        row = rounds[(game, e["round"])]
        row.update(explained=True, cost=(row["cost"] or 0) + e["cost"], points_after=e.get("points"))
        explanations += _explanation_rows(e, e["round"])
    elif kind == "rating":
        if (game, e["round"]) in rounds:
            rounds[(game, e["round"])]["rating"] = e["rating"]
        ratings.append({"game_id": game, **{k: e.get(k) for k in GAME_KEYS}, "round": e["round"],
                        "rating": e["rating"], "rating_score": RATING_SCORE.get(e["rating"]),
                        "explained": e.get("explained"), "with_explanations": e.get("with_explanations"),
                        "time": e["time"]})
    elif kind == "guess" and game in games:
        games[game].update(guess_image=e.get("guess_image"), right=e.get("right"), score=e.get("score"),
                           won=e.get("won"), questions=e.get("questions"), spent=e.get("spent"),
                           finished=e["time"], seconds=e.get("seconds"))
    elif kind == "outcomes_looked" and e["study"] in studies:    # an export of a registered study: a look at outcomes
        looks = json.loads(studies[e["study"]]["looks"] or "[]")
        looks.append({k: e.get(k) for k in ("time", "where", "finished", "planned_n")})
        studies[e["study"]]["looks"] = json.dumps(looks)
    elif kind == "study_ran_with" and e["study"] in studies:     # what a server ran a registered study with
        ran = {k: e.get(k) for k in RAN_WITH}
        seen = json.loads(studies[e["study"]]["ran_with"] or "[]")
        if ran not in seen:
            studies[e["study"]]["ran_with"] = json.dumps(seen + [ran], sort_keys=True)
    elif kind == "rater_rating":
        rater.append({k: e.get(k) for k in ("rater", "item", "game", "round", "explainer", "kind",
                                             "explanation_rating", "answer_rating", "time")})


def _study_row(event: dict) -> dict:
    """A study as it was created: its whole config as JSON text, and its pre-registration (the rules the
    analysis applies by default, game/preregistration.py) in columns of their own, and the consent form and
    questionnaire its participants were shown (the defaults filled in: game/consent_form.py) as JSON text."""
    config = event["config"]
    plan = config.get("preregistration") or {}
    return {"study": event["study"], "created": event["time"], "kind": config.get("kind"),
            "config": json.dumps(config, sort_keys=True),
            "preregistration": json.dumps(plan, sort_keys=True) if plan else None,
            "preregistration_sha256": plan.get("sha256"), "looks": None, "ran_with": None, "signature": None,
            "consent_form": json.dumps(parse_consent(config.get("consent") or {}).public(), sort_keys=True),
            "questionnaire": json.dumps([item.public() for item in parse_questionnaire(config.get("questionnaire") or [])])}


def outcome_looks(events: Iterable[dict], where: str, now: float) -> list[dict]:
    """An `outcomes_looked` event for each pre-registered study in `events`, with how many of its participants had
    finished (real ones: not test participations, game/study.py): exporting a registered study's data is a look at
    its outcomes (the console and the live report show none before the planned N), and the analysis lists every
    look, those before the planned N as deviations. `events` is read once (an iterator will do)."""
    registered, finished = {}, {}
    for e in events:
        if e.get("type") == "study_created" and (e.get("config") or {}).get("preregistration", {}).get("sha256"):
            registered[e["study"]] = e["config"]["preregistration"].get("planned_n")
        elif e.get("type") == "finish" and not is_test_participation(e.get("participant")):
            finished[e.get("study")] = finished.get(e.get("study"), 0) + 1
    return [{"type": "outcomes_looked", "time": now, "study": study, "where": where, "finished": finished.get(study, 0),
             "planned_n": planned} for study, planned in registered.items()]


LIVE_LOOK = "live report"


def live_look(events: list[dict], study: str, now: float) -> dict | None:
    """The `outcomes_looked` event a live report of `study` is, or None: a look when the page shows a registered
    study's outcomes (its planned N finished: before, it hides them), once per number finished (the look grows the
    log, which makes the page stale, and its recomputation must not log another)."""
    for look in outcome_looks(events, LIVE_LOOK, now):
        if look["study"] == study and look["planned_n"] is not None and look["finished"] >= look["planned_n"] and \
                not any(e.get("type") == "outcomes_looked" and e.get("study") == study and e.get("where") == LIVE_LOOK
                        and e.get("finished") == look["finished"] for e in events):
            return look
    return None


def _check_result(row: dict, e: dict) -> None:
    """A participant check's result (game/checks.py, server/check_stages.py) in its participant's columns; a
    study without checks has none of them, a participant who never reached a check has it empty."""
    kind = e["type"]
    if kind == "comprehension":          # one event an attempt: the latest says where the participant stands
        row.update(comprehension_failures=e["failures"], comprehension_passed=e["passed"],
                   comprehension_failed=bool(row.get("comprehension_failed") or e.get("flagged")))
    elif kind == "colour_screen":
        row.update(colour_screen_correct=e["correct"], colour_screen_plates=e.get("plates"),
                   colour_screen_rule=e.get("rule"), colour_screen_passed=e["passed"],
                   colour_screen_failed=not e["passed"])
    elif kind == "attention_check":
        row["attention_total"] = (row.get("attention_total") or 0) + 1
        row["attention_passed"] = (row.get("attention_passed") or 0) + int(bool(e["passed"]))
        row["attention_failed"] = row["attention_passed"] < row["attention_total"]
    elif kind == "demographics":
        row.update({f"demo_{k}": v for k, v in (e.get("answers") or {}).items()})
    else:                                # screened_out: which check ended the participation
        row["screened_out"] = e.get("check")


def _explanation_rows(event: dict, round_: int) -> list[dict]:
    return [{"game_id": event.get("game"), **{k: event.get(k) for k in GAME_KEYS}, "round": round_,
             "explainer": x["explainer"], "kind": x["kind"], "position": x["position"], "is_secret": x["is_secret"],
             "for_the_secret": x["for_the_secret"], "grade": x["grade"], "payload": json.dumps(x["payload"])}
            for x in event.get("explanations") or []]


def _single_typed(frame: pd.DataFrame) -> pd.DataFrame:
    """Parquet needs one type per column: a column that mixes types (a number where text was expected,
    say) keeps its text and writes the other values as JSON text instead of failing the export."""
    frame = frame.copy()
    for column in frame.columns[frame.dtypes == object]:
        kinds = {type(v) for v in frame[column] if v is not None and not (isinstance(v, float) and math.isnan(v))}
        if len(kinds) > 1 or kinds - {str, bool, int, float}:
            frame[column] = [v if isinstance(v, str) or v is None else json.dumps(v) for v in frame[column]]
    return frame


def write_export(events: list[dict], out: str | Path, fmt: str = "csv", server_key: bytes | None = None) -> list[Path]:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose {', '.join(FORMATS)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in tables(events, server_key).items():
        path = out / f"{name}.{fmt}"
        tmp = path.with_name(path.name + ".tmp")
        if fmt == "csv":
            frame.map(neutralise_formula).to_csv(tmp, index=False)
        elif fmt == "jsonl":
            frame.to_json(tmp, orient="records", lines=True)
        else:
            _single_typed(frame).to_parquet(tmp, index=False)
        tmp.replace(path)
        written.append(path)
    raw = out / "events.jsonl"
    with open(raw.with_name("events.jsonl.tmp"), "w", encoding="utf-8") as f:
        for e in events:
            f.write(json.dumps(clean(e), allow_nan=False) + "\n")
    raw.with_name("events.jsonl.tmp").replace(raw)
    return written + [raw]
