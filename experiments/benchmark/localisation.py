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
(explainers.attention.attribution_map), from one of its two drawn parts (`source`): the outlines
("objects": each attended proposal's weight spread evenly over its mask) or the heatmap ("grid": the
spatial map interpolated between cell centres exactly as the board draws it); "auto" is the outlines
when some proposal is attended, else the heatmap (the rule explainers/grading.py grades by). So a sums to
1 and its mass on a region is the share of attention there. The card scores both parts separately.

`drawn_on_objects` describes the heatmap against every object's pixels (issue 52's figures): its share
on objects beside a uniform map's, whether it peaks on an object, and on the object a one-object
question asks about. Before issue 52 the shipped agents' heatmap was the network's grid attention and
put 0-4% of its mass on objects (a uniform map: 8.7%); tests/experiments/benchmark fail when it is
below a uniform map's.

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


def asked_object(item) -> int | None:
    """The one object a question is about (its program needs exactly one, and it is visible), else None."""
    asked = evidence_objects(program_from_json(item.program), item.scene) if item.program else []
    return asked[0] if len(asked) == 1 and (item.masks == asked[0]).any() else None


def drawn_on_objects(explanations: Sequence, items: Sequence, source: str = "grid") -> dict:
    """Where the map the board draws puts its mass (issue 52): against every object's pixels, not the
    question's evidence. Per item, the map's share on object pixels (beside a uniform map's: the share of
    the image the objects cover), whether its highest pixel lies on an object, and, for a question about
    one object (`asked_object`), whether that pixel lies on that object. It describes what players see;
    whether the map follows the agent is the sanity check's and the attention-moved test's question."""
    if len(explanations) != len(items):
        raise ValueError(f"got {len(explanations)} explanations for {len(items)} items")
    on, uniform, peaks, on_asked, empty = [], [], [], [], 0
    for explanation, item in zip(explanations, items):
        payload = (explanation.to_dict() if hasattr(explanation, "to_dict") else explanation)["payload"]
        drawn = attribution_map(payload, item.masks.shape, source)
        objects = item.masks >= 0
        if not drawn.sum() > 0 or not objects.any():
            empty += 1
            continue
        peak = np.unravel_index(int(np.argmax(drawn)), drawn.shape)
        on.append(float(drawn[objects].sum() / drawn.sum()))
        uniform.append(float(objects.mean()))
        peaks.append(bool(objects[peak]))
        asked = asked_object(item)
        if asked is not None:
            on_asked.append(item.masks[peak] == asked)
    percent = (lambda v: 100 * float(np.mean(v)) if v else None)
    mass, chance = percent(on), percent(uniform)
    return {"n": len(on), "without_mass": empty, "source": source,
            "mass_on_objects": mass, "uniform_on_objects": chance,
            "below_uniform": None if mass is None else mass < chance,
            "peak_on_an_object": percent(peaks),
            "one_object": {"n": len(on_asked), "peak_on_it": percent(on_asked)},
            "definitions": {
                "mass_on_objects": "the drawn map's mass on any object's pixels / its total, mean over items, percent",
                "uniform_on_objects": "the same for a uniform map: the share of the image the objects cover",
                "peak_on_an_object": "percent of items whose highest drawn pixel lies on an object",
                "one_object": "questions whose program needs exactly one visible object: percent whose highest "
                              "drawn pixel lies on that object"}}


def card_localisation(explanations: Sequence, items: Sequence, progress: bool = True) -> dict:
    """The card's localisation of an attention explainer: the outlines (source "auto", as before issue 52)
    and, under "map", the heatmap as drawn: the same measures and drawn_on_objects."""
    return {**localisation(explanations, items, progress, "auto"),
            "map": {**localisation(explanations, items, progress, "grid"),
                    "drawn": drawn_on_objects(explanations, items, "grid")}}
