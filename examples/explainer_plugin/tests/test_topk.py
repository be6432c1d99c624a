"""The plugin's own tests: it keeps ExAG's explainer contract, says what it should, and ExAG finds it by
import path (and, once the package is installed, by its entry point "topk")."""
from __future__ import annotations

from importlib import metadata

import numpy as np
import pytest

from exag_topk.explainer import TopKExplainer, sentence
from explainers import plugins, registry
from explainers.base import Explanation, ExplanationRequest
from explainers.kinds import check_payload, for_player
from explainers.plugins import check_class
from vqa_agent.agent import AgentOutput


def output(answer: str, probability: float, top_k) -> AgentOutput:
    """An agent's output as the agent makes it; this explainer reads only the answer and top_k."""
    return AgentOutput(question="what color is the cube?", answer=answer, probability=probability, top_k=top_k,
                       spatial_attention=np.full((2, 2), 0.25), proposals=[], concept_probabilities={},
                       question_embedding=np.zeros(4, np.float32))


class NoAgent:
    """This explainer never calls its agent; the contract's constructor still takes one."""


def test_the_sentence_names_the_alternatives():
    assert sentence("red", 0.62, [("red", 0.62), ("blue", 0.21), ("green", 0.09), ("gray", 0.004)]) == \
        "I answered red (62%); I also considered blue (21%) and green (9%)."
    assert sentence("yes", 0.999, [("yes", 0.999), ("no", 0.001)]) == \
        "I answered yes (100%) and considered nothing else."
    assert sentence("2", 0.5, [("2", 0.5), ("3", 0.3), ("1", 0.1), ("4", 0.05)], k=1) == \
        "I answered 2 (50%); I also considered 3 (30%)."


def test_it_keeps_the_contract():
    check_class(TopKExplainer)                       # raises with the reason if it did not
    explainer = TopKExplainer(NoAgent(), k=2)
    requests = [ExplanationRequest(None, "what color is the cube?", output("red", 0.7, [("red", 0.7), ("blue", 0.2)]))]
    [explanation] = explainer.explain_batch(requests)
    assert isinstance(explanation, Explanation) and (explanation.explainer, explanation.kind) == ("topk", "text")
    check_payload("text", explanation.payload)
    assert for_player(explanation)["payload"] == {"text": "I answered red (70%); I also considered blue (20%)."}
    with pytest.raises(ValueError, match="k must be a positive integer"):
        TopKExplainer(NoAgent(), k=0)


def test_exag_finds_it_by_import_path_and_entry_point():
    row = registry.entry("exag_topk.explainer:TopKExplainer")
    assert (row.kind, row.label, row.plugin) == ("text", TopKExplainer.label, True)
    if not any(ep.name == "topk" for ep in metadata.entry_points(group=plugins.GROUP)):
        pytest.skip("the package is not installed (pip install examples/explainer_plugin): no entry point")
    assert registry.entry("topk").target == "exag_topk.explainer:TopKExplainer"
