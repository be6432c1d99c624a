"""An inference worker: reads game rounds from the Redis streams (server/rounds.py), batches them across
games, runs the agent and the explainers (server/inference.py), makes of each round what the web process
needs (server/respond.py: grades against the pool's ground truth, the player-safe view, the event-log
entries), and writes each job's result exactly once. `exag serve` runs a machine's workers as processes
(server/processes.py).

    exag worker --redis-url redis://host:6379/0 [--world DIR] [--agent NAME] [--device auto|cpu|cuda] [--threads T]

Any number of workers, on any machine that reaches the Redis and has the world and the agents' checkpoints,
share the streams through one consumer group. Questions (the fast stream) are read before explanations
bought at will (the slow stream), except that a waiting slow job is taken at least once every SLOW_SHARE_S
(it is never starved behind a crowd's questions); a worker takes one slow job at a time, so a burst of them
delays a question by at most one. A new game's image preparation (the prepare stream) runs only when no
question waits (or in a slow job's turn), and is dropped once it is stale. A worker that holds nothing reads
every stream in one call; a slow job or a preparation read along with a question waits in the worker for its
turn, and meanwhile only questions are read. A worker that dies leaves its jobs pending; another claims
them after CLAIM_AFTER_MS, and later forgets the dead worker (server/worker_registry.py). The result key is
written with SET NX, so a job computed twice (a claim racing a slow worker) is still answered once.

At start a worker embeds the pool with the server's agent (once per world and agent, stored beside the
world) for the web processes' image-set choice, answers one warm-up question with it (what /healthz waits
for), then looks at the pool's images while idle (server/pool_look.py: one worker on a first start, the
others load what it stored), so that a new game's images are usually seen already.

What a worker spends is accounted per kind of job (CPU_KINDS) in the hash CPU_STATS (`<kind>:n`,
`<kind>:cpu_ms`, `<kind>:batches`, summed over workers; written with the heartbeat), which
experiments/benchmark/cpu_budget.py reads: the thread's own CPU time around the agent, the explainers,
the grading and the result's write.
"""
from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis
from game.pool import GamePool
from vqa_agent.memory import keep_freed_memory
from vqa_agent.threads import pin_threads, thread_pools
from vqa_agent.tokenizer import QuestionError

from . import json_text
from .explained_rounds import ROUND_FAILED, answer_rounds
from .explanation_cache import DEFAULT_MAX_ENTRIES, shared_cache
from .inference import ArrivalRate, BatchSettings, Predictor, RoundRequest   # torch loads with a Predictor
from .pool_look import PoolLook
from .respond import MASK_CACHE, pool_masks
from .rounds import FAST, GROUP, RESULT, SLOW, STREAMS, WORKERS, WORKER_CPU, RoundJob, ensure_groups, warmup_job
from .worker_registry import forget_dead, leave
from .worker_results import publish

log = logging.getLogger(__name__)
CLAIM_AFTER_MS = 5000      # a job pending this long with a consumer is taken over (its worker is presumed dead)
CLAIM_EVERY_S = 1.0        # how often a worker looks for such jobs
MAX_DELIVERIES = 3         # a job that was taken this often (it kills workers?) is answered with an error
HEARTBEAT_S = 5.0          # how often a worker refreshes what it published in WORKERS
POLL_S = 0.001             # how often a batch's first round looks for others to join it
WAITED_S = 0.002           # a blocking read that took longer waited for its job (the stream was empty)
IDLE_BLOCK_MS = 200        # how long an idle worker blocks on the streams before it looks around again
FEATURE_CACHE = None       # images whose features a worker keeps; None: the whole pool (0.25 MB an image, the
                           # default pool of 1,500 ~390 MB; a worker's RSS ~1.3 GB with it and every explainer)
FEATURE_MARGIN = 64        # images beyond the pool a worker's agent keeps too (questions about other images)
MASKS_PER_IDLE_STEP = 16   # pool images whose true masks an idle step decodes (server/respond.py keeps them)
SLOW_SHARE_S = 0.5         # a waiting slow job is taken at least this often, however many questions wait
CPU_STATS = WORKER_CPU   # CPU per kind of job, summed over workers (module docstring); admission reads it
CPU_KINDS = ("ask", "ask_explained", "explain", "prepare")   # plain question, question of a round with
                           # explanations (controlled arms), explanations bought at will, a game's preparation
AGENT_FAILED = "this study's agent could not be loaded on this server; please tell the researcher"


@dataclass
class WorkerConfig:
    redis_url: str
    world: Path
    data_dir: Path = Path("data/server")       # its cache holds the pool embeddings when the world is read-only
    agent: str = "default"                     # the server's agent: rounds that name no agent
    device: str = "auto"                       # "auto": cuda when available, else cpu
    threads: int = 1                           # threads of every pool (torch, BLAS, OpenMP: vqa_agent/threads.py)
    explainer_options: dict[str, dict] = field(default_factory=dict)
    batch: BatchSettings = BatchSettings()
    feature_cache: int | None = FEATURE_CACHE  # None: the whole pool
    warm_pool: bool = True                     # look at the pool's images (stored beside the world, else while idle)
    progress: bool = False
    name: str = ""                             # consumer name ("" = host:pid:random)
    pool: Path | None = None                   # an imported image pool (`exag pool import`) instead of the world's
    explanation_cache: int = DEFAULT_MAX_ENTRIES  # explanations shared in Redis (server/explanation_cache.py; 0: none)


def explainer_options(config: WorkerConfig, agent_name: str) -> dict[str, dict]:
    """The explainers' options for an agent: RelQA's bank from the world, the NLE model shipped for the
    agent, then the configured options (for an agent a study names, all but the server agent's NLE model:
    its own is looked up)."""
    options = {"relqa": {"world": config.world, "progress": config.progress}}
    if not Path(str(agent_name)).exists():
        options["nle"] = {"agent_name": agent_name}
    for name, extra in config.explainer_options.items():
        if name == "nle" and agent_name not in ("", config.agent):
            continue
        options[name] = {**options.get(name, {}), **extra}
    return options


class Worker:
    def __init__(self, config: WorkerConfig) -> None:
        from vqa_agent.loading import load_agent   # a checkpoint, or a transformers model (hf:PATH)
        started = time.perf_counter()
        self.config = config
        keep_freed_memory()        # a round's tensors reuse freed pages instead of faulting them in (vqa_agent/memory.py)
        if config.threads:
            pin_threads(config.threads, load_torch=True)   # torch's pools, BLAS and OpenMP under numpy, scipy, torch
        self.name = config.name or f"{socket.gethostname()}:{os.getpid()}:{os.urandom(3).hex()}"
        self.pool = GamePool(config.pool or config.world)
        self._load_agent = lambda name: load_agent(name, device=config.device)
        self.predictors: dict[str, Predictor] = {}
        self._failed: dict[str, str] = {}
        self.redis = redis.Redis.from_url(config.redis_url, decode_responses=True, health_check_interval=30)
        server = self._predictor("")
        self.pool.compute_embeddings(config.agent, server.agent, Path(config.data_dir) / "cache", config.progress)
        ensure_groups(self.redis)
        if config.warm_pool:       # the pool's scenes, read once now (~0.5 s) rather than in rounds that grade them
            for i in range(len(self.pool)):
                self.pool.scene(i)
        self.looking = PoolLook(self)                    # at the pool's images while idle (server/pool_look.py)
        self._held: list[tuple[str, str, str]] = []      # (stream, entry id, job json) read but not yet handled
        self._claimed_at = self._beat_at = self._forgot_at = 0.0
        self._slow_due = 0.0                             # when a waiting slow job gets its share next
        self._masks_kept = 0                             # pool images whose true masks are decoded (idle steps)
        self._masks_wanted = min(len(self.pool), MASK_CACHE) if self.pool.has_ground_truth and config.warm_pool else 0
        self._retaken: set[str] = set()                 # entry ids taken over from other workers (_claim)
        self._arrivals = ArrivalRate()                   # questions this worker took lately: whether a batch waits
        self._cpu: dict[str, float] = {}                 # "<kind>:n" / ":cpu_ms" / ":batches" since the last heartbeat
        self.stop_event = threading.Event()
        self._thread: threading.Thread | None = None
        self.rounds_done = 0
        self._warm_since: dict[str, float] = {}         # agent -> when it answered a warm-up question here
        self._answer_warmup()
        self._heartbeat()
        self.start_seconds = time.perf_counter() - started
        log.info("inference worker %s ready in %.1f s (device %s)", self.name, self.start_seconds,
                 server.agent.device)

    # --- running ----------------------------------------------------------------------------------

    def start(self) -> "Worker":
        """Runs the loop in a thread (in-process workers: tests, ServerConfig.inprocess_workers)."""
        self._thread = threading.Thread(target=self.run, name=f"exag-worker-{self.name}", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self.stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        try:
            leave(self.redis, self.name)            # WORKERS, and the group where it holds no job
        except redis.RedisError:
            pass
        self.redis.close()

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                self._step()
            except redis.ConnectionError as error:      # Redis restarting: wait, keep the loaded models
                log.warning("worker %s lost Redis (%s); trying again", self.name, error)
                self.stop_event.wait(0.5)

    def _step(self) -> None:
        now = time.monotonic()
        if now - self._beat_at > HEARTBEAT_S:
            self._heartbeat()
        if now - self._claimed_at > CLAIM_EVERY_S:
            self._claim()
        if now >= self._slow_due:        # a slow job's share, even while questions keep coming
            slow = self._next_slow()
            if slow is not None:
                self._handle([slow])
                return
            self._slow_due = now + SLOW_SHARE_S
        if self._held:     # a job read with a question waits its turn: only questions are read meanwhile
            fast = self._read(FAST, self.config.batch.max_batch_rounds)
            self._handle(self._more_fast(fast, queued=False) if fast else [self._next_slow()])
            return
        # one read of every stream (a round trip costs ~0.15 ms of CPU on each side: issue 45), which returns at
        # once when any holds a job, and blocks only when there is no idle work to do
        asked = time.monotonic()
        got = self._read(STREAMS, 1, None if self._idle_work() else IDLE_BLOCK_MS)
        fast = [entry for entry in got if entry[0] == FAST]
        self._held += [entry for entry in got if entry[0] != FAST]      # STREAMS' order: slow before prepare
        if fast:    # a read that waited for its job found the stream empty: no others are queued behind it
            self._handle(self._more_fast(fast, queued=time.monotonic() - asked < WAITED_S))
        elif self._held:
            self._handle([self._next_slow()])
        elif self.looking.due() and self.looking.here():
            self.looking.step()
        elif self._masks_kept < self._masks_wanted:
            self._decode_masks()

    def _idle_work(self) -> bool:
        return bool(self._held) or self._preparing()

    def _preparing(self) -> bool:
        """Whether idle preparation is left: the pool to look at, true masks to decode."""
        return self.looking.due() or self._masks_kept < self._masks_wanted

    def _next_slow(self) -> tuple[str, str, str] | None:
        """A claimed or held job first, then the slow stream's next."""
        self._slow_due = time.monotonic() + SLOW_SHARE_S
        return self._held.pop(0) if self._held else next(iter(self._read(SLOW, 1)), None)

    def _more_fast(self, batch: list, queued: bool = True) -> list:
        """The rounds queued behind the first (`queued`: there may be some), up to max_batch_rounds; then,
        LitServe-style, the first waits up to max_wait_ms for others, but only when this worker's recent rate
        of questions makes one more likely to come within the wait: at a few questions a second the wait
        gathered nothing, and its polls cost two workers 16% more CPU per reply than one (issue 45). Polled
        every millisecond without blocking: Redis ends a blocked read's timeout only at its clock's tick (10 a
        second by default), so a 4 ms blocking read took ~30 ms, and a lone question ~100 ms through Redis."""
        limit, wait_s = self.config.batch.max_batch_rounds, self.config.batch.max_wait_ms / 1000
        deadline = time.monotonic() + wait_s
        if queued and len(batch) < limit:
            batch += self._read(FAST, limit - len(batch))
        self._arrivals.add(len(batch))
        waits = self._arrivals.per_second() * wait_s >= 1.0
        while waits and len(batch) < limit:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(POLL_S, left))
            batch += self._read(FAST, limit - len(batch))
        return batch

    def _read(self, stream: str | tuple[str, ...], count: int, block_ms: int | None = None) -> list[tuple[str, str, str]]:
        streams = (stream,) if isinstance(stream, str) else stream
        got = self.redis.xreadgroup(GROUP, self.name, {s: ">" for s in streams}, count=count, block=block_ms)
        return [(name, entry_id, fields["job"]) for name, entries in got or [] for entry_id, fields in entries]

    def _claim(self) -> None:
        """Jobs of dead workers: pending longer than CLAIM_AFTER_MS, taken over here (and handled first)."""
        self._claimed_at = time.monotonic()
        for stream in STREAMS:
            entries = self.redis.xautoclaim(stream, GROUP, self.name, CLAIM_AFTER_MS, count=16)[1]   # Redis 6.2 and 7
            for entry_id, fields in entries:
                if any(held[1] == entry_id for held in self._held):   # its own, read with a question: waiting here
                    continue
                if not fields:                       # trimmed away meanwhile
                    self.redis.xack(stream, GROUP, entry_id)
                    continue
                pending = self.redis.xpending_range(stream, GROUP, min=entry_id, max=entry_id, count=1)
                deliveries = pending[0]["times_delivered"] if pending else 1
                log.warning("worker %s took over job %s (delivery %d)", self.name, entry_id, deliveries)
                if deliveries > MAX_DELIVERIES:
                    job = RoundJob.from_json(fields["job"])
                    publish(self.redis, self.name, [(job, {"error": "this round could not be answered; please ask again"})])
                    self.redis.xack(stream, GROUP, entry_id)
                else:
                    self._held.insert(0, (stream, entry_id, fields["job"]))
                    self._retaken.add(entry_id)

    def _heartbeat(self) -> None:
        self._beat_at = time.monotonic()
        agents = {name: {"unavailable": p.unavailable, "warm": self._warm_since.get(name)}
                  for name, p in self.predictors.items()}
        agents.update({name: {"failed": why} for name, why in self._failed.items()})
        pipe = self.redis.pipeline()
        pipe.hset(WORKERS, self.name, json_text.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                                                  "agents": agents, "seen": time.time(),
                                                  "rounds": self.rounds_done, "threads": thread_pools(),
                                                  "prepared": not self._preparing()}))
        for predictor in self.predictors.values():      # the explanation cache's hits and misses, beside the CPU
            for field_name, value in (predictor.cache.counts.take() if predictor.cache else {}).items():
                self._cpu[field_name] = self._cpu.get(field_name, 0) + value
        for field_name, value in self._cpu.items():
            pipe.hincrbyfloat(CPU_STATS, field_name, value)
        pipe.execute()
        self._cpu = {}
        self._forgot_at = forget_dead(self.redis, self.name, self._forgot_at)    # dead workers leave WORKERS, group

    def _answer_warmup(self) -> None:
        """The server's agent answers one warm-up question before the worker reads any round (its first
        forward pays for lazy initialisation, not a player's question), and says so in WORKERS: what /healthz
        waits for."""
        job = warmup_job("")
        request = RoundRequest([self.pool.known(i) for i in job.images], job.question, job.secret, (), (), 0)
        result = self.predictors[""].predict([request])[0]
        if isinstance(result, Exception):
            raise RuntimeError(f"the agent {self.config.agent!r} could not answer a warm-up question: {result}")
        self._warm_since[""] = time.time()

    def _decode_masks(self) -> None:
        """The pool's true masks, which grading explanations reads, decoded while idle (~1 ms an image)."""
        upto = min(self._masks_kept + MASKS_PER_IDLE_STEP, self._masks_wanted)
        for i in range(self._masks_kept, upto):
            pool_masks(self.pool, i)
        self._masks_kept = upto

    def _account(self, kind: str, rounds: int, cpu_s: float) -> None:
        for name, value in ((f"{kind}:n", rounds), (f"{kind}:cpu_ms", cpu_s * 1000), (f"{kind}:batches", 1)):
            self._cpu[name] = self._cpu.get(name, 0) + value

    # --- jobs -------------------------------------------------------------------------------------

    def _predictor(self, agent: str) -> Predictor:
        """The agent a job names ("" = the server's), loaded on first use with its own explainers."""
        if agent not in self.predictors:
            name = agent or self.config.agent
            loaded = self._load_agent(name)
            if not agent:              # the server's agent keeps the pool; a study's agent its default cache
                loaded.feature_cache = (self.config.feature_cache or len(self.pool)) + FEATURE_MARGIN
            predictor = self.predictors[agent] = Predictor(loaded, explainer_options(self.config, name),
                                                           batch_invariant=self.config.batch.batch_invariant)
            predictor.cache = shared_cache(self.redis, predictor, self.config.explanation_cache)
            self._failed.pop(agent, None)
        return self.predictors[agent]

    def _handle(self, entries: list[tuple[str, str, str]]) -> None:
        todo: dict[tuple[str, str], list[tuple[RoundJob, RoundRequest]]] = {}   # (agent, kind) -> rounds
        done = [(stream, entry_id) for stream, entry_id, _ in entries]
        jobs: list[tuple[str, RoundJob]] = []
        retaken: list[RoundJob] = []
        for stream, entry_id, raw in entries:
            try:
                jobs.append((stream, RoundJob.from_json(raw)))
            except (ValueError, TypeError) as error:
                log.warning("unreadable job %s: %s", entry_id, error)
                continue
            if entry_id in self._retaken and jobs[-1][1].reply:
                retaken.append(jobs[-1][1])
        # which taken-over jobs are answered already (one round trip for all; a job read new never is)
        pipe = self.redis.pipeline(transaction=False)
        for job in retaken:
            pipe.exists(RESULT.format(job.job_id))
        answered = {job.job_id for job, found in zip(retaken, pipe.execute() if retaken else []) if found}
        self._retaken.difference_update(entry_id for _, entry_id in done)
        finished: list[tuple[RoundJob, dict]] = []        # results not yet written (worker_results.publish)
        for stream, job in jobs:
            if job.job_id in answered or (job.deadline and time.time() > job.deadline):
                continue          # nobody waits for it any more (a stale preparation), or it is answered already
            try:
                predictor = self._predictor(job.agent)
            except Exception as error:         # noqa: BLE001 - a missing or broken checkpoint
                log.warning("agent %r could not be loaded: %s", job.agent, error)
                why = self._failed[job.agent] = f"{type(error).__name__}: {error}"[:500]
                finished.append((job, {"error": why if job.kind == "warmup" else AGENT_FAILED, "agent_failed": why}))
                continue
            images = [self.pool.known(i) for i in job.images]
            if job.kind == "prepare":
                started = time.thread_time()
                predictor.prepare(images)
                self._account("prepare", 1, time.thread_time() - started)
                continue
            request = RoundRequest(images, job.question, job.secret, tuple(job.for_every_image),
                                   tuple(job.for_the_secret), job.seed)
            try:
                predictor.check(request)
            except ValueError as error:        # a question the agent cannot read, or explainers it lacks
                cause = "unparseable" if isinstance(error, QuestionError) else "refused"    # server/game_stage.py
                finished.append((job, {"error": str(error), "cause": cause}))
                continue
            kind = "explain" if stream == SLOW else "ask_explained" if job.for_every_image or job.for_the_secret \
                else "ask"
            todo.setdefault((job.agent, kind), []).append((job, request))
        publish(self.redis, self.name, finished, () if todo else done)   # refusals at once, before any answering
        # plain questions batch apart from rounds with explanations: they need the secret's answer only
        for i, ((agent, kind), pairs) in enumerate(todo.items()):
            started, finished = time.thread_time(), []
            for (job, _), result in zip(pairs, answer_rounds(self.predictors[agent], pairs, self.pool)):
                if isinstance(result, Exception) and job.kind == "warmup":   # the researcher reads why
                    why = f"{type(result).__name__}: {result}"[:500]
                    result = {"error": f"the agent could not answer: {why}", "agent_failed": why}
                elif isinstance(result, Exception):
                    result = {"error": ROUND_FAILED}
                finished.append((job, result))
                if "error" not in result:               # a warm-up or any answered round: this agent is warm here
                    self._warm_since.setdefault(job.agent, time.time())
                self.rounds_done += 1
            publish(self.redis, self.name, finished, done if i == len(todo) - 1 else ())
            self._account(kind, len(pairs), time.thread_time() - started)


# --- `exag worker` (its arguments: server/commands.py) ---------------------------------------------

def run_worker(config: WorkerConfig) -> int:
    """Runs one worker until SIGTERM or Ctrl-C; its pending jobs are then left for another to claim."""
    worker = Worker(config)
    print(f"inference worker {worker.name} ready in {worker.start_seconds:.1f} s", flush=True)
    signal.signal(signal.SIGTERM, lambda signum, frame: worker.stop_event.set())
    try:
        worker.run()
    except KeyboardInterrupt:
        pass
    finally:
        worker.close()
    return 0
