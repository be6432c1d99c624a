"""The `topk` explainer: the answers the agent weighed besides the one it gave, with how sure it was of
each, as one sentence ("I answered red (62%); I also considered blue (21%) and green (9%).").

It is of kind "text", so ExAG draws it with its text renderer, sends the player the sentence only, and
its simulated participants check the facts it states like any other sentence. It asks the agent for
nothing beyond its answers ("answer": AgentOutput.answer, probability, top_k).

Importing this module is cheap (no torch, no model): the server's web process imports it to read the
class's name, kind and label.
"""
from __future__ import annotations

from explainers.base import Explainer, ExplanationRequest

DEFAULT_K = 3                 # alternatives named at most
MIN_PROBABILITY = 0.01        # alternatives the agent gave less than 1% are not worth naming


class TopKExplainer(Explainer):
    name = "topk"
    kind = "text"
    requires = frozenset({"answer"})
    label = "Other answers it considered"
    description = ("Other answers: the answers the agent weighed besides the one it gave, with how sure it was of "
                   "each.")

    def __init__(self, agent, k: int = DEFAULT_K) -> None:
        super().__init__(agent)
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        self.k = k

    def payloads(self, requests: list[ExplanationRequest]) -> list[dict]:
        return [{"text": sentence(r.output.answer, r.output.probability, r.output.top_k, self.k)} for r in requests]


def sentence(answer: str, probability: float, top_k, k: int = DEFAULT_K) -> str:
    others = [(a, p) for a, p in top_k if a != answer and p >= MIN_PROBABILITY][:k]
    said = f"I answered {answer} ({probability:.0%})"
    if not others:
        return f"{said} and considered nothing else."
    named = [f"{a} ({p:.0%})" for a, p in others]
    listing = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    return f"{said}; I also considered {listing}."
