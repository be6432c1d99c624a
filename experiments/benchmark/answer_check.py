"""How far the answer check (explainers/answer_check.py) can be trusted: its false alarms and its misses.

    python -m experiments.benchmark.answer_check --world data/game-world [--max-items N] [--json OUT]
    python -m experiments.benchmark.answer_check --clevr-scenes SCENES.json --clevr-questions QUESTIONS.json \
        --clevrx-explanations EXPLANATIONS.json [--json OUT]

Issue 32 asks for false alarms <= 1% on reference explanations and misses <= 5% on made-up
contradictions, per CLEVR answer type (count, exist, query, compare, compare_integer):

- false alarms: every reference explanation of every item (the world's questions.json: ours, traced from
  the scene graphs by vqa_agent/world/explanations.py) checked against its own answer; a reference that
  the check says contradicts its answer is a false alarm. CLEVR-X's own references need its generator
  on disk (see experiments/benchmark/clevrx_references.py); this script measures the references of the
  world it is given; or, with --clevrx-explanations, CLEVR-X's own: the file that
  `clevrx_references --clevrx-output` saves (CLEVR-X's generator, run unchanged, on the questions CLEVR's
  generator wrote about a CLEVR-format scenes file), beside those questions and scenes.
- misses, two ways of making a contradiction from each reference:
  * answer swapped: the reference checked against another answer of the same type (a count one more or
    one less, the other yes/no, another value of the queried attribute; a union's count outside what its
    sides allow, one more than both sides together or one less than the larger side, the sides traced
    on the scene);
  * sentence edited: the reference rewritten to say another answer (the queried value's words replaced
    by another value's; the first count of a "there is/are" clause or a subject changed; existence
    negated), checked against the true answer. Only references an edit applies to are counted (not
    unions' counts: one side's count changed may still fit what the sides share).
  A contradiction the check does not flag is a miss.

The answer type is what the check itself reads from the question (its parsed program); the report also
counts questions whose parsed type differs from the type of the stored program. Torch-free.
"""
from __future__ import annotations

import argparse
import json
import random
import re
from collections import defaultdict
from pathlib import Path

from tqdm import tqdm

from experiments.benchmark import write_report
from explainers.answer_check import ATTRIBUTE_OF, NUMBERS, VALUE_OF_WORD, answer_kind, check_explanation
from vqa_agent.world import clevr_io
from vqa_agent.world.clevr_io import scenes_from_json
from vqa_agent.world.programs import IllPosed, ProgramError, program_from_json, trace
from vqa_agent.world.questions import ADJECTIVES, NOUNS, PLURALS
from vqa_agent.world.scene import ATTRIBUTES

TARGETS = {"false_alarm_rate": 0.01, "miss_rate": 0.05}   # issue 32
EXAMPLES = 5                                               # kept per type and kind of error
MAX_COUNT = 10                                             # CLEVR's answers run 0-10


def union_sides(question: dict, scenes: dict) -> tuple[int, int] | None:
    """The sizes of the two sides of a counted union, from the program traced on the scene (None: the
    count is not over a union, or the scene is unknown)."""
    program = question.get("program") or []
    if not program or program[-1]["function"] != "count" or question.get("image_index") not in scenes:
        return None
    nodes = program_from_json(program)
    counted, filters = nodes[nodes[-1].inputs[0]], []
    while counted.function.startswith("filter_"):     # filters after the union name each side too
        filters.append((counted.function[len("filter_"):], counted.value_inputs[0]))
        counted = nodes[counted.inputs[0]]
    if counted.function != "union":
        return None
    scene = scenes[question["image_index"]]
    try:
        outputs = trace(nodes, scene)
    except (IllPosed, ProgramError):
        return None
    return tuple(sum(all(scene.objects[i].attribute(a) == v for a, v in filters) for i in outputs[side])
                 for side in counted.inputs)


def _other_answer(answer: str, kind: str, rng: random.Random, sides: tuple[int, int] | None = None) -> str | None:
    """Another answer of the same type. A union's sides may share objects, so its explanation allows any
    count from the larger side to their sum: the count made up lies outside."""
    if kind in ("exist", "compare", "compare_integer"):
        return {"yes": "no", "no": "yes"}.get(answer)
    if kind == "count" and sides is not None:
        return str(sum(sides) + 1 if max(sides) == 0 or rng.random() < 0.5 else max(sides) - 1)
    if kind == "count" and answer.isdigit():
        n = int(answer)
        return str(n + 1 if n == 0 or (n < MAX_COUNT and rng.random() < 0.5) else n - 1)
    if kind == "query" and answer in ATTRIBUTE_OF:
        return rng.choice([v for v in ATTRIBUTES[ATTRIBUTE_OF[answer]] if v != answer])
    return None


def _word_for(value: str, plural: bool) -> str:
    word = (ADJECTIVES.get(value) or NOUNS[value])[0]
    return PLURALS[word] if plural else word


def _swap_value(text: str, answer: str, rng: random.Random) -> str | None:
    """Every word for the answer's value replaced by a word for another value of its attribute."""
    other = rng.choice([v for v in ATTRIBUTES[ATTRIBUTE_OF[answer]] if v != answer])
    words = [w for w, v in VALUE_OF_WORD.items() if v == answer]
    pattern = re.compile(r"\b(" + "|".join(sorted(words, key=len, reverse=True)) + r")\b", re.IGNORECASE)
    if not pattern.search(text):
        return None

    def replace(match):
        word = match.group(0).lower()
        new = _word_for(other, word in PLURALS.values())
        return new[0].upper() + new[1:] if match.group(0)[0].isupper() else new
    return pattern.sub(replace, text)


_FIRST_COUNT = re.compile(r"^(there (?:is|are) |)(no|an?|the|one|two|three|four|five|six|seven|eight|nine|ten|\d+)\b",
                          re.IGNORECASE)


def _change_count(text: str) -> str | None:
    """The first number a "there is/are" clause (or the subject) says, changed: a -> two, two -> three,
    no -> a. Clauses after the first keep theirs, so the total changes by at least one."""
    match = re.search(r"\bthere (?:is|are) (no|an?|the|one|two|three|four|five|six|seven|eight|nine|ten|\d+)\b",
                      text, re.IGNORECASE) or _FIRST_COUNT.match(text)
    if not match:
        return None
    word = match.group(match.lastindex).lower()
    n = 0 if word == "no" else 1 if word in ("a", "an", "the") else int(word) if word.isdigit() else NUMBERS.index(word)
    new = "a" if n == 0 else NUMBERS[n + 1] if n + 1 < len(NUMBERS) else str(n + 1)
    start, end = match.span(match.lastindex)
    if start == 0:
        new = new.capitalize()
    return text[:start] + new + text[end:]


_QUANTITY = r"\b(?:an?|the|one|two|three|four|five|six|seven|eight|nine|ten|\d+)\b"
_AFTER_OBJECTS = re.compile(r"\b(?:that|which|left|right|behind|in front|on the|to the|has|have|is|are)\b|$")


def _deny_objects(segment: str) -> str:
    """Every object the segment enumerates made none: "a red cube and two spheres" -> "no red cube and no spheres"."""
    end = _AFTER_OBJECTS.search(segment).start()
    return re.sub(_QUANTITY, "no", segment[:end], flags=re.IGNORECASE) + segment[end:]


def _negate(text: str, answer: str) -> str | None:
    """A reference of "yes" made to say there is none, or one of "no" made to name an object."""
    if answer == "yes":
        if re.search(r"\bthere (?:is|are) ", text, re.IGNORECASE):
            parts = re.split(r"(\bthere (?:is|are) )", text, flags=re.IGNORECASE)
            return "".join(_deny_objects(p) if k and parts[k - 1].lower().startswith("there") else p
                           for k, p in enumerate(parts))
        subject = re.match(r"^(.*?) (has|have|is|are) ", text)
        if subject is None:
            return None
        if subject.group(2) in ("has", "have"):
            denied = _deny_objects(subject.group(1) + " ")
            return denied[0].upper() + denied[1:] + text[len(subject.group(1)) + 1:]
        return text[:subject.end()] + "not " + text[subject.end():]
    edited, n = re.subn(r"\b(there (?:is|are)) no\b", r"\1 a", text, flags=re.IGNORECASE)
    edited, m = re.subn(r"^No\b", "A", edited)
    edited, k = re.subn(r" is not ", " is ", edited)
    edited, j = re.subn(r", not (?:[a-z ]+? of|behind) it\b", "", edited)
    return edited if n + m + k + j else None


def edit_sentence(text: str, answer: str, kind: str, rng: random.Random) -> str | None:
    """The reference rewritten to say another answer than `answer` (None: no edit applies)."""
    if kind == "query" and answer in ATTRIBUTE_OF:
        return _swap_value(text, answer, rng)
    if kind == "count":
        return _change_count(text)
    if kind == "exist":
        return _negate(text, answer)
    return None


def _stats() -> dict:
    return {"questions": 0, "references": 0, "false_alarms": 0, "states_answer": 0, "cannot_tell": 0,
            "swapped": 0, "swap_misses": 0, "edited": 0, "edit_misses": 0, "type_differs": 0,
            "examples": {"false_alarm": [], "swap_miss": [], "edit_miss": []}}


def _example(entry: dict, key: str, question: dict, answer: str, text: str, reason: str) -> None:
    if len(entry["examples"][key]) < EXAMPLES:
        entry["examples"][key].append({"question": question["question"], "answer": answer, "explanation": text,
                                       "check": reason})


def measure(questions: list[dict], scenes: dict | None = None, seed: int = 0, progress: bool = True) -> dict:
    """False alarms and misses of check_explanation per answer type over the questions' references.
    scenes (image_index -> Scene) tell the sides of counted unions; without them, union counts get no
    made-up contradictions (their explanations allow a range of counts)."""
    rng = random.Random(seed)
    scenes = scenes or {}
    per_type: dict[str, dict] = defaultdict(_stats)
    for q in tqdm(questions, desc="checking references", unit="q", disable=not progress):
        answer = q["answer"]
        union = any(n["function"] == "union" for n in q.get("program") or [])
        sides = union_sides(q, scenes)
        stored_kind = answer_kind(q["program"][-1]["function"], answer)[0] if q.get("program") else None
        for text in q["explanations"]:
            check = check_explanation(q["question"], answer, text)
            entry = per_type[check.answer_type]
            entry["references"] += 1
            entry["type_differs"] += stored_kind is not None and stored_kind != check.answer_type
            entry["states_answer"] += check.states_answer is True
            entry["cannot_tell"] += check.states_answer is None
            if check.contradicts:
                entry["false_alarms"] += 1
                _example(entry, "false_alarm", q, answer, text, check.reason)
            other = None if union and check.answer_type == "count" and sides is None else \
                _other_answer(answer, check.answer_type, rng, sides)
            if other is not None:
                swapped = check_explanation(q["question"], other, text)
                entry["swapped"] += 1
                if not swapped.contradicts:
                    entry["swap_misses"] += 1
                    _example(entry, "swap_miss", q, other, text, swapped.reason)
            # a union's count edited in one clause may still fit the sides' overlap: not made up there
            edited = None if union and check.answer_type == "count" else \
                edit_sentence(text, answer, check.answer_type, rng)
            if edited is not None and edited != text:
                verdict = check_explanation(q["question"], answer, edited)
                entry["edited"] += 1
                if not verdict.contradicts:
                    entry["edit_misses"] += 1
                    _example(entry, "edit_miss", q, answer, edited, verdict.reason)
        per_type[check.answer_type]["questions"] += 1
    for entry in per_type.values():
        entry["false_alarm_rate"] = entry["false_alarms"] / entry["references"] if entry["references"] else None
        entry["states_answer_rate"] = entry["states_answer"] / entry["references"] if entry["references"] else None
        entry["swap_miss_rate"] = entry["swap_misses"] / entry["swapped"] if entry["swapped"] else None
        entry["edit_miss_rate"] = entry["edit_misses"] / entry["edited"] if entry["edited"] else None
    total = {k: sum(e[k] for e in per_type.values())
             for k in ("questions", "references", "false_alarms", "swapped", "swap_misses", "edited", "edit_misses")}
    total["false_alarm_rate"] = total["false_alarms"] / total["references"] if total["references"] else None
    misses, made = total["swap_misses"] + total["edit_misses"], total["swapped"] + total["edited"]
    total["miss_rate"] = misses / made if made else None
    return {"by_type": dict(sorted(per_type.items())), "overall": total, "targets": TARGETS}


def load_scenes(world: Path) -> dict:
    """image_index -> Scene of the world's scenes.json."""
    path = Path(world) / "scenes.json"
    return {scene.index: scene for scene in scenes_from_json(json.loads(path.read_text()), str(path))}


def load_questions(world: Path, max_items: int | None, seed: int = 0) -> list[dict]:
    """The world's questions (a seeded random sample of max_items of them)."""
    questions = json.loads((Path(world) / "questions.json").read_text())["questions"]
    questions = [q for q in questions if q.get("explanations")]
    if max_items is not None and max_items < len(questions):
        questions = random.Random(seed).sample(questions, max_items)
    return questions


def load_clevrx(scenes_path: Path, questions_path: Path, explanations_path: Path) -> tuple[list[dict], dict]:
    """CLEVR's generator's questions, each with CLEVR-X's explanations of it as its references (questions
    CLEVR-X did not explain are left out), and image_index -> Scene of the scenes file."""
    explained = {int(k): v for k, v in json.loads(Path(explanations_path).read_text()).items()}
    questions = []
    for record in clevr_io.load_questions(questions_path):
        texts = [t for t in explained.get(int(record.question_index), []) if t]
        if texts and record.answer is not None:
            questions.append({**clevr_io.question_to_json(record), "explanations": texts})
    if not questions:
        raise SystemExit(f"{explanations_path} explains none of the questions in {questions_path}")
    scenes = {scene.index: scene for scene in
              clevr_io.scenes_from_json(json.loads(Path(scenes_path).read_text()), str(scenes_path))}
    return questions, scenes


def _rate(value: float | None) -> str:
    return "     -" if value is None else f"{100 * value:5.2f}%"


def print_report(report: dict) -> None:
    print(f"answer check on {report['world']} ({report['references']}): {report['overall']['questions']} questions, "
          f"{report['overall']['references']} reference explanations")
    print(f"  {'type':16}{'refs':>8}{'false alarms':>14}{'states ans.':>13}{'swapped':>9}{'misses':>9}"
          f"{'edited':>8}{'misses':>9}")
    for kind, e in report["by_type"].items():
        print(f"  {kind:16}{e['references']:8d}{_rate(e['false_alarm_rate']):>14}{_rate(e['states_answer_rate']):>13}"
              f"{e['swapped']:9d}{_rate(e['swap_miss_rate']):>9}{e['edited']:8d}{_rate(e['edit_miss_rate']):>9}")
    o = report["overall"]
    print(f"  overall: false alarms {_rate(o['false_alarm_rate'])} (target <= 1%), misses {_rate(o['miss_rate'])} "
          f"of {o['swapped'] + o['edited']} made-up contradictions (target <= 5%)")
    for kind, e in report["by_type"].items():
        if e["type_differs"]:
            print(f"  {kind}: {e['type_differs']} references whose question parses to another type than its program")
        for key, examples in e["examples"].items():
            for x in examples[:2]:
                print(f"  {kind} {key}: A={x['answer']} | {x['explanation']} | {x['check']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--world", type=Path, help="a built world (its questions.json and our references)")
    parser.add_argument("--clevr-scenes", type=Path, help="with --clevrx-explanations: the CLEVR-format scenes file")
    parser.add_argument("--clevr-questions", type=Path, help="... the questions CLEVR's generator wrote about them")
    parser.add_argument("--clevrx-explanations", type=Path,
                        help="... and CLEVR-X's explanations of them (clevrx_references --clevrx-output)")
    parser.add_argument("--max-items", type=int, default=None, help="a random sample of N questions (--world)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    clevrx = (args.clevr_scenes, args.clevr_questions, args.clevrx_explanations)
    if args.world is not None and any(clevrx):
        parser.error("give --world, or the three CLEVR-X files, not both")
    if args.world is not None:
        questions, scenes = load_questions(args.world, args.max_items, args.seed), load_scenes(args.world)
        source = {"world": str(args.world), "references": "the world's own (vqa_agent/world/explanations.py)"}
    elif all(clevrx):
        questions, scenes = load_clevrx(*clevrx)
        source = {"world": str(args.clevr_scenes), "references": "CLEVR-X's (its generator run unchanged)",
                  "clevr_questions": str(args.clevr_questions), "clevrx_explanations": str(args.clevrx_explanations)}
    else:
        parser.error("give --world, or all of --clevr-scenes, --clevr-questions and --clevrx-explanations")
    report = {**source, "max_items": args.max_items, "seed": args.seed, **measure(questions, scenes, args.seed)}
    print_report(report)
    write_report(args.json, report)


if __name__ == "__main__":
    main()
