"""create_app(config, live_report=None): the Flask app with Socket.IO (async mode pinned to "threading"),
wired to Redis (a URL, or a private redis-server started here) and the game pool. The web process runs no
model and never imports torch (server/torch_free.py): rounds go to inference workers through Redis
(server/rounds.py, server/worker.py), which `exag serve` starts as processes, and tests as threads in this
process (ServerConfig.inprocess_workers). `live_report(events, study_id) -> html` is the admin's live
report; the caller passes it (`exag serve`: the analysis's, experiments/analysis/live.py), so that the web
app does not import the analysis, which sits above it; without one the report page says it is unavailable.

    app = create_app(ServerConfig(world="data/world"), live_report=live_report)
    app.extensions["socketio"].run(app, host=..., port=...)   # what `exag serve` does
    app.extensions["exag"].close()
"""
from __future__ import annotations

import time

import logging
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from flask import Flask
from flask_socketio import SocketIO

from game.export_signature import server_key, write_key_file
from game.fingerprints import registered_run
from game.pool import GamePool
from game.study import StudyConfig, load_study

from .admin import admin
from .agents import AgentHandle, Agents
from .config import LiveReport, ServerConfig
from .embedded_redis import EmbeddedRedis
from .events import CpuAccount, Frame, message_queue, register
from .play import Play
from .rating_task import RatingTask
from .rounds import RoundQueue
from .routes import FRONTEND, pages
from .store import Store
from .study_check import check_study, check_unchanged

ASYNC_MODE = "threading"   # plain threads: no monkey-patching, simple-websocket serves websockets
log = logging.getLogger(__name__)


@dataclass
class Services:
    config: ServerConfig
    store: Store
    pool: GamePool
    worker: AgentHandle              # the server's agent (its explainers as the workers published them)
    play: Play
    rating: RatingTask
    redis: EmbeddedRedis | None
    agents: Agents | None = None     # the agents: the server's and those studies name
    workers: list = field(default_factory=list)   # in-process inference workers (ServerConfig.inprocess_workers)
    cpu: CpuAccount | None = None    # the web process's CPU per event (server/events.py)
    live_report: LiveReport | None = None   # the admin's live report (None: unavailable)

    def close(self) -> None:
        for worker in self.workers:
            worker.close()
        if self.cpu is not None:
            self.cpu.close()         # adds the last totals while the store is still there
        self.store.close()
        if self.redis is not None:
            self.redis.stop()     # the owner of the embedded Redis (started or adopted) stops it


def create_app(config: ServerConfig | None = None, live_report: LiveReport | None = None) -> Flask:
    config = config or ServerConfig()
    embedded = None
    url = config.redis_url
    if url is None:
        embedded = EmbeddedRedis(config.data_dir / "redis").start()
        url = embedded.url
    store = Store.connect(url)
    workers: list = []
    try:
        workers = [start_inprocess_worker(config, url, n) for n in range(config.inprocess_workers)]
        pool = GamePool(config.pool or config.world)
        # the pool's embeddings (image-set choice) are computed once by a worker, stored beside the world
        pool.load_embeddings(config.agent, config.data_dir / "cache", wait_s=config.embeddings_wait_s)
        agents = Agents(config.agent, RoundQueue(store.redis, config.round_timeout_s))
        worker = agents.server_worker
        load_studies(store, config.studies_dir, pool, agents)
        write_key_file(config.data_dir, server_key(store.redis))    # verifies this server's exports later
        play = Play(store, pool, agents, config)
        rating = RatingTask(store, {pool.world_index(i): i for i in range(len(pool))})

        app = Flask(__name__, static_folder=str(FRONTEND), static_url_path="/static")
        app.config.update(SECRET_KEY=config.secret_key, MAX_CONTENT_LENGTH=64 * 1024)
        app.register_blueprint(pages)
        app.register_blueprint(admin)     # the researcher's console
        socketio = SocketIO(app, async_mode=ASYNC_MODE, max_http_buffer_size=64 * 1024, cors_allowed_origins=[],
                            ping_interval=10, ping_timeout=20, serializer=Frame,   # Frame: unreadable frames say why
                            # the queue on this Redis: every web process reaches every player
                            client_manager=message_queue(url) if config.message_queue else None,
                            # several processes on one port: no long-polling, whose requests must reach one process
                            **({"transports": ["websocket"]} if config.web_processes > 1 else {}))
        cpu = register(socketio, play, store, config)
    except BaseException:      # whatever fails, nothing this call started is left running
        for started in workers:
            started.close()
        store.close()
        if embedded is not None:
            embedded.stop()
        raise
    app.extensions["exag"] = Services(config, store, pool, worker, play, rating, embedded, agents, workers, cpu,
                                      live_report)
    app.extensions["socketio"] = socketio
    return app


def start_inprocess_worker(config: ServerConfig, redis_url: str, number: int):
    """An inference worker as a thread of this process, on the same streams as `exag worker` (tests); it
    imports torch, so a web process that must stay torch-free runs none (inprocess_workers=0)."""
    from .worker import Worker, WorkerConfig
    return Worker(WorkerConfig(redis_url, config.world, config.data_dir, config.agent, config.worker_device,
                               config.inference_threads, config.explainer_options, config.batch,
                               progress=config.progress, name=f"inprocess-{number}-{secrets.token_hex(3)}",
                               pool=config.pool)).start()


def log_registered_run(store: Store, study: StudyConfig, server_agent: str) -> None:
    """A `study_ran_with` event for a pre-registered study: what this server runs it with (the export carries it,
    and the analysis holds it to the registration: experiments/analysis/preregistered.py). ValueError when that
    is not what was registered."""
    ran = registered_run(study, study.agent or server_agent)
    if ran is not None:
        store.log({"type": "study_ran_with", "study": study.study_id, "time": time.time(), **ran})


def load_studies(store: Store, studies_dir: Path, pool: GamePool, agents: Agents) -> list[str]:
    """Study files not yet in Redis are added (open); studies already there keep their state. A new study
    that cannot run on this server (check_study, as for the admin form) is refused with its reason, and so
    is a file that would change the pre-registration of a study already there (check_unchanged)."""
    added = []
    for path in sorted(Path(studies_dir).glob("*.json")) if Path(studies_dir).is_dir() else []:
        study = load_study(path)
        stored = store.study(study.study_id)
        try:
            if stored is None:
                check_study(study, pool, agents)
            else:
                check_unchanged(study, stored[0])
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from error
        if store.save_study(study, "open", {"type": "study_created", "study": study.study_id, "config": study.to_dict(),
                                            "source": path.name}, only_if_new=True):
            added.append(study.study_id)
        log_registered_run(store, stored[0] if stored else study, agents.server_agent)
    return added
