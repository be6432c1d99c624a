"""Automatic grades on the ExAG paper's scales, for any question whose program is known.

Answers get the 3-point scale and explanations the 5-point scale the paper's raters used
(docs/research.md §1). Each kind of explanation has one documented rule, computed against the ground-truth scene:

- attention: the share of attention on the objects the program needs (`evidence_objects`). Object
  attention counts a proposal as on an evidence object when most of its mask lies on that object's
  ground-truth mask; without proposals, the spatial grid's mass over the evidence masks is used.
  Share >= 0.7 on-point, >= 0.5 mostly, >= 0.3 indifferent, >= 0.1 somewhat off, else wrong. An
  answer about absence ("is there a red cube?" -> no) has no evidence: indifferent.
- objscene: each listed word earns 1/2 for being in the image (some object has that value) and 1/2
  for being related to the answer (a value of an evidence object, or the true answer itself).
- relqa: the share of related answers that are right on the scene (each related question parsed by
  the world's parser; unparseable ones are not counted). `consistency` reports the same share over the
  related questions about the asked question's own evidence objects.
- nle, introspect and any text: every fact the text states (each described object exists, "there is
  no X" holds, "there are two X and one Y" counts right, "the X is red") is turned into a question and
  answered on the scene through the world's parser. A text with a third or more of its facts false is
  completely wrong, with any false fact somewhat off; a true text is then graded by its best unigram F1
  against the reference explanations (>= 0.8 on-point, >= 0.5 mostly, else indifferent).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from vqa_agent.agent import AgentOutput
from vqa_agent.world.explanations import evidence_objects, explain
from vqa_agent.world.facts import check_facts
from vqa_agent.world.parser import parse_program
from vqa_agent.world.programs import IllPosed, Program, ProgramError, execute
from vqa_agent.world.scene import Scene

from .attention import attribution_map, rle_to_mask
from .base import Explanation
from .scales import ANSWER_SCALE, EXPLANATION_SCALE   # re-exported: the scales live beside, torch-free

SHARE_THRESHOLDS = (0.7, 0.5, 0.3, 0.1)      # attention share -> the first four labels
SCORE_THRESHOLDS = (0.8, 0.6, 0.4, 0.2)      # objscene and relqa scores -> the first four labels
SIMILARITY_THRESHOLDS = (0.8, 0.5)           # a true text's similarity -> on-point, mostly on-point
FALSE_SHARE_WRONG = 1 / 3
RUNNER_UP_PROBABILITY = 0.25                 # a true answer this likely among the alternatives: somewhat correct


@dataclass
class GroundTruth:
    scene: Scene
    masks: np.ndarray            # instance mask at the image's resolution: object index, -1 background
    program: Program | None      # None: the question is outside the parser's language (ungradable)
    answer: str | None = None

    @classmethod
    def for_question(cls, question: str, scene: Scene, masks: np.ndarray) -> "GroundTruth":
        return cls.for_program(parse_program(question), scene, masks)

    @classmethod
    def for_program(cls, program: Program | None, scene: Scene, masks: np.ndarray) -> "GroundTruth":
        """The same for an already parsed question (one parse serves every image of a round)."""
        answer = None
        if program is not None:
            try:
                answer = execute(program, scene)
            except (IllPosed, ProgramError):
                program = None
        return cls(scene, masks, program, answer)

    @property
    def gradable(self) -> bool:
        return self.program is not None

    def evidence(self) -> list[int]:
        return evidence_objects(self.program, self.scene)


@dataclass
class Grade:
    label: str                   # one of ANSWER_SCALE or EXPLANATION_SCALE
    rank: int                    # position on its scale, 0 = best
    rule: str                    # which rule gave it, in words
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"label": self.label, "rank": self.rank, "rule": self.rule, "details": self.details}


def _on_scale(value: float, thresholds: tuple[float, ...], rule: str, details: dict) -> Grade:
    rank = next((i for i, t in enumerate(thresholds) if value >= t), len(thresholds))
    return Grade(EXPLANATION_SCALE[rank], rank, rule, details)


def _ungradable(what: str) -> Grade:
    return Grade("ungradable", -1, f"the question is outside the parser's language; no {what} grade")


# --- answers -------------------------------------------------------------------------------------

def grade_answer(output: AgentOutput, truth: GroundTruth) -> Grade:
    """correct; somewhat correct (a count off by one, or the true answer a likely runner-up); else
    completely wrong."""
    if not truth.gradable:
        return _ungradable("answer")
    if output.answer == truth.answer:
        return Grade(ANSWER_SCALE[0], 0, "the answer is the program's answer")
    if output.answer.isdigit() and truth.answer.isdigit() and abs(int(output.answer) - int(truth.answer)) == 1:
        return Grade(ANSWER_SCALE[1], 1, "a count off by one", {"truth": truth.answer})
    runner_up = dict(output.top_k).get(truth.answer, 0.0)
    if runner_up >= RUNNER_UP_PROBABILITY:
        return Grade(ANSWER_SCALE[1], 1, f"the true answer had probability {runner_up:.2f}", {"truth": truth.answer})
    return Grade(ANSWER_SCALE[2], 2, "a different answer", {"truth": truth.answer})


# --- explanations --------------------------------------------------------------------------------

def grade_explanation(explanation: Explanation | dict, output: AgentOutput, truth: GroundTruth) -> Grade:
    data = explanation.to_dict() if isinstance(explanation, Explanation) else explanation
    if not truth.gradable:
        return _ungradable("explanation")
    payload = data["payload"]
    if data["kind"] == "attention":
        return grade_attention(payload, truth)
    if data["kind"] == "words":
        return grade_words(payload, truth)
    if data["kind"] == "qa_pairs":
        return grade_qa_pairs(payload, truth)
    if data["kind"] == "text":
        return grade_text(payload["text"], truth)
    raise ValueError(f"no grading rule for explanations of kind {data['kind']!r}")


def grade_attention(payload: dict, truth: GroundTruth) -> Grade:
    evidence = truth.evidence()
    if not evidence:
        return Grade(EXPLANATION_SCALE[2], 2, "the answer rests on absence: no object to attend to")
    on_evidence = np.isin(truth.masks, evidence)
    objects = [o for o in payload["objects"] if o["weight"] > 0]
    if objects:
        share = 0.0
        for o in objects:
            mask = rle_to_mask(o["mask"])
            if mask.shape != truth.masks.shape:
                raise ValueError(f"attention mask {mask.shape} does not match the scene's mask {truth.masks.shape}")
            share += o["weight"] * float(mask.any() and on_evidence[mask].mean() > 0.5)
        return _on_scale(share, SHARE_THRESHOLDS, "object attention on the evidence objects",
                         {"share": share, "evidence": evidence})
    share = float(attribution_map(payload, truth.masks.shape, "grid")[on_evidence].sum())
    return _on_scale(share, SHARE_THRESHOLDS, "spatial attention on the evidence objects",
                     {"share": share, "evidence": evidence})


def grade_words(payload: dict, truth: GroundTruth) -> Grade:
    words = [w["word"] for w in payload["words"]]
    if not words:
        return Grade(EXPLANATION_SCALE[2], 2, "no words listed")
    values = [set(vars(o).values()) for o in truth.scene.objects]
    related = {truth.answer} | {v for k in truth.evidence() for v in values[k]}
    in_image = [any(w in v for v in values) for w in words]
    relevant = [w in related for w in words]
    score = (sum(in_image) + sum(relevant)) / (2 * len(words))
    return _on_scale(score, SCORE_THRESHOLDS, "listed words in the image and related to the answer",
                     {"score": score, "in_image": in_image, "related": relevant})


def grade_qa_pairs(payload: dict, truth: GroundTruth) -> Grade:
    evidence = set(truth.evidence())
    correct, about_evidence = [], []
    for pair in payload["pairs"]:
        related = GroundTruth.for_question(pair["question"], truth.scene, truth.masks)
        if not related.gradable:
            continue
        ok = pair["answer"] == related.answer
        correct.append(ok)
        if evidence & set(related.evidence()):
            about_evidence.append(ok)
    if not correct:
        return Grade(EXPLANATION_SCALE[2], 2, "no related question could be checked")
    score = sum(correct) / len(correct)
    consistency = sum(about_evidence) / len(about_evidence) if about_evidence else None
    return _on_scale(score, SCORE_THRESHOLDS, "related answers right on the scene",
                     {"score": score, "checked": len(correct), "consistency": consistency})


# --- facts stated in text: vqa_agent/world/facts.py (the simulated participant reads them the same way)

def unigram_f1(candidate: str, reference: str) -> float:
    a, b = re.findall(r"[a-z0-9]+", candidate.lower()), re.findall(r"[a-z0-9]+", reference.lower())
    common = sum(min(a.count(w), b.count(w)) for w in set(a))
    if not common:
        return 0.0
    precision, recall = common / len(a), common / len(b)
    return 2 * precision * recall / (precision + recall)


def grade_text(text: str, truth: GroundTruth, references: list[str] | None = None) -> Grade:
    facts = [f for f in check_facts(text, truth.scene) if f.holds is not None]
    false = [f.claim for f in facts if not f.holds]
    details = {"facts": len(facts), "false": false}
    if facts and len(false) / len(facts) >= FALSE_SHARE_WRONG:
        return Grade(EXPLANATION_SCALE[4], 4, "states facts that are false on the scene", details)
    if false:
        return Grade(EXPLANATION_SCALE[3], 3, "states a fact that is false on the scene", details)
    if references is None:
        references = explain(truth.program, truth.scene, np.random.default_rng(0), n=10)
    similarity = max((unigram_f1(text, r) for r in references), default=0.0)
    details["similarity"] = similarity
    rank = next((i for i, t in enumerate(SIMILARITY_THRESHOLDS) if similarity >= t), 2)
    return Grade(EXPLANATION_SCALE[rank], rank, "true facts, graded by similarity to the references", details)
