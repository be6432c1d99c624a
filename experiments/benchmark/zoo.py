"""The zoo table: the headline scores of several agents' benchmark cards side by side, one row per agent,
each real explainer's score beside its sham's (in parentheses), so a reader sees at a glance whether the
ordering of the measures holds from the weakest agent to the strongest.

    exag bench zoo results/card_weak results/card_medium results/card_strong [--out results/zoo.md]

It only reads `card.json` files that `exag bench card` wrote; nothing is recomputed.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from explainers.registry import sham_of

from .card import score_at

# (header, explainer, beside its sham?, path into the explainer's entry); scores in percent. The sham of an
# explainer is the table's (explainers/registry.py sham_of).
ZOO_COLUMNS = [
    ("attention relevance mass", "attention", True, ("localisation", "relevance_mass")),
    ("attention pointing game", "attention", True, ("localisation", "pointing_game")),
    ("attention moved with the edit", "attention", True, ("faithfulness", "counterfactual_image", "pct_moved")),
    ("NLE S_E / S_O facts", "nle", True, ("e_vil", "s_e_ground_truth"), ("e_vil", "s_o_ground_truth")),
    ("NLE image CF %Counter Unfaith", "nle", True, ("faithfulness", "counterfactual_image", "pct_counter_unfaith")),
    ("NLE reconstruction %Unfaith", "nle", True, ("faithfulness", "input_reconstruction", "pct_unfaithful")),
    ("NLE text CF %Total Unfaith", "nle", True, ("faithfulness", "counterfactual_text", "pct_total_unfaith")),
    ("NLE F1@0.6", "nle", False, ("f1_at_es", "f1_at", "0.6")),
    ("introspect S_O facts", "introspect", False, ("e_vil", "s_o_ground_truth")),
    ("RelQA answers right", "relqa", False, ("word_checks", "accuracy")),
]


def read_card(directory: Path) -> dict:
    path = Path(directory) / "card.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: run `exag bench card --out {directory}` first")
    card = json.loads(path.read_text())
    if "agent" not in card or "explainers" not in card:
        raise ValueError(f"{path} is not a benchmark card (no 'agent' or 'explainers')")
    return card


def _score(card: dict, explainer: str | None, paths) -> str:
    if explainer is None or explainer not in card["explainers"]:
        return ""
    values = [score_at(card["explainers"][explainer], *p) for p in paths]
    return " / ".join("–" if v is None else f"{v:.1f}" for v in values)


def zoo_markdown(cards: list[dict]) -> str:
    """One row per card: the agent's accuracy and the card's time, then each column's real score and, where
    the column has a sham, the sham's score in parentheses."""
    header = ["agent", "accuracy", "card minutes"] + [c[0] + (" (sham)" if c[2] else "") for c in ZOO_COLUMNS]
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for card in cards:
        cells = [f"`{card['agent']['name']}`", f"{card['agent']['accuracy']:.1f}", f"{card['seconds'] / 60:.1f}"]
        for _, real, with_sham, *paths in ZOO_COLUMNS:
            sham = sham_of(real) if with_sham else None
            score, sham_score = _score(card, real, paths), _score(card, sham, paths)
            cells.append(f"{score} ({sham_score})" if sham_score else score)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cards", nargs="+", type=Path, help="directories written by `exag bench card`")
    parser.add_argument("--out", type=Path, default=None, help="also write the table to this markdown file")
    args = parser.parse_args(argv)
    table = zoo_markdown([read_card(d) for d in args.cards])
    print(table, end="")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(table)
        print(f"wrote {args.out}")
    return 0
