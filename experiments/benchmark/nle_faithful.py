"""Does the nle explainer's sentence state the answer it explains? Before and after issue 32's decoding
and final check (explainers/nle.py).

    python -m experiments.benchmark.nle_faithful --world data/game-world --agents weak medium strong --items 300

Items: the split's count, exist and query questions that the agent answers correctly (the first --items
of them, in the world's order). Each is explained three ways by the agent's shipped NLE model:

- before: plain greedy decoding, every sentence shown as generated (the explainer before issue 32);
- blocking: no 3-gram written twice, every sentence shown as generated;
- after: blocking and the final check (regenerated, traced or templated when the sentence fails it).

and each sentence shown is checked by explainers/answer_check.py: the share that states the answer, that
contradicts it (says another answer), that says nothing the check can read, and that loops (a 3-word
phrase written 3 times or more: explainers/nle.py loops); after, also the share of each source.
"""
from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

import torch
from tqdm import tqdm

from explainers.answer_check import check_explanation
from explainers.base import ExplanationRequest
from explainers.nle import SOURCES, NLEExplainer, loops
from explainers.nle_model import NO_REPEAT_NGRAM
from vqa_agent.agent import VQAAgent
from vqa_agent.data import WorldTables
from experiments.benchmark import write_report
from experiments.benchmark.nle_metrics import _load_images

AGENT_BATCH = 128                # questions answered per agent call
ENDS = ("count", "exist")        # and every query_* function
SETTINGS = {"before": dict(no_repeat_ngram=False, check_answer=False),     # blocking: --no-repeat-ngram's n
            "blocking": dict(no_repeat_ngram=True, check_answer=False),
            "after": dict(no_repeat_ngram=True, check_answer=True)}


def asked(question: dict) -> bool:
    end = question["program"][-1]["function"]
    return end in ENDS or end.startswith("query_")


def correct_requests(agent: VQAAgent, tables: WorldTables, split: str, items: int, progress: bool) -> list:
    """The first `items` count/exist/query questions of `split` that the agent answers correctly."""
    pool = [q for q in tables.questions if q["split"] == split and asked(q)]
    found = []
    bar = tqdm(total=items, desc="answering", unit="item", disable=not progress)
    for start in range(0, len(pool), AGENT_BATCH):
        chunk = pool[start:start + AGENT_BATCH]
        images = _load_images(tables, chunk)
        outputs = agent.answer([images[q["image_filename"]] for q in chunk], [q["question"] for q in chunk])
        for q, o in zip(chunk, outputs):
            if o.answer == q["answer"] and len(found) < items:
                found.append(ExplanationRequest(images[q["image_filename"]], q["question"], o))
                bar.update(1)
        if len(found) >= items:
            break
    bar.close()
    return found


def shares(requests: list, payloads: list[dict]) -> dict:
    checks = [check_explanation(r.question, r.output.answer, p["text"]) for r, p in zip(requests, payloads)]
    n = max(len(checks), 1)
    result = {"states_answer": 100 * sum(c.states_answer is True for c in checks) / n,
              "contradicts": 100 * sum(bool(c.contradicts) for c in checks) / n,
              "unreadable": 100 * sum(c.states_answer is None and not c.contradicts for c in checks) / n,
              "loops": 100 * sum(loops(p["text"]) for p in payloads) / n}
    sources = Counter(p["source"] for p in payloads)
    result["sources"] = {s: 100 * sources[s] / n for s in SOURCES}
    return result


def benchmark(agent_name: str, world: Path, split: str, items: int, no_repeat_ngram: int = NO_REPEAT_NGRAM,
              progress: bool = True) -> dict:
    agent = VQAAgent.from_pretrained(agent_name, device="cpu")
    requests = correct_requests(agent, WorldTables.load(world), split, items, progress)
    explainer = NLEExplainer(agent, agent_name=agent_name)
    report = {"agent": agent_name, "nle_model": str(explainer.path), "items": len(requests),
              # the check's answer type of each item (an empty sentence is checked for its type alone)
              "by_type": dict(Counter(check_explanation(r.question, r.output.answer, "").answer_type for r in requests))}
    examples = {}
    for name, setting in tqdm(SETTINGS.items(), desc=f"explaining ({agent_name})", disable=not progress):
        explainer.check_answer = setting["check_answer"]
        explainer.no_repeat_ngram = no_repeat_ngram if setting["no_repeat_ngram"] else 0
        started = time.perf_counter()
        payloads = [e.payload for e in explainer.explain_batch(requests)]
        report[name] = shares(requests, payloads)
        report[name]["ms_per_item"] = 1000 * (time.perf_counter() - started) / max(len(requests), 1)
        report[name]["changed"] = 100 * sum(p["text"] != b["text"] for p, b in
                                             zip(payloads, examples.get("before", payloads))) / max(len(requests), 1)
        examples[name] = payloads
    report["examples"] = [{"question": r.question, "answer": r.output.answer, "before": b["text"],
                           "after": a["text"], "source": a["source"], "check": a["check"]}
                          for r, b, a in zip(requests, examples["before"], examples["after"])
                          if a["source"] != "generated"][:6]
    return report


def print_table(reports: list[dict]) -> None:
    columns = [("states", "states_answer"), ("contra", "contradicts"), ("unread", "unreadable"), ("loops", "loops"),
               ("changed", "changed")]
    print(f"{'agent':8}{'n':>5}  {'setting':9}" + "".join(f"{label:>8}" for label, _ in columns)
          + "".join(f"{s[:6]:>8}" for s in SOURCES) + f"{'ms/item':>9}")
    for report in reports:
        for name in SETTINGS:
            row = report[name]
            print(f"{report['agent']:8}{report['items']:5d}  {name:9}" + "".join(f"{row[k]:8.1f}" for _, k in columns)
                  + "".join(f"{row['sources'][s]:8.1f}" for s in SOURCES) + f"{row['ms_per_item']:9.2f}")
    print("(percent of correctly answered count/exist/query items; loops: a 3-word phrase written 3 times or\n"
          " more; changed: other text than before; sources: of the sentences shown)")
    for report in reports:
        for example in report["examples"][:2]:
            print(f"  [{report['agent']}] Q: {example['question']}  A: {example['answer']}\n"
                  f"     before: {example['before']}\n     after ({example['source']}): {example['after']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", nargs="+", default=["weak", "medium", "strong"])
    parser.add_argument("--world", type=Path, default=Path("data/game-world"))
    parser.add_argument("--split", default="val")
    parser.add_argument("--items", type=int, default=300, help="correctly answered items per agent")
    parser.add_argument("--no-repeat-ngram", type=int, default=NO_REPEAT_NGRAM, help="n-grams blocked (0: off)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    reports = [benchmark(name, args.world, args.split, args.items, args.no_repeat_ngram) for name in args.agents]
    print_table(reports)
    write_report(args.json, {"world": str(args.world), "split": args.split, "no_repeat_ngram": args.no_repeat_ngram,
                             "reports": reports})


if __name__ == "__main__":
    main()
