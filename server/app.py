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

from .agents import Agents
from .config import ServerConfig
from .embedded_redis import EmbeddedRedis
from .events import Frame, register
from .inference import InferenceWorker
from .play import Play
from .pool import GamePool
from .rating_task import RatingTask
from .routes import FRONTEND, pages
from .store import Store
from .study_check import check_study

ASYNC_MODE = "threading"   # plain threads: torch inference needs no monkey-patching, simple-websocket serves websockets
log = logging.getLogger(__name__)


@dataclass
class Services:
    config: ServerConfig
    store: Store
    pool: GamePool
    worker: InferenceWorker          # the server's agent's
    play: Play
    rating: RatingTask
    redis: EmbeddedRedis | None
    agents: Agents | None = None     # every agent's worker: the server's and those studies name

    def close(self) -> None:
        if self.agents is not None:
            self.agents.close()
        else:
            self.worker.close()
        self.store.close()
        if self.redis is not None:
            self.redis.stop()     # the owner of the embedded Redis (started or adopted) stops it


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
    agents = None
    try:
        agent = VQAAgent.from_pretrained(config.agent)
        pool = GamePool(config.world, agent, config.data_dir / "cache", progress=config.progress)
        worker = InferenceWorker(agent, explainer_options(config, config.agent), config.max_batch_rounds,
                                 config.max_wait_ms)
        agents = Agents(config.agent, worker, lambda name: load_worker(config, name))
        load_studies(store, config.studies_dir, pool, agents)
        play = Play(store, pool, agents, config)
        rating = RatingTask(store, {pool.world_index(i): i for i in range(len(pool))})

        app = Flask(__name__, static_folder=str(FRONTEND), static_url_path="/static")
        app.config.update(SECRET_KEY=config.secret_key, MAX_CONTENT_LENGTH=64 * 1024)
        app.register_blueprint(pages)
        socketio = SocketIO(app, async_mode=ASYNC_MODE, max_http_buffer_size=64 * 1024, cors_allowed_origins=[],
                            ping_interval=10, ping_timeout=20, serializer=Frame)   # Frame: unreadable frames say why
        register(socketio, play, store, config)
    except BaseException:      # whatever fails, nothing this call started is left running
        if agents is not None:
            agents.close()
        store.close()
        if embedded is not None:
            embedded.stop()
        raise
    app.extensions["exag"] = Services(config, store, pool, worker, play, rating, embedded, agents)
    app.extensions["socketio"] = socketio
    return app


def explainer_options(config: ServerConfig, agent_name: str) -> dict[str, dict]:
    """The explainers' options for an agent: RelQA's bank from the server's world, the NLE model shipped for
    the agent, then the configured options (for an agent a study names, all but the server agent's NLE model:
    its own is looked up)."""
    options = {"relqa": {"world": config.world, "progress": config.progress}}
    if not Path(str(agent_name)).exists():
        options["nle"] = {"agent_name": agent_name}
    for name, extra in config.explainer_options.items():
        if name == "nle" and agent_name != config.agent:
            continue
        options[name] = {**options.get(name, {}), **extra}
    return options


def load_worker(config: ServerConfig, agent_name: str) -> InferenceWorker:
    """An inference worker with its own explainers for the agent a study names."""
    agent = VQAAgent.from_pretrained(agent_name)
    return InferenceWorker(agent, explainer_options(config, agent_name), config.max_batch_rounds, config.max_wait_ms)


def load_studies(store: Store, studies_dir: Path, pool: GamePool, agents: Agents) -> list[str]:
    """Study files not yet in Redis are added (open); studies already there keep their state. A new study
    that cannot run on this server (check_study, as for the admin form) is refused with its reason."""
    added = []
    for path in sorted(Path(studies_dir).glob("*.json")) if Path(studies_dir).is_dir() else []:
        study = load_study(path)
        if store.study(study.study_id) is None:
            try:
                check_study(study, pool, agents)
            except ValueError as error:
                raise ValueError(f"{path}: {error}") from error
        if store.save_study(study, "open", {"type": "study_created", "study": study.study_id, "config": study.to_dict(),
                                            "source": path.name}, only_if_new=True):
            added.append(study.study_id)
    return added
