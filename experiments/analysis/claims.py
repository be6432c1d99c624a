"""Every test the report prints, listed with what it claims (report.json's `tests`, per study and pooled).

    tests = listed_tests(sections)      # the sections of report.py's `sections()` (or the pooled ones)

One object per p-value in the sections:
    {"name": "table1.overall", "p_value": float|None, "estimate": float|None, "estimate_of": str,
     "claim": "effect"|"association", "unit": str, "calibrated_under": [scenario], "test": str, "path": str}
- `name` is stable, for scripts: "table1.overall", "net_of_practice", "order.first_period",
  "at_will.explanations_used", "at_will.offer", "fig7.helping_a_lot_vs_baseline", ...; `path` is where the
  p-value sits in the report (section, row or point, key).
- `claim`: "effect" where the design randomized the contrast and the test keeps its level on nulls that behave
  like real crowds (practice, counterbalanced order, skill-linked dropout, uneven effects: docs/results.md, "Null
  calibration under real crowds"); "association" anything else: the paper's z-tests (games as independent),
  pooled game-level comparisons (practice and dropout leak into them), comparisons of games by what the
  player chose (at-will use of explanations) or rated (Figs. 7-9), trends over play.
- `calibrated_under`: the simulated null scenarios of `python -m experiments.benchmark.null_calibration` in
  which the test is offered (its design and order; empty: not calibrated by simulation; read it as an association).

A p-value no rule below names still gets an entry (its path as its name, claim "association"), so nothing
printed goes unlisted.
"""
from __future__ import annotations

import re

EFFECT, ASSOCIATION = "effect", "association"
# the null scenarios of experiments/benchmark/null_calibration.py (SCENARIOS there), by the study design they
# simulate; a test is calibrated under those of its design
CROSSOVER_SCENARIOS = ("counterbalanced", "counterbalanced_practice_0.30", "counterbalanced_practice_dropout",
                       "counterbalanced_practice_dropout_uneven", "carryover", "outcome_dropout_refills")
CONTROLLED_SCENARIOS = ("abab", "abab_practice_0.15", "abab_practice_0.30", "abab_dropout", "uneven_1to3",
                        *CROSSOVER_SCENARIOS)
AT_WILL_SCENARIOS = ("at_will", "at_will_unequal", "at_will_skill_buys", "at_will_difficulty_buys",
                     "at_will_offer_skill_buys", "at_will_offer_direct")
OFFER_SCENARIOS = ("at_will_offer_skill_buys", "at_will_offer_direct")
GAME_UNIT = "game (games as independent)"
CLUSTERED_UNIT = "game, participant-clustered (wild cluster bootstrap over participants)"
PARTICIPANT_UNIT = "participant"

# (pattern on the path, name, claim, unit, estimate key in the p-value's dict, calibrated under)
RULES: list[tuple[str, str, str, str, str | None, tuple[str, ...]]] = [
    (r"controlled\.table1\.([^.]+)\.effect\.p_value", r"table1.\1", EFFECT,
     "participant x block (win rate per block, random intercept, block and carryover terms; each slot's first "
     "holder; CR2 errors over units of randomization, Bell-McCaffrey degrees of freedom)", "win_rate",
     CROSSOVER_SCENARIOS),
    (r"controlled\.total_effect\.p_value", "total_effect", EFFECT,
     "participant (mean over blocks of the block's win rate less everyone's there; each slot's first holder; "
     "Welch standard error, t with the smaller group's units less one degrees of freedom)", "win_rate",
     CONTROLLED_SCENARIOS),
    (r"controlled\.order\.carryover_check\.p_value", "order.carryover_check", ASSOCIATION,
     "unit of randomization (jackknife of crossover minus first-period estimate)", "difference", CROSSOVER_SCENARIOS),
    (r"controlled\.table1\.([^.]+)\.p_value", r"table1.\1.z_test", ASSOCIATION, GAME_UNIT, None,
     CONTROLLED_SCENARIOS),
    (r"controlled\.table1\.(overall_inc_none)\.p_value_clustered", r"table1.\1.relabel", ASSOCIATION,
     "participant (explanation arms re-drawn; exact under no effect on any game only)", None, CONTROLLED_SCENARIOS),
    (r"controlled\.table1\.(overall_inc_none)\.p_value_score_clustered", r"table1.\1.relabel_score", ASSOCIATION,
     "participant (explanation arms re-drawn; exact under no effect on any game only)", None, CONTROLLED_SCENARIOS),
    (r"controlled\.table1\.([^.]+)\.p_value_clustered", r"table1.\1.pooled", ASSOCIATION, CLUSTERED_UNIT, None,
     CONTROLLED_SCENARIOS),
    (r"controlled\.table1\.([^.]+)\.p_value_score_clustered", r"table1.\1.pooled_score", ASSOCIATION,
     CLUSTERED_UNIT, None, CONTROLLED_SCENARIOS),
    (r"controlled\.table1\.([^.]+)\.improvement_within_participants\.p_value", r"table1.\1.paired", ASSOCIATION,
     "participant (sign-flip of own with- minus no-explanation difference; practice is in it)", "win_rate",
     CONTROLLED_SCENARIOS),
    (r"flow\.studies\.([^.]+)\.attrition_test\.p_value", r"flow.\1.attrition", ASSOCIATION,
     "participant (finished or not, by arm: who left, not why; Fisher's exact or chi-square)", None, ()),
    (r"flow\.studies\.([^.]+)\.attrition_explanations\.p_value", r"flow.\1.attrition_explanations", ASSOCIATION,
     "participant (dropped or finished, explanation arms vs the others; Fisher's exact)", None, ()),
    (r"controlled\.control_group\.p_value", "control_group.z_test", ASSOCIATION, GAME_UNIT, "difference",
     CONTROLLED_SCENARIOS),
    (r"controlled\.control_group\.p_value_clustered", "control_group.paired", ASSOCIATION,
     "participant (the schedule alone: practice, not randomized)", "difference", CONTROLLED_SCENARIOS),
    (r"controlled\.net_of_practice\.p_value", "net_of_practice", EFFECT,
     "participant (own with-block minus other-block difference; arms re-drawn, studentized)", "difference",
     CONTROLLED_SCENARIOS),
    (r"controlled\.order\.first_period\.p_value", "order.first_period", EFFECT,
     "participant (block-1 win rate of each slot's first holder; orders re-drawn, studentized)", "win_rate",
     CROSSOVER_SCENARIOS),
    (r"controlled\.order\.(with_vs_without|order_effect|interaction)\.p_value", r"order.\1", ASSOCIATION,
     CLUSTERED_UNIT, "odds_ratio", CONTROLLED_SCENARIOS),
    (r"at_will\.explanations_used\.p_value_clustered", "at_will.explanations_used", ASSOCIATION, CLUSTERED_UNIT,
     "difference", AT_WILL_SCENARIOS),
    (r"at_will\.explanations_used\.p_value", "at_will.explanations_used.z_test", ASSOCIATION, GAME_UNIT,
     "difference", AT_WILL_SCENARIOS),
    (r"at_will\.within_participants\.p_value", "at_will.within_participants", ASSOCIATION,
     "game, within participant (conditional logit, adjusted for play and set difficulty)", "odds_ratio",
     AT_WILL_SCENARIOS),
    (r"at_will\.within_participants\.paired\.p_value", "at_will.within_participants.paired", ASSOCIATION,
     "participant (own used- minus unused-game win rate, who played both ways)", "mean", AT_WILL_SCENARIOS),
    (r"at_will\.offer\.itt\.p_value", "at_will.offer", EFFECT,
     "game within participant (participant fixed effects; offers re-drawn within each participant)",
     "win_rate",
     OFFER_SCENARIOS),
    (r"at_will\.offer\.exclusion_check\.p_value", "at_will.offer.exclusion_check", ASSOCIATION,
     "game within participant, participants who never bought when offered (offers re-drawn within each)",
     "difference", OFFER_SCENARIOS),
    (r"at_will\.offer\.iv\.p_value", "at_will.offer_iv", EFFECT,
     "game within participant (the offer as instrument for use: intention to treat over the uptake)", "win_rate",
     OFFER_SCENARIOS),
    (r"at_will\.adoption\.p_value", "at_will.adoption.z_test", ASSOCIATION, GAME_UNIT, "difference",
     AT_WILL_SCENARIOS),
    (r"at_will\.adoption\.p_value_clustered", "at_will.adoption", ASSOCIATION, CLUSTERED_UNIT, "difference",
     AT_WILL_SCENARIOS),
    (r"at_will\.adoption\.trend\.p_value", "at_will.adoption.trend", ASSOCIATION, CLUSTERED_UNIT,
     "odds_ratio_per_play", AT_WILL_SCENARIOS),
    (r"by_helpfulness\.points\.overall\.([^.]+)\.p_value_vs_baseline_holm", r"fig7.\1_vs_baseline", ASSOCIATION,
     "rating (participant-clustered, Holm over the panel)", "odds_ratio_vs_baseline", ()),
    (r"by_helpfulness\.points\.([^.]+)\.([^.]+)\.p_value_vs_baseline_holm", r"fig7.\1.\2_vs_baseline", ASSOCIATION,
     "rating (participant-clustered, Holm over the panel)", "odds_ratio_vs_baseline", ()),
    (r"by_helpfulness\.points\.overall\.([^.]+)\.(p_value_vs_baseline(?:_clustered)?)", r"fig7.\1_vs_baseline.\2",
     ASSOCIATION, "rating", "odds_ratio_vs_baseline", ()),
    (r"by_helpfulness\.trend\.overall\.p_value", "fig7.trend", ASSOCIATION, CLUSTERED_UNIT, "odds_ratio", ()),
    (r"by_helpfulness\.trend_per_game\.overall\.p_value", "fig7.trend_per_game", ASSOCIATION,
     "game (its mean rating; participant-clustered)", "odds_ratio", ()),
    (r"by_helpfulness\.trend_per_game\.([^.]+)\.p_value", r"fig7.\1.trend_per_game", ASSOCIATION,
     "game (its mean rating; participant-clustered)", "odds_ratio", ()),
    (r"by_helpfulness\.trend\.([^.]+)\.p_value", r"fig7.\1.trend", ASSOCIATION, CLUSTERED_UNIT, "odds_ratio", ()),
    (r"difficulty_by_rating\.(.+)", r"fig8.\1", ASSOCIATION, "rating or game", None, ()),
    (r"by_correctness\.(raters|automatic)\.points\.overall\.([^.]+)\.p_value_vs_baseline_holm",
     r"fig9.\1.\2_vs_baseline", ASSOCIATION, "explanation of the secret image (participant-clustered, Holm)",
     "odds_ratio_vs_baseline", ()),
    (r"by_correctness\.(.+)", r"fig9.\1", ASSOCIATION, "explanation of the secret image", None, ()),
    (r"answer_correctness\.(.+)", r"fig10.\1", ASSOCIATION, "game", None, ()),
]
# What each effect test estimates (whose effect, weighted how) and what it assumes beyond the randomization the
# design guarantees (issue 54): report.json's tests carry them, and the HTML prints them beside the unit.
COMPLETERS = ("dropout unrelated to the outcome: only the games played are in it, so players who left after a bad "
              "block weigh less (the flow table's attrition test and bounds show how many left, by arm)")
MISSING_AT_RANDOM = ("dropout at random given the blocks already played (leaving after a lost block is allowed; leaving "
                     "for a reason that also changes the effect, such as low skill when the effect differs with skill, "
                     "is not, and biases it: docs/results.md, 'Whose effect'); the completers-only fit is beside it")
ESTIMANDS: list[tuple[str, str, tuple[str, ...]]] = [
    (r"table1\..+", "the participants' average direct effect of showing explanations (this row's modes) on the win "
     "rate: each randomized participant (a slot's first holder) weighs the same, and each of their blocks the same "
     "(intention to treat; re-dealt slots' later holders are the all_holders sensitivity row)",
     ("carryover only as a lasting step after the first block with explanations (the model's carryover term, e.g. "
      "learning about the agent); a carryover of another shape is in the estimate: order.carryover_check compares it "
      "with order.first_period, which no carryover reaches", MISSING_AT_RANDOM,
      "practice common to both orders (one intercept per block)")),
    (r"total_effect", "the participants' average total effect of being dealt an arm with explanations: the win rate "
     "over all the study's blocks, explanation arms minus the arms without, each randomized participant (a slot's "
     "first holder) and each of their blocks weighing the same; learning carried into blocks without explanations "
     "is part of it",
     ("the arms were randomized (the design)", MISSING_AT_RANDOM)),
    (r"net_of_practice", "the difference between the explanation arms and the control arm in each participant's "
     "own with-block minus other-block win rate, each randomized participant (a slot's first holder) weighing the "
     "same",
     ("the arms were randomized (the design)", "no carryover: learning carried from a block with explanations into "
      "later blocks enters the other-block rate (read total_effect)", COMPLETERS)),
    (r"order\.first_period", "the difference in block-1 win rate between participants who started with explanations "
     "and those who started without, each randomized participant (a slot's first holder) weighing the same (no "
     "later block: carryover cannot enter)",
     ("the order was randomized (the design)", "dropout within block 1 unrelated to the outcome")),
    (r"at_will\.offer", "the effect of being offered explanations on a game's win rate (intention to treat), per "
     "game: each participant's offered games against their own games without the offer, the set's difficulty taken "
     "out, participants weighing by their games (a per-game average, not a per-player one)",
     ("offers randomized game by game (the design)", "no spillover: an offer in one game does not change the "
      "participant's other games")),
    (r"at_will\.offer_iv", "the effect of using explanations in the games where the offer changed whether they "
     "were used (a complier average, per game): the offer's effect over the uptake",
     ("exclusion restriction: being offered changes play only through using the explanations. The page differs "
      "between offered and not-offered games (the button), so the offer's own effect cannot be ruled out: read "
      "at_will.offer beside it, and at_will.offer.exclusion_check (offered vs not-offered games of those who never "
      "bought)", "monotonicity: nobody uses explanations without the offer (the page gives no way)",
      "uptake above zero")),
]
ASSOCIATION_ESTIMAND = "none: an association (nothing in it was randomized), not an effect of explanations"
ESTIMATES = ("difference", "win_rate", "odds_ratio", "mean", "weighted_kappa", "pearson", "spearman", "chi2")
P_KEY = re.compile(r"^p_value.*|.*_p$")


def _slug(text) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(text).lower()).strip("_") or "_"


def _key_of(item: dict, index: int) -> str:
    """A list element's name in a path: its mode, rating, bin, play or source, else its index."""
    for key in ("mode", "rating", "bin", "play", "arm"):
        if key in item and item[key] is not None:
            return _slug(item[key])
    return str(index)


def _p_values(value, path: tuple[str, ...]):
    """(path, key, the dict holding it) for every p-value in a section, in the order the report holds them."""
    if isinstance(value, dict):
        for key, item in value.items():
            if P_KEY.match(str(key)) and (item is None or isinstance(item, (int, float))) and not isinstance(item, bool):
                yield path, str(key), value
            elif isinstance(item, (dict, list)):
                yield from _p_values(item, path + (str(key),))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, dict):
                yield from _p_values(item, path + (_key_of(item, index),))


def _estimate(holder: dict, key: str | None, p_key: str):
    if key and key in holder:
        return key, holder[key]
    if p_key.endswith("_p"):                          # correlations: pearson_p goes with pearson
        stem = p_key[:-2]
        return stem, holder.get(stem)
    suffix = p_key[len("p_value"):]                   # p_value_vs_baseline goes with odds_ratio_vs_baseline
    if suffix and f"odds_ratio{suffix}" in holder:
        return f"odds_ratio{suffix}", holder[f"odds_ratio{suffix}"]
    for candidate in ESTIMATES:
        if isinstance(holder.get(candidate), (int, float)) and not isinstance(holder.get(candidate), bool):
            return candidate, holder[candidate]
    return None, None


def _method(holder: dict, p_key: str) -> str | None:
    """The sentence the report gives for how this p-value was computed."""
    suffix = p_key[len("p_value"):] if p_key.startswith("p_value") else ""
    for key in (f"test{suffix}", "test", "method", "test_clustered" if "clustered" in p_key else "test"):
        if isinstance(holder.get(key), str):
            return holder[key]
    return None


def listed_tests(sections: dict, skip: tuple[str, ...] = ("benchmarks", "paper")) -> list[dict]:
    """One entry per p-value in these sections (module doc)."""
    out = []
    for name, section in sections.items():
        if name in skip or not isinstance(section, dict):
            continue
        for path, p_key, holder in _p_values(section, (name,)):
            dotted = ".".join(path + (p_key,))
            rule = next((r for r in RULES if re.fullmatch(r[0], dotted)), None)
            if rule is None:
                test_name, claim, unit, estimate_key, scenarios = dotted, ASSOCIATION, "not stated", None, ()
            else:
                pattern, template, claim, unit, estimate_key, scenarios = rule
                test_name = re.sub(pattern, template, dotted)
                if pattern.startswith(r"difficulty_by_rating") or pattern.endswith(r"(.+)"):
                    test_name = test_name.replace(".p_value", "")
            estimate_of, estimate = _estimate(holder, estimate_key, p_key)
            estimand, assumptions = (next(((e, list(a)) for pattern_, e, a in ESTIMANDS
                                           if re.fullmatch(pattern_, test_name)), ("not stated", []))
                                     if claim == EFFECT else (ASSOCIATION_ESTIMAND, []))
            out.append({"name": test_name, "p_value": holder.get(p_key), "estimand": estimand,
                        "assumptions": assumptions,
                        "estimate": estimate if isinstance(estimate, (int, float)) else None,
                        "estimate_of": estimate_of, "claim": claim, "unit": unit,
                        "calibrated_under": list(scenarios), "test": _method(holder, p_key), "path": dotted})
    return out

