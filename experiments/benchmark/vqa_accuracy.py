"""VQA accuracy of an agent on a built world: test split, game pool and player-style questions.

    exag bench vqa --agent medium --world data/world --json results/vqa_medium.json
"""
from __future__ import annotations

import argparse
from pathlib import Path

from vqa_agent.agent import VQAAgent
from vqa_agent.data import WorldTables, prepare_split
from vqa_agent.evaluate import evaluate
from experiments.benchmark import write_report


def benchmark_vqa(agent_name: str, world: Path, progress: bool = True) -> dict:
    agent = VQAAgent.from_pretrained(agent_name)
    tables = WorldTables.load(world)
    results = {}
    for split in ("test", "pool"):
        data = prepare_split(tables, split, agent.config, agent.vocabulary, progress=progress)
        results[split] = evaluate(agent.model, data, agent.vocabulary.answers, progress=progress)
    test = results["test"]
    return {"agent": str(agent_name), "world": str(world),
            "accuracy": test["accuracy"], "by_type": test["by_type"], "by_answer_type": test["by_answer_type"],
            "n": test["n"], "by_family": test["by_family"],
            "player": {"accuracy": test["player_accuracy"], "n": test["player_n"]},
            # test questions written in phrasings the training split never had (questions.HELDOUT_PHRASINGS)
            "heldout_phrasing": {"accuracy": test["heldout_phrasing_accuracy"], "n": test["heldout_phrasing_n"]},
            "pool": results["pool"]}


def print_report(report: dict) -> None:
    print(f"agent {report['agent']} on {report['world']}")
    print(f"  test accuracy   {report['accuracy']:.1%}  (n={report['n']})")
    print(f"  pool accuracy   {report['pool']['accuracy']:.1%}  (n={report['pool']['n']})")
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
