"""`exag preregister STUDY --out FILE`: the study's rules, fixed before data.

Reads the plan from the study file's "preregistration" section (game/preregistration.py has its fields and
what the hash holds), writes the document FILE.json (canonical JSON: the hash is of these bytes) and its
readable FILE.md, and stores the document's SHA-256 in the study file's section, where the server and
`exag analyze` find it.
"""
from __future__ import annotations

import argparse
import datetime
import json
from dataclasses import replace
from pathlib import Path

from game.preregistration import (ANALYSIS, BETWEEN_ARMS, NOT_FROZEN, NOT_REGISTRABLE, OFFER_PRIMARIES, PLAN_KEYS,
                                  PRIMARY_OUTCOME, document_bytes, missing, primary_comparisons, registration,
                                  within_participant_primary)
from game.quality import FAST_GAME_S, FAST_GAMES_MIN, FAST_GAMES_MIN_SHARE, FLAGS, STRAIGHT_LINE_MIN_RATINGS
from game.fingerprints import exag_version, plugin_fingerprints, pool_fingerprint, shown_explainers
from game.study import StudyConfig, load_study
from vqa_agent.checkpoints import checkpoint_fingerprint

DESCRIPTION = f"""\
Writes the pre-registration of STUDY (a study JSON file) as OUT.json (the document: the whole study config but
how participants are paid and the page's title, the tests' level and sidedness, the plan, this exag version
and the agent checkpoint's fingerprint; canonical JSON) and OUT.md (the same, readable, to deposit e.g. on OSF), and stores the SHA-256 of
OUT.json in STUDY's "preregistration" section. The plan is that section, written by the researcher:

  "preregistration": {{
    "hypotheses": ["Explanations raise the win rate."],
    "primary": "overall",
    "stopping_rule": "Stop when 80 participants have finished, or on 30 June, whichever comes first.",
    "exclusions": ["fast_games", "no_questions"]
  }}

primary: the confirmatory test, one with claim "effect". Controlled studies: overall, net_of_practice, total_effect
(where learning from explanations is expected: explanation arms vs the others over all blocks), or one of
the study's arms (its Table 1 effect test); the with-vs-without ones need "order": "counterbalanced". At-will
studies: offer (the randomized offer's intention-to-treat effect) or offer_iv (the effect of use, the offer as
instrument), both with "offer": "randomized"; explanations_used and overall_inc_none are associations and cannot
be registered. A study whose links may name the arm (choose_arm) cannot be registered. exclusions: quality flags of the export
([] for none):
  {", ".join(FLAGS)}
planned_n: --planned-n (or "planned_n" in the section). How many the primary test needs, from the effect you
expect (a win-rate difference), how much players differ, practice and dropout:
  exag simulate power --study STUDY --difference 0.10 --sizes 16,40,80 --out power/

After this, the study is held to it: a study file whose plan or config no longer matches its hash is refused
in one line naming the changed fields, a server refuses a study whose agent checkpoint is not the registered
one or that has the study with another pre-registration, and `exag analyze` applies the
registered exclusions by default, prints what each removed, labels every other analysis exploratory and
repeats the primary comparison without exclusions (sensitivity). Running it again before any data replaces
the registration (and its hash)."""
# what each flag means, for the reader of the document (game/quality.py computes them)
FLAG_MEANINGS = {
    "no_questions": "finished a game without asking a single question",
    "fast_games": f"finished at least {FAST_GAMES_MIN} games, and at least {FAST_GAMES_MIN_SHARE:.0%} of their games, "
                  f"in under {FAST_GAME_S:g} s each",
    "comprehension_failed": "failed the comprehension check as many times as it allows",
    "attention_failed": "answered an attention check wrong",
    "colour_screen_failed": "read fewer colour-screen plates right than the study's rule",
    "straight_lined": f"gave the same helpfulness rating to every round ({STRAIGHT_LINE_MIN_RATINGS} ratings or more)",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION
    parser.formatter_class = argparse.RawDescriptionHelpFormatter     # the plan's example keeps its lines
    parser.add_argument("study", type=Path, metavar="STUDY", help="the study file (JSON, as in studies/)")
    parser.add_argument("--out", type=Path, required=True,
                        help="the document's path without extension: writes OUT.json and OUT.md")
    parser.add_argument("--planned-n", type=int, default=None, metavar="N",
                        help="participants to recruit (`exag simulate power --study STUDY --difference D ...` "
                             "estimates how many the primary test needs at an effect of D); default: the "
                             "section's planned_n")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    written = preregister(args.study, args.out, args.planned_n)
    print(f"pre-registered {written['study']}: {written['json']} (sha256 {written['sha256']}) and {written['md']}; "
          f"{args.study} now carries the hash. `exag analyze` holds the study's report to it.")
    return 0


def preregister(study_path: Path, out: Path, planned_n: int | None = None,
                 warn=lambda message: print(f"warning: {message}", flush=True)) -> dict:
    """Writes the document and stores its hash in the study file; returns the paths and the hash."""
    study = load_study(study_path)                       # a malformed plan fails here, in one line
    plan = {k: v for k, v in study.preregistration.items() if k in PLAN_KEYS}
    if planned_n is not None:
        plan["planned_n"] = planned_n
    lacking = missing(plan)
    if lacking:
        raise ValueError(f"{study_path}: the \"preregistration\" section lacks {', '.join(lacking)}"
                         + (f" (give --planned-n N; `exag simulate power --study {study_path} --difference 0.10 "
                            "--sizes 16,40,80 --out power/` says how many the primary test needs "
                            "for a 10-point effect)" if lacking == ["planned_n"] else "")
                         + "; see `exag preregister --help`")
    refuse_unregistrable(study, plan["primary"], study_path)
    try:
        draft = replace(study, preregistration=plan)         # checks the plan with the new planned_n
    except ValueError as error:
        raise ValueError(f"{study_path}: {error}") from error
    section = registration(draft, registered_facts(study, study_path))
    registered = replace(draft, preregistration=section)
    sha256 = section["sha256"]
    base = out.with_suffix("") if out.suffix in (".json", ".md") else out
    json_path, md_path = Path(f"{base}.json"), Path(f"{base}.md")
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_bytes(document_bytes(registered))
    md_path.write_text(markdown(registered, json_path.name), encoding="utf-8")
    data = json.loads(Path(study_path).read_text())
    data["preregistration"] = registered.preregistration
    Path(study_path).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return {"study": study.study_id, "sha256": sha256, "json": json_path, "md": md_path}


def refuse_unregistrable(study: StudyConfig, primary: str, study_path: Path) -> None:
    """ValueError, one line, for a design whose registered primary test would not hold: a with-vs-without
    comparison under a fixed order (practice), or arms participants may choose (no randomization)."""
    if study.choose_arm:
        raise ValueError(f"{study_path}: choose_arm cannot be pre-registered: a registered study randomizes every "
                         "participant's arm; links that name an arm are for demos and pilots (remove choose_arm)")
    if within_participant_primary(study.kind, primary) and study.order != "counterbalanced":
        raise ValueError(f"{study_path}: the primary test {primary!r} compares games with and without explanations, "
                         f"and order {study.order!r} plays every participant's games with explanations "
                         f"{'after' if study.order == 'abab' else 'before'} the others, so practice is part of that "
                         "difference: register \"order\": \"counterbalanced\", or a between-arm primary "
                         f"({', '.join(BETWEEN_ARMS)})")
    if primary in NOT_REGISTRABLE:
        raise ValueError(f"{study_path}: the primary test {primary!r} cannot be registered: {NOT_REGISTRABLE[primary]}")
    if primary in OFFER_PRIMARIES and study.offer != "randomized":
        raise ValueError(f"{study_path}: the primary test {primary!r} needs a randomized offer of explanations: "
                         "add \"offer\": \"randomized\" to the study")


def registered_facts(study: StudyConfig, study_path: Path) -> dict:
    """What is registered beside the plan (game/fingerprints.py): the exag version, and the fingerprints of the agent's
    checkpoint, the pool's images and every third-party explainer the study shows. ValueError, one line, when the
    study names no agent or no pool (then it would play whatever the server serves), or one cannot be found here."""
    for field, what in (("agent", "a checkpoint directory or shipped agent name"),
                        ("pool", "an imported pool's name or directory (`exag pool import`)")):
        if not getattr(study, field):
            raise ValueError(f"{study_path}: a registered study names its {field} ({what}): with \"{field}\": \"\" it "
                             f"would play whichever {field} the server runs, which the registration cannot freeze")
    try:
        agent = checkpoint_fingerprint(study.agent)
        pool = pool_fingerprint(study.pool)
        plugins = plugin_fingerprints(shown_explainers(study))
    except (FileNotFoundError, ValueError) as error:
        raise ValueError(f"{study_path}: {error}; make the agent and the pool first (docs/studies.md), then "
                         "register"[:600]) from None
    return {"exag_version": exag_version(), "agent_fingerprint": agent, "pool_fingerprint": pool, "plugins": plugins}


def markdown(study: StudyConfig, json_name: str) -> str:
    """The document, readable: what is registered, what each rule means, and how the analysis uses it."""
    plan = study.preregistration
    primary = plan["primary"]
    exclusions = plan["exclusions"]
    registered = plan.get("registered", {})
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    lines = [
        f"# Pre-registration: {study.study_id}", "",
        f"Written {today} by `exag preregister`. The registered document is `{json_name}`; its SHA-256 is",
        "", f"    {plan['sha256']}", "",
        "and the study's configuration carries the same hash, so the server and `exag analyze` hold the study to it.",
        "", "## Design", "",
        f"- Kind: {study.kind}", f"- Arms: {', '.join(study.arms)}",
        f"- Sessions: {study.sessions} of {study.games_per_session} games each ({study.games} games per participant)",
        *([f"- Order: {study.order} (assigned with the arm by the study's seeded blocked randomization)"]
          if study.kind == "controlled" else []),
        f"- Participant checks: {', '.join(sorted(study.checks)) or 'none'}"
        + (f" (as configured: `{json.dumps(study.checks, sort_keys=True)}`)" if study.checks else ""),
        f"- Game settings changed from the defaults: `{json.dumps(study.settings, sort_keys=True)}`"
        if study.settings else "- Game settings: the defaults of this exag version",
        f"- Agent: `{study.agent}`, checkpoint fingerprint `{registered['agent_fingerprint']}`"
        if study.agent and registered.get("agent_fingerprint") else
        f"- Agent: `{study.agent or 'the server agent'}` (its checkpoint is not registered)",
        *([f"- The NLE explainer is offered with the others: {study.nle}"] if study.kind == "at-will" else []),
        f"- Tests: alpha {ANALYSIS['alpha']}, {ANALYSIS['sides']}",
        f"- exag version: `{registered.get('exag_version')}`",
        "", "The whole study configuration is frozen with the plan except "
        + ", ".join(f"`{k}`" for k in NOT_FROZEN if k != "preregistration")
        + ": changing any other field refuses the study, naming the field.",
        "", "## Hypotheses", "", *[f"{i}. {h}" for i, h in enumerate(plan["hypotheses"], 1)],
        "", "## Primary outcome", "", PRIMARY_OUTCOME[0].upper() + PRIMARY_OUTCOME[1:] + ".",
        "", "## Primary test", "",
        f"`{primary}`: {primary_comparisons(study.kind, study.arms)[primary]}. It is the one confirmatory test; "
        "every other analysis in the report is exploratory.",
        "", "## Planned sample size", "",
        f"{plan['planned_n']} participants (the participants the primary test needs at an assumed effect can be "
        "estimated with `exag simulate power --study STUDY --difference D`).",
        "", "## Stopping rule", "", plan["stopping_rule"],
        "", "## Exclusions", "",
        *(["A participant who raised any of these quality flags is excluded, with all their games:", "",
           *[f"- `{f}`: {FLAG_MEANINGS.get(f, f)}" for f in exclusions]] if exclusions else
          ["No participant is excluded."]),
        "", "The analysis (`exag analyze`) applies these exclusions by default, reports how many participants and "
        "games each removed, and repeats the primary comparison without them as a sensitivity analysis.",
        "", "## The registered document", "", "```json", document_bytes(study).decode("utf-8").rstrip(), "```", "",
    ]
    return "\n".join(lines)
