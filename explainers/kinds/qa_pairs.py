"""Kind "qa_pairs" (RelQA): questions related to the asked one, and the agent's answers to them on the
same image. Drawn by frontend/js/explanations/qa_pairs.js as a list "question -> answer", the agent's
confidence in the tooltip.

Payload: {"pairs": [{"question", "answer", "probability": the agent's confidence in [0, 1]}, ...]} (an
explainer may add fields: relqa adds each question's distance). The player gets question, answer and
confidence in whole percent. A simulated participant checks the answers against what it sees
(`qa_agreement`) and against the round's own answer (`qa_coherence`: can both hold?).
"""
from __future__ import annotations

import numpy as np

from vqa_agent.world.questions import Question
from vqa_agent.world.scene import Scene

from . import fields
from .coherence import coherent
from .precision import share
from .seen import answer_on, question_of

KIND = "qa_pairs"


def check(payload: dict) -> None:
    for k, p in enumerate(fields.items(fields.field(payload, "", "pairs"), "['pairs']")):
        where = f"['pairs'][{k}]"
        fields.text(fields.field(p, where, "question"), where + "['question']")
        fields.text(fields.field(p, where, "answer"), where + "['answer']")
        fields.number(fields.field(p, where, "probability"), where + "['probability']", 0, 1)


def for_player(payload: dict) -> dict:
    return {"pairs": [{"question": p["question"], "answer": p["answer"], "probability": share(p["probability"])}
                      for p in payload.get("pairs", [])]}


def qa_agreement(payload: dict, scene: Scene) -> float | None:
    """The share of related question-answers that agree with the participant's own view of the image."""
    seen = [(answer_on(p["question"], scene), p["answer"]) for p in payload.get("pairs", [])]
    checked = [mine == theirs for mine, theirs in seen if mine is not None]
    return float(np.mean(checked)) if checked else None


def qa_coherence(payload: dict, asked: Question, answer: str) -> float | None:
    """The share of related answers (those logic can check) that hold together with this round's answer."""
    checked = [coherent(asked, answer, question_of(p["question"]), p["answer"]) for p in payload.get("pairs", [])]
    checked = [c for c in checked if c is not None]
    return float(np.mean(checked)) if checked else None


def reading(payload: dict, scene: Scene, targets: list[dict[str, str]]) -> float | None:
    return qa_agreement(payload, scene)
