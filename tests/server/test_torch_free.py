"""The web process never imports torch, as a rule about modules (server/torch_free.py): every module it may
import imports in a fresh interpreter where torch cannot be imported, without even trying to import it.
(tests/server/test_worker_queue.py starts a whole web app so and checks that it loads no other module.)"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from server.torch_free import WEB_MODULES

REPO = Path(__file__).resolve().parents[2]
# run as `python -c NO_TORCH MODULE...`: torch and its family are unimportable, and any attempt is reported,
# also one a library makes and survives (try: import torch), which in the web process would load it. One
# interpreter imports the modules in turn (a fresh one each cost 12 s here): an attempt is reported under the
# module whose import made it, and a module that fails to import is reported and the next one tried.
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
failed = []
for module in sys.argv[1:]:
    try:
        importlib.import_module(module)
    except Exception as error:
        failed.append(f"{module}: {type(error).__name__}: {error}")
    else:
        if tried:
            failed.append(f"{module} tried to import {', '.join(sorted(set(tried)))}")
    tried.clear()
sys.exit("\\n".join(failed) if failed else 0)
"""


def imports_without_torch(*modules: str) -> list[str]:
    """Why each of `modules` that cannot be imported without torch cannot (empty: all can), imported in turn
    in one fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", NO_TORCH, *modules], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    return [] if done.returncode == 0 else done.stderr.strip().splitlines()


def test_every_web_module_imports_without_torch():
    assert len(WEB_MODULES) == len(set(WEB_MODULES)) and "server.app" in WEB_MODULES
    failed = imports_without_torch(*sorted(WEB_MODULES))
    assert not failed, "modules of the web process that need torch:\n" + "\n".join(failed)


def test_a_module_that_needs_torch_is_caught():
    why = imports_without_torch("game.rules", "vqa_agent.agent", "server.app")
    assert len(why) == 1 and why[0].startswith("vqa_agent.agent: ") and "torch cannot be imported here" in why[0]
