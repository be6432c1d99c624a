"""The whole analysis of a study's logs, as one JSON-ready dict (report.json).

    report = analyze(load_tables("export/"), bench_dir="bench/", exclude_flags={"fast_games"})

SHAPE (the contract the figures, tables and HTML render from; "?" marks keys that may be absent)

Conventions. A rate is {"n_games": int, "win_rate": float|None, "ci": [lo, hi]|None} (Wilson 95%; in
Figs. 7-10 "ci" is the participant bootstrap's, point_ci below);
where the unit is not a game the count is "n" (ratings, items) and a share of games is "share" instead
of "win_rate". Rates are fractions in [0, 1]. Every CI is 95%, [lo, hi]. Anything not computable is
None, with a "note" (str) next to it saying why; a whole section that cannot be computed is
{"missing": str}. Lists of points per rating or bin are lists of dicts with a "rating" or "bin" key.
A clustered test is a logistic regression with participants as clusters (GEE, exchangeable working
correlation, for comparisons of groups; cluster-robust errors for trends; "method" says which):
    gee = {"odds_ratio", "odds_ratio_ci", "p_value", "method": str, "n_clusters": int, "n": int, "note"?}
A correlation is
    corr = {"n", "pearson", "pearson_ci", "pearson_p", "spearman", "spearman_ci", "spearman_p", "note"?}

report = {
  "schema": 1, "source": str, "studies_analysed": [study_id], "kinds": {study_id: "controlled"|"at-will"|None},
  "n": {"games", "participants", "rounds", "ratings", "items", "rater_ratings": int,
        "arms": {arm: {"games", "participants", "rounds": int}},
        "studies": {study_id: {"kind", "games", "participants", "rounds", "ratings", "items", "rater_ratings",
                               "arms": {...}}}},
  "controlled": {                                  # pooled over the analysed controlled studies
    "table1": [row], "studies": [id], "arms": [arm showing explanations], "control_arms": [arm],
    "sham_arms": [arm],                            # arms of "arms" that show a sham: own rows, in no overall row
    "blocks": [int],
    "by_block": [{"arm", "order": "abab"|"baba", "block": int, "with_expl": bool, "n_games", "win_rate", "ci",
                  "score"}],
    "control_group": {"arms", "even_blocks": cell, "odd_blocks": cell, "difference", "difference_ci",
                      "odds_ratio", "odds_ratio_ci", "p_value", "p_value_clustered", "test", "test_clustered"}
                     | {"missing"},
                     # p_value_clustered: the paired sign-flip test of the control participants' own even - odd
    "net_of_practice": {"model": str, **gee, "test": str, "difference", "difference_ci", "claim": "effect"}
                       | {"missing"},              # p_value: stats.studentized_relabel_test
                     # of participants' own even - odd difference, explanation arms vs not (the odds ratio: GEE)
                     # "even"/"odd" here and in control_group: the blocks that show (would show) explanations
                     # in the participant's order vs the others; for abab participants even and odd blocks
    "order": {                                     # the arms with real explanations (controlled.by_order)
      "participants_by_order": {"abab": int, "baba": int}, "model": str, "definition": str,
      "confounded": bool,                          # one order only: order and explanations cannot be separated
      "statement"?: str,                           # when confounded, what it means (no estimates then)
      "cells"?: {"abab"|"baba": {"with_expl": cell, "no_expl": cell}},
      "win_rate_difference"?: {"abab", "baba", "mean_of_orders": float|None},   # with - without per order
      "with_vs_without"?: gee, "order_effect"?: gee, "interaction"?: gee,   # won ~ shows + starts_with_explanations
      "first_period"?: {"win_rate", "win_rate_ci", "p_value", "test", "claim": "effect", "definition",
                        "n_participants": {"baba", "abab"}}}   # the carryover check: block 1, baba - abab
      | {"missing"},                               # (+ their product for the interaction), GEE odds ratios,
                                                   # wild cluster bootstrap p-values
    "notes"?: [str]}                               # or {"table1": [], "missing": str}
    row = {"mode": arm | "overall" | "overall_inc_none", "arms": [arm],
           "with_expl": cell, "no_expl": cell, "group_baseline": cell,
           "improvement_paper": {"score", "win_rate", "definition": str, "note"?},   # the paper's "Overall
                                 # Improv": with expl minus the overall_inc_none row's group baseline (all rows)
           "improvement": {"score", "win_rate", "score_ci", "win_rate_ci", "odds_ratio", "odds_ratio_ci",
                           "definition": str},                       # with minus no expl, this row's games
           "improvement_within_participants": {"n_participants", "win_rate", "win_rate_ci", "score", "score_ci",
                                               "p_value", "test", "definition": str},  # mean of each
                                               # participant's own difference; p_value: the paired test
                                               # over participants that "test" names
           "improvement_over_baseline": {"score", "win_rate", "definition": str},  # with expl minus own block 1
           "effect"?: {"win_rate", "win_rate_ci", "score", "score_ci", "p_value", "test", "claim": "effect",
                       "definition", "n_participants", "by_order": {"abab", "baba"}, "note"?},
                       # rows of explanation arms (not overall_inc_none): controlled.crossover, the registrable
                       # effect test (participant and block fixed effects, wild bootstrap); p_value None with a
                       # note "not offered" when every participant of the row played one order
           "p_value", "test", "p_value_clustered", "test_clustered", "p_value_score_clustered",
           "test_score_clustered", "n_participants", "note"?}  # overall_inc_none with arms both with and without
           # explanations: p_value(_score)_clustered from stats.relabel_test (controlled.between_arms), the rest
           # from the wild cluster bootstrap; test_clustered names which
    cell = {"n_games", "win_rate", "ci", "score", "score_ci", "n_participants"}
  "at_will": {                                     # pooled over the analysed at-will studies
    "studies": [id],
    "explanations_used": {"with": rate+{"score"}, "without": rate+{"score"}, "overall": rate+{"score"},
                          "difference", "difference_ci", "odds_ratio", "odds_ratio_ci", "p_value", "test",
                          "p_value_clustered", "test_clustered", "n_participants", "claim": "association",
                          "statement": str, "note"?},
    "within_participants": {"odds_ratio", "odds_ratio_ci", "p_value", "method", "adjusted_for": [str],
                            "n_participants"?, "claim": "association", "statement": str,
                            "buying": {"participants", "never_bought", "always_bought", "both"},
                            "paired": {"mean", "ci", "p_value", "test", "n"}, "note"?},   # conditional logit
    "offer"?: {"n_participants", "offered": rate+{"score"}, "not_offered": rate+{"score"},   # offer "randomized"
               "uptake": {"share_used_offered", "share_used_not_offered", "difference", "difference_ci"},
               "itt": {"win_rate", "win_rate_ci", "p_value", "test", "claim": "effect"},
               "iv": {"win_rate", "win_rate_ci", "p_value", "test", "claim": "effect", "note"?}} | {"missing"},
    "adoption": {"first_half": share, "second_half": share, "difference", "difference_ci", "odds_ratio",
                 "odds_ratio_ci", "p_value", "test", "p_value_clustered", "test_clustered", "n_participants",
                 "by_play": [{"play": int, "n_games", "share", "ci", "win_rate"}],
                 "trend": {"odds_ratio_per_play", "odds_ratio_ci", "p_value", "method"}, "ordering": str}}
    | {"missing": str}                             # share = {"n_games", "share", "ci"}
  # Figs. 6-10 (by_helpfulness, difficulty_by_rating, rating_histograms, by_correctness, answer_correctness)
  # are per study kind (kinds.py): over studies of one kind each is the shape below; where controlled and
  # at-will studies are both analysed, each is {"by_kind": {"controlled"|"at-will"|"unknown": shape}, "note": str}
  # and never pools the two kinds' games.
  # Their points: "ci" is the participant-bootstrap 95% interval (bootstrap.py: participants resampled, 2,000
  # replicates, fixed seed, percentile), widened where needed to contain the interval of rows as independent
  # (Wilson for rates, t for means), which keep their own keys; before issue 27 "ci" was the Wilson one.
    point_ci = {"ci", "ci_wilson" (rates) | "ci_t" (means), "ci_bootstrap": [lo, hi] | None, "n_participants"}
    vs_baseline = {"baseline_win_rate",
                   "p_value_vs_baseline",             # the paper's z-test, rows as independent, uncorrected:
                                                      # kept for comparison, not for inference
                   "p_value_vs_baseline_clustered",   # logit_clustered of the win on point vs baseline
                   "p_value_vs_baseline_holm",        # that one Holm-corrected over the panel's points: the one shown
                   "odds_ratio_vs_baseline", "note_vs_baseline"?}
  "by_helpfulness": {                              # Fig. 7; modes: "overall" and each controlled arm that
                                                   # shows explanations (at-will players choose: no modes)
    "points": {mode: [{"rating": label, "score": 5..1, "n", "win_rate", **point_ci, "n_games",
                       **vs_baseline}]},           # 5 points, best rating first; Holm over a mode's 5 points
    "baseline": {mode: rate + point_ci}, "trend": {mode: gee (per rating step up)}, "unit": str,
    "trend_per_game": {mode: gee + {"n_games"}},   # the same with one row per game (its mean rating)
    "baseline_definition": str, "interval": str, "test_vs_baseline": str, "test_vs_baseline_naive": str,
    "trend_test": str} | {"missing"},
  "difficulty_by_rating": {                        # Fig. 8
    "points": {mode: [{"rating", "score", "n", "mean_difficulty", **point_ci}]},
    "correlation": {mode: corr},                   # ratings as independent
    "trend": {mode: {"slope_per_step", "ci_bootstrap", "n_participants", "note"?}},  # difficulty per rating step
    "won_vs_lost": won_lost | {"missing"},         # the paper's difficulty analysis (difficulty.py)
    "difficulty": str, "interval": str, "correlation_test": str, "trend_test": str}
    | {"missing", "won_vs_lost"},                  # no rated rounds: only the won vs lost analysis
    won_lost = {"cells": {"with_explanations"|"without_explanations": {"won"|"lost": {"n_games", "mean_difficulty",
                                                                                    **point_ci}}},
                "differences": {"won_minus_lost_with_explanations"|"won_minus_lost_without_explanations"|
                                "with_minus_without_won"|"with_minus_without_lost":
                                {"difference", "ci", "p_value", "method", "n_clusters", "note"?}},   # OLS, clustered
                "interaction": gee (won ~ difficulty per SD + explanations + difficulty_x_explanations; its term),
                "difficulty", "interval", "test_differences", "test_interaction": str}
  "rating_histograms": {                           # Fig. 6; hist = [{"rating": label, "rank", "count", "share"}]
    "helpfulness": {mode: hist}, "helpfulness_without_explanations": {"overall"|arm: hist},
    "explanation_correctness": {"automatic": {"overall"|explainer: hist}, "raters": {...} | {"missing"}},
    "answer_correctness": {"automatic": hist, "raters": hist | {"missing"}}, "unit": str},
  "by_correctness": {                              # Fig. 9, raters and automatic side by side
    "raters": source | {"missing"}, "automatic": source | {"missing"},
    "agreement": kappa | {"missing"}, "unit": str, "interval": str, "trend_test": str, "test_vs_baseline": str,
    "test_vs_baseline_naive": str},
    source = {"points": {"overall": [{"rating": label, "rank": 0..4, "n", "win_rate", **point_ci, "n_games",
                                      **vs_baseline}],                       # sham arms left out of "overall"
                         explainer: [{"rating", "rank", "n", "win_rate", **point_ci, "n_games"}]},
              "n_items": int, "trend": gee (per step toward on-point, overall),
              "trend_per_game": gee + {"n_games"},  # one row per game (its explanations' mean grade)
              "baseline": rate + point_ci,         # the paper's adjusted baseline: games without explanations
              "baseline_definition": str}          # that have correctness ratings from this source
    kappa = {"weighted_kappa", "ci", "p_value", "weights": "linear", "n_items", "exact_agreement", "note"?}
  "answer_correctness": {                          # Fig. 10
    "bins": [{"bin": "0.00-0.25", "lo", "hi"}],
    "automatic": fig10 | {"missing"}, "raters": fig10 | {"missing"},   # whose grades pick "on point"
    "answer_measure": str, "groups": {group: str}, "low_correctness": str, "interval": str,
    "post_hoc": str} | {"missing"},
    fig10 = {"points": {"explained_on_point": [{"bin", "lo", "hi", "n_games", "win_rate", **point_ci}],
                        "without_explanations": [...]},
             "n_games": {group: int}, "p_value", "odds_ratio", "odds_ratio_ci", "test",
             "p_value_clustered", "odds_ratio_clustered", "odds_ratio_clustered_ci", "test_clustered",
             "low_correctness": {                  # the paper's claim: games whose answers were mostly wrong
                 "threshold": 0.5, "definition": str,
                 "explained_on_point": rate + point_ci, "without_explanations": rate + point_ci,
                 "difference", "difference_ci", "odds_ratio", "odds_ratio_ci", "p_value", "p_value_clustered",
                 "test", "test_clustered", "n_participants", "note"?,     # stats.compare_rates
                 "interaction": gee + {"model", "term"},  # won ~ group + low + group x low, clustered
                 "exploratory": true, "post_hoc": str},
             "exploratory": true, "post_hoc": str}  # the "at least one good explanation" grouping is post hoc
  "ungraded_rounds": {"overall": ungraded, "studies": {study_id: {"overall": ungraded, "arms": {arm: ungraded}}},
                      "definition": str} | {"missing"},   # correctness.py: the rounds no automatic grade covers
    ungraded = {"rounds", "graded", "ungraded", "not_parsed", "ill_posed", "no_ground_truth": int,
                "share_ungraded", "share_not_parsed": float | None}   # shares of "rounds"
  "correlations": {"automatic": {"overall"|explainer: corr} | {"missing"},
                   "raters": {...} | {"missing"}, "paper": {"relqa": 0.37, "attention": 0.33}, "measure": str},
  "agreement": {"raters": {"explanation": alpha, "answer": alpha, "n_raters"} | {"missing"},
                "automatic_vs_raters": {"explanation": kappa, "answer": kappa, "by_explainer": {x: kappa}}
                                       | {"missing"}},
    alpha = {"krippendorff_alpha", "fleiss_kappa", "n_items", "n_ratings", "n_items_fleiss",
             "ratings_per_item_fleiss", "note"?}
  "benchmarks": {"missing"?: str, "dir"?, "files"?: [{"file", "kind"}], "skipped"?: [{"file", "reason"}],
                 "agents"?: {agent: {"vqa"?: {"accuracy", "n", "file"}, "latency_ms"?: {case: latency},
                                     "rounds_ms"?: {setting: latency}, "latency_device"?}},
                 "explainers"?: {explainer: {agent: {"latency_ms"?: latency, "nle"?: {"s_t", "s_e", "s_o",
                                 "bleu4", ...}, "nle_random_baseline"?, "nle_scale"?}}},
                 "study": {"agent": {"answer_accuracy": {"n", "share", "ci"}, "ask_to_answer_ms": {...}|None},
                           "explainers": {explainer: study_x}},
                 "by_explainer": {explainer: {"study": study_x | None, "bench": {agent: {...}} | None}}},
    latency = {"p50_ms", "p95_ms", "mean_ms"}
    study_x = {"n_items", "on_point_automatic": {"n", "share", "ci"}, "on_point_raters": {...}, "win_rate": rate,
               "effect"?: {"win_rate", "win_rate_ci", "score", "p_value_clustered", "n_games"}}  (Table 1, its arm alone)
    bench explainer entry (a card): {"card": {headline: value}, "card_file"}; agent: {"card": {"accuracy", ...}}
  "paper": the paper's published numbers in the same shapes (paper.py),
  "design": {"balance": {study_id: {"n_participants", "quarters": [int], "counts": {arm: [int per quarter]},
                                    "by_order"?: {arm: {order: int}}, "chi2", "dof", "p_value", "test": str,
                                    "note"?}} | {"missing"}},   # design.py: arms by arrival quarter, chi-square
  "quality": {"flagged_participants": {flag: int},
              "removed_by_flag": {flag: {"participants", "games": int}}},   # what each applied rule removed (a
                                                   # participant with two of them counts under both)
  "exclusions": {"flags": [flag], "participants": int, "games": int},   # by default a pre-registered study's
                                                   # registered flags, none where not pre-registered
  "preregistration": {                             # preregistered.py; {"registered": false, "analysis":
                                                   # "not preregistered", "labels": {}, "studies": {}} without one
    "registered": true,
    "analysis": "preregistered" | "deviation" | "unexcluded",   # the registered exclusions, other ones
                                                   # (--exclude), or none (--no-exclusions)
    "statement": str,                              # one sentence: the hashes, and how this analysis stands to them
    "labels": {section: "primary" | "exploratory"},   # every section but the one holding the primary test
                                                   # (analysis "preregistered" only; else all exploratory)
    "studies": {study_id: {"sha256", "hypotheses": [str], "primary": str, "primary_test": str,
                           "primary_outcome": str, "planned_n": int, "stopping_rule": str,
                           "exclusions": [flag],   # registered
                           "applied": [flag],      # applied in this analysis
                           "deviation": str | None, "participants": int,   # analysed (after exclusions)
                           "finished": int,        # real participants who finished: what planned_n counts
                           "registered": {"exag_version"?, "agent_fingerprint"?},   # what exag preregister
                                                   # registered ({} for the first format)
                           "looks": [{"time", "where", "finished", "planned_n"}],   # every export of the
                                                   # study's data (game/export.py outcome_looks)
                           "deviations": [str],    # N finished != planned_n; another exag version analyses;
                                                   # an export before the planned N had finished
                           "result": table1 row | net_of_practice | explanations_used | {"missing"}}},
    "refused": {study_id: str}},                   # plans in the export that do not verify, and why: those
                                                   # studies are analysed as not pre-registered
  "sensitivity"?: {                                # when exclusions were applied to pre-registered data
    "exclusions": [], "description": str,
    "studies": {study_id: {"participants", "games": int, "result": (as above, no exclusion)} | {"missing"}}},
  "flow": {"definition": str, "studies": {study_id: study_flow}, "pooled"?: study_flow, "notes": [str]},
                                                   # flow.py (its docstring has study_flow, row, bounds):
                                                   # everyone who joined, once, by arm x order; the attrition
                                                   # test; worst-case bounds for unplayed games; flags and
                                                   # the analysed sample by arm
  "tests": [{"name", "p_value", "estimate", "estimate_of", "claim": "effect"|"association", "unit",
             "estimand": str, "assumptions": [str],   # whose effect, weighted how, and what it assumes beyond
                                                   # the randomization (claims.py ESTIMANDS); an association says so
             "calibrated_under": [scenario], "test", "path", "role": "primary"|"exploratory",
             "correction": str, "p_adjusted": float | None}],   # multiplicity.py correct_family: the primary
                                                   # confirmatory, the arm rows gatekept and Holm-adjusted, the rest
                                                   # "not corrected"
                                                   # claims.py: every p-value of the pooled sections with what it
                                                   # claims; the registered primary's own test is the one "primary"
  "methods": str,                                  # a paragraph: definitions, tests, exclusions
  "notes": [str],                                  # everything missing or left out, by file and column
  "studies": {study_id: {"kind", "n", "controlled", "at_will", "by_helpfulness", "difficulty_by_rating",
                         "rating_histograms", "by_correctness", "answer_correctness", "correlations",
                         "agreement", "benchmarks", "notes": [str], "tests": [test]}},   # tests: as above
}
Top-level sections other than `controlled` and `at_will` pool every analysed study; those of Figs. 6-10 pool
only studies of one kind (above: "by_kind" when both kinds are analysed), the others (correlations,
agreement, benchmarks) pool both kinds (a note says so).
"""
from __future__ import annotations

import copy
import logging
import math
from pathlib import Path
from typing import Callable

import numpy as np
from tqdm import tqdm

from .agreement import agreement
from .at_will import at_will
from .benchmarks import benchmarks, read_bench
from .controlled import controlled
from .design import design
from .correctness import answer_correctness, by_correctness, correlations, not_parsed_note, ungraded_rounds
from .data import AnalysisError, Tables
from .claims import listed_tests
from .multiplicity import ALPHA, FAMILY_WISE, correct_family
from .flow import flow
from .frames import AT_WILL, CONTROLLED, Frames, build_frames
from .paper import PAPER
from .preregistered import exclusion_rules, held_to, tag_primary, verified
from .ratings import by_helpfulness, difficulty_by_rating, rating_histograms
from .stats import MIN_CLUSTERS

SCHEMA = 1
log = logging.getLogger(__name__)
SECTIONS: dict[str, Callable[[Frames], dict]] = {
    "by_helpfulness": by_helpfulness, "difficulty_by_rating": difficulty_by_rating,
    "rating_histograms": rating_histograms, "by_correctness": by_correctness,
    "answer_correctness": answer_correctness, "correlations": correlations, "agreement": agreement}


def counts(frames: Frames) -> dict:
    games, rounds = frames.games, frames.rounds

    def of(g, r) -> dict:
        return {"games": int(len(g)), "participants": int(g["cluster"].nunique()), "rounds": int(len(r))}
    arms = {arm: of(g, rounds[rounds["arm"] == arm]) for arm, g in games.groupby("arm")}
    return {**of(games, rounds), "ratings": int(len(frames.ratings)), "items": int(len(frames.items)),
            "rater_ratings": int(len(frames.rater)), "arms": arms}


def _guarded(name: str, compute: Callable[[], dict], notes: list[str]) -> dict:
    """A section; a failure in it costs only that section (noted), never the report."""
    try:
        return compute()
    except Exception as error:                      # noqa: BLE001: the report must build whatever the data
        log.debug("section %s failed", name, exc_info=True)
        notes.append(f"{name} could not be computed: {type(error).__name__}: {error}")
        return {"missing": f"could not be computed: {type(error).__name__}: {error}"}


def sections(frames: Frames, bench: dict | None, notes: list[str]) -> dict:
    """Every section of the report over these frames (one study, or several pooled)."""
    out = {"controlled": _guarded("controlled", lambda: controlled(frames), notes),
           "at_will": _guarded("at_will", lambda: at_will(frames), notes)}
    for name, compute in SECTIONS.items():
        out[name] = _guarded(name, lambda compute=compute: compute(frames), notes)
    out["benchmarks"] = _guarded("benchmarks", lambda: benchmarks(frames, bench, out["controlled"]), notes)
    return out


def analyze(tables: Tables, bench_dir: str | Path | None = None, progress: bool = False,
            exclude_flags: set[str] | frozenset[str] | None = None, no_exclusions: bool = False,
            registrations_published: list[bytes] | None = None) -> dict:
    """The report dict (module doc) of these tables. `exclude_flags` drops the participants with any of
    those quality flags (no_questions, fast_games, straight_lined) in every study; None: each pre-registered
    study's registered exclusions, none elsewhere (preregistered.py); `no_exclusions`: none at all;
    `registrations_published`: the registration documents (FILE.json bytes) a registered plan must be one of."""
    if no_exclusions and exclude_flags:
        raise AnalysisError("exclude flags or no participants (--no-exclusions), not both")
    plans, refused = verified(tables.studies, registrations_published, tables.server_key)
    rules, analysis = exclusion_rules(plans, exclude_flags, no_exclusions)
    frames, exclusions = build_frames(tables, rules)
    notes = list(tables.notes) + frames.notes
    bench = read_bench(bench_dir) if bench_dir is not None else None
    study_ids = sorted(frames.games["study"].unique().tolist())
    if not study_ids:
        notes.append(f"{tables.source}: no finished games" + (" after exclusions" if exclusions["games"] else ""))
    per_study = {}
    for study in tqdm(study_ids, desc="analysing studies", unit="study", disable=not progress):
        mine = frames.study(study)
        study_notes: list[str] = []
        per_study[study] = {"kind": frames.kinds.get(study), "n": counts(mine),
                            **sections(mine, bench, study_notes), "notes": study_notes}
        per_study[study]["tests"] = listed_tests(per_study[study])
        notes += [f"study {study}: {n}" for n in study_notes]
    pooled = _pooled(frames, per_study, bench, notes)
    pooled["tests"] = listed_tests(pooled)
    kinds = {s: frames.kinds.get(s) for s in study_ids}
    if len({k for k in kinds.values() if k}) > 1:
        notes.append("controlled and at-will studies are both analysed: sections other than `controlled` and "
                     "`at_will` pool them (pass --study to look at one)")
    n = {**counts(frames), "studies": {s: {"kind": kinds[s], **per_study[s]["n"]} for s in study_ids}}
    ungraded = _guarded("ungraded_rounds", lambda: ungraded_rounds(frames), notes)
    notes += [note for note in [not_parsed_note(ungraded)] if note]
    report = {"schema": SCHEMA, "source": tables.source, "studies_analysed": study_ids, "kinds": kinds, "n": n,
              "ungraded_rounds": ungraded,
              **pooled, "paper": PAPER, "design": _guarded("design", lambda: design(tables.participants), notes),
              "flow": _guarded("flow", lambda: flow(tables, frames, exclusions, rules), notes),
              "quality": {"flagged_participants": exclusions["flagged_participants"]},
              "exclusions": {k: exclusions[k] for k in ("flags", "participants", "games")},
              "methods": methods(frames, exclusions), "notes": list(dict.fromkeys(notes)), "studies": per_study}
    report["quality"]["removed_by_flag"] = exclusions["removed"]
    # the flow's differential-attrition tests are tests too (printed in the flow table, listed here)
    attrition = {s: {k: f[k] for k in ("attrition_test", "attrition_explanations") if isinstance(f.get(k), dict)}
                 for s, f in (report["flow"].get("studies") or {}).items() if isinstance(f, dict)}
    report["tests"] = report.get("tests", []) + listed_tests({"flow": {"studies": attrition}})
    report.update(held_to(tables, plans, analysis, exclusions, per_study, _guarded, report["notes"], refused))
    for study in study_ids:
        tag_primary(per_study[study]["tests"], plans.get(study), analysis)
    tag_primary(report["tests"], plans[study_ids[0]] if len(study_ids) == 1 and study_ids[0] in plans else None,
                analysis)
    for listed in [report["tests"]] + [per_study[study]["tests"] for study in study_ids]:
        correct_family(listed)
    if any(t.get("correction", "").startswith("confirmatory") for t in report["tests"]):
        report["methods"] += " " + FAMILY_WISE.format(alpha=ALPHA)
    if plans:
        report["methods"] += " " + report["preregistration"]["statement"]
    report["warnings"] = small_n_warnings(per_study)
    return json_safe(report)


SMALL_N = 12     # the fewest participants at which the effect tests were calibrated on realistic nulls (docs/results.md)
SMALL_N_WARNING = ("study {study}: {n} participant(s) analysed. The effect tests are calibrated from {small} "
                   "participants on; with fewer a p-value says little (with 5 or fewer none can reach 0.05) and the "
                   "intervals are wide: read this report as a pilot, not a finding")


def small_n_warnings(per_study: dict) -> list[str]:
    """One sentence per study analysed with fewer than SMALL_N participants (the report's top and the printout)."""
    return [SMALL_N_WARNING.format(study=study, n=mine["n"].get("participants", 0), small=SMALL_N)
            for study, mine in per_study.items() if 0 < mine["n"].get("participants", 0) < SMALL_N]


def _pooled(frames: Frames, per_study: dict, bench: dict | None, notes: list[str]) -> dict:
    """The top-level sections; a study's own results are reused where the pool is that one study."""
    if len(per_study) == 1:
        only = next(iter(per_study.values()))
        return copy.deepcopy({k: v for k, v in only.items() if k not in ("kind", "n", "notes")})
    pooled = {}
    for kind, key, compute in ((CONTROLLED, "controlled", controlled), (AT_WILL, "at_will", at_will)):
        of_kind = [s for s, k in frames.kinds.items() if k == kind and s in per_study]
        pooled[key] = copy.deepcopy(per_study[of_kind[0]][key]) if len(of_kind) == 1 else \
            _guarded(key, lambda compute=compute: compute(frames), notes)
    for name, compute in SECTIONS.items():
        pooled[name] = _guarded(name, lambda compute=compute: compute(frames), notes)
    pooled["benchmarks"] = _guarded("benchmarks", lambda: benchmarks(frames, bench, pooled["controlled"]), notes)
    return pooled


def methods(frames: Frames, exclusions: dict) -> str:
    blocks = sorted(int(b) for b in frames.games.loc[frames.games["kind"] == CONTROLLED, "block"].dropna().unique())
    parts = [
        "Games count when finished; a win is a right guess with points left (docs/research.md §1).",
        (f"Controlled studies: block b is session b-1 (blocks {blocks[0]}-{blocks[-1]} here); participants of order "
         "abab play odd blocks without explanations and even blocks with them, those of order baba the other way "
         "round (a counterbalanced study randomizes half of each arm to each); 'with expl' pools the games that "
         "showed explanations, 'no expl' the arm's games in the other blocks, and the group baseline is block 1 "
         "of the participants who start without explanations. The arms without explanations (WithoutExpl) enter only "
         "'overall_inc_none'. Sham arms (each image shows a real explainer's output for another image of its "
         "round, a sanity check) have their own rows and enter neither overall row nor the effect net of practice."
         if blocks else "No controlled games with known blocks."),
        "At-will studies: a game used explanations when any of its rounds had them; adoption halves split all games "
        "ordered by play index (ties by start time) at half their number. The players chose when to buy "
        "explanations, so games that used them and games that did not are compared as an association, not an "
        "effect, also within participants (conditional logit adjusted for play and set difficulty); where the study "
        "randomized the offer of explanations per game, the intention-to-treat difference (offered minus not "
        "offered, within participants: participant fixed effects, its p-value by re-drawing the offers within each "
        "participant) and the effect of use with the offer as instrument (Wald "
        "estimator) are effects.",
        "What each test claims: only contrasts the design randomized, tested at the participant, are effects: Table "
        "1's effect of showing explanations (OLS of the win with participant and block fixed effects, wild cluster "
        "bootstrap over participants; offered only when both orders were played), the effect net of practice and "
        "the block-1 carryover check (studentized randomization tests over participants), and the randomized "
        "offer's. Every other p-value is an association (report.json's `tests` lists each with its claim), and "
        "Figures 7-9, which group rounds by the player's own rating or by graded explanations, show associations.",
        "Table 1's win rates carry Wilson 95% intervals and scores t intervals. Table 1 gives three improvements: "
        "the paper's (with explanations minus the overall-inc-none group baseline, as the paper computed its "
        "column), ours (with minus without explanations) and the mean of each participant's own difference. The "
        "paper's tests are two-proportion z-tests with games as independent (statsmodels proportions_ztest), printed "
        "for comparison with the paper: they do not keep their level when participants differ. Because games are "
        "nested in participants, each comparison has a participant-clustered test that keeps its level with few "
        "participants: the wild cluster bootstrap of the comparison as a linear model (restricted, Rademacher "
        "weights, exact over all sign patterns up to 12 participants; CR1 errors), which gives the p-value and the "
        "difference's 95% interval, while GEE logistic regression (exchangeable working correlation) gives the odds "
        "ratio and its interval; the paired test over participants is a sign-flip test. With fewer than "
        f"{MIN_CLUSTERS} participants in a comparison no clustered or paired p-value is made, and with fewer than 6 "
        "none can reach 0.05 (the smallest possible is 1/2^(n-1)). "
        "Figures 7-10 take the participant as the unit: intervals from a participant bootstrap (2,000 replicates), "
        "one clustered trend test per panel, and per-point tests against the baseline Holm-corrected; the study "
        "kinds are never pooled in one figure.",
        "Ratings: helpfulness figures count each rating of a round with explanations (the outcome is its game's); "
        "correctness figures count each explanation of the secret image, rated by independent raters (consensus: "
        "the median, ties to the worse side) and graded automatically against the ground truth. Rater agreement: "
        "Krippendorff's alpha (ordinal) and Fleiss' kappa; automatic vs raters: linearly weighted Cohen's kappa. "
        "Fig. 10's test is a logistic regression of the win on group and the game's mean answer correctness. "
        "Answers are graded where the question has one answer on the secret's scene; the rounds left ungraded (a "
        "question outside the parser's language, one ill-posed on the scene, an imported pool) are counted by study "
        "and arm (ungraded_rounds).",
    ]
    if exclusions["flags"]:
        parts.append(f"Excluded: participants flagged {', '.join(exclusions['flags'])} "
                     f"({exclusions['participants']} participants, {exclusions['games']} games).")
    else:
        flagged = {k: v for k, v in exclusions["flagged_participants"].items() if v}
        parts.append("No exclusions" + (f" (flagged but kept: {', '.join(f'{k} {v}' for k, v in flagged.items())})"
                                        if flagged else "") + ".")
    return " ".join(parts)


def json_safe(value):
    """Plain JSON data: numpy numbers as Python numbers, NaN and infinities as None, tuples as lists."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [json_safe(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if value is None or isinstance(value, str):
        return value
    return str(value)
