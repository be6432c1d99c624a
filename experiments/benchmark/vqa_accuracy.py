"""VQA accuracy of an agent on a built world: test split, game pool and player-style questions.

    exag bench vqa --agent medium --world data/world --json results/vqa_medium.json
    exag bench vqa --agent checkpoints/private-medium --world data/game-world    # on the game's own images
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from vqa_agent.agent import VQAAgent
from vqa_agent.data import WorldTables, prepare_split
from vqa_agent.evaluate import evaluate
from experiments.benchmark import write_report


def benchmark_vqa(agent_name: str, world: Path, progress: bool = True) -> dict:
    """The agent's accuracy on the world's test split and game pool, each when the world has it: a training
    world built without a pool (`--pool 0`) has no pool, the game world (data/game-world) no test split, and
    there its pool accuracy is the accuracy on the very images games show."""
    agent = VQAAgent.from_pretrained(agent_name)
    tables = WorldTables.load(world)
    present = json.loads((Path(world) / "manifest.json").read_text())["images_per_split"]
    splits = [split for split in ("test", "pool") if present.get(split)]
    if not splits:
        raise ValueError(f"{world} has neither a test split nor a game pool to measure on")
    results = {split: evaluate(agent.model, prepare_split(tables, split, agent.config, agent.vocabulary,
                                                          progress=progress),
                               agent.vocabulary.answers, progress=progress) for split in splits}
    report = {"agent": str(agent_name), "world": str(world)}
    if "test" in results:
        test = results["test"]
        report.update(accuracy=test["accuracy"], by_type=test["by_type"], by_answer_type=test["by_answer_type"],
                      n=test["n"], by_family=test["by_family"],
                      player={"accuracy": test["player_accuracy"], "n": test["player_n"]},
                      # test questions written in phrasings the training split never had (questions.HELDOUT_PHRASINGS)
                      heldout_phrasing={"accuracy": test["heldout_phrasing_accuracy"],
                                        "n": test["heldout_phrasing_n"]})
    if "pool" in results:
        report["pool"] = results["pool"]
    return report


def print_report(report: dict) -> None:
    print(f"agent {report['agent']} on {report['world']}")
    if "accuracy" in report:
        print(f"  test accuracy   {report['accuracy']:.1%}  (n={report['n']})")
    if "pool" in report:
        print(f"  pool accuracy   {report['pool']['accuracy']:.1%}  (n={report['pool']['n']}: the game's images)")
    if "accuracy" in report:
        print(f"  player-style    {report['player']['accuracy']:.1%}  (n={report['player']['n']})")
        held = report["heldout_phrasing"]
        print(f"  held-out phrasings {held['accuracy']:.1%}  (n={held['n']})")
        for name in ("by_type", "by_answer_type"):
            print("  " + ", ".join(f"{k} {v['accuracy']:.1%}" for k, v in report[name].items()))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", required=True)
    parser.add_argument("--world", type=Path, default=Path("data/world"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    report = benchmark_vqa(args.agent, args.world)
    print_report(report)
    write_report(args.json, report)


if __name__ == "__main__":
    main()
