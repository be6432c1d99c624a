"""The predict step of an inference worker (server/worker.py): the agent and its explainers answer a
batch of game rounds, LitServe-style: up to `BatchSettings.max_batch_rounds` rounds that arrive within
`max_wait_ms` of each other (rounds of different games) share one agent call and one call per explainer.

Batching changes the last bits of the numbers: a sum over a batch (a matrix product, a padded softmax) is
added up in an order that depends on the batch's shape. Measured with the medium agent: an image's features
computed with 19 other images differ from its features alone by up to 2e-6, and two runs of one seeded
simulated study, their rounds batched differently, logged probabilities, attention maps and explanation
payloads that differ in the 6th or 7th digit (0.4056309 against 0.4056319) in a tenth of the rounds; an
answer, or an explanation's ranking, whose two best candidates are that close can flip.
`BatchSettings.batch_invariant` trades some throughput for results that depend on the round alone
(reproducible simulations): each round is answered by calls of its own, each image's features computed alone.

A round is one question about a game's images. The player gets the agent's answer about the secret; the
round's explainers run on every image (`for_every_image`) or on the secret image only (`for_the_secret`).
The agent answers on every image only when an explanation shown needs it (explainers for every image, a
sham for the secret, which shows another image's explanation); a plain round, or one with explainers for
the secret alone, is answered about the secret image only: nothing logs or shows the other answers, and a
20-image round would cost 20 times as much (issue 29). The agent and the explainers are not
thread-safe: one thread (the worker's loop) calls `predict`.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

import explainers   # its explainers (and torch) load when a Predictor is made, not when this is imported
from explainers import registry

if TYPE_CHECKING:
    from explainers import Explanation
    from vqa_agent.agent import AgentOutput, VQAAgent

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BatchSettings:
    max_batch_rounds: int = 8          # game rounds answered in one agent call
    max_wait_ms: float = 5.0           # how long the first round of a batch waits for others to join it
    # True: a round's result is a function of the round alone, bit for bit, whatever rounds it was batched
    # with and whatever the feature cache held: each round gets its own agent and explainer calls, and each
    # image's features are computed alone (VQAAgent.batch_invariant). Seeded simulations need it; it costs
    # what batching rounds buys (a simulated study with the medium agent on 2 busy cores: 12-25% fewer games/s).
    batch_invariant: bool = False

    @classmethod
    def for_device(cls, device: str, max_batch_rounds: int | None = None, max_wait_ms: float | None = None,
                   batch_invariant: bool = False) -> "BatchSettings":
        """The defaults of a worker on `device` ("auto": cuda when torch sees a GPU), each overridden when
        given. A GPU answers a batch of many rounds in about the time of one, so it takes up to 64 and lets
        the first wait 10 ms for them; a CPU's time grows with the batch, so it takes 8 within 5 ms."""
        if device == "auto":
            import torch
            device = "cuda" if torch.cuda.is_available() else "cpu"
        default = GPU_BATCH if str(device).startswith("cuda") else cls()
        return cls(max_batch_rounds or default.max_batch_rounds,
                   default.max_wait_ms if max_wait_ms is None else max_wait_ms, batch_invariant)


GPU_BATCH = BatchSettings(max_batch_rounds=64, max_wait_ms=10.0)     # BatchSettings.for_device on a GPU
RATE_SMOOTHING = 0.2       # weight of the latest batch in a worker's rate of questions (ArrivalRate)


class ArrivalRate:
    """How many questions a second a worker takes from the fast stream lately: from the time between its
    batches, per round, smoothed over the last several batches."""

    def __init__(self) -> None:
        self._last: float | None = None       # when the last batch was read
        self._gap: float | None = None        # seconds between questions, smoothed

    def add(self, rounds: int) -> None:
        now = time.monotonic()
        if self._last is not None:
            gap = (now - self._last) / max(rounds, 1)
            self._gap = gap if self._gap is None else (1 - RATE_SMOOTHING) * self._gap + RATE_SMOOTHING * gap
        self._last = now

    def per_second(self) -> float:
        return 0.0 if not self._gap else 1.0 / self._gap


@dataclass
class RoundRequest:
    images: list[np.ndarray]
    question: str
    secret: int
    for_every_image: tuple[str, ...] = ()
    for_the_secret: tuple[str, ...] = ()
    seed: int = 0
    # (explainer, position) pairs whose explanation is known already (server/explanation_cache.py): not
    # computed, and an image whose explanations are all known is not answered (but the secret)
    cached: frozenset[tuple[str, int]] = frozenset()


@dataclass
class RoundResult:
    outputs: list[AgentOutput | None]                # one per image; None where the round needs no answer
    for_every_image: list[list[Explanation]]         # per image, one per explainer
    for_the_secret: list[Explanation]
    seconds: float = 0.0                              # time in the worker for the whole batch
    batch_rounds: int = 1


class Predictor:
    def __init__(self, agent: VQAAgent, explainer_options: dict[str, dict] | None = None,
                 batch_invariant: bool = False) -> None:
        self.agent = agent
        self.batch_invariant = batch_invariant
        agent.batch_invariant = batch_invariant      # features of each image alone: the same whatever came with it
        self.options = explainer_options or {}
        self.cache = None        # the shared explanation cache, set by the worker (server/explained_rounds.py)
        # explainer name -> the loaded explainer, or why it could not be loaded (a sham shares the explainer it
        # imitates: explainers/registry.py); third-party explainers are loaded when a round first names them
        self.explainers, self.unavailable = registry.load_explainers(agent, registry.BUILTIN_NAMES, self.options)
        for name, why in self.unavailable.items():
            log.warning("explainer %s is unavailable: %s", name, why)

    def check(self, request: RoundRequest) -> None:
        """Refuses (ValueError, the text for the player) a round that must not join a batch: unknown or
        unavailable explainers, a question the agent cannot read (QuestionError)."""
        names = request.for_every_image + request.for_the_secret
        for name in dict.fromkeys(n for n in names if n not in self.explainers and n not in self.unavailable):
            loaded, unavailable = registry.load_explainers(self.agent, [name], self.options, self.explainers)
            self.explainers.update(loaded)
            self.unavailable.update(unavailable)
            for why in unavailable.values():
                log.warning("explainer %s is unavailable: %s", name, why)
        missing = [n for n in names if n not in self.explainers]
        if missing:
            raise ValueError(f"explainers not available: {', '.join(missing)}")
        self.agent.vocabulary.check(request.question)

    def prepare(self, images: list[np.ndarray]) -> None:
        self.agent.prepare(images)

    def predict(self, rounds: list[RoundRequest]) -> list[RoundResult | Exception]:
        """One result per round, in order; one bad round fails only itself (the batch is answered again
        round by round), never its batch neighbours. Batch-invariant: every round is answered alone."""
        if self.batch_invariant and len(rounds) > 1:
            return [self.predict([r])[0] for r in rounds]
        try:
            return list(self._answer(rounds))
        except Exception as error:   # the worker must survive anything one batch does
            if len(rounds) == 1:
                log.exception("inference failed")
                return [error]
            log.warning("a batch of %d rounds failed (%s); answering them one by one", len(rounds), error)
            return [self.predict([r])[0] for r in rounds]

    def needs_every_image(self, request: RoundRequest) -> bool:
        """Whether the round's explanations need the agent's answer on every image, not the secret's alone."""
        return bool(request.for_every_image) or self.has_sham(request)

    def has_sham(self, request: RoundRequest) -> bool:
        return any(getattr(self.explainers.get(name), "imitates", None)
                   for name in request.for_every_image + request.for_the_secret)

    def positions_to_answer(self, request: RoundRequest) -> list[int]:
        """The images the agent answers: the secret, and each image with an explanation still to compute (a
        sham shows another image's explanation of the round: every image, whatever is cached)."""
        if not self.needs_every_image(request):
            return [request.secret]
        if self.has_sham(request):
            return list(range(len(request.images)))
        return [k for k in range(len(request.images)) if k == request.secret or
                any((name, k) not in request.cached for name in request.for_every_image)]

    def _answer(self, rounds: list[RoundRequest]) -> list[RoundResult]:
        started = time.perf_counter()
        asked = [self.positions_to_answer(r) for r in rounds]
        images = [r.images[k] for r, positions in zip(rounds, asked) for k in positions]
        questions = [r.question for r, positions in zip(rounds, asked) for _ in positions]
        # the classifier's alternatives are graded for the secret's answer and read by explainers of the secret;
        # the other images' explanations read the answer, probability and attention only (a program's, when
        # one answers: its question then skips the network, vqa_agent/agent.py)
        # (a third-party explainer may read them on every image: then every image gets them)
        alternatives = [k == r.secret or any(n not in registry.BUILTIN_NAMES for n in r.for_every_image)
                        for r, positions in zip(rounds, asked) for k in positions]
        answered = iter(self.agent.answer(images, questions, alternatives=alternatives)
                        if getattr(self.agent, "answers_briefly", False) else self.agent.answer(images, questions))
        per_round: list[list[AgentOutput | None]] = []
        for r, positions in zip(rounds, asked):
            outs: list[AgentOutput | None] = [None] * len(r.images)
            for k in positions:
                outs[k] = next(answered)
            per_round.append(outs)
        # each image's request carries its round (the same question on every image of it): sham explainers
        # show another image's explanation of the same round, so rounds batched together never mix
        requests = []
        for r, outs in zip(rounds, per_round):
            plain = tuple(explainers.ExplanationRequest(img, o.question, o, r.seed)
                          for img, o in zip(r.images, outs) if o is not None)
            known = [k for k, o in enumerate(outs) if o is not None]
            requests.append({k: replace(q, round_requests=plain, position=n) for n, (k, q) in enumerate(zip(known, plain))})
        # one explain_batch call per explainer over all rounds that want it
        every: list[list[list[Explanation]]] = [[[] for _ in r.images] for r in rounds]
        secret: list[list[Explanation]] = [[] for _ in rounds]
        for name, explainer in self.explainers.items():
            wanted = []   # (round, image, request, for_secret)
            for i, r in enumerate(rounds):
                if name in r.for_every_image:
                    wanted += [(i, k, request, False) for k, request in requests[i].items() if (name, k) not in r.cached]
                if name in r.for_the_secret and (name, r.secret) not in r.cached:
                    wanted.append((i, r.secret, requests[i][r.secret], True))
            if not wanted:
                continue
            for (i, k, _, for_secret), explanation in zip(wanted, explainer.explain_batch([w[2] for w in wanted])):
                (secret[i] if for_secret else every[i][k]).append(explanation)
        seconds = time.perf_counter() - started
        return [RoundResult(outs, every[i], secret[i], seconds, len(rounds)) for i, outs in enumerate(per_round)]
