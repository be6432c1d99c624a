"""The example explainer plugin (examples/explainer_plugin/), pip-installed into a folder of its own and
put on sys.path, as a package installed next to exag would be: its entry point in group exag.explainers
is found by importlib.metadata, its module imported by name."""
from __future__ import annotations

import contextlib
import importlib
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "explainer_plugin"
MODULE = "exag_topk"


def install(target: Path) -> Path:
    """Installs the example into `target` (offline: no index, the environment's setuptools), from a copy:
    a build in place would leave build/ and egg-info in the example's folder."""
    source = target.parent / f"{target.name}-source"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", str(target), str(source)], check=True, timeout=300)
    return target


@contextlib.contextmanager
def on_path(*folders: Path):
    """`folders` on sys.path for the block, and the plugin's modules forgotten after it."""
    sys.path[:0] = [str(f) for f in folders]
    importlib.invalidate_caches()
    try:
        yield
    finally:
        for folder in folders:
            sys.path.remove(str(folder))
        for name in [m for m in sys.modules if m == MODULE or m.startswith(MODULE + ".")]:
            del sys.modules[name]
        importlib.invalidate_caches()
        from explainers import plugins, registry
        plugins.resolve.cache_clear()           # what was found while it was installed
        registry._INSTALLED_SEEN.clear()
