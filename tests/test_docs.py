"""The documentation stays valid: the site in docs/ builds with MkDocs without a single warning (a broken
link, a missing anchor, a page left out of the nav), README's links point at files that exist (and at
headings that exist), and nothing cites a file the repository does not hold.

The site is built exactly as `mkdocs build --strict` builds it (mkdocs.yml at the repository root), into a
temporary directory. MkDocs is in the `dev` extra; without it the build test is skipped and says so.
"""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli import exag

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"

# [text](target) and ![alt](target); a target may carry a "title", which is not part of the path
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (it is in the dev extra: pip install -e '.[dev]', or pip install mkdocs)")
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                            str(REPO / "mkdocs.yml"), "--site-dir", str(out)],
                           cwd=REPO, capture_output=True, text=True, timeout=120)
    log = built.stdout + built.stderr
    assert built.returncode == 0, f"mkdocs build --strict failed:\n{log}"
    warnings = [line for line in log.splitlines() if "WARNING" in line]
    assert not warnings, "mkdocs build warned:\n" + "\n".join(warnings)
    return out


def test_the_site_builds_without_warnings(site):
    assert (site / "index.html").is_file()
    for page in (REPO / "docs").glob("*.md"):
        built = site / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
        assert built.is_file(), f"docs/{page.name} did not become a page of the site"


def _relative_links(markdown: str) -> list[str]:
    text = FENCE.sub("", markdown)                      # commands in code blocks are not links
    text = re.sub(r"`[^`\n]*`", "", text)               # nor is code inline
    return [target for target in LINK.findall(text)
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target)]   # http:, https:, mailto: ...


def _slug(heading: str) -> str:
    """The anchor python-markdown's toc gives a heading (MkDocs' default)."""
    text = re.sub(r"[`*]", "", heading).strip().lower()
    text = re.sub(r"[^\w\s-]", "", text)
    return re.sub(r"[-\s]+", "-", text)


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    ids = {_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M)}
    return ids | set(re.findall(r"\{#([\w-]+)\}", text))


def test_every_relative_link_in_readme_resolves():
    links = _relative_links(README.read_text())
    assert links, "README links to nothing: its 'Where everything is' section has gone?"
    broken = []
    for target in links:
        path, _, anchor = target.partition("#")
        file = (REPO / path) if path else README
        if not file.exists():
            broken.append(f"{target}: no file {path}")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target}: no heading with anchor #{anchor} in {path}")
    assert not broken, "README links that do not resolve:\n" + "\n".join(broken)


def test_readme_is_a_front_door():
    lines = README.read_text().splitlines()
    assert len(lines) < 200, f"README has {len(lines)} lines; the manual belongs in docs/"
    for page in ["docs/world.md", "docs/agents.md", "docs/explainers.md", "docs/studies.md",
                 "docs/operations.md", "docs/protocol.md", "docs/analysis.md", "docs/threat-model.md",
                 "docs/results.md", "docs/research.md"]:
        assert f"]({page}" in README.read_text(), f"README does not point to {page}"


def test_nothing_cites_a_file_outside_the_repository():
    """The research facts the code relies on are in docs/research.md; RESEARCH.md was never in the repo."""
    tracked = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "*.py", "*.md", "*.js",
                              "*.html", "*.sh", "*.toml", "*.yml"],
                             cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    citing = [f"{name}:{number}" for name in tracked if (REPO / name).is_file()
              for number, line in enumerate((REPO / name).read_text(errors="replace").splitlines(), 1)
              if "RESEARCH.md" in line and name != "tests/test_docs.py"]
    assert not citing, "these cite RESEARCH.md, which is not in the repository (cite docs/research.md):\n" + \
        "\n".join(citing)


def _documented_commands() -> dict[tuple[str, ...], set[str]]:
    """Every `exag ...` in the docs' code blocks: its (sub)command path -> the flags used with it.

    A synopsis may continue on indented lines (`exag serve [--host H] ...` then `    [--workers N]`) or
    with a trailing backslash; both belong to the command above them."""
    commands: dict[tuple[str, ...], set[str]] = {}
    for page in [README, *sorted((REPO / "docs").glob("*.md"))]:
        for block in re.findall(r"^```[\w-]*\n(.*?)^```", page.read_text(), re.S | re.M):
            lines: list[str] = []
            for line in block.replace("\\\n", " ").splitlines():
                if lines and re.match(r"\s+[\[-]", line) and "exag " in lines[-1]:
                    lines[-1] += " " + line
                else:
                    lines.append(line)
            for line in lines:
                for match in re.finditer(r"(?:^|[\s;`(])exag((?:\s+[a-z][a-z0-9-]*(?=\s|$))*)(.*?)(?=;|&&|$)", line):
                    path = tuple(match.group(1).split())
                    if path:
                        commands.setdefault(path, set()).update(re.findall(r"--[a-z][a-z0-9-]*", match.group(2)))
    return commands


def test_every_exag_command_in_the_docs_exists_with_its_flags():
    """Code blocks stay valid: each documented `exag` command exists, and its --help lists every flag shown."""
    commands = _documented_commands()
    assert ("serve",) in commands and ("analyze",) in commands
    wrong = []
    for path, flags in sorted(commands.items()):
        shown = exag(*path, "--help")
        if shown.returncode != 0:
            wrong.append(f"exag {' '.join(path)}: --help failed: {shown.stderr.strip().splitlines()[-1:]}")
            continue
        missing = sorted(f for f in flags if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", shown.stdout))
        if missing:
            wrong.append(f"exag {' '.join(path)}: its --help does not list {missing}")
    assert not wrong, "documented commands that do not parse as shown:\n" + "\n".join(wrong)


def test_every_python_module_the_docs_run_exists():
    modules = set()
    for page in [README, *sorted((REPO / "docs").glob("*.md"))]:
        modules |= set(re.findall(r"python -m ([\w.]+)", page.read_text()))
    modules -= {"pip", "venv", "pytest", "mkdocs", "exag_cli"}
    assert modules, "the docs name no benchmark script?"
    missing = [m for m in sorted(modules) if importlib.util.find_spec(m) is None]
    assert not missing, f"the docs run modules that do not exist: {missing}"


def test_the_documented_commands_are_on_the_checkouts_path():
    """`source .venv/bin/activate` puts .venv/bin on PATH: the docs' `mkdocs serve` and `pytest` must be there
    (they come from the shared environment; scripts/setup.sh writes a launcher for each)."""
    layer = Path(sys.prefix) / "bin"
    if not (layer / "exag").exists():
        pytest.skip(f"not running from a checkout's .venv made by scripts/setup.sh ({sys.prefix})")
    for command in ("exag", "mkdocs", "pytest"):
        ran = subprocess.run([str(layer / command), "--help"], capture_output=True, text=True, timeout=60)
        assert ran.returncode == 0, (command, ran.stderr)
