"""Counterbalanced order in the analysis: frames read each participant's order (old exports as abab), the
with-blocks follow it, a counterbalanced study's report gives the order effect and the with-vs-without
effect net of it, an all-abab study's report says the two are confounded, and the balance of arms over
arrival time is tested."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from experiments.analysis import Tables, analyze
from experiments.analysis.controlled import controlled
from experiments.analysis.design import balance
from experiments.analysis.frames import CONTROLLED, Frames, build_frames
from experiments.analysis.html import table1
from game.assignment import slots

ARMS = ("none", "attention", "relqa", "both")
SESSIONS, GAMES_PER_SESSION = 4, 5
LIFT = 1.0          # log-odds a game with explanations adds
PRACTICE = 0.4      # log-odds each later block adds
CARRYOVER = 0.8     # log-odds every game of a participant who started with explanations adds


def study(participants: int, order: str, seed: int = 11) -> pd.DataFrame:
    """Finished games as frames.py derives them: arms and orders from the real assignment (game/assignment.py),
    wins from skill, practice, explanations and, for those who start with explanations, a carryover."""
    rng = np.random.default_rng(seed)
    rows = []
    for k, dealt in enumerate(slots(seed, ARMS, order, participants)):
        skill = rng.normal(0.0, 0.5)
        for number in range(SESSIONS * GAMES_PER_SESSION):
            block = number // GAMES_PER_SESSION + 1
            baba = dealt.order == "baba"
            shows = float(dealt.arm != "none" and (block % 2 == 1) == baba)
            log_odds = -0.8 + skill + PRACTICE * (block - 1) + LIFT * shows + CARRYOVER * baba
            won = float(rng.random() < 1 / (1 + np.exp(-log_odds)))
            rows.append({"study": "s", "kind": CONTROLLED, "cluster": f"p{k}", "arm": dealt.arm, "order": dealt.order,
                         "block": float(block), "shows": shows, "expl_arm": float(dealt.arm != "none"), "sham": 0.0,
                         "won": won, "score": 5 * won, "game_id": f"p{k}-{number}"})
    return pd.DataFrame(rows)


def frames_of(games: pd.DataFrame) -> Frames:
    empty = games.iloc[:0]
    return Frames(games=games, ratings=empty, items=empty, rater=empty, rounds=empty, kinds={"s": CONTROLLED})


def test_a_counterbalanced_study_reports_the_order_effect_and_explanations_net_of_it():
    section = controlled(frames_of(study(96, "counterbalanced")))
    order = section["order"]
    assert order["confounded"] is False and order["participants_by_order"] == {"abab": 36, "baba": 36}
    assert order["with_vs_without"]["odds_ratio"] > 1.5 and order["with_vs_without"]["p_value"] < 0.05
    assert order["order_effect"]["odds_ratio"] > 1.5 and order["order_effect"]["p_value"] < 0.05
    assert order["with_vs_without"]["method"].startswith("odds ratio and its CI: GEE")
    assert "wild cluster bootstrap" in order["with_vs_without"]["method"]
    assert order["interaction"]["odds_ratio"] is not None
    # practice adds to the with - without difference of those who start without and takes from the others
    difference = order["win_rate_difference"]
    assert difference["abab"] > difference["mean_of_orders"] > difference["baba"]
    html = table1(section)
    assert "Order as a factor" in html and "confounded" not in html
    # the group baseline is block 1 of those who start without explanations
    rows = {r["mode"]: r for r in section["table1"]}
    assert rows["overall_inc_none"]["group_baseline"]["n_games"] == 48 * GAMES_PER_SESSION
    assert {b["order"] for b in section["by_block"]} == {"abab", "baba"}


def test_an_abab_study_says_order_and_explanations_are_confounded():
    section = controlled(frames_of(study(24, "abab")))
    order = section["order"]
    assert order["confounded"] is True and "with_vs_without" not in order
    assert "order and explanations are confounded" in order["statement"]
    assert "practice and explanations cannot be separated" in order["statement"]
    assert "Order and explanations are confounded" in table1(section)


def games_table(orders: dict[str, str | None]) -> pd.DataFrame:
    """Two participants per order, arms both and none, 4 sessions of 1 game, every game won in block 1."""
    rows = []
    for participant, order in orders.items():
        arm = "none" if participant.startswith("n") else "both"
        for number in range(4):
            shown = arm == "both" and (number % 2 == 0) == (order == "baba")
            rows.append({"game_id": f"{participant}-{number}", "study": "s", "participant": participant, "arm": arm,
                         "game_number": number, "session": number, "setting": "controlled",
                         "with_explanations": shown, "score": 5.0 if number == 0 else 0.0, "won": number == 0,
                         "started": float(number), **({"order": order} if order is not None else {})})
    return pd.DataFrame(rows)


def test_frames_follow_each_participants_order_and_read_old_exports_as_abab():
    games = games_table({"b1": "baba", "b2": "abab", "n1": "baba", "n2": "abab"})
    frames, _ = build_frames(Tables.from_frames({"games": games}, "test"))
    shows = frames.games.set_index("game_id")["shows"]
    assert [shows[f"b1-{n}"] for n in range(4)] == [1.0, 0.0, 1.0, 0.0]
    assert [shows[f"b2-{n}"] for n in range(4)] == [0.0, 1.0, 0.0, 1.0]
    rows = {r["mode"]: r for r in controlled(frames)["table1"]}
    assert rows["both"]["group_baseline"]["n_games"] == 1          # block 1 of b2 only: b1 starts with
    assert rows["overall_inc_none"]["no_expl"]["n_games"] == 8     # each participant's two other blocks
    group = controlled(frames)["control_group"]                    # n1's would-be with-blocks are 1 and 3
    assert group["even_blocks"]["n_games"] == 4 and group["even_blocks"]["win_rate"] == pytest.approx(0.25)
    old = games_table({"b1": None, "n1": None})          # an export from before orders: no column
    frames, _ = build_frames(Tables.from_frames({"games": old}, "old export"))
    assert set(frames.games["order"]) == {"abab"}
    assert list(frames.games.sort_values("game_id")["shows"])[:4] == [0.0, 1.0, 0.0, 1.0]


def test_balance_of_arms_over_arrival_time():
    dealt = slots(5, ARMS, "counterbalanced", 200)
    participants = pd.DataFrame({"study": "s", "participant": [f"p{k}" for k in range(200)],
                                 "arm": [s.arm for s in dealt], "order": [s.order for s in dealt],
                                 "joined": np.arange(200.0)})
    found = balance(participants)["s"]
    assert found["p_value"] > 0.05 and found["dof"] == 9
    assert sum(found["counts"]["none"]) == 50 and max(found["counts"]["none"]) - min(found["counts"]["none"]) <= 2
    assert found["by_order"]["both"] == {"abab": 25, "baba": 25}
    drifting = participants.assign(arm=["none"] * 100 + ["both"] * 100)     # arms that follow arrival time
    assert balance(drifting)["s"]["p_value"] < 1e-6
    assert "missing" in balance(pd.DataFrame())


def test_the_report_carries_the_balance_and_the_order():
    games = games_table({f"b{i}": "baba" if i % 2 else "abab" for i in range(4)})
    participants = pd.DataFrame({"study": "s", "participant": [f"b{i}" for i in range(4)], "arm": "both",
                                 "order": ["abab", "baba"] * 2, "joined": [1.0, 2.0, 3.0, 4.0], "flags": ""})
    report = analyze(Tables.from_frames({"games": games, "participants": participants}, "test"))
    assert report["design"]["balance"]["s"]["n_participants"] == 4
    assert report["controlled"]["order"]["participants_by_order"] == {"abab": 2, "baba": 2}
