"""The analysis held to the study's pre-registration (game/preregistration.py), when it has one.

A study registered with `exag preregister` carries its plan in the export's `studies` table. Then, by
default, `exag analyze`:
- excludes the participants its registered rules name (each study its own rules), and reports how many
  participants and games each rule removed (report["quality"]["removed_by_flag"]);
- reports the registered primary comparison under report["preregistration"], with the hash, and labels
  every other analysis exploratory ("labels");
- repeats the primary comparison without any exclusion: the sensitivity analysis (report["sensitivity"]);
- lists as deviations an analysed N other than the planned one, an exag version other than the
  registered one and every export of the study's data before its planned N had finished ("deviations"; every
  export is listed under "looks").
`--exclude FLAGS` on such data is allowed and applies those flags instead, labelled a deviation from the
pre-registration; `--no-exclusions` reports only the unexcluded analysis.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from game.fingerprints import exag_version
from game.export_signature import failure as signature_failure
from game.preregistration import PRIMARY, PRIMARY_OUTCOME, RAN_WITH, primary_comparisons, test_name

from .at_will import at_will
from .controlled import controlled
from .data import Tables
from .frames import Frames, build_frames

PREREGISTERED, DEVIATION, UNEXCLUDED, NOT_REGISTERED = "preregistered", "deviation", "unexcluded", "not preregistered"
# the report's sections, as labelled: the one holding a study's primary test is "primary" (its other
# comparisons are exploratory all the same), every other one "exploratory"; all are exploratory when the
# analysis is not the registered one (--exclude other flags, --no-exclusions)
SECTIONS = ("controlled", "at_will", "by_helpfulness", "difficulty_by_rating", "rating_histograms", "by_correctness",
            "answer_correctness", "correlations", "agreement", "benchmarks")
SENSITIVITY = ("the pre-registered primary comparison on every participant, no exclusion applied: if it differs "
               "from the primary result, the exclusions decide the result")


def verified(studies, documents: list[bytes] | None = None,
             server_key: bytes | None = None) -> tuple[dict[str, dict], dict[str, str]]:
    """({study: its plan} for the plans that verify, {study: why not} for the rows that carry a plan that does
    not). A plan verifies when the study's config in the export, with this plan, hashes to the plan's sha256
    (game/preregistration.py, as `exag preregister` computed it: an edited exclusion, primary or planned N, or an
    edited hash, does not), the row's `preregistration_sha256` and the config's own plan say the same hash, and,
    when registration documents are given (`exag analyze --registration FILE.json`, the file published when the
    study was registered), one of them is the document with that hash; the server signed the row's looks at
    outcomes and what it ran the study with (game/export_signature.py, verified with `server_key`), and what it
    ran with is what was registered (exag version, agent, pool, explainer plugins: game/fingerprints.py). A study
    whose plan does not verify is analysed as not pre-registered, and the report says why
    (`preregistration.refused`)."""
    if studies.empty or "preregistration" not in studies.columns:
        return {}, {}
    published = {hashlib.sha256(d).hexdigest() for d in documents or []}
    plans, refused = {}, {}
    for row in studies.to_dict("records"):
        study, text = str(row["study"]), row.get("preregistration")
        try:
            plan = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            plan = None
        if not isinstance(plan, dict) or not plan.get("sha256"):
            continue
        why = verification_failure(row, plan, published if documents is not None else None, server_key)
        if why:
            refused[study] = why
        elif isinstance(plan.get("exclusions"), list):
            plans[study] = plan
    return plans, refused


def verification_failure(row: dict, plan: dict, published: set[str] | None,
                         server_key: bytes | None = None) -> str | None:
    """Why a study's exported plan is not the one registered, or None."""
    from game.study import StudyConfig
    try:
        config = json.loads(row.get("config") or "")
    except ValueError:
        return "its study config in the export is not readable JSON"
    if not isinstance(config, dict):
        return "its study config in the export is not a study config"
    if row.get("preregistration_sha256") != plan["sha256"]:
        return "the export's preregistration_sha256 differs from its plan's sha256"
    if (config.get("preregistration") or {}).get("sha256") != plan["sha256"]:
        return "the plan differs from the one in the study's config as it was created"
    try:
        StudyConfig.from_dict({**config, "preregistration": plan})
    except (ValueError, TypeError) as error:        # preregistration.check: the digest, named changed fields
        return f"the plan does not hash to its sha256: {error}"[:500]
    if published is not None and plan["sha256"] not in published:
        return (f"no registration document given (--registration) has its sha256 {plan['sha256'][:12]}...: "
                "it is not the registration published")
    unsigned = signature_failure(server_key, row)
    if unsigned:
        return unsigned
    return ran_otherwise(plan, row.get("ran_with"))


def ran_otherwise(plan: dict, ran_with) -> str | None:
    """Why what the server ran the study with (the row's `ran_with`, one record per server start) is not what
    was registered, or None. A registration that froze the pool (this format) needs a record."""
    registered = plan.get("registered") or {}
    try:
        records = json.loads(ran_with) if isinstance(ran_with, str) else []
    except ValueError:
        records = None
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        return "its ran_with cell is not what a server writes"
    if not records and "pool_fingerprint" in registered:
        return "no record of what the server ran it with (ran_with is empty)"
    changed = sorted({key for record in records for key in RAN_WITH
                      if key in registered and registered[key] != record.get(key)})
    if changed:
        return (f"it ran with another {', '.join(changed)} than was registered (ran_with: "
                f"{'; '.join(str({k: r.get(k) for k in changed}) for r in records)})")[:600]
    return None


def exclusion_rules(plans: dict[str, dict], exclude_flags, no_exclusions: bool) -> tuple[object, str]:
    """What build_frames excludes, and which analysis that is: the registered rules per study (the
    default), the flags asked for in every study (a deviation where a study registered others), or none."""
    if no_exclusions:
        return frozenset(), UNEXCLUDED if plans else NOT_REGISTERED
    if exclude_flags is not None:
        differs = any(set(plan["exclusions"]) != set(exclude_flags) for plan in plans.values())
        return frozenset(exclude_flags), DEVIATION if differs else PREREGISTERED if plans else NOT_REGISTERED
    return {study: frozenset(plan["exclusions"]) for study, plan in plans.items()}, \
        PREREGISTERED if plans else NOT_REGISTERED


def held_to(tables: Tables, plans: dict[str, dict], analysis: str, exclusions: dict, per_study: dict,
            guarded: Callable[[str, Callable[[], dict], list], dict], notes: list[str],
            refused: dict[str, str] | None = None) -> dict:
    """The report's "preregistration" (and, where exclusions were applied, "sensitivity") keys; `refused`: the
    studies whose exported plan does not verify (`verified`), and why."""
    refused = refused or {}
    notes += [f"study {study}: carries a pre-registration that does not verify ({why}); analysed as not "
              "pre-registered" for study, why in refused.items()]
    if not plans:
        return {"preregistration": {"registered": False, "analysis": NOT_REGISTERED, "labels": {}, "studies": {},
                                    "refused": refused}}
    applied = exclusions["flags"]
    studies = {}
    for study, plan in plans.items():
        mine = per_study.get(study)
        kind = (mine or {}).get("kind")
        deviation = None
        if analysis == DEVIATION and set(applied) != set(plan["exclusions"]):
            deviation = (f"excluded by {', '.join(applied) or 'no flag'} (--exclude) instead of the pre-registered "
                         f"{', '.join(plan['exclusions']) or 'no exclusion'}")
        analysed = (mine or {}).get("n", {}).get("participants", 0)
        finished = finished_participants(tables, study)
        studies[study] = {
            "sha256": plan["sha256"], "hypotheses": plan.get("hypotheses", []), "primary": plan.get("primary"),
            "registered": plan.get("registered", {}), "deviations": other_deviations(plan, finished),
            "finished": finished,
            "primary_test": _primary_test(plan.get("primary"), kind), "primary_outcome": PRIMARY_OUTCOME,
            "planned_n": plan.get("planned_n"), "stopping_rule": plan.get("stopping_rule"),
            "exclusions": plan["exclusions"],
            "applied": [] if analysis == UNEXCLUDED else applied if analysis == DEVIATION else plan["exclusions"],
            "deviation": deviation,
            "participants": analysed,
            "looks": looks_at_outcomes(tables.studies, study),
            "result": primary_result(plan.get("primary"), mine) if mine else {"missing": "no finished games"}}
        early = [look for look in studies[study]["looks"] if look.get("planned_n") and
                 (look.get("finished") or 0) < look["planned_n"]]
        if early:
            studies[study]["deviations"].append(
                f"its outcomes were exported {len(early)} time(s) before the planned {plan.get('planned_n')} "
                f"participants had finished (at {', '.join(str(look.get('finished')) for look in early)} finished)")
    # only the analysis as registered has a confirmatory test; with other exclusions every one is exploratory
    primary_sections = {_section_of(plan.get("primary")) for plan in plans.values()} if analysis == PREREGISTERED \
        else set()
    out = {"preregistration": {
        "registered": True, "analysis": analysis, "statement": _statement(analysis, studies),
        "labels": {s: "primary" if s in primary_sections else "exploratory" for s in SECTIONS},
        "studies": studies, "refused": refused}}
    if analysis in (PREREGISTERED, DEVIATION) and (applied or exclusions["participants"]):
        out["sensitivity"] = sensitivity(tables, plans, guarded, notes)
    return out


def looks_at_outcomes(studies, study: str) -> list[dict]:
    """Every export of a registered study's data (game/export.py outcome_looks): when, where, and how many of its
    participants had finished then."""
    if studies.empty or "looks" not in studies.columns:
        return []
    texts = studies.loc[studies["study"] == study, "looks"]
    try:
        looks = json.loads(texts.iloc[-1]) if len(texts) and isinstance(texts.iloc[-1], str) else []
    except ValueError:
        return []
    return [look for look in looks if isinstance(look, dict)] if isinstance(looks, list) else []


def finished_participants(tables: Tables, study: str) -> int:
    """How many real participants (not test participations) finished the study: what planned N counts, here as
    where outcomes are hidden until it is reached (game/preregistration.py outcomes_hidden)."""
    from game.study import is_test_participation
    people = tables.participants
    if people.empty or not {"study", "participant", "finished"} <= set(people.columns):
        return 0
    mine = people[(people["study"] == study) & people["finished"].notna()]
    return int(sum(not is_test_participation(p) for p in mine["participant"]))


def other_deviations(plan: dict, finished: int) -> list[str]:
    """What differs from the registration besides the exclusions: the participants who finished from the planned
    N (one meaning of planned N throughout: finished, before the registered exclusions, which are applied as
    registered and are no deviation), and the exag version that analyses from the one registered."""
    deviations = []
    if plan.get("planned_n") is not None and finished != plan["planned_n"]:
        deviations.append(f"{finished} participants finished where {plan['planned_n']} were planned")
    registered = (plan.get("registered") or {}).get("exag_version")
    if registered and registered != (now := exag_version()):
        deviations.append(f"registered with exag {registered}, analysed with exag {now}")
    return deviations


def sensitivity(tables: Tables, plans: dict[str, dict], guarded, notes: list[str]) -> dict:
    """Each pre-registered study's primary comparison on all its participants (no exclusion)."""
    frames, _ = build_frames(tables, frozenset())
    played = set(frames.games["study"])
    results = {}
    for study, plan in plans.items():
        if study not in played:
            results[study] = {"missing": "no finished games"}
            continue
        mine = frames.study(study)
        section = _section_of(plan.get("primary"))
        compute: Callable[[Frames], dict] = at_will if section == "at_will" else controlled
        results[study] = {"participants": int(mine.games["cluster"].nunique()), "games": int(len(mine.games)),
                          "result": primary_result(plan.get("primary"),
                                                   {section: guarded(f"sensitivity of {study}",
                                                                     lambda: compute(mine), notes)})}
    return {"exclusions": [], "description": SENSITIVITY, "studies": results}


def primary_result(primary: str | None, study_report: dict) -> dict:
    """The registered primary comparison, as the report computed it (a Table 1 row, the effect net of
    practice, or the at-will explanations-used comparison)."""
    section = study_report.get(_section_of(primary)) or {}
    if section.get("missing"):
        return {"missing": section["missing"]}
    if primary == "explanations_used":
        found = section.get("explanations_used")
    elif primary in ("offer", "offer_iv"):
        found = (section.get("offer") or {}).get("itt" if primary == "offer" else "iv")
        if isinstance(found, dict):
            found = {**found, "offer": primary}
    elif primary in ("net_of_practice", "total_effect"):
        found = section.get(primary)
    else:
        found = next((r for r in section.get("table1") or [] if r.get("mode") == primary), None)
    return found if isinstance(found, dict) else {"missing": f"the report has no {primary!r} comparison"}


def tag_primary(tests: list[dict], plan: dict | None, analysis: str) -> None:
    """Mark each listed test (claims.py) "primary" or "exploratory": only the registered primary's own test is
    primary, and only in the analysis as registered."""
    primary = test_name(plan["primary"]) if plan and plan.get("primary") and analysis == PREREGISTERED else None
    for test in tests:
        test["role"] = "primary" if test["name"] == primary else "exploratory"


def _section_of(primary: str | None) -> str:
    return "at_will" if primary in PRIMARY["at-will"] else "controlled"


def _primary_test(primary: str | None, kind: str | None) -> str:
    for k in ([kind] if kind else []) + list(PRIMARY):
        described = primary_comparisons(k, [primary]).get(primary)
        if described:
            return described
    return str(primary)


def _statement(analysis: str, studies: dict) -> str:
    """One sentence on how this analysis stands to the pre-registration (the printout and the HTML)."""
    hashes = ", ".join(f"{s} sha256 {v['sha256']}" for s, v in studies.items())
    if analysis == UNEXCLUDED:
        return (f"Pre-registered ({hashes}); --no-exclusions: this is the unexcluded analysis only, without the "
                "pre-registered exclusions; every analysis is exploratory.")
    if analysis == DEVIATION:
        return (f"Pre-registered ({hashes}); DEVIATION: "
                + "; ".join(f"{s}: {v['deviation']}" for s, v in studies.items() if v["deviation"])
                + ". The registered primary comparison is shown on these exclusions, so it is exploratory too, "
                  "like every other analysis.")
    return (f"Pre-registered ({hashes}): the registered exclusions are applied and the registered primary "
            "comparison is the confirmatory test; every other analysis is exploratory.")


def describe(result: dict) -> str:
    """A primary comparison in one line of plain text (the printout and the HTML): a Table 1 row, the
    at-will explanations-used comparison, or the effect net of practice."""
    if not isinstance(result, dict) or result.get("missing"):
        return f"not computed: {(result or {}).get('missing', 'no result')}"

    def rate(cell) -> str:
        if not isinstance(cell, dict) or cell.get("win_rate") is None:
            return "-"
        return f"{cell['win_rate']:.1%} (n={cell.get('n_games', 0)})"

    def p(value) -> str:
        return "p -" if value is None else "p < 0.0001" if value < 1e-4 else f"p = {value:.4f}"

    effect = result.get("effect") if isinstance(result.get("effect"), dict) else None
    if "with_expl" in result and effect is not None:     # a Table 1 row of explanation arms: its effect test
        gain = effect.get("win_rate")
        return (f"win rate with explanations {rate(result['with_expl'])}, without {rate(result.get('no_expl'))}; "
                f"effect of showing them (participant and block fixed effects) "
                f"{'-' if gain is None else f'{100 * gain:+.1f}'} points, {p(effect.get('p_value'))}, "
                f"{effect.get('n_participants', 0)} participants"
                + (f" ({effect['note']})" if effect.get("note") and effect.get("p_value") is None else ""))
    if "offer" in result:                           # at-will: the randomized offer
        gain = result.get("win_rate")
        what = "intention to treat (offered - not offered)" if result["offer"] == "offer" else \
            "effect of use, the offer as instrument"
        return f"{what}: {'-' if gain is None else f'{100 * gain:+.1f}'} points, {p(result.get('p_value'))}"
    if "with_expl" in result:                       # a Table 1 row
        gain = (result.get("improvement") or {}).get("win_rate")
        return (f"win rate with explanations {rate(result['with_expl'])}, without {rate(result.get('no_expl'))}; "
                f"with - without {'-' if gain is None else f'{100 * gain:+.1f}'} points, "
                f"{p(result.get('p_value_clustered'))} (clustered), {result.get('n_participants', 0)} participants")
    if "with" in result:                            # at-will: explanations used
        return (f"win rate using explanations {rate(result['with'])}, never using them "
                f"{rate(result.get('without'))}; {p(result.get('p_value_clustered'))} (clustered), "
                f"{result.get('n_participants', 0)} participants")
    if "dof" in result:                             # the total effect: explanation arms vs the others
        gain = result.get("win_rate")
        return (f"total effect of an arm with explanations {'-' if gain is None else f'{100 * gain:+.1f}'} points "
                f"over all blocks, {p(result.get('p_value'))}, {result.get('n_participants', 0)} participants")
    ratio = result.get("odds_ratio")                # the effect net of practice
    return (f"odds ratio {'-' if ratio is None else f'{ratio:.2f}'}, {p(result.get('p_value'))} "
            f"({result.get('n_clusters', 0)} participants)")
