"""Sham explainers, for sanity checks of a study: each shows what a real explainer says about ANOTHER image
of the same round, drawn exactly like the real one (same kind, so the same renderer and the same label on
the page). A study that shows a sham must find it harmful (players who use explanations are misled by one
that does not fit the image); if it does not, the study cannot tell a good explanation from a bad one.

- `attention-shuffled`: image k of a round shows the attention of image `derangement(n, seed)[k]`, a
  permutation of the round's n images that moves every one, drawn from the round's seed: each real map is
  shown exactly once, never on its own image, and a round shows the same maps when it is answered again.
- `nle-other`: the same with the NLE sentence. Shown for the secret only, the secret gets the sentence of
  the image the same derangement gives it (so it is never the secret's own, and it is the sentence the
  secret would get if the sham ran on every image).

Rounds answered in one batch never mix: each request carries its own round (`round_requests`, the same
question on every image of the round, this one at `position`; server/inference.py fills them). A request
without its round, or a round of one image, has no other image to take from and is refused (a sham that
quietly showed the real explanation would void the check; games have at least 2 images).

The explanation is named after the sham (`explainer == "attention-shuffled"`), so the event log and the
analysis tell it apart; its grade (explainers/grading.py) is taken against the image it is shown on.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from .base import Explainer, ExplanationRequest

if TYPE_CHECKING:
    from .agent_interface import Agent


def derangement(n: int, seed: int) -> list[int]:
    """A permutation p of range(n) with p[k] != k for every k, uniform among those, the same for a seed
    (rejection sampling: about e permutations are drawn); n >= 2."""
    if n < 2:
        raise ValueError("a derangement needs at least 2 items")
    rng = np.random.default_rng(seed)
    while True:
        p = rng.permutation(n)
        if not (p == np.arange(n)).any():
            return p.tolist()


def shown_instead(request: ExplanationRequest) -> ExplanationRequest:
    """The request of the round's image whose explanation a sham shows for `request`."""
    n = len(request.round_requests)
    if n < 2:
        raise ValueError("a sham explanation needs the other images of its round (ExplanationRequest.round_requests)")
    return request.round_requests[derangement(n, request.seed)[request.position]]


class ShamExplainer(Explainer):
    imitates: ClassVar[str]     # the real explainer whose output for another image is shown (explainers/registry.py)
    # no capabilities of its own: the imitated explainer asks for its own when it is loaded

    def __init__(self, agent: Agent, explainer: Explainer | None = None, **options) -> None:
        """`explainer`: the imitated explainer, already loaded (the server shares its own, so the sham uses
        the same model and options); else it is loaded here with `options`, the imitated explainer's."""
        super().__init__(agent)
        if explainer is None:
            from . import load_explainer
            explainer = load_explainer(self.imitates, agent, **options)
        elif options:
            raise TypeError(f"{self.name} explainer got options and an explainer: the options are the explainer's")
        if explainer.name != self.imitates:
            raise ValueError(f"{self.name} shows the {self.imitates} explainer's output, not {explainer.name}'s")
        self.explainer = explainer

    def payloads(self, requests: list[ExplanationRequest]) -> list[dict]:
        # one call of the real explainer over every round's chosen images: batched as the real one is
        return self.explainer.payloads([shown_instead(r) for r in requests])


class ShuffledAttentionExplainer(ShamExplainer):
    name = "attention-shuffled"
    kind = "attention"
    imitates = "attention"


class OtherNLEExplainer(ShamExplainer):
    name = "nle-other"
    kind = "text"
    imitates = "nle"
