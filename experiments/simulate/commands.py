"""`exag bot`, `exag simulate` and `exag simulate power`: simulated players through the real interface (the
load test among them), a whole study played by simulated participants, and the participants a study needs.

Cheap to import (`exag --help` loads it): the simulations are imported when a command runs.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from game.pool import seed_shipped_embeddings
from server.config import ServerConfig
from vqa_agent.world.default import WORLD_HELP, default_world


# --- `exag bot` -----------------------------------------------------------------------------------------

def add_bot_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Simulated players: join, consent, ask, (buy explanations,) rate and guess through "
                          "Socket.IO, and report outcomes and ask-to-answer times; a load test (--players); a pilot of "
                          "a study file through its checks to the completion code (--pilot).")
    parser.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:5000")
    parser.add_argument("--games", type=int, default=5)
    parser.add_argument("--setting", choices=("controlled", "at-will"), default="controlled")
    parser.add_argument("--arm", default=None, help="the study arm (demo studies let bots choose; default: assigned)")
    parser.add_argument("--study", default=None, help="study id (default: the demo study of the setting)")
    parser.add_argument("--questions", type=int, default=3, help="questions per game")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the report here")
    load = parser.add_argument_group(
        "load test", "N participants at once (half at-will, half controlled over every arm): a question every 3 s, "
        "a rating after each, explanations in a third of at-will rounds, a guess after 4 questions; p50/p95/p99 per "
        "event, errors, timeouts, server CPU and RSS (start the server with --max-connections-per-address above N)")
    load.add_argument("--players", type=int, default=None, help="concurrent participants (turns the load test on)")
    load.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    load.add_argument("--mix", default="at-will=0.5", help="share of at-will participants, e.g. at-will=0.5")
    load.add_argument("--arms", default=None,
                      help="controlled arms to spread over, comma-separated (default: every demo-controlled arm)")
    load.add_argument("--server-pid", type=int, action="append", default=None, metavar="PID",
                      help="sample this server process and its children (workers, redis-server) for CPU and RSS; "
                           "repeatable")
    load.add_argument("--timeout", type=float, default=30.0, help="seconds without a reply that count as a timeout")
    pilot = parser.add_argument_group(
        "pilot a study file", "Test participants (ids bot-..., never counted toward a planned N) take the study "
        "file's study on the server through every check to the completion code, with the platform's parameters "
        "(a study with prolific_study_id: PROLIFIC_PID, STUDY_ID, SESSION_ID, as Prolific's link): consent, "
        "instructions, the comprehension check and colour plates answered right from the file, every game, each "
        "attention check, the questionnaire. Reports per participant the stage reached, games, wins, the completion "
        "code and the return link, and checks the link carries the participant's code as cc=. Exits 1 when a "
        "participant fails (one line each: where and why), 2 when the pilot cannot start (one line: the server "
        "refuses the join, or what it shows at the door is not the file's study). --games, --setting and --study "
        "are the study file's")
    pilot.add_argument("--pilot", type=Path, default=None, metavar="STUDY.json", help="the study file to pilot")
    pilot.add_argument("--participants", type=int, default=1, help="pilot participants, one after the other")
    pilot.add_argument("--platform", choices=("prolific", "mturk", "none"), default=None,
                       help="the join's parameters (default: prolific when the study has prolific_study_id, else "
                            "none: pid=bot-...)")
    pilot.add_argument("--browser", action="store_true",
                       help="click through the real page in Chromium (Playwright), and follow the done page's return "
                            "button (intercepted: nothing leaves the machine)")
    pilot.add_argument("--admin-token", default=None,
                       help="the server's admin token (default: EXAG_ADMIN_TOKEN, if set): compare the whole stored "
                            "study with the file first, and read back the checks' results the server recorded")
    parser.set_defaults(run=bot_command)


def bot_command(args: argparse.Namespace) -> int:
    from experiments.benchmark import write_report
    from game.players import SimplePlayer

    from .bot import DEMO_CONTROLLED_ARMS, format_load, parse_mix, play_games, run_load

    if args.pilot is None and (args.browser or args.platform or args.admin_token):
        raise ValueError("--browser, --platform and --admin-token belong to a pilot: give --pilot STUDY.json")
    if args.pilot is not None:
        if args.players is not None:
            raise ValueError("--pilot and --players: a pilot or a load test, one at a time")
        return pilot_command(args)
    if args.players is not None:      # the load test
        arms = tuple(a.strip() for a in args.arms.split(",") if a.strip()) if args.arms else DEMO_CONTROLLED_ARMS
        report = run_load(args.url, args.players, args.duration, parse_mix(args.mix), arms=arms,
                          server_pids=args.server_pid or (), reply_timeout_s=args.timeout, seed=args.seed)
        print(format_load(report))
        write_report(args.json, report)
        return 0
    report = play_games(args.url, args.games, args.setting, args.arm, args.study,
                        SimplePlayer(questions_per_game=args.questions, seed=args.seed))
    print(f"{report['games']} games, {report['wins']} won; ask-to-answer p50 "
          f"{report['ask_to_answer_ms'].get('p50', float('nan')):.0f} ms, p95 "
          f"{report['ask_to_answer_ms'].get('p95', float('nan')):.0f} ms")
    for error in report["errors"]:
        print(f"  error: {error}", file=sys.stderr)
    write_report(args.json, report)
    return 1 if report["errors"] else 0


def pilot_command(args: argparse.Namespace) -> int:
    """`exag bot --pilot STUDY.json` (pilot.py; --browser: pilot_browser.py)."""
    from experiments.benchmark import write_report
    from game.study import load_study

    from .pilot import StudyFile, format_pilot, pilot

    if not args.pilot.is_file():
        raise FileNotFoundError(f"no study file {args.pilot} (a study JSON file, as in studies/)")
    study = load_study(args.pilot)
    if args.study is not None and args.study != study.study_id:
        raise ValueError(f"--study {args.study} but {args.pilot} is study {study.study_id!r}: the pilot takes the "
                         "study file's")
    options = dict(url=args.url, study=StudyFile(study, str(args.pilot)), participants=args.participants,
                   platform=args.platform, arm=args.arm, questions=args.questions, seed=args.seed,
                   admin_token=args.admin_token or os.environ.get("EXAG_ADMIN_TOKEN", ""))
    if args.browser:
        from .pilot_browser import pilot_in_browser
        report = pilot_in_browser(**options)
    else:
        report = pilot(**options)
    print(format_pilot(report))
    for failure in report["failures"]:
        print(f"exag bot --pilot: FAILED {failure}", file=sys.stderr)
    write_report(args.json, report)
    return 0 if report["ok"] else 1


# --- `exag simulate` and `exag simulate power` ----------------------------------------------------------

def add_simulate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Simulated participants (game/participant.py presets) play a whole study through the real game: "
        "in-process (the server's Play service, rules, inference worker and a private embedded Redis, no sockets) "
        "or, with --url, a running server over Socket.IO. Writes OUT/export/ (what `exag export` writes) and "
        "OUT/summary.json, and prints win rates by arm with and without explanations. `exag simulate power "
        "--help`: the participants a study needs.")
    parser.add_argument("--study", type=Path, default=None, help="the study file (JSON, as in studies/)")
    parser.add_argument("--participants", type=int, default=None, metavar="N", help="simulated participants")
    parser.add_argument("--players", default=None, metavar="PRESET[=SHARE],...",
                        help="preset mix, e.g. careful=0.5,hasty=0.5 (shares sum to 1; default: "
                             "game/participant.py's DEFAULT_MIX of all four presets)")
    parser.add_argument("--out", type=Path, default=None, help="output directory")
    parser.add_argument("--agent", default="default", help="in-process: the agent (name or checkpoint directory)")
    parser.add_argument("--url", default=None, help="play a running server instead, e.g. http://127.0.0.1:5000")
    parser.add_argument("--admin-token", default=None,
                        help="--url: the server's admin token (default: EXAG_ADMIN_TOKEN)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the participants and of the in-process server (default 0). In-process, the "
                             "same seed gives the same study: every exported table equal but for clock times, "
                             "durations and the fast_games flag (experiments/simulate/simulate.py "
                             "RUN_DEPENDENT), whatever --threads or the machine's load; with --url only the "
                             "participants are seeded")
    parser.add_argument("--world", type=Path, default=None, help=f"{WORLD_HELP}; with --url, the server's world")
    parser.add_argument("--threads", type=int, default=8, metavar="T",
                        help="participants playing at once (default 8: while one waits for its answer, the "
                             "others think)")
    parser.add_argument("--format", choices=("csv", "jsonl", "parquet"), default="csv", help="export format")
    _add_assumption_arguments(parser)
    parser.set_defaults(run=simulate_command)

    commands = parser.add_subparsers(dest="simulate_command", metavar="power")
    power = commands.add_parser(
        "power", help="share of simulated studies reaching p < 0.05, by number of participants",
        description="Repeats fresh simulated studies (in-process) at each number of participants and reports the "
                    "share whose Table 1 comparison (overall and each mode; naive z-test and the analysis's "
                    "participant-clustered test) reaches p < 0.05, with the participants needed for 80% power and "
                    "its interval; with --null, that share is the false-positive rate. The participants to register "
                    "rest on the study's registered primary test alone, and only where its power's 95% interval "
                    "lies at or above 80% at a size simulated; the report states every assumption they rest on. "
                    "Writes OUT/power.json, OUT/power.csv and OUT/power.png/.svg. Costs sizes x repeats whole "
                    "studies.")
    power.add_argument("--study", type=Path, required=True,
                       help="the study file (a controlled study; with --difference, an at-will one too)")
    power.add_argument("--sizes", required=True, help="numbers of participants, e.g. 10,20,40,80")
    power.add_argument("--repeats", type=int, default=None,
                       help="simulated studies per size (default: as many as --precision asks, 246 for 0.05)")
    power.add_argument("--precision", type=float, default=None, metavar="H",
                       help="half-width of each power's 95%% interval near 80%% that the repeats are chosen for "
                            "(default 0.05: experiments/simulate/power.py PRECISION); the participants to register "
                            "are the smallest size whose interval lies at or above 80%%, none where no size's does")
    effect = power.add_argument_group(
        "from an explicit effect (fast)",
        "With --difference, the studies are simulated crowds at the level the analysis reads (no server, no "
        "agent: seconds to minutes) with the stated effect and crowd, and the power is that of the study's "
        "registered primary test (--primary), counted in the registered direction only "
        "(experiments/simulate/power_effect.py). What it prints is what to register with exag preregister "
        "--planned-n.")
    effect.add_argument("--difference", type=float, default=None, metavar="D",
                        help="the assumed effect: showing (or, at will, using) explanations adds D to the mean "
                             "participant's win probability, e.g. 0.10 for 10 points")
    power.add_argument("--primary", default=None,
                       help="the primary test (default: the study's registered one, else overall for a "
                            "counterbalanced controlled study, net_of_practice for another, offer at will)")
    effect.add_argument("--icc", type=float, default=0.4,
                        help="intra-participant correlation of winning (how much players differ; default 0.4)")
    effect.add_argument("--practice", type=float, default=0.15, help="log-odds gained a block (default 0.15)")
    effect.add_argument("--dropout", type=float, default=0.1,
                        help="share of participants leaving after each block, weaker ones more (default 0.1)")
    power.add_argument("--out", type=Path, required=True, help="output directory")
    power.add_argument("--players", default=None, metavar="PRESET[=SHARE],...", help="preset mix (as exag simulate)")
    _add_assumption_arguments(power)
    power.add_argument("--agent", default="default")
    power.add_argument("--world", type=Path, default=None, help=WORLD_HELP)
    power.add_argument("--seed", type=int, default=0)
    power.add_argument("--processes", type=int, default=os.cpu_count() or 1,
                       help="studies played side by side (default: one per core)")
    power.add_argument("--threads", type=int, default=8, help="participants at once within a process (default 8)")
    power.set_defaults(run=power_command)


def _add_assumption_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "the assumed effect of explanations",
        "A simulated participant's benefit from explanations is an input, not a finding: it reads each explanation "
        "against what it sees and moves its trust in the round's answer by EXPLANATION_WEIGHT log-odds per unit of "
        "fit (0 to 1) above 0.75. A simulation shows what the game and the analysis do under that assumption, "
        "never whether explanations help people.")
    group.add_argument("--explanation-weight", type=float, default=None, metavar="W",
                       help="the same weight for every preset (default: each preset's own, careful 5, hasty 3, "
                            "over-trusting 6, ignores-explanations 0); summary.json records it under 'assumed'")
    group.add_argument("--null", action="store_true",
                       help="explanations change nothing (--explanation-weight 0; participants still buy them at "
                            "will): checks the false-positive rate of the whole pipeline end to end")


def _assumed_weight(args: argparse.Namespace) -> float | None:
    """--null or --explanation-weight W (not both): the assumed effect of explanations; None: the presets'."""
    if args.null and args.explanation_weight is not None:
        raise ValueError("--null is --explanation-weight 0: give one of them")
    if args.explanation_weight is not None and not 0 <= args.explanation_weight < float("inf"):
        raise ValueError(f"--explanation-weight must be a number >= 0, got {args.explanation_weight}")
    return 0.0 if args.null else args.explanation_weight


def _simulation_inputs(args: argparse.Namespace, what: str):
    """The study and the player mix of `exag simulate` (and its `power`), checked before any world is laid out."""
    from game.study import load_study

    from .simulate import parse_players, study_file

    if args.study is None or args.out is None:
        raise ValueError(f"{what} needs --study STUDY.json and --out DIR")
    return load_study(study_file(args.study)), parse_players(args.players)


def simulate_command(args: argparse.Namespace) -> int:
    from .simulate import SimulationConfig, format_summary, simulate

    study, players = _simulation_inputs(args, "exag simulate")
    if args.participants is None or args.participants < 1:
        raise ValueError("exag simulate needs --participants N (at least 1)")
    token = args.admin_token or os.environ.get("EXAG_ADMIN_TOKEN", "")
    if args.url and not token:
        raise ValueError("--url needs the server's admin token (--admin-token or EXAG_ADMIN_TOKEN): the study is "
                         "created and its events exported through the admin pages")
    world = default_world(args.world)
    if not args.url:
        seed_shipped_embeddings(world, args.agent, ServerConfig.data_dir)
    summary = simulate(SimulationConfig(study=args.study, participants=args.participants, out=args.out,
                                        players=players, world=world, agent=args.agent, url=args.url,
                                        admin_token=token, seed=args.seed, threads=args.threads,
                                        export_format=args.format, explanation_weight=_assumed_weight(args)))
    print(format_summary(summary))
    print(f"export: {summary['export']} (exag analyze --data {args.out} --out REPORT_DIR); "
          f"summary: {args.out / 'summary.json'}")
    return 1 if summary["errors"] else 0


def power_command(args: argparse.Namespace) -> int:
    from .power import PowerConfig, format_power, parse_sizes, power, repeats_for

    if args.difference is not None:
        return effect_power_command(args)
    study, players = _simulation_inputs(args, "exag simulate power")
    sizes = parse_sizes(args.sizes)
    if study.kind != "controlled":
        raise ValueError(f"{args.study}: power is computed on Table 1, which needs a controlled study")
    if args.repeats is not None and args.repeats < 1:
        raise ValueError(f"--repeats must be at least 1, got {args.repeats}")
    precision = {} if args.precision is None else {"precision": args.precision}
    repeats_for(**precision)                     # a bad --precision says so before any world is laid out
    world = default_world(args.world)
    seed_shipped_embeddings(world, args.agent, ServerConfig.data_dir)
    report = power(PowerConfig(study=args.study, sizes=sizes, repeats=args.repeats, out=args.out, players=players,
                               world=world, agent=args.agent, seed=args.seed, processes=args.processes,
                               threads=args.threads, explanation_weight=_assumed_weight(args),
                               primary=args.primary, **precision))
    print(format_power(report))
    return 1 if report["errors"] else 0


def effect_power_command(args: argparse.Namespace) -> int:
    """`exag simulate power --difference D`: power_effect.py."""
    from game.study import load_study

    from .power import default_primary, parse_sizes
    from .power_effect import EffectPowerConfig, effect_power, format_effect_power
    from .simulate import study_file

    study = load_study(study_file(args.study))
    if args.repeats is not None and args.repeats < 1:
        raise ValueError(f"--repeats must be at least 1, got {args.repeats}")
    if args.null or args.explanation_weight is not None or args.players:
        raise ValueError("--difference states the effect itself: --null, --explanation-weight and --players belong "
                         "to the whole-game simulation (without --difference)")
    report = effect_power(EffectPowerConfig(
        study=study, primary=args.primary or default_primary(study), difference=args.difference,
        sizes=parse_sizes(args.sizes), repeats=args.repeats, out=args.out, icc=args.icc, practice=args.practice,
        dropout=args.dropout, seed=args.seed, processes=args.processes,
        **({} if args.precision is None else {"precision": args.precision})))
    print(format_effect_power(report))
    print(f"written: {args.out / 'power.json'}, power.csv, power.png")
    return 0
