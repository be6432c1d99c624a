"""Explanation requests for tests of text explainers: each question asked about each of the first test images
of a world, answered by an agent (tests/explainers/test_nle.py, test_nle_faithful.py)."""
from __future__ import annotations

from explainers.base import ExplanationRequest


def requests_about(agent, world, questions: list[str], images: int) -> list[ExplanationRequest]:
    files = sorted((world / "images").glob("EXAG_test_*.png"))[:images]
    pairs = [(image, question) for image in files for question in questions]
    outputs = agent.answer([i for i, _ in pairs], [q for _, q in pairs])
    return [ExplanationRequest(image, question, output) for (image, question), output in zip(pairs, outputs)]
