"""Explainers: plugins that turn an agent's output into an explanation a player can see.

The table of explainers is explainers/registry.py (name, class, kind, label, what a sham imitates); third-
party explainers join it by entry point or import path (explainers/plugins.py). What an explainer may ask
of an agent is explainers/agent_interface.py; what each kind of explanation looks like, what the player
is sent of it and how a simulated participant reads it, explainers/kinds/.

EXPLAINER_NAMES lists the built-in explainers without importing any of them (nor torch): a web process,
which runs no model, checks studies with it. EXPLAINERS maps each built-in name to its class, imported
on first use; load_explainer loads any explainer by name, third-party ones included.
"""
from __future__ import annotations

import importlib

from .registry import BUILTIN, BUILTIN_NAMES, load_explainer

EXPLAINER_NAMES: tuple[str, ...] = BUILTIN_NAMES
_BASE = ("Explainer", "Explanation", "ExplanationRequest")


def __getattr__(name: str):
    """EXPLAINERS (the built-in classes) and the base classes, imported on first use."""
    if name == "EXPLAINERS":
        from .table_entry import explainer_class
        value = {row.name: explainer_class(row) for row in BUILTIN}
    elif name in _BASE:
        value = getattr(importlib.import_module(".base", __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = ["EXPLAINERS", "EXPLAINER_NAMES", "Explainer", "Explanation", "ExplanationRequest", "load_explainer"]
