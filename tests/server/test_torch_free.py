"""The web process never imports torch, as a rule about modules (server/torch_free.py): every module it may
import imports in a fresh interpreter where torch cannot be imported, without even trying to import it.
(tests/server/test_worker_queue.py starts a whole web app so and checks that it loads no other module.)"""
from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from server.torch_free import WEB_MODULES

REPO = Path(__file__).resolve().parents[2]
# run as `python -c NO_TORCH MODULE`: torch and its family are unimportable, and any attempt is reported,
# also one a library makes and survives (try: import torch), which in the web process would load it
NO_TORCH = """
import importlib, sys
tried = []

class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("torch", "torchvision"):
            tried.append(name)
            raise ImportError(f"{name} cannot be imported here: the web process runs without torch")
        return None

sys.meta_path.insert(0, NoTorch())
importlib.import_module(sys.argv[1])
if tried:
    sys.exit(f"{sys.argv[1]} tried to import {', '.join(sorted(set(tried)))}")
"""


def imports_without_torch(module: str) -> str | None:
    """None when `module` imports in a fresh interpreter without torch, else why not."""
    done = subprocess.run([sys.executable, "-c", NO_TORCH, module], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    return None if done.returncode == 0 else f"{module}: {done.stderr.strip().splitlines()[-1:]}"


def test_every_web_module_imports_without_torch():
    assert len(WEB_MODULES) == len(set(WEB_MODULES)) and "server.app" in WEB_MODULES
    with ThreadPoolExecutor(max_workers=2) as pool:       # a fresh interpreter each, two at a time
        failed = [why for why in pool.map(imports_without_torch, WEB_MODULES) if why]
    assert not failed, "modules of the web process that need torch:\n" + "\n".join(failed)


def test_a_module_that_needs_torch_is_caught():
    why = imports_without_torch("vqa_agent.agent")
    assert why is not None and "torch cannot be imported here" in why
