"""Speed of `exag analyze` on a realistic synthetic export, on this machine.

The export is made here: the event log of a controlled study (arms none, attention, relqa, both) and an
at-will study, every participant playing 20 games in 4 sessions of 5, 1-10 questions per game, a
helpfulness rating per question, the explanations shown with their automatic grades, and three
independent raters for a share of the secret image's explanations. The numbers are drawn so that
explanations help a little (a win is about 5 points likelier with them), answers are right about 2 times
in 3, explanation grades follow answer correctness, and helpfulness ratings follow both. The events go
through `game.export.write_export`, so the tables have exactly the export's columns.

Then it times, separately and in total: load (`load_tables`), analyze (`analyze`), figures
(`draw_figures`), html (`render_html`) and the rest of the report (report.json and the CSV tables), and
reports the peak memory of the process (resource.getrusage).

    python -m experiments.benchmark.analysis_speed --games 10000 --json results/analysis_speed.json
"""
from __future__ import annotations

import argparse
import hashlib
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from experiments.analysis.scales import ANSWER_SCALE, EXPLANATION_SCALE, RATINGS   # not explainers' (loads torch)
from experiments.benchmark import write_report
from game.settings import AT_WILL, CONTROLLED

GAMES_PER_PARTICIPANT = 20
GAMES_PER_SESSION = 5
CONTROLLED_SHARE = 0.8               # of the games; the rest are at-will
CONTROLLED_ARMS = ("none", "attention", "relqa", "both")
ARM_EXPLAINERS = {"none": (), "attention": ("attention",), "relqa": ("relqa",), "both": ("attention", "relqa")}
AT_WILL_EXPLAINERS = {"attention": "attention", "objscene": "words", "relqa": "qa_pairs", "nle": "text"}
KINDS = {"attention": "attention", "relqa": "qa_pairs", "objscene": "words", "nle": "text"}
RATED_GAME_SHARE = 0.3               # finished games whose secret-image explanations go to the raters
RATERS_PER_ITEM = 3
RATERS = 12
EXPLANATION_EFFECT = 0.25            # log-odds of a right guess with explanations ("help a little")
FAST_PARTICIPANTS = 0.02             # share of participants who click through (games under 10 s)
STRAIGHT_LINERS = 0.03               # share who give every round the same rating
UNPARSED_QUESTIONS = 0.05
BUDGET_S = 30.0                      # DESIGN.md: the analysis of 10,000 games in under 30 s on 2 cores
ANSWERS = ("yes", "no", "red", "blue", "green", "cube", "sphere", "cylinder", "metal", "rubber", "0", "1", "2", "3")

# payloads as the event log keeps them (display precision, no masks), small but of the real shape
PAYLOADS = {
    "attention": {"grid": [[0.01, 0.02, 0.05, 0.02], [0.03, 0.21, 0.12, 0.02], [0.02, 0.18, 0.09, 0.01],
                           [0.01, 0.02, 0.03, 0.01]],
                  "objects": [{"box": [41.0, 60.5, 88.0, 112.0], "score": 0.97, "weight": 0.52},
                              {"box": [150.0, 90.0, 190.5, 131.0], "score": 0.91, "weight": 0.31}]},
    "relqa": {"pairs": [{"question": q, "answer": a, "probability": 0.9, "distance": 0.1}
                        for q, a in (("Is there a red cube?", "yes"), ("How many spheres are there?", "2"),
                                     ("What color is the big cylinder?", "blue"), ("Is there a metal ball?", "no"),
                                     ("What shape is the small red thing?", "cube"))]},
    "objscene": {"words": [{"word": w, "score": 0.01, "probability": 0.95} for w in ("red", "cube", "metal", "left")]},
    "nle": {"text": "there is a large red metal cube left of the small blue sphere"},
}


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + np.exp(-x))


class _Study:
    """Draws one participant's games as events, the way server/play.py logs them."""

    def __init__(self, rng: np.random.Generator, start_time: float) -> None:
        self.rng = rng
        self.time = start_time
        self.events: list[dict] = []
        self.rated_items: list[dict] = []
        self.counter = 0
        self.pace = 1.0                 # a participant who clicks through plays 10 times faster

    def _id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter:07d}"

    def _tick(self, seconds: float) -> float:
        self.time += seconds * self.pace
        return self.time

    def participant(self, study: str, kind: str, arm: str) -> None:
        rng = self.rng
        pid = f"pid:{self._id('p')}"
        skill = rng.normal(0.0, 0.5)
        fast = rng.random() < FAST_PARTICIPANTS
        self.pace = 0.1 if fast else 1.0
        straight = RATINGS[int(rng.integers(len(RATINGS)))] if rng.random() < STRAIGHT_LINERS else None
        base = {"study": study, "participant": pid}
        self.events.append({"type": "join", "time": self._tick(60), **base, "game": "", "arm": arm,
                            "ids": {"pid": pid[4:]}})
        self.events.append({"type": "consent", "time": self._tick(20), **base, "game": ""})
        for number in range(GAMES_PER_PARTICIPANT):
            session = number // GAMES_PER_SESSION
            if kind == "controlled":
                shown = ARM_EXPLAINERS[arm] if session % 2 == 1 else ()
                self._controlled_game(base, arm, number, session, shown, skill, straight)
            else:
                self._at_will_game(base, arm, number, session, skill, straight)
        self.events.append({"type": "questionnaire", "time": self._tick(40), **base, "game": "",
                            "answers": {"age": str(int(rng.integers(18, 70))), "helpful": "Agree"}})
        self.events.append({"type": "finish", "time": self._tick(1), **base, "game": ""})
        self.pace = 1.0

    # --- one game --------------------------------------------------------------------------------

    def _start(self, base: dict, arm: str, number: int, session: int, settings, modes, with_expl: bool) -> dict:
        rng = self.rng
        game = self._id("g")
        images = [int(i) for i in rng.choice(1500, settings.images, replace=False)]
        secret = int(rng.integers(settings.images))
        difficulty = float(np.round(rng.normal(1.0, 0.15), 4))
        common = {**base, "game": game, "arm": arm, "game_number": number}
        self.events.append({"type": "game_start", "time": self._tick(5), **common, "images": images,
                            "tokens": [f"t{i}" for i in range(settings.images)], "secret": secret,
                            "difficulty": difficulty, "setting": settings.name, "with_explanations": with_expl,
                            "world_images": [i + 10_000 for i in images], "session": session, "modes": list(modes)})
        return {"common": common, "secret": secret, "difficulty": difficulty, "images": settings.images}

    def _question(self, game: dict, round_: int, points: int, explained: bool, explanations: list[dict],
                  correct: bool) -> dict:
        """A question round: the answer and its grade; returns what the rest of the round needs."""
        rng = self.rng
        parsed = rng.random() >= UNPARSED_QUESTIONS
        answer = ANSWERS[int(rng.integers(len(ANSWERS)))]
        if parsed:
            truth = answer if correct else ANSWERS[(ANSWERS.index(answer) + 1 + int(rng.integers(3))) % len(ANSWERS)]
            grade = "correct" if correct else ("somewhat correct" if rng.random() < 0.3 else "completely wrong")
        else:
            truth, grade = None, "ungradable"
        self.events.append({"type": "question", "time": self._tick(rng.gamma(3.0, 5.0)), **game["common"],
                            "question": "is there a red cube?", "answer": answer, "cost": 1, "explained": explained,
                            "points": points, "round": round_, "program": [{"function": "scene"}] if parsed else None,
                            "parsed": parsed, "probability": round(float(rng.uniform(0.3, 1.0)), 3),
                            "answered_by": "agent", "truth": truth, "answer_grade": grade,
                            "explanations": explanations, "inference_ms": float(rng.gamma(4.0, 10.0)),
                            "batch_rounds": 1, "ask_to_answer_ms": float(rng.gamma(4.0, 15.0))})
        return {"correct": correct, "answer_grade": grade}

    def _explanations(self, names, game: dict, correct: bool, for_every: bool) -> tuple[list[dict], int]:
        """Explanation rows of one round (every image, or the secret's only) and the secret's best grade rank."""
        rng = self.rng
        rows, best = [], len(EXPLANATION_SCALE) - 1
        positions = range(game["images"]) if for_every else [game["secret"]]
        for name in names:
            for position in positions:
                is_secret = position == game["secret"]
                mean = 1.2 if (correct or not is_secret) else 2.6
                rank = int(np.clip(np.round(rng.normal(mean, 1.1)), 0, 4))
                if is_secret:
                    best = min(best, rank)
                rows.append({"explainer": name, "kind": KINDS[name], "position": position, "is_secret": is_secret,
                             "for_the_secret": not for_every, "grade": EXPLANATION_SCALE[rank],
                             "seconds": 0.01, "payload": PAYLOADS[name]})
        return rows, best

    def _rate(self, game: dict, round_: int, correct: bool, explained: bool, best_rank: int, with_expl: bool,
              straight: str | None) -> int:
        rng = self.rng
        latent = 2.7 + 0.9 * correct + (0.45 * (2 - best_rank) if explained else 0.0) + rng.normal(0, 0.9)
        score = int(np.clip(np.round(latent), 1, 5))
        rating = straight or RATINGS[len(RATINGS) - score]
        self.events.append({"type": "rating", "time": self._tick(rng.gamma(2.0, 1.5)), **game["common"],
                            "round": round_, "rating": rating, "explained": explained, "with_explanations": with_expl,
                            "question": "is there a red cube?"})
        return len(RATINGS) - RATINGS.index(rating)

    def _guess(self, game: dict, logit: float, points: int, rounds: int, started: float) -> None:
        rng = self.rng
        right = bool(rng.random() < _sigmoid(logit))
        guess = game["secret"] if right else int((game["secret"] + 1 + rng.integers(game["images"] - 1)) % game["images"])
        score = points if right else 0
        self.events.append({"type": "guess", "time": self._tick(rng.gamma(2.0, 3.0)), **game["common"], "guess": guess,
                            "secret": game["secret"], "right": right, "score": score, "won": right and score > 0,
                            "questions": rounds, "spent": 0, "secret_image": 0, "guess_image": 0,
                            "seconds": self.time - started})

    def _rounds(self) -> int:
        return int(np.clip(self.rng.poisson(3.5) + 1, 1, 10))

    def _raters(self, game: dict, round_: int, items: list[dict], answer_grade: str) -> None:
        """Three raters each for the secret image's explanations of a round (a share of games only)."""
        rng = self.rng
        for x in items:
            if not x["is_secret"]:
                continue
            item = hashlib.blake2b(f"{game['common']['game']}:{round_}:{x['explainer']}".encode(),
                                   digest_size=8).hexdigest()
            rank = EXPLANATION_SCALE.index(x["grade"])
            answer_rank = ANSWER_SCALE.index(answer_grade) if answer_grade in ANSWER_SCALE else 1
            for rater in rng.choice(RATERS, RATERS_PER_ITEM, replace=False):
                self.rated_items.append({
                    "type": "rater_rating", "time": 0.0, "game": game["common"]["game"], "rater": f"rater-{rater}",
                    "item": item, "round": round_, "explainer": x["explainer"], "kind": x["kind"],
                    "explanation_rating": EXPLANATION_SCALE[int(np.clip(rank + rng.integers(-1, 2), 0, 4))],
                    "answer_rating": ANSWER_SCALE[int(np.clip(answer_rank + rng.integers(-1, 2) * (rng.random() < 0.3),
                                                               0, 2))]})

    def _controlled_game(self, base, arm, number, session, shown, skill, straight) -> None:
        rng, settings = self.rng, CONTROLLED
        with_expl = bool(shown)
        game = self._start(base, arm, number, session, settings, ARM_EXPLAINERS[arm], with_expl)
        started, points, rounds = self.time, settings.start_points, self._rounds()
        rated = rng.random() < RATED_GAME_SHARE
        correct_share, helpful = [], []
        for r in range(rounds):
            points -= settings.question_cost
            correct = rng.random() < 0.67
            explanations, best = self._explanations(shown, game, correct, True) if shown else ([], 4)
            answered = self._question(game, r, points, with_expl, explanations, correct)
            correct_share.append(answered["correct"])
            helpful.append(self._rate(game, r, answered["correct"], with_expl, best, with_expl, straight))
            if rated and explanations:
                self._raters(game, r, explanations, answered["answer_grade"])
        logit = (0.55 + skill + 2.0 * (np.mean(correct_share) - 0.67) + 3.0 * (game["difficulty"] - 1.0)
                 + 0.05 * session + EXPLANATION_EFFECT * with_expl + 0.15 * (np.mean(helpful) - 3) * with_expl)
        self._guess(game, logit, points, rounds, started)

    def _at_will_game(self, base, arm, number, session, skill, straight) -> None:
        rng, settings = self.rng, AT_WILL
        game = self._start(base, arm, number, session, settings, tuple(AT_WILL_EXPLAINERS), True)
        started, points, rounds = self.time, settings.start_points, self._rounds()
        rated = rng.random() < RATED_GAME_SHARE
        buy = 0.2 + 0.5 * number / (GAMES_PER_PARTICIPANT - 1)      # players learn to use explanations
        correct_share, bought = [], 0
        for r in range(rounds):
            points -= settings.question_cost
            correct = rng.random() < 0.67
            answered = self._question(game, r, points, False, [], correct)
            correct_share.append(answered["correct"])
            explained, best = False, 4
            if rng.random() < buy and points >= settings.explanation_cost:
                points -= settings.explanation_cost
                every, _ = self._explanations(settings.for_every_image, game, correct, True)
                secret, best = self._explanations(settings.for_the_secret + ("nle",), game, correct, False)
                self.events.append({"type": "explanations_bought", "time": self._tick(rng.gamma(2.0, 2.0)),
                                    **game["common"], "round": r, "cost": settings.explanation_cost, "points": points,
                                    "explanations": every + secret, "inference_ms": float(rng.gamma(4.0, 30.0))})
                explained, bought = True, bought + 1
                if rated:
                    self._raters(game, r, every + secret, answered["answer_grade"])
            self._rate(game, r, answered["correct"], explained, best, True, straight)
        logit = (-0.3 + skill + 2.0 * (np.mean(correct_share) - 0.67) + 3.0 * (game["difficulty"] - 1.0)
                 + 2 * EXPLANATION_EFFECT * (bought > 0))
        self._guess(game, logit, points, rounds, started)


def synthetic_events(games: int = 10_000, seed: int = 0, controlled_share: float = CONTROLLED_SHARE,
                     controlled_study: str = "sim-controlled", at_will_study: str = "sim-at-will") -> list[dict]:
    """The event log of about `games` games (whole participants of 20 games each), in time order, with
    the raters' ratings after the games they rate."""
    rng = np.random.default_rng(seed)
    participants = max(1, round(games / GAMES_PER_PARTICIPANT))
    controlled = round(participants * controlled_share) if controlled_share < 1 else participants
    study = _Study(rng, start_time=1_700_000_000.0)
    for i in range(participants):
        if i < controlled:
            study.participant(controlled_study, "controlled", CONTROLLED_ARMS[i % len(CONTROLLED_ARMS)])
        else:
            study.participant(at_will_study, "at-will", "both")
    for event in study.rated_items:
        event["time"] = study._tick(5)
    return study.events + study.rated_items


def write_synthetic_export(out: str | Path, games: int = 10_000, seed: int = 0, fmt: str = "csv", **options) -> Path:
    """An `exag export` directory of synthetic games (see synthetic_events)."""
    from game.export import write_export

    write_export(synthetic_events(games, seed, **options), out, fmt)
    return Path(out)


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def _make_export_elsewhere(out: Path, games: int, seed: int, fmt: str) -> float:
    """Makes the export in a child process, so that this process's peak memory is the analysis's own."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "experiments.benchmark.analysis_speed", "--games", str(games), "--seed",
                    str(seed), "--format", fmt, "--export-only", str(out)], check=True)
    return time.perf_counter() - started


def benchmark(games: int, seed: int = 0, fmt: str = "csv", keep: Path | None = None) -> dict:
    from experiments.analysis.data import load_tables
    from experiments.analysis.figures import draw_figures
    from experiments.analysis.html import render_html
    from experiments.analysis.report import analyze
    from experiments.analysis.write import write_json, write_tables

    work = Path(tempfile.mkdtemp(prefix="exag-analysis-speed-"))
    try:
        export = work / "export"
        made_s = _make_export_elsewhere(export, games, seed, fmt)
        sizes = {p.name: p.stat().st_size for p in sorted(export.iterdir())}
        out = keep or work / "report"
        out.mkdir(parents=True, exist_ok=True)
        rss_before = _peak_rss_mb()
        seconds = {}

        started = time.perf_counter()
        tables = load_tables(export)
        seconds["load"] = time.perf_counter() - started
        counts = {name: int(len(getattr(tables, name))) for name in
                  ("games", "rounds", "ratings", "explanations", "participants", "rater_ratings")}

        started = time.perf_counter()
        report = analyze(tables)
        seconds["analyze"] = time.perf_counter() - started

        started = time.perf_counter()
        figures = draw_figures(report, out / "figures")
        seconds["figures"] = time.perf_counter() - started

        started = time.perf_counter()
        page = render_html(report, figures)
        seconds["html"] = time.perf_counter() - started

        started = time.perf_counter()
        (out / "report.html").write_text(page, encoding="utf-8")
        write_json(report, out / "report.json")
        write_tables(report, out / "tables")
        seconds["json_and_tables"] = time.perf_counter() - started
        seconds["total"] = sum(seconds.values())
        return {"games": counts["games"], "rows": counts, "export_bytes": sizes, "export_format": fmt,
                "export_made_s": round(made_s, 2), "seconds": {k: round(v, 3) for k, v in seconds.items()},
                "budget_s": BUDGET_S, "within_budget": seconds["total"] < BUDGET_S,
                "peak_rss_mb": round(_peak_rss_mb(), 1), "rss_mb_before_loading": round(rss_before, 1),
                "html_bytes": len(page.encode()), "figure_files": len(figures),
                "controlled_overall": next((r for r in (report.get("controlled") or {}).get("table1") or []
                                            if r.get("mode") == "overall"), None),
                "machine": {"cpus": os.cpu_count(),
                            "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
                            "python": platform.python_version(), "platform": platform.platform(),
                            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
                            "load_average_before": [round(x, 2) for x in os.getloadavg()]}}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--games", type=int, default=10_000, help="games in the synthetic export (default: 10000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--format", choices=("csv", "jsonl", "parquet"), default="csv", help="export format (default: csv)")
    parser.add_argument("--keep", type=Path, default=None, help="write the report here too (default: a temp dir)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--export-only", type=Path, default=None, metavar="DIR",
                        help="only write the synthetic export to DIR (no timing)")
    args = parser.parse_args(argv)
    if args.export_only:
        write_synthetic_export(args.export_only, args.games, args.seed, args.format)
        print(f"synthetic export of {args.games} games in {args.export_only}")
        return 0
    result = benchmark(args.games, args.seed, args.format, args.keep)
    s = result["seconds"]
    print(f"{result['games']} games ({result['rows'].get('rounds')} rounds, {result['rows'].get('ratings')} ratings, "
          f"{result['rows'].get('explanations')} explanations, {result['rows'].get('rater_ratings')} rater ratings; "
          f"export made in {result['export_made_s']:.1f} s)")
    print(f"load {s['load']:.2f} s, analyze {s['analyze']:.2f} s, figures {s['figures']:.2f} s, html {s['html']:.2f} s, "
          f"report.json + tables {s['json_and_tables']:.2f} s; total {s['total']:.2f} s "
          f"({'within' if result['within_budget'] else 'OVER'} the {BUDGET_S:.0f} s budget); peak memory "
          f"{result['peak_rss_mb']:.0f} MB")
    write_report(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
