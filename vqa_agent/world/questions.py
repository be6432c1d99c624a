"""Question families: a small question grammar, its phrasings, and answer-balanced generation.

Every question is first built as a tree (`Question` over `NounPhrase`s), then compiled to a CLEVR
program and rendered to text with a randomly chosen phrasing and synonyms. The parser (parser.py)
produces the same trees from free text, so a generated question and its parse compile to the same
program by construction.

Families follow CLEVR's nine question types (zero/one/two/three hop, single and, single or, same
relate, compare integer, comparison). Families named `player_*` are the questions people type while
playing a guessing game ("is there a red cube?", "what is in the image?"); they carry the CLEVR type
their program belongs to.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from .programs import IllPosed, Program, ProgramBuilder, answer_text, trace
from .scene import ATTRIBUTES, RELATIONS, Scene

ATTRIBUTE_ORDER = ("size", "color", "material", "shape")  # word order in a noun phrase

# Words used for each value when generating text; the first is CLEVR's canonical word.
ADJECTIVES = {
    "large": ["large", "big"], "small": ["small", "tiny"],
    "metal": ["metal", "metallic", "shiny"], "rubber": ["rubber", "matte"],
    **{c: [c] for c in ATTRIBUTES["color"]},
}
NOUNS = {"cube": ["cube", "block"], "sphere": ["sphere", "ball"], "cylinder": ["cylinder"],
         None: ["thing", "object"]}
PLURALS = {"cube": "cubes", "block": "blocks", "sphere": "spheres", "ball": "balls",
           "cylinder": "cylinders", "thing": "things", "object": "objects"}
RELATION_PHRASES = {
    "left": ["left of", "to the left of", "on the left side of"],
    "right": ["right of", "to the right of", "on the right side of"],
    "front": ["in front of"],
    "behind": ["behind"],
}


@dataclass
class NounPhrase:
    """A set of objects: attribute filters applied to either the whole scene, the objects related to
    other unique objects (intersected when there are several), or the other objects sharing an
    attribute with a unique object."""
    attrs: dict[str, str] = field(default_factory=dict)
    relations: list[tuple[str, "NounPhrase"]] = field(default_factory=list)
    same: tuple[str, "NounPhrase"] | None = None

    def compile(self, b: ProgramBuilder) -> int:
        if self.same is not None:
            attr, anchor = self.same
            source = b.add(f"same_{attr}", [b.add("unique", [anchor.compile(b)])])
        elif self.relations:
            related = [b.add("relate", [b.add("unique", [anchor.compile(b)])], [rel])
                       for rel, anchor in self.relations]
            source = related[0]
            for other in related[1:]:
                source = b.add("intersect", [source, other])
        else:
            source = b.add("scene")
        return b.filters(source, self.attrs)


@dataclass
class Question:
    """kind: count | exist | query | count_or | compare_count | compare_attr | relation_check | most_common.
    `attr` is the queried/compared attribute, `op` the comparison (more, fewer, equal) or the relation."""
    kind: str
    phrases: list[NounPhrase]
    attr: str | None = None
    op: str | None = None

    def program(self) -> Program:
        b = ProgramBuilder()
        k, p = self.kind, self.phrases
        if k in ("count", "exist"):
            b.add(k, [p[0].compile(b)])
        elif k == "query":
            b.add(f"query_{self.attr}", [b.add("unique", [p[0].compile(b)])])
        elif k == "count_or":
            b.add("count", [b.add("union", [p[0].compile(b), p[1].compile(b)])])
        elif k == "compare_count":
            first, second = b.add("count", [p[0].compile(b)]), b.add("count", [p[1].compile(b)])
            function = {"more": "greater_than", "fewer": "less_than", "equal": "equal_integer"}[self.op]
            b.add(function, [first, second])
        elif k == "compare_attr":
            first = b.add(f"query_{self.attr}", [b.add("unique", [p[0].compile(b)])])
            second = b.add(f"query_{self.attr}", [b.add("unique", [p[1].compile(b)])])
            b.add(f"equal_{self.attr}", [first, second])
        elif k == "relation_check":
            subject = p[0].compile(b)
            b.add("unique", [subject])  # the subject must be one object for the question to make sense
            related = b.add("relate", [b.add("unique", [p[1].compile(b)])], [self.op])
            b.add("exist", [b.add("intersect", [subject, related])])
        elif k == "most_common":
            b.add("most_common", [p[0].compile(b)], [self.attr])
        else:
            raise ValueError(f"unknown question kind {k!r}")
        return b.nodes


# --- text -------------------------------------------------------------------------------------------

def _pick(rng: np.random.Generator, options):
    return options[int(rng.integers(len(options)))]


def np_text(phrase: NounPhrase, rng: np.random.Generator, plural: bool = False, article: str = "the") -> str:
    words = [_pick(rng, ADJECTIVES[phrase.attrs[a]]) for a in ATTRIBUTE_ORDER[:3] if a in phrase.attrs]
    noun = _pick(rng, NOUNS[phrase.attrs.get("shape")])
    words.append(PLURALS[noun] if plural else noun)
    head = " ".join(words)
    if article:
        head = f"{article} {head}" if article != "a" else f"{'an' if head[0] in 'aeiou' else 'a'} {head}"
    if phrase.same is not None:
        attr, anchor = phrase.same
        verb = "are" if plural else "is"
        return f"{head} that {verb} the same {attr} as {np_text(anchor, rng)}"
    if phrase.relations:
        clauses = [f"{_pick(rng, RELATION_PHRASES[rel])} {np_text(anchor, rng)}" for rel, anchor in phrase.relations]
        if len(clauses) == 1:
            lead = _pick(rng, ["", "that is " if not plural else "that are ", "which is " if not plural else "which are "])
            return f"{head} {lead}{clauses[0]}"
        verb = "are" if plural else "is"
        return f"{head} that {verb} both {clauses[0]} and {clauses[1]}"
    return head


ATTRIBUTE_QUESTIONS = {
    "color": ["What color is {x}?", "What is the color of {x}?", "The {x_bare} is what color?"],
    "shape": ["What shape is {x}?", "What is the shape of {x}?", "What kind of shape is {x}?"],
    "size": ["What size is {x}?", "How big is {x}?", "What is the size of {x}?"],
    "material": ["What material is {x}?", "What is {x} made of?", "What is the material of {x}?"],
}


def question_text(q: Question, rng: np.random.Generator) -> str:
    k, p = q.kind, q.phrases
    if k == "count":
        x = np_text(p[0], rng, plural=True, article="")
        return _pick(rng, [f"How many {x} are there?", f"What number of {x} are there?",
                           f"How many {x} are in the image?", f"How many {x} can you see?"])
    if k == "exist":
        plural = np_text(p[0], rng, plural=True, article="")
        single = np_text(p[0], rng, article="a")
        return _pick(rng, [f"Are there any {plural}?", f"Is there {single}?", f"Do you see {single}?",
                           f"Are any {plural} visible?"])
    if k == "query":
        x = np_text(p[0], rng)
        template = _pick(rng, ATTRIBUTE_QUESTIONS[q.attr])
        return template.format(x=x, x_bare=x[len("the "):])
    if k == "count_or":
        a, b = np_text(p[0], rng, plural=True, article=""), np_text(p[1], rng, plural=True, article="")
        return _pick(rng, [f"How many things are {a} or {b}?", f"How many {a} or {b} are there?",
                           f"What number of things are either {a} or {b}?"])
    if k == "compare_count":
        a, b = np_text(p[0], rng, plural=True, article=""), np_text(p[1], rng, plural=True, article="")
        return _pick(rng, {
            "more": [f"Are there more {a} than {b}?", f"Is the number of {a} greater than the number of {b}?"],
            "fewer": [f"Are there fewer {a} than {b}?", f"Is the number of {a} less than the number of {b}?"],
            "equal": [f"Are there the same number of {a} and {b}?", f"Is the number of {a} the same as the number of {b}?",
                      f"Are there an equal number of {a} and {b}?"],
        }[q.op])
    if k == "compare_attr":
        a, b = np_text(p[0], rng), np_text(p[1], rng)
        verbs = {"material": "made of the same material as", "color": "the same color as",
                 "shape": "the same shape as", "size": "the same size as"}
        return _pick(rng, [f"Is {a} {verbs[q.attr]} {b}?", f"Does {a} have the same {q.attr} as {b}?",
                           f"Do {a} and {b} have the same {q.attr}?"])
    if k == "relation_check":
        a, b = np_text(p[0], rng), np_text(p[1], rng)
        return f"Is {a} {_pick(rng, RELATION_PHRASES[q.op])} {b}?"
    if k == "most_common":
        if q.attr == "shape":
            return _pick(rng, ["What is in the image?", "What is in the picture?", "What do you see?",
                               "What kind of things are in the image?", "What shape are most of the things?"])
        return f"What {q.attr} are most of the things?"
    raise ValueError(f"unknown question kind {k!r}")


# --- sampling well-posed questions from a scene -----------------------------------------------------

def _attrs_of(scene: Scene, index: int) -> dict[str, str]:
    return {a: scene.objects[index].attribute(a) for a in ATTRIBUTE_ORDER}


def _matches(scene: Scene, index: int, attrs: dict[str, str]) -> bool:
    return all(scene.objects[index].attribute(a) == v for a, v in attrs.items())


def describe_unique(scene: Scene, target: int, among: list[int], rng: np.random.Generator,
                    exclude: tuple[str, ...] = ()) -> dict[str, str] | None:
    """A random, short attribute description that picks `target` out of `among` (None if impossible)."""
    full = _attrs_of(scene, target)
    names = [a for a in ATTRIBUTE_ORDER if a not in exclude]
    order = list(rng.permutation(names))
    chosen: dict[str, str] = {a: full[a] for a in order if rng.random() < 0.25}
    for attr in order:
        if [i for i in among if _matches(scene, i, chosen)] == [target]:
            return chosen
        chosen[attr] = full[attr]
    return chosen if [i for i in among if _matches(scene, i, chosen)] == [target] else None


def random_description(scene: Scene, among: list[int], rng: np.random.Generator) -> dict[str, str]:
    """A description for counting/existence: usually borrowed from an object present, sometimes made up."""
    names = list(rng.permutation(ATTRIBUTE_ORDER))[: int(rng.integers(0, 3))]
    if among and rng.random() < 0.75:
        source = _attrs_of(scene, int(_pick(rng, among)))
        return {a: source[a] for a in names}
    return {a: str(_pick(rng, ATTRIBUTES[a])) for a in names}


def unique_phrase(scene: Scene, rng: np.random.Generator, hops: int, exclude: tuple[str, ...] = ()
                  ) -> tuple[NounPhrase, int] | None:
    """A phrase naming one object through `hops` relations, and that object's index."""
    everyone = list(range(len(scene.objects)))
    anchor = int(rng.integers(len(everyone)))
    attrs = describe_unique(scene, anchor, everyone, rng, exclude if hops == 0 else ())
    if attrs is None:
        return None
    phrase = NounPhrase(attrs)
    for hop in range(hops):
        rel = str(_pick(rng, RELATIONS))
        related = scene.related(anchor, rel)
        if not related:
            return None
        target = int(_pick(rng, related))
        attrs = describe_unique(scene, target, related, rng, exclude if hop == hops - 1 else ())
        if attrs is None:
            return None
        phrase, anchor = NounPhrase(attrs, relations=[(rel, phrase)]), target
    return phrase, anchor


def related_set_phrase(scene: Scene, rng: np.random.Generator, hops: int) -> NounPhrase | None:
    """A (possibly empty) set phrase reached through `hops` relations from a unique object."""
    base = unique_phrase(scene, rng, hops - 1)
    if base is None:
        return None
    anchor_phrase, anchor = base
    rel = str(_pick(rng, RELATIONS))
    return NounPhrase(random_description(scene, scene.related(anchor, rel), rng), relations=[(rel, anchor_phrase)])


def _query_attr(rng) -> str:
    return str(_pick(rng, ATTRIBUTE_ORDER))


def _sample_count_exist(kind: str, hops: int):
    def sample(scene, rng):
        if hops == 0:
            attrs = random_description(scene, list(range(len(scene.objects))), rng)
            if kind == "exist" and not attrs:
                return None  # "are there any things?" is always yes
            return Question(kind, [NounPhrase(attrs)])
        phrase = related_set_phrase(scene, rng, hops)
        return phrase and Question(kind, [phrase])
    return sample


def _sample_query(hops: int):
    def sample(scene, rng):
        attr = _query_attr(rng)
        found = unique_phrase(scene, rng, hops, exclude=(attr,))
        return found and Question("query", [found[0]], attr=attr)
    return sample


def _sample_and(kind: str):
    def sample(scene, rng):
        everyone = list(range(len(scene.objects)))
        a, b = rng.choice(everyone, 2, replace=False) if len(everyone) > 1 else (0, 0)
        rels = [str(_pick(rng, RELATIONS)), str(_pick(rng, RELATIONS))]
        da, db = describe_unique(scene, int(a), everyone, rng), describe_unique(scene, int(b), everyone, rng)
        if da is None or db is None or a == b:
            return None
        both = sorted(set(scene.related(int(a), rels[0])) & set(scene.related(int(b), rels[1])))
        relations = [(rels[0], NounPhrase(da)), (rels[1], NounPhrase(db))]
        if kind == "query":
            if not both:
                return None
            attr = _query_attr(rng)
            target = int(_pick(rng, both))
            attrs = describe_unique(scene, target, both, rng, exclude=(attr,))
            return attrs is not None and Question("query", [NounPhrase(attrs, relations=relations)], attr=attr) or None
        return Question(kind, [NounPhrase(random_description(scene, both, rng), relations=relations)])
    return sample


def _two_distinct_descriptions(scene, rng) -> tuple[dict, dict] | None:
    """Two non-empty descriptions neither of which contains the other ("cubes or red cubes" is no choice)."""
    everyone = list(range(len(scene.objects)))
    first, second = random_description(scene, everyone, rng), random_description(scene, everyone, rng)
    if not first or not second or first.items() <= second.items() or second.items() <= first.items():
        return None
    return first, second


def _sample_or(scene, rng):
    pair = _two_distinct_descriptions(scene, rng)
    return pair and Question("count_or", [NounPhrase(pair[0]), NounPhrase(pair[1])])


def _sample_same(kind: str):
    def sample(scene, rng):
        attr = _query_attr(rng)
        found = unique_phrase(scene, rng, 0, exclude=(attr,))
        if found is None:
            return None
        anchor_phrase, anchor = found
        others = [i for i in range(len(scene.objects))
                  if i != anchor and scene.objects[i].attribute(attr) == scene.objects[anchor].attribute(attr)]
        if kind == "query":
            asked = str(_pick(rng, [a for a in ATTRIBUTE_ORDER if a != attr]))
            if not others:
                return None
            target = int(_pick(rng, others))
            attrs = describe_unique(scene, target, others, rng, exclude=(attr, asked))
            return attrs is not None and Question("query", [NounPhrase(attrs, same=(attr, anchor_phrase))], attr=asked) or None
        attrs = {k: v for k, v in random_description(scene, others, rng).items() if k != attr}
        return Question(kind, [NounPhrase(attrs, same=(attr, anchor_phrase))])
    return sample


def _sample_compare_count(scene, rng):
    pair = _two_distinct_descriptions(scene, rng)
    return pair and Question("compare_count", [NounPhrase(pair[0]), NounPhrase(pair[1])],
                             op=str(_pick(rng, ["more", "fewer", "equal"])))


def _sample_compare_attr(scene, rng):
    attr = _query_attr(rng)
    a, b = unique_phrase(scene, rng, 0, exclude=(attr,)), unique_phrase(scene, rng, 0, exclude=(attr,))
    if a is None or b is None or a[1] == b[1]:
        return None
    return Question("compare_attr", [a[0], b[0]], attr=attr)


def _sample_player_exist(scene, rng):
    everyone = list(range(len(scene.objects)))
    source = _attrs_of(scene, int(_pick(rng, everyone)))
    names = list(rng.permutation(["color", "shape", "size", "material"]))[: int(rng.integers(1, 3))]
    attrs = {a: (source[a] if rng.random() < 0.6 else str(_pick(rng, ATTRIBUTES[a]))) for a in names}
    return Question("exist", [NounPhrase(attrs)])


def _sample_player_count(scene, rng):
    attr = str(_pick(rng, ["shape", "shape", "color", "material", "size"]))
    return Question("count", [NounPhrase({attr: str(_pick(rng, ATTRIBUTES[attr]))})])


def _sample_player_query(attr: str):
    def sample(scene, rng):
        everyone = list(range(len(scene.objects)))
        target = int(rng.integers(len(everyone)))
        attrs = describe_unique(scene, target, everyone, rng, exclude=(attr,))
        return attrs is not None and Question("query", [NounPhrase(attrs)], attr=attr) or None
    return sample


def _sample_player_relation(scene, rng):
    everyone = list(range(len(scene.objects)))
    a, b = (int(x) for x in rng.choice(everyone, 2, replace=False))
    da = describe_unique(scene, a, everyone, rng)
    db = describe_unique(scene, b, everyone, rng)
    if da is None or db is None:
        return None
    return Question("relation_check", [NounPhrase(da), NounPhrase(db)], op=str(_pick(rng, RELATIONS)))


def _sample_player_more(scene, rng):
    shapes = list(rng.choice(ATTRIBUTES["shape"], 2, replace=False))
    return Question("compare_count", [NounPhrase({"shape": str(shapes[0])}), NounPhrase({"shape": str(shapes[1])})],
                    op=str(_pick(rng, ["more", "fewer"])))


def _sample_most_common(scene, rng):
    return Question("most_common", [NounPhrase()], attr=str(_pick(rng, ["shape", "shape", "color"])))


@dataclass(frozen=True)
class Family:
    name: str
    type: str      # one of CLEVR's nine question types
    sample: object  # (scene, rng) -> Question | None


FAMILIES: list[Family] = [
    Family("zero_hop_count", "zero_hop", _sample_count_exist("count", 0)),
    Family("zero_hop_exist", "zero_hop", _sample_count_exist("exist", 0)),
    Family("zero_hop_query", "zero_hop", _sample_query(0)),
    Family("one_hop_count", "one_hop", _sample_count_exist("count", 1)),
    Family("one_hop_exist", "one_hop", _sample_count_exist("exist", 1)),
    Family("one_hop_query", "one_hop", _sample_query(1)),
    Family("two_hop_count", "two_hop", _sample_count_exist("count", 2)),
    Family("two_hop_exist", "two_hop", _sample_count_exist("exist", 2)),
    Family("two_hop_query", "two_hop", _sample_query(2)),
    Family("three_hop_count", "three_hop", _sample_count_exist("count", 3)),
    Family("three_hop_exist", "three_hop", _sample_count_exist("exist", 3)),
    Family("three_hop_query", "three_hop", _sample_query(3)),
    Family("single_and_count", "single_and", _sample_and("count")),
    Family("single_and_exist", "single_and", _sample_and("exist")),
    Family("single_and_query", "single_and", _sample_and("query")),
    Family("single_or_count", "single_or", _sample_or),
    Family("same_relate_count", "same_relate", _sample_same("count")),
    Family("same_relate_exist", "same_relate", _sample_same("exist")),
    Family("same_relate_query", "same_relate", _sample_same("query")),
    Family("compare_integer", "compare_integer", _sample_compare_count),
    Family("comparison", "comparison", _sample_compare_attr),
    Family("player_exist", "zero_hop", _sample_player_exist),
    Family("player_count", "zero_hop", _sample_player_count),
    Family("player_color", "zero_hop", _sample_player_query("color")),
    Family("player_material", "zero_hop", _sample_player_query("material")),
    Family("player_relation", "single_and", _sample_player_relation),
    Family("player_more", "compare_integer", _sample_player_more),
    Family("player_what_is_there", "zero_hop", _sample_most_common),
]
FAMILY_BY_NAME = {f.name: f for f in FAMILIES}


@dataclass
class GeneratedQuestion:
    question: str
    tree: Question
    program: Program
    answer: str
    family: str
    type: str


class QuestionGenerator:
    """Draws well-posed questions for scenes while keeping each family's answers balanced: for every
    question it samples several candidates and keeps the one whose answer the family has produced least
    (CLEVR rejects over-represented answers; choosing among candidates does the same without stalling)."""

    def __init__(self, candidates: int = 8, tries: int = 30) -> None:
        self.candidates = candidates
        self.tries = tries
        self.answer_counts: dict[str, Counter] = defaultdict(Counter)

    def _candidates(self, family: Family, scene: Scene, rng: np.random.Generator) -> list[tuple[Question, str]]:
        found = []
        for _ in range(self.tries):
            q = family.sample(scene, rng)
            if not q:
                continue
            try:
                found.append((q, answer_text(trace(q.program(), scene)[-1])))
            except IllPosed:
                continue
            if len(found) == self.candidates:
                break
        return found

    def generate(self, scene: Scene, family: Family, rng: np.random.Generator) -> GeneratedQuestion | None:
        found = self._candidates(family, scene, rng)
        if not found:
            return None
        counts = self.answer_counts[family.name]
        least = min(counts[a] for _, a in found)
        tree, answer = next((q, a) for q, a in found if counts[a] == least)
        counts[answer] += 1
        return GeneratedQuestion(question_text(tree, rng), tree, tree.program(), answer, family.name, family.type)

    def for_scene(self, scene: Scene, n: int, rng: np.random.Generator) -> list[GeneratedQuestion]:
        """n questions from distinct families where possible (a second round of families fills the
        places of questions that came out ill-posed or duplicated), no duplicate texts."""
        result, seen = [], set()
        for index in np.concatenate([rng.permutation(len(FAMILIES)), rng.permutation(len(FAMILIES))]):
            if len(result) == n:
                break
            q = self.generate(scene, FAMILIES[int(index)], rng)
            if q is not None and q.question not in seen:
                seen.add(q.question)
                result.append(q)
        return result
