"""`exag ...` run inside the test's process (exag_cli.main), seen as a shell sees it: the exit status and
what the command printed on stdout and stderr.

Most command-line tests check arguments, messages, exit statuses and files, not the process boundary, and
a fresh interpreter costs them 2 s each of imports. The tests whose subject is the process itself (start-up,
signals, what a process imports, a clone's own environment) run `python -m exag_cli` for real.
"""
from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

import torch

import exag_cli

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def exag(*args, cwd: Path | str = REPO) -> Ran:
    """Runs `exag ARGS` in `cwd` (the repository by default, where a user's shell would stand); the torch
    threads a command sets (--threads) are put back afterwards."""
    out, err, threads = io.StringIO(), io.StringIO(), torch.get_num_threads()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), contextlib.chdir(cwd):
        try:
            code = exag_cli.main([str(arg) for arg in args])
        except SystemExit as exit_:          # argparse's usage errors (2) and --help (0)
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        finally:
            torch.set_num_threads(threads)
    return Ran(code, out.getvalue(), err.getvalue())
