"""How `exag serve` runs the web process: gunicorn, the production server Flask-SocketIO supports for the
"threading" async mode (one worker process with threads: `gunicorn -w 1 --threads N`; websockets through
simple-websocket on the gthread worker), or with `--dev` Werkzeug's development server.

    with redis_for(config):            # the embedded Redis when no URL is given, stopped on the way out
        ...                            # (inference workers of this machine start here, on config.redis_url)
        run_web(config, threads=200)   # returns when stopped (SIGTERM, Ctrl-C)

One gunicorn serves one port with `config.web_processes` worker processes (`exag serve --web-processes N`;
one process is one Python interpreter, so one core's worth of messages: ~156 replies/s, docs/results.md).
Gunicorn's balancing across them is not sticky, which Socket.IO's long-polling needs (every request of a
client reaching the process that holds its session); a WebSocket is one connection, held by one process. So
with several processes the server speaks WebSocket only (the page starts with it; a browser that cannot open
one cannot play there), and with one it also takes long-polling. The Socket.IO message queue on the Redis
(server/events.py) lets any process emit to any player. Web processes on several machines: `exag serve
--workers 0 --redis-url URL` behind a proxy with sticky sessions (docs/operations.md).

The master process (this one) holds the embedded Redis and its supervisor, and this machine's inference
workers and theirs (server/processes.py, whose exit statuses it collects before gunicorn reaps its own
children); the app, with its threads, is created in the forked worker (threads do not survive a fork), which
gunicorn restarts if it dies.
"""
from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterator

from flask import Flask

from .config import LiveReport, ServerConfig
from .embedded_redis import EmbeddedRedis
from .processes import reap_workers as reap_inference_workers

DEFAULT_WEB_THREADS = 1000    # an open websocket holds one thread of the pool: at least the players at once, and more
                              # (with 300, a 400-player load test had 477 connections refused)
GRACEFUL_STOP_S = 5           # on SIGTERM, how long open requests get before the worker is stopped
KEEPALIVE_S = 5               # idle HTTP keep-alive connections (Socket.IO polling, page assets)
log = logging.getLogger(__name__)


@contextlib.contextmanager
def redis_for(config: ServerConfig) -> Iterator[EmbeddedRedis | None]:
    """The embedded Redis in config.data_dir/redis when config.redis_url is None (which then becomes its
    URL, for the web process and the inference workers), stopped on the way out; else nothing to start.
    A SIGTERM ends like Ctrl-C, so the Redis stops too (gunicorn installs its own handlers meanwhile)."""
    signal.signal(signal.SIGTERM, _exit_on_term)
    embedded = None
    if config.redis_url is None:
        embedded = EmbeddedRedis(config.data_dir / "redis").start()
        config.redis_url = embedded.url
    try:
        yield embedded
    finally:
        if embedded is not None:
            embedded.stop()
            config.redis_url = None


def run_web(config: ServerConfig, dev: bool = False, threads: int | None = None, log_requests: bool = False,
            trusted_proxies: int = 0, ready: Callable[[Flask], None] | None = None,
            live_report: LiveReport | None = None) -> int:
    """Serves the game on config.host:config.port until stopped; returns the exit status. `ready(app)` is
    called once the app answers (in the worker process). `trusted_proxies`: how many proxies in front set
    X-Forwarded-For, so a client's address (the per-address connection limit) is its own, not the proxy's.
    `live_report`: the admin's live report, handed to `create_app`."""
    make_app = _app_factory(config, trusted_proxies, live_report)
    if dev:
        return _run_werkzeug(config, make_app, log_requests, ready)
    return _run_gunicorn(config, make_app, threads or DEFAULT_WEB_THREADS, log_requests, ready)


def _app_factory(config: ServerConfig, trusted_proxies: int, live_report: LiveReport | None) -> Callable[[], Flask]:
    def make_app() -> Flask:
        from vqa_agent.threads import pin_threads

        from .app import create_app

        pin_threads(1)     # the web process (forked or not): its threads serve players; numpy's pools need none

        app = create_app(config, live_report)
        if trusted_proxies:
            from werkzeug.middleware.proxy_fix import ProxyFix

            # outside Socket.IO's middleware: engine.io keeps the environ with the client's own address
            app.wsgi_app = ProxyFix(app.wsgi_app, x_for=trusted_proxies, x_proto=trusted_proxies,
                                    x_host=trusted_proxies)
        return app
    return make_app


def _run_werkzeug(config: ServerConfig, make_app: Callable[[], Flask], log_requests: bool,
                  ready: Callable[[Flask], None] | None) -> int:
    app = make_app()
    try:
        if ready is not None:
            ready(app)
        app.extensions["socketio"].run(app, host=config.host, port=config.port, allow_unsafe_werkzeug=True,
                                       log_output=log_requests)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        app.extensions["exag"].close()
    return 0


def _run_gunicorn(config: ServerConfig, make_app: Callable[[], Flask], threads: int, log_requests: bool,
                  ready: Callable[[Flask], None] | None) -> int:
    from gunicorn.app.base import BaseApplication
    from gunicorn.arbiter import Arbiter

    made: list[Flask] = []       # this web process's app (each forked process has its own list)
    said = multiprocessing.Value("b", 0)     # shared by the forked web processes: "ready" is said once

    def post_worker_init(worker) -> None:
        with said.get_lock():                # by whichever process can serve first, not by each
            first, said.value = not said.value, 1
        if ready is not None and first:
            ready(made[0])

    def worker_exit(server, worker) -> None:
        if made:
            made.pop().extensions["exag"].close()

    options = {
        "bind": [f"[{config.host}]:{config.port}" if ":" in config.host else f"{config.host}:{config.port}"],
        "workers": config.web_processes,    # more than one: WebSocket only (the module docstring says why)
        "worker_class": "gthread",
        "threads": threads,
        "worker_connections": max(1000, 2 * threads),
        "keepalive": KEEPALIVE_S,
        "timeout": 0,                       # no heartbeat kill: the first start may prepare the pool for minutes
        "graceful_timeout": GRACEFUL_STOP_S,
        "proc_name": f"exag-web:{config.port}",
        "accesslog": "-" if log_requests else None,
        "loglevel": "info" if log_requests else "warning",
        "post_worker_init": post_worker_init,
        "worker_exit": worker_exit,
    }

    class WebArbiter(Arbiter):
        def reap_workers(self) -> None:
            # gunicorn's waitpid(-1) reaps any child: this process's inference workers' statuses go to their
            # supervisor first (else a `kill -9` was logged "exited with status 0", issue 51)
            reap_inference_workers()
            super().reap_workers()

    class WebProcess(BaseApplication):
        def load_config(self) -> None:
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self) -> Flask:            # in the worker, after the fork
            made.append(make_app())
            return made[0]

    master, status = os.getpid(), 0
    try:
        WebArbiter(WebProcess()).run()      # gunicorn's master loop: SIGTERM stops gracefully, Ctrl-C at once
    except SystemExit as stop:              # the arbiter always ends with sys.exit, and so does a forked web process
        status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except KeyboardInterrupt:
        pass
    if os.getpid() != master:     # a forked web process ends here: its caller's clean-up (Redis, workers) is the master's
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status


def _exit_on_term(signum, frame) -> None:
    sys.exit(0)
