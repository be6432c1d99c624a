"""Simulated crowds at the level the analysis reads: a finished game's arm, block, order, outcome, score, use of
explanations and offer; no server, no agent, so that thousands of studies run in minutes. The null calibration
(experiments/benchmark/null_calibration.py) and the fast power analysis (`exag simulate power --difference`,
power_effect.py) both draw their studies here, and both run the report's own tests on them.

    games = crowd_study(np.random.default_rng(0), Crowd(order="counterbalanced", practice=0.3), 16, lift=0.15)

Participants differ as real ones do: each has a skill, a log-odds of winning drawn from N(base_log_odds, skill_sd)
(skill_sd from the intra-participant correlation: icc_skill_sd). What a Crowd adds, one at a time or together:
- practice: the log-odds grows by `practice` a block (controlled) or a tenth of it a game (at will);
- order: "abab" (the paper's: without explanations first), "baba", or "counterbalanced" (arms and orders dealt as
  the server deals them, game/assignment.py: every block of 8 holds each arm once in each order);
- dropout: after each block but the last a participant leaves with probability logistic(logit(dropout) - z), z
  their skill in SDs: weaker players leave more, and clusters become unequal;
- uneven effects: explanations pull each player toward the mean (log-odds -UNEVEN x (skill - mean skill)), zero on
  average;
- at will: each game has a set difficulty; the player buys explanations with a log-odds that grows with their
  skill (`buy_skill` per logit) or the game's difficulty (`buy_difficulty` per SD), and players differ in how much
  they buy; `unequal`: 3-20 games a participant; `offer`: a seeded balanced half of each participant's games offer
  explanations (game/offer.py), the others do not.
Under a lift, showing (controlled) or using (at will) explanations adds `lift` to the mean participant's win
probability: a log-odds shift of logit(p + lift) - logit(p) at p = the mean win rate, the same for everyone.
These are assumptions of a simulation, never findings.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.stats

from game.assignment import slots
from game.study import KINDS, arm_modes, is_sham

CONTROLLED, AT_WILL = KINDS
SKILL_SD = 1.5                 # log-odds: a participant 1 SD above the mean wins ~82% where the mean one wins 50%
BASE_LOG_ODDS = 0.5            # the mean participant wins ~62% (the paper: 61-65% without explanations)
POINTS = 10                    # a game's score: the points left, won games only (game/rules.py's shape)
UNEVEN = 0.5                   # uneven effects: log-odds toward the mean per logit of skill away from it
DIFFICULTY = 0.7               # at will: log-odds lost per SD of set difficulty
MAX_REFILLS = 5                # a slot is dealt again at most this often


@dataclass(frozen=True)
class Crowd:
    kind: str = CONTROLLED
    arms: tuple[str, ...] = ("none", "attention", "relqa", "both")
    order: str = "abab"                # controlled: abab | baba | counterbalanced
    sessions: int = 4
    games_per_session: int = 5         # at will: games = sessions x games_per_session (unless unequal)
    skill_sd: float = SKILL_SD
    base_log_odds: float = BASE_LOG_ODDS
    practice: float = 0.0
    dropout: float = 0.0               # leave probability after a block, at mean skill (0: nobody leaves)
    uneven: bool = False
    unequal: bool = False
    buy_skill: float = 0.0
    buy_difficulty: float = 0.0
    offer: bool = False
    carryover: float = 0.0             # controlled: log-odds on every game after the first block with real explanations
    outcome_dropout: float = 0.0       # controlled: leave after a block with explanations, this x the share lost
    refills: bool = False              # controlled: a slot whose holder left is dealt again to a newcomer
    offer_direct: float = 0.0          # at will: log-odds the offer itself adds to an offered game, used or not


def icc_skill_sd(icc: float) -> float:
    """The skill SD (log-odds) whose latent intra-participant correlation is `icc` (logistic residual pi^2/3)."""
    if not 0 <= icc < 1:
        raise ValueError(f"the intra-participant correlation must be in [0, 1), got {icc}")
    return math.sqrt(icc / (1 - icc) * math.pi ** 2 / 3)


def _logistic(x):
    return 1 / (1 + np.exp(-x))


def shift(lift: float, base_log_odds: float = BASE_LOG_ODDS) -> float:
    """The log-odds shift that adds `lift` to the mean participant's win probability."""
    p = float(_logistic(base_log_odds))
    if not -p < lift < 1 - p:
        raise ValueError(f"a lift of {lift:+.2f} takes the mean participant's win probability {p:.2f} out of (0, 1)")
    return 0.0 if lift == 0 else float(np.log((p + lift) / (1 - p - lift)) - base_log_odds)


def _score(rng: np.random.Generator, won: np.ndarray) -> np.ndarray:
    return won * rng.integers(1, POINTS + 1, len(won))


def _shows(arm: str) -> tuple[float, float]:
    """(the arm shows explanations, they are a sham) for an arm name (an unknown one shows real ones)."""
    try:
        return float(bool(arm_modes(arm))), float(is_sham(arm))
    except ValueError:
        return 1.0, 0.0


def crowd_study(rng: np.random.Generator, crowd: Crowd, participants: int, lift: float = 0.0) -> pd.DataFrame:
    """One simulated study's finished games, as experiments/analysis/frames.py derives them."""
    if crowd.kind == AT_WILL:
        return _at_will(rng, crowd, participants, lift)
    return _controlled(rng, crowd, participants, lift)


def _controlled(rng: np.random.Generator, crowd: Crowd, participants: int, lift: float) -> pd.DataFrame:
    if crowd.order == "counterbalanced":
        dealt = slots(int(rng.integers(2**31)), crowd.arms, "counterbalanced", participants)
        arms, orders = np.array([d.arm for d in dealt]), np.array([d.order for d in dealt])
    else:
        arms = np.concatenate([rng.permutation(crowd.arms)
                               for _ in range(-(-participants // len(crowd.arms)))])[:participants]
        orders = np.full(participants, crowd.order)
    holders = [_holders(rng, crowd, arms, orders, np.arange(participants), lift)]
    if crowd.refills:                        # a left slot is dealt again (game/assignment.py), a few times at most
        for _ in range(MAX_REFILLS):
            left = holders[-1].groupby("slot")["left"].first()
            left = left[left].index.to_numpy(int)
            if not len(left):
                break
            holders.append(_holders(rng, crowd, arms[left], orders[left], left, lift, holder=len(holders)))
    games = pd.concat(holders, ignore_index=True).drop(columns=["left", "slot"])
    games["game_id"] = [f"g{i}" for i in range(len(games))]
    return games


def _mean_win(crowd: Crowd) -> float:
    """The crowd's mean win probability in block 1 without explanations (over its skill distribution)."""
    quantiles = scipy.stats.norm.ppf((np.arange(2000) + 0.5) / 2000)
    return float(np.mean(_logistic(crowd.base_log_odds + crowd.skill_sd * quantiles)))


def _holders(rng: np.random.Generator, crowd: Crowd, arms: np.ndarray, orders: np.ndarray, units: np.ndarray,
             lift: float, holder: int = 0) -> pd.DataFrame:
    """The games of one holder of each of these slots (arm, order, unit): block by block, each leaving as the
    crowd's dropout says (skill-linked before the block, outcome-linked after a block with explanations)."""
    n = len(units)
    skills = crowd.base_log_odds + rng.normal(0.0, crowd.skill_sd, n)
    z = (skills - crowd.base_log_odds) / crowd.skill_sd if crowd.skill_sd else np.zeros(n)
    effect = np.full(n, shift(lift, crowd.base_log_odds))
    # uneven: a win-probability change toward the mean, zero on average over the participants (the estimand's scale)
    uneven = -UNEVEN * (_logistic(skills) - _mean_win(crowd)) if crowd.uneven else np.zeros(n)
    kinds = {a: _shows(a) for a in crowd.arms}
    expl_arm = np.array([kinds[a][0] for a in arms])
    sham_arm = np.array([kinds[a][1] for a in arms])
    present, learned, frames = np.ones(n, bool), np.zeros(n), []
    for block in range(1, crowd.sessions + 1):
        if block > 1 and crowd.dropout:      # skill-linked: weaker players leave more
            present &= rng.random(n) >= _logistic(np.log(crowd.dropout / (1 - crowd.dropout)) - z)
        shows = (((block % 2 == 0) != (orders == "baba")) & (expl_arm == 1)).astype(float)
        real = shows * (1 - sham_arm)                           # a sham shows explanations that do nothing
        log_odds = skills + crowd.practice * (block - 1) + effect * real + crowd.carryover * learned
        p = np.clip(_logistic(log_odds) + uneven * real, 0.0, 1.0)[:, None]
        won = (rng.random((n, crowd.games_per_session)) < p).astype(float)
        here = np.flatnonzero(present)
        frames.append(pd.DataFrame({"who": np.repeat(here, crowd.games_per_session), "block": float(block),
                                    "shows": np.repeat(shows[here], crowd.games_per_session),
                                    "won": won[here].ravel()}))
        if crowd.outcome_dropout and block < crowd.sessions:   # leave after losing in an explanation block
            lost = 1 - won.mean(axis=1)
            present &= ~((shows == 1) & (rng.random(n) < crowd.outcome_dropout * lost))
        learned = np.maximum(learned, real)
    games = pd.concat(frames, ignore_index=True)
    who = games["who"].to_numpy()
    games = games.assign(study="simulated", kind=CONTROLLED, cluster=[f"p{units[i]}.{holder}" for i in who],
                         slot=units[who], unit=[f"slot {units[i]}" for i in who], first_holder=float(holder == 0), arm=arms[who],
                         order=orders[who], expl_arm=expl_arm[who], sham=sham_arm[who],
                         score=_score(rng, games["won"].to_numpy()), left=~present[who])
    games["starts_with"] = (games["order"] == "baba").astype(float)
    return games.drop(columns="who").sort_values(["cluster", "block"], kind="stable")


def _at_will(rng: np.random.Generator, crowd: Crowd, participants: int, lift: float) -> pd.DataFrame:
    games = crowd.sessions * crowd.games_per_session
    counts = rng.integers(3, 21, participants) if crowd.unequal else np.full(participants, games)
    who = np.repeat(np.arange(participants), counts)
    play = np.concatenate([np.arange(1, c + 1) for c in counts]).astype(float)
    skills = crowd.base_log_odds + rng.normal(0.0, crowd.skill_sd, participants)
    difficulty = rng.normal(0.0, 1.0, len(who))
    propensity = rng.normal(0.0, 1.0, participants)            # players differ in how much they buy
    buys = rng.random(len(who)) < _logistic(propensity[who] + crowd.buy_skill * (skills[who] - crowd.base_log_odds)
                                            + crowd.buy_difficulty * difficulty)
    offered = np.full(len(who), np.nan)
    if crowd.offer:                                             # a balanced half of each one's games, as game/offer.py
        offered = np.concatenate([rng.permutation(np.arange(c) < (c + rng.integers(2)) // 2) for c in counts])
        offered = offered.astype(float)
        buys = buys & (offered == 1)
    used = buys.astype(float)
    log_odds = (skills[who] - DIFFICULTY * difficulty + crowd.practice / 10 * (play - 1)
                + shift(lift, crowd.base_log_odds) * used + crowd.offer_direct * np.nan_to_num(offered))
    won = (rng.random(len(who)) < _logistic(log_odds)).astype(float)
    return pd.DataFrame({"study": "simulated", "kind": AT_WILL, "cluster": [f"p{i}" for i in who], "arm": "both",
                         "block": np.nan, "shows": used, "expl_arm": 1.0, "sham": 0.0, "won": won,
                         "score": _score(rng, won), "used": used, "play": play, "started": play,
                         "difficulty": difficulty, "offered": offered,
                         "game_id": [f"g{i}" for i in range(len(who))]})


def report_tests(games: pd.DataFrame) -> list[dict]:
    """The tests the report prints about one simulated study (experiments/analysis/claims.py listed_tests of its
    controlled or at-will section), each with its claim."""
    from experiments.analysis.at_will import at_will
    from experiments.analysis.claims import listed_tests
    from experiments.analysis.controlled import controlled
    from experiments.analysis.frames import Frames

    empty = pd.DataFrame()
    frames = Frames(games=games, ratings=empty, items=empty, rater=empty, rounds=empty,
                    kinds={games["study"].iloc[0]: games["kind"].iloc[0]})
    if games["kind"].iloc[0] == AT_WILL:
        return listed_tests({"at_will": at_will(frames)})
    return listed_tests({"controlled": controlled(frames)})


def one_thread() -> None:
    """A worker process's BLAS pools at one thread each, so N processes on N cores do not oversubscribe them."""
    from threadpoolctl import threadpool_limits
    threadpool_limits(1)
