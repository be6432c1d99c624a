"""Whether two answers of the agent can hold together, by logic alone: "2 small cylinders" and "1
cylinder" cannot (small cylinders are cylinders). The qa_pairs kind's reading (qa_pairs.py qa_coherence)
checks each related answer against the round's answer with it."""
from __future__ import annotations

from vqa_agent.world.questions import Question

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
