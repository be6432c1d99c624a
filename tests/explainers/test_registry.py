"""The explainer table is the one source: each built-in row agrees with its class, every kind has its
module and its renderer, shams are found by lookup, and explainers use the agent only through the Agent
protocol (and declare the capabilities they use)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from explainers import EXPLAINERS, registry
from explainers.agent_interface import CAPABILITIES, Agent, agent_capabilities
from explainers.kinds import KINDS
from explainers.plugins import check_class
from explainers.table_entry import explainer_class
from game.study import MODES, SHAM_MODES

REPO = Path(__file__).resolve().parents[2]
# explainer code that may use the agent's internals: training the NLE model is not explaining
TRAINING = {"nle_train.py"}


def test_each_row_agrees_with_its_class():
    assert list(EXPLAINERS) == list(registry.BUILTIN_NAMES) == list(MODES)
    for row in registry.BUILTIN:
        cls = explainer_class(row)
        assert (cls.name, cls.kind, getattr(cls, "imitates", "")) == (row.name, row.kind, row.imitates)
        assert set(cls.requires) <= set(CAPABILITIES)
        assert row.kind in KINDS
        if row.imitates:
            assert registry.entry(row.imitates).kind == row.kind and not row.label
        else:
            assert row.label and row.description
            check_class(cls)                       # the built-ins keep the contract plugins are held to
    assert SHAM_MODES == registry.SHAM_NAMES == ("attention-shuffled", "nle-other")
    assert registry.sham_of("attention") == "attention-shuffled" and registry.sham_of("relqa") is None


def test_every_kind_has_its_renderer():
    index = (REPO / "frontend/js/explanations/index.js").read_text()
    renderers = re.search(r"RENDERERS = \{([^}]*)\}", index).group(1)
    for kind in KINDS:
        assert (REPO / f"frontend/js/explanations/{kind}.js").exists(), kind
        assert re.search(rf"\b{kind}\b", renderers), kind
    assert "SHAMS" not in index and "attention-shuffled" not in index, "the page learns shams from the server's table"


def test_the_page_table_shows_a_sham_as_what_it_imitates():
    table = registry.page_table(["attention", "attention-shuffled", "nle-other", "telepathy"])
    assert table["attention-shuffled"] == table["attention"] and set(table) == {"attention", "attention-shuffled",
                                                                                 "nle-other"}
    assert table["nle-other"]["label"] == registry.entry("nle").label


def test_the_agent_keeps_the_protocol(tiny_agent_dir):
    from vqa_agent.agent import VQAAgent
    agent = VQAAgent.from_pretrained(tiny_agent_dir)
    assert isinstance(agent, Agent) and agent_capabilities(agent) == set(CAPABILITIES)
    assert agent.question_dim == agent.embed_texts(["is there a cube?"]).shape[1]
    assert agent.fingerprint() == VQAAgent.from_pretrained(tiny_agent_dir).fingerprint()


@pytest.mark.parametrize("path", sorted(p.name for p in (REPO / "explainers").glob("*.py")))
def test_explainers_use_the_agent_only_through_the_protocol(path):
    if path in TRAINING:
        return
    source = (REPO / "explainers" / path).read_text()
    reached = re.findall(r"\bagent\.(model|config|vocabulary|tokenizer|_\w+)\b", source)
    assert not reached, f"explainers/{path} reaches past the Agent protocol: agent.{reached[0]}"
