"""Freed memory kept in the process for its next tensors. glibc's malloc gives a large block (from 128 KB,
a threshold it raises up to 32 MB as it sees such blocks freed) back to the kernel when it is freed, and
trims the top of its heap past 128 KB free; the next tensor of that size then faults every page in again.
A round's attention allocates tensors of several MB per reasoning step, so where page faults are dear (a
virtual machine: issue 45's 2-core CI machine) the worker spent more time faulting than computing:

    tanh over a [50, 300, 128] float tensor, one thread: 16.8 ms with glibc's defaults, 7.4 ms with them kept
    rounds with explanations in batches of 8 (`experiments.benchmark.round_cpu`, A/B twice, back to back):
    'both' arm 83 / 70 -> 62 / 61 ms of CPU a round, bought explanations 85 / 77 -> 70 / 73 ms; alone: no change

An inference worker calls `keep_freed_memory()` at its start; its RSS stays at its peak working set (tens of
MB above the model and the pool's features) instead of breathing. Elsewhere than glibc it does nothing.
"""
from __future__ import annotations

import ctypes
import sys

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3      # mallopt's parameters (malloc.h)
MMAP_THRESHOLD = 32 * 2**20                      # blocks from this size are mapped apart (glibc's largest)
TRIM_THRESHOLD = 2**30                           # free memory at the heap's top kept up to this


def keep_freed_memory() -> bool:
    """Has glibc keep freed blocks below 32 MB (and up to 1 GB of free heap) for the next allocations;
    whether it could (False: not glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):            # musl and others: no mallopt
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
