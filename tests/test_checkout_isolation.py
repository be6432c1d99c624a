"""Each checkout runs its own code (issue 30): scripts/setup.sh keeps one shared environment for the
third-party dependencies and gives every clone its own layer (`.venv/`, the clone installed editable on top
of the shared site-packages), so setting up a second clone leaves the first one running its own code and
the shared environment pointing at no clone.

Two clones of this working tree (uncommitted edits included, so the set-up under test is the one here) are
set up side by side against the real shared environment: EXAG_SETUP_NO_INSTALL makes set-up use what is
installed there and never download (when the shared dependencies are not this pyproject.toml's, the test
is skipped: `scripts/setup.sh` installs them)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("EXAG_VENV")
              or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "exag" / "venv")
# Nothing from the calling environment may point an interpreter at a checkout.
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
PROBE = '''
import os as _os
if _os.environ.get("EXAG_CLONE_PROBE"):   # appended by tests/test_checkout_isolation.py
    import server, server._clone_marker as _marker
    print(_marker.NAME, __file__, server.__file__)
    raise SystemExit(0)
'''


def copy_tree(dest: Path) -> None:
    """What a clone of this working tree holds: tracked and untracked files that git does not ignore (so
    no .venv, data or build output). Copied, never linked: the clones' files are edited below."""
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():                      # a tracked file deleted in the working tree is skipped
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


def setup(clone: Path, cwd: Path) -> str:
    done = subprocess.run(["bash", str(clone / "scripts" / "setup.sh")], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**ENV, "EXAG_VENV": str(SHARED), "EXAG_SETUP_NO_INSTALL": "1"})
    if done.returncode == 3:
        pytest.skip(f"the shared environment lacks this pyproject.toml's dependencies: {done.stderr.strip()}")
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def run(argv, cwd: Path, **env) -> str:
    done = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**ENV, **env})
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def assert_runs_own_code(clone: Path, cwd: Path) -> None:
    python, exag = clone / ".venv" / "bin" / "python", clone / ".venv" / "bin" / "exag"
    # Imports (the project's and the shared third-party ones, torch included) from the clone's layer.
    name, cli, server, torch = run([python, "-c", "import exag_cli, server, server._clone_marker as m, torch; "
                                    "print(m.NAME, exag_cli.__file__, server.__file__, torch.__file__)"],
                                   cwd).split()
    assert name == clone.name
    assert Path(cli) == clone / "exag_cli.py" and Path(server) == clone / "server" / "__init__.py"
    assert Path(torch).is_relative_to(SHARED.resolve()) or Path(torch).is_relative_to(SHARED)
    # The `exag` command: it works, and it is this clone's code that runs.
    assert "usage: exag" in run([exag, "--help"], cwd)
    name, cli, server = run([exag], cwd, EXAG_CLONE_PROBE="1").split()
    assert (name, Path(cli), Path(server)) == (clone.name, clone / "exag_cli.py", clone / "server" / "__init__.py")


@pytest.mark.timeout(300)
def test_two_clones_each_run_their_own_code(tmp_path):
    if not (SHARED / "bin" / "python").exists():
        pytest.skip(f"no shared environment at {SHARED}: scripts/setup.sh makes it")
    clones = [tmp_path / "A", tmp_path / "B"]
    for clone in clones:                          # each clone's code marked as its own
        copy_tree(clone)
        (clone / "server" / "_clone_marker.py").write_text(f"NAME = {clone.name!r}\n")
        with open(clone / "exag_cli.py", "a") as f:
            f.write(PROBE)
    for clone in clones:                          # A, then B: B's set-up used to re-point A at B's code
        setup(clone, cwd=tmp_path)
    for clone in clones:
        assert_runs_own_code(clone, cwd=tmp_path)

    # The shared environment holds the dependencies and no exag: nothing in it points at a clone.
    assert not (SHARED / "bin" / "exag").exists()
    assert run([SHARED / "bin" / "python", "-c", "import importlib.util as u, importlib.metadata as m\n"
                "print(u.find_spec('exag_cli'), u.find_spec('server'))\n"
                "try: print(m.version('exag'))\nexcept m.PackageNotFoundError: pass"], tmp_path).split() == ["None", "None"]

    # Set-up again with nothing changed: nothing to do, and A still runs A.
    assert setup(clones[0], cwd=clones[0]) == ""
    assert_runs_own_code(clones[0], cwd=tmp_path)
