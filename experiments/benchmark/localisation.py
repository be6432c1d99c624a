"""Does the attention lie on the objects the answer needs? Localisation of attention maps against the
ground truth of the synthetic world (docs/research.md §6, attention maps; Quantus's localisation group).

    items = load_items(world, max_items=200); outputs = answer(agent, items)
    localisation(explain(load_explainer("attention", agent), items, outputs, agent), items)
    # {"n": 181, "skipped": 19, "relevance_mass": 71.2, "relevance_rank": 64.0, "pointing_game": 88.4, ...}

Ground truth s: the union of the pixels (the world's instance mask) of the objects the question's program
needs (vqa_agent.world.explanations.evidence_objects on the item's scene: the anchors of relate chains,
the members of counted and tested sets, queried and compared objects). Items whose program needs no
object (an answer about absence: "is there a green cube?" -> no), or whose evidence objects are hidden
behind others (no pixel), have no mask to hit: they are skipped and counted.

Attribution a: the attention payload as attention mass per pixel at the image's resolution
(explainers.attention.attribution_map): each attended proposal's weight spread evenly over its mask, or,
for a payload without attended proposals, each spatial grid cell's weight over its pixels. So a sums to
1 and its mass on a region is the share of attention there (the rule explainers/grading.py grades by).

Measures, per item, then averaged over the items and given in percent (x100):
- relevance mass accuracy: sum of a inside s / sum of a.
- relevance rank accuracy: the share of the |s| pixels with the highest a that lie inside s.
- pointing game: 1 when the highest a lies inside s, else 0 (Quantus: any of the tied highest pixels;
  our maps are constant over a proposal or a grid cell, so the most attended proposal or cell must
  touch s).
All three are computed by Quantus (Hedstroem et al., JMLR 2023: RelevanceMassAccuracy,
RelevanceRankAccuracy, PointingGame on precomputed a_batch and s_batch); a map with no mass at all
scores 0 on each (it points at nothing). Ties among equal pixels at the rank cut-off are broken by
pixel order, as Quantus's argsort does. `chance` gives each measure for a map that knows nothing
(uniform attention or a random pixel): the mean share of the image that s covers, the same for all three.

Published references: docs/research.md §6 quotes no figures for these measures; the Quantus and Adebayo papers
score gradient saliency on natural images (ImageNet, bounding boxes), which is not comparable to
question-guided object attention on CLEVR-like renders. What differs in our world: the masks are exact
(rendered), and the mask is the question's evidence, not the class object; the chance levels above are
the baseline to beat. The sham `attention-shuffled` (another image's attention) should score near chance.
Measured (100 test items of the tests' tiny world, tiny agent): attention 43 / 41 / 58 (mass / rank /
pointing), attention-shuffled 25 / 23 / 38, chance 4; the sham stays above chance because objects sit
in the same middle band of every render. The pointing game separates the two least: a sham's most
attended proposal is a whole region of tied pixels and often touches an evidence object anyway.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from tqdm import tqdm

from explainers.attention import attribution_map
from vqa_agent.world.explanations import evidence_objects
from vqa_agent.world.programs import program_from_json

MEASURES = ("relevance_mass", "relevance_rank", "pointing_game")
QUANTUS_METRICS = {"relevance_mass": "RelevanceMassAccuracy", "relevance_rank": "RelevanceRankAccuracy",
                   "pointing_game": "PointingGame"}
BATCH = 32                   # items scored per Quantus call (maps at the image's resolution: ~0.6 MB each)
DEFINITIONS = {
    "ground_truth": "the union of the pixels of the objects the question's program needs (evidence_objects "
                    "on the item's scene); items without evidence objects or without evidence pixels are skipped",
    "attribution": "attention mass per pixel: each attended proposal's weight spread evenly over its mask, or "
                   "without attended proposals each grid cell's weight over its pixels (attribution_map)",
    "relevance_mass": "attribution inside the mask / total attribution, mean over items, percent",
    "relevance_rank": "share of the |mask| most attributed pixels inside the mask, mean over items, percent",
    "pointing_game": "percent of items whose highest attribution (any tied pixel) lies inside the mask",
    "chance": "the mean share of the image the mask covers: each measure's value for uniform attention",
}


def evidence_mask(item) -> np.ndarray | None:
    """The item's ground truth: a boolean mask of the pixels of the objects its program needs, or None
    when it needs none (an answer about absence) or none of them is visible."""
    objects = evidence_objects(program_from_json(item.program), item.scene)
    mask = np.isin(item.masks, objects) if objects else None
    return mask if mask is not None and mask.any() else None


def localisation_scores(maps: np.ndarray, masks: np.ndarray) -> dict[str, np.ndarray]:
    """Per-item scores in [0, 1] of attribution maps [N, H, W] against ground-truth masks [N, H, W] (each
    with at least one pixel), computed by Quantus; a map with no mass scores 0 on every measure."""
    import quantus   # imported here: it loads scikit-image and OpenCV (seconds), only this measure needs it

    maps, masks = np.asarray(maps, float), np.asarray(masks, bool)
    if maps.shape != masks.shape or maps.ndim != 3:
        raise ValueError(f"maps {maps.shape} and masks {masks.shape} must both be [items, height, width]")
    if not masks.reshape(len(masks), -1).any(axis=1).all():
        raise ValueError("every ground-truth mask needs at least one pixel")
    if (maps < 0).any():
        raise ValueError("attention maps are non-negative")
    # Quantus refuses maps that are all zero (and divides by the maximum): they are scored 0 here instead
    scored = maps.reshape(len(maps), -1).sum(axis=1) > 0
    scores = {measure: np.zeros(len(maps)) for measure in QUANTUS_METRICS}
    if not scored.any():
        return scores
    a_batch, s_batch = maps[scored, None], masks[scored, None].astype(float)
    for measure, metric in QUANTUS_METRICS.items():
        # x_batch is only checked for its shape: the attributions are precomputed, no model is run
        scores[measure][scored] = getattr(quantus, metric)(disable_warnings=True, display_progressbar=False)(
            model=None, x_batch=s_batch, y_batch=np.zeros(len(a_batch), int), a_batch=a_batch, s_batch=s_batch)
    return scores


def localisation(explanations: Sequence, items: Sequence, progress: bool = True, source: str = "auto") -> dict:
    """Relevance mass, relevance rank and pointing game of attention explanations (one per item, kind
    "attention": the attention explainer or its sham) against the items' evidence masks; see the module
    docstring. `source`: which part of the payload makes the map ("auto", "objects" or "grid")."""
    if len(explanations) != len(items):
        raise ValueError(f"got {len(explanations)} explanations for {len(items)} items")
    kinds = {(e.to_dict() if hasattr(e, "to_dict") else e)["kind"] for e in explanations}
    if kinds - {"attention"}:
        raise ValueError(f"localisation scores attention maps, not explanations of kind {', '.join(sorted(kinds))}")
    import quantus

    per_item: dict[str, list[float]] = {m: [] for m in MEASURES}
    types, chance, skipped = [], [], 0
    pending: list[tuple[np.ndarray, np.ndarray]] = []

    def score_pending() -> None:
        if pending:
            maps, masks = (np.stack(x) for x in zip(*pending))
            for measure, values in localisation_scores(maps, masks).items():
                per_item[measure] += values.tolist()
            pending.clear()

    for explanation, item in tqdm(list(zip(explanations, items)), desc="localisation", disable=not progress):
        mask = evidence_mask(item)
        if mask is None:
            skipped += 1
            continue
        payload = (explanation.to_dict() if hasattr(explanation, "to_dict") else explanation)["payload"]
        pending.append((attribution_map(payload, mask.shape, source), mask))
        types.append(item.type)
        chance.append(float(mask.mean()))
        if len(pending) == BATCH:
            score_pending()
    score_pending()

    def summary(rows: list[int]) -> dict:
        return {"n": len(rows), **{m: 100 * float(np.mean([per_item[m][i] for i in rows])) if rows else None
                                   for m in MEASURES}}

    by_type: dict[str, list[int]] = {}
    for i, t in enumerate(types):
        by_type.setdefault(t, []).append(i)
    return {**summary(list(range(len(types)))), "skipped": skipped,
            "chance": 100 * float(np.mean(chance)) if chance else None,
            "by_type": {t: summary(rows) for t, rows in sorted(by_type.items())},
            "source": source, "library": f"quantus {quantus.__version__}", "definitions": DEFINITIONS}
