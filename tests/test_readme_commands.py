"""Every command README shows (its ```bash blocks) runs as written, or at least parses as written.

README is the front door: a newcomer copies its commands. Each one is checked the cheapest way that still
catches a stale command:

- `bash scripts/start.sh`: the script is valid bash and starts `exag serve`; that server is started here
  (on a free port, a temporary data directory, no inference workers, so it is up in seconds) and must
  answer `/healthz` and the demo links README gives. The set-up the script runs first
  (`scripts/setup.sh`) is what runs the test suite itself, so it is not repeated here.
- `bash scripts/test.sh`: the script is valid bash (running the suite inside the suite would recurse).
- `exag ...`: run as written when it is quick and writes nothing (RUN_AS_WRITTEN); otherwise the
  subcommand exists (`exag SUB --help` exits 0) and every flag the command uses appears in its help.
- `python -m MODULE ...`: the module exists, `--help` exits 0 and lists every flag used.
- `source .../bin/activate`, `cp SRC DST`: what they read exists (nothing is written into the checkout).

`exag` is this checkout's command line (exag_cli.main, run in this process by tests/cli.py; the start script's
server is a real `python -m exag_cli serve`), whichever checkout an installed `exag` script happens to point
at. A command this test does not know how to check fails it:
teach the test when README gains a new kind of command.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from cli import exag
from experiments.simulate.bot import Bot

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
EXAG = [sys.executable, "-m", "exag_cli"]
RUN_AS_WRITTEN = {("world", "parse")}          # quick, writes nothing: run exactly as README shows them
HEALTH_TIMEOUT_S = 180     # a first start lays out the game world and starts a worker (~20 s alone)


def readme_commands() -> list[str]:
    """The commands of README's ```bash blocks, one per entry (continued lines joined, comments dropped)."""
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", README.read_text(), re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words:
                commands.append(shlex.join(words))
    return commands


COMMANDS = readme_commands()


def test_readme_shows_the_two_commands_and_a_tour():
    assert COMMANDS[:2] == ["bash scripts/start.sh", "bash scripts/test.sh"], COMMANDS[:2]
    assert any(c.startswith("exag simulate ") for c in COMMANDS), "the tour's pilot study is gone"
    assert any(c.startswith("exag analyze ") for c in COMMANDS), "the tour's analysis is gone"


def _subcommand(words: list[str]) -> list[str]:
    """`exag world parse "q"` -> [world, parse]: the leading words that name (sub)commands."""
    path = []
    for word in words:
        if not re.fullmatch(r"[a-z][a-z0-9-]*", word):
            break
        path.append(word)
    return path


def _flags(words: list[str]) -> list[str]:
    return sorted({word.split("=", 1)[0] for word in words if re.match(r"--[a-z]", word)})


def _help_lists_flags(argv: list[str], flags: list[str], what: str) -> None:
    """`argv --help` lists every flag; argv is `exag SUB...` (run in this process) or a python command."""
    if argv[0] == "exag":
        shown = exag(*argv[1:], "--help")
    else:
        shown = subprocess.run(argv + ["--help"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, f"{what} --help failed:\n{shown.stdout}{shown.stderr}"
    missing = [flag for flag in flags if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", shown.stdout)]
    assert not missing, f"README's `{what}` uses flags its --help does not list: {missing}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status
    except urllib.error.HTTPError as refused:
        return refused.code


def _check_start_script(tmp_path: Path) -> None:
    script = REPO / "scripts/start.sh"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0, "scripts/start.sh is not valid bash"
    assert re.search(r"\bserve\b", script.read_text()), "scripts/start.sh no longer starts `exag serve`"
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "EXAG_ADMIN_TOKEN")}
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(EXAG + ["serve", "--port", str(port), "--data-dir", str(tmp_path / "data"),
                                      "--workers", "1"],
                              cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        while "ExAG is ready" not in (tmp_path / "serve.log").read_text() and time.monotonic() < deadline:
            assert server.poll() is None, (tmp_path / "serve.log").read_text()
            time.sleep(0.2)
        # "ready" means a player can play (issue 45): /healthz says so, and a question is answered within 5 s
        status = _get(base + "/healthz")
        assert status == 200, (f"the server start.sh runs did not say it is ready, or /healthz did not agree, within "
                               f"{HEALTH_TIMEOUT_S} s (status {status}):\n{(tmp_path / 'serve.log').read_text()}")
        bot = Bot(base, "demo-controlled", "first-question", arm="none")
        try:
            bot.send("consent", {"agree": True})
            game = bot.send("begin", {})["game"]
            asked = time.monotonic()
            bot.send("ask", {"game_id": game["game_id"], "question": "is there a red cube?"})
            assert time.monotonic() - asked < 5, f"the first question took {time.monotonic() - asked:.1f} s"
        finally:
            bot.close()
        for link in ["/?study=demo", "/?study=demo-controlled&arm=both"]:   # README's tour links
            assert _get(base + link) == 200, link
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)      # its own session: the server, gunicorn and its Redis
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        log.close()


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command(command, tmp_path):
    words = shlex.split(command)
    head = words[0]
    if words[:2] == ["bash", "scripts/start.sh"]:
        _check_start_script(tmp_path)
    elif words[:2] == ["bash", "scripts/test.sh"]:
        script = REPO / "scripts/test.sh"
        assert subprocess.run(["bash", "-n", str(script)]).returncode == 0, "scripts/test.sh is not valid bash"
        assert "pytest" in script.read_text(), "scripts/test.sh no longer runs the test suite"
    elif head == "exag":
        sub = _subcommand(words[1:])
        assert sub, f"`{command}`: which exag command?"
        if tuple(sub) in RUN_AS_WRITTEN:
            ran = exag(*words[1:])
            assert ran.returncode == 0, f"`{command}` failed:\n{ran.stdout}{ran.stderr}"
        else:
            _help_lists_flags(["exag", *sub], _flags(words), "exag " + " ".join(sub))
    elif words[:2] == ["python", "-m"]:
        module = words[2]
        assert importlib.util.find_spec(module) is not None, f"`{command}`: no module {module}"
        _help_lists_flags([sys.executable, "-m", module], _flags(words), f"python -m {module}")
    elif head in ("source", "."):
        activate = Path(os.path.expanduser(words[1]))
        in_a_venv = sys.prefix != sys.base_prefix and (Path(sys.prefix) / "bin/activate").is_file()
        assert activate.is_file() or in_a_venv, f"`{command}`: no {activate}"
    elif head == "cp":
        source, target = words[-2], words[-1]
        assert (REPO / source).is_file(), f"`{command}`: README copies {source}, which is not in the repository"
        assert (REPO / target).parent.is_dir(), f"`{command}`: no directory for {target}"
    else:
        pytest.fail(f"README shows `{command}`, which this test does not know how to check: teach it")
