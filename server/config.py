"""ServerConfig: everything `exag serve` and `create_app` can be told, with the defaults a fresh clone
runs with (the default world, the default agent, a private Redis under data/)."""
from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .admission import AdmissionSettings
from .inference import BatchSettings   # torch-free: its explainers and torch load with a Predictor

REPO = Path(__file__).resolve().parent.parent
LiveReport = Callable[[list[dict], str], str]   # create_app's live report: (event log, study id) -> its page's HTML


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 5000
    world: Path = Path("data/world")   # a built world; its pool supplies the games' images
    pool: Path | None = None           # an imported image pool (`exag pool import`) supplying them instead
    agent: str = "default"             # agent name or checkpoint path
    # Redis: a URL, or None to start a private redis-server (append-only file) in data_dir/redis
    redis_url: str | None = None
    data_dir: Path = Path("data/server")
    studies_dir: Path = REPO / "studies"   # study config files loaded (if new) at start
    default_study: str = "demo"        # where the bare URL / leads
    admin_token: str = ""              # "" = a random one, printed at start
    secret_key: str = ""               # Flask session key; "" = random per process
    # explainers: options per explainer name, passed to load_explainer
    explainer_options: dict[str, dict] = field(default_factory=dict)
    # inference batching: what the inference workers are started with; the defaults and their meaning are
    # BatchSettings' (LitServe-style: in one place, next to the predict step in inference.py)
    max_batch_rounds: int | None = None    # None: the device's default (BatchSettings.for_device)
    max_wait_ms: float | None = None
    batch_invariant: bool = BatchSettings.batch_invariant
    inference_threads: int = 1         # torch CPU threads: one keeps tail latency low beside the web threads
    # flood control, per connection: a token bucket (server/throttle.py; docs/protocol.md, "Refusals and
    # limits"). A real page sends one message at a time and waits for its answer, and fetches each earlier
    # round once: a person's bursts are a few messages, far under event_burst, and never 10 a second for long
    max_events_per_second: float = 10.0   # the sustained rate
    event_burst: int = 20                 # messages at once (a new connection's bucket starts full)
    # a participant with no message for this long is a dropout (not counted for arm balance)
    dropout_after_s: float = 1800.0
    seed: int | None = None            # image sets and tokens; None = unpredictable (real studies)
    progress: bool = True
    # refusals and limits (docs/protocol.md): open Socket.IO connections per client address (per web
    # process; behind a proxy every client has the proxy's address), and diagnostics of refusals
    max_connections_per_address: int = 20
    max_connections_per_process: int = 5000   # all addresses together: what one web process may hold (~50 KB each)
    refusals_logged_per_second: float = 2.0   # per client address, bursts up to event_burst; more are only answered
    diagnostics_max_len: int = 10_000          # the capped stream exag:diagnostics keeps about this many
    # Socket.IO's message queue on the Redis, so any web process can emit to any player (server/events.py);
    # off only for one process alone (Flask-SocketIO's test client refuses a queue)
    message_queue: bool = True
    web_processes: int = 1             # gunicorn processes on the port (server/serve.py; more than one: WebSocket only)
    # inference workers (server/worker.py; rounds travel through Redis streams, server/rounds.py)
    inprocess_workers: int = 0         # workers run as threads of create_app's process (tests); `exag serve` starts processes
    worker_device: str = "auto"        # in-process workers' torch device
    round_timeout_s: float = 30.0      # a round no worker answered by then fails with a message to the player
    # admission control (server/admission.py): new participants are refused at the door when the server is full
    max_players: int | None = None     # active participants admitted; None: estimated from the workers' measured CPU
    max_queue_age_s: float = AdmissionSettings.max_queue_age_s   # a question waiting this long for a worker: full
    embeddings_wait_s: float = 900.0   # how long create_app waits for a worker to store the pool's embeddings

    def __post_init__(self) -> None:
        self.world, self.data_dir, self.studies_dir = Path(self.world), Path(self.data_dir), Path(self.studies_dir)
        self.pool = Path(self.pool) if self.pool else None
        if not self.admin_token:
            self.admin_token = os.environ.get("EXAG_ADMIN_TOKEN") or secrets.token_urlsafe(16)
        if not self.secret_key:
            self.secret_key = os.environ.get("EXAG_SECRET_KEY") or secrets.token_hex(32)
        if self.redis_url is None:
            self.redis_url = os.environ.get("REDIS_URL") or None

    @property
    def admission(self) -> AdmissionSettings:
        return AdmissionSettings(max_players=self.max_players, max_queue_age_s=self.max_queue_age_s)

    @property
    def batch(self) -> BatchSettings:
        return BatchSettings.for_device(self.worker_device, self.max_batch_rounds, self.max_wait_ms, self.batch_invariant)
