"""Our reference explanations against CLEVR-X's own, on the same CLEVR-phrased questions.

    python -m experiments.benchmark.clevrx_references --scenes SCENES.json --questions QUESTIONS.json \
        --clevrx DIR [--clevrx-pythonpath DIR] [--clevrx-output FILE] [--by-family] [--max-items N] \
        [--json OUT]

NLE metrics mean what CLEVR-X's mean only if our references are written the way CLEVR-X writes its
own. This measures how close they are: CLEVR-X's public explanation generator is run (as a separate
process, from a copy on disk; nothing in ExAG needs it) on a CLEVR-format questions file about a
CLEVR-format scenes file, and our `explain(program, scene, question=...)` writes ours for the same
questions. Scored with the project's own NLG metric code (experiments.benchmark.nle_metrics: PTB
tokenizer, BLEU-4, METEOR, ROUGE-L, CIDEr-D, in percent as CLEVR-X reports them):

- ours vs CLEVR-X: our canonical (first) explanation as the candidate, all of CLEVR-X's explanations of
  the question as the references. This is the issue's "our reference generator vs CLEVR-X's".
- ours without the question: the same with explain(..., question=None) (CLEVR's first synonyms).
- CLEVR-X vs ours: one of CLEVR-X's explanations as the candidate, all of ours as references (what a
  model trained on CLEVR-X would score against our references).
- CLEVR-X vs CLEVR-X: one of its explanations against its others (items with at least two): how
  well one of its own references agrees with the rest.
- random other item: a CLEVR-X explanation of a random other question as the candidate (CLEVR-X's
  "random explanations" baseline, 16.6 METEOR / 30.4 CIDEr on its own data).

Only questions whose program gives CLEVR's answer on our scene are scored (the report counts the rest).

Questions about our scenes in CLEVR's own phrasing come from CLEVR's public question generator
(facebookresearch/clevr-dataset-gen, question_generation/generate_questions.py; python3, no packages;
the scenes file needs `info.split`):

    python generate_questions.py --input_scene_file SCENES.json --output_questions_file QUESTIONS.json

CLEVR-X (ExplainableML/CLEVR-X; --clevrx is its repository or a bare git copy) needs treelib, num2words
and more-itertools beside pandas and tqdm (which the project has): small pure-Python packages that can
live in a folder of their own (`pip install --target DIR treelib==1.6.1 num2words more-itertools`, then
--clevrx-pythonpath DIR). Two facts of CLEVR-X this script bridges: it finds a question's template by
an index over all 90 templates in its own file order (CLEVR's generator writes the index within each
template file), and it reads program steps only under "function" (CLEVR's generator writes "type").
Without CLEVR-X or its packages the benchmark says so and exits without scores.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from experiments.benchmark import write_report
from vqa_agent.world.clevr_io import scenes_from_json
from vqa_agent.world.explanations import explain
from vqa_agent.world.programs import IllPosed, ProgramError, execute, program_from_json

CLEVRX_PACKAGES = ("treelib", "num2words", "more_itertools", "pandas", "tqdm")
EXPLANATIONS_PER_QUESTION = 10   # as many as CLEVR-X draws (it keeps the distinct ones)
ISSUE_FIGURES = {"ours_vs_clevrx": {"meteor": 40.3, "cider": 214.0}}   # issue 13, before this change
METRICS = ("bleu4", "meteor", "rouge_l", "cider")


class Skip(Exception):
    """CLEVR-X (or what it needs) is not on this machine: the benchmark cannot run."""


# --- running CLEVR-X ------------------------------------------------------------------------------

def clevrx_folder(source: Path | None, scratch: Path) -> Path:
    """CLEVR-X's question_generation folder: in `source` itself, or exported from a bare git copy."""
    if source is None:
        raise Skip("CLEVR-X's location was not given (--clevrx DIR: its repository or a bare git copy)")
    if (source / "question_generation" / "generate_explanations.py").is_file():
        return source / "question_generation"
    if (source / "HEAD").is_file() and (source / "objects").is_dir():   # a bare repository
        export = scratch / "clevrx"
        export.mkdir()
        archive = subprocess.run(["git", "-C", str(source), "archive", "HEAD"], capture_output=True, check=True)
        subprocess.run(["tar", "x", "-C", str(export)], input=archive.stdout, check=True)
        return clevrx_folder(export, scratch)
    raise Skip(f"CLEVR-X is not on disk at {source} (pass --clevrx DIR: the repository or a bare git copy)")


def check_packages(python: str, pythonpath: str | None) -> dict:
    env = dict(os.environ, PYTHONHASHSEED="0")   # CLEVR-X dedupes through a set: fix its order
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, env.get("PYTHONPATH")) if p)
    probe = ("import importlib.util as u, sys; missing = [p for p in sys.argv[1:] if u.find_spec(p) is None]; "
             "sys.exit(', '.join(missing) or None)")
    result = subprocess.run([python, "-c", probe, *CLEVRX_PACKAGES], env=env, capture_output=True, text=True)
    if result.returncode:
        raise Skip(f"CLEVR-X needs {result.stderr.strip() or 'packages'} for {python}: pip install --target DIR "
                   "treelib==1.6.1 num2words more-itertools (pandas and tqdm come with the project), then "
                   "--clevrx-pythonpath DIR")
    return env


def family_offsets(folder: Path) -> dict[str, int]:
    """CLEVR-X finds a question's template by a running index over its template files in a fixed
    order, where CLEVR's public generator writes the index within the template's own file. The order
    is read from CLEVR-X's script so it always matches the copy on disk."""
    script = (folder / "generate_explanations.py").read_text()
    match = re.search(r"TEMPLATE_ORDER\s*=\s*\[(.*?)\]", script, re.S)
    if not match:
        raise Skip(f"cannot find CLEVR-X's template order in {folder / 'generate_explanations.py'}")
    offsets, total = {}, 0
    for name in re.findall(r"[\"']([^\"']+\.json)[\"']", match.group(1)):
        offsets[name] = total
        total += len(json.loads((folder / "CLEVR_1.0_templates" / name).read_text()))
    return offsets


def clevrx_template(question: dict, offsets: dict[str, int]) -> int:
    """The index CLEVR-X finds the question's template by. CLEVR's released files number the 90
    templates in CLEVR-X's order already; its public generator numbers them within each template file
    (and says which file); our world's own families are not CLEVR's templates at all."""
    if "template_filename" in question:
        return offsets[question["template_filename"]] + question["question_family_index"]
    if "family" in question:
        raise Skip("these are the world's own questions: CLEVR-X explains only questions written from CLEVR's "
                   "templates (run CLEVR's generate_questions.py on the scenes file)")
    return question["question_family_index"]


def run_clevrx(folder: Path, scenes_path: Path, questions: list[dict], env: dict, scratch: Path,
               seed: int) -> dict[int, list[str]]:
    """CLEVR-X's explanations of each question, by question_index (questions it skips are absent)."""
    offsets = family_offsets(folder)
    renumbered = []
    for q in questions:
        # CLEVR's released files name program steps "function"/"value_inputs"; its generator still
        # writes "type" for the functions, which CLEVR-X does not read
        program = [{"function": n.get("function", n.get("type")), "inputs": n["inputs"],
                    "value_inputs": n.get("value_inputs", n.get("side_inputs", []))} for n in q["program"]]
        renumbered.append({**q, "program": program, "question_family_index": clevrx_template(q, offsets)})
    questions_path, output_path = scratch / "questions.json", scratch / "explanations.json"
    questions_path.write_text(json.dumps({"info": {}, "questions": renumbered}))
    command = [sys.executable, "generate_explanations.py",
               "--input_scene_file", str(scenes_path.resolve()), "--input_questions_file", str(questions_path),
               "--output_explanations_file", str(output_path), "--seed", str(seed),
               "--metadata_file", "metadata.json"]
    result = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"CLEVR-X failed ({result.returncode}):\n{result.stderr[-3000:]}")
    explained = json.loads(output_path.read_text())["questions"]
    return {q["question_index"]: [e for e in q["factual_explanation"] if e] for q in explained}


# --- our references -------------------------------------------------------------------------------

def clevr_answer(value) -> str:
    """CLEVR's generator writes booleans and integers; its released files (and we) write words."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def our_explanations(questions: list[dict], scenes: dict, seed: int, with_question: bool) -> tuple[dict, Counter]:
    """explain() for every question whose program runs on its scene to CLEVR's answer."""
    ours, problems = {}, Counter()
    for q in questions:
        scene = scenes[q["image_filename"]]
        program = program_from_json(q["program"])
        try:
            if execute(program, scene) != clevr_answer(q["answer"]):
                problems["answer differs from CLEVR's"] += 1
                continue
            rng = np.random.default_rng([seed, q["question_index"]])
            ours[q["question_index"]] = explain(program, scene, rng, EXPLANATIONS_PER_QUESTION,
                                                question=q["question"] if with_question else None)
        except (IllPosed, ProgramError) as error:
            problems[f"{type(error).__name__}"] += 1
    return ours, problems


# --- scoring --------------------------------------------------------------------------------------

def score(candidates: list[str], references: list[list[str]]) -> dict:
    from experiments.benchmark.nle_metrics import nlg_scores   # imported late: it loads torch

    scores = nlg_scores(candidates, references, bertscore=False)
    return {"items": len(candidates), **{k: round(scores[k], 1) for k in (*METRICS, "exact_match")}}


def compare(questions: list[dict], ours: dict, ours_plain: dict, theirs: dict, seed: int,
            by_family: bool) -> dict:
    """The score rows of the module's docstring, on the questions both sides explained."""
    items = [q["question_index"] for q in questions if q["question_index"] in ours and theirs.get(q["question_index"])]
    rng = random.Random(seed)
    rows = {
        "ours_vs_clevrx": score([ours[i][0] for i in items], [theirs[i] for i in items]),
        "ours_without_question_vs_clevrx": score([ours_plain[i][0] for i in items], [theirs[i] for i in items]),
        "clevrx_vs_ours": score([theirs[i][0] for i in items], [ours[i] for i in items]),
    }
    several = [i for i in items if len(theirs[i]) > 1]
    if several:
        rows["clevrx_vs_clevrx"] = score([theirs[i][0] for i in several], [theirs[i][1:] for i in several])
    others = [(k + 1 + rng.randrange(len(items) - 1)) % len(items) if len(items) > 1 else k for k in range(len(items))]
    rows["random_other_item"] = score([rng.choice(theirs[items[o]]) for o in others], [theirs[i] for i in items])
    report = {"rows": rows}
    by_question = {q["question_index"]: q for q in questions}
    if by_family:
        families = defaultdict(list)
        for i in items:
            question = by_question[i]
            families[question.get("template_filename", str(question["question_family_index"]))
                     .removesuffix(".json")].append(i)
        report["ours_vs_clevrx_by_family"] = {name: score([ours[i][0] for i in group], [theirs[i] for i in group])
                                              for name, group in sorted(families.items())}
    report["examples"] = [{"question": by_question[i]["question"], "answer": clevr_answer(by_question[i]["answer"]),
                           "ours": ours[i][:3], "clevrx": theirs[i][:3]}
                          for i in rng.sample(items, min(12, len(items)))]
    return report


def benchmark(scenes_path: Path, questions_path: Path, clevrx: Path | None, pythonpath: str | None,
              max_items: int | None, seed: int, by_family: bool, saved: Path | None = None) -> dict:
    start = time.time()
    scene_data = json.loads(scenes_path.read_text())
    scenes = {s.image_filename: s for s in scenes_from_json(scene_data, str(scenes_path))}
    questions = json.loads(questions_path.read_text())["questions"][:max_items]
    if saved and saved.is_file():   # CLEVR-X's explanations from an earlier run on the same files
        theirs = {int(k): v for k, v in json.loads(saved.read_text()).items()}
    else:
        with tempfile.TemporaryDirectory(prefix="clevrx-") as scratch:
            folder = clevrx_folder(clevrx, Path(scratch))
            env = check_packages(sys.executable, pythonpath)
            theirs = run_clevrx(folder, scenes_path, questions, env, Path(scratch), seed)
        if saved:
            write_report(saved, theirs)
    asked = {q["question_index"] for q in questions}
    theirs = {i: texts for i, texts in theirs.items() if i in asked}
    clevrx_seconds = time.time() - start
    ours, problems = our_explanations(questions, scenes, seed, with_question=True)
    ours_plain, _ = our_explanations(questions, scenes, seed, with_question=False)
    report = {"scenes": str(scenes_path), "questions": str(questions_path), "n_questions": len(questions),
              "explained_by_clevrx": sum(1 for v in theirs.values() if v), "explained_by_us": len(ours),
              "our_problems": dict(problems), "clevrx_seconds": round(clevrx_seconds, 1),
              "clevrx_references_per_question": round(float(np.mean([len(v) for v in theirs.values() if v])), 2),
              "our_references_per_question": round(float(np.mean([len(v) for v in ours.values()])), 2),
              "issue_figures": ISSUE_FIGURES}
    report.update(compare(questions, ours, ours_plain, theirs, seed, by_family))
    return report


def print_report(report: dict) -> None:
    print(f"{report['n_questions']} questions; CLEVR-X explained {report['explained_by_clevrx']}, we explained "
          f"{report['explained_by_us']} ({report['our_problems'] or 'no problems'}); references per question: "
          f"CLEVR-X {report['clevrx_references_per_question']}, ours {report['our_references_per_question']}")
    print(f"{'candidate vs references':36s} {'items':>6s} " + " ".join(f"{m:>8s}" for m in METRICS))
    for name, row in report["rows"].items():
        print(f"{name:36s} {row['items']:6d} " + " ".join(f"{row[m]:8.1f}" for m in METRICS))
    for name, row in report.get("ours_vs_clevrx_by_family", {}).items():
        print(f"  ours vs CLEVR-X, {name:18s} {row['items']:6d} " + " ".join(f"{row[m]:8.1f}" for m in METRICS))
    for example in report["examples"][:6]:
        print(f"Q: {example['question']}  A: {example['answer']}\n   ours:    {example['ours'][0]}\n"
              f"   CLEVR-X: {example['clevrx'][0]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenes", type=Path, required=True, help="CLEVR-format scenes file")
    parser.add_argument("--questions", type=Path, required=True, help="questions from CLEVR's generator")
    parser.add_argument("--clevrx", type=Path, help="CLEVR-X's repository, or a bare git copy of it")
    parser.add_argument("--clevrx-pythonpath", help="folder holding treelib and num2words for CLEVR-X")
    parser.add_argument("--max-items", type=int, default=None, help="only the first N questions")
    parser.add_argument("--seed", type=int, default=43, help="CLEVR-X's seed (43 made its release) and ours")
    parser.add_argument("--by-family", action="store_true", help="also score each CLEVR template file apart")
    parser.add_argument("--clevrx-output", type=Path,
                        help="keep CLEVR-X's explanations here, and reuse them when the file exists")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    try:
        report = benchmark(args.scenes, args.questions, args.clevrx, args.clevrx_pythonpath, args.max_items,
                           args.seed, args.by_family, args.clevrx_output)
    except Skip as reason:
        print(f"skipped: {reason}")
        return 0
    print_report(report)
    write_report(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
