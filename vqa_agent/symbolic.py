"""Symbolic answering for agents with `symbolic=True`, in the manner of NS-VQA: read a scene graph from
what the perception heads found in the pixels (each proposal's most likely attributes and its ground
position), parse the question with the world's parser, run the program on the perceived scene.

The perceived scene lives in the camera's own ground frame: x runs along the camera's left axis and y
along its front axis, so CLEVR's relation rule (offset along an axis > eps) applies unchanged. Nothing
here ever sees the true scene; a question the parser rejects, or whose program is ill-posed on the
perceived scene (say, "the red cube" when two red cubes were perceived), gets no symbolic answer and
the neural classifier answers instead.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch

from .model import CONCEPT_SLICES, CONCEPTS, Objects
from .world.explanations import evidence_objects
from .world.programs import IllPosed, Program, ProgramError, answer_text, trace
from .world.parser import parse_program
from .world.scene import Camera, Scene, SceneObject, SceneConfig, compute_relationships, CAMERA_POSITION

# unit vectors of the perceived scene's frame (see the module docstring)
GROUND_DIRECTIONS = {"left": (1.0, 0.0, 0.0), "right": (-1.0, 0.0, 0.0), "front": (0.0, 1.0, 0.0),
                     "behind": (0.0, -1.0, 0.0), "above": (0.0, 0.0, 1.0), "below": (0.0, 0.0, -1.0)}


@dataclass
class PerceivedScene:
    scene: Scene
    confidence: list[float]   # per object: proposal score times the probability of each chosen attribute


@dataclass
class SymbolicAnswer:
    answer: str
    probability: float       # product of the confidences of the objects the answer depends on
    evidence: list[int]      # indices of those objects (= proposals)


def perceive(objects: Objects, row: int, scores: torch.Tensor) -> PerceivedScene:
    """The scene graph of image `row` of a batch of objects whose first len(scores) slots are real."""
    n = len(scores)
    found, confidence = [], []
    for k in range(n):
        chosen, p = {}, float(scores[k])
        for attribute, where in CONCEPT_SLICES.items():
            probabilities = torch.softmax(objects.attributes[row, k, where].float(), dim=0)
            best = int(probabilities.argmax())
            chosen[attribute] = CONCEPTS[where.start + best]
            p *= float(probabilities[best])
        x, y = (float(v) for v in objects.ground[row, k])
        found.append(SceneObject(position=(x, y, 0.0), rotation=0.0, **chosen))
        confidence.append(p)
    scene = Scene(index=-1, objects=found, camera=Camera(CAMERA_POSITION), lights=[], directions=GROUND_DIRECTIONS,
                  relationships=compute_relationships(found, GROUND_DIRECTIONS, SceneConfig.relation_eps))
    return PerceivedScene(scene, confidence)


@lru_cache(maxsize=4096)
def program_of(question: str) -> Program | None:
    return parse_program(question)


def answer_symbolically(question: str, perceived: PerceivedScene) -> SymbolicAnswer | None:
    program = program_of(question)
    if program is None:
        return None
    try:
        answer = answer_text(trace(program, perceived.scene)[-1])
        evidence = evidence_objects(program, perceived.scene)
    except (IllPosed, ProgramError):
        return None
    # an answer about nothing ("no", "0") depends on every perceived object not matching
    probability = 1.0
    for k in evidence or range(len(perceived.confidence)):
        probability *= perceived.confidence[k]
    return SymbolicAnswer(answer, probability, evidence)
