"""The benchmark card end to end on the tiny agent and world: every explainer gets every measure that
applies to its kind, the card, its table and its plots are written, `exag bench card` runs it, and
`exag analyze --bench` reads it."""
from __future__ import annotations

import json

import pytest

from experiments.benchmark.card import APPLIES, MEASURES, bench_card, markdown, write_card
from experiments.benchmark.items import explain, load_items, rounds


@pytest.fixture(scope="module")
def card(agent_world, tiny_agent_dir, tiny_nle_dir, tmp_path_factory):
    options = {"relqa": {"min_bank": 50, "cache_dir": tmp_path_factory.mktemp("relqa_cache")}}
    return bench_card(str(tiny_agent_dir), agent_world, max_items=8, nle_model=tiny_nle_dir, progress=False,
                      log=lambda message: None, options=options)


def test_items_come_with_their_scene_masks_and_references(agent_world):
    items = load_items(agent_world, max_items=5, seed=1)
    assert len(items) == 5 and items == sorted(items, key=lambda it: it.index)
    for it in items:
        assert it.image.shape[:2] == it.masks.shape and it.masks.max() == len(it.scene.objects) - 1
        assert it.references and it.program[-1]["function"]
    assert [it.index for it in load_items(agent_world, max_items=5, seed=1)] == [it.index for it in items]
    members = rounds(items, 3)
    assert all(m[0] == i and len({items[j].image_filename for j in m}) == len(m) for i, m in enumerate(members))
    same_image = [items[0], items[0], items[1]]          # two questions about one image: one image per round
    assert rounds(same_image, 3) == [[0, 2], [1, 2], [2, 0]]
    with pytest.raises(ValueError, match="at least 1"):
        load_items(agent_world, max_items=0)


def test_shams_are_explained_inside_their_round(agent_world, tiny_agent_dir):
    from explainers import load_explainer
    from explainers.sham import ShuffledAttentionExplainer
    from vqa_agent.agent import VQAAgent
    agent = VQAAgent.from_pretrained(tiny_agent_dir)
    items = load_items(agent_world, max_items=4, seed=2)
    outputs = agent.answer([it.image for it in items], [it.question for it in items])
    real = load_explainer("attention", agent)
    sham = ShuffledAttentionExplainer(agent, explainer=real)
    shown = explain(sham, items, outputs, agent)
    own = explain(real, items, outputs)
    assert len(shown) == len(items) and all(e.explainer == "attention-shuffled" for e in shown)
    assert all(s.payload["grid"] != o.payload["grid"] for s, o in zip(shown, own))
    with pytest.raises(ValueError, match="pass the agent"):
        explain(sham, items, outputs)


def test_every_explainer_gets_the_measures_of_its_kind(card, tmp_path):
    from explainers import EXPLAINER_NAMES
    assert not card["unavailable"], card["unavailable"]
    assert list(card["explainers"]) == list(EXPLAINER_NAMES)
    assert card["agent"]["n"] == 8 and 0 <= card["agent"]["accuracy"] <= 100
    assert card["agent"]["latency"]["single_p50_ms"] > 0
    for name, entry in card["explainers"].items():
        for measure in MEASURES:
            applies = measure in APPLIES[entry["kind"]]
            assert ("not_applicable" not in entry[measure]) == applies, (name, measure)
    written = write_card(card, tmp_path)
    assert json.loads((tmp_path / "card.json").read_text())["explainers"].keys() == card["explainers"].keys()
    table = (tmp_path / "card.md").read_text()
    assert all(f"| {name} |" in table for name in card["explainers"]) and table == markdown(card)
    assert {p.name for p in written} >= {"card.json", "card.md", "f1_at_t.png", "faithfulness.png"}
    # text explainers: states / contradicts the answer per answer type, and the check's own error rates
    nle = card["explainers"]["nle"]["contradictions"]
    assert nle["overall"]["n"] == 8 and nle["checker"]["false_alarm_rate"] <= 0.01
    assert "## nle: does the explanation state the answer it explains?" in table


def test_exag_bench_card_and_analyze_read_it(agent_world, tiny_agent_dir, tiny_nle_dir, tmp_path):
    from cli import exag

    out = tmp_path / "card"
    result = exag("bench", "card", "--agent", tiny_agent_dir, "--world", agent_world, "--out", out,
                  "--max-items", "3", "--explainers", "attention,objscene", "--threads", "1")
    assert result.returncode == 0, result.stderr[-2000:]
    card = json.loads((out / "card.json").read_text())
    assert list(card["explainers"]) == ["attention", "objscene"]
    assert "| attention |" in result.stdout
    from experiments.analysis.benchmarks import read_bench
    bench = read_bench(out)
    assert bench["files"] == [{"file": "card.json", "kind": "card"}]
    assert "relevance mass" in bench["explainers"]["attention"][str(tiny_agent_dir)]["card"]
