"""Controlled studies: the paper's Table 1 and what a careful reading adds (docs/research.md §1 and §7).

Blocks as the study ran them: block b is session b-1, and sessions alternate in the participant's order
(frames.py): "abab" plays odd blocks without explanations and even blocks with them (the paper's, and
every participant's before studies had an `order`), "baba" the other way round; a counterbalanced study
has both. A participant's with-blocks are those that show explanations in their order (in an arm without
explanations: those that would). Per arm, "with expl" pools the games that showed explanations, "no
expl" its games in the other blocks (for abab, the paper's blocks 1 and 3, and 2 and 4, for 4 sessions),
and the group baseline is block 1 of the participants who start without explanations (abab: the paper's
block 1). Rows: each arm that shows explanations, "overall" (those arms together) and "overall_inc_none"
(also the arms without explanations, the paper's WithoutExpl group, whose games outside their with-blocks
join "no expl" and whose abab participants' block 1 joins the baseline). Games are pooled, so a block
mean weighs each of its games once (the paper's mean of block means, when every participant finishes
every block).
Sham arms (game/study.py SHAM_MODES: another image's explanation, a sanity check) get their own rows, after
the real arms, and stay out of both "overall" rows and of the effect net of practice: those measure real
explanations, and a sham row must show harm (with expl below no expl), or the instrument is blind.

Improvement, three ways, each under its own key (and its own column in the HTML and the printout):
- `improvement_paper`: the paper's "Overall Improv" column, the row's with-explanations figure minus the
  group baseline of the "overall_inc_none" row, one baseline for every row. It checks on every row of the
  paper's Table 1: RelQAs 6.80 - 5.57 = 1.23 points and 71.48 - 61.15 = 10.33%, Overall 6.52 - 5.57 = 0.95
  and 69.29 - 61.15 = 8.14%. It mixes a change of arm with a change of block (practice), so it is the
  paper's number to compare with, not an effect estimate.
- `improvement`: with minus no explanations within the row (its even blocks minus its odd ones), with
  the participant-clustered CIs and the odds ratio.
- `improvement_within_participants`: each participant's own with- minus no-explanation rate, averaged
  over participants, with the participant-level paired test (stats.mean_test; its `test` names it): each
  participant is their own control.
(`improvement_over_baseline` is the row's with-explanations figure minus its own block 1.)

Tests: the paper's p compares with- and no-explanation win rates; here that is a two-proportion z-test
(games as independent), next to the participant-clustered GEE logistic regression (`p_value_clustered`)
with the odds ratio, and OLS with participant-clustered errors for the differences' CIs. Beyond the
paper: win rate by block per arm and order, the control group's practice effect (its with-blocks vs the
others), the explanation effect net of practice (the interaction of with-block and explanation arm,
clustered), the within-participant paired test above, and `order`: the order effect (participants who
start with explanations vs without) and the with-vs-without effect with order as a factor. In an all-abab
study every block with explanations follows one without, so order (practice) and explanations are
confounded, and `order` says so instead.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.stats

from .frames import CONTROLLED, Frames, arms_of, sham, starts_with, with_block
from .stats import (SIGN_FLIP, clustered_difference, compare_rates, gee_logit, join_notes, mean_ci, mean_test, rate,
                    rate_of, relabel_test, studentized_relabel_test)
from .random_intercept import block_cells, random_intercept_estimate, random_intercept_test
from .wild_bootstrap import wild_cluster_test

OVERALL, OVERALL_INC_NONE = "overall", "overall_inc_none"
PAIRED = ("paired test over participants of their own with- minus no-explanation win rate: "
          + SIGN_FLIP.format(patterns="all patterns up to 13 participants, else 9,999 seeded draws"))
# what each improvement of a row is (module doc), said in the report beside its numbers
IMPROVEMENT_PAPER = ("the paper's 'Overall Improv' column: this row's with-explanations figure minus the group "
                     "baseline (block 1) of the overall_inc_none row, one baseline for every row")
IMPROVEMENT = ("with minus without explanations: this row's games that showed explanations minus its games in the "
               "other blocks (abab participants: even blocks minus odd ones; baba: odd minus even)")
WITHIN_PARTICIPANTS = ("the mean over participants who played both ways of their own with- minus no-explanation "
                       "figure (each participant their own control), with the paired test over participants "
                       "that `test` names")
OVER_BASELINE = ("this row's with-explanations figure minus its own group baseline (block 1 of its arms' participants "
                 "who start without explanations)")
NO_PAPER_BASELINE = ("no overall_inc_none row (no arm with real explanations and none without): the paper's "
                     "baseline is undefined")


CONTROL_PAIRED = ("paired test over the control group's participants of their own with-block minus other-block win "
                  "rate: " + SIGN_FLIP.format(patterns="all patterns up to 13 participants, else 9,999 seeded draws"))
CONTROL_BLOCKS = ("even_blocks: the blocks that would show explanations in each participant's order (even blocks "
                  "for abab, odd for baba); odd_blocks: the others")
ORDER_MODEL = ("won ~ shows + starts_with_explanations, and with shows:starts_with_explanations for the interaction "
               "(the arms with real explanations; participant-clustered GEE)")
ORDER_EFFECT = ("order_effect: the odds ratio of a win for participants who start with explanations (baba) vs "
                "without (abab), at the same explanation status; with_vs_without: that of a game with explanations "
                "vs one without, order held fixed (half of each arm in each order: practice cancels); interaction: "
                "how much the with-vs-without odds ratio differs between the orders, which practice alone makes "
                "(explanations come later for abab, earlier for baba): an association, not a carryover test; the "
                "carryover check is first_period")
CONFOUNDED = ("every participant of the explanation arms played the same order ({order}: {first} explanations "
              "first), so order and explanations are confounded: every block with explanations {when} one "
              "without, and practice and explanations cannot be separated (only the arm "
              "without explanations, net_of_practice, speaks to practice). A study with order "
              "\"counterbalanced\" separates them")


CROSSOVER = ("the participants' average effect of showing explanations as the counterbalanced design randomized it: "
             "a random-intercept model of each participant's win rate per block (each block of each participant "
             "weighs the same) on showing explanations, one intercept per block (practice) and a carryover term (the "
             "blocks after the participant's first block with explanations: what a block leaves behind, such as "
             "learning about the agent), over this row's participants and those of the arms without explanations, "
             "who anchor the block effects, fitted by feasible GLS and tested with CR2 errors and Bell-McCaffrey "
             "degrees of freedom; each unit of randomization counted by its first holder (intention to "
             "treat: a re-dealt slot's later holders are the all_holders sensitivity row), participants who left "
             "kept with the blocks they played (valid when leaving depends on blocks already played); the "
             "completers-only fit is beside it (random_intercept.py)")
NOT_CROSSOVER = ("not offered: every participant of this row played the same order ({order}), so a with- minus "
                 "no-explanation difference is also a later- minus earlier-block difference (practice); only a "
                 "counterbalanced study (order \"counterbalanced\") separates the two (net_of_practice compares the "
                 "arms instead). The paired test of improvement_within_participants is printed as an association")
COMPLETERS_FIT = ("sensitivity, no test: the earlier fit, OLS of the win on showing explanations with a fixed effect "
                  "per participant and per block over the games of the participants who finished every block (each "
                  "weighs by the games played; no carryover term)")
ALL_HOLDERS = ("sensitivity, no test: the same model over every holder of each slot, a re-dealt slot's later holders "
               "too (they were not randomized as the first holder was: a slot is re-dealt after its holder left)")
CARRYOVER_TERM = "after_explanations"


def first_holders(games: pd.DataFrame) -> pd.DataFrame:
    """The games of each unit of randomization's first holder (frames.py `first_holder`): intention to treat."""
    return games[games["first_holder"] == 1] if "first_holder" in games.columns else games


def after_explanations(games: pd.DataFrame) -> pd.Series:
    """1.0 for a game in a block after its participant's first block that showed explanations (carryover)."""
    first = games.loc[games["shows"] == 1].groupby("cluster")["block"].min()
    return (games["block"] > games["cluster"].map(first)).astype(float)


def crossover(games: pd.DataFrame, anchor: pd.DataFrame) -> dict:
    """The row's registrable effect test (CROSSOVER) on these games and `anchor`'s (the arms without explanations),
    with the completers-only and all-holders fits beside it. Not offered, with why, under one order."""
    known, anchor = games[games["block"].notna()], anchor[anchor["block"].notna()]
    out = {"win_rate": None, "win_rate_ci": None, "score": None, "score_ci": None, "p_value": None,
           "claim": "effect", "definition": CROSSOVER, "test": "none", "n_participants": 0,
           "by_order": {"abab": 0, "baba": 0}}
    both_ways = own_difference(known, with_block(known)).index
    if both_ways.empty:
        return {**out, "note": "no participant played blocks both with and without explanations"}
    later = ~starts_with(known).groupby(known["cluster"]).first().reindex(both_ways).astype(bool)   # abab: with later
    out.update(by_order={"abab": int(later.sum()), "baba": int((~later).sum())}, n_participants=int(len(later)))
    if later.all() or not later.any():
        return {**out, "note": NOT_CROSSOVER.format(order="abab" if later.all() else "baba")}
    data = pd.concat([known, anchor])
    data = data.assign(**{CARRYOVER_TERM: after_explanations(data)})
    columns = ["shows", CARRYOVER_TERM]
    cells = block_cells(first_holders(data), columns)
    win = random_intercept_test(cells, columns, "shows")
    if isinstance(win, str):
        return {**out, "note": win}
    score = random_intercept_test(cells, columns, "shows", outcome="score")
    scored = {} if isinstance(score, str) else {"score": score.estimate,
                                                "score_ci": list(score.ci) if score.ci else None}
    return {**out, **scored, "win_rate": win.estimate, "win_rate_ci": list(win.ci) if win.ci else None,
            "p_value": win.p_value, "test": win.method, "n_participants_model": win.n_clusters,
            "completers": _completers_fit(data), "all_holders": _all_holders_fit(data, columns)}


def _completers_fit(data: pd.DataFrame) -> dict:
    """COMPLETERS_FIT: the estimate and its interval only."""
    last = data.groupby("cluster")["block"].transform("max")
    done = data[last == data["block"].max()]
    design = pd.concat([done["shows"].astype(float), pd.get_dummies(done["block"], prefix="block", drop_first=True),
                        pd.get_dummies(done["cluster"], prefix="participant")], axis=1).astype(float).to_numpy()
    fitted = wild_cluster_test(done["won"].to_numpy(float), design, _unit_of(done).to_numpy(), 0)
    return _sensitivity(fitted, COMPLETERS_FIT, int(done["cluster"].nunique()))


def _all_holders_fit(data: pd.DataFrame, columns: list[str]) -> dict:
    fitted = random_intercept_test(block_cells(data, columns), columns, "shows")
    return _sensitivity(fitted, ALL_HOLDERS, int(data["cluster"].nunique()))


def _sensitivity(fitted, definition: str, participants: int) -> dict:
    if isinstance(fitted, str):
        return {"win_rate": None, "win_rate_ci": None, "definition": definition, "n_participants": participants,
                "note": fitted}
    return {"win_rate": fitted.estimate, "win_rate_ci": list(fitted.ci) if fitted.ci else None,
            "definition": definition, "n_participants": participants}


def _unit_of(games: pd.DataFrame) -> pd.Series:
    """Each game's unit of randomization (frames.py `unit`: the assignment slot), else its participant."""
    return games["unit"] if "unit" in games.columns else games["cluster"]


def per_unit(values: pd.Series, flags: pd.Series, games: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Participant values (indexed by cluster) and their 0/1 group, as one value per unit of randomization: the
    mean over a re-dealt slot's holders (who share its one draw, so a randomization test must move them together)."""
    unit = _unit_of(games).groupby(games["cluster"]).first().reindex(values.index)
    frame = pd.DataFrame({"value": values.to_numpy(float), "flag": np.asarray(flags, dtype=float),
                          "unit": unit.to_numpy()}).groupby("unit", sort=False).mean()
    return frame["value"].to_numpy(), frame["flag"].to_numpy() == 1


def cell(games: pd.DataFrame) -> dict:
    """A Table 1 cell: mean score and win rate (with CIs), games and participants."""
    score = mean_ci(games["score"])
    return {**rate_of(games["won"]), "score": score["mean"], "score_ci": score["ci"],
            "n_participants": int(games["cluster"].nunique())}


def _without_block(games: pd.DataFrame) -> pd.Series:
    """Games outside their participant's with-blocks (abab: odd blocks; baba: even ones); a game whose block is
    unknown counts by whether it showed explanations."""
    return (with_block(games) == 0) | (games["block"].isna() & (games["shows"] == 0))


def _baseline(games: pd.DataFrame) -> pd.DataFrame:
    """The group baseline's games: block 1 of the participants who start without explanations."""
    return games[(games["block"] == 1) & ~starts_with(games)]


def row(mode: str, games: pd.DataFrame, paper_baseline: dict | None, anchor: pd.DataFrame | None = None) -> dict:
    """One row of Table 1 over these games (one arm, or several pooled); `paper_baseline` is the
    overall_inc_none row's group baseline cell (None when there is no such row). The rows of arms that show
    explanations carry the registrable effect test (`effect`, crossover(), its block effects anchored also by
    `anchor`, the games of the arms without explanations); overall_inc_none, which mixes those arms in, does not."""
    with_expl, no_expl = games[games["shows"] == 1], games[(games["shows"] == 0) & _without_block(games)]
    baseline = _baseline(games)
    both = pd.concat([with_expl, no_expl])
    win = compare_rates(both["won"], both["shows"], both["cluster"])
    score = clustered_difference(both["score"], both["shows"], both["cluster"])
    cells = {"with_expl": cell(with_expl), "no_expl": cell(no_expl), "group_baseline": cell(baseline)}
    minus = {key: _minus(cells["with_expl"][key], cells["no_expl"][key]) for key in ("score", "win_rate")}
    note = join_notes(win.get("note"), score.get("note"))
    return {"mode": mode, "arms": sorted(games["arm"].unique().tolist()), **cells,
            "improvement_paper": paper_improvement(cells["with_expl"], paper_baseline),
            "improvement": {**minus, "score_ci": score["ci"], "win_rate_ci": win["difference_ci"],
                            "odds_ratio": win["odds_ratio"], "odds_ratio_ci": win["odds_ratio_ci"],
                            "definition": IMPROVEMENT},
            "improvement_within_participants": within_participants(both),
            **({"effect": crossover(games, games.iloc[0:0] if anchor is None else anchor)}
               if mode != OVERALL_INC_NONE else {}),
            "improvement_over_baseline": {**{key: _minus(cells["with_expl"][key], cells["group_baseline"][key])
                                             for key in ("score", "win_rate")}, "definition": OVER_BASELINE},
            "p_value": win["p_value"], "test": win["test"], "p_value_clustered": win["p_value_clustered"],
            "test_clustered": win["test_clustered"], "p_value_score_clustered": score["p_value"],
            "test_score_clustered": score["method"], "n_participants": int(games["cluster"].nunique()),
            **({"note": note} if note else {})}


def between_arms(games: pd.DataFrame) -> dict:
    """The overall_inc_none row's p-values, win rate and score, by re-drawing which participants are in the
    explanation arms (stats.relabel_test): its "with" games come from some participants only (the explanation
    arms' with-blocks) and its "without" games from all of them (every participant's other blocks), a contrast
    between participants whose clustered bootstrap ran slightly liberal at 16 participants (docs/results.md's null
    calibration). Under a relabeling, the group's with-block games are the "with" games; the other blocks stay."""
    per = games.assign(within=(with_block(games) == 1) | (games["block"].isna() & (games["shows"] == 1)))
    per = per[per["within"]].groupby("cluster").agg(n=("won", "size"), won=("won", "sum"), score=("score", "sum"))
    arms = games.groupby("cluster")["expl_arm"].max().reindex(per.index)
    no_expl = games[(games["shows"] == 0) & _without_block(games)]
    out = {}
    for key, column in (("win", "won"), ("score", "score")):
        totals, n, without = per[column].to_numpy(float), per["n"].to_numpy(float), no_expl[column].mean()
        out[key] = relabel_test(lambda group, rest: totals[group].sum(-1) / n[group].sum(-1) - without,
                                arms.to_numpy() == 1)
    return out


def paper_improvement(with_expl: dict, paper_baseline: dict | None) -> dict:
    """The paper's "Overall Improv" (module doc): with explanations minus the overall_inc_none group baseline."""
    if paper_baseline is None:
        return {"score": None, "win_rate": None, "definition": IMPROVEMENT_PAPER, "note": NO_PAPER_BASELINE}
    note = None if paper_baseline["n_games"] else \
        "the overall_inc_none row has no group baseline (no game with a known block 1)"
    return {**{key: _minus(with_expl[key], paper_baseline[key]) for key in ("score", "win_rate")},
            "definition": IMPROVEMENT_PAPER, **({"note": note} if note else {})}


def within_participants(games: pd.DataFrame) -> dict:
    """The mean over participants of their own with- minus no-explanation win rate and score (only
    participants who played both), with t CIs and the paired sign-flip test (stats.mean_test): each participant
    is their own control."""
    means = games.groupby(["cluster", "shows"])[["won", "score"]].mean().unstack("shows")
    if ("won", 1.0) not in means.columns or ("won", 0.0) not in means.columns:
        return {"n_participants": 0, "win_rate": None, "win_rate_ci": None, "score": None, "score_ci": None,
                "p_value": None, "test": PAIRED, "definition": WITHIN_PARTICIPANTS}
    means = means.dropna(subset=[("won", 1.0), ("won", 0.0)])
    win = mean_test(means[("won", 1.0)] - means[("won", 0.0)])
    score = mean_test(means[("score", 1.0)] - means[("score", 0.0)])
    return {"n_participants": int(len(means)), "win_rate": win["mean"], "win_rate_ci": win["ci"],
            "score": score["mean"], "score_ci": score["ci"], "p_value": win["p_value"], "test": PAIRED,
            "definition": WITHIN_PARTICIPANTS, **({"note": win["note"]} if "note" in win else {})}


def _minus(a, b):
    return None if a is None or b is None else a - b


def by_block(games: pd.DataFrame) -> list[dict]:
    """Win rate and mean score per arm, order and block: the learning curve under the schedule."""
    known = games[games["block"].notna()]
    known = known.assign(order=np.where(starts_with(known), "baba", "abab"))
    grouped = known.groupby(["arm", "order", "block"]).agg(
        n=("won", "size"), wins=("won", "sum"), score=("score", "mean"), shows=("shows", "max")).reset_index()
    return [{"arm": r.arm, "order": r.order, "block": int(r.block), "with_expl": bool(r.shows == 1),
             **rate(r.wins, r.n), "score": float(r.score) if pd.notna(r.score) else None}
            for r in grouped.itertuples()]


def own_difference(games: pd.DataFrame, flag: pd.Series, outcome: str = "won") -> pd.Series:
    """Each participant's own win rate (or mean `outcome`) where `flag` is 1 minus where it is 0 (participants who
    played both ways only), indexed by participant: the paired unit of the tests over participants."""
    rates = games.assign(flag=flag).groupby(["cluster", "flag"])[outcome].mean().unstack("flag")
    if not {0.0, 1.0} <= set(rates.columns):
        return pd.Series(dtype=float)
    return (rates[1.0] - rates[0.0]).dropna()


def control_group(games: pd.DataFrame, control_arms: list[str]) -> dict:
    """The arms without explanations, the blocks that would show explanations in each participant's order vs
    the others (kept under the keys even_blocks and odd_blocks, which they are for abab participants): how much
    the schedule alone (practice, for abab) changes."""
    control = games[games["arm"].isin(control_arms) & games["block"].notna()]
    if control.empty:
        return {"missing": "no arm without explanations (the paper's WithoutExpl group) with known blocks"}
    even = with_block(control)
    result = compare_rates(control["won"], even, control["cluster"])
    # each control participant played both kinds of block: their own even - odd difference is the paired
    # unit, and the sign-flip test over them is exact from 4 participants on, where the bootstrap needs more
    differences = own_difference(control, even)
    paired = mean_test(differences) if len(differences) else \
        {"p_value": None, "note": "no control participant played both even and odd blocks"}
    note = join_notes(result.get("note"), paired.get("note"))
    return {"arms": control_arms, "even_blocks": cell(control[even == 1]), "odd_blocks": cell(control[even == 0]),
            "blocks": CONTROL_BLOCKS,
            **{k: result[k] for k in ("difference", "difference_ci", "odds_ratio", "odds_ratio_ci", "p_value", "test")},
            "p_value_clustered": paired["p_value"], "test_clustered": CONTROL_PAIRED,
            **({"note": note} if note else {})}


def net_of_practice(games: pd.DataFrame) -> dict:
    """Explanations' effect beyond practice: won ~ with-block + explanation arm + their interaction,
    participant-clustered GEE, where a with-block is one that shows explanations in the participant's order (in
    the arms without explanations: would show them); the interaction's odds ratio is the effect of showing
    explanations (real ones: sham arms are left out)."""
    known = first_holders(games[games["block"].notna() & (games["sham"] != 1)])
    if known.empty or known["expl_arm"].nunique() < 2:
        return {"missing": "needs arms with and without (real) explanations, with known blocks"}
    even = with_block(known)
    exog = pd.DataFrame({"with_block": even, "explanation_arm": known["expl_arm"],
                         "explanations_shown": even * known["expl_arm"]})
    fitted = gee_logit(known["won"], exog, known["cluster"], "explanations_shown")
    # the p-value: the arms were randomized over participants, so re-draw them on each participant's own
    # with-block - other-block difference, studentized: exact under no effect on any game at any size, and it keeps
    # its level when effects differ between participants and the arms differ in size (1:3 with one control arm)
    own = own_difference(known, even)
    arm = known.groupby("cluster")["expl_arm"].max().reindex(own.index)
    tested = studentized_relabel_test(*per_unit(own, arm, known))
    note = join_notes(fitted.get("note"), tested.get("note"))
    return {"model": "won ~ with_block + explanation_arm + with_block:explanation_arm (with_block: a block that "
                     "shows explanations in the participant's order, even for abab, odd for baba)", **fitted,
            "p_value": tested["p_value"], "difference": tested["difference"], "difference_ci": tested["difference_ci"],
            "test": "participants' own with-block minus other-block win rate, explanation arms vs the others: "
                    + tested["test"], "claim": "effect",
            **({"note": note} if note else {})}


TOTAL_EFFECT = ("the total effect of being dealt an arm with explanations: the win rate over all the study's blocks "
                "(explanations shown in half of them, and whatever they leave behind in the others, such as learning "
                "about the agent), explanation arms vs the arms without, each participant's blocks weighing the same "
                "(practice out: each block's win rate less everyone's at that block and order), each slot counted by "
                "its first holder. For designs where learning is expected: it does not need the no-"
                "carryover assumption of the crossover rows, at the price of power (a between-participant contrast)")


TOTAL_TEST = ("the difference in means over units of randomization with unequal variances (Welch's standard error), "
              "t test with as many degrees of freedom as the smaller group has units less one: conservative, and it "
              "keeps its level when effects differ between participants and the arms differ in size (measured: "
              "docs/results.md; the randomization test and Welch's degrees of freedom ran liberal at 16 "
              "participants with 1 control arm to 3)")


def total_effect(games: pd.DataFrame) -> dict:
    """TOTAL_EFFECT over the real explanation arms and the arms without explanations: each first holder's mean over
    their blocks of the block's win rate minus the mean of everyone's at that block and order (practice out), the
    explanation arms' mean minus the others', by TOTAL_TEST."""
    known = first_holders(games[games["block"].notna() & (games["sham"] != 1)])
    out = {"win_rate": None, "win_rate_ci": None, "p_value": None, "claim": "effect", "definition": TOTAL_EFFECT,
           "test": TOTAL_TEST, "n_participants": int(known["cluster"].nunique())}
    if known.empty or known["expl_arm"].nunique() < 2:
        return {**out, "note": "needs arms with and without (real) explanations, with known blocks"}
    cells = block_cells(known, ["expl_arm", "order"])
    cells["won"] -= cells.groupby(["block", "order"])["won"].transform("mean")
    per = cells.groupby("unit").agg(won=("won", "mean"), arm=("expl_arm", "first"))
    shown, other = per.loc[per["arm"] == 1, "won"], per.loc[per["arm"] == 0, "won"]
    if min(len(shown), len(other)) < 2:
        return {**out, "note": "fewer than 2 units of randomization in the explanation arms or in the others"}
    difference = float(shown.mean() - other.mean())
    se = float(np.sqrt(shown.var(ddof=1) / len(shown) + other.var(ddof=1) / len(other)))
    dof = min(len(shown), len(other)) - 1
    if not se > 0:
        return {**out, "win_rate": difference, "note": "every unit has the same win rate: no test"}
    q = float(scipy.stats.t.ppf(0.975, dof))
    return {**out, "win_rate": difference, "win_rate_ci": [difference - q * se, difference + q * se],
            "p_value": float(2 * scipy.stats.t.sf(abs(difference / se), dof)), "dof": dof}


CARRYOVER_CHECK = ("the crossover estimate (Table 1's overall effect) minus the first-period estimate (block 1 alone): "
                   "what a block leaves behind moves the first and not the second, so a difference far from zero "
                   "says the no-carryover assumption fails (read total_effect and order.first_period then). "
                   "Jackknife over units of randomization, t test with G - 1 degrees of freedom; a check of an "
                   "assumption, not an effect of explanations")


def carryover_check(games: pd.DataFrame, anchor: pd.DataFrame) -> dict:
    """CARRYOVER_CHECK for the real explanation arms' games (`anchor`: the arms without explanations)."""
    data = first_holders(pd.concat([games, anchor])[lambda g: g["block"].notna()])
    data = data.assign(**{CARRYOVER_TERM: after_explanations(data), "starts_with": starts_with(data).astype(float)})
    columns = ["shows", CARRYOVER_TERM]
    cells = block_cells(data, columns + ["expl_arm", "starts_with"])

    def difference(kept: pd.DataFrame) -> float:
        first = kept[(kept["block"] == 1) & (kept["expl_arm"] == 1)]
        rates = first.groupby("starts_with")["won"].mean()
        if len(rates) < 2:
            return float("nan")
        return random_intercept_estimate(kept, columns, "shows") - float(rates[1.0] - rates[0.0])

    units = cells["unit"].unique()
    out = {"difference": None, "p_value": None, "definition": CARRYOVER_CHECK, "test": "jackknife t",
           "n_units": int(len(units))}
    estimate = difference(cells)
    leave_out = np.array([difference(cells[cells["unit"] != u]) for u in units])
    if not np.isfinite(estimate) or len(units) < 4 or not np.isfinite(leave_out).all():
        return {**out, "note": "too few participants in each order of the explanation arms for the check"}
    G = len(units)
    se = float(np.sqrt((G - 1) / G * np.sum((leave_out - leave_out.mean()) ** 2)))
    if not se > 0:
        return {**out, "difference": estimate, "note": "the jackknife standard error is zero: no test"}
    return {**out, "difference": estimate, "se": se,
            "p_value": float(2 * scipy.stats.t.sf(abs(estimate / se), G - 1))}


def controlled(frames: Frames) -> dict:
    """The `controlled` section of the report for the controlled studies in `frames`."""
    games = frames.games[frames.games["kind"] == CONTROLLED]
    if games.empty:
        return {"table1": [], "missing": "no finished games of a controlled study"}
    expl_arms, control_arms = arms_of(games)     # sham arms last (paper_order)
    sham_arms = [arm for arm in expl_arms if sham(arm)]
    real_arms = [arm for arm in expl_arms if arm not in sham_arms]
    inc_none = games[~games["arm"].isin(sham_arms)] if real_arms or control_arms else None
    # the paper's one baseline for every row's "Overall Improv": the overall_inc_none row's block 1 (of abab)
    paper_baseline = cell(_baseline(inc_none)) if inc_none is not None else None
    anchor = games[games["arm"].isin(control_arms)]
    rows = [row(arm, games[games["arm"] == arm], paper_baseline, anchor) for arm in expl_arms]
    notes = []
    if not expl_arms:
        notes.append("no arm shows explanations: Table 1 has no rows but overall_inc_none")
    elif not real_arms:
        notes.append("no arm shows real explanations: Table 1 has only the sham arms' rows (and overall_inc_none "
                     "when there is an arm without explanations)")
    else:
        rows.append(row(OVERALL, games[games["arm"].isin(real_arms)], paper_baseline, anchor))
    if not control_arms:
        notes.append("no arm without explanations (WithoutExpl group): overall_inc_none equals overall")
    if sham_arms:
        notes.append(f"sham arms ({', '.join(sham_arms)}) have their own rows and are in neither overall row")
    if inc_none is not None:
        rows.append(row(OVERALL_INC_NONE, inc_none, paper_baseline))
        if real_arms and control_arms:
            tested = between_arms(inc_none)
            rows[-1].update(p_value_clustered=tested["win"]["p_value"], test_clustered=tested["win"]["test"],
                            p_value_score_clustered=tested["score"]["p_value"],
                            test_score_clustered=tested["score"]["test"])
    blocks = sorted(int(b) for b in games["block"].dropna().unique())
    real = games[games["arm"].isin(real_arms)]
    return {"table1": rows, "studies": sorted(games["study"].unique().tolist()), "arms": expl_arms,
            "sham_arms": sham_arms, "control_arms": control_arms, "blocks": blocks,
            "by_block": by_block(games), "control_group": control_group(games, control_arms),
            "net_of_practice": net_of_practice(games), "total_effect": total_effect(games),
            "order": {**by_order(real), **({"carryover_check": carryover_check(real, anchor)}
                                           if real_arms and not _one_order(real) else {})},
            **({"notes": notes} if notes else {})}


FIRST_PERIOD = ("the carryover check: block 1 only, participants who start with explanations (baba) minus those who "
                "start without (abab), a contrast between randomized groups that no earlier block can have changed; "
                "if it differs much from the crossover estimate (Table 1's effect), what a block leaves behind "
                "(learning from explanations, fatigue) is in the with-minus-without difference")


def first_period(games: pd.DataFrame) -> dict:
    """FIRST_PERIOD: each participant's block-1 win rate, baba vs abab, by the studentized randomization test."""
    first = first_holders(games[games["block"] == 1])
    rates = first.assign(starts=starts_with(first).astype(float)).groupby("cluster").agg(
        won=("won", "mean"), starts=("starts", "first"))
    tested = studentized_relabel_test(*per_unit(rates["won"], rates["starts"], first))
    return {"definition": FIRST_PERIOD, "win_rate": tested["difference"], "win_rate_ci": tested["difference_ci"],
            "p_value": tested["p_value"], "test": tested["test"], "claim": "effect",
            "n_participants": {"baba": tested["n_group"], "abab": tested["n_rest"]},
            **({"note": tested["note"]} if "note" in tested else {})}


def _one_order(games: pd.DataFrame) -> bool:
    return starts_with(games[games["block"].notna()]).nunique() < 2


def by_order(games: pd.DataFrame) -> dict:
    """The order effect and the with-vs-without effect with order as a factor, over the games of the arms with
    real explanations (ORDER_MODEL, ORDER_EFFECT; stats.gee_logit: odds ratios from the GEE, p-values from the
    wild cluster bootstrap), with the win rates of each order with and without explanations. With one order
    only, the statement that order and explanations are confounded instead."""
    games = games[games["block"].notna()]
    if games.empty:
        return {"missing": "no games with known blocks in an arm with real explanations"}
    starts = starts_with(games).astype(float)
    per_participant = starts.groupby(games["cluster"]).first()
    orders = {"abab": int((per_participant == 0).sum()), "baba": int((per_participant == 1).sum())}
    out = {"participants_by_order": orders, "model": ORDER_MODEL, "definition": ORDER_EFFECT}
    if 0 in orders.values():
        only = "abab" if orders["baba"] == 0 else "baba"
        return {**out, "confounded": True,
                "statement": CONFOUNDED.format(order=only, first="without" if only == "abab" else "with",
                                               when="follows" if only == "abab" else "precedes")}
    exog = pd.DataFrame({"shows": games["shows"], "starts_with_explanations": starts})
    cells, differences = {}, {}
    for order, flag in (("abab", 0.0), ("baba", 1.0)):
        mine = games[starts == flag]
        cells[order] = {"with_expl": cell(mine[mine["shows"] == 1]), "no_expl": cell(mine[mine["shows"] == 0])}
        differences[order] = _minus(cells[order]["with_expl"]["win_rate"], cells[order]["no_expl"]["win_rate"])
    known = [d for d in differences.values() if d is not None]
    # the mean of the two orders' with - without differences: practice adds to one and takes from the other
    differences["mean_of_orders"] = float(np.mean(known)) if len(known) == 2 else None
    return {**out, "confounded": False, "cells": cells, "win_rate_difference": differences,
            "first_period": first_period(games),
            "with_vs_without": gee_logit(games["won"], exog, games["cluster"], "shows"),
            "order_effect": gee_logit(games["won"], exog, games["cluster"], "starts_with_explanations"),
            "interaction": gee_logit(games["won"], exog.assign(shows_x_starts_with=exog["shows"]
                                                               * exog["starts_with_explanations"]),
                                     games["cluster"], "shows_x_starts_with")}
