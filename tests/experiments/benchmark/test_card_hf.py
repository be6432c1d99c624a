"""`exag bench card` on a transformers agent (hf:PATH, a tiny random ViLT): scored on the world's test items
like the shipped agents, its attention localised against the world's masks, the explainers it cannot
support left out with the reason, the randomisation check said not to apply, and the card saying what
ground truth each measure needs (which an imported image pool lacks)."""
from __future__ import annotations

import json

import pytest

from experiments.benchmark.card import GROUND_TRUTH, MEASURES, bench_card, markdown, write_card
from vqa_agent.hf_tiny import make_tiny_vilt


@pytest.fixture(scope="module")
def card(agent_world, tmp_path_factory):
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    vilt = make_tiny_vilt(tmp_path_factory.mktemp("card-vilt") / "vilt",
                          answers=("yes", "no", "0", "1", "2", "red", "blue", "cube", "sphere"))
    options = {"relqa": {"min_bank": 50, "cache_dir": tmp_path_factory.mktemp("relqa_cache")}}
    try:
        yield bench_card(f"hf:{vilt}", agent_world, max_items=6, progress=False, log=lambda message: None,
                         explainers=["attention", "relqa", "objscene", "nle", "attention-shuffled"], options=options)
    finally:
        torch.set_num_threads(threads)


def test_the_card_of_an_hf_agent(card, tmp_path):
    assert card["agent"]["name"].startswith("hf:") and card["agent"]["n"] == 6
    assert 0 <= card["agent"]["accuracy"] <= 100
    assert list(card["explainers"]) == ["attention", "relqa", "attention-shuffled"]
    assert "needs concepts" in card["unavailable"]["objscene"] and "proposals" in card["unavailable"]["nle"]
    attention = card["explainers"]["attention"]
    assert 0 <= attention["localisation"]["relevance_mass"] <= 100          # against the world's masks
    # the heatmap as drawn (the model's own attention: no proposals), measured for an hf: agent too; a tiny
    # random ViLT proves the plumbing only, not where a trained model looks
    drawn = attention["localisation"]["map"]["drawn"]
    assert drawn["n"] == 6 and 0 <= drawn["mass_on_objects"] <= 100 and 0 < drawn["uniform_on_objects"] < 100
    assert attention["localisation"]["map"]["relevance_mass"] == pytest.approx(attention["localisation"]["relevance_mass"])
    assert "shipped agent's network" in attention["sanity"]["not_applicable"]
    relqa = card["explainers"]["relqa"]
    assert "not_applicable" not in relqa["word_checks"] and "not_applicable" not in relqa["grading"]
    assert card["ground_truth"]["needs"] == GROUND_TRUTH and set(GROUND_TRUTH) == {"accuracy", *MEASURES}
    text = markdown(card)
    assert "Not benchmarked: objscene (the objscene explainer needs concepts" in text
    assert "Sanity not run: model parameter randomisation" in text
    assert "## Ground truth each measure needs" in text and "| localisation | the objects' instance masks |" in text
    assert "imported image pool" in text
    write_card(card, tmp_path)
    assert json.loads((tmp_path / "card.json").read_text())["ground_truth"]["pool"] == card["ground_truth"]["pool"]
