"""What the web process needs of an answered round, made by the inference worker that answered it
(server/worker.py) and sent back through Redis as the job's result (server/rounds.py): the answer about the
secret and its grade against the pool's ground truth, the parsed question, the explanations to show
(player-safe, server/player_safe.py) and to log (graded, without pixel masks), and the round's inference
figures. The web process (server/game_stage.py) stores and emits it as it is.
"""
from __future__ import annotations

import functools

import numpy as np
from game.image_pool import UNGRADED
from game.pool import GamePool

from .inference import RoundResult
from .player_safe import for_player
from .rounds import RoundJob

MASK_CACHE = 4096          # pool images whose instance masks a worker keeps for grading, as run lengths


def finish_round(job: RoundJob, result: RoundResult, pool: GamePool, cached: dict | None = None,
                 fresh: dict | None = None, agent=None) -> dict:
    """What the web process needs of a round: the answer about the secret, its grade and the parsed
    question (`graded`), the player's notice when `agent` could not read the question exactly (`notice`,
    game/unread_question.py), the explanations to show (player-safe, keyed by image token) and to log
    (graded, without pixel masks), and the round's inference figures. `cached`: (explainer, position) -> the
    product (`explained`) of an explanation computed before (server/explanation_cache.py), used as it is;
    `fresh`, when given, gets the product of each explanation made here, under the same key."""
    from explainers.grading import GroundTruth, grade_answer
    from game import unread_question
    from vqa_agent.world.parser import parse_program
    from vqa_agent.world.programs import program_to_json

    program = parse_program(job.question)
    notice = unread_question.notice(job.question) \
        if program is None and unread_question.applies(agent, pool.has_ground_truth) else None
    truths: dict[int, GroundTruth] = {}
    has_explanations = any(result.for_every_image) or bool(result.for_the_secret)

    def truth(position: int) -> GroundTruth | None:      # None: an imported image pool has no ground truth
        if position not in truths and pool.has_ground_truth:
            i = job.images[position]
            # the answer's grade needs the scene only; an explanation's grade needs the objects' pixels too
            truths[position] = GroundTruth.for_program(program, pool.scene(i), pool_masks(pool, i) if has_explanations else None)
        return truths.get(position)

    secret_output, secret_truth = result.outputs[job.secret], truth(job.secret)
    graded = {"program": program_to_json(program) if program else None, "parsed": program is not None,
              "answer": secret_output.answer, "probability": secret_output.probability,
              "answered_by": secret_output.answered_by, "truth": getattr(secret_truth, "answer", None),
              "answer_grade": grade_answer(secret_output, secret_truth).label if secret_truth else UNGRADED}
    cached = cached or {}
    fresh = {} if fresh is None else fresh

    def entry(name: str, made: dict, position: int, for_secret: bool) -> tuple[dict, dict]:
        """The view and the log entry of one explanation: the cached product's, or one made now."""
        product = cached.get((name, position))
        if product is None:
            product = fresh[(name, position)] = fresh.get((name, position)) or \
                explained(made[name], result.outputs[position], truth(position), position, pool, job)
        log_entry = {**product["log"], "position": position, "is_secret": position == job.secret,
                     "for_the_secret": for_secret}
        return product["view"], ({**log_entry, "cached": True} if (name, position) in cached else log_entry)

    view_every, logged = {}, []
    for position, explanations in enumerate(result.for_every_image):
        made = {e.explainer: e for e in explanations}
        pairs = [entry(name, made, position, False) for name in job.for_every_image]
        view_every[job.tokens[position]] = [view for view, _ in pairs]
        logged += [log_entry for _, log_entry in pairs]
    made = {e.explainer: e for e in result.for_the_secret}
    pairs = [entry(name, made, job.secret, True) for name in job.for_the_secret]
    view_secret = [view for view, _ in pairs]
    logged += [log_entry for _, log_entry in pairs]
    shown = {"view": {"for_every_image": view_every, "for_the_secret": view_secret}
             if (job.for_every_image or job.for_the_secret) else None, "log": logged}
    return {"answer": secret_output.answer, "graded": graded, "shown": shown, "notice": notice,
            "inference_ms": result.seconds * 1000, "batch_rounds": result.batch_rounds}


def pool_masks(pool: GamePool, i: int) -> np.ndarray:
    """A pool image's instance mask (object index, -1 background), int8: decoded from its PNG once (~0.3 ms),
    then kept as run lengths (~10 KB an image, the whole pool ~15 MB) and expanded when a round grades
    explanations of the image (~0.05 ms)."""
    runs = _mask_runs(pool, i)
    return np.repeat(runs[0], runs[1]).reshape(runs[2])


@functools.lru_cache(maxsize=MASK_CACHE)
def _mask_runs(pool: GamePool, i: int) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
    masks = pool.masks(i).astype(np.int8)            # objects < 127
    flat = masks.ravel()
    starts = np.concatenate([[0], np.flatnonzero(flat[1:] != flat[:-1]) + 1])
    lengths = np.diff(np.concatenate([starts, [flat.size]])).astype(np.int32)
    return flat[starts], lengths, masks.shape


def explained(explanation, output, truth, position: int, pool, job) -> dict:
    """What a round shows and logs of one explanation, whatever round it is in: the player's view, and the
    log entry (its grade, and its payload without pixel masks: they are the agent's deterministic output
    and would make every event ~100 KB; an attention heatmap as the player saw it) without the round's
    fields (position, whether it is the secret's)."""
    from explainers.grading import grade_explanation
    payload = explanation.payload
    grade = grade_explanation(explanation, output, truth).label if truth is not None else \
        pool.grade_explanation(explanation.to_dict(), job.images[position])      # an imported pool: no scene
    view = for_player(explanation)
    if explanation.kind == "attention":
        # the heatmap as the player saw it (packed whole percents of its largest cell: 1.6 KB for 30x40 cells,
        # against ~8 KB of floats); the shipped agents' full map is their logged weights on the masks
        payload = {**payload, "grid": view["payload"]["grid"],
                   "objects": [{k: v for k, v in o.items() if k != "mask"} for o in payload["objects"]]}
    return {"view": view,
            "log": {"explainer": explanation.explainer, "kind": explanation.kind, "grade": grade,
                    "seconds": explanation.seconds, "payload": payload}}
