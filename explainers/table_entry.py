"""A row of the explainer table: an explainer's name, its class ("module:Class"), its kind, label and the
instructions' line, and for a sham what it imitates; and the class a row names, imported only when asked.

The table is explainers/registry.py: its built-in rows are written there, a third-party explainer's row is made
by explainers/plugins.py from its class. Both import this module; it imports neither. Torch-free.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    name: str                 # how studies, rounds, events and the page name it
    target: str               # its class, "module:Class"
    kind: str                 # how its payload looks and is drawn (explainers/kinds/)
    label: str = ""           # the page's heading above its explanations
    description: str = ""     # the instructions' line about it
    imitates: str = ""        # a sham: the explainer whose output for another image of the round it shows
    plugin: bool = False      # a third-party explainer (explainers/plugins.py), not a built-in


def explainer_class(row: Entry) -> type:
    """The class `row.target` names, its module imported now."""
    module, _, attribute = row.target.partition(":")
    value = importlib.import_module(module)
    for part in attribute.split("."):
        value = getattr(value, part)
    return value
