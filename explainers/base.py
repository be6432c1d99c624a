"""The explainer contract: one verb, JSON-safe output.

    explainer = load_explainer("attention", agent)
    [explanation] = explainer.explain_batch([ExplanationRequest(image, question, output)])
    explanation.to_dict()   # {"explainer": "attention", "kind": "attention", "payload": {...}, "seconds": ...}

An explainer is constructed once with the agent (and its options), loads whatever models it needs
then, and afterwards only turns agent outputs into explanations: no I/O, no game state, no HTML or
pixels (the frontend draws each `kind`). Requests are batched because a round explains 5 or 20 images.
Of the agent it uses only the `Agent` protocol (explainers/agent_interface.py), and it says which of the
protocol's capabilities it needs in `requires`.

Torch-free to import (the agent's types only under TYPE_CHECKING): the web process reads a third-party
explainer's class attributes (name, kind, label) without loading any model (explainers/plugins.py).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Sequence

import numpy as np

if TYPE_CHECKING:
    from vqa_agent.agent import AgentOutput

    from .agent_interface import Agent


@dataclass
class ExplanationRequest:
    image: Any                 # what the agent looked at: PIL image, HxWx3 array or path
    question: str
    output: AgentOutput        # the agent's answer to `question` about `image`
    seed: int = 0              # explainers that sample use it; the same seed gives the same explanation
    # The game round this request belongs to: the same question on every image of the round, this one at
    # `position` (server/inference.py fills them). Sham explainers (sham.py) show another image's explanation
    # of the same round; every other explainer ignores them.
    round_requests: tuple["ExplanationRequest", ...] = ()
    position: int = 0


@dataclass
class Explanation:
    explainer: str             # the explainer's name (as studies name it: explainers/registry.py)
    kind: str                  # how the frontend draws the payload
    payload: dict              # JSON-safe: str, int, float, bool, None, lists and dicts of them
    seconds: float = 0.0       # compute time of this explanation (its share of the batch)

    def to_dict(self) -> dict:
        return {"explainer": self.explainer, "kind": self.kind, "payload": self.payload, "seconds": self.seconds}


class Explainer:
    name: ClassVar[str]
    kind: ClassVar[str]                      # one of explainers/kinds/ (the page's renderer, the player's view)
    requires: ClassVar[frozenset[str]] = frozenset()   # capabilities of the agent it uses (agent_interface.py)
    # A third-party explainer's row of the table (explainers/registry.py) comes from its class: the page's
    # heading above its explanation and the instructions' line about it (the built-ins' are in the table).
    label: ClassVar[str] = ""
    description: ClassVar[str] = ""
    # True: the payload is a function of the agent, the options, the image and the question alone (no
    # sampling, no state, not the round's other images), so the server computes it once and shares it
    # between players (server/explanation_cache.py). The built-ins declare it; shams never do.
    cacheable: ClassVar[bool] = False

    def __init__(self, agent: Agent, **options) -> None:
        if options:
            raise TypeError(f"{self.name} explainer got unknown options: {', '.join(sorted(options))}")
        self.agent = agent

    def explain_batch(self, requests: Sequence[ExplanationRequest]) -> list[Explanation]:
        started = time.perf_counter()
        payloads = self.payloads(list(requests)) if requests else []
        share = (time.perf_counter() - started) / max(len(payloads), 1)
        return [Explanation(self.name, self.kind, json_safe(p), share) for p in payloads]

    def payloads(self, requests: list[ExplanationRequest]) -> list[dict]:
        """One JSON-safe payload per request; subclasses implement this."""
        raise NotImplementedError


def json_safe(value):
    """Plain JSON types only: numpy scalars and arrays become numbers and lists, floats are rounded to 6
    digits (payloads travel to browsers many times a second) and non-finite floats become None."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        # fast paths for the long flat lists of a payload (run lengths, a grid's rows): ~6 a round's ms
        if all(type(v) is int for v in value):
            return list(value)
        if all(type(v) is float for v in value):
            return [round(v, 6) if v - v == 0 else None for v in value]     # v - v is nan for inf and nan
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f" and np.isfinite(value).all():     # a grid of weights: rounded at once
            return np.round(value.astype(float), 6).tolist()
        return json_safe(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return round(value, 6) if math.isfinite(value) else None
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"not JSON-safe: {type(value).__name__}")
