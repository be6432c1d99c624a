"""Set difficulty of won vs lost games, with vs without explanations (the paper's difficulty analysis,
docs/research.md §1). Difficulty is the game's stored mean L2 feature distance from the secret to its
distractors (game/image_sets.py): lower = harder. If explanations help with hard sets, games won with
explanations should include harder sets (lower distances) than games won without them, and a game's
difficulty should decide its outcome less when explanations are shown.

    won_vs_lost(frames)

- cells: the mean difficulty of won and of lost games, with and without explanations (a game showed
  them: `shows`; sham arms, a sanity check, are left out of "with"), each with the t interval (games as
  independent), the participant-bootstrap interval (bootstrap.py) and "ci", their union;
- differences, each with its participant-clustered interval and p-value (stats.clustered_difference): won minus
  lost within each exposure, and with minus without within the won and within the lost games;
- interaction: does difficulty predict the win differently with explanations? Logistic regression
  won ~ difficulty + explanations + difficulty x explanations, the product's participant-clustered test
  (stats.logit_clustered); difficulty in standard deviations, so the odds ratios are per SD.
"""
from __future__ import annotations

import pandas as pd

from .bootstrap import METHOD as BOOTSTRAP, ParticipantBootstrap, union
from .frames import Frames
from .stats import clustered_difference, logit_clustered, mean_ci

EXPOSURES = {"with_explanations": 1.0, "without_explanations": 0.0}
OUTCOMES = {"won": 1.0, "lost": 0.0}
INTERACTION = "difficulty_x_explanations"


def _games(frames: Frames) -> pd.DataFrame:
    games = frames.games
    games = games[games["difficulty"].notna() & games["won"].notna() & games["shows"].notna()]
    return games[(games["shows"] == 0) | (games["sham"] != 1)]


def _cell(games: pd.DataFrame, boot: ParticipantBootstrap) -> dict:
    t = mean_ci(games["difficulty"])
    bootstrap = boot.means(games["difficulty"], games["cluster"], [0] * len(games), 1)[0]
    return {"n_games": t["n"], "mean_difficulty": t["mean"], "ci": union(t["ci"], bootstrap["ci"]), "ci_t": t["ci"],
            "ci_bootstrap": bootstrap["ci"], "n_participants": bootstrap["n_participants"]}


def _difference(games: pd.DataFrame, column: str) -> dict:
    """Mean difficulty where `column` is 1 minus where it is 0, clustered."""
    result = clustered_difference(games["difficulty"], games[column], games["cluster"])
    return {k: result.get(k) for k in ("difference", "ci", "p_value", "method", "n_clusters", "note") if k in result}


def won_vs_lost(frames: Frames) -> dict:
    games = _games(frames)
    if games.empty:
        return {"missing": "no finished games with a known set difficulty (games.difficulty)"}
    boot = ParticipantBootstrap(games["cluster"])
    cells = {exposure: {outcome: _cell(games[(games["shows"] == shows) & (games["won"] == won)], boot)
                        for outcome, won in OUTCOMES.items()} for exposure, shows in EXPOSURES.items()}
    differences = {f"won_minus_lost_{exposure}": _difference(games[games["shows"] == shows], "won")
                   for exposure, shows in EXPOSURES.items()}
    differences.update({f"with_minus_without_{outcome}": _difference(games[games["won"] == won], "shows")
                        for outcome, won in OUTCOMES.items()})
    spread = games["difficulty"].std()
    standardized = (games["difficulty"] - games["difficulty"].mean()) / spread if spread > 0 else games["difficulty"] * 0
    exog = pd.DataFrame({"difficulty": standardized, "explanations": games["shows"],
                         INTERACTION: standardized * games["shows"]})
    interaction = logit_clustered(games["won"], exog, games["cluster"], INTERACTION)
    return {"cells": cells, "differences": differences, "interaction": interaction,
            "difficulty": "mean L2 feature distance from the secret to its distractors: lower = harder",
            "interval": f"{BOOTSTRAP}, widened where needed to contain the t interval (games as independent)",
            "test_differences": "difference of mean difficulty with its participant-clustered interval and p-value "
                                "(stats.clustered_difference; 'method' says which ran)",
            "test_interaction": "logistic regression won ~ difficulty (per SD) + explanations + their product, the "
                                "participant-clustered test of stats.logit_clustered ('method' says which ran); odds "
                                "ratio of the product term"}
