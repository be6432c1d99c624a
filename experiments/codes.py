"""`exag codes check`: the completion codes Prolific recorded, checked against the ones the study gave (issue 55).

    exag codes check --prolific prolific_export.csv --data exports/reviewed-1 --study reviewed-1 [--out verdicts.csv]

A participant who finishes sees their code, and the done page's return link hands it to Prolific as `cc=`
(game/completion_link.py). Before approving, the researcher checks every submission: Prolific's export (the
study's "Download submissions" CSV: "Participant id", "Submission id", "Status", "Completion code"; the older
export's participant_id, session_id, status and entered_code are read too) against ours (`exag export`, a server
data directory or a Redis URL: participants.participant is prolific:PID:SESSION, participants.completion_code the
code each participation earned with per-participant codes, participants.finished when they finished).

Each submission gets a verdict:
- `match`: its participation (the same PID and session) finished, and the code Prolific holds is the one it earned
  (with static codes: the study's code);
- `wrong_code`: it finished, but Prolific holds another code (a typo, or a code copied from someone else);
- `not_finished`: its participation never finished here, yet a code reached Prolific (a shared or guessed code);
- `no_participation`: no participation of the study has its PID and session;
- `no_code`: Prolific holds no code for it (returned, timed out, still active, or NOCODE: submitted without one).
And each participation that finished here without a submission on Prolific is listed (`finished_not_submitted`).

Exit status 0 when every submission with a code matches, 2 otherwise. `--out FILE.csv` writes every verdict.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from dataclasses import dataclass
from pathlib import Path

# Prolific's column names, current export first; the older export's after
PARTICIPANT_COLUMNS = ("Participant id", "participant_id")
SUBMISSION_COLUMNS = ("Submission id", "session_id")
CODE_COLUMNS = ("Completion code", "entered_code", "study_code")        # the last: the API's submissions
NO_CODE = ("", "NOCODE")      # Prolific writes NOCODE where a participant submitted without a code
STATUS_COLUMNS = ("Status", "status")
VERDICTS = ("match", "wrong_code", "not_finished", "no_participation", "no_code")
PROBLEMS = ("wrong_code", "not_finished", "no_participation")


@dataclass(frozen=True)
class Submission:
    participant: str     # Prolific's participant id (PROLIFIC_PID)
    submission: str      # Prolific's submission id (the link's SESSION_ID)
    code: str
    status: str


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Completion codes, checked against the recruiting platform's record."
    commands = parser.add_subparsers(dest="codes_command", required=True, metavar="CODES_COMMAND")
    check = commands.add_parser(
        "check", help="check the codes in Prolific's submissions export against the ones the study gave",
        description=__doc__.split("\n\n", 2)[2], formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("--prolific", type=Path, required=True, metavar="CSV",
                       help="Prolific's submissions export of the study (CSV)")
    check.add_argument("--data", default="data/server",
                       help="our side: an `exag export` directory or a server data directory (default: data/server)")
    check.add_argument("--redis-url", default=None, help="read the event log from this Redis instead of --data")
    check.add_argument("--study", required=True, help="the study's id in ExAG")
    check.add_argument("--out", type=Path, default=None, help="write every verdict to this CSV file")
    check.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from experiments.analysis.data import AnalysisError, load_tables

    try:
        submissions = read_prolific(args.prolific)
        tables = load_tables(args.redis_url or args.data, [args.study])
    except (ValueError, OSError, AnalysisError) as error:
        print(f"exag codes check: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    if tables.participants.empty:
        print(f"exag codes check: {args.redis_url or args.data} has no participant of study {args.study}",
              file=sys.stderr)
        return 2
    static = static_code(tables.studies, args.study)
    verdicts, unsubmitted = check_codes(submissions, tables.participants, static)
    if args.out:
        write_verdicts(args.out, verdicts, unsubmitted)
    print(summary(verdicts, unsubmitted))
    return 2 if any(v["verdict"] in PROBLEMS for v in verdicts) else 0


def read_prolific(path: Path) -> list[Submission]:
    """The submissions of Prolific's export; ValueError (one line) for a file that is not one."""
    with open(path, newline="", encoding="utf-8-sig") as file:
        reader = csv.DictReader(file)
        header = reader.fieldnames or []

        def column(names: tuple[str, ...], required: bool = True) -> str | None:
            found = next((name for name in names if name in header), None)
            if found is None and required:
                raise ValueError(f"{path}: no {' or '.join(repr(n) for n in names)} column; is it Prolific's "
                                 f"submissions export? (columns: {', '.join(header[:8])})")
            return found

        who, submission, code = column(PARTICIPANT_COLUMNS), column(SUBMISSION_COLUMNS), column(CODE_COLUMNS)
        status = column(STATUS_COLUMNS, required=False)
        return [Submission((row[who] or "").strip(), (row[submission] or "").strip(), (row[code] or "").strip(),
                           (row[status] or "").strip() if status else "") for row in reader]


def static_code(studies, study_id: str) -> str:
    """The study's static completion code, from its config in the studies table ("" when none or unknown)."""
    if studies.empty or "config" not in studies:
        return ""
    rows = studies[studies["study"] == study_id]
    config = json.loads(rows["config"].iloc[-1]) if len(rows) else {}
    return "" if config.get("completion_codes") == "per_participant" else config.get("completion_code", "")


def check_codes(submissions: list[Submission], participants, static: str = "") -> tuple[list[dict], list[dict]]:
    """Every submission's verdict (module doc), and the participations that finished here without a submission."""
    import pandas as pd

    ours = {}
    for row in participants.to_dict("records"):
        source, _, rest = str(row.get("participant") or "").partition(":")
        pid, _, session = rest.partition(":")
        if source == "prolific":
            code = row.get("completion_code")
            ours[(pid, session)] = {"finished": not pd.isna(row.get("finished")),
                                    "code": static or ("" if code is None or pd.isna(code) else str(code)),
                                    "participant": row["participant"]}
    verdicts, submitted = [], set()
    for s in submissions:
        mine = ours.get((s.participant, s.submission))
        submitted.add((s.participant, s.submission))
        if s.code.upper() in NO_CODE:
            verdict = "no_code"
        elif mine is None:
            verdict = "no_participation"
        elif not mine["finished"]:
            verdict = "not_finished"
        else:
            verdict = "match" if s.code == mine["code"] else "wrong_code"
        verdicts.append({"participant_id": s.participant, "submission_id": s.submission, "status": s.status,
                         "code_on_prolific": s.code, "code_earned": (mine or {}).get("code", ""), "verdict": verdict})
    unsubmitted = [{"participant": mine["participant"], "code_earned": mine["code"]}
                   for key, mine in ours.items() if mine["finished"] and key not in submitted]
    return verdicts, unsubmitted


def summary(verdicts: list[dict], unsubmitted: list[dict]) -> str:
    counts = {name: sum(v["verdict"] == name for v in verdicts) for name in VERDICTS}
    lines = [f"{len(verdicts)} submissions: " + ", ".join(f"{counts[name]} {name}" for name in VERDICTS)]
    for v in verdicts:
        if v["verdict"] in PROBLEMS:
            lines.append(f"  {v['verdict']}: participant {v['participant_id']}, submission {v['submission_id']}, "
                         f"code on Prolific {v['code_on_prolific']!r}"
                         + (f", earned {v['code_earned']!r}" if v["code_earned"] else ""))
    if unsubmitted:
        lines.append(f"{len(unsubmitted)} participations finished here without a submission on Prolific: "
                     + ", ".join(u["participant"] for u in unsubmitted[:10]) + (" ..." if len(unsubmitted) > 10 else ""))
    lines.append("approve the matches; review every other submission with a code before you pay or reject it"
                 if any(v["verdict"] in PROBLEMS for v in verdicts) else "every submission with a code matches")
    return "\n".join(lines)


def write_verdicts(path: Path, verdicts: list[dict], unsubmitted: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = ["participant_id", "submission_id", "status", "code_on_prolific", "code_earned", "verdict"]
    with open(path, "w", newline="") as file:
        writer = csv.DictWriter(file, columns)
        writer.writeheader()
        writer.writerows(verdicts)
        for u in unsubmitted:
            pid, _, session = u["participant"].partition(":")[2].partition(":")
            writer.writerow({"participant_id": pid, "submission_id": session, "code_earned": u["code_earned"],
                             "verdict": "finished_not_submitted"})
