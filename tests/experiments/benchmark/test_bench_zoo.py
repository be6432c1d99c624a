"""The zoo table on hand-made cards: one row per agent, each real explainer's score beside its sham's, a
missing explainer or measure left empty, and `exag bench zoo` writes what it prints."""
from __future__ import annotations

import json

import pytest
from cli import exag

from experiments.benchmark.zoo import ZOO_COLUMNS, read_card, zoo_markdown



def _card(name: str, accuracy: float, mass: float, sham_mass: float, with_nle: bool = True) -> dict:
    explainers = {"attention": {"localisation": {"relevance_mass": mass, "pointing_game": 90.0}},
                  "attention-shuffled": {"localisation": {"relevance_mass": sham_mass, "pointing_game": 30.0}}}
    if with_nle:
        explainers["nle"] = {"e_vil": {"s_e_ground_truth": 72.0, "s_o_ground_truth": 51.0},
                             "faithfulness": {"input_reconstruction": {"pct_unfaithful": 26.9}}}
        explainers["nle-other"] = {"e_vil": {"s_e_ground_truth": 38.0, "s_o_ground_truth": None},
                                   "faithfulness": {"input_reconstruction": {"pct_unfaithful": 49.9}}}
    return {"agent": {"name": name, "accuracy": accuracy}, "seconds": 600.0, "explainers": explainers}


def _row(table: str, agent: str) -> list[str]:
    line = next(line for line in table.splitlines() if line.startswith(f"| `{agent}`"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_each_agent_is_a_row_with_the_sham_beside_the_real_explainer():
    table = zoo_markdown([_card("weak", 60.0, 74.1, 13.4), _card("strong", 93.5, 93.9, 14.1, with_nle=False)])
    header = [cell.strip() for cell in table.splitlines()[0].strip("|").split("|")]
    assert header[:3] == ["agent", "accuracy", "card minutes"] and len(header) == 3 + len(ZOO_COLUMNS)
    weak = dict(zip(header, _row(table, "weak")))
    assert weak["accuracy"] == "60.0" and weak["card minutes"] == "10.0"
    assert weak["attention relevance mass (sham)"] == "74.1 (13.4)"
    assert weak["NLE S_E / S_O facts (sham)"] == "72.0 / 51.0 (38.0 / –)"      # a missing number shows as –
    assert weak["NLE reconstruction %Unfaith (sham)"] == "26.9 (49.9)"
    assert weak["NLE F1@0.6"] == "–"                                            # the explainer, not the measure
    strong = dict(zip(header, _row(table, "strong")))
    assert strong["attention relevance mass (sham)"] == "93.9 (14.1)"
    assert strong["NLE S_E / S_O facts (sham)"] == "" and strong["RelQA answers right"] == ""


def test_read_card_says_what_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="exag bench card"):
        read_card(tmp_path)
    (tmp_path / "card.json").write_text(json.dumps({"agent": {}}))
    with pytest.raises(ValueError, match="not a benchmark card"):
        read_card(tmp_path)


def test_exag_bench_zoo_prints_and_writes_the_table(tmp_path):
    for name, accuracy in (("weak", 60.0), ("medium", 70.8)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "card.json").write_text(json.dumps(_card(name, accuracy, 80.0, 15.0)))
    out = tmp_path / "zoo.md"
    done = exag("bench", "zoo", tmp_path / "weak", tmp_path / "medium", "--out", out)
    assert done.returncode == 0, done.stderr
    assert out.read_text() in done.stdout
    assert [line.split("|")[1].strip() for line in out.read_text().splitlines()[2:]] == ["`weak`", "`medium`"]
