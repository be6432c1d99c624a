"""The inference worker: one thread owns the agent and the explainers (neither is thread-safe) and
answers game rounds in batches, LitServe-style: up to `max_batch_rounds` rounds that arrive within
`max_wait_ms` of each other share one agent call and one call per explainer.

A round is one question about all of a game's images: the agent answers it on every image (the answer
about the secret is the one the player gets), then the round's explainers run on every image
(`for_every_image`) or on the secret image only (`for_the_secret`).
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from explainers import EXPLAINERS, Explainer, Explanation, ExplanationRequest, load_explainer
from vqa_agent.agent import AgentOutput, VQAAgent

log = logging.getLogger(__name__)


@dataclass
class RoundRequest:
    images: list[np.ndarray]
    question: str
    secret: int
    for_every_image: tuple[str, ...] = ()
    for_the_secret: tuple[str, ...] = ()
    seed: int = 0


@dataclass
class RoundResult:
    outputs: list[AgentOutput]                       # one per image
    for_every_image: list[list[Explanation]]         # per image, one per explainer
    for_the_secret: list[Explanation]
    seconds: float = 0.0                              # time in the worker for the whole batch
    batch_rounds: int = 1


@dataclass
class _Job:
    kind: str                   # "round" or "prepare"
    payload: object
    future: Future = field(default_factory=Future)


class InferenceWorker:
    def __init__(self, agent: VQAAgent, explainer_options: dict[str, dict] | None = None,
                 max_batch_rounds: int = 8, max_wait_ms: float = 5.0) -> None:
        self.agent = agent
        self.max_batch_rounds = max_batch_rounds
        self.max_wait_s = max_wait_ms / 1000
        self.explainers: dict[str, Explainer] = {}
        self.unavailable: dict[str, str] = {}        # explainer name -> why it could not be loaded
        for name in EXPLAINERS:
            try:
                self.explainers[name] = load_explainer(name, agent, **(explainer_options or {}).get(name, {}))
            except (OSError, ValueError, KeyError) as error:
                self.unavailable[name] = str(error)
                log.warning("explainer %s is unavailable: %s", name, error)
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="exag-inference", daemon=True)
        self._thread.start()

    # --- what the server calls (any thread) -------------------------------------------------------

    def answer_round(self, request: RoundRequest, timeout: float = 60.0) -> RoundResult:
        """The round's result; a question the agent cannot read (QuestionError, a ValueError) is refused
        here, before it joins a batch with other games' rounds."""
        missing = [n for n in request.for_every_image + request.for_the_secret if n not in self.explainers]
        if missing:
            raise ValueError(f"explainers not available: {', '.join(missing)}")
        self.agent.vocabulary.check(request.question)
        return self._submit("round", request).result(timeout)

    def prepare(self, images: list[np.ndarray], timeout: float = 60.0) -> None:
        self._submit("prepare", images).result(timeout)

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=10)

    def _submit(self, kind: str, payload) -> Future:
        job = _Job(kind, payload)
        self._queue.put(job)
        return job.future

    # --- the worker thread ------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            if job.kind == "prepare":
                self._settle([job], lambda: [self.agent.prepare(job.payload)])
                continue
            batch = [job]
            deadline = time.monotonic() + self.max_wait_s
            while len(batch) < self.max_batch_rounds:
                try:
                    more = self._queue.get(timeout=max(deadline - time.monotonic(), 0))
                except queue.Empty:
                    break
                if more is None or more.kind != "round":
                    self._queue.put(more)      # handled after this batch, in order
                    break
                batch.append(more)
            self._settle(batch, lambda: self._answer([j.payload for j in batch]))

    def _settle(self, jobs: list[_Job], compute) -> None:
        try:
            results = compute()
        except Exception as error:   # the worker must survive anything one batch does
            if len(jobs) > 1 and jobs[0].kind == "round":
                # one bad round must fail only itself: answer the batch's rounds one by one
                log.warning("a batch of %d rounds failed (%s); answering them one by one", len(jobs), error)
                for job in jobs:
                    self._settle([job], lambda job=job: self._answer([job.payload]))
                return
            log.exception("inference failed")
            for job in jobs:
                job.future.set_exception(error)
            return
        for job, result in zip(jobs, results):
            job.future.set_result(result)

    def _answer(self, rounds: list[RoundRequest]) -> list[RoundResult]:
        started = time.perf_counter()
        images = [image for r in rounds for image in r.images]
        questions = [r.question for r in rounds for _ in r.images]
        outputs = self.agent.answer(images, questions)
        per_round, offset = [], 0
        for r in rounds:
            per_round.append(outputs[offset:offset + len(r.images)])
            offset += len(r.images)
        # one explain_batch call per explainer over all rounds that want it
        every: list[list[list[Explanation]]] = [[[] for _ in r.images] for r in rounds]
        secret: list[list[Explanation]] = [[] for _ in rounds]
        for name, explainer in self.explainers.items():
            wanted = []   # (round, image, request, for_secret)
            for i, (r, outs) in enumerate(zip(rounds, per_round)):
                if name in r.for_every_image:
                    wanted += [(i, k, ExplanationRequest(img, o.question, o, r.seed), False)
                               for k, (img, o) in enumerate(zip(r.images, outs))]
                if name in r.for_the_secret:
                    o = outs[r.secret]
                    wanted.append((i, r.secret, ExplanationRequest(r.images[r.secret], o.question, o, r.seed), True))
            if not wanted:
                continue
            for (i, k, _, for_secret), explanation in zip(wanted, explainer.explain_batch([w[2] for w in wanted])):
                (secret[i] if for_secret else every[i][k]).append(explanation)
        seconds = time.perf_counter() - started
        return [RoundResult(outs, every[i], secret[i], seconds, len(rounds)) for i, outs in enumerate(per_round)]
