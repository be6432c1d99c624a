"""The event log as tidy tables: one row per game, per question round, per helpfulness rating, per
explanation shown, per participant and per independent rater's rating; plus the raw events.

    exag export --format csv|jsonl|parquet --out DIR [--redis-url URL | --data-dir DIR]
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from game.settings import RATINGS

FORMATS = ("csv", "jsonl", "parquet")
RATING_SCORE = {r: len(RATINGS) - i for i, r in enumerate(RATINGS)}   # "Helping a lot" = 5 ... "Completely confusing" = 1
GAME_KEYS = ("study", "participant", "arm", "game_number")


def tables(events: Iterable[dict]) -> dict[str, pd.DataFrame]:
    games: dict[str, dict] = {}
    rounds: dict[tuple[str, int], dict] = {}
    ratings, explanations, participants, rater = [], [], {}, []
    for e in events:
        kind, game = e["type"], e.get("game")
        if kind == "join":
            participants[(e["study"], e["participant"])] = {
                "study": e["study"], "participant": e["participant"], "arm": e.get("arm"), "joined": e["time"],
                "consented": None, "finished": None, **{f"id_{k}": v for k, v in (e.get("ids") or {}).items()}}
        elif kind == "consent" and (e["study"], e["participant"]) in participants:
            participants[(e["study"], e["participant"])]["consented"] = e["time"]
        elif kind == "questionnaire" and (e["study"], e["participant"]) in participants:
            participants[(e["study"], e["participant"])].update(
                {f"q_{k}": v for k, v in (e.get("answers") or {}).items()})
        elif kind == "finish" and (e["study"], e["participant"]) in participants:
            participants[(e["study"], e["participant"])]["finished"] = e["time"]
        elif kind == "game_start":
            games[game] = {"game_id": game, **{k: e.get(k) for k in GAME_KEYS}, "session": e.get("session"),
                           "setting": e.get("setting"), "with_explanations": e.get("with_explanations"),
                           "modes": "+".join(e.get("modes") or []), "difficulty": e.get("difficulty"),
                           "n_images": len(e.get("images") or []),
                           "secret_image": (e.get("world_images") or e["images"])[e["secret"]],
                           "started": e["time"], "guess_image": None, "right": None, "score": None, "won": None,
                           "questions": 0, "spent": None, "finished": None, "seconds": None}
        elif kind == "question":
            rounds[(game, e["round"])] = {
                "game_id": game, **{k: e.get(k) for k in GAME_KEYS}, "round": e["round"], "question": e["question"],
                "parsed": e.get("parsed"), "program": json.dumps(e.get("program")) if e.get("program") else None,
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
        elif kind == "rater_rating":
            rater.append({k: e.get(k) for k in ("rater", "item", "game", "round", "explainer", "kind",
                                                 "explanation_rating", "answer_rating", "time")})
    for row in ratings:
        row["game_won"] = games.get(row["game_id"], {}).get("won")
    return {"games": pd.DataFrame(list(games.values())), "rounds": pd.DataFrame(list(rounds.values())),
            "ratings": pd.DataFrame(ratings), "explanations": pd.DataFrame(explanations),
            "participants": pd.DataFrame(list(participants.values())), "rater_ratings": pd.DataFrame(rater)}


def _explanation_rows(event: dict, round_: int) -> list[dict]:
    return [{"game_id": event.get("game"), **{k: event.get(k) for k in GAME_KEYS}, "round": round_,
             "explainer": x["explainer"], "kind": x["kind"], "position": x["position"], "is_secret": x["is_secret"],
             "for_the_secret": x["for_the_secret"], "grade": x["grade"], "payload": json.dumps(x["payload"])}
            for x in event.get("explanations") or []]


def write_export(events: list[dict], out: str | Path, fmt: str = "csv") -> list[Path]:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose {', '.join(FORMATS)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in tables(events).items():
        path = out / f"{name}.{fmt}"
        tmp = path.with_name(path.name + ".tmp")
        if fmt == "csv":
            frame.to_csv(tmp, index=False)
        elif fmt == "jsonl":
            frame.to_json(tmp, orient="records", lines=True)
        else:
            frame.to_parquet(tmp, index=False)
        tmp.replace(path)
        written.append(path)
    raw = out / "events.jsonl"
    with open(raw.with_name("events.jsonl.tmp"), "w") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")
    raw.with_name("events.jsonl.tmp").replace(raw)
    return written + [raw]
