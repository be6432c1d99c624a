"""Null calibration under real crowds: how often each test the report prints calls an effect that is not there,
on simulated studies whose participants behave as real ones do, and how often it finds one that is.

    python -m experiments.benchmark.null_calibration --sizes 8,16,40 --replicates 300 --json results/null_calibration.json
    python -m experiments.benchmark.null_calibration --power --sizes 16,40,80 --lifts 0.10,0.15 --json results/power_table.json

The studies are simulated at the level the analysis reads (experiments/simulate/crowd.py: a finished game's arm,
block, order, outcome, score, use of explanations, offer; no server, no agent), so that thousands run in minutes;
the tests are the report's own: every study goes through `experiments.analysis.controlled.controlled` or `experiments.analysis.at_will.at_will`
and its p-values are read from the list the report prints (experiments/analysis/claims.py `listed_tests`), each
with its claim ("effect" or "association").

Participants differ a lot, as real ones do (skill SD 1.5 log-odds). The scenarios (SCENARIOS, each a crowd.Crowd)
add what real crowds do, one at a time and together: practice (+0.15 or +0.30 logit a block; 0.30 is about 6
points between blocks 1 and 2), order (abab, or counterbalanced as the server deals it), skill-linked dropout
after blocks 1-3 (log-odds -2 - z of leaving, z the skill in SDs: about a third leave, weaker ones more, so
clusters are unequal), uneven effects (explanations pull players toward the mean, zero on average, with 1
control arm to 3 explanation arms), and at will: buying linked to skill or to set difficulty, unequal numbers of
games, a randomized offer. Issue 54 added what sinks real studies: learning carried over (+0.5 logit on every game
after a participant's first block with explanations, no direct effect: the total effect is not null there),
players who leave after losing in a block with explanations while their slot is dealt again, effects that differ
with skill on the scale of the estimand (zero on average in win probability) beside skill-linked dropout, and an
offer that changes play by itself (the offer's effect is real there, and the instrumented effect's exclusion
restriction is broken). A test whose estimand a scenario makes non-zero is marked "not null: power", one whose stated
assumption it breaks "its assumption broken"; neither counts against the 6.5%. Each row also gives the mean
estimate under the null and its Monte Carlo standard error. A lift adds `lift` to the mean participant's win
probability (crowd.shift): the power column, or with --power the power table of every test with claim "effect".

Printed per scenario, test and size: the share of studies with p < 0.05 (false positives under the null; power
under the lift), its 95% Wilson interval (the Monte Carlo error), the share of studies with a p-value, and the
test's claim. The goal (issue 43): every test with claim "effect" holds <= 6.5% in every scenario and size; an
"association" over that is expected where the scenario builds one in (buying linked to skill), and is why it is
labelled so.
"""
from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from statsmodels.stats.proportion import proportion_confint
from tqdm import tqdm

from experiments.analysis.claims import EFFECT
from experiments.analysis.frames import AT_WILL, CONTROLLED
from experiments.analysis.multiplicity import correct_family
from experiments.benchmark import write_report
from experiments.simulate.crowd import Crowd, crowd_study, one_thread, report_tests

SIZES = (8, 16, 40)
TARGET = 0.065                 # every test with claim "effect" at most 6.5% false positives
ALPHA = 0.05
DROPOUT = float(1 / (1 + np.exp(2.0)))   # leave after a block with log-odds -2 - z: about a third leave in all


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    crowd: Crowd
    not_null: tuple[str, ...] = ()     # tests whose estimand the scenario makes non-zero: their share is power
    breaks: tuple[str, ...] = ()       # tests whose stated assumption the scenario breaks: shown, flagged, not counted



    @property
    def kind(self) -> str:
        return self.crowd.kind


def _scenario(name: str, description: str, not_null: tuple[str, ...] = (), breaks: tuple[str, ...] = (),
              **crowd) -> Scenario:
    return Scenario(name, description, Crowd(**crowd), not_null, breaks)


SCENARIOS = {s.name: s for s in (
    _scenario("abab", "abab, no practice, complete data (the first calibration's case)"),
    _scenario("abab_practice_0.15", "abab, practice +0.15 logit a block", practice=0.15),
    _scenario("abab_practice_0.30", "abab, practice +0.30 logit a block", practice=0.30),
    _scenario("abab_dropout", "abab, practice +0.15, weaker players drop out after blocks 1-3", practice=0.15,
              dropout=DROPOUT),
    _scenario("counterbalanced", "counterbalanced, no practice, complete data", order="counterbalanced"),
    _scenario("counterbalanced_practice_0.30", "counterbalanced, practice +0.30 logit a block",
              order="counterbalanced", practice=0.30),
    _scenario("counterbalanced_practice_dropout", "counterbalanced, practice +0.30, skill-linked dropout (unequal "
              "clusters)", order="counterbalanced", practice=0.30, dropout=DROPOUT),
    _scenario("counterbalanced_practice_dropout_uneven", "counterbalanced, practice +0.30, skill-linked dropout, "
              "uneven effects (zero on average)", order="counterbalanced", practice=0.30, dropout=DROPOUT,
              uneven=True),
    _scenario("carryover", "counterbalanced, practice +0.30, no direct effect, +0.5 logit on every game after the "
              "participant's first block with explanations (learning about the agent: the total effect is not null)",
              order="counterbalanced", practice=0.30, carryover=0.5, not_null=("total_effect",)),
    _scenario("outcome_dropout_refills", "counterbalanced, practice +0.30, players leave after a block with "
              "explanations with 0.8 x the share of its games they lost, and the slot is dealt again",
              order="counterbalanced", practice=0.30, outcome_dropout=0.8, refills=True),
    _scenario("uneven_1to3", "abab, 1:3 arms, explanations pull players toward the mean (zero on average)",
              uneven=True),
    _scenario("at_will", "at will, buying unrelated to skill", kind=AT_WILL, sessions=1, games_per_session=10),
    _scenario("at_will_unequal", "at will, 3-20 games a participant, practice", kind=AT_WILL, unequal=True,
              practice=0.3),
    _scenario("at_will_skill_buys", "at will, better players buy more (1 logit per logit of skill)", kind=AT_WILL,
              sessions=1, games_per_session=10, buy_skill=1.0),
    _scenario("at_will_difficulty_buys", "at will, players buy in hard sets (1 logit per SD of difficulty)",
              kind=AT_WILL, sessions=1, games_per_session=10, buy_difficulty=1.0),
    _scenario("at_will_offer_direct", "at will, randomized offer, being offered adds +0.3 logit by itself, using "
              "explanations nothing (the offer's effect is real; the effect of use is null)", kind=AT_WILL,
              offer=True, offer_direct=0.3, sessions=4, games_per_session=5, not_null=("at_will.offer",),
              breaks=("at_will.offer_iv",)),
    _scenario("at_will_offer_skill_buys", "at will, randomized offer, better players buy more, practice, unequal "
              "games", kind=AT_WILL, buy_skill=1.0, offer=True, unequal=True, practice=0.3),
)}
# the first calibration's --kinds, kept: each is one scenario
KINDS = {CONTROLLED: "abab", "counterbalanced": "counterbalanced", AT_WILL: "at_will"}
POWER_SCENARIOS = ("counterbalanced_practice_dropout", "at_will_offer_skill_buys")


def scenario_study(rng: np.random.Generator, scenario: Scenario, participants: int, lift: float) -> pd.DataFrame:
    """One simulated study's finished games (experiments/simulate/crowd.py)."""
    return crowd_study(rng, scenario.crowd, participants, lift)


def controlled_study(rng: np.random.Generator, participants: int, lift: float,
                     counterbalanced: bool = False) -> pd.DataFrame:
    """A controlled study of the first calibration (complete data, no practice): abab, or counterbalanced. Its
    lift is added to the mean participant's win probability as a log-odds shift for everyone (crowd.shift)."""
    return scenario_study(rng, SCENARIOS["counterbalanced" if counterbalanced else "abab"], participants, lift)


FAMILY = "family: primary + arm rows (corrected)"


def _replicate(task: tuple) -> list[tuple[str, str, float, float | None]]:
    """(test, claim, lift, p-value) of one simulated study: the unit of work the processes share; with them the
    corrected family of effect tests (experiments/analysis/multiplicity.py correct_family) as one more row, whose
    p-value is its smallest adjusted one: the family-wise error is its share under ALPHA."""
    name, size, replicate, lift, seed = task
    rng = np.random.default_rng([seed, size, replicate])
    tests = report_tests(scenario_study(rng, SCENARIOS[name], size, lift))
    correct_family(tests)
    adjusted = [t["p_adjusted"] for t in tests if t.get("p_adjusted") is not None]
    family = [(FAMILY, EFFECT, lift, min(adjusted), None)] if adjusted else []
    return [(t["name"], t["claim"], lift, t["p_value"], t.get("estimate")) for t in tests] + family


def calibrate(scenario: Scenario, sizes, replicates: int, lifts: tuple[float, ...], power_replicates: int, seed: int,
              progress: bool = True, pool=None) -> list[dict]:
    """Per size and test: studies with a p-value, and the share of them under ALPHA, under the null
    (`replicates` studies) and under each lift (the first `power_replicates` of the same seeds: a study differs
    only by the lift). `pool`: a multiprocessing pool to share the studies among (None: this process)."""
    rows = []
    for size in sizes:
        counts: dict[str, dict] = {}
        started = time.perf_counter()
        tasks = [(scenario.name, size, replicate, lift, seed) for replicate in range(replicates)
                 for lift in [0.0] + ([lift for lift in lifts if lift] if replicate < power_replicates else [])]
        results = pool.imap_unordered(_replicate, tasks, chunksize=4) if pool is not None else map(_replicate, tasks)
        for study in tqdm(results, total=len(tasks), desc=f"{scenario.name}, {size} participants",
                          disable=not progress, leave=False):
            for name, claim, lift, p, estimate in study:
                entry = counts.setdefault(name, {"claim": claim, "by": {}, "estimates": []})
                reported, rejected = entry["by"].get(lift, (0, 0))
                entry["by"][lift] = (reported + 1, rejected + (p < ALPHA)) if p is not None else (reported, rejected)
                if lift == 0.0 and p is not None and estimate is not None and np.isfinite(estimate):
                    entry["estimates"].append(float(estimate))
        seconds = time.perf_counter() - started
        for name, entry in counts.items():
            reported, rejected = entry["by"].get(0.0, (0, 0))
            low, high = proportion_confint(rejected, reported, method="wilson") if reported else (None, None)
            power = {f"{lift:g}": (entry["by"][lift][1] / entry["by"][lift][0] if entry["by"][lift][0] else None)
                     for lift in lifts if lift and lift in entry["by"]}
            estimates = np.array(entry["estimates"])
            mean, se = (float(estimates.mean()), float(estimates.std(ddof=1) / np.sqrt(len(estimates)))) \
                if len(estimates) > 1 else (None, None)
            rows.append({"scenario": scenario.name, "kind": scenario.kind, "participants": size, "test": name,
                         "claim": entry["claim"], "replicates": replicates, "mean_estimate": mean,
                         "mean_estimate_se": se, "null": name not in scenario.not_null,
                         "assumption_broken": name in scenario.breaks,
                         "power_replicates": min(power_replicates, replicates), "reported": reported / replicates,
                         "false_positive_rate": rejected / reported if reported else None,
                         "false_positive_ci": [low, high] if reported else None, "power": power, "seconds": seconds})
    return rows


def _pct(value) -> str:
    return "    -" if value is None else f"{100 * value:5.1f}"


def table(rows: list[dict], lifts: tuple[float, ...]) -> str:
    shown = [lift for lift in lifts if lift]
    lines = [f"{'scenario':40s} {'test':34s} {'claim':11s} {'N':>3s} {'rep.':>5s} {'FP %':>5s} {'95% CI':>13s} "
             + " ".join(f"{'+' + format(100 * lift, '.0f') + ' pts':>7s}" for lift in shown)]
    for r in rows:
        ci = "" if r["false_positive_ci"] is None else f"[{_pct(r['false_positive_ci'][0])},{_pct(r['false_positive_ci'][1])}]"
        flag = "  (not null: power)" if not r.get("null", True) else \
            "  (its assumption broken)" if r.get("assumption_broken") else \
            "  !" if r["claim"] == EFFECT and (r["false_positive_rate"] or 0) > TARGET else ""
        if r.get("mean_estimate") is not None:
            flag = f" est {r['mean_estimate']:+.4f} ({r['mean_estimate_se']:.4f})" + flag
        lines.append(f"{r['scenario'][:40]:40s} {r['test'][:34]:34s} {r['claim']:11s} {r['participants']:3d} "
                     f"{_pct(r['reported'])} {_pct(r['false_positive_rate'])} {ci:>13s} "
                     + " ".join(f"{_pct(r['power'].get(f'{lift:g}')):>7s}" for lift in shown) + flag)
    return "\n".join(lines)


def markdown(rows: list[dict], lifts: tuple[float, ...], effect_only: bool = False) -> str:
    """The table as docs/results.md shows it."""
    shown = [lift for lift in lifts if lift]
    head = ["scenario", "test", "claim", "N", "false positives % [95% CI]"] + [f"power +{100 * l:.0f} pts %"
                                                                               for l in shown]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if effect_only and r["claim"] != EFFECT:
            continue
        fp = "-" if r["false_positive_rate"] is None else \
            f"{100 * r['false_positive_rate']:.1f} [{100 * r['false_positive_ci'][0]:.1f}, {100 * r['false_positive_ci'][1]:.1f}]"
        lines.append("| " + " | ".join([r["scenario"], f"`{r['test']}`", r["claim"], str(r["participants"]), fp]
                                       + [_pct(r["power"].get(f"{l:g}")).strip() for l in shown]) + " |")
    return "\n".join(lines)


def pivot(rows: list[dict], claim: str, value: str = "false_positive_rate", lift: str | None = None) -> str:
    """A markdown table of one claim's tests, a row per test and scenario, a column per size: the false-positive
    rate with its interval (or, with `lift`, the power at it); bold where an effect test exceeds TARGET."""
    sizes = sorted({r["participants"] for r in rows})
    cells: dict[tuple[str, str], dict[int, str]] = {}
    for r in rows:
        if r["claim"] != claim:
            continue
        if lift is not None:
            power = r["power"].get(lift)
            text = "-" if power is None else f"{100 * power:.0f}"
        elif r["false_positive_rate"] is None:
            text = "-"
        else:
            rate, (low, high) = r["false_positive_rate"], r["false_positive_ci"]
            text = f"{100 * rate:.1f} [{100 * low:.1f}, {100 * high:.1f}]"
            if not r.get("null", True):
                text += " (not null: power)"
            elif r.get("assumption_broken"):
                text += " (its assumption broken)"
            elif claim == EFFECT and rate > TARGET:
                text = f"**{text}**"
        cells.setdefault((r["test"], r["scenario"]), {})[r["participants"]] = text
    head = ["test", "scenario"] + [f"{n} participants" for n in sizes]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (test, scenario), by_size in sorted(cells.items()):
        if all(text == "-" for text in by_size.values()):
            continue                                  # not offered in this scenario (e.g. Table 1's effect, abab)
        lines.append("| " + " | ".join([f"`{test}`", scenario] + [by_size.get(n, "-") for n in sizes]) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicates", type=int, default=300, help="null studies per scenario and size (default 300)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="participants per study (default %(default)s)")
    parser.add_argument("--scenarios", default=None,
                        help=f"comma-separated, of: {', '.join(SCENARIOS)} (default: all; with --power: "
                             f"{', '.join(POWER_SCENARIOS)})")
    parser.add_argument("--kinds", default=None,
                        help="the first calibration's designs instead of --scenarios: controlled (abab), counterbalanced, "
                             "at-will")
    parser.add_argument("--lifts", default="0.10",
                        help="win-probability lifts of the mean participant for the power columns (default 0.10)")
    parser.add_argument("--lift", type=float, default=None, help="one lift (the first calibration's flag)")
    parser.add_argument("--power-replicates", type=int, default=200,
                        help="studies per size under each lift (default 200: power to about +-3.5 points)")
    parser.add_argument("--power", action="store_true",
                        help="the power table: only the tests with claim 'effect', under --lifts, in "
                             f"{', '.join(POWER_SCENARIOS)} (default sizes 16,40,80; --replicates then counts "
                             "studies under each lift)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--processes", type=int, default=1,
                        help="share the studies among this many processes (default 1; each pins its thread pools to one)")
    parser.add_argument("--json", default=None, help="write the rows here (and the table in a .md beside it)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    argv_given = argv if argv is not None else sys.argv[1:]
    sizes = [int(s) for s in ("16,40,80" if args.power and "--sizes" not in argv_given else args.sizes).split(",")]
    lifts = tuple(float(x) for x in ([str(args.lift)] if args.lift is not None else args.lifts.split(",")))
    if args.replicates < 1 or min(sizes) < 2 or any(not 0 <= lift < 0.35 for lift in lifts):
        parser.error("--replicates must be >= 1, every size >= 2 and every lift in [0, 0.35)")
    if args.kinds:
        names = []
        for kind in args.kinds.split(","):
            if kind not in KINDS:
                parser.error(f"unknown kind {kind!r}: {', '.join(KINDS)}")
            names.append(KINDS[kind])
    else:
        names = (args.scenarios or ",".join(POWER_SCENARIOS if args.power else SCENARIOS)).split(",")
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario {unknown[0]!r}: {', '.join(SCENARIOS)}")
    replicates, power_replicates = (args.replicates, args.replicates) if args.power else \
        (args.replicates, args.power_replicates)
    rows = []
    started = time.perf_counter()
    pool = multiprocessing.get_context("spawn").Pool(args.processes, initializer=one_thread) \
        if args.processes > 1 else None
    try:
        for name in names:
            rows += calibrate(SCENARIOS[name], sizes, replicates, (0.0, *lifts), power_replicates, args.seed,
                              progress=not args.no_progress, pool=pool)
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    if args.power:
        rows = [r for r in rows if r["claim"] == EFFECT]
    text = table(rows, lifts)
    print(text)
    effect = [r for r in rows if r["claim"] == EFFECT and r["false_positive_rate"] is not None and r.get("null", True)
              and not r.get("assumption_broken")]
    worst = [r for r in effect if r["false_positive_rate"] > TARGET]
    print(f"\n{len(worst)} of {len(effect)} scenario-size cells of tests with claim 'effect' above {100 * TARGET:.1f}% "
          f"('!'); {time.perf_counter() - started:.0f} s")
    if args.json:
        path = Path(args.json)
        write_report(path, {"command": "python -m experiments.benchmark.null_calibration " + " ".join(argv_given),
                            "replicates": replicates, "power_replicates": power_replicates, "sizes": sizes,
                            "lifts": list(lifts), "seed": args.seed,
                            "scenarios": {n: SCENARIOS[n].description for n in names}, "rows": rows})
        shown = [f"{lift:g}" for lift in lifts if lift]
        path.with_suffix(".md").write_text(
            "## Tests with claim 'effect': false positives % [95% CI]\n\n" + pivot(rows, EFFECT) + "\n\n"
            + "".join(f"## Tests with claim 'effect': power % at +{100 * float(l):.0f} points\n\n"
                      + pivot(rows, EFFECT, lift=l) + "\n\n" for l in shown if any(r["power"] for r in rows))
            + "## Associations: share significant % [95% CI]\n\n" + pivot(rows, "association") + "\n\n"
            + "## Every row\n\n" + markdown(rows, lifts) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
