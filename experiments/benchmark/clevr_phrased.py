"""The agents and the parser on questions written by CLEVR's own public generator about our scenes,
and on our world's held-out phrasings (the table of issue 13).

    python -m experiments.benchmark.clevr_phrased --world data/world --agents weak,medium,strong \\
        --clevr-generator /tmp/clevr/question_generation [--images 400] [--per-image 10] [--seed 5] \\
        [--threads 2] [--keep-files DIR] --json results/clevr_phrased.json

CLEVR-phrased (only where CLEVR's question generator is on disk; skipped with a message otherwise):
  1. the world's first N test images are written as a CLEVR scenes file (clevr_io, info.split "test");
  2. CLEVR's generate_questions.py writes questions about them in a subprocess, with its own templates,
     metadata and synonyms, unchanged. Its own code is unseeded and lists its templates in the file
     system's order; it runs under random.seed(--seed), PYTHONHASHSEED=0 and a sorted directory
     listing, so a seed gives the same questions on any machine. Were our attribute values not CLEVR's,
     it would read a metadata file written here from ours (--metadata_file), and the report says so;
  3. its question file loads through clevr_io (question type from its template_filename);
  4. each agent answers through the evaluation path of `exag bench vqa` (prepare_split + predict);
  5. the world's parser reads each question; a parse is wrong when its program gives another answer on
     the scene than CLEVR's.
Reported per agent: accuracy overall and by CLEVR's 9 types, on count questions (and the share of its
answers to them that are not numbers), on questions with a word outside its vocabulary, on the questions
the parser does not read; beside it the agent's accuracy on the world's own test questions (all test
images, and the same N images).

Held-out phrasings: the world's own test questions whose `heldout_phrasing` is true, measured the same
way, beside those in phrasings seen in training (a world built before phrasings existed has no such key;
the report says so and skips this part).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import torch
from tqdm import tqdm

from experiments.benchmark import write_report
from vqa_agent.agent import VQAAgent
from vqa_agent.data import WorldTables, prepare_split
from vqa_agent.evaluate import predict
from vqa_agent.world import clevr_io
from vqa_agent.world.build import ensure_rendered
from vqa_agent.world.parser import parse_program
from vqa_agent.world.programs import IllPosed, ProgramError, answer_type, execute, program_from_json, program_key
from vqa_agent.world.scene import ATTRIBUTES, RELATIONS

CLEVR_TYPES = ("zero_hop", "one_hop", "two_hop", "three_hop", "single_and", "single_or", "same_relate",
               "compare_integer", "comparison")
# The columns of issue 13's table (the types the agents found hardest, and counts).
ISSUE_TYPES = ("zero_hop", "one_hop", "same_relate", "single_and")
GENERATOR_SCRIPT = "generate_questions.py"
# CLEVR's metadata names our four attributes and the relations with these types.
METADATA_TYPES = {"Shape": "shape", "Color": "color", "Size": "size", "Material": "material"}
OUTSIDE_ANSWERS = "<outside the answer vocabulary>"   # a symbolic answer the agent has no index for
EXAMPLES = 15   # questions listed per kind of failure in the JSON


# --- CLEVR's generator on our scenes ---------------------------------------------------------------

def generator_inputs(generator: Path, work: Path) -> tuple[list[str], str]:
    """The generator's flags for its templates, metadata and synonyms, and a note saying which metadata
    it reads: its own when it lists exactly our attribute values and relations, else a file written here
    from ours (its function signatures kept), since it draws every attribute value from the metadata."""
    metadata = json.loads((generator / "metadata.json").read_text())
    ours = {kind: ATTRIBUTES[attr] for kind, attr in METADATA_TYPES.items()} | {"Relation": RELATIONS}
    differ = sorted(kind for kind, values in ours.items()
                    if set(metadata["types"].get(kind) or ()) != set(values))
    metadata_file = generator / "metadata.json"
    note = "its own metadata.json: it lists exactly our attribute values and relations"
    if differ:
        metadata["types"].update({kind: list(ours[kind]) for kind in differ})
        metadata_file = work / "metadata_from_our_world.json"
        metadata_file.write_text(json.dumps(metadata))
        note = (f"a metadata file written from our world's values (its {', '.join(differ)} values differ from "
                "CLEVR's), with the generator's own function signatures")
    return ["--metadata_file", str(metadata_file), "--synonyms_json", str(generator / "synonyms.json"),
            "--template_dir", str(generator / "CLEVR_1.0_templates")], note


# Runs the generator's own main unchanged: seeded, and with its template directory listed in sorted order.
_LAUNCHER = ("import os, random, runpy, sys; random.seed(int(sys.argv[1])); _listdir = os.listdir; "
             "os.listdir = lambda path='.': sorted(_listdir(path)); sys.argv = sys.argv[2:]; "
             "runpy.run_path(sys.argv[0], run_name='__main__')")


def run_generator(generator: Path, scenes_file: Path, questions_file: Path, per_image: int, seed: int,
                  work: Path, progress: bool = True) -> str:
    """CLEVR's generate_questions.py on `scenes_file` (per_image templates per image, one question each)
    into `questions_file`; returns the note of generator_inputs. Raises RuntimeError with the end of its
    output when it fails."""
    flags, note = generator_inputs(generator, work)
    n_scenes = len(json.loads(scenes_file.read_text())["scenes"])
    command = [sys.executable, "-c", _LAUNCHER, str(seed), str(generator / GENERATOR_SCRIPT),
               "--input_scene_file", str(scenes_file), "--output_questions_file", str(questions_file),
               "--templates_per_image", str(per_image), "--instances_per_template", "1", *flags]
    log = work / "generator.log"
    with open(log, "w") as out, tqdm(total=n_scenes, desc="CLEVR's generator", unit="img",
                                     disable=not progress) as bar:
        # cwd: it imports its question_engine from beside itself
        process = subprocess.Popen(command, cwd=generator, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        for line in process.stdout:
            out.write(line)
            if line.startswith("starting image"):
                bar.update(1)
        process.wait()
    if process.returncode != 0 or not questions_file.exists():
        tail = "".join(log.read_text().splitlines(keepends=True)[-15:])
        raise RuntimeError(f"CLEVR's generator failed (exit {process.returncode}):\n{tail}")
    return note


def clevr_phrased_questions(world: Path, scenes: list[dict], generator: Path, per_image: int, seed: int,
                            work: Path, progress: bool = True) -> tuple[list[dict], str]:
    """CLEVR's generator's questions about `scenes` (the world's scene dicts), loaded through clevr_io and
    written back in our world's question format, each with a family naming its CLEVR template."""
    info = json.loads((world / clevr_io.SCENES_FILE).read_text()).get("info", {})
    scenes_file, questions_file = work / "EXAG_test_scenes.json", work / "EXAG_test_questions.json"
    clevr_io.write_json_atomic(scenes_file, {"info": clevr_io.clevr_info(["test"], **{
        k: v for k, v in info.items() if k != "split"}), "scenes": scenes})
    note = run_generator(generator, scenes_file, questions_file, per_image, seed, work, progress)
    questions = []
    for record in clevr_io.load_questions(questions_file):
        question = clevr_io.question_to_json(record)
        question["family"] = f"clevr_{record.type}_{record.question_family_index}"
        questions.append(question)
    return questions, note


# --- answers of the agents and of the parser -------------------------------------------------------

def agent_answers(agent: VQAAgent, world: Path, scenes: list[dict], questions: list[dict],
                  progress: bool = True) -> dict[str, list]:
    """The agent's answer to each question (in order) and whether it is right, through the same
    preparation and inference path as `exag bench vqa` (prepare_split, then evaluate.predict)."""
    data = prepare_split(WorldTables(world, scenes, questions), "test", agent.config, agent.vocabulary,
                         progress=progress)
    predictions = predict(agent.model, data, agent.vocabulary.answer_index, progress=progress)
    answers = [agent.vocabulary.answers[p] if p >= 0 else OUTSIDE_ANSWERS for p in predictions.tolist()]
    return {"answers": answers, "correct": (predictions == data.answers).tolist()}


def some_of(answered: dict[str, list], keep: list[int]) -> dict[str, list]:
    return {key: [values[i] for i in keep] for key, values in answered.items()}


def parse_all(questions: list[dict], scenes: dict[int, clevr_io.Scene], progress: bool = True) -> list[dict]:
    """For each question: did the world's parser read it, and does its program give the question's own
    answer on the scene (a parse whose program is ill-posed there is wrong too)."""
    results = []
    for q in tqdm(questions, desc="parsing", unit="q", disable=not progress, leave=False):
        program = parse_program(q["question"])
        if program is None:
            results.append({"parsed": False, "right": False, "same_program": False, "program": None})
            continue
        try:
            right = execute(program, scenes[q["image_index"]]) == q["answer"]
        except (IllPosed, ProgramError):
            right = False
        results.append({"parsed": True, "right": right, "program": program_key(program),
                        "same_program": program_key(program) == program_key(program_from_json(q["program"]))})
    return results


# --- summaries ---------------------------------------------------------------------------------------

def rate(flags: list[bool]) -> dict:
    return {"accuracy": sum(flags) / len(flags) if flags else None, "n": len(flags)}


def rates_by(keys: list[str], flags: list[bool], order: tuple[str, ...] = ()) -> dict:
    """rate() of the flags of each key, keys in `order` first."""
    groups: dict[str, list[bool]] = {}
    for key, ok in zip(keys, flags):
        groups.setdefault(key, []).append(ok)
    return {k: rate(groups[k]) for k in [k for k in order if k in groups] + sorted(set(groups) - set(order))}


def agent_summary(agent: VQAAgent, questions: list[dict], answered: dict, parsed: list[dict]) -> dict:
    correct, answers = answered["correct"], answered["answers"]
    counts = [i for i, q in enumerate(questions) if answer_type(q["answer"]) == "count"]
    count_answers = [answers[i] for i in counts if answers[i] != OUTSIDE_ANSWERS]
    unknown = [agent.vocabulary.unknown_words(q["question"]) for q in questions]
    return {
        "accuracy": rate(correct)["accuracy"], "n": len(correct),
        "by_type": rates_by([q["type"] for q in questions], correct, CLEVR_TYPES),
        "by_answer_type": rates_by([answer_type(q["answer"]) for q in questions], correct),
        "counts": {**rate([correct[i] for i in counts]),
                   "not_number_share": (sum(not a.isdigit() for a in count_answers) / len(count_answers)
                                        if count_answers else None),
                   "outside_answer_vocabulary": len(counts) - len(count_answers),
                   "not_number_examples": [f"{questions[i]['question']} -> {answers[i]}" for i in counts
                                           if not answers[i].isdigit()][:EXAMPLES]},
        "unknown_words": {**rate([ok for ok, words in zip(correct, unknown) if words]),
                          "share_of_questions": sum(bool(w) for w in unknown) / max(len(unknown), 1),
                          "most_common": Counter(w for words in unknown for w in set(words)).most_common(15)},
        "not_parsed": rate([ok for ok, p in zip(correct, parsed) if not p["parsed"]]),
    }


def parser_summary(questions: list[dict], parsed: list[dict]) -> dict:
    by_type: dict[str, list[bool]] = {}
    for q, p in zip(questions, parsed):
        by_type.setdefault(q["type"], []).append(p["parsed"])
    n_parsed = sum(p["parsed"] for p in parsed)
    wrong = [(q, p) for q, p in zip(questions, parsed) if p["parsed"] and not p["right"]]
    return {
        "coverage": n_parsed / max(len(parsed), 1), "n": len(parsed), "parsed": n_parsed, "wrong": len(wrong),
        "same_program": sum(p["same_program"] for p in parsed),
        "coverage_by_type": {t: {"coverage": sum(v) / len(v), "n": len(v)} for t, v in sorted(by_type.items())},
        "wrong_examples": [f"{q['question']} -> {p['program']} (answer {q['answer']})" for q, p in wrong][:EXAMPLES],
        "not_parsed_examples": [q["question"] for q, p in zip(questions, parsed) if not p["parsed"]][:EXAMPLES],
    }


def measure(agents: dict[str, VQAAgent], questions: list[dict], scenes: list[dict],
            answered: dict[str, dict[str, list]], progress: bool = True) -> dict:
    """Every agent (its answers to `questions` in `answered`) and the parser on `questions`, which are
    about `scenes` (the world's scene dicts)."""
    by_index = {s["image_index"]: clevr_io.scene_from_json(s) for s in scenes}
    parsed = parse_all(questions, by_index, progress)
    return {"questions": len(questions), "images": len({q["image_index"] for q in questions}),
            "questions_per_type": dict(Counter(q["type"] for q in questions)),
            "agents": {name: agent_summary(agent, questions, answered[name], parsed) for name, agent in agents.items()},
            "parser": parser_summary(questions, parsed)}


# --- the command ----------------------------------------------------------------------------------

def world_test_split(world: Path, progress: bool = True) -> tuple[list[dict], list[dict]]:
    """The world's test scenes (rendered now where the world was laid out lazily) and their questions."""
    scenes = [s for s in json.loads((world / clevr_io.SCENES_FILE).read_text())["scenes"] if s["split"] == "test"]
    if not scenes:
        raise SystemExit(f"{world} has no test images")
    for s in tqdm(scenes, desc="rendering", unit="img", disable=not progress, leave=False):
        ensure_rendered(world, s["image_filename"])
    questions = [q for q in json.loads((world / clevr_io.QUESTIONS_FILE).read_text())["questions"]
                 if q["split"] == "test"]
    return scenes, questions


def benchmark(world: Path, agent_names: list[str], generator: Path | None, images: int, per_image: int, seed: int,
              progress: bool = True, keep_files: Path | None = None) -> dict:
    world = Path(world)
    scenes, own_questions = world_test_split(world, progress)
    first = scenes[:images]
    agents = {name: VQAAgent.from_pretrained(name) for name in agent_names}
    report = {"world": str(world), "agents": agent_names,
              "settings": {"images": len(first), "per_image": per_image, "seed": seed,
                           "generator": str(generator) if generator else None}}
    # The world's own test questions: all of them, and those about the images CLEVR's generator writes about.
    own = {name: agent_answers(agent, world, scenes, own_questions, progress) for name, agent in agents.items()}
    same_images = {s["image_index"] for s in first}
    report["own"] = {name: {"test": rate(a["correct"]),
                            "same_images": rate([ok for ok, q in zip(a["correct"], own_questions)
                                                 if q["image_index"] in same_images])}
                     for name, a in own.items()}

    if generator is None or not (Path(generator) / GENERATOR_SCRIPT).is_file():
        where = "no --clevr-generator given" if generator is None else f"no {GENERATOR_SCRIPT} in {generator}"
        report["clevr_phrased"] = {"skipped": f"CLEVR's question generator is not on disk ({where}; it is the "
                                              "question_generation directory of facebookresearch/clevr-dataset-gen)"}
    else:
        with tempfile.TemporaryDirectory(prefix="clevr_phrased_") as work:
            questions, note = clevr_phrased_questions(world, first, Path(generator), per_image, seed, Path(work),
                                                      progress)
            if keep_files is not None:   # the CLEVR-format scenes and questions, for CLEVR-X and nle_clevrx
                Path(keep_files).mkdir(parents=True, exist_ok=True)
                for name in ("EXAG_test_scenes.json", "EXAG_test_questions.json"):
                    shutil.copyfile(Path(work) / name, Path(keep_files) / name)
        answered = {name: agent_answers(agent, world, first, questions, progress) for name, agent in agents.items()}
        report["clevr_phrased"] = {"generator_metadata": note, **measure(agents, questions, first, answered, progress)}

    if not any("heldout_phrasing" in q for q in own_questions):
        report["heldout"] = {"skipped": f"{world}'s questions carry no `heldout_phrasing` key (built before "
                                        "held-out phrasings existed); rebuild the world to measure them"}
    elif not any(q.get("heldout_phrasing") for q in own_questions):
        report["heldout"] = {"skipped": f"{world} has no test question in a held-out phrasing"}
    else:
        heldout = [i for i, q in enumerate(own_questions) if q.get("heldout_phrasing")]
        report["heldout"] = measure(agents, [own_questions[i] for i in heldout], scenes,
                                    {name: some_of(a, heldout) for name, a in own.items()}, progress)
        report["heldout"]["trained_phrasings"] = {
            name: rate([ok for ok, q in zip(a["correct"], own_questions) if not q.get("heldout_phrasing")])
            for name, a in own.items()}
    return report


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def print_report(report: dict) -> None:
    own, clevr, heldout = report["own"], report["clevr_phrased"], report["heldout"]
    n_images = report["settings"]["images"]
    print(f"\n## CLEVR-phrased questions about {n_images} test images of {report['world']}\n")
    if "skipped" in clevr:
        print(f"skipped: {clevr['skipped']}\n")
        print("| agent | own test | own questions, same images |\n|---|---|---|")
        for name, o in own.items():
            print(f"| {name} | {_pct(o['test']['accuracy'])}% | {_pct(o['same_images']['accuracy'])}% |")
    else:
        print(f"{clevr['questions']} questions by CLEVR's generator ({report['settings']['per_image']} templates "
              f"per image, seed {report['settings']['seed']}); it read {clevr['generator_metadata']}.\n")
        print("| agent | own test | own questions, same images | CLEVR-phrased | "
              + " | ".join(t.replace("_", " ") for t in ISSUE_TYPES) + " | counts |")
        print("|---" * (5 + len(ISSUE_TYPES)) + "|")
        for name, a in clevr["agents"].items():
            print(f"| {name} | {_pct(own[name]['test']['accuracy'])}% | {_pct(own[name]['same_images']['accuracy'])}% "
                  f"| {_pct(a['accuracy'])}% | "
                  + " | ".join(_pct(a["by_type"].get(t, {}).get("accuracy")) for t in ISSUE_TYPES)
                  + f" | {_pct(a['counts']['accuracy'])} |")
        print("\nAll of CLEVR's types (accuracy %, n in the header):\n")
        types = [t for t in CLEVR_TYPES if t in clevr["questions_per_type"]]
        print("| agent | " + " | ".join(f"{t.replace('_', ' ')} ({clevr['questions_per_type'][t]})" for t in types)
              + " |\n" + "|---" * (1 + len(types)) + "|")
        for name, a in clevr["agents"].items():
            print(f"| {name} | " + " | ".join(_pct(a["by_type"][t]["accuracy"]) for t in types) + " |")
        print()
        _print_details(clevr)

    print("\n## Held-out phrasings of the world's own test questions\n")
    if "skipped" in heldout:
        print(f"skipped: {heldout['skipped']}")
        return
    types = [t for t in CLEVR_TYPES if t in heldout["questions_per_type"]]
    print(f"{heldout['questions']} test questions in phrasings held out from training.\n")
    print("| agent | own test | trained phrasings | held-out phrasings | "
          + " | ".join(t.replace("_", " ") for t in types) + " | counts |")
    print("|---" * (5 + len(types)) + "|")
    for name, a in heldout["agents"].items():
        print(f"| {name} | {_pct(own[name]['test']['accuracy'])}% | "
              f"{_pct(heldout['trained_phrasings'][name]['accuracy'])}% | {_pct(a['accuracy'])}% | "
              + " | ".join(_pct(a["by_type"][t]["accuracy"]) for t in types) + f" | {_pct(a['counts']['accuracy'])} |")
    print()
    _print_details(heldout)


def _print_details(part: dict) -> None:
    agents, parser = part["agents"], part["parser"]
    for name, a in agents.items():
        u, c = a["unknown_words"], a["counts"]
        words = ", ".join(f'"{w}"' for w, _ in u["most_common"][:8])
        print(f"- {name}: {_pct(u['share_of_questions'])}% of the questions have a word outside its vocabulary"
              + (f" ({words}); on those {_pct(u['accuracy'])}% right" if u["n"] else "")
              + f"; {_pct(c['not_number_share'])}% of its answers to the {c['n']} count questions are not numbers"
              + (f"; {_pct(a['not_parsed']['accuracy'])}% right on the {a['not_parsed']['n']} questions the parser "
                 "does not read" if a["not_parsed"]["n"] else "") + ".")
    print(f"- parser: reads {_pct(parser['coverage'])}% ({parser['parsed']} of {parser['n']}), "
          f"{parser['wrong']} of them wrongly, {parser['same_program']} to the very same program; by type: "
          + ", ".join(f"{t} {_pct(v['coverage'])}%" for t, v in parser["coverage_by_type"].items()))
    for line in parser["wrong_examples"][:5]:
        print(f"    wrong: {line}")
    for line in parser["not_parsed_examples"][:5]:
        print(f"    not read: {line}")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--world", type=Path, default=Path("data/world"))
    parser.add_argument("--agents", default="weak,medium,strong", help="comma-separated agent names or directories")
    parser.add_argument("--clevr-generator", type=Path, default=None,
                        help="CLEVR's question_generation directory (facebookresearch/clevr-dataset-gen)")
    parser.add_argument("--images", type=int, default=400, help="the world's first N test images")
    parser.add_argument("--per-image", type=int, default=10, help="CLEVR templates instantiated per image")
    parser.add_argument("--seed", type=int, default=5, help="seed of CLEVR's generator")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--keep-files", type=Path, default=None,
                        help="keep the CLEVR-format scenes and the generator's questions in this folder")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    report = benchmark(args.world, [a for a in args.agents.split(",") if a], args.clevr_generator, args.images,
                       args.per_image, args.seed, keep_files=args.keep_files)
    print_report(report)
    write_report(args.json, report)
    return report


if __name__ == "__main__":
    main()
