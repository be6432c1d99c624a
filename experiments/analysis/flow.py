"""Everyone randomized, accounted for: the flow of participants (CONSORT style) from joining to the analysis,
per study and arm x order, with a test of differential attrition, worst-case bounds for the games never
played, the quality flags by arm and the sample by arm.

    report["flow"] = flow(tables, frames, exclusions, rules)     # report.py; frames, exclusions: build_frames'

Analyses of completers alone hide who left: a treatment that drives the weak players away looks better
among those who stay. So every participant who joined is counted exactly once, and the counts add up:

    joined   = not consented + screened out + dropped + finished
    finished = excluded + analysed + finished without an analysed game

- not consented: joined (and were dealt an arm) but never agreed to take part: no data, never treated; of them,
  `declined` pressed the consent form's decline button (the others left on the consent page);
- screened out: ended by a check (game/checks.py `on_fail: screen_out`), by which check;
- dropped: consented, not screened out, not finished, by the last block (session + 1) in which they finished a
  game, or before any game; whoever was still playing when the data was exported counts here too;
- excluded: finished, and raised a flag of their study's exclusion rules (build_frames; a participant with
  two such flags counts under both in `excluded_by`);
- analysed: finished, with at least one game in the analysis. Dropouts' finished games are analysed as
  well (`dropped_analysed`), so the report's participants are analysed + dropped_analysed;
- refilled slots: joins that took over the slot of a dropout or a screened-out participant
  (game/assignment.py, the export's `assignments.refilled_slot`);
- repeat participation: the participants who raise `several_sessions` or `shared_browser` (game/quality.py:
  one person in several participations, which the server's one-participation rule did not refuse), counted
  (`repeat_participation`, a note) and otherwise in the flow like everyone;
- arm chosen by link: the participant's link named the arm (`assigned_by` "link": a study with
  `choose_arm`, for demos and pilots). That is no randomized assignment: such participants are counted and
  flagged, and left out of the attrition test and of the bounds.

The randomized participants who consented and were not screened out are the ones the attrition test and
the bounds are over: those are the participants the treatment could reach.

SHAPE (JSON-ready; "?" marks keys that may be absent):

flow = {
  "definition": str,                    # the paragraph above, for the reader of the report
  "studies": {study_id: study_flow},    # every study someone joined, whether or not it has finished games
  "pooled"?: study_flow,                # over all studies, where there are several (rows by arm x order)
  "notes": [str]}                       # what is missing, by table and column
study_flow = {
  "kind": "controlled" | "at-will" | None,
  "rows": [row],                        # one per arm x order (order null in at-will studies), paper's arm order
  "total": row,                         # arm "all", order null
  "adds_up": bool,                      # every row: joined and finished split as above
  "attrition_test": {"p_value": float|None, "test": str, "statistic"?: float, "dof"?: int,
                     "table": {arm: {"finished": int, "not_finished": int}}, "note"?: str},
  "attrition_explanations": {"p_value", "test", "table": {"explanations"|"none": {"dropped", "finished"}},
                             "statistic"?, "dropped_share"?, "note"?},       # attrition.py
  "attrition_by_last_block"?: {"definition", "counts": {"explanations"|"none": {kind_outcome: int}}},  # controlled
  "bounds": {"controlled"?: bounds, "at_will"?: bounds} | {"missing": str},
  "flags_by_arm": {"applied": [flag], "arms": {arm: {"participants": int, "flags": {flag: int}}}},
  "repeat_participation": {"several_sessions": int, "shared_browser": int},   # participants raising each (note too)
  "sample": {"definition": str, "n": {arm: int},
             "items": {key: {"type": "choice" | "text", "categories": [str],
                             "counts": {arm: {category: int}}, "shares": {arm: {category: float|None}},
                             "test": {"p_value", "statistic", "dof", "test": str, "descriptive": true,
                                      "note"?} | {"p_value": None, "note": str}}}},
  "notes": [str]}
row = {"arm": str, "order": "abab" | "baba" | None, "joined": int, "not_consented": int,
       "screened_out": int, "screened_out_by": {check: int},
       "dropped": int, "dropped_before_any_game": int, "dropped_after_block": {"1": int, ...},
       "dropped_block_unknown": int, "dropped_excluded": int,   # dropouts who raised a flag their rules exclude
       "finished": int, "excluded": int, "excluded_by": {flag: int}, "finished_without_analysed_games": int,
       "analysed": int, "dropped_analysed": int, "refilled_slots": int, "arm_chosen_by_link": int}
bounds = {"lower": float|None, "upper": float|None, "observed": float|None, "measure": str,
          "n_randomized": int,            # the participants the bounds average over
          "n_observed": int,              # of them, those with finished games to observe the measure on
          "n_with_missing_games": int, "missing_games": int, "definition": str, "note"?: str}
"""
from __future__ import annotations

import json
from collections.abc import Iterable

import numpy as np
import pandas as pd
import scipy.stats

from game.checks import parse_checks
from game.quality import FLAGS, REPEAT_FLAGS
from game.study import arm_modes

from .data import Tables
from .attrition import attrition_by_block, explanations_vs_control
from .frames import AT_WILL, CONTROLLED, Frames, paper_order, sham

ALL = "all"                        # the total row's arm
NOT_ANSWERED = "not answered"
ANSWERED = "answered"
LINK = "link"                      # assignments.assigned_by of an arm the participant's link named
MIN_EXPECTED = 5                   # the usual rule for the chi-square approximation
MONTE_CARLO_TABLES = 9_999        # random tables, seeded: the same data give the same p-value (as stats.py's tests)
SEED = 0
NO_ARM = "(no arm)"

DEFINITION = (
    "Everyone who joined is counted once: joined = not consented (of whom `declined` declined on the consent form) "
    "+ screened out (by the check that ended the "
    "participation) + dropped (consented, not screened out, not finished: by the last block in which they finished "
    "a game, or before any game; anyone still playing when the data was exported counts here) + finished; "
    "finished = excluded (by the analysis's exclusion rules; a participant with two of the flags counts under both "
    "flags) + analysed (at least one analysed game) + finished without an analysed game. Dropouts' finished games "
    "are analysed too (dropped, analysed). Refilled slots are joins that took over the slot of a dropout or a "
    "screened-out participant: the permutation tests treat each analysed participant's arm as randomized, and the "
    "refilled slots are listed so that a reader can judge whether re-dealing slots changed who ended up in which "
    "arm. Arm chosen by link: the participant's link named the arm (a study with choose_arm, for demos and pilots); "
    "that is not a randomized assignment, and they are left out of the attrition test and the bounds.")
REPEATED = ("repeat participation: {several_sessions} participants consented under a platform id that consented in "
            "another participation of the study too (several_sessions), {shared_browser} in a browser that another "
            "consenting participation of the study also used (shared_browser); each is counted in the flow like "
            "everyone, and excluded only where the study's exclusion rules name the flag")
ATTRITION_POPULATION = "randomized participants who consented and were not screened out, finished or not, by arm"
FISHER = f"Fisher's exact test (scipy fisher_exact, two-sided) of finishing by arm; {ATTRITION_POPULATION}"
CHI_SQUARE = (f"chi-square test of independence of arm and finishing (scipy chi2_contingency, no continuity "
              f"correction); {ATTRITION_POPULATION}")
FISHER_MONTE_CARLO = (f"Fisher-Freeman-Halton exact test of arm and finishing by Monte Carlo (scipy fisher_exact, "
                      f"{MONTE_CARLO_TABLES:,} random tables with the observed margins, seed {SEED}), as some "
                      f"expected counts are below {MIN_EXPECTED}; {ATTRITION_POPULATION}")
CONTROLLED_BOUNDS = (
    "Worst-case bounds for the games never played, over every randomized participant of an arm with (real) "
    "explanations who consented and was not screened out, excluded or not, whether they finished a game or not: "
    "each participant's win rate in the blocks with explanations minus their win rate in the blocks without, "
    "averaged over participants, where the games a participant did not finish (the study's sessions x "
    "games_per_session, in each participant's order) are filled in as all wins without explanations and all losses "
    "with them (lower bound), or the other way round (upper bound). Observed: the same mean over the participants "
    "with finished games both with and without explanations, their finished games only, no exclusion.")
AT_WILL_BOUNDS = (
    "Worst-case bounds for the games never played, over every randomized participant who consented and was not "
    "screened out, excluded or not, whether they finished a game or not: each participant's win rate over the "
    "study's sessions x games_per_session games, averaged over participants, where the games they did not finish "
    "are filled in as all losses (lower bound) or all wins (upper bound). Observed: the same mean over the "
    "participants with finished games, their finished games only, no exclusion.")
SAMPLE = ("The analysed participants (at least one game in the analysis) by arm, from the demographics they gave "
          "(game/checks.py); a participant who skipped an item, or left before the questionnaire, counts as "
          f"'{NOT_ANSWERED}'; text answers are counted as given or not, never shown. The chi-square test per item is "
          "descriptive (a randomized design balances arms in expectation; a small p-value is one of the many "
          "differences that chance makes among several items), not a test of the randomization.")
DESCRIPTIVE_TEST = ("chi-square test of independence of arm and answer (scipy chi2_contingency, no continuity "
                    "correction); descriptive")


def flow(tables: Tables, frames: Frames, exclusions: dict,
         rules: Iterable[str] | dict[str, Iterable[str]] | None = None) -> dict:
    """The flow of every study someone joined (module doc). `frames`, `exclusions`: build_frames'; `rules`: what
    build_frames was given (the flags for every study, or {study: flags}); None: exclusions["flags"] in every
    study, exact where the studies' rules are the same."""
    notes: list[str] = []
    if tables.participants.empty:
        return {"definition": DEFINITION, "studies": {}, "notes": [
            "no participants table: nobody's joining, consent, screening or finishing is known, so there is no "
            "flow table"]}
    games = _finished_games(tables.games)
    people = _people(tables, frames, games, exclusions, rules, notes)
    configs = _configs(tables.studies)
    kinds = {study: _kind(study, configs, frames) for study in people["study"].unique()}
    studies = {study: _study_flow(mine, games, configs, kinds, rules, exclusions)
               for study, mine in people.groupby("study", sort=True)}
    out = {"definition": DEFINITION, "studies": studies, "notes": notes}
    if len(studies) > 1:
        out["pooled"] = _study_flow(people, games, configs, kinds, rules, exclusions)
    return out


# --- one row per participant who joined ------------------------------------------------------------

def _people(tables: Tables, frames: Frames, games: pd.DataFrame, exclusions: dict, rules,
            notes: list[str]) -> pd.DataFrame:
    """Every participant who joined: their arm and order, where they stopped, whether they were excluded (and
    by which of their study's rules) and analysed, and how they were assigned."""
    p = tables.participants.drop_duplicates(["study", "participant"], keep="last").copy()
    p["study"] = p["study"].fillna("(no study)")
    p["key"] = p["study"] + ":" + p["participant"].fillna("")
    p["arm"] = p["arm"].fillna(NO_ARM) if "arm" in p else NO_ARM
    if "order" not in p:                         # an export from before orders: every row's order is unknown
        p["order"] = None
    consented = _present(p, "consented")
    screened = _present(p, "screened_out")
    finished = _present(p, "finished")
    p["status"] = np.select([~consented, screened, finished], ["not_consented", "screened_out", "finished"], "dropped")
    p["declined"] = _present(p, "declined")
    p["screened_by"] = p["screened_out"].astype(object).where(screened, None) if "screened_out" in p else None

    assignments = tables.assignments.drop_duplicates(["study", "participant"], keep="last") \
        if not tables.assignments.empty else pd.DataFrame(columns=["study", "participant"])
    assigned = p[["study", "participant"]].merge(assignments, on=["study", "participant"], how="left")
    p["refilled"] = _column(assigned, "refilled_slot").notna().to_numpy()
    p["by_link"] = (_column(assigned, "assigned_by").astype(object) == LINK).to_numpy()
    if tables.assignments.empty:
        notes.append("no assignments table: refilled slots and arms chosen by link are not known (counted as none)")

    analysed = set(frames.games["cluster"]) if "cluster" in frames.games else set()
    p["in_analysis"] = p["key"].isin(analysed)
    unknown = analysed - set(p["key"])
    if unknown:
        notes.append(f"{len(unknown)} participants with analysed games have no row in the participants table (no join "
                     "logged): they are not in the flow table")
    marks = p["flags"].fillna("").astype(str).str.split("+")
    p["applied"] = [sorted(set(m) & _rules_of(study, rules, exclusions)) for m, study in zip(marks, p["study"])]
    p["marks"] = marks.map(lambda m: {f for f in m if f})
    p["excluded"] = p["applied"].map(bool) & ~p["in_analysis"] & (p["status"] == "finished")

    p["last_block"] = p["key"].map(games.groupby("key")["session"].max() + 1)
    p["played"] = p["key"].isin(set(games["key"]))
    return p.reset_index(drop=True)


def _present(frame: pd.DataFrame, column: str) -> pd.Series:
    """Whether a participant has a value in `column` (a time, a check's name); no such column: nobody has."""
    if column not in frame:
        return pd.Series(False, index=frame.index)
    values = frame[column]
    return values.notna() & (values.astype(str).str.strip() != "")


def _column(frame: pd.DataFrame, column: str) -> pd.Series:
    return frame[column] if column in frame else pd.Series(np.nan, index=frame.index)


def _rules_of(study: str, rules, exclusions: dict) -> set[str]:
    if isinstance(rules, dict):
        return set(rules.get(study, ()))
    return set(rules) if rules is not None else set(exclusions.get("flags") or ())


def _finished_games(games: pd.DataFrame) -> pd.DataFrame:
    """Every finished game (an outcome), excluded participants' too: what the bounds start from."""
    games = games.drop_duplicates("game_id", keep="last")
    games = games[games["won"].notna()].copy()
    games["key"] = games["study"].fillna("(no study)") + ":" + games["participant"].fillna("(unknown participant)")
    return games


def _configs(studies: pd.DataFrame) -> dict[str, dict]:
    """Each study's config as it was created (the studies table's JSON)."""
    configs = {}
    if studies.empty or "config" not in studies:
        return configs
    for study, text in zip(studies["study"], studies["config"]):
        try:
            config = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            config = None
        if isinstance(config, dict):
            configs[str(study)] = config
    return configs


def _kind(study: str, configs: dict[str, dict], frames: Frames) -> str | None:
    kind = (configs.get(study) or {}).get("kind") or frames.kinds.get(study)
    return kind if kind in (CONTROLLED, AT_WILL) else None


# --- a study's (or the pool's) flow ----------------------------------------------------------------

def _study_flow(people: pd.DataFrame, games: pd.DataFrame, configs: dict, kinds: dict, rules,
                exclusions: dict) -> dict:
    """The flow of these participants (one study's, or all studies' for the pooled flow)."""
    notes: list[str] = []
    arms = paper_order(people["arm"].unique())
    keyed = people.assign(by_order=people["order"].fillna(""))       # at-will studies have no order
    rows = [_row(group, arm, order or None) for arm in arms
            for order, group in keyed[keyed["arm"] == arm].groupby("by_order", sort=True)]
    total = _row(people, ALL, None)
    of_kind = {kinds.get(s) for s in people["study"].unique()}
    randomized = people[~people["by_link"] & people["status"].isin(["dropped", "finished"])]
    bounds = {}
    for kind, key, compute in ((CONTROLLED, "controlled", _controlled_bounds), (AT_WILL, "at_will", _at_will_bounds)):
        if kind in of_kind:
            bounds[key] = compute(randomized[randomized["study"].map(kinds) == kind], games, configs)
    if not bounds:
        bounds = {"missing": "the study's kind (controlled or at-will) is unknown: no studies table and no games"}
    repeated = {flag: int(people["marks"].map(lambda m, flag=flag: flag in m).sum()) for flag in REPEAT_FLAGS}
    if any(repeated.values()):
        notes.append(REPEATED.format(**repeated))
    linked = int(people["by_link"].sum())
    if linked:
        notes.append(f"{linked} participants' arms were chosen by their link (choose_arm): not randomized, not in the "
                     "attrition test or the bounds")
    return {"kind": next(iter(of_kind)) if len(of_kind) == 1 else None,
            "rows": rows, "total": total, "adds_up": all(_adds_up(r) for r in [*rows, total]),
            "attrition_test": attrition_test(randomized), "bounds": bounds,
            "attrition_explanations": explanations_vs_control(randomized),
            **({"attrition_by_last_block": attrition_by_block(randomized, games)} if CONTROLLED in of_kind else {}),
            "repeat_participation": repeated,
            "flags_by_arm": _flags_by_arm(people, arms, {f for s in people["study"].unique()
                                                          for f in _rules_of(s, rules, exclusions)}),
            "sample": _sample(people, configs, arms), "notes": notes}


def _row(group: pd.DataFrame, arm: str, order: str | None) -> dict:
    status = group["status"]
    dropped = group[status == "dropped"]
    finished = group[status == "finished"]
    blocks = dropped.loc[dropped["played"], "last_block"]
    excluded = finished[finished["excluded"]]
    kept = finished[~finished["excluded"]]
    return {
        "arm": arm, "order": order, "joined": len(group),
        "not_consented": int((status == "not_consented").sum()),
        "declined": int(group["declined"].sum()),     # of those not consented: who pressed the consent's decline
        "screened_out": int((status == "screened_out").sum()),
        "screened_out_by": _counts(group.loc[status == "screened_out", "screened_by"].astype(str)),
        "dropped": len(dropped),
        "dropped_before_any_game": int((~dropped["played"]).sum()),
        "dropped_after_block": {str(int(b)): int(n) for b, n in blocks.dropna().value_counts().sort_index().items()},
        "dropped_block_unknown": int(blocks.isna().sum()),
        "dropped_excluded": int(dropped["applied"].map(bool).sum()),
        "finished": len(finished),
        "excluded": len(excluded),
        "excluded_by": _counts(f for flags in excluded["applied"] for f in flags),
        "finished_without_analysed_games": int((~kept["in_analysis"]).sum()),
        "analysed": int(kept["in_analysis"].sum()),
        "dropped_analysed": int(dropped["in_analysis"].sum()),
        "refilled_slots": int(group["refilled"].sum()),
        "arm_chosen_by_link": int(group["by_link"].sum())}


def _counts(values: Iterable[str]) -> dict[str, int]:
    return {str(k): int(v) for k, v in sorted(pd.Series(list(values), dtype=object).value_counts().items())}


def _adds_up(row: dict) -> bool:
    return (row["joined"] == row["not_consented"] + row["screened_out"] + row["dropped"] + row["finished"]
            and row["finished"] == row["excluded"] + row["analysed"] + row["finished_without_analysed_games"]
            and row["dropped"] == row["dropped_before_any_game"] + sum(row["dropped_after_block"].values())
            + row["dropped_block_unknown"]
            and row["screened_out"] == sum(row["screened_out_by"].values()))


# --- differential attrition --------------------------------------------------------------------------

def attrition_test(randomized: pd.DataFrame) -> dict:
    """Whether finishing depends on the arm, among the randomized participants who consented and were not
    screened out: Fisher's exact test for two arms; for more, the chi-square test where every expected count is
    at least MIN_EXPECTED, else Fisher-Freeman-Halton by Monte Carlo (scipy)."""
    if randomized.empty:
        return {"p_value": None, "test": FISHER, "table": {}, "note": "no randomized participant who consented"}
    finished = randomized["status"] == "finished"
    counts = pd.crosstab(randomized["arm"], finished).reindex(columns=[True, False], fill_value=0)
    counts = counts.reindex(paper_order(counts.index))
    table = {str(arm): {"finished": int(row[True]), "not_finished": int(row[False])} for arm, row in counts.iterrows()}
    out = {"p_value": None, "test": FISHER, "table": table}
    if len(counts) < 2:
        return {**out, "note": "fewer than two arms with randomized participants: nothing to compare"}
    if (counts.sum(axis=0) == 0).any():
        what = "nobody dropped out" if counts[False].sum() == 0 else "nobody finished"
        return {**out, "note": f"{what}: finishing cannot depend on the arm in these data"}
    observed = counts.to_numpy()
    if len(counts) == 2:
        result = scipy.stats.fisher_exact(observed)
        return {**out, "p_value": float(result.pvalue), "statistic": float(result.statistic),
                "note": "statistic: the odds ratio of finishing, first arm vs second"}
    expected = scipy.stats.contingency.expected_freq(observed)
    if expected.min() >= MIN_EXPECTED:
        chi2, p_value, dof, _ = scipy.stats.chi2_contingency(observed, correction=False)
        return {**out, "p_value": float(p_value), "statistic": float(chi2), "dof": int(dof), "test": CHI_SQUARE}
    method = scipy.stats.MonteCarloMethod(n_resamples=MONTE_CARLO_TABLES, rng=np.random.default_rng(SEED))
    result = scipy.stats.fisher_exact(observed, method=method)
    return {**out, "p_value": float(result.pvalue), "statistic": float(result.statistic), "test": FISHER_MONTE_CARLO,
            "note": "statistic: the probability of the observed table given its margins"}


# --- bounds for the games never played ---------------------------------------------------------------

def _planned(config: dict | None) -> tuple[int, int] | None:
    """(sessions, games_per_session) of a study config; None when it does not say."""
    if not config:
        return None
    sessions, per_session = config.get("sessions"), config.get("games_per_session")
    if isinstance(sessions, int) and isinstance(per_session, int) and sessions > 0 and per_session > 0:
        return sessions, per_session
    return None


def _shows_in(block: int, order: str | None) -> bool:
    """Whether a block (1-based) shows explanations in this order: abab its even blocks, baba its odd ones
    (frames.with_block; an unknown order is abab, as there)."""
    return (block % 2 == 0) != (order == "baba")


def _shown(games: pd.DataFrame, order: str | None) -> np.ndarray:
    """Whether each of a participant's games was in a block with explanations: by its session in the
    participant's order, else (no session) by the game's own `with_explanations`."""
    block = games["session"].to_numpy(dtype=float) + 1
    by_block = (block % 2 == 0) != (order == "baba")
    return np.where(np.isnan(block), games["with_explanations"].to_numpy(dtype=float) == 1.0, by_block).astype(bool)


def _real_explanations(arm: str) -> bool:
    try:
        return bool(arm_modes(arm)) and not sham(arm)
    except ValueError:                 # an arm this checkout does not know: not in the comparison
        return False


def _controlled_bounds(people: pd.DataFrame, games: pd.DataFrame, configs: dict) -> dict:
    """Module doc and CONTROLLED_BOUNDS: the with - without win rate per participant, unplayed games filled in."""
    people = people[people["arm"].map(_real_explanations).astype(bool)]
    values = {"lower": [], "upper": [], "observed": []}
    missing, short, unknown = 0, 0, 0
    by_key = {key: g for key, g in games.groupby("key")}
    for key, study, order in zip(people["key"], people["study"], people["order"]):
        planned = _planned(configs.get(study))
        if planned is None:
            unknown += 1
            continue
        sessions, per_session = planned
        mine = by_key.get(key, games.iloc[0:0])
        shows, won = _shown(mine, order), mine["won"].astype(float).to_numpy()
        cells = {}
        for condition in (True, False):
            blocks = sum(_shows_in(b, order) == condition for b in range(1, sessions + 1))
            played = won[shows == condition]
            total = max(blocks * per_session, len(played))      # more games than planned: the config changed
            cells[condition] = (float(played.sum()), len(played), total - len(played), total)
        (w_wins, w_n, w_gap, w_total), (o_wins, o_n, o_gap, o_total) = cells[True], cells[False]
        if not w_total or not o_total:
            continue
        values["lower"].append(w_wins / w_total - (o_wins + o_gap) / o_total)
        values["upper"].append((w_wins + w_gap) / w_total - o_wins / o_total)
        if w_n and o_n:
            values["observed"].append(w_wins / w_n - o_wins / o_n)
        missing += w_gap + o_gap
        short += bool(w_gap + o_gap)
    return _bounds(values, missing, short, unknown, "with - without explanations win rate, mean over participants",
                   CONTROLLED_BOUNDS)


def _at_will_bounds(people: pd.DataFrame, games: pd.DataFrame, configs: dict) -> dict:
    """Module doc and AT_WILL_BOUNDS: each participant's win rate over their planned games."""
    values = {"lower": [], "upper": [], "observed": []}
    missing, short, unknown = 0, 0, 0
    wins = games.groupby("key")["won"].sum()
    played = games.groupby("key").size()
    for key, study in zip(people["key"], people["study"]):
        planned = _planned(configs.get(study))
        if planned is None:
            unknown += 1
            continue
        won, n = float(wins.get(key, 0.0)), int(played.get(key, 0))
        total = max(planned[0] * planned[1], n)
        gap = total - n
        values["lower"].append(won / total)
        values["upper"].append((won + gap) / total)
        if n:
            values["observed"].append(won / n)
        missing += gap
        short += bool(gap)
    return _bounds(values, missing, short, unknown, "win rate of games, mean over participants", AT_WILL_BOUNDS)


def _bounds(values: dict, missing: int, short: int, unknown: int, measure: str, definition: str) -> dict:
    mean = {k: float(np.mean(v)) if v else None for k, v in values.items()}
    out = {**mean, "measure": measure, "n_randomized": len(values["lower"]), "n_observed": len(values["observed"]),
           "n_with_missing_games": short, "missing_games": missing, "definition": definition}
    notes = []
    if unknown:
        notes.append(f"{unknown} participants' study has no config in the studies table (sessions, games_per_session): "
                     "their planned games are unknown, so they are not in the bounds")
    if not values["lower"]:
        notes.append("no randomized participant to bound")
    return {**out, "note": "; ".join(notes)} if notes else out


# --- flags and sample by arm ---------------------------------------------------------------------------

def _flags_by_arm(people: pd.DataFrame, arms: list[str], applied: set[str]) -> dict:
    """Every quality flag (game/quality.py FLAGS) counted among each arm's participants who joined; `applied`:
    the exclusion rules of these participants' studies."""
    out = {}
    for arm in arms:
        mine = people[people["arm"] == arm]
        out[arm] = {"participants": len(mine),
                    "flags": {flag: int(mine["marks"].map(lambda m, flag=flag: flag in m).sum()) for flag in FLAGS}}
    return {"applied": sorted(applied), "arms": out}


def _items(people: pd.DataFrame, configs: dict) -> dict[str, tuple[str, tuple[str, ...]]]:
    """The demographics items asked, key -> (type, options), from the studies' checks (game/checks.py); a demo_*
    column no config describes is counted like a text item (answered or not), so no answer is ever shown."""
    items: dict[str, tuple[str, tuple[str, ...]]] = {}
    for study in people["study"].unique():
        checks = (configs.get(study) or {}).get("checks") or {}
        if "demographics" not in checks:
            continue
        try:
            parsed = parse_checks({"demographics": checks["demographics"]}).demographics
        except ValueError:
            continue
        for item in parsed:
            items.setdefault(item.key, (item.type, item.options))
    for column in people.columns:
        if column.startswith("demo_"):
            items.setdefault(column[len("demo_"):], ("text", ()))
    return items


def _sample(people: pd.DataFrame, configs: dict, arms: list[str]) -> dict:
    analysed = people[people["in_analysis"]]
    arms = [a for a in arms if a in set(analysed["arm"])]
    out = {"definition": SAMPLE, "n": {arm: int((analysed["arm"] == arm).sum()) for arm in arms}, "items": {}}
    for key, (kind, options) in _items(people, configs).items():
        column = f"demo_{key}"
        raw = analysed[column] if column in analysed else pd.Series(np.nan, index=analysed.index)
        given = raw.notna() & (raw.astype(str).str.strip() != "")
        if kind == "choice":
            answer = raw.astype(object).where(given, NOT_ANSWERED).astype(str)
            seen = [v for v in sorted(set(answer)) if v not in options and v != NOT_ANSWERED]
            categories = [*options, *seen, NOT_ANSWERED]
        else:
            answer = pd.Series(np.where(given, ANSWERED, NOT_ANSWERED), index=analysed.index)
            categories = [ANSWERED, NOT_ANSWERED]
        counts = pd.crosstab(analysed["arm"], answer).reindex(index=arms, columns=categories, fill_value=0)
        totals = counts.sum(axis=1)
        out["items"][key] = {
            "type": kind, "categories": categories,
            "counts": {arm: {c: int(counts.loc[arm, c]) for c in categories} for arm in arms},
            "shares": {arm: {c: float(counts.loc[arm, c] / totals[arm]) if totals[arm] else None for c in categories}
                       for arm in arms},
            "test": _balance_test(counts)}
    return out


def _balance_test(counts: pd.DataFrame) -> dict:
    """The descriptive chi-square test of arm x answer (SAMPLE says why it is descriptive)."""
    table = counts.loc[counts.sum(axis=1) > 0, counts.sum(axis=0) > 0].to_numpy()
    if table.shape[0] < 2 or table.shape[1] < 2:
        return {"p_value": None, "test": DESCRIPTIVE_TEST, "descriptive": True,
                "note": "fewer than two arms or two answers among the analysed participants: nothing to compare"}
    chi2, p_value, dof, expected = scipy.stats.chi2_contingency(table, correction=False)
    out = {"p_value": float(p_value), "statistic": float(chi2), "dof": int(dof), "test": DESCRIPTIVE_TEST,
           "descriptive": True}
    if expected.min() < MIN_EXPECTED:
        out["note"] = f"some expected counts are below {MIN_EXPECTED}: the chi-square p-value is approximate"
    return out
