"""Reference explanations traced from programs, in CLEVR-X's conventions.

An explanation states the facts of the scene that the answer rests on, and nothing else. We get them
from the program alone (real CLEVR question files come without our question trees): trace every node
on the scene, then describe each set and object node by how the program reached it -- the attribute
filters applied to it, the relations to unique anchors, the attribute shared with an anchor -- and let
the answer node pick a sentence. The conventions are CLEVR-X's (Salewski et al. 2022), so that NLG
metrics against our references mean what they mean against theirs:

- Relevance: an object is named by the attributes the question filtered it on, plus the attribute
  asked about (queried, compared or shared with an anchor) for the objects the answer is about, and
  always by its actual shape as the noun ("the big ball"); no other attribute is mentioned.
- Completeness: every member of a counted or tested set is listed, and every anchor along the way.
- The question's words: an attribute value the question named is said with the question's own word in
  every paraphrase ("shiny ball" stays "shiny ball", never "metal sphere"); other values, the relation
  phrases and "that"/"which", "same"/"identical" vary across paraphrases.
- Sentence forms: "There is a X." / "There are two Xs and a Y." for sets; "There is a X that is left of
  the Y that is behind the Z." for chains of relations (inner links always "that is" + the plain
  phrase); "There is a X left of the Y and behind the Z." for two relations at once; "There is a X that
  has the same color as a Y." / "The X has the same color as a Y." for shared attributes; "The X left of
  the Y is red." or "There is a red X that is left of the Y." for a queried value; "The X is large and
  the Y is small." or "There is a large X and there is a small Y." for compared values; "There are two
  Xs and there is a Y." for compared counts.
- Numerals: "a" for one, number words from two ("three red cubes"), alike objects merged ("two red cubes
  and a red sphere"), objects that differ only in shape share their adjectives ("a red cube, sphere and
  cylinder"). An empty set is "There are no red cubes."; one side of a union that is empty is left out
  unless it has an anchor to name. Each side of a union is its own "there is" clause, named by its own
  filters and any filter applied to the union ("There is a big brown shiny cube and there is a ...").

`evidence_objects` returns exactly the objects an explanation names, so attention maps can be graded
for completeness against the same ground truth the sentences come from.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .programs import Program, ProgramError, trace
from .questions import ADJECTIVES, ATTRIBUTE_ORDER, NOUNS, PLURALS, RELATION_PHRASES
from .scene import Scene

NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
OPPOSITE = {"left": "right", "right": "left", "front": "behind", "behind": "front"}
ANSWER_FUNCTIONS = ("count", "exist", "equal_integer", "less_than", "greater_than", "most_common")
ADJECTIVE_ATTRIBUTES = ATTRIBUTE_ORDER[:3]  # size, color, material: words before the noun
TRIES_WITHOUT_NEW = 25  # random renderings in a row that repeat earlier ones before settling for fewer

# Every word for every attribute value (shapes included; "thing"/"object" stand for no shape).
SYNONYMS: dict[str, list[str]] = {**ADJECTIVES, **{shape: words for shape, words in NOUNS.items() if shape}}
VALUE_OF_WORD = {word: value for value, words in SYNONYMS.items() for word in words}
SINGULAR = {plural: word for word, plural in PLURALS.items()}
THING_WORDS = NOUNS[None]


# --- how the program reached each set and object ----------------------------------------------------

@dataclass(frozen=True)
class Conj:
    """The objects that pass every filter and constraint listed (one way the program reached a set)."""
    members: frozenset[int]
    filters: tuple[tuple[str, str], ...] = ()           # (attribute, value) of filter nodes, in order
    relations: tuple[tuple[str, "Obj"], ...] = ()       # member is `relation` of the anchor
    same: tuple[tuple[str, "Obj"], ...] = ()            # member shares `attribute` with the anchor

    @property
    def filtered(self) -> tuple[str, ...]:
        return tuple(attr for attr, _ in self.filters)

    def value(self, attr: str) -> str | None:
        return next((v for a, v in self.filters if a == attr), None)


@dataclass(frozen=True)
class Obj:
    """One object picked out by `unique`, with the description that picked it."""
    index: int
    how: Conj


# A set is a union of conjunctions: one for every node except after `union`. Filters and intersections
# distribute over a union, so any program's set stays in this flat form.
Described = tuple[Conj, ...]


def _merge(a: Conj, b: Conj) -> Conj:
    return Conj(a.members & b.members, a.filters + tuple(f for f in b.filters if f not in a.filters),
                a.relations + b.relations, a.same + b.same)


def _describe(program: Program, outputs: list, scene: Scene) -> dict[int, Described | Obj]:
    """A description of every set and object node, built forwards alongside the traced outputs."""
    described: dict[int, Described | Obj] = {}

    def arg(node, kind):
        value = described.get(node.inputs[0])
        if not isinstance(value, kind):
            raise ProgramError(f"{node.function} needs {'a set' if kind is tuple else 'one object'}")
        return value

    for i, node in enumerate(program):
        f = node.function
        if f == "scene":
            described[i] = (Conj(outputs[i]),)
        elif f.startswith("filter_"):
            attr, value = f[len("filter_"):], node.value_inputs[0]
            described[i] = tuple(
                Conj(frozenset(m for m in c.members if scene.objects[m].attribute(attr) == value),
                     c.filters + (((attr, value),) if (attr, value) not in c.filters else ()),
                     c.relations, c.same)
                for c in arg(node, tuple))
        elif f == "relate":
            described[i] = (Conj(outputs[i], relations=((node.value_inputs[0], arg(node, Obj)),)),)
        elif f.startswith("same_"):
            described[i] = (Conj(outputs[i], same=((f[len("same_"):], arg(node, Obj)),)),)
        elif f in ("intersect", "union"):
            first, second = (described.get(j) for j in node.inputs)
            if not (isinstance(first, tuple) and isinstance(second, tuple)):
                raise ProgramError(f"{f} needs two sets")
            described[i] = (tuple(_merge(a, b) for a in first for b in second) if f == "intersect"
                            else first + second)
        elif f == "unique":
            sets = arg(node, tuple)
            described[i] = Obj(outputs[i], next(c for c in sets if outputs[i] in c.members))
        elif f.startswith("query_"):
            arg(node, Obj)
        elif f.startswith("equal_") or f in ("less_than", "greater_than"):
            if not all(_is_answer(program[j].function) for j in node.inputs):
                raise ProgramError(f"{f} compares answers (counts, attribute values), not sets or objects")
    return described


def _is_answer(function: str) -> bool:
    return function in ANSWER_FUNCTIONS or function.startswith(("query_", "equal_"))


def _relation_check(program: Program, described: dict, i: int) -> tuple[Obj, str, Obj] | None:
    """exist(intersect(S, relate(unique(B)))) where S is itself asked to be unique elsewhere in the
    program: "Is the red cube left of the blue sphere?" -> (subject, relation, anchor)."""
    inner = program[program[i].inputs[0]]
    if inner.function != "intersect":
        return None
    for subject_set, related in (inner.inputs, inner.inputs[::-1]):
        if program[related].function != "relate":
            continue
        subject = next((described[k] for k, n in enumerate(program)
                        if n.function == "unique" and n.inputs == [subject_set]), None)
        if subject is not None:
            return subject, program[related].value_inputs[0], described[program[related].inputs[0]]
    return None


class _Analysis:
    """The traced program: outputs and descriptions of every node, computed once per explanation."""

    def __init__(self, program: Program, scene: Scene) -> None:
        self.outputs = trace(program, scene)  # validates; raises IllPosed like the executor
        if not _is_answer(program[-1].function):
            raise ProgramError(f"a program must end in an answer, not {program[-1].function!r}")
        self.program, self.scene = program, scene
        self.described = _describe(program, self.outputs, scene)

    def evidence(self, i: int) -> set[int]:
        """Objects that value node i depends on: every object its explanation names."""
        node = self.program[i]
        f = node.function
        if f == "exist" and (check := _relation_check(self.program, self.described, i)):
            return _object_evidence(check[0]) | _object_evidence(check[2])
        if f in ("count", "exist", "most_common"):
            return _set_evidence(self.described[node.inputs[0]])
        if f.startswith("query_"):
            return _object_evidence(self.described[node.inputs[0]])
        return set().union(*(self.evidence(j) for j in node.inputs))


def _object_evidence(o: Obj) -> set[int]:
    return {o.index} | _anchor_evidence(o.how)


def _anchor_evidence(c: Conj) -> set[int]:
    return set().union(*(_object_evidence(anchor) for _, anchor in c.relations + c.same))


def _set_evidence(s: Described) -> set[int]:
    return set().union(*(set(c.members) | _anchor_evidence(c) for c in s))


# --- the question's own words -------------------------------------------------------------------------

@dataclass(frozen=True)
class QuestionWords:
    """The words a question used, so its explanation can say them back: a question about a "shiny ball"
    is answered about a "shiny ball". CLEVR draws a synonym for every noun phrase on its own ("the big
    cube left of the large ball"), so the words are kept per noun phrase (value -> word), and in order
    of first use over the whole question for values said outside the phrase they describe."""
    phrases: tuple[dict[str, str], ...] = ()
    values: dict[str, tuple[str, ...]] = field(default_factory=dict)
    relations: dict[str, tuple[str, ...]] = field(default_factory=dict)
    things: tuple[str, ...] = ()

    def phrase(self, values) -> dict[str, str]:
        """The words of the question's noun phrase with exactly these values ({} when there is none)."""
        wanted = set(values)
        return next((p for p in self.phrases if set(p) == wanted), {})

    def position(self, values) -> float:
        """Where the question says the noun phrase with exactly these values (infinity: nowhere)."""
        wanted = set(values)
        return next((k for k, p in enumerate(self.phrases) if set(p) == wanted), math.inf)

    @classmethod
    def read(cls, question: str | None) -> "QuestionWords":
        phrases, values, relations, things = [], {}, {}, []
        phrase, previous_end = {}, -2
        for start, end, kind, word in _said_words(question or ""):
            if kind.startswith("relation:"):
                _add_new(relations.setdefault(kind[len("relation:"):], []), word)
                continue
            _add_new(things if kind == "thing" else values.setdefault(kind, []), word)
            # a noun phrase is a run of adjectives and its noun, one word right after another
            if start != previous_end + 1:
                phrase = {}
            if kind != "thing":
                phrase[kind] = word
            previous_end = end
            if kind == "thing" or kind in NOUNS:
                phrases.append(phrase)
                phrase, previous_end = {}, -2
        return cls(tuple(phrases), {v: tuple(w) for v, w in values.items()},
                   {r: tuple(p) for r, p in relations.items()}, tuple(things))


def _said_words(question: str) -> list[tuple[int, int, str, str]]:
    """(start, end, what it names, word) for every attribute word, "thing"/"object" and relation phrase
    of the question, in order; what it names is a value ("sphere" for "balls"), "thing" or
    "relation:left"."""
    text = " ".join(re.findall(r"[a-z]+", question.lower()))
    found = []
    # longest phrases first, each blanked once read, so "left of" is not read again in "to the left of"
    for phrase, relation in sorted(((p, r) for r, ps in RELATION_PHRASES.items() for p in ps),
                                   key=lambda pr: -len(pr[0])):
        found += [(m.start(), m.end(), f"relation:{relation}", phrase) for m in re.finditer(rf"\b{phrase}\b", text)]
        text = re.sub(rf"\b{phrase}\b", lambda m: "_" * len(m.group()), text)
    for match in re.finditer(r"[a-z]+", text):
        word = SINGULAR.get(match.group(), match.group())
        if word in THING_WORDS or word in VALUE_OF_WORD:
            found.append((match.start(), match.end(), "thing" if word in THING_WORDS else VALUE_OF_WORD[word], word))
    return sorted(found)


def _add_new(words: list[str], word: str) -> None:
    if word not in words:
        words.append(word)


# --- words and phrases --------------------------------------------------------------------------------

def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _with_article(article: str, words: str) -> str:
    if article == "a":
        return ("an " if words[0] in "aeiou" else "a ") + words
    return f"{article} {words}" if article else words


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:] + "."


def _number(k: int) -> str:
    return NUMBER_WORDS[k] if k < len(NUMBER_WORDS) else str(k)


def _leaf_attributes(c: Conj) -> tuple[str, ...]:
    """What names the members of a set: its filters and any attribute they share with an anchor."""
    return c.filtered + tuple(attr for attr, _ in c.same if attr not in c.filtered)


def _one_hop(c: Conj) -> bool:
    """Whether "the X left of the Y" names the object fully: no relation, or one to an anchor found
    by its attributes alone (CLEVR-X writes the longer chains only as "there is" sentences)."""
    if c.same or len(c.relations) > 1:
        return False
    return not c.relations or not (c.relations[0][1].how.relations or c.relations[0][1].how.same)


class _Writer:
    """Renders one paraphrase. Every free choice goes through `pick`: the canonical writer takes the
    first option (the question's own words, else CLEVR's first words, and the first sentence form), the
    others draw from the generator."""

    def __init__(self, analysis: _Analysis, words: QuestionWords, rng: np.random.Generator,
                 canonical: bool) -> None:
        self.a, self.objects, self.words = analysis, analysis.scene.objects, words
        self.rng, self.canonical = rng, canonical
        self.chosen: dict[str, str] = {}   # one word per value within a paraphrase

    def pick(self, options: list):
        return options[0] if self.canonical else options[int(self.rng.integers(len(options)))]

    def choose(self, templates: list):
        """One of several sentence builders, built only once chosen so its own choices stay random."""
        return self.pick(templates)()

    def arrange(self, items: list) -> list:
        """Items in their order (canonical) or shuffled: CLEVR-X lists a set's groups in any order."""
        return list(items) if self.canonical else [items[k] for k in self.rng.permutation(len(items))]

    # words

    def said(self, filters: tuple[tuple[str, str], ...]) -> dict[str, str]:
        """The words of the question's noun phrase for the set these filters describe."""
        return self.words.phrase(value for _, value in filters)

    def word(self, value: str, said: dict[str, str] | None = None) -> str:
        """The word the question used for the value in this noun phrase (`said`), else in the question,
        in every paraphrase; else any synonym, the same one throughout a paraphrase."""
        if said and value in said:
            return said[value]
        if value not in self.chosen:
            self.chosen[value] = self.pick(list(self.words.values.get(value, ())) or SYNONYMS[value])
        return self.chosen[value]

    def thing(self) -> str:
        return self.pick(list(self.words.things) or THING_WORDS)

    def noun(self, shape: str | None, plural: bool = False, said: dict[str, str] | None = None) -> str:
        word = self.word(shape, said) if shape else "thing"   # CLEVR-X: "no green things", never "objects"
        return PLURALS[word] if plural else word

    def adjectives(self, values: dict[str, str], said: dict[str, str] | None = None) -> list[str]:
        return [self.word(values[a], said) for a in ADJECTIVE_ATTRIBUTES if a in values]

    def head(self, values: dict[str, str], shape: str | None, plural: bool = False,
             said: dict[str, str] | None = None) -> str:
        """"small red cube": adjectives in CLEVR's order, then the noun."""
        return " ".join(self.adjectives(values, said) + [self.noun(shape, plural, said)])

    def relation(self, relation: str, inner: bool = False) -> str:
        """Inner links of a chain always read "left of"; the first link takes the question's phrase
        (canonical) or any."""
        if inner:
            return RELATION_PHRASES[relation][0]
        asked = list(self.words.relations.get(relation, ()))
        return (asked + RELATION_PHRASES[relation])[0] if self.canonical else self.pick(RELATION_PHRASES[relation])

    def that(self, inner: bool = False) -> str:
        return "that" if inner else self.pick(["that", "which"])

    def same(self) -> str:
        return self.pick(["same", "identical"])

    def values_of(self, index: int, attrs) -> dict[str, str]:
        return {a: self.objects[index].attribute(a) for a in ADJECTIVE_ATTRIBUTES if a in attrs}

    def value_word(self, attr: str, value: str, said: dict[str, str] | None = None) -> str:
        """A value after "is": "large", "a cube"."""
        return _with_article("a", self.word(value, said)) if attr == "shape" else self.word(value, said)

    # noun phrases

    def members(self, members, attrs, said: dict[str, str], one: str = "a", rank=None) -> tuple[str, bool]:
        """The objects named by `attrs` and their shapes, alike ones counted, and whether "there are" fits:
        "a red cube", "two red cubes and a red sphere", "a red cube, sphere and cylinder"."""
        groups: dict[tuple, int] = {}
        for m in sorted(members):
            key = (tuple(self.values_of(m, attrs).items()), self.objects[m].shape)
            groups[key] = groups.get(key, 0) + 1
        items = sorted(groups.items(), key=rank) if rank else self.arrange(list(groups.items()))
        if len(items) == 1:
            (values, shape), k = items[0]
            head = self.head(dict(values), shape, k > 1, said)
            return (_with_article(one, head), False) if k == 1 else (f"{_number(k)} {head}", True)
        if all(k == 1 for _, k in items) and len({values for (values, _), _ in items}) == 1 and rank is None:
            values = dict(items[0][0][0])   # they differ only in shape: one set of adjectives for all
            nouns = _join([self.noun(shape, said=said) for (_, shape), _ in items])
            return _with_article(one, " ".join(self.adjectives(values, said) + [nouns])), True
        texts = [_with_article(one, self.head(dict(values), shape, said=said)) if k == 1
                 else f"{_number(k)} {self.head(dict(values), shape, True, said)}" for (values, shape), k in items]
        # several single objects take "there is", as in CLEVR-X ("There is a red cube and a blue sphere.")
        return _join(texts), any(k > 1 for _, k in items)

    def nothing(self, c: Conj) -> str:
        """An empty set as the program described it: "no red cubes", "no green things"."""
        values = {a: c.value(a) for a in ADJECTIVE_ATTRIBUTES if c.value(a)}
        return "no " + self.head(values, c.value("shape"), True, self.said(c.filters))

    def anchor(self, o: Obj, article: str = "the") -> str:
        """"the red cube", "the cube that is left of the sphere": an anchor by the question's
        attributes, its shape and how it was found."""
        head = self.head(self.values_of(o.index, o.how.filtered), self.objects[o.index].shape,
                         said=self.said(o.how.filters))
        return _with_article(article, head) + self.clause(o.how, False, inner=True)

    def links(self, c: Conj, inner: bool = False) -> str:
        """"left of the cube", "left of the cube and behind the sphere", "left of the cube and the sphere",
        in the question's order when it says them (CLEVR's programs list them the other way round)."""
        texts, previous = [], None
        said_at = self.words.position
        for relation, anchor in sorted(c.relations, key=lambda ra: said_at(v for _, v in ra[1].how.filters)):
            words = "" if relation == previous else self.relation(relation, inner) + " "
            texts.append(words + self.anchor(anchor))
            previous = relation
        return " and ".join(texts)

    def clause(self, c: Conj, plural: bool, inner: bool = False) -> str:
        """What follows a set or object: " that is left of the cube", " left of the cube and behind
        the sphere", " that has the same color as a cube" (or "")."""
        parts = []
        if len(c.relations) == 1:
            parts.append(f"{self.that(inner)} {'are' if plural else 'is'} {self.links(c, inner)}")
        elif c.relations:
            parts.append(self.links(c, inner))
        for attr, anchor in c.same:   # CLEVR-X names the anchor of a shared attribute with "a"
            parts.append(f"{self.that(inner)} {'have' if plural else 'has'} the {self.same()} {attr} as "
                         f"{self.anchor(anchor, 'a')}")
        return "".join(" " + p for p in [" and ".join(parts)] if p)

    # facts about sets: "there are two red cubes that are left of the sphere"

    def set_facts(self, i: int) -> list[str]:
        """One fact per side of a union. (CLEVR-X names the members of a filtered union by the outer
        filter alone, "There are no big things.", which is false when big things exist elsewhere; each
        side here keeps its own filters and the outer one: "There are no big brown cylinders".)"""
        s = self.a.described[i]
        if any(c.members for c in s):   # an empty side of a union says nothing, unless it names an anchor
            s = tuple(c for c in s if c.members or c.relations or c.same)
        return [self.conj_fact(c) for c in s]

    def conj_fact(self, c: Conj) -> str:
        if not c.members:
            return f"there are {self.nothing(c)}{self.clause(c, True)}"
        text, plural = self.members(c.members, _leaf_attributes(c), self.said(c.filters))
        return f"there {'are' if plural else 'is'} {text}{self.clause(c, len(c.members) > 1)}"

    # sentences, one per kind of answer node

    def value(self, i: int) -> str:
        node = self.a.program[i]
        f, inputs = node.function, node.inputs
        d = self.a.described
        if f == "exist" and (check := _relation_check(self.a.program, d, i)):
            return self.relation_check(*check, holds=self.a.outputs[i])
        if f in ("count", "exist"):
            return self.set_sentence(inputs[0])
        if f.startswith("query_"):
            return self.query(d[inputs[0]], f[len("query_"):], self.a.outputs[i])
        if f == "most_common":
            return self.most_common(d[inputs[0]], node.value_inputs[0], self.a.outputs[i])
        kinds = [self.a.program[j].function for j in inputs]
        if f.startswith("equal_") and f != "equal_integer" and all(k == f"query_{f[6:]}" for k in kinds):
            first, second = (d[self.a.program[j].inputs[0]] for j in inputs)
            return self.compare_attribute(first, second, f[len("equal_"):])
        if f in ("equal_integer", "less_than", "greater_than") and kinds == ["count", "count"]:
            return _sentence(" and ".join(self.set_facts(self.a.program[inputs[0]].inputs[0])
                                          + self.set_facts(self.a.program[inputs[1]].inputs[0])))
        return " ".join(self.value(j) for j in inputs)  # any other combination: explain each side

    def set_sentence(self, i: int) -> str:
        """The members of a counted or tested set, or that there are none: "There are two red cubes and
        a red sphere.", "There are no cubes that are left of the sphere."."""
        templates = [lambda: _sentence(" and ".join(self.set_facts(i)))]
        s = self.a.described[i]
        if len(s) == 1 and len(s[0].same) == 1 and not s[0].relations:   # the members as the subject
            templates.append(lambda: self.shared(s[0]))
        return self.choose(templates)

    def shared(self, c: Conj, said: dict[str, str] | None = None) -> str:
        """"The red cube has the same color as a red sphere.", "No things have the same size as a cube."."""
        attr, anchor = c.same[0]
        if c.members:
            said = self.said(c.filters) if said is None else said
            text, _ = self.members(c.members, _leaf_attributes(c), said, one="the")
            verb = "has" if len(c.members) == 1 else "have"
        else:
            text, verb = self.nothing(c), "have"
        return _sentence(f"{text} {verb} the {self.same()} {attr} as {self.anchor(anchor, 'a')}")

    def subject(self, o: Obj, attr: str) -> str:
        """"the large cube left of the sphere" (its shape unless the shape is asked: "the large thing")."""
        said = self.said(o.how.filters)
        noun = self.thing() if attr == "shape" else self.noun(self.objects[o.index].shape, said=said)
        words = self.adjectives(self.values_of(o.index, o.how.filtered), said) + [noun]
        links = self.links(o.how)
        return "the " + " ".join(words + ([links] if links else []))

    def there_is(self, o: Obj, attr: str) -> str:
        """"there is a large red cube that is left of the sphere": the object with the asked value."""
        attrs = _leaf_attributes(o.how) + (attr,)
        head = self.head(self.values_of(o.index, attrs), self.objects[o.index].shape, said=self.said(o.how.filters))
        return f"there is {_with_article('a', head)}{self.clause(o.how, False)}"

    def query(self, o: Obj, attr: str, value: str) -> str:
        """"The cube left of the ball is red." or "There is a red cube that is left of the ball."."""
        templates = [lambda: _sentence(self.there_is(o, attr))]
        if _one_hop(o.how):
            templates.insert(0, lambda: _sentence(f"{self.subject(o, attr)} is "
                                                  f"{self.value_word(attr, value, self.said(o.how.filters))}"))
        elif o.how.same and not o.how.relations:   # "The large red cube has the same size as a sphere."
            named_by_the_answer_too = Conj(frozenset([o.index]), o.how.filters + ((attr, value),), same=o.how.same)
            templates.append(lambda: self.shared(named_by_the_answer_too, self.said(o.how.filters)))
        return self.choose(templates)

    def compare_attribute(self, first: Obj, second: Obj, attr: str) -> str:
        """"The cube is large and the sphere is small." or "There is a large cube and there is a small
        sphere." (the same words whether the values are equal or not, as in CLEVR-X)."""
        v1, v2 = (self.objects[o.index].attribute(attr) for o in (first, second))
        templates = [lambda: _sentence(f"{self.there_is(first, attr)} and {self.there_is(second, attr)}")]
        if _one_hop(first.how) and _one_hop(second.how):
            templates.insert(0, lambda: _sentence(
                f"{self.subject(first, attr)} is {self.value_word(attr, v1, self.said(first.how.filters))} and "
                f"{self.subject(second, attr)} is {self.value_word(attr, v2, self.said(second.how.filters))}"))
        return self.choose(templates)

    def relation_check(self, subject: Obj, relation: str, anchor: Obj, holds: bool) -> str:
        def says(rel: str, negated: bool = False) -> str:
            return f"{self.anchor(subject)} is {'not ' if negated else ''}{self.relation(rel)} {self.anchor(anchor)}"

        if holds:
            return _sentence(says(relation))
        templates = [lambda: _sentence(says(relation, negated=True))]
        opposite = OPPOSITE[relation]
        if subject.index in self.a.scene.related(anchor.index, opposite):  # say where it is instead
            templates.append(lambda: _sentence(f"{says(opposite)}, not {self.relation(relation)} it"))
        return self.choose(templates)

    def most_common(self, s: Described, attr: str, answer: str) -> str:
        """Counts per value of the attribute, most common first: "There are four cubes, two spheres and a
        cylinder."."""
        members = frozenset().union(*(c.members for c in s))
        per_value = Counter(self.objects[m].attribute(attr) for m in members)
        attrs = tuple(a for c in s for a in c.filtered) + (() if attr == "shape" else (attr,))

        def rank(item):
            (values, shape), k = item
            return -per_value[dict(values).get(attr, shape)], -k

        listed, plural = self.members(members, attrs, self.said(s[0].filters) if len(s) == 1 else {}, rank=rank)
        plural_things = self.nothing(s[0])[len("no "):] if len(s) == 1 else "things"
        most = self.word(answer) if attr != "shape" else PLURALS[self.word(answer)]
        there = _sentence(f"there {'are' if plural else 'is'} {listed}")
        return self.choose([lambda: there, lambda: _sentence(f"most {plural_things} are {most}") + " " + there])


# --- the interface ------------------------------------------------------------------------------------

def evidence_objects(program: Program, scene: Scene) -> list[int]:
    """Sorted indices of every object the answer depends on (and the explanation names): the anchors
    along relate chains, the members of counted and tested sets, queried and compared objects."""
    analysis = _Analysis(program, scene)
    return sorted(analysis.evidence(len(program) - 1))


def explain(program: Program, scene: Scene, rng: np.random.Generator, n: int = 10,
            question: str | None = None) -> list[str]:
    """Up to n distinct paraphrases of the explanation of the program's answer on the scene. With the
    question's text, attribute values are said in the question's own words; the first paraphrase takes
    those (else CLEVR's first words) and the first sentence form, the rest vary forms and synonyms."""
    if n < 1:
        raise ValueError("n must be at least 1")
    analysis, words = _Analysis(program, scene), QuestionWords.read(question)
    answer = len(program) - 1
    texts, repeats = [_Writer(analysis, words, rng, canonical=True).value(answer)], 0
    while len(texts) < n and repeats < TRIES_WITHOUT_NEW:
        text = _Writer(analysis, words, rng, canonical=False).value(answer)
        repeats = repeats + 1 if text in texts else 0
        if text not in texts:
            texts.append(text)
    return texts
