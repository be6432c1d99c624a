"""A batch of game rounds from jobs to results, as an inference worker answers them (server/worker.py) and
the CPU benchmark times them (experiments/benchmark/round_cpu.py): the explanations known already are read
from the shared cache (one round trip for the batch), the agent and the explainers compute only the rest
(server/inference.py), finish_round grades and projects what was computed (server/respond.py), and the
new products go to the cache (one round trip).
"""
from __future__ import annotations

import logging
from dataclasses import replace

import redis

from vqa_agent.known_image import KnownImage

from .explanation_cache import ExplanationCache
from .inference import Predictor, RoundRequest
from .respond import finish_round
from .rounds import RoundJob

log = logging.getLogger(__name__)
ROUND_FAILED = "the agent could not answer this round; please ask again"


def cache_keys(predictor: Predictor, cache: ExplanationCache, request: RoundRequest) -> dict[tuple[str, int], str]:
    """(explainer, position) -> cache key, for each explanation of the round that may be cached: a cacheable
    explainer (explainers/base.py) on a pool image (a KnownImage: named for good)."""
    keys = {}
    wanted = [(name, k) for name in request.for_every_image for k in range(len(request.images))]
    wanted += [(name, request.secret) for name in request.for_the_secret]
    for name, position in wanted:
        image = request.images[position]
        if isinstance(image, KnownImage) and getattr(predictor.explainers.get(name), "cacheable", False):
            keys[(name, position)] = cache.key(name, image.key, request.question)
    return keys


def answer_rounds(predictor: Predictor, pairs: list[tuple[RoundJob, RoundRequest]], pool) -> list[dict | Exception]:
    """Each round's result (finish_round's dict), or the Exception its inference raised; a round whose grading
    fails gets an error result and fails alone. `predictor.cache` (None: nothing cached) is read and filled."""
    cache: ExplanationCache | None = predictor.cache
    keys = [cache_keys(predictor, cache, request) if cache is not None else {} for _, request in pairs]
    flat = [key for round_keys in keys for key in round_keys.values()]
    try:
        found = iter(cache.get_many(flat) if cache is not None else [])
    except redis.RedisError as error:       # a cache that cannot be read costs time, not rounds
        log.warning("the explanation cache could not be read: %s", error)
        found = iter([None] * len(flat))
    hits = [{pair: product for pair, product in ((pair, next(found)) for pair in round_keys) if product is not None}
            for round_keys in keys]
    requests = [replace(r, cached=frozenset(known)) for (_, r), known in zip(pairs, hits)]
    results = predictor.predict(requests)
    finished, new = [], {}
    for (job, _), result, round_keys, known in zip(pairs, results, keys, hits):
        if isinstance(result, Exception):
            finished.append(result)
            continue
        fresh: dict = {}
        try:
            finished.append(finish_round(job, result, pool, known, fresh, predictor.agent))
        except Exception:                   # noqa: BLE001 - one round's grading fails only itself
            log.exception("grading failed")
            finished.append({"error": ROUND_FAILED})
            continue
        new.update({round_keys[pair]: product for pair, product in fresh.items() if pair in round_keys})
    if cache is not None and new:
        try:
            cache.put_many(new)
        except redis.RedisError as error:   # a cache that cannot be written costs time, not rounds
            log.warning("the explanation cache could not be written: %s", error)
    return finished
