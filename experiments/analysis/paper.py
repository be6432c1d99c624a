"""The paper's published numbers (Ray et al., HCOMP 2019; docs/research.md §1), to show beside ours.
Rates are fractions, as everywhere in the report."""
from __future__ import annotations


def _cell(score: float, win_percent: float) -> dict:
    return {"score": score, "win_rate": win_percent / 100}


def _row(mode: str, with_expl, no_expl, baseline, improvement, p: float) -> dict:
    """`improvement_paper`: the paper's "Overall Improv" column, with expl minus the overall_inc_none row's group
    baseline (the key of the same number in our Table 1 rows, controlled.py)."""
    return {"mode": mode, "with_expl": _cell(*with_expl), "no_expl": _cell(*no_expl),
            "group_baseline": _cell(*baseline), "improvement_paper": _cell(*improvement), "p_value": p}


PAPER = {
    "source": "Ray et al., HCOMP 2019: ExAG, Explanation-assisted GuessWhich (docs/research.md §1)",
    "controlled": {"n_participants": 69, "n_games": 1469, "table1": [
        _row("attention", (6.23, 66.67), (6.00, 64.92), (5.66, 62.10), (0.66, 5.52), 0.1),
        _row("relqa", (6.80, 71.48), (6.03, 64.54), (6.02, 65.45), (1.23, 10.33), 0.0019),
        _row("both", (6.44, 69.03), (5.83, 63.25), (5.68, 63.75), (0.87, 7.88), 0.03),
        _row("overall", (6.52, 69.29), (5.97, 64.30), (5.81, 63.85), (0.95, 8.14), 0.0015),
        _row("overall_inc_none", (6.52, 69.29), (5.74, 61.85), (5.57, 61.15), (0.95, 8.14), 0.0015)]},
    "at_will": {"n_games": 206, "win_rate": 0.43,
                "explanations_used": {"with": {"n_games": 157, "win_rate": 0.47},
                                      "without": {"n_games": 49, "win_rate": 0.28}, "p_value": 0.019},
                "adoption": {"first_half": {"n_games": 103, "share": 0.612},
                             "second_half": {"n_games": 103, "share": 0.913}, "p_value": 1e-5,
                             "p_value_is_bound": True}},
    "answer_correctness": {"p_value": 0.013},
    "correlations": {"relqa": 0.37, "attention": 0.33},
    # the paper's figures name the helpfulness scale's points by short names of their own, best first; the
    # report's figures use the players' words (game/settings.py RATINGS) and say this once (Fig. 6's caption)
    "rating_names": ("Excellent", "Mostly Good", "Somewhat", "Not Much", "Confusing"),
}
