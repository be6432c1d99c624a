"""The inference workers of one machine, as `exag serve` runs them beside its web process: `exag worker`
processes (server/worker.py) started with the arguments that serve this server's config, restarted when
one dies, stopped with the server. Torch loads in those processes, never in this one.

    workers = WorkerProcesses(worker_arguments(config, threads=1), count=2, threads=1)
    ...
    workers.stop()

Each supervisor reads its workers' exit statuses itself. Anything else in this process that reaps children
must call `reap_workers()` before it does: gunicorn's master (server/serve.py) waits on any child
(waitpid(-1)) on SIGCHLD, and took every worker's status first, which Popen then read as "exited with status
0", a `kill -9` included (issue 51).
"""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import weakref

from vqa_agent.threads import thread_env

log = logging.getLogger(__name__)
_SUPERVISING: weakref.WeakSet[WorkerProcesses] = weakref.WeakSet()    # this process's, for reap_workers()


class WorkerProcesses:
    """`exag serve`'s inference workers on this machine: `count` processes of `exag worker`, each restarted
    when it dies (after RESTART_DELAY_S, longer while it keeps dying at start), all stopped by `stop()`.
    They die with this process too (Linux: the parent-death signal)."""
    RESTART_DELAY_S = 1.0
    MAX_RESTART_DELAY_S = 30.0

    def __init__(self, arguments: list[str], count: int, threads: int = 1, devices: list[str] | None = None) -> None:
        # its thread pools pinned before it loads numpy or torch (vqa_agent/threads.py; the worker pins again)
        env = {**os.environ, **thread_env(threads)}
        devices = devices or [""] * count           # a worker's own --device, after (so over) the arguments'
        self._popen = lambda i: subprocess.Popen(
            [sys.executable, "-m", "exag_cli", "worker", *arguments, *(["--device", devices[i]] if devices[i] else [])],
            preexec_fn=_die_with_parent, env=env)
        # held while a worker starts or is polled: one that dies in between is polled by whoever waits on the lock
        # (reap_workers(), before gunicorn's waitpid(-1)), never reaped unseen
        self._reaping = threading.Lock()
        with self._reaping:
            self._procs = [self._popen(i) for i in range(count)]
            _SUPERVISING.add(self)
        self._delays = [self.RESTART_DELAY_S] * count
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._supervise, name="exag-worker-supervisor", daemon=True)
        self._thread.start()

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._procs]

    def reap(self) -> None:
        """Collects the exit status of every worker that has ended (Popen keeps it, for `_supervise` to log)."""
        with self._reaping:
            for proc in self._procs:
                proc.poll()

    def _supervise(self) -> None:
        started = [time.monotonic()] * len(self._procs)
        while not self._stopping.wait(0.5):
            self.reap()
            for i, proc in enumerate(self._procs):
                if proc.returncode is None or self._stopping.is_set():
                    continue
                lived = time.monotonic() - started[i]
                self._delays[i] = self.RESTART_DELAY_S if lived > 60 else \
                    min(self._delays[i] * 2, self.MAX_RESTART_DELAY_S)
                log.warning("inference worker %d (pid %d) %s after %.0f s; restarting it in %.0f s",
                            i, proc.pid, exit_status(proc.returncode), lived, self._delays[i])
                if self._stopping.wait(self._delays[i]):
                    return
                with self._reaping:
                    self._procs[i], started[i] = self._popen(i), time.monotonic()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)
        _SUPERVISING.discard(self)
        for proc in self._procs:
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + timeout_s
        for proc in self._procs:
            try:
                proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except Exception:       # noqa: BLE001 - subprocess.TimeoutExpired: it would not stop
                proc.kill()
                proc.wait(timeout=5)


def reap_workers() -> None:
    """Collects the exit status of every inference worker of this process that has ended, for its supervisor's
    log; called by gunicorn's master before it reaps any child of its own (server/serve.py)."""
    for workers in list(_SUPERVISING):
        workers.reap()


def gpus_here() -> int:
    """NVIDIA GPUs this process may use, found without torch (the web process never loads it): the driver's
    list, or CUDA_VISIBLE_DEVICES where it narrows it."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip() and not d.strip().startswith("-")])
    try:
        return len(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        return 0


def worker_devices(device: str, count: int, gpus: int, gpu_workers: int | None = None) -> list[str]:
    """Each of `count` workers' device. On GPUs, `gpu_workers` of them (default: one a GPU) take one each in
    turn and the rest run on the CPU: measured on an H200 (docs/results.md), 4 and 8 worker processes
    sharing one GPU spent 9 and 27 ms of CPU per reply and answered less, while one alone answered 1.9x the
    rounds of a CPU worker at 0.6x its CPU. "cpu", or "auto" without a GPU: all on the CPU."""
    if device == "cpu" or (device == "auto" and gpus == 0 and not gpu_workers):
        return ["cpu"] * count
    on_gpu = min(count, max(gpus, 1) if gpu_workers is None else gpu_workers)
    named = [f"cuda:{i % gpus}" if gpus > 1 else "cuda" for i in range(on_gpu)]
    return named + ["cpu"] * (count - on_gpu)


def exit_status(returncode: int) -> str:
    """How a process ended, as an operator reads it (Popen gives -N for a signal, which reads as a status)."""
    return f"was killed by signal {-returncode} ({signal.Signals(-returncode).name})" if returncode < 0 \
        else f"exited with status {returncode}"


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the parent dies (prctl PR_SET_PDEATHSIG; Linux only)."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def worker_arguments(config, threads: int) -> list[str]:
    """The `exag worker` arguments that serve the web process of this ServerConfig."""
    arguments = ["--redis-url", config.redis_url, "--data-dir", str(config.data_dir), "--world", str(config.world),
                 "--agent", str(config.agent), "--threads", str(threads), "--device", config.worker_device]
    if config.max_batch_rounds is not None:      # else the worker's device decides (BatchSettings.for_device)
        arguments += ["--max-batch-rounds", str(config.max_batch_rounds)]
    if config.max_wait_ms is not None:
        arguments += ["--max-wait-ms", str(config.max_wait_ms)]
    if config.pool:
        arguments += ["--pool", str(config.pool)]
    if config.batch_invariant:
        arguments.append("--batch-invariant")
    if config.explainer_options:
        arguments += ["--explainer-options", json.dumps(config.explainer_options)]
    return arguments
