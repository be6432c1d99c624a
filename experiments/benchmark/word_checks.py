"""Are the words and related answers an explainer shows true of the image? ObjScene and RelQAs checked
against the synthetic world's ground-truth scene (issue 15: "precision of the words against the scene;
RelQA answer accuracy and coherence").

    items = load_items(world, max_items=200); outputs = answer(agent, items)
    word_checks(explain(load_explainer("objscene", agent), items, outputs, agent), items, outputs)
    # {"kind": "words", "n": 200, "precision": 91.0, "related": 48.5, "agreement": 88.2, ...}
    word_checks(explain(load_explainer("relqa", agent), items, outputs, agent), items, outputs)
    # {"kind": "qa_pairs", "n": 200, "accuracy": 74.3, "coherence": 93.1, "consistency": 70.2, ...}

ObjScene (kind "words"; docs/research.md §1: the k words with the lowest S(O) = dist(O, A) / p(O | I)), in percent:
- precision: of all listed words that state presence (the agent's p(O | I) >= 0.5, game.evidence.PRESENT,
  the same line the simulated participant reads), the share that some object of the scene has (pooled
  over items; the word-in-image rule of explainers/grading.py grade_words).
- related: of all listed words, the share related to the answer: a value of an object the question's
  program needs, or the true answer itself (grade_words' rule).
- agreement: the mean over items of the share of words whose stated presence or absence (p >= 0.5 or
  below) the scene confirms (game/evidence.py words_hold: what a participant can check by looking).
RelQAs (kind "qa_pairs"; five related questions, each answered by the agent on the same image):
- accuracy: of all related questions the world's parser reads, the share the agent answers as the
  scene does (each parsed and executed on the item's scene; grade_qa_pairs), pooled over items.
- consistency: the same share over the related questions about the asked question's own evidence
  objects, mean over items that have any (grade_qa_pairs' `consistency`).
- coherence: the share of related answers that can hold together with the agent's answer to the asked
  question ("2 small cylinders" and "1 cylinder" cannot; game/evidence.py qa_coherence), mean over the
  items where logic can tell (counts and existence of nested sets; `coherence_items` counts them).
Items whose own question the parser cannot execute on the scene have no ground truth: skipped, counted.

Published references: the ExAG paper (docs/research.md §1) reports people's ratings of these explanations,
not their truth; its correlation of explanation with answer correctness was 0.37 for RelQAs. No
published precision figures exist for ObjScene. What differs in our world: the scene is known exactly,
so truth is checked by program, not by raters; ObjScene's vocabulary is the world's 15 attribute values.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from explainers.grading import GroundTruth, grade_qa_pairs, grade_words
from game.evidence import PRESENT, qa_coherence, question_of, words_hold
from vqa_agent.world.programs import program_from_json

KINDS = ("words", "qa_pairs")
DEFINITIONS = {
    "words": {
        "precision": "percent of listed words with p(O|I) >= 0.5 that some object of the scene has (pooled)",
        "related": "percent of listed words that are a value of an evidence object or the true answer (pooled)",
        "agreement": "mean over items of the percent of words whose stated presence (p >= 0.5) or absence the "
                     "scene confirms (game.evidence.words_hold)",
    },
    "qa_pairs": {
        "accuracy": "percent of parseable related questions the agent answers as the scene does (pooled)",
        "consistency": "the same over related questions about the asked question's evidence objects, mean "
                       "over items having any",
        "coherence": "mean over items of the percent of related answers that can hold with the asked answer "
                     "(game.evidence.qa_coherence), over items where logic can tell",
    },
}


def _percent(values: Sequence[float]) -> float | None:
    return 100 * float(np.mean(values)) if len(values) else None


def ground_truth(item) -> GroundTruth:
    """The item's scene, masks and program, executed (not gradable when the program is ill-posed there)."""
    return GroundTruth.for_program(program_from_json(item.program), item.scene, item.masks)


def objscene_checks(payloads: Sequence[dict], items: Sequence) -> dict:
    present_right, related, agreement, skipped, words = [], [], [], 0, 0
    for payload, item in zip(payloads, items):
        truth = ground_truth(item)
        if not truth.gradable:
            skipped += 1
            continue
        details = grade_words(payload, truth).details          # per word: in_image, related (none if no words)
        stated = [w.get("probability") is not None and w["probability"] >= PRESENT for w in payload["words"]]
        present_right += [ok for ok, s in zip(details.get("in_image", []), stated) if s]
        related += details.get("related", [])
        words += len(payload["words"])
        held = words_hold(payload, item.scene)
        if held is not None:
            agreement.append(held)
    return {"kind": "words", "n": len(items) - skipped, "skipped": skipped, "words": words,
            "stated_present": len(present_right), "precision": _percent(present_right),
            "related": _percent(related), "agreement": _percent(agreement), "definitions": DEFINITIONS["words"]}


def relqa_checks(payloads: Sequence[dict], items: Sequence, outputs: Sequence) -> dict:
    right, checked, consistency, coherence, skipped = 0, 0, [], [], 0
    for payload, item, output in zip(payloads, items, outputs):
        truth = ground_truth(item)
        if not truth.gradable:
            skipped += 1
            continue
        details = grade_qa_pairs(payload, truth).details         # score, checked, consistency (none if nothing checked)
        if details.get("checked"):
            checked += details["checked"]
            right += round(details["score"] * details["checked"])
            if details["consistency"] is not None:
                consistency.append(details["consistency"])
        coherent = qa_coherence(payload, question_of(item.question), output.answer)
        if coherent is not None:
            coherence.append(coherent)
    return {"kind": "qa_pairs", "n": len(items) - skipped, "skipped": skipped, "pairs_checked": checked,
            "accuracy": 100 * right / checked if checked else None, "consistency": _percent(consistency),
            "coherence": _percent(coherence), "coherence_items": len(coherence),
            "definitions": DEFINITIONS["qa_pairs"]}


def word_checks(explanations: Sequence, items: Sequence, outputs: Sequence) -> dict:
    """ObjScene ("words") or RelQA ("qa_pairs") explanations, one per item, checked against the items'
    scenes; `outputs` are the agent's answers that were explained (RelQA coherence is with them)."""
    if not len(explanations) == len(items) == len(outputs):
        raise ValueError(f"got {len(explanations)} explanations, {len(items)} items and {len(outputs)} outputs")
    data = [e.to_dict() if hasattr(e, "to_dict") else e for e in explanations]
    kinds = {d["kind"] for d in data}
    if len(kinds) != 1 or not kinds <= set(KINDS):
        raise ValueError(f"word_checks takes explanations of one kind, {' or '.join(KINDS)}; got {sorted(kinds)}")
    payloads = [d["payload"] for d in data]
    if kinds == {"words"}:
        return objscene_checks(payloads, items)
    return relqa_checks(payloads, items, outputs)
