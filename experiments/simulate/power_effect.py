"""`exag simulate power --difference D`: the participants a pre-registered primary test needs, from an explicit
effect, in seconds to minutes.

    exag simulate power --study studies/reviewed-controlled.json --difference 0.10 --icc 0.4 --practice 0.15 \
        --dropout 0.1 --sizes 16,40,80 --repeats 200 --out results/power-effect

The effect is an input, stated once: showing (controlled) or using (at will) explanations adds D to the mean
participant's win probability. The crowd around it is stated too: the intra-participant correlation (how much
players differ: the skill SD on the log-odds scale, crowd.icc_skill_sd), practice (log-odds a block), skill-linked
dropout (the share leaving after each block). Each simulated study (experiments/simulate/crowd.py, at the level
the analysis reads, with the study's arms, order, sessions, games and offer) goes through the report's own
analysis, and its registered primary test (game/preregistration.py test_name: `table1.overall`,
`net_of_practice`, `at_will.offer`, ...) is read from the report's list of tests. A study counts as a success when
that test's p-value is under alpha and its estimate points the registered way (the sign of D): a significant
result in the other direction is not the hypothesis confirmed.

How many simulated studies: `repeats` a size, else as many as make each power's 95% interval `precision` wide on
each side near the target (power.py repeats_for: 246 for the default 0.05 at 80%). The participants to register
rest on that interval: the smallest size whose power's 95% Wilson interval lies at or above the target (power.py
recommendation). Where none does (too few studies, or sizes too small) there is no number to register, and the
report says why: the interval at the size whose estimate reaches the target, from how many studies, and the repeats
that would narrow it. 20 studies at an estimated 80% give an interval of 58-92%, which supports no number.

Writes OUT/power.json (inputs, every assumption the power rests on in words (`assumptions`), per size the share
significant with its Wilson interval, the participants to register or why none), OUT/power.csv and
OUT/power.png/.svg. The participants it prints are what to register with `exag preregister --planned-n N`. The
whole-game simulation (`exag simulate power` without --difference) plays
every game through the real server and agent instead: slower, and its effect is a trust weight, not a difference.
"""
from __future__ import annotations

import csv
import json
import multiprocessing
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from game.preregistration import ANALYSIS, PRIMARY, OFFER_PRIMARIES, test_name
from game.study import StudyConfig

from .crowd import CONTROLLED, Crowd, crowd_study, icc_skill_sd, one_thread, report_tests, shift
from .power import (PRECISION, assumption_lines, chosen_repeats, described, design_said, primary_lines, primary_rows,
                    recommendation, simulations_said, test_said)

TARGET = 0.8
SUCCESS = "p < alpha with the estimate in the registered direction (the sign of the difference)"


@dataclass(frozen=True)
class EffectPowerConfig:
    study: StudyConfig
    primary: str
    difference: float
    sizes: tuple[int, ...]
    repeats: int | None              # None: repeats_for(precision, TARGET)
    out: Path
    icc: float = 0.4               # about the skill spread of the null calibration (SD 1.5 log-odds)
    practice: float = 0.15
    dropout: float = 0.1
    seed: int = 0
    processes: int = 1
    progress: bool = True
    precision: float = PRECISION     # half-width of each power's 95% interval near the target


def crowd_of(config: EffectPowerConfig) -> Crowd:
    """The simulated crowd of this study and these assumptions."""
    study = config.study
    if config.primary in OFFER_PRIMARIES and study.offer != "randomized":
        raise ValueError(f"the primary test {config.primary!r} needs a randomized offer: add \"offer\": \"randomized\" "
                         "to the study")
    known = set(PRIMARY.get(study.kind, {})) | (set(study.arms) - {"none"} if study.kind == CONTROLLED else set())
    if config.primary not in known:
        raise ValueError(f"{config.primary!r} is not a primary test of this {study.kind} study; one of "
                         f"{', '.join(sorted(known))}")
    if not 0 <= config.dropout < 1:
        raise ValueError(f"--dropout is a share of participants leaving after a block, in [0, 1), got {config.dropout}")
    return Crowd(kind=study.kind, arms=tuple(study.arms), order=study.order, sessions=study.sessions,
                 games_per_session=study.games_per_session, skill_sd=icc_skill_sd(config.icc),
                 practice=config.practice, dropout=config.dropout, offer=study.offer == "randomized")


def _one_study(task: tuple) -> tuple[int, float | None, float | None, str | None]:
    """(participants, p-value, estimate, what the test is: power.described) of the primary test in one simulated
    study."""
    crowd, participants, difference, seed, replicate, name = task
    games = crowd_study(np.random.default_rng([seed, participants, replicate]), crowd, participants, difference)
    found = next((t for t in report_tests(games) if t["name"] == name), None) or {}
    return participants, found.get("p_value"), found.get("estimate"), described(found)


def assumptions(config: EffectPowerConfig, crowd: Crowd, name: str, about: str | None, repeats: int,
                repeats_from: str) -> dict[str, str]:
    """Every assumption the power rests on, in words (power.json `assumptions`, printed above the table)."""
    from game.preregistration import primary_comparisons

    study, mean = config.study, 1 / (1 + np.exp(-crowd.base_log_odds))     # crowd.shift's mean participant
    per = "a block" if study.kind == CONTROLLED else "a game (a tenth of it)"
    what = about or primary_comparisons(study.kind, study.arms).get(config.primary, config.primary)
    return {
        "effect": (f"showing (controlled) or using (at will) explanations adds {100 * config.difference:+.1f} points to "
                   f"the mean participant's win probability ({shift(config.difference, crowd.base_log_odds):+.2f} "
                   f"log-odds), the same log-odds shift for every participant: no uneven effects, no carryover; an "
                   f"assumption, not a finding"),
        "participants": (f"their skill spread with SD {crowd.skill_sd:.2f} log-odds (intra-participant correlation "
                         f"{config.icc:g}) around a mean participant who wins about {100 * mean:.0f}% without "
                         f"explanations; practice {config.practice:+g} log-odds {per}; after each block "
                         f"{100 * config.dropout:.0f}% of the participants leave, weaker ones more"
                         + ("" if study.kind == CONTROLLED else " (at will: no blocks, nobody leaves)")),
        "design": design_said(study),
        "test": test_said(config.primary, name, what, ANALYSIS["alpha"], SUCCESS),
        "simulations": simulations_said(repeats, repeats_from, "simulated crowds"),
    }


def effect_power(config: EffectPowerConfig) -> dict:
    """Module doc; the report as written to OUT/power.json."""
    crowd = crowd_of(config)
    name = test_name(config.primary)
    alpha = ANALYSIS["alpha"]
    direction = 1.0 if config.difference >= 0 else -1.0
    repeats, repeats_from = chosen_repeats(config.repeats, config.precision, TARGET)
    tasks = [(crowd, size, config.difference, config.seed, r, name) for size in config.sizes
             for r in range(repeats)]
    started = time.perf_counter()
    pool = multiprocessing.get_context("spawn").Pool(config.processes, initializer=one_thread) \
        if config.processes > 1 else None
    try:
        results = pool.imap_unordered(_one_study, tasks, chunksize=4) if pool else map(_one_study, tasks)
        found = list(tqdm(results, total=len(tasks), desc="simulated studies", disable=not config.progress))
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    rows = primary_rows([(n, p, e) for n, p, e, _ in found], alpha, direction)
    advice = recommendation(rows, TARGET, config.precision)
    about = next((m for *_, m in found if m), None)
    report = {"study": config.study.study_id, "primary": config.primary, "test": name,
              "assumed": {"difference": config.difference, "icc": config.icc, "skill_sd": crowd.skill_sd,
                          "practice": config.practice, "dropout": config.dropout,
                          "meaning": "showing (controlled) or using (at will) explanations adds `difference` to the "
                                     "mean participant's win probability; an assumption, not a finding"},
              "crowd": asdict(crowd), "alpha": alpha, "sides": ANALYSIS["sides"], "target": TARGET,
              "success": SUCCESS,
              "repeats": repeats, "precision": config.precision, "repeats_from": repeats_from,
              "assumptions": assumptions(config, crowd, name, about, repeats, repeats_from),
              "rows": rows, "recommendation": advice,
              # the participants to register: established by the interval (recommendation), else None
              "participants_for_target": advice["participants"],
              "participants_for_target_estimate": next((r["participants"] for r in rows if r["power"] >= TARGET), None),
              "seconds": time.perf_counter() - started,
              "method": "experiments/simulate/power_effect.py: simulated crowds (crowd.py) through the report's "
                        "own analysis; the registered primary test read from its list of tests"}
    _write(config.out, report)
    return report


def _write(out: Path, report: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "power.json").write_text(json.dumps(report, indent=2) + "\n")
    with open(out / "power.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["participants", "studies", "power", "power_ci_low", "power_ci_high", "mean_estimate"])
        for r in report["rows"]:
            writer.writerow([r["participants"], r["studies"], r["power"], *r["power_ci"], r["mean_estimate"]])
    draw(report, out / "power.png")


def draw(report: dict, path: Path) -> None:
    """Power against participants, with its interval and the target line."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.5, 4.2))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    rows = report["rows"]
    sizes = [r["participants"] for r in rows]
    axes.fill_between(sizes, [r["power_ci"][0] for r in rows], [r["power_ci"][1] for r in rows], alpha=0.2)
    axes.plot(sizes, [r["power"] for r in rows], marker="o", linewidth=2)
    axes.axhline(report["target"], color="#444444", linewidth=1, linestyle=":")
    assumed = report["assumed"]
    axes.set_title(f"{report['test']}: power at {100 * assumed['difference']:+.0f} points (assumed), ICC "
                   f"{assumed['icc']:g}, practice {assumed['practice']:g}, dropout {assumed['dropout']:g}", fontsize=9)
    axes.set_xlabel("participants")
    axes.set_ylabel(f"share with p < {report['alpha']:g}, registered direction")
    axes.set_ylim(-0.02, 1.02)
    axes.set_xticks(sizes)
    figure.tight_layout()
    for fmt in ("png", "svg"):
        figure.savefig(path.with_suffix(f".{fmt}"), dpi=120)


def format_effect_power(report: dict) -> str:
    return "\n".join([f"{report['study']}: power of the registered primary test {report['primary']} "
                      f"({report['test']}); success: p < {report['alpha']:g} in the registered direction"]
                     + assumption_lines(report["assumptions"])
                     + primary_lines(report["test"], report["rows"], report["recommendation"]))
