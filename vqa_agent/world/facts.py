"""What a sentence says about a scene, and whether it holds: each claim of an explanation ("there are
two cubes", "the large cube is red", "there are no spheres") becomes a question of the world's language
with the answer that makes it true, so the program executor checks it on a scene.

The grader (explainers/grading.py) checks explanations on the true scene with it; the simulated
participant (game/evidence.py) checks them on the scene as it perceives it.

    [f.holds for f in check_facts("There are no spheres. The cube is red.", scene)]   # [True, False]
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .parser import parse_program
from .programs import IllPosed, ProgramError, execute
from .questions import ADJECTIVES, NOUNS, PLURALS
from .scene import Scene

WORD_VALUE = {word: value for value, words in ADJECTIVES.items() for word in words}
NOUN_VALUE = {word: value for value, words in NOUNS.items() for word in words}
SINGULAR = {plural: word for word, plural in PLURALS.items()}
NUMBERS = {w: i for i, w in enumerate("no one two three four five six seven eight nine ten".split())}
NUMBERS.update({"a": 1, "an": 1, **{str(i): i for i in range(11)}})
ATTRIBUTE_OF = {**{v: "size" for v in ("large", "small")}, **{v: "material" for v in ("metal", "rubber")}}


@dataclass
class Fact:
    claim: str                   # the words of the text it came from
    question: str                # the question that checks it
    expected: str                # the answer that makes it true
    holds: bool | None = None    # None: the question could not be answered on the scene


def _phrase(words: list[str], start: int) -> tuple[str | None, int]:
    """The object description at words[start:] in canonical order ("large red metal cube"), and the
    index after it; None when there is no description there."""
    values, i = [], start
    while i < len(words) and words[i] in WORD_VALUE:
        values.append(WORD_VALUE[words[i]])
        i += 1
    if i < len(words) and (words[i] in NOUN_VALUE or words[i] in SINGULAR):
        noun = NOUN_VALUE[words[i] if words[i] in NOUN_VALUE else SINGULAR[words[i]]]
        order = {"size": 0, "color": 1, "material": 2}
        values.sort(key=lambda v: order[ATTRIBUTE_OF.get(v, "color")])
        return " ".join(values + [noun or "thing"]), i + 1
    return None, start


def stated_facts(text: str) -> list[Fact]:
    facts = []
    for sentence in re.split(r"[.;!?]", text.lower()):
        words = re.findall(r"[a-z0-9]+", sentence)
        if not words:
            continue
        if words[:3] in (["there", "is", "no"], ["there", "are", "no"]):
            # the whole description, relations included, must be absent; checked only when it parses
            question = _parsed(f"is there a {' '.join(words[3:])}?", f"are there any {' '.join(words[3:])}?")
            if question:
                facts.append(Fact(sentence.strip(), question, "no"))
            continue
        head, _, breakdown = sentence.partition(":")
        counted = _counted_list(re.findall(r"[a-z0-9]+", head))
        if counted is not None:
            facts += counted
            if breakdown and len(counted) == 1:
                # "there are three large things: a cube, a sphere and a cylinder": each part is large
                adjectives = counted[0].question.split()[2:-3]
                parts = _counted_list(["there", "are"] + re.findall(r"[a-z0-9]+", breakdown), adjectives) or []
                facts += parts
            continue
        if words[:2] in (["there", "is"], ["there", "are"]):
            question = _parsed(f"is there {' '.join(words[2:])}?", f"are there {' '.join(words[2:])}?")
            if question:
                facts.append(Fact(sentence.strip(), question, "yes"))
        i = 0
        while i < len(words):
            phrase, end = _phrase(words, i)
            if phrase is None:
                i += 1
                continue
            if i and words[i - 1] in ("no", "other"):   # "... and no other blue thing is"
                i = end
                continue
            claim_end = end
            # "the large cube is red" / "... is a cube": what follows "is" describes the same object
            if words[end:end + 1] == ["is"] and words[:i] in ([], ["the"]):
                j = end + 1 + (words[end + 1:end + 2] in (["a"], ["an"]))
                stated = []
                while j < len(words) and (words[j] in WORD_VALUE or words[j] in NOUN_VALUE):
                    stated.append(words[j])
                    j += 1
                if stated:
                    phrase, _ = _phrase(phrase.split()[:-1] + stated + [phrase.split()[-1]]
                                        if stated[-1] not in NOUN_VALUE else phrase.split()[:-1] + stated, 0)
                    claim_end = j
            facts.append(Fact(" ".join(words[i:claim_end]), f"is there a {phrase}?", "yes"))
            i = claim_end
    return facts


def _parsed(*questions: str) -> str | None:
    """The first of the questions the world's parser understands."""
    return next((q for q in questions if parse_program(q) is not None), None)


def _counted_list(words: list[str], adjectives: list[str] = ()) -> list[Fact] | None:
    """'there are three cubes, two spheres and one cylinder': an exact count of each item, but only when
    the sentence is nothing but such a list (a count with a relation clause is not a count of all)."""
    if words[:2] not in (["there", "is"], ["there", "are"]):
        return None
    items, i = [], 2
    while i < len(words):
        if words[i] == "and":
            i += 1
            continue
        if words[i] not in NUMBERS:
            return None
        phrase, end = _phrase(words, i + 1)
        if phrase is None:
            return None
        if adjectives:
            phrase, _ = _phrase(list(adjectives) + phrase.split(), 0)
        items.append((" ".join(words[i:end]), phrase, NUMBERS[words[i]]))
        i = end
    if not items:
        return None
    # exact counts only when the items partition one kind of thing ("three cubes, two spheres and one
    # cylinder"); a list of differently described items ("a cube, a large cube") only says each exists
    adjective_sets = {tuple(phrase.split()[:-1]) for _, phrase, _ in items}
    nouns = [phrase.split()[-1] for _, phrase, _ in items]
    if len(adjective_sets) == 1 and len(set(nouns)) == len(nouns):
        return [Fact(claim, f"how many {phrase}s are there?", str(n)) for claim, phrase, n in items]
    return [Fact(claim, f"is there a {phrase}?", "yes" if n else "no") for claim, phrase, n in items]


@lru_cache(maxsize=8192)
def _program(question: str):
    # the simulated participant checks the same sentences on every image of a game: parse them once
    return parse_program(question)


def check_facts(text: str, scene: Scene) -> list[Fact]:
    facts = stated_facts(text)
    for fact in facts:
        program = _program(fact.question)
        if program is None:
            continue
        try:
            fact.holds = execute(program, scene) == fact.expected
        except (IllPosed, ProgramError):
            continue
    return facts
