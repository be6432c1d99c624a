"""`exag study check FILE [FILE ...]`: a study file checked offline, before a server ever sees it, each problem in
one line (issue 55).

What it checks, on this machine and without starting anything: the JSON and every field (StudyConfig, the same
validation a server applies, a pre-registration whose rules no longer match its hash included), what a new study
must be (a safe id, an https redirect), the agent (its checkpoint exists here) and the explainers each arm shows
(known, built in or an installed plugin, and within what the agent offers; the nle explainer of an agent in a
checkpoint directory needs that agent's own NLE model, `exag train nle --agent DIR`), the pool when the study names
one, and for a pre-registered study that its agent, pool, explainer plugins and exag version are the registered ones
(what a server would refuse it for). Exit status 0 when every file passes, 2 otherwise. A study that can pass (`ok`) is
told what a paid study should still have (`warnings`): an information sheet naming who runs the study, whom to
contact, its ethics approval, its duration and its payment; a static completion code that its return link carries.

Cheap to import (`exag --help` loads it): the checks import what they need when they run.
"""
from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Study files, checked offline."
    commands = parser.add_subparsers(dest="study_command", required=True, metavar="STUDY_COMMAND")
    check = commands.add_parser(
        "check", help="check study files offline: every problem in one line",
        description="Check each study FILE as a server would before accepting it, without starting one: its fields, "
                    "its id and links, its agent's checkpoint, the explainers its arms show, its pool, and for a "
                    "pre-registered study that what it would run is what was registered. One line per file: 'ok' "
                    "with what the study is, or the problem. Exit status 2 when any file fails.")
    check.add_argument("files", type=Path, nargs="+", metavar="FILE", help="a study file (JSON, as in studies/)")
    check.add_argument("--agent", default="default",
                       help="the agent the server plays, for a study that names none (default: default)")
    check.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    failed = 0
    for path in args.files:
        try:
            print(f"{path}: ok ({check_file(path, args.agent)})")
        except (ValueError, TypeError, FileNotFoundError) as error:
            failed += 1
            print(f"{path}: {' '.join(str(error).split())}"[:1000])
    return 2 if failed else 0


def check_file(path: Path, server_agent: str = "default") -> str:
    """What the study is, in a few words; ValueError (one line) for the first problem found."""
    from explainers.registry import entry

    from .fingerprints import registered_run, shown_explainers
    from .pool import pool_dir
    from .study import check_agent_explainers, check_new_study, load_study, missing_checkpoint

    if not path.is_file():
        raise FileNotFoundError("no such file")
    study = load_study(path)                       # JSON and fields; "PATH: why" on failure
    check_new_study(study)
    agent = study.agent or server_agent
    missing = missing_checkpoint(agent)
    if missing:
        raise ValueError(f"agent: {missing}")
    for name in shown_explainers(study):
        entry(name)                                # an unknown name or a broken plugin: ValueError, one line
    check_agent_explainers(study, agent)
    missing = missing_nle(study, agent)
    if missing:
        raise ValueError(missing)
    if study.pool:
        pool_dir(study.pool)                       # FileNotFoundError when there is none
    registered = registered_run(study, agent)      # a registered study run otherwise: ValueError
    warnings = paid_study_warnings(study)
    return (f"{study.kind}, {len(study.arms)} arm{'s' * (len(study.arms) != 1)}, {study.games} games a participant, "
            f"agent {agent}" + (f", pre-registered sha256 {study.preregistration['sha256'][:12]}..., what it runs "
                                "is what was registered" if registered else ", not pre-registered")
            + "".join(f"; warning: {w}" for w in warnings))


def missing_nle(study, agent: str) -> str:
    """Why the nle explainer (or its sham) that the study shows has no model for its agent, "" when it has one or is
    not shown: a shipped agent ships with its model, a checkpoint directory needs its own (OWN_NLE in it, which
    `exag train nle --agent DIR` writes), a transformers agent is refused before (check_agent_explainers)."""
    from explainers.registry import imitates
    from vqa_agent.checkpoints import OWN_NLE, is_hf_agent, is_shipped, resolve_agent_path

    from .fingerprints import shown_explainers

    if "nle" not in {imitates(name) or name for name in shown_explainers(study)} or is_hf_agent(agent) \
            or is_shipped(agent):
        return ""
    own = resolve_agent_path(agent) / OWN_NLE
    if (own / "config.json").exists():
        return ""
    return (f"the nle explainer has no model for the agent {agent} (no {own}): train it with `exag train nle "
            f"--agent {agent} --world WORLD` (docs/real-study.md), or show no nle")


def paid_study_warnings(study) -> list[str]:
    """What a study recruited on a platform (it has a prolific_study_id or a redirect_url) should give and does not."""
    from .completion_link import CODE_PARAMETER
    from .consent_form import missing_researcher

    if not (study.prolific_study_id or study.redirect_url):
        return []
    warnings = []
    missing = missing_researcher(study.parsed_consent)
    if missing:
        warnings.append(f"the consent form gives no {', '.join(missing)} (consent.*): participants of a paid study are "
                        "told who runs it, whom to contact, its ethics approval, how long it takes and what it pays")
    if study.redirect_url and study.completion_codes == "static" and \
            f"{CODE_PARAMETER}=" not in study.redirect_url.partition("?")[2]:
        warnings.append(f"redirect_url carries no {CODE_PARAMETER}=: the platform never receives the completion code")
    return warnings
