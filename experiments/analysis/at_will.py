"""At-will studies (docs/research.md §1): do games that use explanations win more, and does use grow with play?

The player decides when to buy explanations, so every comparison of games by use is an **association**: who
buys, and when (uncertain, hard, long games), also predicts winning, and better players may buy more or less.
Only a randomized offer makes an effect estimable (`offer` below).

- explanations_used: a game used explanations when at least one of its rounds had them (bought);
  win rate of those games vs the games that never used them. The paper's test is a two-proportion
  z-test (47% of 157 vs 28% of 49, p = 0.019); here it is next to the participant-clustered GEE. An association.
- within_participants: the same comparison within each participant (skill, which differs between players,
  drops out): conditional logistic regression with the participant as the stratum (statsmodels
  ConditionalLogit), adjusted for what is known when a player decides (the game's place in their play and
  its set difficulty), and the paired test over participants who played both ways, with the shares who never
  and always bought. Still an association: within a player, which games they buy in is chosen.
- offer (a study with `offer: "randomized"`, game/study.py): explanations were available in a seeded random
  half of each participant's games. Intention to treat: the win on the offer with a fixed effect per participant
  (each participant's offered against their own not-offered games), its p-value from re-drawing the offers
  within each participant (stats.within_relabel_test: the offer is randomized within participants, so the test
  is exact whatever skill, practice or numbers of games): an **effect** of offering. The
  effect of use, with the offer as instrument (Wald: the intention-to-treat difference over the difference in
  use; the effect among those the offer moves to buy), has the same test (Anderson-Rubin: no effect of use
  means no effect of the offer) and a participant-bootstrap interval.
- adoption (Fig. 5): the share of games using explanations by play index (a participant's 1st, 2nd, ...
  game); and the paper's halves: all games ordered by play index (ties by start time), the first half
  by count vs the rest (the paper: 61.2% vs 91.3%, N = 103 each, p < 1e-5), z-test and clustered GEE,
  plus the trend per play (logistic regression with participant-clustered errors, odds ratio per
  further play).
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from statsmodels.discrete.conditional_models import ConditionalLogit
from statsmodels.tools.sm_exceptions import PerfectSeparationError

from .frames import AT_WILL, Frames
from .stats import (ALPHA, MAX_LOG_ODDS, compare_rates, logit_clustered, mean_ci, mean_test, odds_ratio, rate, rate_of,
                    within_relabel_test)

SELF_SELECTED = ("an association, not an effect: the player chose which games to buy explanations in, and what "
                 "moves that choice (skill, uncertainty, hard sets, long games) also moves winning")
CONDITIONAL = ("conditional logistic regression of the win on use, the game's place in the participant's play and "
               "its set difficulty, the participant as the stratum (statsmodels ConditionalLogit; Wald test): only "
               "participants who both won and lost, in games with and without explanations, inform it")
ITT = ("intention to treat: the win on the offer within participants (OLS with a fixed effect per participant: each "
       "participant's offered games against their own not-offered ones, weighted by their games; the offer was "
       "randomized per game within participants, so practice and skill are balanced by design), the win adjusted "
       "for the set's difficulty where it is known (a slope fitted within participants without the offer: exact "
       "all the same); p-value: ")
BOOTSTRAP = "{draws:,} participant-bootstrap replicates (seed 0), percentile"
IV = ("the effect of using explanations, the randomized offer as instrument (Wald estimator: the intention-to-treat "
      "difference in win rate over the difference in the share of games that used explanations; the effect among "
      "players the offer moves to buy); p-value: the intention-to-treat test (Anderson-Rubin); interval: "
      + BOOTSTRAP)
IV_DRAWS = 2_000

RESULT_KEYS = ("difference", "difference_ci", "odds_ratio", "odds_ratio_ci", "p_value", "test", "p_value_clustered",
               "test_clustered", "n_participants")


def _with_score(games: pd.DataFrame) -> dict:
    return {**rate_of(games["won"]), "score": mean_ci(games["score"])["mean"]}


def explanations_used(games: pd.DataFrame) -> dict:
    known = games[games["used"].notna()]
    result = compare_rates(known["won"], known["used"], known["cluster"])
    return {"with": _with_score(known[known["used"] == 1]), "without": _with_score(known[known["used"] == 0]),
            "overall": _with_score(games), **{k: result[k] for k in RESULT_KEYS}, "claim": "association",
            "statement": SELF_SELECTED, **({"note": result["note"]} if "note" in result else {})}


def within_participants(games: pd.DataFrame) -> dict:
    """The use-vs-no-use comparison within participants (module doc): conditional logit, adjusted, and the
    paired test, with who never and always bought."""
    known = games[games["used"].notna()]
    share = known.groupby("cluster")["used"].mean()
    buying = {"participants": int(len(share)), "never_bought": int((share == 0).sum()),
              "always_bought": int((share == 1).sum()), "both": int(((share > 0) & (share < 1)).sum())}
    means = known.groupby(["cluster", "used"])["won"].mean().unstack("used")
    paired = mean_test((means[1.0] - means[0.0]).dropna()) if {0.0, 1.0} <= set(means.columns) else \
        {"mean": None, "ci": None, "p_value": None, "note": "no participant played games both with and without"}
    covariates = [c for c in ("play", "difficulty") if c in known and known[c].notna().any()]
    data = known.dropna(subset=["won", *covariates])
    out = {"odds_ratio": None, "odds_ratio_ci": None, "p_value": None, "method": CONDITIONAL,
           "adjusted_for": covariates, "buying": buying, "claim": "association", "statement": SELF_SELECTED,
           "paired": {**{k: paired.get(k) for k in ("mean", "ci", "p_value", "test")}, "n": paired.get("n"),
                      **({"note": paired["note"]} if "note" in paired else {})}}
    informative = data.groupby("cluster").filter(lambda g: g["won"].nunique() == 2 and g["used"].nunique() == 2)
    if informative["cluster"].nunique() < 2:
        return {**out, "note": "fewer than 2 participants both won and lost, with and without explanations"}
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fitted = ConditionalLogit(informative["won"].to_numpy(float),
                                      informative[["used", *covariates]].to_numpy(float),
                                      groups=pd.factorize(informative["cluster"])[0]).fit(disp=0)
            coef, p = float(fitted.params[0]), float(fitted.pvalues[0])
            low, high = (float(x) for x in fitted.conf_int(alpha=ALPHA)[0])
        except (PerfectSeparationError, np.linalg.LinAlgError, ValueError):
            return {**out, "note": "the conditional logit could not be fitted (separation)"}
    if not np.isfinite([coef, p]).all() or abs(coef) > MAX_LOG_ODDS:
        return {**out, "note": "the conditional logit ran away (separation)"}
    return {**out, **odds_ratio(coef, low, high), "p_value": p,
            "n_participants": int(informative["cluster"].nunique())}


def offer(games: pd.DataFrame) -> dict:
    """The randomized offer's intention-to-treat and instrumented effects (module doc)."""
    known = games[games["offered"].notna() & games["used"].notna()]
    both = known.groupby("cluster")["offered"].nunique()
    known = known[known["cluster"].isin(both[both == 2].index)]
    if known.empty:
        return {"missing": "no participant played games both with and without the offer"}
    # within each participant (each is their own control): offered, won and used less the participant's mean; the
    # win also less what the set's difficulty predicts (a pre-game covariate, fitted without the offer, so re-drawing
    # the offers stays exact), which takes the sets' luck out of the contrast
    won, adjusted_for = _difficulty_adjusted(known)
    known = known.assign(won_adjusted=won)
    within = {c: known[c] - known.groupby("cluster")[c].transform("mean") for c in ("offered", "won_adjusted", "used")}
    sums = pd.DataFrame({"xy": within["offered"] * within["won_adjusted"], "xx": within["offered"] ** 2,
                         "xu": within["offered"] * within["used"], "cluster": known["cluster"]}).groupby("cluster").sum()
    tested = within_relabel_test(known["won_adjusted"], known["offered"], known["cluster"])
    uptake = float(sums["xu"].sum() / sums["xx"].sum())
    out = {"n_participants": int(len(sums)), "adjusted_for": adjusted_for,
           "offered": _with_score(known[known["offered"] == 1]), "not_offered": _with_score(known[known["offered"] == 0]),
           "uptake": {"share_used_offered": _mean(known.loc[known["offered"] == 1, "used"]),
                      "share_used_not_offered": _mean(known.loc[known["offered"] == 0, "used"]), "difference": uptake}}
    # intervals: participants resampled (their within-participant sums), IV_DRAWS times
    draws = np.random.default_rng(0).integers(0, len(sums), (IV_DRAWS, len(sums)))
    resampled = {c: sums[c].to_numpy()[draws].sum(1) for c in ("xy", "xx", "xu")}
    itt = {"win_rate": float(sums["xy"].sum() / sums["xx"].sum()),
           "win_rate_ci": _percentiles(resampled["xy"], resampled["xx"]), "p_value": tested["p_value"],
           "test": ITT + tested["test"] + "; interval: " + BOOTSTRAP.format(draws=IV_DRAWS), "claim": "effect",
           **({"note": tested["note"]} if "note" in tested else {})}
    out["itt"] = itt
    out["exclusion_check"] = exclusion_check(known)
    iv = {"win_rate": None, "win_rate_ci": None, "p_value": itt["p_value"], "test": IV.format(draws=IV_DRAWS),
          "claim": "effect"}
    if abs(uptake) < 0.05:
        return {**out, "iv": {**iv, "note": "the offer hardly changed use (uptake difference under 5 points): the "
                                            "instrument is too weak for an estimate; the intention-to-treat test stands"}}
    return {**out, "iv": {**iv, "win_rate": float(sums["xy"].sum() / sums["xu"].sum()),
                          "win_rate_ci": _percentiles(resampled["xy"], resampled["xu"])}}


def _difficulty_adjusted(games: pd.DataFrame) -> tuple[pd.Series, list[str]]:
    """The win less b x (the set's difficulty less the participant's mean difficulty), b the within-participant
    slope of the win on difficulty (fitted without the offer); the win itself where no difficulty is known."""
    if "difficulty" not in games or games["difficulty"].isna().any() or games["difficulty"].nunique() < 2:
        return games["won"].astype(float), []
    difficulty = games["difficulty"] - games.groupby("cluster")["difficulty"].transform("mean")
    won = games["won"] - games.groupby("cluster")["won"].transform("mean")
    slope = float((difficulty * won).sum() / (difficulty ** 2).sum()) if (difficulty ** 2).sum() > 0 else 0.0
    return games["won"] - slope * difficulty, ["difficulty"]


EXCLUSION_CHECK = ("the check of the exclusion restriction the data allow: among participants who used explanations "
                   "in none of their offered games (the offer cannot have worked through use for them), their offered "
                   "minus not-offered win rate, offers re-drawn within each participant. An offer that changes play by "
                   "itself (the button, the page) shows here; a participant's choice never to buy is made after the "
                   "offer, so this is a check, not an effect")


def exclusion_check(games: pd.DataFrame) -> dict:
    """EXCLUSION_CHECK over the participants who never used explanations when offered."""
    offered_use = games[games["offered"] == 1].groupby("cluster")["used"].max()
    never = games[games["cluster"].isin(offered_use[offered_use == 0].index)]
    out = {"difference": None, "p_value": None, "definition": EXCLUSION_CHECK, "claim": "association",
           "n_participants": int(never["cluster"].nunique())}
    if never.empty:
        return {**out, "note": "every participant used explanations in some offered game: nothing to check"}
    tested = within_relabel_test(never["won"], never["offered"], never["cluster"])
    means = never.groupby("offered")["won"].mean()
    return {**out, "difference": float(means.get(1.0, np.nan) - means.get(0.0, np.nan)),
            "p_value": tested["p_value"], "test": tested["test"],
            **({"note": tested["note"]} if "note" in tested else {})}


def _percentiles(numerators: np.ndarray, denominators: np.ndarray) -> list[float] | None:
    """The 95% percentile interval of bootstrap ratios (None when too few could be formed)."""
    ratios = np.divide(numerators, denominators, out=np.full(len(numerators), np.nan),
                       where=np.abs(denominators) > 1e-9)
    if np.isnan(ratios).mean() > 0.5:
        return None
    low, high = np.nanpercentile(ratios, [100 * ALPHA / 2, 100 * (1 - ALPHA / 2)])
    return [float(low), float(high)]


def _mean(values: pd.Series) -> float | None:
    return float(values.mean()) if len(values) else None


def adoption(games: pd.DataFrame) -> dict:
    known = games[games["used"].notna()].sort_values(["play", "started", "game_id"], na_position="last")
    half = len(known) // 2
    second = pd.Series(0.0, index=known.index)
    second.iloc[half:] = 1.0
    result = compare_rates(known["used"], second, known["cluster"])
    plays = known.groupby("play").agg(n=("used", "size"), used=("used", "sum"), won=("won", "sum")).reset_index()
    by_play = [{"play": int(r.play), **rate(r.used, r.n, key="share"), "win_rate": r.won / r.n}
               for r in plays.itertuples()]
    trend = logit_clustered(known["used"], known[["play"]], known["cluster"], "play")
    return {"first_half": rate_of(known["used"][second == 0], key="share"),
            "second_half": rate_of(known["used"][second == 1], key="share"),
            **{k: result[k] for k in RESULT_KEYS}, "by_play": by_play,
            "trend": {"odds_ratio_per_play": trend["odds_ratio"], "odds_ratio_ci": trend["odds_ratio_ci"],
                      "p_value": trend["p_value"], "method": trend["method"],
                      **({"note": trend["note"]} if "note" in trend else {})},
            "ordering": "games ordered by play index (a participant's 1st, 2nd, ... game), ties by start time; "
                        "first half = the first floor(N/2) of them",
            **({"note": result["note"]} if "note" in result else {})}


def at_will(frames: Frames) -> dict:
    """The `at_will` section of the report for the at-will studies in `frames`."""
    games = frames.games[frames.games["kind"] == AT_WILL]
    if games.empty:
        return {"missing": "no finished games of an at-will study"}
    if games["used"].isna().all():
        return {"missing": "no rounds table: which games used explanations is unknown",
                "studies": sorted(games["study"].unique().tolist())}
    out = {"studies": sorted(games["study"].unique().tolist()), "explanations_used": explanations_used(games),
           "within_participants": within_participants(games), "adoption": adoption(games)}
    if "offered" in games and games["offered"].notna().any():
        out["offer"] = offer(games)
    return out
