"""Explainers: plugins that turn an agent's output into an explanation a player can see.

EXPLAINERS maps each name to its class; the frontend draws each explanation by its `kind`.
EXPLAINER_NAMES lists the same names without importing any explainer (nor torch): a web process, which
runs no model, checks studies with it; the classes are imported on first use of EXPLAINERS.
"""
from __future__ import annotations

import importlib

# name -> (module, class); EXPLAINERS is built from this, in this order
_CLASSES = {
    "attention": (".attention", "AttentionExplainer"),
    "objscene": (".objscene", "ObjSceneExplainer"),
    "relqa": (".relqa", "RelQAExplainer"),
    "nle": (".nle", "NLEExplainer"),
    "introspect": (".introspect", "IntrospectExplainer"),
    # shams (sanity checks): a real explainer's output for another image of the round; after the explainers
    # they imitate, which the server loads first and shares with them
    "attention-shuffled": (".sham", "ShuffledAttentionExplainer"),
    "nle-other": (".sham", "OtherNLEExplainer"),
}
EXPLAINER_NAMES: tuple[str, ...] = tuple(_CLASSES)
_BASE = ("Explainer", "Explanation", "ExplanationRequest")


def __getattr__(name: str):
    """EXPLAINERS, load_explainer and the base classes, imported (with torch) on first use."""
    if name == "EXPLAINERS":
        value = {n: getattr(importlib.import_module(m, __name__), c) for n, (m, c) in _CLASSES.items()}
    elif name == "load_explainer":
        value = _load_explainer
    elif name in _BASE:
        value = getattr(importlib.import_module(".base", __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def _load_explainer(name: str, agent, **options):
    if name not in _CLASSES:
        raise ValueError(f"unknown explainer {name!r}; choose from {', '.join(EXPLAINER_NAMES)}")
    return __getattr__("EXPLAINERS")[name](agent, **options)


__all__ = ["EXPLAINERS", "EXPLAINER_NAMES", "Explainer", "Explanation", "ExplanationRequest", "load_explainer"]
