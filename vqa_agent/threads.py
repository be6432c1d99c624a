"""A process's thread pools, pinned from one place. torch keeps two pools (intra-op and inter-op), and the
BLAS and OpenMP libraries under numpy, scipy and torch (OpenBLAS, MKL, libgomp) each start one thread per
core by default, per process: twelve inference workers on sixteen cores would run ~200 spinning threads
(issue 45). Every process ExAG starts pins all of them to what it was given:

    pin_threads(config.threads, load_torch=True)   # an inference worker (server/worker.py), at its start
    subprocess.Popen(..., env={**os.environ, **thread_env(1)})   # a child, before it imports numpy or torch
    thread_pools()                       # what this process runs now (the worker publishes it)

The environment variables reach libraries loaded later and child processes; threadpoolctl limits the
libraries loaded already; torch's own calls set its pools (its inter-op pool only before its first use).
Torch is pinned only when this process imported it: the web process never does.
"""
from __future__ import annotations

import importlib
import os
import sys

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
                    "NUMEXPR_NUM_THREADS")


def thread_env(threads: int) -> dict[str, str]:
    """The environment that pins a child process's BLAS and OpenMP pools before it loads them."""
    return {name: str(threads) for name in THREAD_VARIABLES}


def pin_threads(threads: int, load_torch: bool = False) -> None:
    """Pins every thread pool of this process to `threads` (torch's inter-op pool to 1: rounds are batched,
    one forward at a time). `load_torch`: import torch first (a process that will use it: its inter-op pool
    is pinned only before its first use)."""
    from threadpoolctl import threadpool_limits

    os.environ.update(thread_env(threads))
    torch = importlib.import_module("torch") if load_torch else sys.modules.get("torch")
    threadpool_limits(threads)                # applied for good: called as a function, not as a context
    if torch is not None:
        torch.set_num_threads(threads)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:                  # its pool started already (a process that ran torch before)
            pass


def thread_pools() -> dict:
    """The process's pools as they are: torch's (when loaded) and every library threadpoolctl finds, as
    {"torch_intra_op", "torch_inter_op", "libraries": [{"library", "api", "threads"}]}."""
    from threadpoolctl import threadpool_info

    torch = sys.modules.get("torch")
    return {"torch_intra_op": torch.get_num_threads() if torch else None,
            "torch_inter_op": torch.get_num_interop_threads() if torch else None,
            "libraries": [{"library": os.path.basename(info["filepath"]), "api": info["internal_api"],
                           "threads": info["num_threads"]} for info in threadpool_info()]}
