"""A study's pre-registration: the rules fixed before data, as plain data, and the hash that holds the
study to them.

The researcher writes the plan as the study file's "preregistration" section:

    "preregistration": {"hypotheses": ["Explanations raise the win rate."], "primary": "overall",
                        "stopping_rule": "Stop when 80 participants have finished, or on 30 June.",
                        "exclusions": ["fast_games", "no_questions"], "planned_n": 80}

`exag preregister STUDY --out FILE` (experiments/preregister.py) writes the document, FILE.json (`document`
below: the study's design and this plan) and its readable FILE.md, and puts the SHA-256 of FILE.json back
into the section as "sha256". From then on the study is held to it:
- a study whose plan or design no longer hashes to its "sha256" is refused wherever it is made (StudyConfig);
- a server refuses a study whose stored pre-registration differs (server/study_check.py);
- `exag analyze` applies the registered exclusions by default and labels every other analysis exploratory
  (experiments/analysis/preregistered.py).
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING

from .quality import FLAGS

if TYPE_CHECKING:
    from .study import StudyConfig

FORMAT = "exag-preregistration/1"
PLAN_KEYS = ("hypotheses", "primary", "stopping_rule", "exclusions", "planned_n")   # what the researcher decides
KEYS = PLAN_KEYS + ("sha256",)                                                      # ... and the hash
# The study's fields the document freezes beside the plan: the design a reviewer holds the study to (its arms,
# their order, who is screened out). Fixed on purpose: a field added here later would change the hash of every
# study registered before it.
DESIGN = ("study_id", "kind", "arms", "sessions", "games_per_session", "order", "checks")
PRIMARY_OUTCOME = "the win: a game's right guess with points left (games.won in the export)"
# The comparisons a plan can name as its primary test, by study kind (a controlled study may also name one of
# its arms: that arm's Table 1 row); experiments/analysis/preregistered.py finds each in the report.
PRIMARY = {
    "controlled": {
        "overall": "Table 1, row 'overall': win rate with vs without explanations (the blocks each participant's "
                   "order shows them in vs the others) in the arms that show explanations; participant-clustered "
                   "test (p_value_clustered)",
        "overall_inc_none": "Table 1, row 'overall_inc_none': as 'overall', with the arms without explanations "
                            "in the without side and the baseline; participant-clustered test (p_value_clustered)",
        "net_of_practice": "the explanation effect net of practice: each participant's with-block minus other-block "
                           "difference, arms with explanations vs arms without (participant randomization test)",
    },
    "at-will": {
        "explanations_used": "win rate of games that used explanations vs games that did not; "
                             "participant-clustered test (p_value_clustered)",
    },
}
ARM_ROW = "Table 1, row '{arm}': win rate with vs without explanations in that arm; participant-clustered test"


def primary_comparisons(kind: str, arms) -> dict[str, str]:
    """The primary tests a study of this kind and these arms can name, with what each is."""
    named = dict(PRIMARY.get(kind, {}))
    if kind == "controlled":
        named.update({arm: ARM_ROW.format(arm=arm) for arm in arms if arm != "none"})
    return named


def check(study: "StudyConfig") -> None:
    """Raises ValueError, one line saying what is wrong, for a malformed plan or one whose hash no longer
    matches the study (its rules changed after `exag preregister`)."""
    plan = study.preregistration
    if not isinstance(plan, dict):
        raise ValueError("preregistration must be an object (see `exag preregister --help`)")
    unknown = sorted(set(plan) - set(KEYS))
    if unknown:
        raise ValueError(f"preregistration: unknown field(s) {', '.join(unknown)}; fields: {', '.join(KEYS)}")
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
    if "sha256" not in plan:
        return                                   # a draft: `exag preregister` checks it is complete
    if not isinstance(plan["sha256"], str) or not re.fullmatch(r"[0-9a-f]{64}", plan["sha256"]):
        raise ValueError("preregistration.sha256 must be the 64 hex digits `exag preregister` wrote")
    missing = [k for k in PLAN_KEYS if k not in plan]
    if missing:
        raise ValueError(f"preregistration: a registered plan has every field; missing {', '.join(missing)}")
    if digest(study) != plan["sha256"]:
        raise ValueError(f"preregistration: the study's rules differ from its pre-registration (sha256 "
                         f"{plan['sha256'][:12]}...): restore the registered ones, or pre-register again with "
                         "`exag preregister` before any data is collected")


def missing(plan: dict) -> list[str]:
    """What a plan still lacks before it can be registered."""
    return [k for k in PLAN_KEYS if k not in plan or plan[k] in ("", [], None) and k != "exclusions"]


def document(study: "StudyConfig") -> dict:
    """What is registered: the study's design and its plan (without the hash itself)."""
    design = {k: getattr(study, k) for k in DESIGN}
    design["arms"] = list(design["arms"])
    plan = {k: study.preregistration[k] for k in PLAN_KEYS if k in study.preregistration}
    return {"format": FORMAT, "study": design, "preregistration": plan}


def document_bytes(study: "StudyConfig") -> bytes:
    """The document as FILE.json holds it: one canonical text, so its hash is the same everywhere."""
    return (json.dumps(document(study), indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def digest(study: "StudyConfig") -> str:
    return hashlib.sha256(document_bytes(study)).hexdigest()


def registered(study: "StudyConfig") -> bool:
    return bool(study.preregistration.get("sha256"))
