"""A study's pre-registration: the rules fixed before data, as plain data, and the hash that holds the
study to them.

The researcher writes the plan as the study file's "preregistration" section:

    "preregistration": {"hypotheses": ["Explanations raise the win rate."], "primary": "overall",
                        "stopping_rule": "Stop when 80 participants have finished, or on 30 June.",
                        "exclusions": ["fast_games", "no_questions"], "planned_n": 80}

The exclusions are quality flags (game/quality.py FLAGS): effort (`no_questions`, `fast_games`, `straight_lined`),
the participant checks' (`comprehension_failed`, `attention_failed`, `colour_screen_failed`) and repeat
participation (`several_sessions`, `shared_browser`).

`exag preregister STUDY --out FILE` (experiments/preregister.py) writes the document, FILE.json (`document`
below: the whole study config but how participants are paid, the analysis's level and sidedness, this plan,
the exag version and the agent checkpoint's fingerprint) and its readable FILE.md, and puts the SHA-256 of
FILE.json back into the section as "sha256" (with what it registered and a short hash of each field). From then
on the study is held to it:
- a study whose plan or config no longer hashes to its "sha256" is refused wherever it is made (StudyConfig),
  in one line that names the changed fields;
- a server refuses a study whose agent checkpoint is not the registered one (server/study_check.py);
- a server refuses a study whose stored pre-registration differs (server/study_check.py);
- `exag analyze` applies the registered exclusions by default and labels every other analysis exploratory
  (experiments/analysis/preregistered.py).

game/study.py's StudyConfig calls `check` as it is made, so this module does not import it: its functions take
any `Study`, the fields of a study config they read.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from typing import Protocol

from vqa_agent.checkpoints import checkpoint_fingerprint

from .quality import FLAGS

FORMAT = "exag-preregistration/2"
PLAN_KEYS = ("hypotheses", "primary", "stopping_rule", "exclusions", "planned_n")   # what the researcher decides
# ... what `exag preregister` adds: the facts it registers beside the plan (the exag version and the agent's
# checkpoint, `registered`), a short hash of every frozen field so that a change is named (`fields`), and the hash
KEYS = PLAN_KEYS + ("registered", "fields", "sha256")
# The document freezes the whole study config but these: how participants are paid and reach the study, what the
# page is titled (no rule of the experiment), and the arm assignment's seed (drawn by the server when the study is created,
# recorded in the event log), beside the plan.
NOT_FROZEN = ("preregistration", "completion_code", "completion_codes", "redirect_url", "title", "seed",
              "prolific_study_id")
# Fields StudyConfig gained after this format, with the value every study had before them: frozen like any other,
# but left out of the document at that value, so that a study registered before the field existed still matches
# its hash (and the field is named as changed once it takes another value).
ADDED_SINCE = {"offer": "always", "consent": {}, "questionnaire": []}
# The level and sidedness of every test the report prints (experiments/analysis/stats.py takes its ALPHA from
# here): frozen with the plan.
ANALYSIS = {"alpha": 0.05, "sides": "two-sided"}
# What the first documents froze (exag-preregistration/1, no `registered`): studies registered so are still
# verified as they were registered.
FORMAT_1 = "exag-preregistration/1"
DESIGN_1 = ("study_id", "kind", "arms", "sessions", "games_per_session", "order", "checks")
# What `exag preregister` registers beside the plan, and a server logs as what it runs (game/fingerprints.py)
RAN_WITH = ("exag_version", "agent_fingerprint", "pool_fingerprint", "plugins")
PRIMARY_OUTCOME = "the win: a game's right guess with points left (games.won in the export)"
# The comparisons a plan can name as its primary test, by study kind (a controlled study may also name one of
# its arms: that arm's Table 1 row); experiments/analysis/preregistered.py finds each in the report.
PRIMARY = {
    "controlled": {
        "overall": "Table 1, row 'overall', its effect test (`effect`): the participants' average direct effect of "
                   "showing explanations, a random-intercept model of each randomized participant's win rate per block "
                   "(an intercept per block and a carryover term, feasible GLS) tested with CR2 errors and "
                   "Bell-McCaffrey degrees of freedom, the arms without explanations anchoring the block effects; "
                   "needs a counterbalanced order",
        "overall_inc_none": "Table 1, row 'overall_inc_none': with-explanation games of the explanation arms against "
                            "every arm's other games; randomization test of the explanation arms (exact under no effect "
                            "on any game only: an association, no longer registrable)",
        "total_effect": "the total effect of being dealt an arm with explanations, for designs where learning is "
                        "expected: the win rate over all blocks, explanation arms vs the arms without, each "
                        "randomized participant's blocks weighing the same (Welch's standard error, the smaller "
                        "group's degrees of freedom); any order",
        "net_of_practice": "the explanation effect net of practice: each participant's with-block minus other-block "
                           "difference, arms with explanations vs arms without (studentized participant randomization "
                           "test)",
    },
    "at-will": {
        "explanations_used": "win rate of games that used explanations vs games that did not; participant-clustered "
                             "test (an association: players choose when to buy; no longer registrable)",
        "offer": "the randomized offer's intention-to-treat effect per game: the win on the offer within participants "
                 "(a fixed effect per participant), adjusted for the set's difficulty; p-value from re-drawing each "
                 "participant's offered games among their own games (exact); needs \"offer\": \"randomized\"",
        "offer_iv": "the effect of using explanations with the randomized offer as instrument (the intention-to-treat "
                    "difference over the difference in use; its test is the intention-to-treat one); needs "
                    "\"offer\": \"randomized\"",
    },
}
# Primaries whose test is an association (the design does not randomize the contrast, or its test holds only under
# the sharp null): studies registered with them before are still read and analysed; new ones cannot name them.
NOT_REGISTRABLE = {
    "overall_inc_none": "it mixes a change of arm with a change of block, and its randomization test holds its level "
                        "only when explanations change no game at all (docs/results.md); register overall (with a "
                        "counterbalanced order) or net_of_practice",
    "explanations_used": "it is an association: the players choose which games to buy explanations in, and what moves "
                         "that choice also moves winning; randomize the offer (\"offer\": \"randomized\") and register "
                         "offer or offer_iv",
}
OFFER_PRIMARIES = ("offer", "offer_iv")
# The name of each primary's test in the report's list of tests (experiments/analysis/claims.py); an arm's row is
# "table1.<arm>"
TEST_NAMES = {"overall": "table1.overall", "overall_inc_none": "table1.overall_inc_none.relabel",
              "net_of_practice": "net_of_practice", "total_effect": "total_effect",
              "explanations_used": "at_will.explanations_used", "offer": "at_will.offer", "offer_iv": "at_will.offer_iv"}
ARM_ROW = ("Table 1, row '{arm}': the participants' average direct effect of that arm's explanations (the crossover "
           "of 'overall' over this arm's participants, the arms without explanations anchoring the block effects)")


# Primary tests that compare a participant's games with and without explanations: a fixed order (abab, baba)
# plays every participant's with-games later (or earlier) than the others, so practice is in the comparison.
BETWEEN_ARMS = ("net_of_practice", "total_effect")


def test_name(primary: str) -> str:
    """The registered primary's entry in the report's list of tests (the one tagged primary)."""
    return TEST_NAMES.get(primary, f"table1.{primary}")


def within_participant_primary(kind: str, primary: str) -> bool:
    """Whether `primary` compares games with and without explanations (needs a counterbalanced order)."""
    return kind == "controlled" and primary not in BETWEEN_ARMS


def primary_comparisons(kind: str, arms) -> dict[str, str]:
    """The primary tests a study of this kind and these arms can name, with what each is."""
    named = dict(PRIMARY.get(kind, {}))
    if kind == "controlled":
        named.update({arm: ARM_ROW.format(arm=arm) for arm in arms if arm != "none"})
    return named


class Study(Protocol):
    """A study config as the pre-registration reads it (game/study.py's StudyConfig, a frozen dataclass:
    `registration` copies it with dataclasses.replace)."""
    study_id: str
    kind: str
    arms: tuple[str, ...]
    sessions: int
    games_per_session: int
    order: str
    checks: dict
    preregistration: dict

    def to_dict(self) -> dict: ...


def check(study: Study) -> None:
    """Raises ValueError, one line saying what is wrong, for a malformed plan or one whose hash no longer
    matches the study (its rules changed after `exag preregister`: the changed fields are named)."""
    plan = study.preregistration
    if not isinstance(plan, dict):
        raise ValueError("preregistration must be an object (see `exag preregister --help`)")
    unknown = sorted(set(plan) - set(KEYS))
    if unknown:
        raise ValueError(f"preregistration: unknown field(s) {', '.join(unknown)}; fields: {', '.join(PLAN_KEYS)}")
    exclusions = plan.get("exclusions", [])
    if not isinstance(exclusions, list) or not all(isinstance(f, str) for f in exclusions):
        raise ValueError(f"preregistration.exclusions must be a list of quality flags ({', '.join(FLAGS)})")
    bad = [f for f in exclusions if f not in FLAGS]
    if bad:
        raise ValueError(f"preregistration.exclusions: unknown quality flag(s) {', '.join(map(repr, bad))}; "
                         f"flags: {', '.join(FLAGS)}")
    comparisons = primary_comparisons(study.kind, study.arms)
    if "primary" in plan and plan["primary"] not in comparisons:
        raise ValueError(f"preregistration.primary: {plan['primary']!r} is not a primary test of this "
                         f"{study.kind} study; choose one of {', '.join(comparisons)}")
    hypotheses = plan.get("hypotheses", [])
    if not isinstance(hypotheses, list) or not all(isinstance(h, str) and h.strip() for h in hypotheses):
        raise ValueError("preregistration.hypotheses must be a list of sentences")
    if not isinstance(plan.get("stopping_rule", ""), str):
        raise ValueError("preregistration.stopping_rule must be a sentence")
    planned = plan.get("planned_n", 1)
    if isinstance(planned, bool) or not isinstance(planned, int) or planned < 1:
        raise ValueError("preregistration.planned_n must be a whole number of participants, at least 1")
    registered = plan.get("registered", {})
    if not isinstance(registered, dict) or not set(registered) <= set(RAN_WITH):
        raise ValueError(f"preregistration.registered holds what `exag preregister` wrote ({', '.join(RAN_WITH)}); "
                         "leave it as written")
    if "sha256" not in plan:
        return                                   # a draft: `exag preregister` checks it is complete
    if not isinstance(plan["sha256"], str) or not re.fullmatch(r"[0-9a-f]{64}", plan["sha256"]):
        raise ValueError("preregistration.sha256 must be the 64 hex digits `exag preregister` wrote")
    missing_keys = [k for k in PLAN_KEYS if k not in plan]
    if missing_keys:
        raise ValueError(f"preregistration: a registered plan has every field; missing {', '.join(missing_keys)}")
    if digest(study) != plan["sha256"]:
        changed = changed_fields(study)
        raise ValueError(f"preregistration: the study's rules differ from its pre-registration (sha256 "
                         f"{plan['sha256'][:12]}...{'; changed: ' + ', '.join(changed) if changed else ''}): restore "
                         "the registered ones, or pre-register again with `exag preregister` before any data is "
                         "collected")


def check_agent(study: Study, agent: str) -> None:
    """Raises ValueError when the study was registered with an agent checkpoint (`exag preregister` registered
    its fingerprint) whose files differ from `agent`'s, the one a server would play."""
    registered = study.preregistration.get("registered", {}).get("agent_fingerprint")
    if not registered:
        return
    try:
        found = checkpoint_fingerprint(agent)
    except FileNotFoundError as error:
        raise ValueError(f"agent: the pre-registered agent {agent!r} is not on this server ({error})"[:500]) from None
    if found != registered:
        raise ValueError(f"agent: the checkpoint of {agent!r} on this server (fingerprint {found}) is not the one "
                         f"pre-registered (fingerprint {registered}): serve the registered checkpoint, or register "
                         "the new one as a new study")


def ran_differently(study: Study, ran: dict) -> list[str]:
    """The registered facts (RAN_WITH) that what ran (`ran`, game/fingerprints.py `ran_with`) differs from: a
    fact the registration does not hold (a study registered before it was registered) is not compared."""
    registered = study.preregistration.get("registered") or {}
    return [key for key in RAN_WITH if key in registered and registered[key] != ran.get(key)]


def check_ran(study: Study, ran: dict) -> None:
    """ValueError, one line, when a registered study would run with an agent checkpoint, pool images, explainer
    plugins or exag code other than the registered ones (`ran`: game/fingerprints.py `ran_with`)."""
    changed = ran_differently(study, ran)
    if changed:
        raise ValueError(f"study {study.study_id} was pre-registered with other {', '.join(changed)} than this server "
                         "runs: serve the registered agent, pool, explainers and exag version, or register again as "
                         "a new study")


def outcomes_hidden(study: Study, finished: int) -> str | None:
    """Why a pre-registered study's outcomes (win rates by arm) are not shown yet, or None: they are hidden
    from whoever runs the study until its planned N participants have finished (no peeking)."""
    plan = study.preregistration
    if "sha256" not in plan or finished >= plan.get("planned_n", 0):
        return None
    return (f"Outcomes hidden: the study is pre-registered, and its win rates are shown once its planned "
            f"{plan['planned_n']} participants have finished ({finished} so far); watching an effect form and "
            "stopping when it looks good would make its tests wrong.")


def frozen(study: Study) -> dict:
    """The study's fields the document freezes (all but NOT_FROZEN, and those of ADDED_SINCE at their old value),
    as JSON data."""
    return {k: v for k, v in json.loads(json.dumps(study.to_dict())).items()
            if k not in NOT_FROZEN and (k not in ADDED_SINCE or v != ADDED_SINCE[k])}


def field_hashes(study: Study) -> dict[str, str]:
    """A short hash of each frozen field and plan field ("preregistration.exclusions"), to name what changed."""
    values = {**frozen(study), **{f"preregistration.{k}": study.preregistration.get(k) for k in PLAN_KEYS}}
    return {k: hashlib.sha256(json.dumps(v, sort_keys=True).encode()).hexdigest()[:16] for k, v in values.items()}


def changed_fields(study: Study) -> list[str]:
    """The fields whose value differs from the registered one (empty for a first-format registration, which
    kept no per-field hashes, or when only the hash itself was edited)."""
    registered = study.preregistration.get("fields")
    if not isinstance(registered, dict):
        return []
    now = field_hashes(study)
    return [k for k in sorted(set(now) | set(registered)) if now.get(k) != registered.get(k)]


def registration(study: Study, registered: dict) -> dict:
    """The study's "preregistration" section as `exag preregister` leaves it: the plan, what is registered beside
    it (`registered`: exag_version, agent_fingerprint), a short hash of each field and the document's hash."""
    plan = {k: study.preregistration[k] for k in PLAN_KEYS if k in study.preregistration}
    draft = dataclasses.replace(study, preregistration={**plan, "registered": registered})
    return {**draft.preregistration, "fields": field_hashes(draft), "sha256": digest(draft)}


def missing(plan: dict) -> list[str]:
    """What a plan still lacks before it can be registered."""
    return [k for k in PLAN_KEYS if k not in plan or plan[k] in ("", [], None) and k != "exclusions"]


def document(study: Study) -> dict:
    """What is registered (without the hash itself): the whole study config but NOT_FROZEN, the analysis's
    level and sidedness, the plan, and what `exag preregister` registered beside it (the exag version, the
    agent checkpoint's fingerprint). A study registered in the first format gets that format's document."""
    plan = study.preregistration
    if "sha256" in plan and "registered" not in plan:          # exag-preregistration/1
        design = {k: getattr(study, k) for k in DESIGN_1}
        design["arms"] = list(design["arms"])
        return {"format": FORMAT_1, "study": design,
                "preregistration": {k: plan[k] for k in PLAN_KEYS if k in plan}}
    return {"format": FORMAT, "study": frozen(study), "analysis": ANALYSIS,
            "preregistration": {k: plan[k] for k in PLAN_KEYS if k in plan},
            "registered": plan.get("registered", {})}


def document_bytes(study: Study) -> bytes:
    """The document as FILE.json holds it: one canonical text, so its hash is the same everywhere."""
    return (json.dumps(document(study), indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def digest(study: Study) -> str:
    return hashlib.sha256(document_bytes(study)).hexdigest()


def registered(study: Study) -> bool:
    return bool(study.preregistration.get("sha256"))
