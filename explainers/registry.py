"""The explainer table: every explainer's name, class, kind, label and (for shams) what it imitates, in one
place. Torch-free: the web process checks studies with it and sends the page its labels; the classes are
imported only when an explainer is loaded.

    entry("relqa")                        # Entry(name="relqa", target="explainers.relqa:RelQAExplainer", ...)
    entry("topk")                         # an installed plugin, by its entry point in group "exag.explainers"
    entry("mypackage.module:MyExplainer") # by import path: an installed entry point's class, or one the operator
                                          # allowed (EXAG_EXPLAINERS="mypackage.module:MyExplainer")
    load_explainer("relqa", agent, world="data/world")

A study, `exag serve` and `exag bench card` name explainers by these names. The built-ins are BUILTIN (rows of
explainers/table_entry.py); any other name is a third-party explainer, which explainers/plugins.py finds (an
installed entry point's name, or an import path "module:Class" that an installed entry point declares or the
operator allowed in EXAG_EXPLAINERS), imports and checks against the contract (base.py, agent_interface.py,
kinds/) when it is first named, and refuses with a message that says what is wrong. A study is admin input:
it only chooses among the explainers the server lists, and never makes the server import a module nobody
installed or allowed. An explainer is known by the name it was named by: its explanations carry that name,
in the event log and on the page.

The page gets `page_table` (server/routes.py /api/explainers): kind, label and the instructions' line
for each explainer a study shows; a sham gets the label and line of the explainer it imitates, so the
participant cannot tell them apart.
"""
from __future__ import annotations

from importlib import metadata

from .plugins import ALLOW_ENV, GROUP, CheckedExplainer, NotInstalled, allowed_paths, resolve
from .table_entry import Entry, explainer_class

BUILTIN_EXCEPTIONS = (OSError, ValueError, KeyError)        # why a built-in may be unavailable (missing
                                                            # files, a model for another agent); others are bugs

# In load order: a sham comes after the explainer it imitates (it shares that one's loaded models).
BUILTIN: tuple[Entry, ...] = (
    Entry("attention", "explainers.attention:AttentionExplainer", "attention", "Where the agent looked",
          "Attention: a heatmap over an image showing where the agent looked, and outlines of the objects with the "
          "share of attention each got."),
    Entry("objscene", "explainers.objscene:ObjSceneExplainer", "words", "Relevant words",
          "Relevant words: the object and scene words most related to the answer, with how sure the agent is that "
          "it sees each in the image."),
    Entry("relqa", "explainers.relqa:RelQAExplainer", "qa_pairs", "Related questions",
          "Related questions: the agent's answers to questions similar to yours. Check whether it is consistent."),
    Entry("nle", "explainers.nle:NLEExplainer", "text", "Generated explanation",
          "Generated explanation: a sentence explaining the answer."),
    Entry("introspect", "explainers.introspect:IntrospectExplainer", "text", "What the agent looked at",
          "What the agent looked at: the objects the agent attended to most, in its own words."),
    # shams (sanity checks, explainers/sham.py): shown with the label and line of what they imitate
    Entry("attention-shuffled", "explainers.sham:ShuffledAttentionExplainer", "attention", imitates="attention"),
    Entry("nle-other", "explainers.sham:OtherNLEExplainer", "text", imitates="nle"),
)
BUILTIN_NAMES: tuple[str, ...] = tuple(e.name for e in BUILTIN)
SHAM_NAMES: tuple[str, ...] = tuple(e.name for e in BUILTIN if e.imitates)
_BUILTIN = {e.name: e for e in BUILTIN}


def installed() -> list[str]:
    """The names of the third-party explainers installed as entry points in GROUP (none is imported)."""
    return sorted({ep.name for ep in metadata.entry_points(group=GROUP)} - set(_BUILTIN))


def is_name(name: str) -> bool:
    """Whether `name` can name an explainer, without importing anything: a built-in, an installed entry
    point or an allowed import path. `entry` says whether it keeps the contract."""
    if name in _BUILTIN or name in _INSTALLED_SEEN:
        return True
    if name in installed() or name in allowed_paths():   # a scan of the installed packages (~6 ms): a study's
        _INSTALLED_SEEN.add(name)                         # view asks every message
        return True
    return False


def unknown(name: str) -> str:
    """The one line that refuses a name the server does not list."""
    known = ", ".join([*BUILTIN_NAMES, *installed(), *allowed_paths()])
    return (f"unknown explainer {name[:200]!r}: installed explainers are {known}; install a plugin as an {GROUP} "
            f"entry point (or allow its import path: {ALLOW_ENV}=module:Class)")


_INSTALLED_SEEN: set[str] = set()   # entry point names found installed (a cache: packages are not uninstalled
                                    # under a running process; names not found are looked for again)


def entry(name: str) -> Entry:
    """The table's row of `name`; a third-party explainer is imported and checked first. ValueError: an
    unknown name, or a plugin that cannot be imported or breaks the contract (the text says which)."""
    if name in _BUILTIN:
        return _BUILTIN[name]
    try:
        return resolve(name)
    except NotInstalled:
        raise ValueError(unknown(name)) from None


def imitates(name: str) -> str:
    """The explainer a built-in sham imitates, "" for anything else (third-party explainers are no shams)."""
    found = _BUILTIN.get(name)
    return found.imitates if found else ""


def sham_of(name: str) -> str | None:
    """The built-in sham that imitates `name`, if there is one."""
    return next((e.name for e in BUILTIN if e.imitates == name), None)


def load_explainer(name: str, agent, **options):
    """The explainer `name` for `agent`, constructed with `options`. ValueError when the agent lacks a
    capability it requires (agent_interface.py); a third-party explainer comes wrapped so that every
    explanation it makes is checked against its kind and carries `name` (plugins.CheckedExplainer)."""
    from .agent_interface import missing_capabilities
    row = entry(name)
    cls = explainer_class(row)
    missing = missing_capabilities(agent, getattr(cls, "requires", ()))
    if missing:
        raise ValueError(f"the {name} explainer needs {', '.join(missing)} of the agent, which this agent does not "
                         "offer (explainers/agent_interface.py)")
    explainer = cls(agent, **options)
    if row.plugin:
        return CheckedExplainer(explainer, row)
    return explainer


def load_explainers(agent, names, options: dict[str, dict] | None = None,
                    loaded: dict | None = None) -> tuple[dict, dict[str, str]]:
    """The explainers `names` (options per name), and for those that could not be loaded, why. A sham
    shares the explainer it imitates (taken from `loaded`, the explainers already loaded, when it is
    there), so that it shows that explainer's output with the same models. A third-party explainer that
    fails in any way is only unavailable: it must not stop a server."""
    options, loaded = options or {}, dict(loaded or {})
    made, unavailable = {}, {}
    for name in names:
        try:
            real = imitates(name)
            if real in unavailable:
                unavailable[name] = f"it shows the {real} explainer's output, and that one is unavailable"
                continue
            if real:
                if real not in loaded:
                    loaded[real] = load_explainer(real, agent, **options.get(real, {}))
                made[name] = explainer_class(entry(name))(agent, explainer=loaded[real])
            else:
                made[name] = load_explainer(name, agent, **options.get(name, {}))
            loaded[name] = made[name]
        except BUILTIN_EXCEPTIONS as error:
            unavailable[name] = str(error) if not imitates(name) or imitates(name) in loaded else \
                f"it shows the {imitates(name)} explainer's output, and that one is unavailable: {error}"
        except Exception as error:
            if name in _BUILTIN:
                raise
            unavailable[name] = f"{type(error).__name__}: {error}"
    return made, unavailable


def page_table(names) -> dict[str, dict]:
    """What the page shows of each explainer in `names` (those that resolve): its kind, label and the
    instructions' line; a sham is shown as the explainer it imitates."""
    table = {}
    for name in dict.fromkeys(names):
        try:
            row = entry(name)
        except ValueError:
            continue
        shown = _BUILTIN[row.imitates] if row.imitates else row
        label = shown.label or name
        table[name] = {"kind": row.kind, "label": label, "description": shown.description or label}
    return table
