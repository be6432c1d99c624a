"""The nle explainer on questions written by CLEVR's own generator, scored against CLEVR-X's references:
issue 32's figures, per agent.

    python -m experiments.benchmark.nle_clevrx --world data/world --clevr-questions QUESTIONS.json \\
        --clevrx-explanations EXPLANATIONS.json [--agents weak medium strong] [--threads 1] [--json OUT]

QUESTIONS.json: what CLEVR's generator wrote about the world's first test images (`exag bench clevr
--keep-files DIR` keeps it); EXPLANATIONS.json: CLEVR-X's explanations of those questions
(`python -m experiments.benchmark.clevrx_references ... --clevrx-output FILE`), CLEVR-X's generator run
unchanged on the same scenes and questions.

Each agent answers every question; the questions it answers correctly are explained by the nle explainer
exactly as in the game (answer-conditioned decoding with n-gram blocking, the final answer check and its
fallbacks; explainers/nle.py), and scored:

- NLG metrics against CLEVR-X's references (items CLEVR-X explained), in percent as CLEVR-X reports them;
  beside them the ceiling: one CLEVR-X reference against its others, on the items with several;
- the answer check (explainers/answer_check.py) per answer type: states the answer, states another
  answer (contradicts), loops (a 3-word phrase written 3 times or more); and on exist questions answered
  "no", the share that says there is none;
- where the sentences shown came from (generated, regenerated, traced, template).

Issue 32's targets are printed beside them (TARGETS).
"""
from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter, defaultdict
from pathlib import Path

import torch
from tqdm import tqdm

from experiments.benchmark import write_report
from experiments.benchmark.contradictions import loops
from experiments.benchmark.nle_metrics import _load_images, nlg_scores
from explainers.answer_check import check_explanation
from explainers.base import ExplanationRequest
from explainers.nle import SOURCES, NLEExplainer
from vqa_agent.data import WorldTables
from vqa_agent.loading import load_agent
from vqa_agent.world import clevr_io

AGENT_BATCH = 128
METRICS = ("bleu4", "meteor", "rouge_l", "cider")
TARGETS = {"query_states_answer": 97.0, "query_contradicts": 1.0, "exist_no_says_none": 97.0, "loops": 0.0,
           "medium_meteor": 55.0, "medium_cider": 550.0}


def load_clevr_items(questions_path: Path, explanations_path: Path) -> list[dict]:
    """CLEVR's questions in our world format, each with CLEVR-X's explanations of it (maybe none)."""
    explained = {int(k): [t for t in v if t] for k, v in json.loads(Path(explanations_path).read_text()).items()}
    items = []
    for record in clevr_io.load_questions(questions_path):
        if record.answer is None:
            continue
        question = clevr_io.question_to_json(record)
        question["clevrx"] = explained.get(int(record.question_index), [])
        items.append(question)
    return items


def answered_right(agent, tables: WorldTables, items: list[dict], progress: bool) -> tuple[list, list[dict]]:
    """ExplanationRequests of the items the agent answers correctly, and those items."""
    requests, kept = [], []
    for start in tqdm(range(0, len(items), AGENT_BATCH), desc="answering", disable=not progress, leave=False):
        chunk = items[start:start + AGENT_BATCH]
        images = _load_images(tables, chunk)
        outputs = agent.answer([images[q["image_filename"]] for q in chunk], [q["question"] for q in chunk])
        for q, o in zip(chunk, outputs):
            if o.answer == q["answer"]:
                requests.append(ExplanationRequest(images[q["image_filename"]], q["question"], o))
                kept.append(q)
    return requests, kept


def checks_by_type(requests: list, texts: list[str]) -> dict:
    rows = defaultdict(list)
    for r, text in zip(requests, texts):
        check = check_explanation(r.question, r.output.answer, text)
        rows[check.answer_type].append((check, text, r.output.answer))
    report = {}
    for kind, group in sorted(rows.items()):
        n = len(group)
        report[kind] = {"n": n, "states_answer": 100 * sum(c.states_answer is True for c, _, _ in group) / n,
                        "contradicts": 100 * sum(c.contradicts for c, _, _ in group) / n,
                        "loops": 100 * sum(loops(t) for _, t, _ in group) / n}
    no = [c for c, _, answer in rows.get("exist", []) if answer == "no"]
    if no:
        report["exist"]["no_items"] = len(no)
        report["exist"]["no_says_none"] = 100 * sum(c.states_answer is True for c in no) / len(no)
    return report


def benchmark(agent_name: str, tables: WorldTables, items: list[dict], seed: int, progress: bool) -> dict:
    agent = load_agent(agent_name, device="cpu")
    requests, kept = answered_right(agent, tables, items, progress)
    explainer = NLEExplainer(agent, agent_name=agent_name)
    started = time.perf_counter()
    payloads = []
    for start in tqdm(range(0, len(requests), 64), desc=f"explaining ({agent_name})", disable=not progress, leave=False):
        payloads += [e.payload for e in explainer.explain_batch(requests[start:start + 64])]
    seconds = time.perf_counter() - started
    texts = [p["text"] for p in payloads]
    scored = [k for k, q in enumerate(kept) if q["clevrx"]]
    scores = nlg_scores([texts[k] for k in scored], [kept[k]["clevrx"] for k in scored], bertscore=False)
    sources = Counter(p["source"] for p in payloads)
    rng = random.Random(seed)
    examples = [{"question": kept[k]["question"], "answer": kept[k]["answer"], "nle": texts[k],
                 "source": payloads[k]["source"], "clevrx": kept[k]["clevrx"][:2]}
                for k in rng.sample(range(len(kept)), min(8, len(kept)))]
    return {"agent": agent_name, "nle_model": str(explainer.path), "questions": len(items), "answered_right": len(kept),
            "accuracy": 100 * len(kept) / max(len(items), 1), "scored_items": len(scored),
            "metrics": {k: round(scores[k], 1) for k in METRICS},
            "answer_check": checks_by_type(requests, texts),
            "loops": 100 * sum(loops(t) for t in texts) / max(len(texts), 1),
            "sources": {s: 100 * sources[s] / max(len(payloads), 1) for s in SOURCES},
            "ms_per_explanation": 1000 * seconds / max(len(requests), 1), "examples": examples}


def ceiling(items: list[dict]) -> dict:
    """One CLEVR-X reference against its others (items with at least two)."""
    several = [q["clevrx"] for q in items if len(q["clevrx"]) > 1]
    scores = nlg_scores([refs[0] for refs in several], [refs[1:] for refs in several], bertscore=False)
    return {"items": len(several), **{k: round(scores[k], 1) for k in METRICS}}


def print_report(report: dict) -> None:
    c = report["ceiling"]
    print(f"CLEVR-X references, one against the others ({c['items']} items): METEOR {c['meteor']}, CIDEr {c['cider']}")
    print(f"{'agent':8}{'acc':>7}{'items':>7}{'METEOR':>8}{'CIDEr':>8}{'query st':>10}{'query ctr':>10}"
          f"{'no→none':>9}{'loops':>7}  sources")
    for r in report["agents"]:
        check = r["answer_check"]
        query, exist = check.get("query", {}), check.get("exist", {})
        print(f"{r['agent']:8}{r['accuracy']:6.1f}%{r['scored_items']:7d}{r['metrics']['meteor']:8.1f}"
              f"{r['metrics']['cider']:8.1f}{query.get('states_answer', float('nan')):10.1f}"
              f"{query.get('contradicts', float('nan')):10.1f}{exist.get('no_says_none', float('nan')):9.1f}"
              f"{r['loops']:7.1f}  " + ", ".join(f"{s} {v:.1f}%" for s, v in r["sources"].items() if v))
    print(f"targets (issue 32): {report['targets']}")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--world", type=Path, default=Path("data/world"), help="the world whose images were asked about")
    parser.add_argument("--clevr-questions", type=Path, required=True)
    parser.add_argument("--clevrx-explanations", type=Path, required=True)
    parser.add_argument("--agents", nargs="+", default=["weak", "medium", "strong"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    tables = WorldTables.load(args.world)
    items = load_clevr_items(args.clevr_questions, args.clevrx_explanations)
    report = {"world": str(args.world), "clevr_questions": str(args.clevr_questions),
              "clevrx_explanations": str(args.clevrx_explanations), "targets": TARGETS, "ceiling": ceiling(items),
              "agents": [benchmark(name, tables, items, args.seed, progress=True) for name in args.agents]}
    print_report(report)
    write_report(args.json, report)
    return report


if __name__ == "__main__":
    main()
