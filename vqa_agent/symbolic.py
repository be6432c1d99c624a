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

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import chain

import torch

from .model import CONCEPT_SLICES, CONCEPTS, Objects
from .world.explanations import evidence_objects
from .world.programs import IllPosed, Program, ProgramError, answer_text, trace, validate
from .world.parser import parse_program
from .world.scene import Camera, Scene, SceneObject, SceneConfig, compute_relationships, CAMERA_POSITION

# unit vectors of the perceived scene's frame (see the module docstring)
GROUND_DIRECTIONS = {"left": (1.0, 0.0, 0.0), "right": (-1.0, 0.0, 0.0), "front": (0.0, 1.0, 0.0),
                     "behind": (0.0, -1.0, 0.0), "above": (0.0, 0.0, 1.0), "below": (0.0, 0.0, -1.0)}


MAX_REREADINGS = 24   # how many less likely readings of the scene are tried when a question is ill-posed
MAX_REREADING_COST = math.log(50)   # ... none less likely than 1/50 of the most likely reading


@dataclass(frozen=True)
class Rereading:
    cost: float               # log-probability given up against the most likely reading
    object: int
    attribute: str            # an attribute name, or "exists" for dropping the proposal altogether
    value: str = ""


@dataclass
class PerceivedScene:
    scene: Scene
    confidence: list[float]   # per object: proposal score times the probability of each chosen attribute
    rereadings: list[Rereading] = field(default_factory=list)   # cheapest first


@dataclass
class SymbolicAnswer:
    answer: str
    probability: float       # product of the confidences of the objects the answer depends on
    evidence: list[int]      # indices of those objects (= proposals)
    scene: Scene | None = None   # the reading of the scene the program ran on (an explanation traces it)


def perceive(objects: Objects, row: int, scores: torch.Tensor) -> PerceivedScene:
    """The scene graph of image `row` of a batch of objects whose first len(scores) slots are real."""
    n = len(scores)
    found, confidence, rereadings = [], [], []
    for k in range(n):
        score = float(scores[k])
        chosen, p = {}, score
        for attribute, where in CONCEPT_SLICES.items():
            probabilities = torch.softmax(objects.attributes[row, k, where].float(), dim=0)
            order = torch.argsort(probabilities, descending=True)
            best, second = int(order[0]), int(order[1])
            chosen[attribute] = CONCEPTS[where.start + best]
            p *= float(probabilities[best])
            cost = math.log(float(probabilities[best]) / max(float(probabilities[second]), 1e-9))
            rereadings.append(Rereading(cost, k, attribute, CONCEPTS[where.start + second]))
        rereadings.append(Rereading(math.log(score / max(1 - score, 1e-9)), k, "exists"))
        x, y = (float(v) for v in objects.ground[row, k])
        found.append(SceneObject(position=(x, y, 0.0), rotation=0.0, **chosen))
        confidence.append(p)
    rereadings = sorted((r for r in rereadings if r.cost <= MAX_REREADING_COST), key=lambda r: r.cost)
    return PerceivedScene(scene_of(found), confidence, rereadings[:MAX_REREADINGS])


def scene_of(objects: list[SceneObject]) -> Scene:
    return Scene(index=-1, objects=objects, camera=Camera(CAMERA_POSITION), lights=[], directions=GROUND_DIRECTIONS,
                 relationships=compute_relationships(objects, GROUND_DIRECTIONS, SceneConfig.relation_eps))


def reread(perceived: PerceivedScene, changes: tuple[Rereading, ...]) -> tuple[Scene, list[int]]:
    """The scene with some changes, and the original index of each of its objects."""
    objects = list(perceived.scene.objects)
    for change in changes:
        if change.attribute != "exists":
            objects[change.object] = replace(objects[change.object], **{change.attribute: change.value})
    dropped = {c.object for c in changes if c.attribute == "exists"}
    kept = [k for k in range(len(objects)) if k not in dropped]
    if not dropped:   # nothing moved: the scene's relations (computing them is most of a rereading's cost)
        return replace(perceived.scene, objects=objects), kept
    # a relation holds between two objects whatever the others, so a dropped one just leaves the lists
    number = {k: n for n, k in enumerate(kept)}
    relationships = {name: [[number[j] for j in related[k] if j in number] for k in kept]
                     for name, related in perceived.scene.relationships.items()}
    return replace(perceived.scene, objects=[objects[k] for k in kept], relationships=relationships), kept


@lru_cache(maxsize=4096)
def program_of(question: str) -> Program | None:
    """The question's program, validated once here (it then runs on many readings of many scenes with
    `trace(..., validated=True)`); None when it does not parse or is malformed."""
    program = parse_program(question)
    try:
        if program is not None:
            validate(program)
    except ProgramError:
        return None
    return program


def within_reach(program: Program, max_relations: int | None) -> bool:
    """Whether an agent that reasons by program only over short chains runs this program: at most
    `max_relations` relate steps and no same-attribute step (None: every program)."""
    if max_relations is None:
        return True
    functions = [node.function for node in program]
    return sum(f == "relate" for f in functions) <= max_relations and not any(f.startswith("same_") for f in functions)


def answer_symbolically(question: str, perceived: PerceivedScene,
                        max_relations: int | None = None) -> SymbolicAnswer | None:
    """The program's answer on the most likely reading of the scene on which the question is well
    posed: a question names objects that exist, so when "the red cube" matches no perceived object (or
    two), the next most likely readings are tried, each one attribute value or one proposal different.
    None when the question does not parse, or its program is beyond `max_relations` (within_reach)."""
    program = program_of(question)
    if program is None or not within_reach(program, max_relations):
        return None
    # lazily: a rereading is made only when the readings before it failed (most questions are well posed
    # on the first; making all 24 up front was a sixth of an explained round's CPU)
    readings = chain([((), perceived.scene, list(range(len(perceived.scene.objects))))],
                     (((change,), *reread(perceived, (change,))) for change in perceived.rereadings))
    for changes, scene, kept in readings:
        try:
            answer = answer_text(trace(program, scene, validated=True)[-1])
            evidence = [kept[k] for k in evidence_objects(program, scene)]
        except IllPosed:
            continue
        except ProgramError:
            return None
        # an answer about nothing ("no", "0") depends on every perceived object not matching
        probability = math.exp(-sum(c.cost for c in changes))
        for k in evidence or kept:
            probability *= perceived.confidence[k]
        return SymbolicAnswer(answer, probability, evidence, scene)
    return None
