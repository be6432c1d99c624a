"""An inference worker keeps freed memory for its next tensors (vqa_agent/memory.py): an attention step's
tensors of several MB, allocated again after they were freed, fault no pages in, where glibc's defaults
(which trim its heap once two of them are free) fault them in every time."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.cli import REPO

FAULTS_OF_REPEATED_TENSORS = """
import resource, sys
import torch
from vqa_agent.memory import keep_freed_memory
applied = keep_freed_memory() if sys.argv[1] == "kept" else None
torch.set_num_threads(1)
projected, key = torch.randn(50, 300, 256), torch.randn(50, 1, 256)   # an attention's shapes in a round
def step():
    return torch.tanh(projected[..., :128] + key[..., :128])         # two 7.7 MB tensors, then both freed
for _ in range(10):                                                 # the first allocations may fault
    step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    step()
print(applied, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


MAPPED_APART = """
import ctypes, sys
from vqa_agent.memory import keep_freed_memory
if sys.argv[1] == "kept":
    keep_freed_memory()
libc = ctypes.CDLL("libc.so.6")

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                      "fsmblks", "uordblks", "fordblks", "keepcost")]

libc.mallinfo2.restype = MallInfo2
libc.malloc.restype = ctypes.c_void_p
before = libc.mallinfo2().hblks
block = libc.malloc(20 * 2**20)                      # a 20 MB tensor's memory, in a fresh process
print(libc.mallinfo2().hblks - before)
"""


def run(script: str, mode: str) -> list[str]:
    return subprocess.run([sys.executable, "-c", script, mode], capture_output=True, text=True, check=True,
                          cwd=REPO).stdout.split()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_repeated_attention_tensors_fault_no_pages_in():
    applied, kept = run(FAULTS_OF_REPEATED_TENSORS, "kept")
    assert applied == "True"
    pages = 20 * 2 * 50 * 300 * 128 * 4 // 4096      # what faulting every page of the 40 tensors would be: 75,000
    assert int(kept) < pages / 500                   # the same pages serve every step (glibc's defaults: 0 or 74,360)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_blocks_below_32_mb_come_from_the_heap_not_mapped_apart():
    assert run(MAPPED_APART, "default") == ["1"]     # glibc maps a fresh process's 20 MB block apart (freed: unmapped)
    assert run(MAPPED_APART, "kept") == ["0"]
