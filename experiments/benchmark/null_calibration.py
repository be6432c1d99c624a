"""Null calibration: how often each test the report prints calls an effect that is not there, at every
study size, and how often it finds one that is.

    python -m experiments.benchmark.null_calibration --replicates 1000 --json results/null_calibration.json

The studies are simulated at the level the analysis reads (a finished game's arm, block, outcome, score;
no server, no agent), so that thousands of them run in minutes; the tests are the report's own: every
study goes through `experiments.analysis.controlled.controlled` or `experiments.analysis.at_will.at_will`
and the p-values are read off the sections they return.

Under the null, explanations change nothing, and participants differ a lot, as real ones do: each has a
skill, a log-odds of winning drawn from N(0, SKILL_SD), that sets the win chance of all their games, and
their scores follow their wins. Controlled: the paper's design, arms none / attention / relqa / both in
permuted blocks of four (8 participants = 2 per arm), 4 sessions of GAMES_PER_SESSION games, odd sessions
without explanations, even with (blocks 2 and 4). Counterbalanced: the same, with arms and orders dealt as
the server deals a study's default order (game/assignment.py: each block of 8 holds every arm once in
each order, abab and baba), which adds the report's order tests (`controlled.order`). At-will: GAMES_AT_WILL games each, and each game uses
explanations with the participant's own propensity (Beta(2, 2)), whatever its outcome. Under the lift,
explanations raise the win probability of the games that show (controlled) or use (at-will) them by
--lift (default 0.10, i.e. 10 points); that column is the test's power at that lift.

Printed per kind, test and size: the share of studies with p < 0.05 (false positives under the null,
power under the lift), its 95% Wilson interval (the Monte Carlo error of --replicates studies), and the
share of studies in which the test reported a p-value at all (below 6 participants the clustered tests
report none, with a sentence why). The goal (issue 27): every test the report prints holds <= 6.5% at
every size it reports a p-value for. The paper's z-tests (games as independent) do not: they are printed
beside the clustered ones for comparison with the paper only, and this table says by how much they miss.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from statsmodels.stats.proportion import proportion_confint
from tqdm import tqdm

from experiments.analysis.at_will import at_will
from experiments.analysis.controlled import controlled
from experiments.analysis.frames import AT_WILL, CONTROLLED, Frames
from experiments.benchmark import write_report
from game.assignment import slots

SIZES = (4, 6, 8, 12, 16, 24, 40)
ARMS = ("none", "attention", "relqa", "both")
SESSIONS, GAMES_PER_SESSION = 4, 5
GAMES_AT_WILL = 10
SKILL_SD = 1.5                 # log-odds: a participant 1 SD above the mean wins ~82% where the mean one wins 50%
BASE_LOG_ODDS = 0.5            # the mean participant wins ~62% (the paper: 61-65% without explanations)
POINTS = 10                    # a game's score: the points left, won games only (game/rules.py's shape)
TARGET = 0.065                 # issue 27: every reported test at most 6.5% false positives


def _skills(rng: np.random.Generator, n: int) -> np.ndarray:
    return BASE_LOG_ODDS + rng.normal(0.0, SKILL_SD, n)


def _won(rng: np.random.Generator, log_odds: np.ndarray, lift: np.ndarray) -> np.ndarray:
    chance = np.clip(1 / (1 + np.exp(-log_odds)) + lift, 0.0, 1.0)
    return (rng.random(len(chance)) < chance).astype(float)


def _score(rng: np.random.Generator, won: np.ndarray) -> np.ndarray:
    return won * rng.integers(1, POINTS + 1, len(won))


def controlled_study(rng: np.random.Generator, participants: int, lift: float,
                     counterbalanced: bool = False) -> pd.DataFrame:
    """One controlled study's finished games, as frames.py derives them. Every participant plays the paper's
    order (abab: without explanations first), or, counterbalanced, the order and arm the server deals
    (game/assignment.py, order "counterbalanced": each block of 8 holds every arm once in each order)."""
    if counterbalanced:
        dealt = slots(int(rng.integers(2**31)), ARMS, "counterbalanced", participants)
        arms, orders = np.array([d.arm for d in dealt]), np.array([d.order for d in dealt])
    else:
        arms = np.concatenate([rng.permutation(ARMS) for _ in range(-(-participants // len(ARMS)))])[:participants]
        orders = np.full(participants, "abab")
    per = SESSIONS * GAMES_PER_SESSION
    who = np.repeat(np.arange(participants), per)
    block = np.tile(np.repeat(np.arange(1, SESSIONS + 1), GAMES_PER_SESSION), participants).astype(float)
    arm, order = arms[who], orders[who]
    expl_arm = (arm != "none").astype(float)
    shows = (((block % 2 == 0) != (order == "baba")) & (expl_arm == 1)).astype(float)
    won = _won(rng, _skills(rng, participants)[who], lift * shows)
    return pd.DataFrame({"study": "null", "kind": CONTROLLED, "cluster": [f"p{i}" for i in who], "arm": arm,
                         "order": order, "block": block, "shows": shows, "expl_arm": expl_arm, "sham": 0.0, "won": won,
                         "score": _score(rng, won), "game_id": [f"g{i}" for i in range(len(who))]})


def counterbalanced_study(rng: np.random.Generator, participants: int, lift: float) -> pd.DataFrame:
    return controlled_study(rng, participants, lift, counterbalanced=True)


def at_will_study(rng: np.random.Generator, participants: int, lift: float) -> pd.DataFrame:
    who = np.repeat(np.arange(participants), GAMES_AT_WILL)
    propensity = rng.beta(2.0, 2.0, participants)[who]
    used = (rng.random(len(who)) < propensity).astype(float)
    won = _won(rng, _skills(rng, participants)[who], lift * used)
    play = np.tile(np.arange(1, GAMES_AT_WILL + 1), participants)
    return pd.DataFrame({"study": "null", "kind": AT_WILL, "cluster": [f"p{i}" for i in who], "arm": "both",
                         "block": np.nan, "shows": used, "expl_arm": 1.0, "sham": 0.0, "won": won,
                         "score": _score(rng, won), "used": used, "play": play,
                         "started": play.astype(float), "game_id": [f"g{i}" for i in range(len(who))]})


def _frames(games: pd.DataFrame) -> Frames:
    empty = pd.DataFrame()
    return Frames(games=games, ratings=empty, items=empty, rater=empty, rounds=empty,
                  kinds={"null": games["kind"].iloc[0]})


def controlled_p_values(games: pd.DataFrame) -> dict[str, float | None]:
    """Every p-value the report prints about a controlled study, by a name that says which."""
    section = controlled(_frames(games))
    out = {}
    for row in section["table1"]:
        if row["mode"] not in ("overall", "overall_inc_none"):
            continue              # one arm holds a quarter of the participants: the size axis is theirs
        mode = row["mode"]
        out[f"Table 1 {mode}: z-test (paper's, games independent)"] = row["p_value"]
        out[f"Table 1 {mode}: clustered, win rate"] = row["p_value_clustered"]
        out[f"Table 1 {mode}: clustered, score"] = row["p_value_score_clustered"]
        out[f"Table 1 {mode}: within participants, paired sign-flip"] = row["improvement_within_participants"]["p_value"]
    group = section["control_group"]
    if "missing" not in group:
        out["control group even vs odd blocks: z-test"] = group["p_value"]
        out["control group even vs odd blocks: clustered"] = group["p_value_clustered"]
    net = section["net_of_practice"]
    if "missing" not in net:
        out["net of practice (interaction): clustered"] = net["p_value"]
    order = section["order"]
    if "missing" not in order and not order["confounded"]:     # both orders played (counterbalanced)
        out["order: with vs without, order as a factor: clustered"] = order["with_vs_without"]["p_value"]
        out["order: order effect (starting with explanations): clustered"] = order["order_effect"]["p_value"]
        out["order: with x order interaction: clustered"] = order["interaction"]["p_value"]
    return out


def at_will_p_values(games: pd.DataFrame) -> dict[str, float | None]:
    section = at_will(_frames(games))
    used, adoption = section["explanations_used"], section["adoption"]
    return {"explanations used: z-test (paper's, games independent)": used["p_value"],
            "explanations used: clustered": used["p_value_clustered"],
            "adoption halves: z-test (paper's)": adoption["p_value"],
            "adoption halves: clustered": adoption["p_value_clustered"],
            "adoption trend per play: clustered": adoption["trend"]["p_value"]}


COUNTERBALANCED = "counterbalanced"     # a controlled study whose participants play both orders
KINDS = {CONTROLLED: (controlled_study, controlled_p_values), AT_WILL: (at_will_study, at_will_p_values),
         COUNTERBALANCED: (counterbalanced_study, controlled_p_values)}


def calibrate(kind: str, sizes, replicates: int, power_replicates: int, lift: float, seed: int,
              progress: bool = True) -> list[dict]:
    """Per size and test: studies that reported a p-value, and the share of them under 0.05, under the null
    (`replicates` studies) and under the lift (the first `power_replicates` of the same seeds: a study
    differs only by the lift)."""
    simulate, p_values = KINDS[kind]
    rows = []
    for size in sizes:
        counts: dict[str, dict[str, list[int]]] = {}
        started = time.perf_counter()
        for replicate in tqdm(range(replicates), desc=f"{kind}, {size} participants", disable=not progress,
                              leave=False):
            conditions = (("null", 0.0), ("lift", lift)) if replicate < power_replicates else (("null", 0.0),)
            for condition, condition_lift in conditions:
                rng = np.random.default_rng([seed, size, replicate])
                for test, p in p_values(simulate(rng, size, condition_lift)).items():
                    reported, rejected = counts.setdefault(test, {}).setdefault(condition, [0, 0])
                    if p is not None:
                        counts[test][condition] = [reported + 1, rejected + (p < 0.05)]
        seconds = time.perf_counter() - started
        for test, by_condition in counts.items():
            null_reported, null_rejected = by_condition.get("null", [0, 0])
            lift_reported, lift_rejected = by_condition.get("lift", [0, 0])
            low, high = proportion_confint(null_rejected, null_reported, method="wilson") if null_reported else (None, None)
            rows.append({"kind": kind, "participants": size, "test": test, "replicates": replicates,
                         "power_replicates": min(power_replicates, replicates),
                         "reported": null_reported / replicates,
                         "false_positive_rate": null_rejected / null_reported if null_reported else None,
                         "false_positive_ci": [low, high] if null_reported else None,
                         "power": lift_rejected / lift_reported if lift_reported else None,
                         "seconds": seconds})
    return rows


def _pct(value) -> str:
    return "    -" if value is None else f"{100 * value:5.1f}"


def table(rows: list[dict], lift: float) -> str:
    lines = [f"{'kind':15s} {'test':62s} {'N':>3s} {'rep.':>5s} {'FP %':>5s} {'95% CI':>13s} {'power':>6s}",
             f"{'':15s} {'':62s} {'':>3s} {'':>5s} {'':>5s} {'':>13s} {'+' + format(100 * lift, '.0f') + ' pts':>6s}"]
    for r in rows:
        ci = "" if r["false_positive_ci"] is None else f"[{_pct(r['false_positive_ci'][0])},{_pct(r['false_positive_ci'][1])}]"
        flag = "  !" if r["false_positive_rate"] is not None and r["false_positive_rate"] > TARGET else ""
        lines.append(f"{r['kind']:15s} {r['test'][:62]:62s} {r['participants']:3d} {_pct(r['reported'])} "
                     f"{_pct(r['false_positive_rate'])} {ci:>13s} {_pct(r['power']):>6s}{flag}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicates", type=int, default=1000, help="studies per size and kind (default 1,000)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="participants per study (default %(default)s)")
    parser.add_argument("--kinds", default=f"{CONTROLLED},{COUNTERBALANCED},{AT_WILL}",
                        help="any of controlled (every participant abab), counterbalanced (a controlled study dealt "
                             "both orders) and at-will, comma-separated (default: all three)")
    parser.add_argument("--lift", type=float, default=0.10, help="the win-probability lift for the power column")
    parser.add_argument("--power-replicates", type=int, default=200,
                        help="studies per size under the lift (default 200: power to about +-3 points)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the rows here (and the table in a .md beside it)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.replicates < 1 or min(sizes) < 2:
        parser.error("--replicates must be >= 1 and every size >= 2")
    rows = []
    started = time.perf_counter()
    for kind in args.kinds.split(","):
        if kind not in KINDS:
            parser.error(f"unknown kind {kind!r}: {', '.join(KINDS)}")
        rows += calibrate(kind, sizes, args.replicates, args.power_replicates, args.lift, args.seed,
                          progress=not args.no_progress)
    text = table(rows, args.lift)
    print(text)
    worst = [r for r in rows if r["false_positive_rate"] is not None and r["false_positive_rate"] > TARGET]
    print(f"\n{len(worst)} of {sum(r['false_positive_rate'] is not None for r in rows)} reported test-size cells above "
          f"{100 * TARGET:.1f}% ('!'); {time.perf_counter() - started:.0f} s")
    if args.json:
        path = Path(args.json)
        write_report(path, {"command": "python -m experiments.benchmark.null_calibration " + " ".join(argv or sys.argv[1:]),
                            "replicates": args.replicates, "power_replicates": args.power_replicates, "sizes": sizes,
                            "lift": args.lift, "seed": args.seed,
                            "skill_sd": SKILL_SD, "rows": rows})
        path.with_suffix(".md").write_text(f"```\n{text}\n```\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
