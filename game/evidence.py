"""What a participant can check in an explanation with its own eyes, as numbers a belief update can use.

Each function reads one kind of explanation exactly as the page receives it (server/player_safe.py:
boxes in image pixels, weights and probabilities in whole percent, sentences) and compares it with the
participant's perceived scene of that image:

- attention: how much of the agent's object attention lies on objects the question is about, and
  whether it looked at each of them;
- qa_pairs (RelQAs): the share of related answers that agree with what the participant sees;
- words (ObjScene) and text (NLE, introspect): the share of stated facts ("red", "a large sphere") that
  hold in the image.

`agreement` turns any of them into one score in [-1, 1] (1: the explanation shows the agent saw this
image right, -1: it shows the agent got it wrong, 0: nothing to check). The paper's players used
explanations this way: to judge whether this round's answer can be trusted.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from vqa_agent.world.facts import check_facts
from vqa_agent.world.parser import Unparseable, parse, parse_program
from vqa_agent.world.programs import IllPosed, ProgramError, execute
from vqa_agent.world.questions import ADJECTIVES, NOUNS, PLURALS, Question
from vqa_agent.world.scene import ATTRIBUTES, Scene

ATTRIBUTE_OF = {value: name for name, values in ATTRIBUTES.items() for value in values}
WORD_VALUE = {word: value for value, words in ADJECTIVES.items() for word in words}
NOUN_VALUE = {word: value for value, words in NOUNS.items() for word in words}
NOUN_VALUE |= {PLURALS[word]: value for word, value in list(NOUN_VALUE.items()) if word in PLURALS}
PRESENT = 0.5          # an ObjScene word at or above this probability says "this is in the image"


def matching(scene: Scene, attrs: dict[str, str]) -> list[int]:
    """Objects of the scene with all these attribute values."""
    return [i for i, o in enumerate(scene.objects) if all(o.attribute(a) == v for a, v in attrs.items())]


def attention_on_target(payload: dict, scene: Scene, targets: list[dict[str, str]]) -> float | None:
    """How well the agent's object attention covers the objects the question is about (those with any of
    the `targets`' attributes: "more cubes than balls" is about the cubes and the balls): the share of
    its attention on them, times the share of them it looked at (each got at least half of an even share
    of attention). A person checks both: "it looked at the red things" and "it looked at all of them"
    (a count that missed one shows as an object left dark). Each attended box goes to the perceived
    object whose centre is nearest the box centre. None when the image has no such object or the payload
    no attended object, so nothing can be checked."""
    relevant = sorted({i for target in targets for i in matching(scene, target)})
    objects = [o for o in payload.get("objects", []) if (o.get("weight") or 0) > 0]
    if not relevant or not objects or not scene.objects:
        return None
    centres = np.array([o.pixel_coords[:2] for o in scene.objects], float)
    weights = np.zeros(len(scene.objects))
    for o in objects:
        x1, y1, x2, y2 = o["box"]
        nearest = int(np.argmin(np.hypot(centres[:, 0] - (x1 + x2) / 2, centres[:, 1] - (y1 + y2) / 2)))
        weights[nearest] += o["weight"]
    if weights.sum() <= 0:
        return None
    weights = weights / weights.sum()
    on_target = float(weights[relevant].sum())
    looked_at = float(np.mean(weights[relevant] >= 0.5 / len(scene.objects)))
    return on_target * looked_at


@lru_cache(maxsize=4096)
def question_of(text: str) -> Question | None:
    """A question as a world Question (a related question, a resumed round), or None outside the language.
    Cached: the same related questions are shown for every image of a round (read-only trees)."""
    try:
        tree = parse(text)
    except Unparseable:
        return None
    return tree if isinstance(tree, Question) else None


def answer_on(question: str, scene: Scene) -> str | None:
    """The answer the participant sees for a question, or None when it cannot tell (outside the language,
    or no single answer in the scene as it sees it)."""
    program = parse_program(question)
    if program is None:
        return None
    try:
        return execute(program, scene)
    except (IllPosed, ProgramError):
        return None


def qa_agreement(payload: dict, scene: Scene) -> float | None:
    """The share of related question-answers that agree with the participant's own view of the image."""
    seen = [(answer_on(p["question"], scene), p["answer"]) for p in payload.get("pairs", [])]
    checked = [mine == theirs for mine, theirs in seen if mine is not None]
    return float(np.mean(checked)) if checked else None


ZERO = ()                          # the constant 0 among the counts compared below
EVERYTHING = (("any", "thing"),)   # "things", "objects": the set every other set is inside


def _plain(phrase) -> tuple | None:
    """A noun phrase as a set of attribute values ("small cylinders"), None when it is not a plain filter."""
    if phrase.relations or phrase.same is not None:
        return None
    return tuple(sorted(phrase.attrs.items())) or EVERYTHING


def count_facts(question: Question | None, answer: str) -> list[tuple[tuple, tuple, int]] | None:
    """What an answer says about counts of sets, as difference constraints (u, v, c): count(u) - count(v)
    <= c, with ZERO for the constant 0. "How many X": X = n; "is there an X": X >= 1 or X = 0; "more X
    than Y": X - Y >= 1 or X <= Y (fewer and equal alike). None for other kinds of question."""
    if question is None or question.outer or question.kind not in ("exist", "count", "compare_count"):
        return None
    sets = [_plain(p) for p in question.phrases]
    if any(s is None for s in sets):
        return None
    if question.kind == "count":
        if not answer.isdigit():
            return None
        return [(sets[0], ZERO, int(answer)), (ZERO, sets[0], -int(answer))]
    if answer not in ("yes", "no"):
        return None
    if question.kind == "exist":
        return [(ZERO, sets[0], -1)] if answer == "yes" else [(sets[0], ZERO, 0)]
    x, y = sets
    yes = answer == "yes"
    if question.op == "more":
        return [(y, x, -1)] if yes else [(x, y, 0)]
    if question.op == "fewer":
        return [(x, y, -1)] if yes else [(y, x, 0)]
    return [(x, y, 0), (y, x, 0)] if yes else None       # "not the same number" is no single constraint


def consistent(facts: list[tuple[tuple, tuple, int]]) -> bool:
    """Whether counts can satisfy all the facts, every count >= 0, and a set with more attributes never
    outnumbering one with fewer (small cylinders are cylinders): a difference-constraint system is
    satisfiable unless its graph has a negative cycle (Bellman-Ford)."""
    nodes = {ZERO} | {n for u, v, _ in facts for n in (u, v)}
    edges = list(facts) + [(ZERO, n, 0) for n in nodes if n != ZERO]        # count(n) >= 0
    for a in nodes:
        for b in nodes:
            if a in (b, ZERO) or b == ZERO:
                continue
            if b == EVERYTHING or (a != EVERYTHING and set(b) < set(a)):
                edges.append((a, b, 0))                                       # a is inside b
    distance = {n: 0 for n in nodes}
    for _ in range(len(nodes)):
        changed = False
        for u, v, c in edges:              # count(u) - count(v) <= c: an edge v -> u of weight c
            if distance[v] + c < distance[u]:
                distance[u], changed = distance[v] + c, True
        if not changed:
            return True
    return False


def coherent(asked: Question | None, answer: str, related: Question | None, related_answer: str) -> bool | None:
    """Whether a related answer can hold together with the asked one: "2 small cylinders" and "1 cylinder"
    cannot (small cylinders are cylinders), nor "more cubes than balls" and "more balls than rubber
    cubes" both yes and "how many rubber cubes" 3 with "how many cubes" 2. None when logic alone cannot
    tell (other kinds of question, or answers about sets that share nothing)."""
    first, second = count_facts(asked, answer), count_facts(related, related_answer)
    if first is None or second is None:
        return None
    mine = {n for u, v, _ in first for n in (u, v)} - {ZERO}
    theirs = {n for u, v, _ in second for n in (u, v)} - {ZERO}
    linked = any(set(a) <= set(b) or set(b) <= set(a) or EVERYTHING in (a, b) for a in mine for b in theirs)
    if not linked:
        return None
    return consistent(first + second)


def qa_coherence(payload: dict, asked: Question, answer: str) -> float | None:
    """The share of related answers (those logic can check) that hold together with this round's answer."""
    checked = [coherent(asked, answer, question_of(p["question"]), p["answer"]) for p in payload.get("pairs", [])]
    checked = [c for c in checked if c is not None]
    return float(np.mean(checked)) if checked else None


def facts_hold(text: str, scene: Scene) -> float | None:
    """The share of the facts a sentence states ("there are no spheres", "the cube is red") that hold in
    the image as the participant sees it; None when it states nothing checkable."""
    checked = [f.holds for f in check_facts(text, scene) if f.holds is not None]
    return float(np.mean(checked)) if checked else None


def words_hold(payload: dict, scene: Scene) -> float | None:
    """The share of ObjScene words whose stated presence (p >= 50%: in the image) the participant confirms."""
    checked = []
    for w in payload.get("words", []):
        value = WORD_VALUE.get(w["word"], NOUN_VALUE.get(w["word"]))
        if value is None or w.get("probability") is None:
            continue
        present = bool(matching(scene, {ATTRIBUTE_OF[value]: value}))
        checked.append(present == (w["probability"] >= PRESENT))
    return float(np.mean(checked)) if checked else None


def agreement(explanation: dict, scene: Scene, targets: list[dict[str, str]]) -> float | None:
    """One explanation (as the page gets it) against the perceived scene: a score in [-1, 1], or None
    when it offers nothing the participant can check."""
    kind, payload = explanation.get("kind"), explanation.get("payload") or {}
    if kind == "attention":
        share = attention_on_target(payload, scene, targets)
    elif kind == "qa_pairs":
        share = qa_agreement(payload, scene)
    elif kind == "words":
        share = words_hold(payload, scene)
    elif kind == "text":
        share = facts_hold(payload.get("text", ""), scene)
    else:
        share = None
    return None if share is None else 2.0 * share - 1.0
