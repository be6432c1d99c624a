"""What a registered study runs, as fingerprints: the exag code, the agent's checkpoint, the pool's images and every
third-party explainer it shows. `exag preregister` registers them (game/preregistration.py `registered`), a server
refuses a registered study whose agent, pool or plugins differ and logs what it runs (`ran_with`), and the analysis
refuses the "preregistered" label when what ran is not what was registered (experiments/analysis/preregistered.py).

    ran_with(study)   # {"exag_version": ..., "agent_fingerprint": ..., "pool_fingerprint": ..., "plugins": {...}}

Each fingerprint is of bytes, never of names or timestamps: a commit plus a hash of the local diff and untracked
sources (two different local edits are two versions), a checkpoint's files, the pool directory's files (every image,
its manifest), a plugin's distribution version and the source files of its package.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# a checkout's folders that hold no code the study runs: a study file edited by `exag preregister` itself, the
# docs, benchmark results and tests do not change the version (nor does any Markdown file)
NOT_CODE = ("studies", "docs", "results", "tests", "*.md")
# where an untracked file is code the study runs: the packages, the page, the scripts, and top-level Python. What a
# researcher's commands write elsewhere in the checkout (docs/real-study.md's prereg/, dry-run/, report/ and the
# like) is data, which must not change the version between `exag preregister` and the study (issue 55: it did)
CODE = ("vqa_agent", "explainers", "game", "server", "experiments", "frontend", "scripts", ":(glob)*.py",
        "pyproject.toml")


@functools.lru_cache(maxsize=1)      # the analysis and the server ask for each registered study; it stays
def exag_version() -> str:
    """checkout_version of the exag checkout that runs."""
    return checkout_version(REPO)


def checkout_version(repo: Path) -> str:
    """The commit of the exag checkout that runs, with "+changes-" and a hash of what differs from it when
    anything does (the diff of its tracked files outside NOT_CODE and the content of its untracked, not ignored files
    in CODE: two different local edits are two versions), else the installed package's version."""
    def git(*args: str) -> bytes:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, timeout=30, check=True).stdout

    try:
        commit = git("rev-parse", "HEAD").decode().strip()
        # content, not timestamps: an edit within the second of the last commit keeps a file's size and mtime
        subprocess.run(["git", "update-index", "-q", "--really-refresh"], cwd=repo, capture_output=True, timeout=60)
        outside = [f":(exclude){top}" for top in NOT_CODE]
        diff = git("diff", "HEAD", "--binary", "--", ".", *outside)
        changes = hashlib.sha256(diff)
        untracked = sorted(p for p in git("ls-files", "--others", "--exclude-standard", "-z", "--", *CODE)
                           .decode().split("\0") if p)
        for name in untracked:
            path = repo / name
            changes.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"") + b"\0")
        dirty = bool(untracked) or bool(diff.strip())
        return commit + (f"+changes-{changes.hexdigest()[:12]}" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        try:
            return f"exag {importlib.metadata.version('exag')}"
        except importlib.metadata.PackageNotFoundError:
            return "unknown (neither a git checkout nor an installed package)"


def files_fingerprint(root: Path) -> str:
    """SHA-256 over every file under `root` (its path relative to root and its bytes), in sorted order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in Path(root).rglob("*")
                       if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def pool_fingerprint(pool: str) -> str:
    """The fingerprint of a study's "pool" (game/pool.py pool_dir): an imported pool's files' bytes (every image
    and the manifest); a built world's scenes.json, from which the exag version renders its images.
    FileNotFoundError when there is no such pool."""
    from .pool import pool_dir
    found = pool_dir(pool)
    if (found / "scenes.json").is_file():
        return hashlib.sha256(b"world\0" + (found / "scenes.json").read_bytes()).hexdigest()
    return files_fingerprint(found)


def plugin_fingerprints(names) -> dict[str, dict]:
    """{name: {"distribution": "name==version" or None, "files": fingerprint of its package's sources}} for the
    third-party explainers among `names` (built-ins are part of the exag version). ValueError for a name the
    explainer table does not know."""
    from explainers.registry import entry
    out = {}
    for name in sorted(set(names)):
        row = entry(name)
        if not row.plugin:
            continue
        module = row.target.partition(":")[0]
        top = module.split(".")[0]
        spec = importlib.util.find_spec(top)
        where = Path(spec.origin).parent if spec and spec.origin and spec.submodule_search_locations else \
            Path(spec.origin) if spec and spec.origin else None
        distributions = importlib.metadata.packages_distributions().get(top, [])
        version = None
        if distributions:
            version = f"{distributions[0]}=={importlib.metadata.version(distributions[0])}"
        files = None if where is None else \
            files_fingerprint(where) if where.is_dir() else hashlib.sha256(where.read_bytes()).hexdigest()
        out[name] = {"distribution": version, "files": files}
    return out


def shown_explainers(study) -> list[str]:
    """Every explainer a study's games can show (all its arms)."""
    from .study import explainers_of
    return sorted({name for arm in study.arms for name in explainers_of(study, arm)})


def ran_with(study, agent_fingerprint: str | None) -> dict:
    """What a server runs a study with, in the registration's terms (`agent_fingerprint`: the checkpoint's, which
    the server computed as it checked it)."""
    return {"exag_version": exag_version(), "agent_fingerprint": agent_fingerprint,
            "pool_fingerprint": pool_fingerprint(study.pool) if study.pool else None,
            "plugins": plugin_fingerprints(shown_explainers(study))}


def registered_run(study, agent: str) -> dict | None:
    """What a server runs a pre-registered study with (`ran_with`; `agent`: the checkpoint it plays, the study's or
    the server's), for its event log; ValueError, one line, when that is not what was registered. None for a study
    not registered."""
    from vqa_agent.checkpoints import checkpoint_fingerprint

    from . import preregistration
    if not preregistration.registered(study):
        return None
    try:
        ran = ran_with(study, checkpoint_fingerprint(agent))
    except (FileNotFoundError, ValueError) as error:
        raise ValueError(f"study {study.study_id}: what it runs cannot be fingerprinted here ({error})"[:500]) from None
    preregistration.check_ran(study, ran)
    return ran
