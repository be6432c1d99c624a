"""Does each explanation state the answer it explains, or contradict it? The card's measure for text
explanations, per CLEVR answer type (count, exist, query, compare, compare_integer), with the answer check
(explainers/answer_check.py) that the nle explainer applies to its own sentences before showing them.

    contradictions(items, outputs, explanations) -> {"by_type": ..., "overall": ..., "checker": ...}

For every item the explanation is checked against the agent's answer (what it explains, right or wrong):
the share that states the answer, that states another answer of the same type (contradicts), that says
nothing the check can read, and that loops (a 3-word phrase written 3 times or more). The same shares on
the items the agent answered right are reported apart (issue 32's figures are on those).

"checker" says how far the check itself can be trusted on these very items: its false alarms on the
items' reference explanations, and its misses on contradictions made from them (answer swapped, sentence
edited), measured by experiments/benchmark/answer_check.py's `measure`.
"""
from __future__ import annotations

from collections import defaultdict

from explainers.answer_check import check_explanation
from explainers.nle import LOOP_TIMES, LOOP_WORDS, loops
from experiments.benchmark.answer_check import measure
from experiments.benchmark.e_vil import text_of


def _shares(rows: list[tuple[bool | None, bool, bool]]) -> dict:
    n = len(rows)
    if not n:
        return {"n": 0}
    return {"n": n,
            "states_answer": 100 * sum(s is True for s, _, _ in rows) / n,
            "contradicts": 100 * sum(c for _, c, _ in rows) / n,
            "unreadable": 100 * sum(s is None and not c for s, c, _ in rows) / n,
            "loops": 100 * sum(loop for _, _, loop in rows) / n}


def contradictions(items, outputs, explanations) -> dict:
    every, right = defaultdict(list), defaultdict(list)
    examples = []
    for item, output, explanation in zip(items, outputs, explanations):
        text = text_of(explanation)
        check = check_explanation(item.question, output.answer, text)
        row = (check.states_answer, check.contradicts, loops(text))
        every[check.answer_type].append(row)
        if output.answer == item.answer:
            right[check.answer_type].append(row)
        if check.contradicts and len(examples) < 10:
            examples.append({"question": item.question, "answer": output.answer, "explanation": text,
                             "check": check.reason})
    references = [{"question": it.question, "answer": it.answer, "program": it.program,
                   "explanations": it.references, "image_index": it.scene.index} for it in items if it.references]
    checker = measure(references, {it.scene.index: it.scene for it in items}, progress=False)["overall"] \
        if references else {"not_applicable": "the items carry no reference explanations"}
    return {"by_type": {kind: _shares(rows) for kind, rows in sorted(every.items())},
            "overall": _shares([row for rows in every.values() for row in rows]),
            "answered_right_by_type": {kind: _shares(rows) for kind, rows in sorted(right.items())},
            "checker": checker, "examples": examples,
            "definitions": {"states_answer": "% of explanations that state the agent's answer",
                            "contradicts": "% that state another answer of the same type",
                            "unreadable": "% the check cannot read either way",
                            "loops": f"% with a {LOOP_WORDS}-word phrase written {LOOP_TIMES} times or more",
                            "checker": "the check's false alarms on these items' references and misses on "
                                       "contradictions made from them (experiments/benchmark/answer_check.py)"}}
