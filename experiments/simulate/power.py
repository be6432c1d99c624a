"""`exag simulate power`: how many participants a controlled study needs, from repeated simulated studies.

    exag simulate power --study studies/pilot.json --sizes 10,20,40,80 --repeats 20 --out results/power

At each number of participants, `repeats` fresh simulated studies are played (simulate.py, in-process:
every game through the real Play service, rules, inference worker and agent) and analysed by the analysis
itself: its Table 1 (experiments/analysis/controlled.py), whose every row ("overall" and each mode) compares
win rates with and without explanations twice, by the two-proportion z-test (games as independent: "naive")
and by the participant-clustered GEE logistic regression ("clustered"). The power at a size is the share of
its studies with p < alpha (two-sided, either direction). Nothing is resampled: every study is a new set of
simulated participants playing new games.

Writes OUT/power.json (every study's p-values, the power table, the participants needed for the target
power, the cost), OUT/power.csv (the table) and OUT/power.png/.svg ("share significant vs participants",
with the 80% line and the interpolated participants for 80% power).

When no size simulated reaches the target, the simulated studies still say how far off it is: each mode's
difference (with minus without explanations) has a mean across studies and a spread that shrinks as
1/sqrt(participants), so a normal approximation projects the participants at which a study would find it
with the target power (`projected`). It rests on the mean difference, so the report gives that with its
standard error: a projection from a difference within noise of zero says little.

Cost: sizes x repeats studies, each a whole study: with the paper's 20 games per participant, sizes
10,20,40,80 and 20 repeats are 60,000 games. Studies run side by side in `processes` processes (one per
core by default), each with its own embedded Redis and one inference worker (one torch thread) built once
and reused for all its studies, so the agent, its explainers and its feature cache load once per process;
a study's games are deleted from that Redis once its events are read, so memory stays flat.
"""
from __future__ import annotations

import csv
import json
import math
import multiprocessing
import os
import queue
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np
from statsmodels.stats.proportion import proportion_confint
from tqdm import tqdm

from game.preregistration import primary_comparisons, test_name
from game.study import load_study

ALPHA = 0.05
TARGET = 0.8
PRECISION = 0.05        # half-width of each power estimate's 95% interval that the repeats are chosen for
Z95 = 1.959963984540054
INTERVAL = "95% Wilson interval of the share of simulated studies (statsmodels proportion_confint)"
RULE = ("the participants to register: the smallest size simulated whose power's 95% interval lies at or above the "
        "target (its lower bound reaches it); none where no size's does")
TESTS = {"naive": "p_value", "clustered": "p_value_clustered"}     # Table 1 row keys
OVERALL = "overall"
POLL_S = 5.0
PROJECTION = ("normal approximation of an idealised z-test on the mean difference (statsmodels NormalIndPower), "
              "not the clustered test the analysis runs: a rough guide beyond the sizes simulated, never a "
              "substitute for simulating them")
METHOD = ("fresh simulated studies (experiments/simulate/simulate.py, in-process, the real game and agent), "
          "analysed with experiments/analysis/controlled.py's Table 1; no resampling")


@dataclass(frozen=True)
class PowerConfig:
    study: Path
    sizes: tuple[int, ...]
    repeats: int
    out: Path
    players: dict[str, float] | None = None      # preset -> share (None: simulate.py's DEFAULT_MIX)
    world: Path = Path("data/world")
    agent: str = "default"
    seed: int = 0
    processes: int = field(default_factory=lambda: os.cpu_count() or 1)
    threads: int = 8                             # participants at once within a process
    explainer_options: dict = field(default_factory=dict)
    explanation_weight: float | None = None      # the assumed effect (simulate.py ASSUMED_EFFECT); 0: the null
    alpha: float = ALPHA
    target: float = TARGET
    progress: bool = True
    primary: str | None = None                   # the registered primary test (None: default_primary)
    precision: float = PRECISION                 # repeats None: repeats_for(precision, target)


def default_primary(study) -> str:
    """The study's registered primary, else the registrable effect test of its kind."""
    registered = study.preregistration.get("primary")
    if registered:
        return registered
    if study.kind == "controlled":
        return "overall" if study.order == "counterbalanced" else "net_of_practice"
    return "offer"


def repeats_for(precision: float = PRECISION, target: float = TARGET) -> int:
    """Simulated studies per size that make the 95% interval of a power near `target` `precision` wide on each
    side: z^2 p (1 - p) / precision^2 (246 for 0.05 at 80%; the Wilson interval there is as wide, within 0.1 point)."""
    if not 0 < precision < 0.5:
        raise ValueError(f"--precision is the half-width of a power's 95% interval, in (0, 0.5), got {precision}")
    return math.ceil(Z95 ** 2 * target * (1 - target) / precision ** 2)


def _interval(row: dict) -> str:
    low, high = row["power_ci"]
    return f"{100 * low:.0f}-{100 * high:.0f}% from {row['studies']} simulated studies"


def recommendation(rows: list[dict], target: float = TARGET, precision: float = PRECISION) -> dict:
    """RULE over `rows` (one per size: participants, studies, power, power_ci), with why in one sentence: the
    interval that establishes the number, or why none does and the repeats (`repeats_for(precision)`) that would
    narrow each interval to +-precision."""
    rows = sorted(rows, key=lambda r: r["participants"])
    more = repeats_for(precision, target)
    established = next((r for r in rows if r["power_ci"][0] >= target), None)
    first = next((r for r in rows if r["power"] >= target), None)
    out = {"participants": None, "established": False, "rule": RULE, "precision": precision,
           "repeats_for_precision": more}
    if established is not None:
        reason = (f"at N={established['participants']} the power's 95% interval is {_interval(established)}, at or "
                  f"above {target:.0%}")
        if first is not None and first["participants"] < established["participants"]:
            reason += (f"; N={first['participants']} reaches {target:.0%} on its estimate, but its interval is "
                       f"{_interval(first)}: more repeats there (about {more}) may establish a smaller N")
        return {**out, "participants": established["participants"], "established": True, "reason": reason}
    if first is not None:
        reason = (f"not established: the interval at N={first['participants']} is {_interval(first)}, which does not "
                  f"exclude less than {target:.0%} power; run with more repeats (about {more}: --repeats {more}, or "
                  f"--precision {precision:g}) or larger sizes")
    elif rows:
        last = rows[-1]
        reason = (f"not established: no size simulated reaches {target:.0%} power (at N={last['participants']}: "
                  f"{100 * last['power']:.0f}%, interval {_interval(last)}); simulate larger sizes"
                  + (f", or more repeats (about {more}) where the interval reaches {target:.0%}"
                     if last["power_ci"][1] >= target else ""))
    else:
        reason = "not established: no study was simulated"
    return {**out, "reason": reason}


def parse_sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(sorted({int(s) for s in text.split(",") if s.strip()}))
    except ValueError:
        raise ValueError(f"--sizes wants participant numbers separated by commas (10,20,40,80), got {text!r}") from None
    if not sizes or sizes[0] < 1:
        raise ValueError(f"--sizes wants positive participant numbers, got {text!r}")
    return sizes


# --- one study's tests -----------------------------------------------------------------------------------

def significance(events: list[dict]) -> dict[str, dict]:
    """Table 1 of these events, as the analysis computes it: per row ("overall", each mode, ...) the
    win-rate difference (with minus without explanations) and its naive and clustered p-values."""
    return tests_of(events)[0]


def tests_of(events: list[dict], name: str | None = None) -> tuple[dict[str, dict], dict]:
    """significance() of these events, and the test `name` (the registered primary's name in the report's list of
    tests, game/preregistration.py test_name: "table1.overall", "net_of_practice", ...) as the report lists it
    (experiments/analysis/claims.py): {"p_value", "estimate"}, both None when the report has no such test."""
    from experiments.analysis.claims import listed_tests
    from experiments.analysis.controlled import controlled
    from experiments.analysis.data import Tables
    from experiments.analysis.frames import build_frames
    from game.export import tables

    frames, _ = build_frames(Tables.from_frames(tables(events), "a simulated study"))
    section = controlled(frames)
    table1 = {row["mode"]: {"difference": row["improvement"]["win_rate"], "p_value": row["p_value"],
                            "p_value_clustered": row["p_value_clustered"]}
              for row in section.get("table1", [])}
    found = next((t for t in listed_tests({"controlled": section}) if t["name"] == name), {}) if name else {}
    return table1, {"p_value": found.get("p_value"), "estimate": found.get("estimate"), "about": described(found)}


def described(test: dict) -> str | None:
    """What a test of the report's list is (claims.py): its estimand and its unit, as the report says them (None for
    a test the report did not list)."""
    if not test:
        return None
    return f"{test.get('estimand', 'not stated')}; unit: {test.get('unit', 'not stated')}"


def primary_rows(found: list[tuple[int, float | None, float | None]], alpha: float, direction: float) -> list[dict]:
    """Per size, from (participants, p-value, estimate) of each simulated study's primary test: the share
    significant in the registered direction (`direction`, +1 or -1: the sign of the hypothesised effect; a
    p-value that could not be computed counts as not significant, and is counted) with its 95% Wilson interval."""
    rows = []
    for size in sorted({n for n, _, _ in found}):
        mine = [(p, e) for n, p, e in found if n == size]
        significant = [(p, e) for p, e in mine if p is not None and p < alpha]
        hits = sum(e is not None and np.sign(e) == direction for _, e in significant)
        low, high = proportion_confint(hits, len(mine), alpha=0.05, method="wilson")
        estimates = [e for _, e in mine if e is not None]
        rows.append({"participants": size, "studies": len(mine), "significant_registered_direction": int(hits),
                     "significant_any_direction": len(significant), "power": float(hits / len(mine)),
                     "power_ci": [float(low), float(high)], "power_ci_half_width": float(high - low) / 2,
                     "not_computed": sum(p is None for p, _ in mine),
                     "mean_estimate": float(np.mean(estimates)) if estimates else None})
    return rows


def _run_studies(config: PowerConfig, number: int, tasks, results, stop) -> None:
    """A process's loop: one in-process server, then studies from `tasks` until its end (None) or `stop`."""
    os.environ["OMP_NUM_THREADS"] = "1"          # before torch loads: one core per process
    from .simulate import DEFAULT_MIX, Eyes, InProcessServer, members, play_study, seeded_study

    try:
        base = load_study(config.study)
        # one seed for every process: the server's draws are keyed by study (size and repeat) and participant,
        # so a study is the same whichever process takes it from the queue
        primary = test_name(config.primary) if config.primary else None
        server = InProcessServer(config.world, config.agent, config.seed, config.explainer_options)
        with server:
            eyes = Eyes(server.pool)
            while not stop.is_set():
                task = tasks.get()
                if task is None:            # one per process after the studies: no more work
                    break
                size, repeat = task
                seed = int(np.random.SeedSequence([config.seed, size, repeat]).generate_state(1)[0])
                # each repeat its own draw of the arms and orders, from its seed (not the study file's)
                study = server.add_study(seeded_study(replace(base, study_id=f"{base.study_id[:40]}-n{size}-r{repeat}",
                                                              seed=None), seed))
                who = members(config.players or DEFAULT_MIX, size, seed, f"n{size}r{repeat}")
                started = time.perf_counter()
                played = play_study(server, study, who, eyes, config.threads, on_game=lambda: results.put(("game", 1)),
                                    explanation_weight=config.explanation_weight)
                events = server.events(study.study_id, {f"pid:{m.pid}" for m in who})
                server.forget(study.study_id)
                table1, primary_test = tests_of(events, primary)
                results.put(("study", {"participants": size, "repeat": repeat, "study": study.study_id,
                                       "games": sum(len(p.games) for p in played),
                                       "seconds": time.perf_counter() - started, "tests": table1,
                                       "primary": primary_test, "errors": [p.error for p in played if p.error]}))
    except BaseException:                # the parent stops the others and reports it
        results.put(("failed", traceback.format_exc()))


def _play_all(config: PowerConfig, games_per_participant: int) -> list[dict]:
    """Every (size, repeat) study, over `config.processes` processes, with a progress bar of games."""
    context = multiprocessing.get_context("spawn")     # a fresh interpreter: no threads or torch state inherited
    tasks, results, stop = context.Queue(), context.Queue(), context.Event()
    todo = [(size, r) for r in range(config.repeats) for size in sorted(config.sizes, reverse=True)]
    processes = [context.Process(target=_run_studies, args=(config, n, tasks, results, stop), daemon=True,
                                 name=f"exag-power-{n}") for n in range(max(1, min(config.processes, len(todo))))]
    for task in todo + [None] * len(processes):
        tasks.put(task)
    for process in processes:
        process.start()
    bar = tqdm(total=sum(config.sizes) * config.repeats * games_per_participant, desc="simulated games", unit="game",
               disable=not config.progress)
    studies: list[dict] = []
    try:
        while len(studies) < len(todo):
            try:
                kind, value = results.get(timeout=POLL_S)
            except queue.Empty:
                if not any(p.is_alive() for p in processes):
                    raise RuntimeError(f"the simulation processes stopped after {len(studies)} of {len(todo)} "
                                       "studies") from None
                continue
            if kind == "game":
                bar.update(value)
            elif kind == "study":
                studies.append(value)
                bar.set_postfix(studies=f"{len(studies)}/{len(todo)}")
            else:
                raise RuntimeError(f"a simulation process failed:\n{value}")
    finally:
        bar.close()
        stop.set()                       # the others finish their study and close their servers
        for process in processes:
            process.join(timeout=600)
            if process.is_alive():
                process.terminate()
    return studies


# --- the power table -----------------------------------------------------------------------------------

def power_table(studies: list[dict], alpha: float = ALPHA) -> list[dict]:
    """Per size, mode and test: the share of studies with p < alpha (a p that could not be computed counts
    as not significant, and is counted), and the mean win-rate difference."""
    rows = []
    for size in sorted({s["participants"] for s in studies}):
        mine = [s for s in studies if s["participants"] == size]
        modes = list(dict.fromkeys(mode for s in mine for mode in s["tests"]))
        for mode in modes:
            cells = [s["tests"].get(mode) or {} for s in mine]
            differences = [c["difference"] for c in cells if c.get("difference") is not None]
            for test, key in TESTS.items():
                ps = [c.get(key) for c in cells]
                found = [c for c, p in zip(cells, ps) if p is not None and p < alpha]
                significant = len(found)
                # which way: an explanation arm should help, a sham arm harm
                helped = sum((c.get("difference") or 0) > 0 for c in found)
                low, high = proportion_confint(significant, len(mine), alpha=0.05, method="wilson")
                rows.append({"participants": size, "mode": mode, "test": test, "studies": len(mine),
                             "significant": significant, "power": significant / len(mine),
                             "power_ci": [float(low), float(high)],
                             "significant_improvement": helped, "significant_harm": significant - helped,
                             "not_computed": sum(p is None for p in ps),
                             "mean_difference": float(np.mean(differences)) if differences else None})
    return rows


def participants_for(rows: list[dict], mode: str, test: str, target: float = TARGET,
                     power: Callable[[dict], float] = lambda row: row["power"]) -> float | None:
    """The participants at which the power first reaches `target`, interpolated linearly between the
    sizes around it; the smallest size when it already does; None when no size does. `power` reads a
    row's power (the estimate, or a bound of its interval)."""
    points = sorted((r["participants"], power(r)) for r in rows if r["mode"] == mode and r["test"] == test)
    for i, (size, power) in enumerate(points):
        if power >= target:
            if i == 0:
                return float(size)
            (s0, p0), (s1, p1) = points[i - 1], (size, power)
            return float(s0 + (target - p0) * (s1 - s0) / (p1 - p0))
    return None


def participants_interval(rows: list[dict], mode: str, test: str, target: float = TARGET) -> list[float | None]:
    """A 95% interval for the participants needed: where the upper and the lower Wilson bounds of the
    simulated power reach `target` (None for an end no size simulated reaches)."""
    return [participants_for(rows, mode, test, target, lambda row: row["power_ci"][1]),
            participants_for(rows, mode, test, target, lambda row: row["power_ci"][0])]


def projected(studies: list[dict], mode: str, alpha: float = ALPHA, target: float = TARGET) -> dict | None:
    """The participants a study needs for `target` power on `mode`, projected by a normal approximation
    from the simulated studies: the mean difference d (weighted by participants) and the per-participant
    spread sigma (each size's variance of the difference across repeats, times its participants, pooled),
    solved by statsmodels' power of a one-sample z-test at effect size |d| / sigma. None without two
    studies of one size (no spread to measure) or when the spread or the difference is zero."""
    found: dict[int, list[float]] = {}
    for s in studies:
        difference = (s["tests"].get(mode) or {}).get("difference")
        if difference is not None:
            found.setdefault(s["participants"], []).append(difference)
    spreads = [(len(ds) - 1, float(np.var(ds, ddof=1)) * size) for size, ds in found.items() if len(ds) >= 2]
    if not spreads:
        return None
    sigma = float(np.sqrt(sum(w * v for w, v in spreads) / sum(w for w, _ in spreads)))
    total = sum(size * len(ds) for size, ds in found.items())
    difference = sum(size * sum(ds) for size, ds in found.items()) / total
    report = {"mean_difference": difference, "standard_error": float(sigma / np.sqrt(total)), "sd_per_participant": sigma,
              "studies": sum(len(ds) for ds in found.values()), "participants": None}
    if sigma > 0 and difference != 0:
        from statsmodels.stats.power import NormalIndPower
        needed = NormalIndPower().solve_power(effect_size=abs(difference) / sigma, nobs1=None, alpha=alpha,
                                              power=target, ratio=0.0)
        report["participants"] = float(np.ceil(needed)) if np.isfinite(needed) else None
    return report


def projection_note(projection: dict | None, needed: dict) -> str | None:
    """What the projection says, for the printout and the plot: only when some test did not reach the target
    at the sizes simulated, always with the difference it rests on."""
    if not projection or all(n is not None for n in needed.values()):
        return None
    where = "none" if projection["participants"] is None else f"{projection['participants']:.0f}"
    return (f"projected {where} (difference {100 * projection['mean_difference']:+.1f} ± "
            f"{100 * projection['standard_error']:.1f} points over {projection['studies']} studies)")


def draw(rows: list[dict], needed: dict, target: float, alpha: float, path: Path,
         projection: dict | None = None, primary: dict | None = None, advice: dict | None = None) -> list[Path]:
    """The share of significant studies against participants, a line per mode and test (clustered solid,
    naive dashed; "overall" thick), the registered primary's power with its interval (black), the target line and
    the overall's participants for it (projected beyond the sizes simulated when none reaches it)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from experiments.analysis.figures import COLORS, DPI, mode_name

    figure = Figure(figsize=(7.5, 4.8))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    modes = [OVERALL] + [m for m in modes if m != OVERALL] if OVERALL in modes else modes
    for k, mode in enumerate(modes):
        for test, style in (("clustered", "-"), ("naive", "--")):
            points = sorted((r["participants"], r["power"]) for r in rows if r["mode"] == mode and r["test"] == test)
            if points:
                axes.plot(*zip(*points), style, marker="o", color=COLORS[k % len(COLORS)],
                          linewidth=2.6 if mode == OVERALL else 1.2, label=f"{mode_name(mode)}, {test}")
    if primary and primary["rows"]:
        sizes = [r["participants"] for r in primary["rows"]]
        axes.fill_between(sizes, [r["power_ci"][0] for r in primary["rows"]],
                          [r["power_ci"][1] for r in primary["rows"]], color="black", alpha=0.12)
        axes.plot(sizes, [r["power"] for r in primary["rows"]], color="black", marker="s", linewidth=2.6,
                  label=f"primary {primary['test']}, 95% interval")
    axes.axhline(target, color="#444444", linewidth=1, linestyle=":")
    notes = []
    for test in TESTS:
        n = (needed.get(OVERALL) or {}).get(test)
        if n is not None:
            axes.axvline(n, color=COLORS[0], linewidth=1, linestyle="--" if test == "naive" else "-", alpha=0.5)
        notes.append(f"{test}: {'> ' + str(max(r['participants'] for r in rows)) if n is None else f'{n:.0f}'}")
    projected_note = projection_note(projection, needed.get(OVERALL) or {})
    if projected_note:
        notes.append(projected_note)
    register = "" if advice is None else ("\nto register: " + (f"{advice['participants']} (the primary's interval "
                                                                 "reaches the target)" if advice["established"]
                                                                 else "not established"))
    axes.set_title(f"Share of simulated studies with p < {alpha:g}\nparticipants for {target:.0%} power "
                   f"(overall): {', '.join(notes)}{register}", fontsize=10)
    axes.set_xlabel("participants")
    axes.set_ylabel("share significant (power)")
    axes.set_ylim(-0.02, 1.02)
    axes.set_xticks(sorted({r["participants"] for r in rows}))
    axes.legend(fontsize=7, loc="best")
    figure.tight_layout()
    written = []
    for fmt in ("png", "svg"):
        out = path.with_suffix(f".{fmt}")
        figure.savefig(out, dpi=DPI)
        written.append(out)
    return written


SUCCESS = ("p < alpha with the estimate in the registered direction: explanations help (a significant "
           "result the other way is not the hypothesis confirmed)")


def design_said(study) -> str:
    """The study's design in words, as the power reports state it among their assumptions."""
    return (f"arms {', '.join(study.arms)}, order {study.order}, {study.sessions} sessions of "
            f"{study.games_per_session} games" + (", a randomized offer" if study.offer == "randomized" else ""))


def test_said(name: str, test: str, what: str, alpha: float, success: str) -> str:
    """The registered primary test in words, as both power reports state it among their assumptions."""
    return (f"the registered primary test {name} ({test} in the report's list of tests: {what}), alpha {alpha:g} "
            f"two-sided; a success: {success}")


def simulations_said(repeats: int, repeats_from: str, simulated: str = "simulated studies") -> str:
    return f"{repeats} {simulated} at each size ({repeats_from}); each power with its {INTERVAL}; {RULE}"


def chosen_repeats(repeats: int | None, precision: float, target: float = TARGET) -> tuple[int, str]:
    """The simulated studies a size (`repeats` when given, else repeats_for(precision, target)) and where that number
    came from, as the reports say it; ValueError for fewer than one."""
    chosen = repeats_for(precision, target) if repeats is None else repeats
    if chosen < 1:
        raise ValueError(f"--repeats must be at least 1, got {chosen}")
    return chosen, "--repeats" if repeats is not None else f"--precision {precision:g}"


def power(config: PowerConfig) -> dict:
    """Plays the studies, writes power.json, power.csv and the plot; returns the report."""
    from .simulate import DEFAULT_MIX, assumed_effect, assumption_line, study_file

    study = load_study(study_file(config.study))
    if study.kind != "controlled":
        raise ValueError(f"{config.study}: power is computed on Table 1, which needs a controlled study")
    repeats, repeats_from = chosen_repeats(config.repeats, config.precision, config.target)
    config = replace(config, primary=config.primary or default_primary(study), repeats=repeats)
    named = primary_comparisons(study.kind, study.arms)
    if config.primary not in named:
        raise ValueError(f"{config.primary!r} is not a primary test of this study; one of {', '.join(sorted(named))}")
    started = time.perf_counter()
    studies = sorted(_play_all(config, study.games), key=lambda s: (s["participants"], s["repeat"]))
    seconds = time.perf_counter() - started
    rows = power_table(studies, config.alpha)
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    needed = {mode: {test: participants_for(rows, mode, test, config.target) for test in TESTS} for mode in modes}
    intervals = {mode: {test: participants_interval(rows, mode, test, config.target) for test in TESTS}
                 for mode in modes}
    projections = {mode: projected(studies, mode, config.alpha, config.target) for mode in modes}
    found = [(s["participants"], s["primary"]["p_value"], s["primary"]["estimate"]) for s in studies]
    about = next((s["primary"]["about"] for s in studies if s["primary"].get("about")), named[config.primary])
    primary = {"name": config.primary, "test": test_name(config.primary), "what": about,
               "success": SUCCESS, "rows": primary_rows(found, config.alpha, 1.0)}
    advice = recommendation(primary["rows"], config.target, config.precision)
    players = config.players or DEFAULT_MIX
    assumed = assumed_effect(config.explanation_weight, players)
    games = sum(s["games"] for s in studies)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    plot = draw(rows, needed, config.target, config.alpha, out / "power.png", projections.get(OVERALL), primary, advice)
    report = {"study": study.to_dict(), "sizes": list(config.sizes), "repeats": config.repeats,
              "precision": config.precision, "repeats_from": repeats_from, "players": players, "assumed": assumed,
              "assumptions": {
                  "effect": assumption_line(assumed),
                  "participants": (f"simulated participants of the preset mix {players} (game/participant.py), each "
                                   "seeing the images with its own errors and learning over its games how far to trust "
                                   f"the agent; every game played through the real server, rules and agent "
                                   f"{config.agent!r}; nobody leaves early"),
                  "design": design_said(study),
                  "test": test_said(primary["name"], primary["test"], primary["what"], config.alpha, SUCCESS),
                  "simulations": simulations_said(config.repeats, repeats_from)},
              "agent": config.agent, "world": str(config.world),
              "seed": config.seed, "alpha": config.alpha, "target": config.target, "method": METHOD,
              "tests": {"naive": "two-proportion z-test, games as independent (Table 1 p_value; an association that "
                                 "does not keep its level when participants differ: results/null_calibration.md)",
                        "clustered": "Table 1 p_value_clustered: the row's pooled with- against without-explanation "
                                     "games, wild cluster bootstrap over participants (table1.ROW.pooled in the report's "
                                     "list of tests, an association; for overall_inc_none the participant-level "
                                     "randomization test of the arms, stats.relabel_test); not the registered primary",
                        "primary": f"{primary['test']}: the registered primary ({primary['what']}); the participants "
                                   "to register rest on it alone"},
              "power": rows, "participants_for_target": needed, "participants_for_target_ci": intervals,
              "primary": primary, "recommendation": advice, "participants_to_register": advice["participants"],
              "projected": projections, "projection_method": PROJECTION,
              "cost": {"studies": len(studies), "games": games, "seconds": seconds,
                       "seconds_per_game": seconds / games if games else None, "processes": config.processes,
                       "threads_per_process": config.threads},
              "errors": [e for s in studies for e in s["errors"]], "studies": studies,
              "files": {"csv": str(out / "power.csv"), "plot": [str(p) for p in plot]}}
    (out / "power.json").write_text(json.dumps(report, indent=1))
    with open(out / "power.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["participants", "mode", "test", "power"])
        writer.writeheader()
        writer.writerows(rows)
    return report


def assumption_lines(assumptions: dict) -> list[str]:
    """Every assumption a power rests on, one line each, as both power reports print them."""
    return [said if said.startswith("ASSUMED") else f"ASSUMED {name}: {said}" for name, said in assumptions.items()]


def primary_lines(test: str, rows: list[dict], advice: dict) -> list[str]:
    """The registered primary's power by size with its interval, and the participants to register (or why none)."""
    lines = [f"{'participants':>12s} {'studies':>8s} {'power':>7s} {'95% CI':>15s}   (the registered primary, {test})"]
    for r in rows:
        lines.append(f"{r['participants']:12d} {r['studies']:8d} {100 * r['power']:6.1f}% "
                     f"[{100 * r['power_ci'][0]:5.1f}, {100 * r['power_ci'][1]:5.1f}]")
    lines.append(f"register {advice['participants']} participants: `exag preregister --planned-n "
                 f"{advice['participants']}` ({advice['reason']})" if advice["established"] else
                 f"no number of participants to register: {advice['reason']}")
    return lines


def format_power(report: dict) -> str:
    rows = report["power"]
    modes = list(report["participants_for_target"])
    lines = assumption_lines(report["assumptions"])
    if report["assumed"]["null"]:
        lines[0] += "; the shares below are false-positive rates"
    lines += [f"{report['cost']['studies']} simulated studies, {report['cost']['games']} games in "
              f"{report['cost']['seconds'] / 60:.1f} min ({report['cost']['seconds_per_game'] or 0:.2f} s/game); "
              f"Table 1's associations, for comparison: share with p < {report['alpha']:g} (naive / clustered):"]
    lines.append(f"{'participants':>12}  " + "  ".join(f"{m:>18}" for m in modes))
    for size in report["sizes"]:
        cells = []
        for mode in modes:
            get = {r["test"]: r["power"] for r in rows if r["participants"] == size and r["mode"] == mode}
            cells.append(f"{get.get('naive', float('nan')):>8.0%} / {get.get('clustered', float('nan')):<7.0%}")
        lines.append(f"{size:>12}  " + "  ".join(cells))
    for mode, needed in report["participants_for_target"].items():
        intervals = report["participants_for_target_ci"][mode]

        def interval(test: str) -> str:
            low, high = intervals[test]
            return (f" (95% CI {'?' if low is None else f'{low:.0f}'}-"
                    f"{'beyond ' + str(max(report['sizes'])) if high is None else f'{high:.0f}'})")
        said = ", ".join(f"{test} {'not reached' if n is None else f'{n:.0f}'}{interval(test)}"
                         for test, n in needed.items())
        projected_note = projection_note(report["projected"].get(mode), needed)
        if projected_note:
            said += f"; {projected_note}, normal approximation of an idealised test"
        lines.append(f"participants for {report['target']:.0%} power, {mode}: {said}")
    lines += primary_lines(report["primary"]["test"], report["primary"]["rows"], report["recommendation"])
    if report["errors"]:
        lines.append(f"{len(report['errors'])} simulated participants stopped early, e.g. {report['errors'][0]}")
    lines.append(f"written: {report['files']['csv']}, {', '.join(report['files']['plot'])} and power.json")
    return "\n".join(lines)
