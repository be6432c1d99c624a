"""Third-party explainers: found by entry point or import path, checked against the contract, and run
with every explanation checked, so that one that breaks the contract is refused with a message that says
what to fix instead of failing somewhere in the server or on a player's page.

    [project.entry-points."exag.explainers"]          # in the plugin's pyproject.toml
    topk = "exag_topk.explainer:TopKExplainer"        # a study then names it "topk"

or a study names an installed entry point's class itself: "exag_topk.explainer:TopKExplainer"; a class no
entry point declares only when the operator allowed it: EXAG_EXPLAINERS="mymodule:MyExplainer" exag serve.
A study is admin input: any other name is refused without importing anything, and whatever an allowed
plugin's module raises as it is imported (SystemExit included) refuses the study, never the server.

The explainer table (explainers/registry.py) asks `resolve` for the row (explainers/table_entry.py) of every
name that is not a built-in, refuses one that raises NotInstalled with the names it knows, and runs a plugin
as a `CheckedExplainer`. This module never imports the table.

The class is checked when it is first named (`check_class`): a subclass of explainers.base.Explainer that
implements the verb (`payloads` or `explain_batch`), with a `name`, a `kind` the page can draw
(explainers/kinds/), capabilities from explainers/agent_interface.py in `requires`, and text in `label`
and `description`. Shams are built in (explainers/sham.py): a plugin cannot declare `imitates`. Its
explanations are checked as they are made (`CheckedExplainer`): one per request, Explanation objects of
its kind, JSON-safe payloads that keep the kind's contract (each kind's `check`).

The web process imports the plugin's module to read these class attributes: a module that imports torch
or loads models only inside the class (as the example does: examples/explainer_plugin/) keeps it light.
"""
from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import replace
from importlib import metadata

from .table_entry import Entry, explainer_class

GROUP = "exag.explainers"                                   # the entry point group of third-party explainers
ALLOW_ENV = "EXAG_EXPLAINERS"   # the operator's import paths, separated by spaces or commas, a study may name
IMPORT_PATH = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")   # "module:Class", as entry points write it
NAME = re.compile(r"[A-Za-z0-9_.:-]{1,200}")   # a name that fits a study's arm ("a+b"), a URL and an attribute


class ContractError(ValueError):
    """A third-party explainer that breaks the contract; the text names the explainer and what is wrong."""


class NotInstalled(ValueError):
    """A name that is neither an installed entry point's nor an allowed import path (nothing was imported)."""


def allowed_paths() -> list[str]:
    """The import paths a study may name: the classes installed entry points declare and those the operator
    listed in EXAG_EXPLAINERS (none is imported)."""
    declared = {ep.value.strip() for ep in metadata.entry_points(group=GROUP)}
    listed = {p for p in re.split(r"[\s,]+", os.environ.get(ALLOW_ENV, "")) if IMPORT_PATH.fullmatch(p)}
    return sorted(declared | listed)


@functools.lru_cache(maxsize=256)
def resolve(name: str) -> Entry:
    """The table's row of a third-party explainer (only rows that resolved are remembered: a package
    installed later is found). NotInstalled: no installed entry point nor allowed import path has the name."""
    if not NAME.fullmatch(name or ""):
        raise ValueError(f"unknown explainer {name!r}: a name is 1-200 letters, digits, '_', '.', ':' or '-'")
    points = [ep for ep in metadata.entry_points(group=GROUP) if ep.name == name]
    if len(points) > 1:
        raise ContractError(f"explainer {name!r}: {len(points)} installed packages declare it in entry point group "
                            f"{GROUP}: {', '.join(sorted(ep.value for ep in points))}; uninstall all but one")
    if points:
        target, how = points[0].value, f"entry point {name} = {points[0].value!r} (group {GROUP})"
    elif name in allowed_paths():
        target, how = name, f"import path {name!r}"
    else:       # a study is admin input: it never makes the server import a module nobody installed or allowed
        raise NotInstalled(f"no installed entry point nor allowed import path is named {name!r}")
    if not IMPORT_PATH.fullmatch(target):
        raise ContractError(f"explainer {name!r}: {how} is not 'module:Class'")
    try:        # a plugin's module runs as it is imported: whatever it raises (SystemExit too) refuses it
        cls = explainer_class(Entry(name, target, ""))
        check_class(cls, f"explainer {name!r} ({target})")
    except ContractError:
        raise
    except ImportError as error:
        raise ContractError(f"explainer {name!r}: {how} could not be imported: "
                            f"{_line(error)}") from None
    except AttributeError as error:
        raise ContractError(f"explainer {name!r}: {how}: the module has no {target.partition(':')[2]!r} "
                            f"({_line(error)})") from None
    except BaseException as error:   # noqa: B036 -- SystemExit and KeyboardInterrupt must not end the server
        raise ContractError(f"explainer {name!r}: importing {how} failed: {_line(error)}") from None
    return Entry(name, target, cls.kind, cls.label or cls.name, cls.description or cls.label or cls.name, plugin=True)


def _line(error: BaseException) -> str:
    """What a plugin's module raised, as one line of a sane length (a refusal is one line)."""
    return " ".join(f"{type(error).__name__}: {error}".split())[:400]


def check_class(cls, where: str = "") -> None:
    """Raises ContractError naming what the class lacks to be an explainer (base.py, the contract)."""
    from .agent_interface import CAPABILITIES, unknown_capabilities
    from .base import Explainer
    from .kinds import KINDS
    where = where or repr(cls)
    if not isinstance(cls, type):
        raise ContractError(f"{where} is a {type(cls).__name__}, not a class")
    if not issubclass(cls, Explainer):
        raise ContractError(f"{where} is not a subclass of explainers.base.Explainer (docs/writing-an-explainer.md)")
    if cls.payloads is Explainer.payloads and cls.explain_batch is Explainer.explain_batch:
        raise ContractError(f"{where} implements neither payloads(requests) nor explain_batch(requests)")
    name, kind = getattr(cls, "name", None), getattr(cls, "kind", None)
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ContractError(f"{where} has no name: a class attribute such as name = \"topk\" (letters, digits, "
                            f"'_', '.', ':' or '-'), got {name!r}")
    if kind not in KINDS:
        raise ContractError(f"{where} has kind {kind!r}; a kind is one of {', '.join(KINDS)} (the page draws those; a "
                            "new kind needs a module in explainers/kinds/ and a renderer in frontend/js/explanations/)")
    requires = getattr(cls, "requires", frozenset())
    if isinstance(requires, str) or not all(isinstance(c, str) for c in requires):
        raise ContractError(f"{where}: requires must be a set of capability names, got {requires!r}")
    unknown = unknown_capabilities(requires)
    if unknown:
        raise ContractError(f"{where} requires unknown capabilities {', '.join(unknown)}; an agent offers "
                            f"{', '.join(CAPABILITIES)} (explainers/agent_interface.py)")
    for attribute in ("label", "description"):
        if not isinstance(getattr(cls, attribute, ""), str):
            raise ContractError(f"{where}: {attribute} must be text, got {getattr(cls, attribute)!r}")
    if getattr(cls, "imitates", None):
        raise ContractError(f"{where} declares imitates = {cls.imitates!r}: shams are built in (explainers/sham.py)")


class CheckedExplainer:
    """A third-party explainer as the server and the benchmarks run it: the same verb, with every batch
    checked against the contract and its explanations named as the study names the explainer."""

    imitates = None

    def __init__(self, explainer, row: Entry) -> None:
        self.explainer, self.row = explainer, row
        self.name, self.kind = row.name, row.kind

    def __getattr__(self, attribute: str):
        return getattr(self.explainer, attribute)   # its options and models, as the built-ins show theirs

    def explain_batch(self, requests):
        from .base import Explanation
        from .kinds import check_payload
        requests = list(requests)
        made = self.explainer.explain_batch(requests)
        where = f"explainer {self.name!r} ({self.row.target})"
        if not isinstance(made, (list, tuple)) or len(made) != len(requests):
            count = len(made) if isinstance(made, (list, tuple)) else type(made).__name__
            raise ContractError(f"{where}: explain_batch returned {count} for {len(requests)} requests; it returns a "
                                "list of one Explanation per request")
        checked = []
        for k, e in enumerate(made):
            if not isinstance(e, Explanation):
                raise ContractError(f"{where}: explanation {k} is a {type(e).__name__}, not an "
                                    "explainers.base.Explanation")
            if e.kind != self.kind:
                raise ContractError(f"{where}: explanation {k} has kind {e.kind!r}; the class declares {self.kind!r}")
            try:
                json.dumps(e.payload, allow_nan=False)
            except (TypeError, ValueError) as error:
                raise ContractError(f"{where}: explanation {k}'s payload is not JSON-safe ({error}); build payloads "
                                    "from str, int, float, bool, None, lists and dicts (explainers.base.json_safe)") \
                    from error
            try:
                check_payload(self.kind, e.payload)
            except ValueError as error:
                raise ContractError(f"{where}: explanation {k} breaks kind {self.kind!r}: {error}") from error
            checked.append(e if e.explainer == self.name else replace(e, explainer=self.name))
        return checked
