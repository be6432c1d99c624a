"""Sanity check by model parameter randomisation (Adebayo et al., NeurIPS 2018; docs/research.md §6): does the
attention map depend on what the agent learned?

    sanity(agent, load_items(world, max_items=200))          # or explainer_name="attention-shuffled"
    # {"stages": [{"randomised": ["classifier"], "spearman": 1.0, "top_object_changed": 0.0, ...}, ...],
    #  "verdict": "passes: ...", ...}

The trained agent's layers are re-initialised in a cascade, from the output down (CASCADE): stage 1
randomises the classifier, stage 2 the classifier and the reasoning memory, ... the last stage every layer
down to the first convolution. Each layer gets PyTorch's own initialisation (its `reset_parameters`:
weights drawn afresh, batch-norm statistics reset), seeded. The work is done on a deep copy; the loaded
agent is never touched. At each stage the randomised agent answers every item again and the explainer
explains those answers (experiments/benchmark/items.explain: the attention-shuffled sham gets its round,
answered by the same randomised agent), and the maps are compared item by item with the trained agent's:

- spearman: Spearman's rank correlation between the trained and the randomised attribution maps of an
  item (scipy.stats.spearmanr over the pixels, as Adebayo et al.; maps as in localisation.py:
  explainers.attention.attribution_map at the image's resolution), averaged over the items where it is
  defined: a trained map that is constant has no ranks to keep (`undefined` counts those items); a
  randomised map that is constant where the trained one is not keeps none of its ranking (0: an agent
  randomised down to its detector finds no object, and its evidence map is even, vqa_agent/evidence_map.py).
- spearman_objects: the same over the scene's objects: the rank correlation of the attribution mass
  each object of the world's instance mask holds under the two maps (mean over items where defined).
- top_object_changed: the share of items whose most attended scene object (the one holding the most
  attribution mass) differs between the two maps, in percent.

A map that is faithful to the model must change as the weights go (low correlation, its top object
moving). Verdict (Adebayo's criterion): "passes" when the fully randomised agent's maps keep a mean
pixel Spearman below SIMILAR_SPEARMAN with the trained ones, saying from which stage on it, and the
object Spearman, stay below; else "fails".

Reading the cascade. Attention is computed before the classifier, so randomising the classifier alone
must leave it unchanged (Spearman 1): a gradient explanation would change there, attention cannot.
Object attention is mass on proposals, and most pixels lie on no proposal (zero in both maps): the
pixel Spearman of such maps is ruled by where the proposals are, which only the image layers decide, so
it stays near 1 while the attention layers are randomised even though the weights among the objects
change (measured on the tiny agent: pixel Spearman 0.999 through stage 16, while the top object changes
for 65% of items from the concept_key stage on). The object Spearman and top_object_changed show that
change; the pixel Spearman shows when the proposals themselves go (detection_head).

Published reference (Adebayo et al. 2018, Inception v3 on ImageNet): gradient and integrated-gradient
maps lose their rank correlation with the trained model's within the top few layers, while guided
backpropagation and guided Grad-CAM stay visually and rank-similar through the cascade, failing the
check. What differs here: a question-guided attention map (not a gradient), rendered scenes, and maps
made of few constant regions (proposals, grid cells), so rank correlations are over heavily tied pixels.
"""
from __future__ import annotations

import copy
import warnings
from typing import Sequence

import numpy as np
import torch
from scipy.stats import spearmanr
from tqdm import tqdm

from explainers.attention import attribution_map
from vqa_agent.agent import VQAAgent
from experiments.benchmark.items import answer, explain

# VQAModel's layers, from the answer back to the pixels: the classifier, the reasoning (memory, then
# the attention and control layers that read the question and look at the image), the question encoder,
# the object heads, the image encoder's heads and its convolution stages from the last to the first.
CASCADE = ("classifier", "memory", "direction_key", "concept_key", "object_gate", "object_attention",
           "spatial_attention", "key", "control_score", "control", "lstm", "embedding", "object_projection",
           "ground_head", "attribute_head", "roi_projection", "grid_projection", "detection_head",
           "detection_fuse", "stage3", "stage2", "stage1")
SIMILAR_SPEARMAN = 0.5      # a mean rank correlation at or above this: the map has not really changed
DEFINITIONS = {
    "cascade": "layers re-initialised cumulatively from the output down (reset_parameters, seeded); stage k "
               "has the first k layers of CASCADE randomised",
    "spearman": "Spearman rank correlation over pixels between the trained and the randomised agent's attribution "
                "maps of an item, mean over items where defined (constant maps: `undefined`)",
    "spearman_objects": "Spearman rank correlation between the attribution mass each scene object holds under the "
                        "two maps, mean over items where defined",
    "spearman_map": "the pixel Spearman of the heatmap as the board draws it (source grid), whatever `source` is",
    "top_object_changed": "percent of items whose scene object with the most attribution mass differs",
    "verdict": f"passes when the fully randomised maps keep a mean pixel Spearman below {SIMILAR_SPEARMAN}",
}


def cascade_layers(model: torch.nn.Module) -> list[str]:
    """CASCADE restricted to the layers this model has (ground_head only in symbolic agents). Every layer
    with parameters must be in CASCADE: one left out would stay trained through the whole check."""
    present = {name for name, child in model.named_children() if any(True for _ in child.parameters())}
    missing = sorted(present - set(CASCADE))
    if missing:
        raise ValueError(f"layers {', '.join(missing)} are not in sanity.CASCADE: add them where they act")
    return [name for name in CASCADE if name in present]


def randomise(model: torch.nn.Module, layers: Sequence[str], seed: int = 0) -> None:
    """Re-initialises the named layers of `model` in place, each with its modules' reset_parameters,
    seeded by the seed and the layer's place in CASCADE (the same layer gets the same weights at every
    stage); the global random state is left as it was."""
    with torch.random.fork_rng(devices=[]):
        for name in layers:
            torch.manual_seed(seed * len(CASCADE) + CASCADE.index(name))
            for module in getattr(model, name).modules():
                if hasattr(module, "reset_parameters"):
                    module.reset_parameters()


def randomised_copy(agent: VQAAgent, layers: Sequence[str], seed: int = 0) -> VQAAgent:
    """A new agent with a deep copy of `agent`'s model, `layers` re-initialised; `agent` is untouched. The
    copy starts with an empty feature cache (the trained agent's cached features must not leak into it)."""
    model = copy.deepcopy(agent.model)
    randomise(model, layers, seed)
    return VQAAgent(model, agent.vocabulary, device=str(agent.device))


def rank_correlation(first: np.ndarray, second: np.ndarray) -> float | None:
    """Spearman's rho between a trained map and a randomised one (or any two arrays of values, element by
    element); None when the first is constant (no ranking to keep), 0 when only the second is (it keeps none)."""
    if np.ptp(first) == 0:
        return None
    if np.ptp(second) == 0:
        return 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(spearmanr(first.ravel(), second.ravel()).statistic)


def object_masses(attribution: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The attribution mass on each scene object (index in the instance mask, -1 background)."""
    on_object = masks >= 0
    return np.bincount(masks[on_object], weights=attribution[on_object], minlength=int(masks.max()) + 1)


def top_object(attribution: np.ndarray, masks: np.ndarray) -> int | None:
    """The scene object holding the most attribution mass; None when no object holds any."""
    mass = object_masses(attribution, masks)
    return int(mass.argmax()) if mass.size and mass.max() > 0 else None


def mean_defined(values: list[float | None]) -> float | None:
    defined = [v for v in values if v is not None]
    return float(np.mean(defined)) if defined else None


def attention_maps(agent: VQAAgent, explainer_name: str, items: Sequence, seed: int, sources: tuple[str, ...],
                   options: dict) -> dict[str, list[np.ndarray]]:
    """The explainer's attribution map of each item from each of `sources`, for this agent's own answers."""
    from explainers import load_explainer
    explainer = load_explainer(explainer_name, agent, **options)
    if explainer.kind != "attention":
        raise ValueError(f"the randomisation check compares attention maps; {explainer_name} explanations "
                         f"are {explainer.kind!r}")
    explanations = explain(explainer, items, answer(agent, items), agent, seed=seed)
    return {source: [attribution_map(e.payload, it.masks.shape, source) for e, it in zip(explanations, items)]
            for source in sources}


def sanity(agent: VQAAgent, items: Sequence, explainer_name: str = "attention", seed: int = 0,
           progress: bool = True, source: str = "auto", options: dict | None = None) -> dict:
    """The cascading randomisation check of one attention explainer (see the module docstring);
    `options` are the explainer's, `source` picks the map as in localisation.py."""
    if len(items) < 2:
        raise ValueError("the check needs at least 2 items (shams take another item's image)")
    options = options or {}
    # the heatmap as drawn is checked beside the chosen source (issue 52: the card measures what players see)
    sources = (source, "grid") if source != "grid" else (source,)
    trained_maps = attention_maps(agent, explainer_name, items, seed, sources, options)
    trained = trained_maps[source]
    trained_top = [top_object(m, it.masks) for m, it in zip(trained, items)]
    layers = cascade_layers(agent.model)
    stages = []
    for k in tqdm(range(len(layers)), desc=f"sanity {explainer_name}", disable=not progress):
        randomised = randomised_copy(agent, layers[:k + 1], seed)     # cumulative: the layers above stay random
        randomised_maps = attention_maps(randomised, explainer_name, items, seed, sources, options)
        maps = randomised_maps[source]
        pixels = [rank_correlation(a, b) for a, b in zip(trained, maps)]
        drawn = [rank_correlation(a, b) for a, b in zip(trained_maps["grid"], randomised_maps["grid"])]
        objects = [rank_correlation(object_masses(a, it.masks), object_masses(b, it.masks))
                   for a, b, it in zip(trained, maps, items)]
        changed = [top_object(m, it.masks) != t for m, it, t in zip(maps, items, trained_top)]
        stages.append({"randomised": list(layers[:k + 1]), "spearman": mean_defined(pixels),
                       "spearman_map": mean_defined(drawn),
                       "spearman_objects": mean_defined(objects),
                       "undefined": pixels.count(None), "undefined_objects": objects.count(None),
                       "top_object_changed": 100 * float(np.mean(changed))})
    return {"explainer": explainer_name, "n": len(items), "source": source, "stages": stages,
            # the fully randomised agent against the trained one: the headline of a card
            "final_spearman": stages[-1]["spearman"] if stages else None,
            "final_spearman_objects": stages[-1]["spearman_objects"] if stages else None,
            "final_spearman_map": stages[-1]["spearman_map"] if stages else None,
            "verdict": verdict(stages), "threshold": SIMILAR_SPEARMAN, "definitions": DEFINITIONS}


def first_stage_below(stages: list[dict], key: str) -> int | None:
    """The first stage from which the mean `key` stays below SIMILAR_SPEARMAN to the end, or None."""
    return next((k for k in range(len(stages))
                 if all(s[key] is not None and s[key] < SIMILAR_SPEARMAN for s in stages[k:])), None)


def verdict(stages: list[dict]) -> str:
    """Adebayo's criterion: passes when the fully randomised agent's maps keep a mean pixel Spearman below
    SIMILAR_SPEARMAN with the trained agent's; says from which stage on it, and the objects' ranking,
    stay below."""
    final = stages[-1]["spearman"] if stages else None
    if final is None:
        return "undefined: no item had maps with ranks to compare"
    if final >= SIMILAR_SPEARMAN:
        return (f"fails: with every layer randomised the maps keep a mean Spearman of {final:.2f} (>= "
                f"{SIMILAR_SPEARMAN}) with the trained agent's: they do not depend on what the agent learned")
    pixels, objects = first_stage_below(stages, "spearman"), first_stage_below(stages, "spearman_objects")
    last_objects = stages[-1]["spearman_objects"]
    if objects is not None:
        ranking = f"the objects' ranking from stage {objects + 1} ({stages[objects]['randomised'][-1]})"
    elif last_objects is None:
        ranking = "the objects' ranking undefined"
    else:
        ranking = f"the objects' ranking keeps a mean Spearman of {last_objects:.2f}"
    return (f"passes: the maps change with the weights (mean Spearman below {SIMILAR_SPEARMAN} over pixels from "
            f"stage {pixels + 1} of {len(stages)} ({stages[pixels]['randomised'][-1]}); {ranking}; "
            f"{final:.2f} over pixels with every layer randomised)")
