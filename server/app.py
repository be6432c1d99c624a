"""create_app(config): the Flask app with Socket.IO (async mode pinned to "threading"), wired to Redis
(a URL, or a private redis-server started here), the agent, its explainers and the game pool.

    app = create_app(ServerConfig(world="data/world"))
    app.extensions["socketio"].run(app, host=..., port=...)   # what `exag serve` does
    app.extensions["exag"].close()
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import torch
from flask import Flask
from flask_socketio import SocketIO

from game.study import load_study
from vqa_agent.agent import VQAAgent

from .config import ServerConfig
from .embedded_redis import EmbeddedRedis
from .events import Throttle, register
from .inference import InferenceWorker
from .play import Play
from .pool import GamePool
from .rating_task import RatingTask
from .routes import FRONTEND, pages
from .store import Store

ASYNC_MODE = "threading"   # plain threads: torch inference needs no monkey-patching, simple-websocket serves websockets
log = logging.getLogger(__name__)


@dataclass
class Services:
    config: ServerConfig
    store: Store
    pool: GamePool
    worker: InferenceWorker
    play: Play
    rating: RatingTask
    redis: EmbeddedRedis | None

    def close(self) -> None:
        self.worker.close()
        self.store.redis.close()
        if self.redis is not None:
            self.redis.stop()


def create_app(config: ServerConfig | None = None) -> Flask:
    config = config or ServerConfig()
    embedded = None
    url = config.redis_url
    if url is None:
        embedded = EmbeddedRedis(config.data_dir / "redis").start()
        url = embedded.url
    store = Store.connect(url)
    if config.inference_threads:
        torch.set_num_threads(config.inference_threads)
    try:
        agent = VQAAgent.from_pretrained(config.agent)
        options = {"relqa": {"world": config.world, "progress": config.progress}}
        if not Path(str(config.agent)).exists():
            options["nle"] = {"agent_name": config.agent}
        for name, extra in config.explainer_options.items():
            options[name] = {**options.get(name, {}), **extra}
        pool = GamePool(config.world, agent, config.data_dir / "cache", progress=config.progress)
        worker = InferenceWorker(agent, options, config.max_batch_rounds, config.max_wait_ms)
    except BaseException:
        if embedded is not None:
            embedded.stop()
        raise
    load_studies(store, config.studies_dir)
    play = Play(store, pool, worker, config)
    rating = RatingTask(store, {pool.world_index(i): i for i in range(len(pool))})

    app = Flask(__name__, static_folder=str(FRONTEND), static_url_path="/static")
    app.config.update(SECRET_KEY=config.secret_key, MAX_CONTENT_LENGTH=64 * 1024)
    app.register_blueprint(pages)
    socketio = SocketIO(app, async_mode=ASYNC_MODE, max_http_buffer_size=64 * 1024, cors_allowed_origins=[],
                        ping_interval=10, ping_timeout=20)
    register(socketio, play, store, Throttle(config.max_events_per_second, config.event_burst))
    app.extensions["exag"] = Services(config, store, pool, worker, play, rating, embedded)
    app.extensions["socketio"] = socketio
    return app


def load_studies(store: Store, studies_dir: Path) -> list[str]:
    """Study files not yet in Redis are added (open); studies already there keep their state."""
    added = []
    for path in sorted(Path(studies_dir).glob("*.json")) if Path(studies_dir).is_dir() else []:
        study = load_study(path)
        if store.save_study(study, "open", {"type": "study_created", "study": study.study_id, "config": study.to_dict(),
                                            "source": path.name}, only_if_new=True):
            added.append(study.study_id)
    return added
