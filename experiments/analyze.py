"""`exag analyze --data EXPORT --out REPORT [--study ID]`: the analysis (experiments/analysis/) of a study's logs,
written as a report. Data of several studies needs --study ID (repeatable) or --all-studies (pooled). Beside the
package, not in it: importing experiments.analysis loads pandas, and `exag --help` loads this module.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Analyse the logged games: Table 1 (controlled studies, with participant-clustered tests), at-will use and "
        "adoption of explanations, win rates by helpfulness and correctness ratings (Figures 5-10), rater "
        "agreement, and the benchmarks beside them. Writes OUT/report.json, OUT/report.html (self-contained), "
        "OUT/figures/ (PNG and SVG) and OUT/tables/ (CSV).")
    parser.add_argument("--data", type=Path, default=None,
                        help="an `exag export` directory (CSV, Parquet or JSONL), the directory `exag simulate "
                             "--out` wrote (its export/ is read) or a server data directory (e.g. data/server)")
    parser.add_argument("--redis-url", default=None, help="read the event log from this Redis instead of --data")
    parser.add_argument("--out", type=Path, required=True, help="directory for the report")
    parser.add_argument("--study", action="append", default=None, metavar="ID",
                        help="only this study (repeat for several); required when the data holds several "
                             "studies, unless --all-studies")
    parser.add_argument("--with-pilots", action="store_true",
                        help="analyse pilot participations too (`exag bot --pilot`, ?pid=test- links), which are "
                             "left out by default: to see the report of a pilot run, never for the study's data")
    parser.add_argument("--all-studies", action="store_true",
                        help="pool every study the data holds into one report (demos and pre-registered studies "
                             "alike; for scripts): without it, data of several studies needs --study ID")
    parser.add_argument("--bench", type=Path, default=None,
                        help="directory of `exag bench ... --json` results to show beside the study")
    parser.add_argument("--exclude", default=None, metavar="FLAGS",
                        help="exclude participants with any of these quality flags, comma-separated: "
                             "no_questions, fast_games, straight_lined (default: a pre-registered study's registered "
                             "exclusions, else none; on pre-registered data other flags are a deviation, "
                             "reported as such)")
    parser.add_argument("--no-exclusions", action="store_true",
                        help="exclude nobody, pre-registered or not: only the unexcluded analysis (what a "
                             "pre-registered report shows as its sensitivity analysis)")
    parser.add_argument("--registration", action="append", type=Path, default=None, metavar="FILE.json",
                        help="the registration document `exag preregister` wrote and you published (repeat for several "
                             "studies): a registered study's plan must be one of these, else it is analysed as not "
                             "pre-registered")
    parser.add_argument("--server-key", type=Path, default=None, metavar="FILE",
                        help="the key of the server that exported the data (its DATA_DIR/server.key, or DATA_DIR): "
                             "verifies what the export says of a pre-registered study's looks at outcomes and of "
                             "what it ran with; without it such a study is analysed as not pre-registered (on the "
                             "server itself, --data data/server or --redis-url, the key is read there)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from .analysis import AnalysisError, analyze, load_tables
    from .analysis.write import format_summary, write_report

    if (args.data is None) == (args.redis_url is None):
        raise ValueError("pass one of --data PATH (an `exag export` directory or a server data directory such as "
                         "data/server) or --redis-url URL")
    exclude = _exclude_flags(args.exclude)
    try:
        if args.study and args.all_studies:
            raise AnalysisError("pass --study ID (repeatable) or --all-studies, not both")
        tables = load_tables(args.redis_url or args.data, studies=args.study or None, pilots=args.with_pilots)
        if args.server_key is not None:
            from game.export_signature import read_key_file
            tables = dataclasses.replace(tables, server_key=read_key_file(args.server_key))
        studies = tables.study_ids()
        if not args.study and not args.all_studies and len(studies) > 1:
            raise AnalysisError(f"the data holds {len(studies)} studies ({', '.join(studies)}): pass --study ID "
                                "(repeatable) to analyse one, or --all-studies to pool them all")
        missing = [str(path) for path in args.registration or [] if not path.is_file()]
        if missing:
            raise ValueError(f"--registration: no such file: {', '.join(missing)}")
        published = [path.read_bytes() for path in args.registration] if args.registration else None
        report = analyze(tables, bench_dir=args.bench, progress=True, no_exclusions=args.no_exclusions,
                         registrations_published=published,
                         **({"exclude_flags": exclude} if exclude is not None else {}))
    except AnalysisError as error:
        print(f"exag: error: {error}", file=sys.stderr)
        return 2
    written = write_report(report, args.out, progress=True)
    print(format_summary(report, written))
    return 0


def _exclude_flags(text: str | None) -> frozenset[str] | None:
    """--exclude fast_games,straight_lined -> those flags (analyze checks them); "none" or "" -> none;
    not given -> None (analyze's default: a pre-registered study's registered exclusions, else none)."""
    if text is None:
        return None
    return frozenset(f.strip() for f in text.split(",") if f.strip() and f.strip() != "none")


def live_report(events: list[dict], study_id: str, server_key: bytes | None = None) -> str:
    """The admin's live report, which `exag serve` hands to the web app (the server does not import the
    analysis); the analysis loads with the first report, not with the server."""
    from .analysis.live import live_report

    return live_report(events, study_id, server_key)
