"""The benchmark card of an agent and every explainer: the field's offline scores, on the same agent
the study's players meet, in one file a study report can read.

    exag bench card --agent medium --world data/world --out results/card_medium [--max-items 400]
    exag bench card --agent hf:models/vilt --world data/world --out results/card_vilt   # a transformers model
    exag analyze --data EXPORT --out REPORT --bench results/card_medium   # offline scores beside the study

It answers a seeded sample of the world's test questions (DEFAULT_ITEMS = 400 unless --max-items says
otherwise; experiments/benchmark/items.py), explains
every answer with every explainer inside a game round (so the shams work as in the game), and runs on
each explainer the measures that apply to its kind, each its own module. Every explainer: the built-ins
and the third-party explainers installed in entry point group "exag.explainers" (explainers/registry.py),
unless --explainers names some (any name a study can use, an import path "module:Class" included):

| measure | module | explainers |
|---|---|---|
| grading (the ExAG raters' 5-point scale, automatic) | explanation_grades.py | all |
| e-ViL S_T, S_E, S_O (proxy and fact-checked) | e_vil.py | text (nle, introspect, nle-other), relqa as text |
| F1@ExplanationScore (V-FLUTE) | f1_at_es.py | the same |
| faithfulness (counterfactual text and image edits, input reconstruction) | faithfulness.py | text and attention |
| localisation (relevance mass, relevance rank, pointing game) of the outlines and, apart, of the heatmap as drawn; the heatmap's mass and peak on objects beside a uniform map's | localisation.py | attention |
| sanity (model parameter randomisation), outlines and heatmap | sanity.py | attention |
| word and related-answer checks | word_checks.py | objscene, relqa |
| contradictions: states / contradicts the answer, per answer type, and the check's own error rates | contradictions.py | text |

It writes OUT/card.json ({"agent": {"name", "accuracy", "by_type", "latency"}, "explainers": {name:
{"kind", "e_vil", "faithfulness", "f1_at_es", "localisation", "sanity", "grading", "seconds"}}, ...};
a measure that does not apply to an explainer is {"not_applicable": why}; "ground_truth": what each measure
is checked against, which an imported image pool lacks), OUT/card.md (the table) and plots: OUT/f1_at_t.png
(F1@t curves) and OUT/faithfulness.png (unfaithful shares per test).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Callable

import numpy as np

from experiments.benchmark.items import answer, explain, load_items

# the measures each kind of explanation gets (the card's keys); the rest are not applicable
MEASURES = ("grading", "e_vil", "f1_at_es", "faithfulness", "localisation", "sanity", "word_checks", "contradictions")
APPLIES = {
    "attention": {"grading", "faithfulness", "localisation", "sanity"},
    "text": {"grading", "e_vil", "f1_at_es", "faithfulness", "contradictions"},
    "qa_pairs": {"grading", "e_vil", "f1_at_es", "word_checks"},
    "words": {"grading", "word_checks"},
}
SINGLE_REQUESTS = 30          # questions answered one at a time for the agent's latency
DEFAULT_ITEMS = 400           # test questions of a card: the whole card in under 20 minutes on 2 cores
SANITY_ITEMS = 50             # the randomisation check re-runs the agent ~21 times: on the first items only
# what of the world each score is checked against: the card scores any agent (a shipped one, a checkpoint,
# a transformers model hf:PATH) on the world's test items, which have it all; an imported image pool
# (`exag pool import`) has none of it (no scenes, masks, true answers nor references; at most object words)
GROUND_TRUTH = {
    "accuracy": "the true answers",
    "grading": "the scene (its objects and their attributes)",
    "e_vil": "the reference explanations and the scene (facts)",
    "f1_at_es": "the reference explanations",
    "faithfulness": "the scene (re-rendered with edits)",
    "localisation": "the objects' instance masks",
    "sanity": "nothing of the world (the agent's own weights, randomised layer by layer)",
    "word_checks": "the scene's objects and the true answers",
    "contradictions": "the agent's answers; the check's own error rates: the reference explanations",
}
POOL_NOTE = ("An imported image pool (`exag pool import`) has no scenes, masks, true answers nor references: "
             "no score here can be computed on it, which is why the card scores the agent on the world's test "
             "items; a study on such a pool has its answers and explanations graded by the rater task instead.")


def explainer_options(agent_name: str, world: Path, nle_model: str | Path | None) -> dict[str, dict]:
    """As the server sets them (server/worker.py): RelQA's bank from the world, the NLE model shipped for
    the agent unless one is given."""
    options: dict[str, dict] = {"relqa": {"world": world, "progress": False}}
    if nle_model is not None:
        options["nle"] = {"model": nle_model}
    elif not Path(str(agent_name)).exists():
        options["nle"] = {"agent_name": agent_name}
    return options


def load_explainers(agent, names, options: dict[str, dict]) -> tuple[dict, dict[str, str]]:
    """The explainers by name (a sham shares the explainer it imitates, as in the server) and, for those
    that could not be loaded, why."""
    from explainers.registry import load_explainers as load
    return load(agent, names, options)


def agent_section(agent, name: str, items, outputs, batched_seconds: float) -> dict:
    right = [o.answer == it.answer for it, o in zip(items, outputs)]
    by_type: dict[str, list[bool]] = {}
    for it, r in zip(items, right):
        by_type.setdefault(it.type, []).append(r)
    single = []
    for it in items[:SINGLE_REQUESTS]:
        started = time.perf_counter()
        agent.answer([it.image], [it.question])
        single.append(1000 * (time.perf_counter() - started))
    return {"name": name, "n": len(items), "accuracy": 100 * float(np.mean(right)),
            "by_type": {t: {"n": len(v), "accuracy": 100 * float(np.mean(v))} for t, v in sorted(by_type.items())},
            "latency": {"batched_ms_per_question": 1000 * batched_seconds / max(len(items), 1),
                        "single_p50_ms": float(np.percentile(single, 50)),
                        "single_p95_ms": float(np.percentile(single, 95)), "single_n": len(single)}}


def sanity_applies(agent) -> str:
    """"" when the randomisation check can run on `agent`, else why not: it randomises the shipped agent's
    network layer by layer (sanity.py, cascade_layers), which another model (hf:PATH) does not have."""
    from vqa_agent.agent import VQAAgent
    if isinstance(agent, VQAAgent):
        return ""
    return (f"model parameter randomisation is written for the shipped agent's network (sanity.py), not for "
            f"{type(agent).__name__}")


def measure_runners(agent, items, outputs, seed: int, progress: bool) -> dict[str, Callable]:
    """measure -> f(name, explainer, explanations) -> its JSON; imported lazily, each its own module."""
    from experiments.benchmark.contradictions import contradictions
    from experiments.benchmark.e_vil import e_vil
    from experiments.benchmark.explanation_grades import explanation_grades
    from experiments.benchmark.f1_at_es import f1_at_es
    from experiments.benchmark.faithfulness import faithfulness
    from experiments.benchmark.localisation import card_localisation
    from experiments.benchmark.sanity import sanity
    from experiments.benchmark.word_checks import word_checks
    return {
        "grading": lambda name, explainer, ex: explanation_grades(ex, items, outputs),
        "e_vil": lambda name, explainer, ex: e_vil(items, outputs, ex, progress=progress),
        "f1_at_es": lambda name, explainer, ex: f1_at_es(items, outputs, ex, progress=progress),
        "faithfulness": lambda name, explainer, ex: faithfulness(agent, explainer, items, outputs, seed=seed,
                                                                 progress=progress),
        "localisation": lambda name, explainer, ex: card_localisation(ex, items, progress=progress),
        "sanity": lambda name, explainer, ex: sanity(agent, items[:SANITY_ITEMS], explainer_name=name, seed=seed,
                                                     progress=progress),
        "word_checks": lambda name, explainer, ex: word_checks(ex, items, outputs),
        "contradictions": lambda name, explainer, ex: contradictions(items, outputs, ex),
    }


def bench_card(agent_name: str, world: Path, max_items: int | None = None, explainers: list[str] | None = None,
               nle_model: str | Path | None = None, seed: int = 0, progress: bool = True,
               log: Callable[[str], None] = print, options: dict[str, dict] | None = None) -> dict:
    """The card (see the module docstring); `options` adds to each explainer's options (name -> dict)."""
    from explainers import registry
    from vqa_agent.loading import load_agent
    started = time.perf_counter()
    names = list(explainers or [*registry.BUILTIN_NAMES, *registry.installed()])
    for name in names:      # an unknown name or a broken plugin is refused (ValueError) before the agent loads
        registry.entry(name)
    agent = load_agent(agent_name)        # a shipped agent, a checkpoint directory or hf:PATH
    items = load_items(world, max_items, seed=seed)
    log(f"{len(items)} test questions of {world}; answering them with agent {agent_name}")
    t = time.perf_counter()
    outputs = answer(agent, items)
    card = {"agent": agent_section(agent, str(agent_name), items, outputs, time.perf_counter() - t),
            "world": str(world), "max_items": max_items, "seed": seed, "explainers": {}, "unavailable": {},
            "ground_truth": {"needs": GROUND_TRUTH, "pool": POOL_NOTE}}
    all_options = explainer_options(agent_name, world, nle_model)
    for name, extra in (options or {}).items():
        all_options[name] = {**all_options.get(name, {}), **extra}
    loaded, card["unavailable"] = load_explainers(agent, names, all_options)
    runners = measure_runners(agent, items, outputs, seed, progress)
    no_sanity = sanity_applies(agent)
    for name, explainer in loaded.items():
        log(f"explainer {name}: explaining {len(items)} answers")
        t = time.perf_counter()
        explanations = explain(explainer, items, outputs, agent, seed=seed)
        entry = {"kind": explainer.kind, "seconds": {"explain": time.perf_counter() - t}}
        for measure in MEASURES:
            if measure not in APPLIES.get(explainer.kind, set()):
                entry[measure] = {"not_applicable": f"{name} explanations are {explainer.kind!r}"}
                continue
            if measure == "sanity" and no_sanity:
                entry[measure] = {"not_applicable": no_sanity}
                continue
            log(f"explainer {name}: {measure}")
            t = time.perf_counter()
            entry[measure] = runners[measure](name, explainer, explanations)
            entry["seconds"][measure] = time.perf_counter() - t
        card["explainers"][name] = entry
    card["seconds"] = time.perf_counter() - started
    return card


# --- the table and the plots ------------------------------------------------------------------------

def score_at(entry: dict, *path):
    """The number at `path` in a card entry, or None where the path or a number is missing."""
    for key in path:
        if not isinstance(entry, dict) or key not in entry:
            return None
        entry = entry[key]
    return entry if isinstance(entry, (int, float)) and not isinstance(entry, bool) else None


COLUMNS = [   # (header, path into an explainer's entry)
    ("on-point (grading)", ("grading", "on_point")),
    ("S_E facts", ("e_vil", "s_e_ground_truth")),
    ("S_O facts", ("e_vil", "s_o_ground_truth")),
    ("S_E proxy", ("e_vil", "s_e_proxy")),
    ("F1@0", ("f1_at_es", "f1_at", "0")),
    ("F1@0.53", ("f1_at_es", "f1_at", "0.53")),
    ("F1@0.6", ("f1_at_es", "f1_at", "0.6")),
    ("text CF %Total Unfaith", ("faithfulness", "counterfactual_text", "pct_total_unfaith")),
    ("image CF %Counter Unfaith", ("faithfulness", "counterfactual_image", "pct_counter_unfaith")),
    ("reconstruction %Unfaith", ("faithfulness", "input_reconstruction", "pct_unfaithful")),
    ("attention moved %", ("faithfulness", "counterfactual_image", "pct_moved")),
    ("relevance mass", ("localisation", "relevance_mass")),
    ("relevance rank", ("localisation", "relevance_rank")),
    ("pointing game", ("localisation", "pointing_game")),
    ("sanity Spearman (randomised)", ("sanity", "final_spearman")),
    ("sanity objects' Spearman", ("sanity", "final_spearman_objects")),
    # the heatmap as the board draws it (issue 52), beside the outlines' columns above
    ("map on objects", ("localisation", "map", "drawn", "mass_on_objects")),
    ("uniform map on objects", ("localisation", "map", "drawn", "uniform_on_objects")),
    ("map peak on an object", ("localisation", "map", "drawn", "peak_on_an_object")),
    ("map peak on the asked object", ("localisation", "map", "drawn", "one_object", "peak_on_it")),
    ("map relevance mass", ("localisation", "map", "relevance_mass")),
    ("map pointing game", ("localisation", "map", "pointing_game")),
    ("map moved %", ("faithfulness", "counterfactual_image", "grid", "pct_moved")),
    ("map sanity Spearman", ("sanity", "final_spearman_map")),
    ("ObjScene word precision", ("word_checks", "precision")),
    ("RelQA answers right", ("word_checks", "accuracy")),
    ("RelQA coherence", ("word_checks", "coherence")),
    ("states answer %", ("contradictions", "overall", "states_answer")),
    ("contradicts answer %", ("contradictions", "overall", "contradicts")),
]


def contradiction_lines(card: dict) -> list[str]:
    """Per answer type, each text explainer's shares (explainers/answer_check.py), and the check's errors."""
    lines = []
    for name, entry in card["explainers"].items():
        found = entry.get("contradictions", {})
        if "by_type" not in found:
            continue
        checker = found["checker"]
        lines += ["", f"## {name}: does the explanation state the answer it explains?", "",
                  "| answer type | n | states % | contradicts % | unreadable % | loops % |", "|---|---|---|---|---|---|"]
        lines += [f"| {kind} | {r['n']} | {r['states_answer']:.1f} | {r['contradicts']:.1f} | {r['unreadable']:.1f} | "
                  f"{r['loops']:.1f} |" for kind, r in found["by_type"].items() if r["n"]]
        if "false_alarm_rate" in checker:
            lines += ["", f"The check itself on these items: false alarms {100 * checker['false_alarm_rate']:.2f}% of "
                          f"{checker['references']} reference explanations, misses "
                          f"{100 * (checker['miss_rate'] or 0):.2f}% of {checker['swapped'] + checker['edited']} "
                          "contradictions made from them."]
    return lines


def heatmap_lines(card: dict) -> list[str]:
    """What each attention explainer's heatmap, as the board draws it, puts on the objects; a map below a
    uniform one is said first and loudly (issue 52: the maps players saw pointed at the background)."""
    lines = []
    for name, entry in card["explainers"].items():
        drawn = (entry.get("localisation") or {}).get("map", {}).get("drawn") if isinstance(entry, dict) else None
        if not drawn or drawn.get("mass_on_objects") is None:
            continue
        one = drawn["one_object"]
        warning = "**Below a uniform map: this heatmap points at the background.** " if drawn["below_uniform"] else ""
        lines.append(f"- {name}: {warning}{drawn['mass_on_objects']:.1f}% of the drawn heatmap's mass on object pixels "
                     f"(a uniform map: {drawn['uniform_on_objects']:.1f}%), its peak on an object in "
                     f"{drawn['peak_on_an_object']:.1f}% of {drawn['n']} images"
                     + (f", on the asked object in {one['peak_on_it']:.1f}% of {one['n']} one-object questions"
                        if one["n"] else "") + ".")
    return ["", "## The heatmap players see", ""] + lines if lines else []


def markdown(card: dict) -> str:
    agent = card["agent"]
    lines = [f"# Benchmark card: agent `{agent['name']}` on `{card['world']}`", "",
             f"{agent['n']} test questions (seed {card['seed']}); accuracy {agent['accuracy']:.1f}%; "
             f"answer latency one question p50 {agent['latency']['single_p50_ms']:.1f} ms. "
             f"Card computed in {card['seconds'] / 60:.1f} min. Scores in percent; empty: not applicable.", ""]
    used = [(h, p) for h, p in COLUMNS if any(score_at(e, *p) is not None for e in card["explainers"].values())]
    lines.append("| explainer | " + " | ".join(h for h, _ in used) + " |")
    lines.append("|---|" + "---|" * len(used))
    for name, entry in card["explainers"].items():
        cells = [score_at(entry, *p) for _, p in used]
        lines.append(f"| {name} | " + " | ".join("" if c is None else f"{c:.1f}" for c in cells) + " |")
    if card.get("unavailable"):
        lines += ["", "Not benchmarked: " + "; ".join(f"{n} ({why})" for n, why in card["unavailable"].items())]
    skipped = sorted({e["sanity"]["not_applicable"] for e in card["explainers"].values()
                      if isinstance(e.get("sanity"), dict) and "not_applicable" in e["sanity"]
                      and "explanations are" not in e["sanity"]["not_applicable"]})
    lines += ["", f"Sanity not run: {skipped[0]}."] if skipped else []
    lines += heatmap_lines(card)
    lines += contradiction_lines(card)
    truth = card.get("ground_truth")
    if truth:
        lines += ["", "## Ground truth each measure needs", "", "| measure | checked against |", "|---|---|"]
        lines += [f"| {measure} | {what} |" for measure, what in truth["needs"].items()]
        lines += ["", truth["pool"]]
    return "\n".join(lines) + "\n"


def plot(card: dict, out: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    written = []
    curves = {n: e["f1_at_es"]["curve"] for n, e in card["explainers"].items()
              if isinstance(e.get("f1_at_es"), dict) and e["f1_at_es"].get("curve")}
    if curves:
        fig, ax = plt.subplots(figsize=(6, 4))
        for name, curve in curves.items():
            ax.plot([p["t"] for p in curve], [p["f1"] for p in curve], label=name)
        for t in (0.53, 0.6):
            ax.axvline(t, color="gray", lw=0.5, ls="--")
        ax.set(xlabel="explanation score threshold t", ylabel="F1@t (%)", title="F1@ExplanationScore")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "f1_at_t.png", dpi=120)
        plt.close(fig)
        written.append(out / "f1_at_t.png")
    tests = [("text CF", ("faithfulness", "counterfactual_text", "pct_total_unfaith")),
             ("image CF", ("faithfulness", "counterfactual_image", "pct_counter_unfaith")),
             ("reconstruction", ("faithfulness", "input_reconstruction", "pct_unfaithful")),
             ("attention not moved", ("faithfulness", "counterfactual_image", "pct_not_moved"))]
    bars = {n: [score_at(e, *p) for _, p in tests] for n, e in card["explainers"].items()}
    bars = {n: v for n, v in bars.items() if any(x is not None for x in v)}
    if bars:
        fig, ax = plt.subplots(figsize=(7, 4))
        width = 0.8 / len(bars)
        for k, (name, values) in enumerate(bars.items()):
            ax.bar(np.arange(len(tests)) + k * width, [v or 0 for v in values], width, label=name)
        ax.set_xticks(np.arange(len(tests)) + 0.4 - width / 2, [t for t, _ in tests])
        ax.set(ylabel="unfaithful (%)", title="Faithfulness tests: lower is better")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "faithfulness.png", dpi=120)
        plt.close(fig)
        written.append(out / "faithfulness.png")
    return written


def write_card(card: dict, out: Path) -> list[Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "card.json").write_text(json.dumps(card, indent=2))
    (out / "card.md").write_text(markdown(card))
    return [out / "card.json", out / "card.md", *plot(card, out)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", required=True, help="agent name (weak, medium, ...), checkpoint directory or "
                                                       "hf:PATH (a transformers VQA model)")
    parser.add_argument("--world", type=Path, default=Path("data/world"))
    parser.add_argument("--out", type=Path, required=True, help="directory for card.json, card.md and plots")
    parser.add_argument("--max-items", type=int, default=DEFAULT_ITEMS,
                        help=f"test questions sampled (default {DEFAULT_ITEMS})")
    parser.add_argument("--explainers", default=None, help="comma-separated names (default: all, shams and installed "
                                                           "third-party explainers included)")
    parser.add_argument("--nle-model", default=None, help="NLE model directory (default: the one shipped for the agent)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="CPU threads for torch (default: torch's choice)")
    args = parser.parse_args(argv)
    if args.threads:
        import torch
        torch.set_num_threads(args.threads)
    card = bench_card(args.agent, args.world, args.max_items,
                      args.explainers.split(",") if args.explainers else None, args.nle_model, args.seed)
    written = write_card(card, args.out)
    print(markdown(card))
    print("wrote " + ", ".join(str(p) for p in written))
    return 0
