"""Explainers: plugins that turn an agent's output into an explanation a player can see.

EXPLAINERS maps each name to its class; the frontend draws each explanation by its `kind`.
"""
from __future__ import annotations

from vqa_agent.agent import VQAAgent

from .attention import AttentionExplainer
from .base import Explainer, Explanation, ExplanationRequest
from .introspect import IntrospectExplainer
from .nle import NLEExplainer
from .objscene import ObjSceneExplainer
from .relqa import RelQAExplainer

EXPLAINERS: dict[str, type[Explainer]] = {
    "attention": AttentionExplainer,
    "objscene": ObjSceneExplainer,
    "relqa": RelQAExplainer,
    "nle": NLEExplainer,
    "introspect": IntrospectExplainer,
}


def load_explainer(name: str, agent: VQAAgent, **options) -> Explainer:
    if name not in EXPLAINERS:
        raise ValueError(f"unknown explainer {name!r}; choose from {', '.join(EXPLAINERS)}")
    return EXPLAINERS[name](agent, **options)


__all__ = ["EXPLAINERS", "Explainer", "Explanation", "ExplanationRequest", "load_explainer"]
