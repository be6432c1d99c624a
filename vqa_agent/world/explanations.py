"""Reference explanations traced from programs, the CLEVR-X way.

An explanation states the facts of the scene that the answer rests on, and nothing else. We get them
from the program alone (real CLEVR question files come without our question trees): trace every node
on the scene, then describe each set and object node by how the program reached it -- the attribute
filters applied to it, the relations to unique anchors, the attribute shared with an anchor -- and let
the answer node pick a sentence: the members of a counted set, the queried object and its value, both
sides of a comparison. Following CLEVR-X, each object is named by the attributes the program filtered
on (those are what the question is about) and always by its actual shape as the noun; objects that
look alike under those attributes merge into numerals ("two red cubes"); empty sets become "There is
no red cube."; paraphrases vary templates and synonyms.

`evidence_objects` returns exactly the objects an explanation names, so attention maps can be graded
for completeness against the same ground truth the sentences come from.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from .programs import Program, ProgramError, trace
from .questions import ADJECTIVES, ATTRIBUTE_ORDER, NOUNS, PLURALS, RELATION_PHRASES
from .scene import Scene

NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
OPPOSITE = {"left": "right", "right": "left", "front": "behind", "behind": "front"}
ANSWER_FUNCTIONS = ("count", "exist", "equal_integer", "less_than", "greater_than", "most_common")
ADJECTIVE_ATTRIBUTES = ATTRIBUTE_ORDER[:3]  # size, color, material: words before the noun
ATTEMPTS_PER_PARAPHRASE = 20  # random renderings tried per wanted paraphrase before settling for fewer


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


class _Writer:
    """Renders one paraphrase. Every word choice goes through `pick`: the canonical writer takes the
    first option (CLEVR's own words), the others draw from the generator."""

    def __init__(self, analysis: _Analysis, rng: np.random.Generator, canonical: bool) -> None:
        self.a, self.objects = analysis, analysis.scene.objects
        self.rng, self.canonical = rng, canonical

    def pick(self, options: list):
        return options[0] if self.canonical else options[int(self.rng.integers(len(options)))]

    def choose(self, templates: list):
        """One of several sentence builders, built only once chosen so its own choices stay random."""
        return self.pick(templates)()

    # words

    def noun(self, shape: str | None, plural: bool = False) -> str:
        word = self.pick(NOUNS[shape])
        return PLURALS[word] if plural else word

    def head(self, values: dict[str, str], shape: str | None, plural: bool = False) -> str:
        """"small red cube": adjectives in CLEVR's order, then the noun."""
        words = [self.pick(ADJECTIVES[values[a]]) for a in ADJECTIVE_ATTRIBUTES if a in values]
        return " ".join(words + [self.noun(shape, plural)])

    def predicate(self, attr: str, value: str, plural: bool = False) -> str:
        """What follows "is"/"are": "red", "large", "made of metal", "a cube", "cubes"."""
        if attr == "shape":
            return self.noun(value, True) if plural else _with_article("a", self.noun(value))
        if attr == "material":
            return self.pick(ADJECTIVES[value] + [f"made of {value}"])
        return self.pick(ADJECTIVES[value])

    def counted(self, k: int, head: str, one: str = "a") -> str:
        """"two red cubes", "a sphere" or "one sphere"."""
        return _with_article(one, head) if k == 1 else f"{_number(k)} {head}"

    # noun phrases

    def values_of(self, index: int, attrs) -> dict[str, str]:
        return {a: self.objects[index].attribute(a) for a in ADJECTIVE_ATTRIBUTES if a in attrs}

    def obj(self, o: Obj, article: str = "the", extra: tuple[str, ...] = (), shape_noun: bool = True,
            lead: bool = False) -> str:
        """"the small cube left of the red sphere". Without shape_noun the noun is "thing", unless the
        program filtered on shape (used when the shape is what is asked)."""
        attrs = o.how.filtered + extra
        shape = self.objects[o.index].shape if shape_noun or "shape" in attrs else None
        head = self.head(self.values_of(o.index, attrs), shape)
        return _with_article(article, head) + self.clause(o.how, False, lead)

    def clause(self, c: Conj, plural: bool, lead: bool = False) -> str:
        """" left of the cube and behind the sphere", " that is green like the small cube" (or "")."""
        is_ = "are" if plural else "is"
        parts = []
        if c.relations:
            rel = " and ".join(f"{self.pick(RELATION_PHRASES[r])} {self.obj(anchor)}" for r, anchor in c.relations)
            parts.append((self.pick(["", f"that {is_} ", f"which {is_} "]) if lead else "") + rel)
        for attr, anchor in c.same:
            if attr == "shape":
                parts.append(f"that {'have' if plural else 'has'} the same shape as {self.obj(anchor)}")
            else:
                value = self.objects[anchor.index].attribute(attr)
                parts.append(f"that {is_} {self.predicate(attr, value, plural)} like {self.obj(anchor)}")
        return "".join(" " + p for p in parts)

    def description(self, c: Conj, plural: bool) -> str:
        """The set as the program described it, without looking at members: "other red things"."""
        values = {a: c.value(a) for a in ADJECTIVE_ATTRIBUTES if c.value(a)}
        return ("other " if c.same else "") + self.head(values, c.value("shape"), plural)

    def groups(self, members, attrs_of, rank=None) -> list[tuple[int, dict, str]]:
        """Members that read the same merged into (count, adjective values, shape), most common first."""
        counts: Counter = Counter()
        for m in sorted(members):
            counts[(tuple(self.values_of(m, attrs_of(m)).items()), self.objects[m].shape)] += 1
        ordered = sorted(counts.items(), key=lambda kv: (rank(kv[0]) if rank else 0, -kv[1]))
        return [(k, dict(values), shape) for (values, shape), k in ordered]

    def group_texts(self, members, attrs_of, one: str = "a", rank=None) -> list[str]:
        return [self.counted(k, self.head(values, shape, k > 1), one)
                for k, values, shape in self.groups(members, attrs_of, rank)]

    def listing(self, s: Described, extra: tuple[str, ...] = (), clauses: bool = True, lead: bool = True,
                one: str = "a", rank=None) -> str:
        """Every member of the set, grouped, each union branch with its clause: "two red cubes left of
        the sphere and no cylinder"."""
        def attrs_of(m):  # the filters of every branch the member is in, plus any extra attribute
            return tuple(a for c in s if m in c.members for a in c.filtered) + extra

        if not any(c.relations or c.same for c in s):  # branches differ only in filters: group across them
            members = frozenset().union(*(c.members for c in s))
            items = self.group_texts(members, attrs_of, one, rank) if members else []
            return _join(items + ["no " + self.description(c, False) for c in s if not c.members and len(s) > 1])
        # Branches with their own relations: each lists all its members with its clause, so every anchor
        # is named (an object in two branches is then named twice, once for each reason it counts).
        items = []
        for c in s:
            if c.members:
                text = _join(self.group_texts(c.members, attrs_of, one, rank))
                items.append(text + (self.clause(c, len(c.members) > 1, lead) if clauses else ""))
            elif len(s) > 1:
                items.append("no " + self.description(c, False) + self.clause(c, False))
        return _join(items)

    # sentences, one per kind of answer node

    def value(self, i: int) -> str:
        node = self.a.program[i]
        f, inputs = node.function, node.inputs
        d = self.a.described
        if f == "exist" and (check := _relation_check(self.a.program, d, i)):
            return self.relation_check(*check, holds=self.a.outputs[i])
        if f in ("count", "exist"):
            return self.set_sentence(d[inputs[0]])
        if f.startswith("query_"):
            return self.query(d[inputs[0]], f[len("query_"):], self.a.outputs[i])
        if f == "most_common":
            return self.most_common(d[inputs[0]], node.value_inputs[0], self.a.outputs[i])
        kinds = [self.a.program[j].function for j in inputs]
        if f.startswith("equal_") and f != "equal_integer" and all(k == f"query_{f[6:]}" for k in kinds):
            first, second = (d[self.a.program[j].inputs[0]] for j in inputs)
            return self.compare_attribute(first, second, f[len("equal_"):], self.a.outputs[i])
        if f in ("equal_integer", "less_than", "greater_than") and kinds == ["count", "count"]:
            return self.compare_counts(*(d[self.a.program[j].inputs[0]] for j in inputs))
        return " ".join(self.value(j) for j in inputs)  # any other combination: explain each side

    def set_sentence(self, s: Described) -> str:
        """The members of a counted or tested set, or its emptiness."""
        members = frozenset().union(*(c.members for c in s))
        single = s[0] if len(s) == 1 else None
        if single and len(single.same) == 1 and not single.relations:
            return self.same_sentence(single)
        if not members:
            def nothing(plural: bool) -> str:
                return (" or " if plural else " and no ").join(
                    self.description(c, plural) + self.clause(c, plural, lead=True) for c in s)

            return self.choose([lambda: _sentence("there is no " + nothing(False)),
                                lambda: _sentence("there are no " + nothing(True))])
        verb = "are" if len(members) > 1 else "is"
        templates = [lambda: _sentence(f"there {verb} {self.listing(s)}")]
        if single and single.relations and not single.same:  # "Two cubes are left of the sphere."
            templates.append(lambda: _sentence(
                f"{self.listing(s, clauses=False)} {verb}{self.clause(single, len(members) > 1)}"))
        if single and not single.same and len(self.groups(members, lambda m: single.filtered)) > 1:
            templates.append(lambda: self.total_sentence(single))
        return self.choose(templates)

    def total_sentence(self, c: Conj) -> str:
        """The size first, then the kinds: "There are three red things left of the cube: two spheres and
        a cylinder." (for a set whose members differ only in shape)."""
        total = f"{_number(len(c.members))} {self.description(c, True)}{self.clause(c, True, lead=True)}"
        return _sentence(f"there are {total}: " + _join(self.group_texts(c.members, lambda m: ())))

    def same_sentence(self, c: Conj) -> str:
        """The anchor and the other objects sharing its attribute, naming the shared value."""
        attr, anchor = c.same[0]
        value = self.objects[anchor.index].attribute(attr)
        if not c.members:
            templates = [lambda: _sentence(f"there is no {self.description(c, False)}{self.clause(c, False)}")]
            if attr != "shape":
                templates.append(lambda: _sentence(f"{self.obj(anchor)} is {self.predicate(attr, value)}, "
                                                   f"and no {self.description(c, False)} is"))
            return self.choose(templates)
        plural = len(c.members) > 1

        def items(definite: bool, first: list[str] = ()) -> str:
            """"the sphere" when it is the only one, else "two cubes and a sphere"."""
            article = "the" if definite and not plural else "a"
            return _join(list(first) + [self.counted(k, self.head(values, shape, k > 1), article)
                                        for k, values, shape in self.groups(c.members, lambda m: c.filtered)])

        are = "are" if plural else "is"
        templates = [lambda: _sentence(f"there {are} {items(False)}{self.clause(c, plural)}")]
        if attr == "shape":  # the nouns already share the shape; "both spheres" would only repeat it
            templates.insert(0, lambda: _sentence(f"besides {self.obj(anchor)}, there {are} {items(False)}"))
        else:
            templates[:0] = [
                lambda: _sentence(f"{items(True, [self.obj(anchor)])} are {'all' if plural else 'both'} "
                                  f"{self.predicate(attr, value, True)}"),
                lambda: _sentence(f"like {self.obj(anchor)}, {items(True)} {are} "
                                  f"{self.predicate(attr, value, plural)}"),
            ]
        return self.choose(templates)

    def query(self, o: Obj, attr: str, value: str) -> str:
        """"The cube left of the ball is red." When the shape is asked the subject is a "thing", so the
        answer is not given away before the verb."""
        templates = [
            lambda: _sentence(f"{self.obj(o, shape_noun=attr != 'shape', lead=True)} is {self.predicate(attr, value)}"),
            lambda: _sentence(f"there is {self.obj(o, 'a', extra=(attr,), lead=True)}"),
        ]
        if attr != "shape":  # "the material of ... is shiny" reads wrong: materials keep their own name here
            word = value if attr == "material" else self.pick(ADJECTIVES[value])
            templates.append(lambda: _sentence(f"the {attr} of {self.obj(o, lead=True)} is {word}"))
        return self.choose(templates)

    def compare_attribute(self, first: Obj, second: Obj, attr: str, equal: bool) -> str:
        def a():
            return self.obj(first, shape_noun=attr != "shape")

        def b():
            return self.obj(second, shape_noun=attr != "shape")

        v1, v2 = (self.objects[o.index].attribute(attr) for o in (first, second))
        if equal:
            return self.choose([
                lambda: _sentence(f"{a()} and {b()} are both {self.predicate(attr, v1, True)}"),
                lambda: _sentence(f"both {a()} and {b()} are {self.predicate(attr, v1, True)}"),
                lambda: _sentence(f"{a()} is {self.predicate(attr, v1)}, and so is {b()}"),
            ])
        def differ(link: str) -> str:
            return _sentence(f"{a()} is {self.predicate(attr, v1)}{link} {b()} is {self.predicate(attr, v2)}")

        return self.choose([lambda link=link: differ(link)  # link=link: closures bind late
                            for link in (" and", ", but", ", while")])

    def relation_check(self, subject: Obj, relation: str, anchor: Obj, holds: bool) -> str:
        def says(rel: str, negated: bool = False) -> str:
            relation_words = self.pick(RELATION_PHRASES[rel])
            return f"{self.obj(subject)} is {'not ' if negated else ''}{relation_words} {self.obj(anchor)}"

        if holds:
            return _sentence(says(relation))
        templates = [lambda: _sentence(says(relation, negated=True))]
        opposite = OPPOSITE[relation]
        if subject.index in self.a.scene.related(anchor.index, opposite):  # say where it is instead
            templates.append(lambda: _sentence(f"{says(opposite)}, not {self.pick(RELATION_PHRASES[relation])} it"))
        return self.choose(templates)

    def amount(self, s: Described) -> str | None:
        """"three cubes", "one metal cube left of the sphere", "no spheres"; None when the set needs a
        longer listing (several kinds of members, or a union)."""
        if len(s) != 1:
            return None
        c = s[0]
        if not c.members:
            return "no " + self.description(c, True) + self.clause(c, True)
        groups = self.group_texts(c.members, lambda m: c.filtered, one="one")
        return groups[0] + self.clause(c, len(c.members) > 1) if len(groups) == 1 else None

    def compare_counts(self, first: Described, second: Described) -> str:
        """Both sizes: "There are three cubes and two spheres.", or a sentence per side when a side has
        several kinds of members."""
        amounts = self.amount(first), self.amount(second)
        if None not in amounts:
            return _sentence(f"there {self.there_verb(first)} {amounts[0]} and {amounts[1]}")

        def side(s: Described, amount: str | None) -> str:
            if amount is not None:
                return _sentence(f"there {self.there_verb(s)} {amount}")
            if len(s) == 1 and not s[0].same:  # members of one description, differing only in shape
                return self.total_sentence(s[0])
            return self.set_sentence(s)

        return f"{side(first, amounts[0])} {side(second, amounts[1])}"

    @staticmethod
    def there_verb(s: Described) -> str:
        return "is" if len(frozenset().union(*(c.members for c in s))) == 1 else "are"

    def most_common(self, s: Described, attr: str, answer: str) -> str:
        """Counts per value of the attribute, most common first: "four cubes, two spheres and one cylinder"."""
        members = frozenset().union(*(c.members for c in s))
        per_value = Counter(self.objects[m].attribute(attr) for m in members)
        extra = () if attr == "shape" else (attr,)

        def rank(key):
            values, shape = key
            return -per_value[dict(values).get(attr, shape)]

        # "one cylinder" beside "four cubes" (counts per shape); "a blue sphere" in a list of single objects
        listed = self.listing(s, extra=extra, one="one" if attr == "shape" else "a", rank=rank)
        verb = "are" if len(members) > 1 else "is"
        plural_things = self.description(s[0], True) if len(s) == 1 else self.noun(None, True)
        return self.choose([
            lambda: _sentence(f"there {verb} {listed}"),
            lambda: _sentence(f"most {plural_things} are {self.predicate(attr, answer, True)}") + " "
            + _sentence(f"there {verb} {listed}"),
        ])


# --- the interface ------------------------------------------------------------------------------------

def evidence_objects(program: Program, scene: Scene) -> list[int]:
    """Sorted indices of every object the answer depends on (and the explanation names): the anchors
    along relate chains, the members of counted and tested sets, queried and compared objects."""
    analysis = _Analysis(program, scene)
    return sorted(analysis.evidence(len(program) - 1))


def explain(program: Program, scene: Scene, rng: np.random.Generator, n: int = 10, question=None) -> list[str]:
    """Up to n distinct paraphrases of the explanation of the program's answer on the scene; the first
    uses CLEVR's own words and first templates, the rest vary templates and synonyms."""
    if n < 1:
        raise ValueError("n must be at least 1")
    analysis = _Analysis(program, scene)
    answer = len(program) - 1
    texts = [_Writer(analysis, rng, canonical=True).value(answer)]
    for _ in range(ATTEMPTS_PER_PARAPHRASE * n):
        if len(texts) >= n:
            break
        text = _Writer(analysis, rng, canonical=False).value(answer)
        if text not in texts:
            texts.append(text)
    return texts
