"""The `exag` command: one subcommand per job. `exag --help` and `exag COMMAND --help` explain each.

Each package owns its commands: a function fills the command's parser (its description and arguments) and
sets the `run` that does the job. This module is only their table. The commands' modules are cheap to import
(`exag --help` loads no torch); what a command runs is imported when it runs.
"""
from __future__ import annotations

import argparse
import sys
from functools import partial

from experiments import analyze, codes, preregister
from experiments.benchmark import commands as benchmark
from experiments.simulate import commands as simulation
from explainers import commands as explainers
from game import commands as pool
from game import study_check_command as study
from server import commands as server
from vqa_agent import commands as agent
from vqa_agent.world import commands as world

# `exag train WHAT`: each model is trained by the package that owns it
TRAIN = {
    "agent": (agent.add_train_arguments, "train a VQA agent on a built world"),
    "word2vec": (explainers.add_train_word2vec_arguments,
                 "train the ObjScene explainer's word vectors on a world's text"),
    "nle": (explainers.add_train_nle_arguments,
            "train the NLE explainer's GPT-2 on an agent's outputs and a world's explanations"),
}


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Train models."
    models = parser.add_subparsers(dest="train_command", required=True, metavar="WHAT")
    for name, (add_arguments, summary) in TRAIN.items():
        add_arguments(models.add_parser(name, help=summary))


# `exag COMMAND`: what fills its parser (and sets its `run`), and its line in `exag --help`. A group (world,
# bench, simulate) adds its own subcommands.
COMMANDS = {
    "world": (world.add_arguments, "build and inspect the synthetic CLEVR-compatible world"),
    "train": (add_train_arguments, "train models (the VQA agent)"),
    "pool": (pool.add_arguments, "import a folder of your own images as a game pool"),
    "study": (study.add_arguments, "check study files offline (`exag study check FILE`)"),
    "codes": (codes.add_arguments, "check the completion codes Prolific recorded against the ones the study gave"),
    "ask": (agent.add_ask_arguments, "ask an agent questions about an image"),
    "explain": (explainers.add_explain_arguments, "explain an agent's answer with explainer plugins"),
    "bench": (benchmark.add_arguments, "benchmarks that print and save measured figures"),
    # the server takes the admin's live report from above it: it does not import the analysis
    "serve": (partial(server.add_serve_arguments, live_report=analyze.live_report),
              "start the game server (embedded Redis, default world and agent)"),
    "worker": (server.add_worker_arguments, "start an inference worker for the game server"),
    "bot": (simulation.add_bot_arguments, "play games through the real Socket.IO interface"),
    "export": (server.add_export_arguments, "write the event log as tidy tables"),
    "analyze": (analyze.add_arguments, "the paper's Table 1 and Figures 5-10 from the logs, as an HTML report"),
    "preregister": (preregister.add_arguments,
                    "freeze a study's hypotheses, primary test, planned N, stopping rule and exclusions before data"),
    "simulate": (simulation.add_simulate_arguments,
                 "a whole study played by simulated participants, exported for `exag analyze`"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="exag", description="ExAG: explanation-assisted image guessing "
                                     "games, their agents, explainers and analysis.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (add_arguments, summary) in COMMANDS.items():
        add_arguments(commands.add_parser(name, help=summary))
    _remember_parsers(parser)
    return parser


def _remember_parsers(parser: argparse.ArgumentParser) -> None:
    """Each (sub)command's parser in its own defaults, so that an argument it does not know is reported with its
    usage (`exag serve --prot 1` shows serve's), not the top level's; the deepest command chosen sets it last."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.set_defaults(_parser=sub)
                _remember_parsers(sub)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        getattr(args, "_parser", parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return args.run(args)
    except (FileExistsError, FileNotFoundError, ValueError) as error:
        print(f"exag: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
