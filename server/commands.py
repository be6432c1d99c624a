"""`exag serve`, `exag worker` and `exag export`: start the game server, an inference worker for it, and write
its event log as tidy tables.

Cheap to import and torch-free (`exag --help` loads it, and so does the web process `exag serve` becomes):
the web app, the worker and the export are imported when a command runs.
"""
from __future__ import annotations

import argparse
import atexit
import json
import os
import time
from functools import partial
from pathlib import Path

from game.pool import POOLS_DIR, pool_dir, seed_shipped_embeddings
from vqa_agent.checkpoints import agent_name
from vqa_agent.world.build import (POOL_SPLIT, missing_images, render_missing, render_progress,
                                   start_background_render)
from vqa_agent.world.default import DEFAULT_WORLD, GAME_WORLD, default_world

from .config import LiveReport, ServerConfig
from .inference import GPU_BATCH, BatchSettings


# --- `exag serve` ---------------------------------------------------------------------------------------

def add_serve_arguments(parser: argparse.ArgumentParser, live_report: LiveReport | None = None) -> None:
    """`live_report`: the admin's live report, handed to the web app (the command line owns it: the server
    does not import the analysis)."""
    parser.description = ("Start the game: Flask-SocketIO on Redis (a private redis-server in --data-dir unless "
                          "--redis-url or REDIS_URL is given), the default agent and its explainers. Prints the "
                          "players' and the admin's URLs.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--redis-url", default=None, help="use this Redis (default: REDIS_URL, else a private one)")
    parser.add_argument("--data-dir", type=Path, default=ServerConfig.data_dir,
                        help="the private Redis's data (append-only file) and caches")
    parser.add_argument("--world", type=Path, default=None,
                        help=f"a built world (default: {DEFAULT_WORLD} when built, else {GAME_WORLD}, laid out "
                             "on first start)")
    parser.add_argument("--pool", default=None, help="play on imported images (`exag pool import`): a directory, "
                        f"or a name under {POOLS_DIR}/ (default: the world's pool)")
    parser.add_argument("--agent", default="default", help="agent name or checkpoint directory")
    parser.add_argument("--admin-token", default=None, help="admin token (default: EXAG_ADMIN_TOKEN, else random)")
    parser.add_argument("--studies", type=Path, default=None,
                        help="directory of study files to load when new (default: the repo's studies/)")
    parser.add_argument("--log", action="store_true", help="log every HTTP request")
    parser.add_argument("--dev", action="store_true",
                        help="Werkzeug's development server instead of gunicorn (debugging only)")
    parser.add_argument("--web-processes", type=_above_zero(int), default=max(1, (os.cpu_count() or 1) // 2),
                        metavar="N", help="web processes serving the port (default: half the cores, at least 1: each "
                        "answers ~150 messages/s); more than one speaks WebSocket only (server/serve.py)")
    parser.add_argument("--web-threads", type=int, default=None, metavar="N",
                        help="gunicorn threads of the web process; each open websocket holds one "
                             "(default: server/serve.py's DEFAULT_WEB_THREADS, 300)")
    parser.add_argument("--trusted-proxies", type=int, default=0, metavar="N",
                        help="proxies in front that set X-Forwarded-For (1 behind one nginx), so limits per client "
                             "address see the client's own (default 0: none)")
    parser.add_argument("--max-connections-per-address", type=int, default=20, metavar="N",
                        help="open Socket.IO connections one client address may hold (default 20; raise it behind a "
                             "proxy and for load tests from one machine)")
    parser.add_argument("--max-events-per-second", type=_above_zero(float),
                        default=ServerConfig.max_events_per_second, metavar="R",
                        help="messages a connection may send a second on average (default "
                             f"{ServerConfig.max_events_per_second:g}; a token bucket, see --event-burst and "
                             "docs/protocol.md)")
    parser.add_argument("--event-burst", type=_above_zero(int), default=ServerConfig.event_burst, metavar="N",
                        help=f"messages a connection may send at once (default {ServerConfig.event_burst})")
    parser.add_argument("--max-players", type=_above_zero(int), default=None, metavar="N",
                        help="active participants admitted at once; more are refused at the door with a page that "
                             "says when to come back (default: estimated from the workers' measured CPU per player, "
                             "docs/operations.md \"Admission\")")
    parser.add_argument("--max-queue-age-s", type=_above_zero(float), default=ServerConfig.max_queue_age_s,
                        metavar="S", help="new joins are refused while a question has waited this long for a worker "
                                          f"(default {ServerConfig.max_queue_age_s:g})")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, metavar="N",
                        help="inference worker processes started on this machine (default: one per core; 0: none, "
                             "workers run elsewhere on the same Redis)")
    parser.add_argument("--threads", type=int, default=1, metavar="T",
                        help="threads per worker, of every pool it has: torch, BLAS, OpenMP (default 1)")
    parser.add_argument("--device", default="auto",
                        help="this machine's workers' torch device: auto (cuda when available, else cpu), cpu or cuda")
    parser.add_argument("--gpu-workers", type=int, default=None, metavar="N",
                        help="of the workers, how many run on GPUs, the rest on the CPU (default with a GPU: one a "
                             "GPU; processes sharing a GPU answer less, docs/results.md)")
    parser.add_argument("--explainer-options", type=json.loads, default={}, metavar="JSON",
                        help='this machine\'s workers\' options per explainer, e.g. \'{"relqa": {"min_bank": 50}}\'')
    parser.set_defaults(run=partial(serve_command, live_report=live_report))


def _above_zero(kind):
    """An argparse type: a finite number of `kind` above 0."""
    def parse(text: str):
        value = kind(text)
        if not 0 < value < float("inf"):
            raise argparse.ArgumentTypeError(f"must be a number above 0, not {text}")
        return value
    parse.__name__ = kind.__name__        # argparse's message: "invalid float value: 'x'"
    return parse


def serve_command(args: argparse.Namespace, live_report: LiveReport | None = None) -> int:
    from vqa_agent.threads import pin_threads

    from .processes import WorkerProcesses, gpus_here, worker_arguments, worker_devices
    from .serve import redis_for, run_web

    pin_threads(1)       # this process and the web process it forks: threads, not BLAS pools, serve players

    pool = pool_dir(args.pool) if args.pool else None    # a wrong --pool stops here, before the world is laid out
    config = ServerConfig(host=args.host, port=args.port, redis_url=args.redis_url, data_dir=args.data_dir,
                          world=_serve_world(args.world, args.agent, args.data_dir), agent=args.agent, pool=pool,
                          admin_token=args.admin_token or "", worker_device=args.device,
                          max_connections_per_address=args.max_connections_per_address,
                          max_events_per_second=args.max_events_per_second, event_burst=args.event_burst,
                          max_players=args.max_players, max_queue_age_s=args.max_queue_age_s,
                          explainer_options=args.explainer_options, web_processes=1 if args.dev else args.web_processes,
                          **({"studies_dir": args.studies} if args.studies else {}))

    def ready(app) -> None:       # once the web process answers
        base = f"http://{'127.0.0.1' if args.host in ('0.0.0.0', '::') else args.host}:{args.port}"
        pool = f", image pool {config.pool}" if config.pool else ""
        print(f"\nExAG is ready (agent {agent_name(config.agent)}, world {config.world}{pool}, Redis {config.redis_url}; "
              f"{'the development server' if args.dev else f'gunicorn, {config.web_processes} web process(es)'}).")
        print(f"  play (at-will demo):    {base}/?study=demo")
        print(f"  play (controlled demo): {base}/?study=demo-controlled&arm=both")
        print(f"  rating task:            {base}/rate?rater=ID&sig=...  (issue signed rater links on the admin page)")
        print(f"  admin:                  {base}/admin?token={config.admin_token}")
        print("Stop with Ctrl-C.", flush=True)

    with redis_for(config):      # the embedded Redis unless a URL is given; stopped on Ctrl-C and SIGTERM
        _check_study_files(config)
        workers = None
        if args.workers:             # this machine's inference workers, restarted when one dies
            devices = worker_devices(args.device, args.workers, gpus_here(), args.gpu_workers)
            workers = WorkerProcesses(worker_arguments(config, args.threads), args.workers, args.threads, devices)
            on_gpu = sum(d != "cpu" for d in devices)
            print(f"started {args.workers} inference worker(s) ({args.threads} torch thread(s) each"
                  f"{f'; {on_gpu} on the GPU' if on_gpu else ''}): pids {' '.join(map(str, workers.pids))}", flush=True)
        try:
            if workers is not None:   # "ready" once a worker of every agent a study file names has answered
                _check_studies_on_workers(config)
            return run_web(config, dev=args.dev, threads=args.web_threads, log_requests=args.log,
                           trusted_proxies=args.trusted_proxies, ready=ready, live_report=live_report)
        finally:
            if workers is not None:
                workers.stop()


_background_render = None


def _serve_world(world: Path | None, agent: str, data_dir: Path) -> Path:
    """The world games draw from (the default-world rule), with the shipped pool embeddings in place, the
    game pool's images rendered before anyone plays (issue 45: on demand under load, a first game showed
    grey tiles for seconds; all cores render the 1,500 in ~23 s on 2 cores, ~3 s on 16), and a
    low-priority background process rendering the rest a lazily laid out world still lacks."""
    global _background_render
    world = default_world(world)
    if not (world / "manifest.json").exists():
        raise FileNotFoundError(f"{world} is not a built world; build it with `exag world build --out {world}`")
    seed_shipped_embeddings(world, agent, data_dir)
    pool_missing = len(missing_images(world, splits=(POOL_SPLIT,)))
    if pool_missing:
        started = time.monotonic()
        print(f"rendering the game pool's {pool_missing} images on {os.cpu_count()} cores (once) ...", flush=True)
        render_missing(world, splits=(POOL_SPLIT,))
        print(f"rendered the game pool in {time.monotonic() - started:.0f} s", flush=True)
    if _background_render is None and not render_progress(world)["done"]:
        _background_render = start_background_render(world)
        if _background_render is not None:
            progress = render_progress(world)
            print(f"rendering {world}'s remaining {progress['total'] - progress['rendered']} images in the "
                  f"background (pid {_background_render.pid}, low priority); games render what they need "
                  "at once", flush=True)
            atexit.register(_background_render.terminate)
    return world


def _check_study_files(config: ServerConfig) -> None:
    """Before anything starts: a study file that is malformed or would change a stored study's
    pre-registration stops `exag serve` with one line; a paid study playing a public agent is warned of."""
    from .store import Store
    from .study_check import check_study_files

    store = Store.connect(config.redis_url)
    try:
        for warning in check_study_files(config.studies_dir, store, config.agent):
            print(f"warning: {warning}", flush=True)
    finally:
        store.close()


def _check_studies_on_workers(config: ServerConfig) -> None:
    """Before the web process opens, once this machine's workers run: the server's agent and every study file's
    answer a warm-up question (server/agents.py), then each new study file passes the checks the web process
    runs when it loads it (server/study_check.py), so that what cannot run stops `exag serve` with one line
    naming the file, never a web worker that fails to boot. The first start waits as long as the web process
    waits for the pool's embeddings."""
    from game.pool import GamePool
    from game.study import load_study

    from .agents import Agents, AgentUnavailable, agent_key, prove_agent
    from .rounds import RoundQueue
    from .store import Store
    from .study_check import check_study

    paths = sorted(Path(config.studies_dir).glob("*.json")) if Path(config.studies_dir).is_dir() else []
    named = {"": "--agent"}           # agent -> where it is named
    for path in paths:
        agent = load_study(path).agent
        if agent and agent_key(agent) != agent_key(config.agent):
            named.setdefault(agent, str(path))
    store = Store.connect(config.redis_url)
    agents = Agents(config.agent, RoundQueue(store.redis))
    try:
        for study, status in store.studies():    # created on the admin page: closed, not fatal, when it fails
            if status == "open" and study.agent and agent_key(study.agent) != agent_key(config.agent):
                named.setdefault(study.agent, f"study {study.study_id}")
        for agent, source in named.items():
            print(f"waiting for an inference worker to answer a warm-up question of agent "
                  f"{agent or agent_name(config.agent)} ...", flush=True)
            try:
                seconds = prove_agent(agents.queue, agent, config.embeddings_wait_s if not agent else 600)
            except AgentUnavailable as error:
                if not source.startswith("study "):
                    raise
                for study, _ in store.studies():
                    if study.agent == agent:
                        store.close_study(study.study_id, str(error))
                print(f"warning: {source} closed to new joins: {error}", flush=True)
                continue
            print(f"  answered in {seconds:.1f} s", flush=True)
        pool = GamePool(config.pool or config.world)
        pool.load_embeddings(config.agent, config.data_dir / "cache", wait_s=config.embeddings_wait_s)
        source = ""
        for source in paths:
            study = load_study(source)
            if store.study(study.study_id) is None:
                check_study(study, pool, agents)
    except (AgentUnavailable, ValueError) as error:
        raise ValueError(f"{source}: {error}"[:1000]) from None
    finally:
        store.close()


# --- `exag worker` --------------------------------------------------------------------------------------

def add_worker_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Answers game rounds from the server's Redis streams (any number of workers, on any "
                          "machine that reaches the Redis and has the world): batches rounds across games, runs "
                          "the agent and its explainers, grades them and returns each round's one result. Stops on "
                          "SIGTERM or Ctrl-C.")
    parser.add_argument("--redis-url", default=None, help="the game server's Redis (default: REDIS_URL)")
    parser.add_argument("--data-dir", type=Path, default=ServerConfig.data_dir,
                        help="the server's data directory (its cache holds the pool embeddings of a read-only world)")
    parser.add_argument("--world", type=Path, default=None, help="the world the server's games draw from "
                        f"(default: {DEFAULT_WORLD} when built, else {GAME_WORLD})")
    parser.add_argument("--pool", default=None, help="the server's imported image pool, if it plays on one")
    parser.add_argument("--agent", default="default", help="the server's agent (rounds that name no agent)")
    parser.add_argument("--device", default="auto", help="auto (cuda when available, else cpu), cpu or cuda")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads of every pool it has: torch, BLAS, OpenMP (default 1)")
    parser.add_argument("--max-batch-rounds", type=int, default=None,
                        help=f"rounds answered in one batch (default: {BatchSettings.max_batch_rounds} on a CPU, "
                             f"{GPU_BATCH.max_batch_rounds} on a GPU)")
    parser.add_argument("--max-wait-ms", type=float, default=None,
                        help=f"how long a batch's first round waits for others (default: {BatchSettings.max_wait_ms:g} "
                             f"ms on a CPU, {GPU_BATCH.max_wait_ms:g} on a GPU)")
    parser.add_argument("--batch-invariant", action="store_true",
                        help="answer each round by calls of its own and look at each image alone, so that a round's "
                             "result does not depend on the rounds batched with it (reproducible simulations; slower)")
    parser.add_argument("--feature-cache", type=int, default=None,      # None: server/worker.py's FEATURE_CACHE
                        help="pool images whose features stay in memory (default: the whole pool, ~0.25 MB each)")
    parser.add_argument("--no-warm-pool", dest="warm_pool", action="store_false",
                        help="do not look at the pool's images while idle (benchmarks)")
    parser.add_argument("--explanation-cache", type=int, default=None, metavar="ENTRIES",
                        help="explanations kept in the Redis for every worker to reuse (default: 40,000, ~200 MB; "
                             "0: none; server/explanation_cache.py)")
    parser.add_argument("--explainer-options", default=None,
                        help='JSON: options per explainer, e.g. \'{"nle": {"model": "DIR"}}\'')
    parser.set_defaults(run=worker_command)


def worker_command(args: argparse.Namespace) -> int:
    from .explanation_cache import DEFAULT_MAX_ENTRIES
    from .worker import FEATURE_CACHE, WorkerConfig, run_worker

    url = args.redis_url or os.environ.get("REDIS_URL")
    if not url:
        raise ValueError("pass --redis-url URL (or set REDIS_URL): the game server's Redis")
    world = default_world(args.world)
    return run_worker(WorkerConfig(url, world, args.data_dir, args.agent, args.device, args.threads,
                                   json.loads(args.explainer_options) if args.explainer_options else {},
                                   BatchSettings.for_device(args.device, args.max_batch_rounds, args.max_wait_ms,
                                                            args.batch_invariant),
                                   feature_cache=FEATURE_CACHE if args.feature_cache is None else args.feature_cache,
                                   warm_pool=args.warm_pool, pool=pool_dir(args.pool) if args.pool else None,
                                   explanation_cache=DEFAULT_MAX_ENTRIES if args.explanation_cache is None
                                   else args.explanation_cache))


# --- `exag export` --------------------------------------------------------------------------------------

def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("One row per game, per round, per rating, per explanation shown, per participant and per "
                          "rater's rating, plus the raw events (events.jsonl).")
    parser.add_argument("--format", choices=("csv", "jsonl", "parquet"), default="csv")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--redis-url", default=None)
    parser.add_argument("--data-dir", type=Path, default=ServerConfig.data_dir)
    parser.set_defaults(run=export_command)


def export_command(args: argparse.Namespace) -> int:
    from game.export import write_export

    from .embedded_redis import EmbeddedRedis
    from .reports import exported_events
    from game.export_signature import server_key
    from .store import Store

    embedded = None
    url = args.redis_url
    if url is None:
        embedded = EmbeddedRedis(args.data_dir / "redis")
        if not embedded.alive() and not embedded.has_data():
            raise FileNotFoundError(f"no game data in {args.data_dir} (no Redis there); pass --data-dir or --redis-url")
        url = embedded.start().url
    try:
        store = Store.connect(url)
        events = exported_events(store, "exag export")     # its looks at outcomes logged first, with stream ids
        written = write_export(events, args.out, args.format, server_key(store.redis))
    finally:
        if embedded is not None:
            embedded.stop()
    print(f"{len(events)} events exported to {args.out}: {', '.join(p.name for p in written)}")
    return 0
