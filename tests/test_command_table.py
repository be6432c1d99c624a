"""exag_cli.py is a table of the packages' commands: building the parser (what `exag --help` does) loads no
heavy library, and every command it lists can run."""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from cli import exag

import exag_cli

REPO = Path(__file__).resolve().parent.parent


def test_the_parser_imports_no_torch_pandas_or_matplotlib():
    code = ("import sys, exag_cli; exag_cli.build_parser(); "
            "loaded = [m for m in ('torch', 'pandas', 'matplotlib') if m in sys.modules]; "
            "assert not loaded, f'exag --help imported {loaded}'")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def leaf_commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(path, parser) of every command that runs: those without subcommands, and those whose subcommand is
    optional (`exag simulate`)."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups or not groups[0].required:
        yield path, parser
    for group in groups:
        for name, sub in group.choices.items():
            yield from leaf_commands(sub, path + (name,))


def test_every_command_has_something_to_run():
    commands = dict(leaf_commands(exag_cli.build_parser()))
    assert {("serve",), ("worker",), ("train", "nle"), ("bench", "card"), ("simulate",), ("simulate", "power")} \
        <= set(commands)
    lacking = [" ".join(path) for path, parser in commands.items() if not callable(parser.get_default("run"))]
    assert not lacking, f"commands that set no `run`: {lacking}"


def test_a_mistyped_option_shows_its_own_commands_usage():
    ran = exag("serve", "--prot", "5461")
    assert ran.returncode == 2 and ran.stderr.startswith("usage: exag serve ")
    assert "unrecognized arguments: --prot 5461" in ran.stderr
    ran = exag("simulate", "power", "--study", "s.json", "--sizes", "8", "--repeats", "1", "--out", "o", "--bogus")
    assert ran.returncode == 2 and ran.stderr.startswith("usage: exag simulate power ")
