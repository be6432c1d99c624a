"""Question families: a small question grammar, its phrasings, and answer-balanced generation.

Every question is first built as a tree (`Question` over `NounPhrase`s), then compiled to a CLEVR
program and rendered to text with a randomly chosen phrasing and synonyms. The parser (parser.py)
produces the same trees from free text, so a generated question and its parse compile to the same
program by construction.

The families are CLEVR's: its 90 question templates, each one program shape of its nine question types
(zero/one/two/three hop, single and, single or, same relate, compare integer, comparison), written here
from the public facts of CLEVR's language (its word order, synonyms and kinds of phrasing: "what number
of", "how many other", "anything else", "the X is what color", "There is a X; what is its shape?").
Families named `player_*` are the questions people type while playing a guessing game ("is there a red
cube?", "what is in the image?"); they carry the CLEVR type their program belongs to.

Every phrasing has an id (`kind/form`). HELDOUT_PHRASINGS are whole phrasings the world builder keeps out
of the training split, so a benchmark can measure how an agent does on wordings it never saw.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable

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
    `attr` is the queried/compared attribute, `op` the comparison (more, fewer, equal) or the relation.
    `outer` (count_or only) filters the union: "how many large things are either cubes or balls?"."""
    kind: str
    phrases: list[NounPhrase]
    attr: str | None = None
    op: str | None = None
    outer: dict[str, str] = field(default_factory=dict)

    def program(self) -> Program:
        b = ProgramBuilder()
        k, p = self.kind, self.phrases
        if k in ("count", "exist"):
            b.add(k, [p[0].compile(b)])
        elif k == "query":
            b.add(f"query_{self.attr}", [b.add("unique", [p[0].compile(b)])])
        elif k == "count_or":
            b.add("count", [b.filters(b.add("union", [p[0].compile(b), p[1].compile(b)]), self.outer)])
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


# --- noun phrases as text ---------------------------------------------------------------------------

def _pick(rng: np.random.Generator, options):
    return options[int(rng.integers(len(options)))]


def _a(words: str) -> str:
    return f"{'an' if words[0] in 'aeiou' else 'a'} {words}"


def head_text(phrase: NounPhrase, rng: np.random.Generator, plural: bool = False) -> str:
    """Adjectives in CLEVR's order and the noun: "large red metal cubes", "tiny thing"."""
    words = [_pick(rng, ADJECTIVES[phrase.attrs[a]]) for a in ATTRIBUTE_ORDER[:3] if a in phrase.attrs]
    noun = _pick(rng, NOUNS[phrase.attrs.get("shape")])
    return " ".join(words + [PLURALS[noun] if plural else noun])


def same_text(attr: str, anchor: NounPhrase, rng: np.random.Generator, plural: bool, form: str) -> str:
    """The predicate of a same-attribute phrase. form: "be" (are the same size as), "have" (have the
    same size as) or "of" (of the same size as); "be" may say "made of the same material as"."""
    a = np_text(anchor, rng)
    if form == "of":
        return f"of the same {attr} as {a}"
    if form == "have":
        return f"{'have' if plural else 'has'} the same {attr} as {a}"
    made = "made of " if attr == "material" and rng.random() < 0.5 else ""
    return f"{'are' if plural else 'is'} {made}the same {attr} as {a}"


def relations_text(phrase: NounPhrase, rng: np.random.Generator) -> str:
    """"left of the cube", "both left of the cube and behind the ball"."""
    parts = [f"{_pick(rng, RELATION_PHRASES[rel])} {np_text(anchor, rng)}" for rel, anchor in phrase.relations]
    if len(parts) == 1:
        return parts[0]
    return f"{_pick(rng, ['both ', ''])}{parts[0]} and {parts[1]}"


def clause_text(phrase: NounPhrase, rng: np.random.Generator, plural: bool = False) -> str:
    """What follows the noun: "" or " [that is] left of the cube" or " that is the same size as the ball"."""
    be = "are" if plural else "is"
    if phrase.same is not None:
        attr, anchor = phrase.same
        form = str(_pick(rng, ["be", "have", "of"]))
        text = same_text(attr, anchor, rng, plural, form)
        return f" {text}" if form == "of" else f" that {text}"
    if phrase.relations:
        if len(phrase.relations) > 1:
            return f" that {be} {relations_text(phrase, rng)}"
        return f" {_pick(rng, ['', f'that {be} ', f'which {be} '])}{relations_text(phrase, rng)}"
    return ""


def np_text(phrase: NounPhrase, rng: np.random.Generator, plural: bool = False, article: str = "the") -> str:
    """The whole noun phrase. A same-attribute phrase names the *other* objects: "the other cube that is
    the same size as the ball", "another cube ...", "other cubes ..."."""
    head = head_text(phrase, rng, plural)
    if phrase.same is not None:
        article = {"the": "the other", "a": "another", "": "other"}.get(article, article)
    if article == "a":
        head = _a(head)
    elif article:
        head = f"{article} {head}"
    return head + clause_text(phrase, rng, plural)


def _capital(text: str) -> str:
    return text[0].upper() + text[1:]


# --- phrasings --------------------------------------------------------------------------------------
#
# Each kind of question has a list of phrasings (id, applies, render). `applies(q)` says whether the
# phrasing fits the tree's shape (an "it" form needs something for "it" to point at); `render(q, rng)`
# writes the text. Ids are stable: they name held-out phrasings and are stored with every question.

@dataclass(frozen=True)
class Phrasing:
    id: str
    applies: Callable[[Question], bool]
    render: Callable[[Question, np.random.Generator], str]


def _plain(q: Question) -> bool:
    p = q.phrases[0]
    return not p.relations and p.same is None


def _related(q: Question) -> bool:
    return bool(q.phrases[0].relations)


def _one_relation(q: Question) -> bool:
    return len(q.phrases[0].relations) == 1


def _same(q: Question) -> bool:
    return q.phrases[0].same is not None


def _same_bare(q: Question) -> bool:
    return _same(q) and not q.phrases[0].attrs


def _any(q: Question) -> bool:
    return True


def _xs(p: NounPhrase, rng) -> str:
    return head_text(p, rng, plural=True)


def _it_anchor(p: NounPhrase, rng) -> tuple[str, str]:
    """"There is a <anchor>; ... <relation> it": the anchor with its article, and the relation words."""
    rel, anchor = p.relations[0]
    return np_text(anchor, rng, article="a"), str(_pick(rng, RELATION_PHRASES[rel]))


def _there_is(p: NounPhrase, rng) -> str:
    return f"There is {np_text(p, rng, article='a')}"


def _count_it(lead: str):
    def render(q, rng):
        p = q.phrases[0]
        anchor, rel = _it_anchor(p, rng)
        return f"There is {anchor}; {lead} {_xs(p, rng)} are {rel} it?"
    return render


def _same_count(lead: str, form: str):
    def render(q, rng):
        p = q.phrases[0]
        attr, anchor = p.same
        xs = _xs(p, rng)
        if form == "there_of":
            return f"{lead} other {xs} are there {same_text(attr, anchor, rng, True, 'of')}?"
        return f"{lead} other {xs} {same_text(attr, anchor, rng, True, form)}?"
    return render


def _same_exist(form: str, lead: str):
    def render(q, rng):
        p = q.phrases[0]
        attr, anchor = p.same
        plural = lead == "any_other"
        tail = same_text(attr, anchor, rng, plural, form)
        tail = tail if form == "of" else f"that {tail}"
        if lead == "any_other":
            return f"Are there any other {_xs(p, rng)} {tail}?"
        if lead == "another":
            return f"Is there another {head_text(p, rng)} {tail}?"
        return f"Is there {lead} {tail}?"  # "anything else", "any other thing"
    return render


COUNT = [
    Phrasing("count/how_many_there", _plain, lambda q, r: f"How many {_xs(q.phrases[0], r)} are there?"),
    Phrasing("count/what_number_there", _plain, lambda q, r: f"What number of {_xs(q.phrases[0], r)} are there?"),
    Phrasing("count/how_many_in_image", _plain, lambda q, r: f"How many {_xs(q.phrases[0], r)} are in the image?"),
    Phrasing("count/how_many_can_you_see", _plain, lambda q, r: f"How many {_xs(q.phrases[0], r)} can you see?"),
    Phrasing("count/how_many_are_rel", _related,
             lambda q, r: f"How many {_xs(q.phrases[0], r)} are {relations_text(q.phrases[0], r)}?"),
    Phrasing("count/what_number_are_rel", _related,
             lambda q, r: f"What number of {_xs(q.phrases[0], r)} are {relations_text(q.phrases[0], r)}?"),
    Phrasing("count/there_is_how_many_it", _one_relation, _count_it("how many")),
    Phrasing("count/there_is_what_number_it", _one_relation, _count_it("what number of")),
    Phrasing("count/how_many_other_are_same", _same, _same_count("How many", "be")),
    Phrasing("count/what_number_other_are_same", _same, _same_count("What number of", "be")),
    Phrasing("count/how_many_other_have_same", _same, _same_count("How many", "have")),
    Phrasing("count/what_number_other_have_same", _same, _same_count("What number of", "have")),
    Phrasing("count/how_many_other_there_of_same", _same, _same_count("How many", "there_of")),
    Phrasing("count/what_number_other_there_of_same", _same, _same_count("What number of", "there_of")),
]


def _exist_it(single: bool):
    def render(q, rng):
        p = q.phrases[0]
        anchor, rel = _it_anchor(p, rng)
        that = _pick(rng, ["", "that is " if single else "that are "])
        if single:
            return f"There is {anchor}; is there {_a(head_text(p, rng))} {that}{rel} it?"
        return f"There is {anchor}; are there any {_xs(p, rng)} {that}{rel} it?"
    return render


def _exist_rel(single: bool):
    def render(q, rng):
        p = q.phrases[0]
        that = _pick(rng, ["", "that is " if single else "that are "]) if len(p.relations) == 1 else \
            ("that is " if single else "that are ")
        if single:
            return f"Is there {_a(head_text(p, rng))} {that}{relations_text(p, rng)}?"
        return f"Are there any {_xs(p, rng)} {that}{relations_text(p, rng)}?"
    return render


EXIST = [
    Phrasing("exist/are_there_any", _plain, lambda q, r: f"Are there any {_xs(q.phrases[0], r)}?"),
    Phrasing("exist/are_any_visible", _plain, lambda q, r: f"Are any {_xs(q.phrases[0], r)} visible?"),
    Phrasing("exist/is_there_a", _plain, lambda q, r: f"Is there {_a(head_text(q.phrases[0], r))}?"),
    Phrasing("exist/do_you_see_a", _plain, lambda q, r: f"Do you see {_a(head_text(q.phrases[0], r))}?"),
    Phrasing("exist/are_there_any_rel", _related, _exist_rel(single=False)),
    Phrasing("exist/is_there_a_rel", _related, _exist_rel(single=True)),
    Phrasing("exist/there_is_are_there_any_it", _one_relation, _exist_it(single=False)),
    Phrasing("exist/there_is_is_there_a_it", _one_relation, _exist_it(single=True)),
    Phrasing("exist/any_other_have_same", _same, _same_exist("have", "any_other")),
    Phrasing("exist/any_other_are_same", _same, _same_exist("be", "any_other")),
    Phrasing("exist/any_other_of_same", _same, _same_exist("of", "any_other")),
    Phrasing("exist/another_has_same", lambda q: _same(q) and not _same_bare(q), _same_exist("have", "another")),
    Phrasing("exist/another_of_same", lambda q: _same(q) and not _same_bare(q), _same_exist("of", "another")),
    Phrasing("exist/anything_else_has_same", _same_bare, _same_exist("have", "anything else")),
    Phrasing("exist/anything_else_is_same", _same_bare, _same_exist("be", "anything else")),
    Phrasing("exist/anything_else_of_same", _same_bare, _same_exist("of", "anything else")),
    Phrasing("exist/any_other_thing_has_same", _same_bare, _same_exist("have", "any other thing")),
    Phrasing("exist/any_other_thing_is_same", _same_bare, _same_exist("be", "any other thing")),
]


def _the(q: Question, rng, i: int = 0) -> str:
    return np_text(q.phrases[i], rng)


def _attr_is(*attrs: str):
    return lambda q: q.attr in attrs


QUERY = [
    Phrasing("query/what_attr_is", _any, lambda q, r: f"What {q.attr} is {_the(q, r)}?"),
    Phrasing("query/what_is_the_attr_of", _any, lambda q, r: f"What is the {q.attr} of {_the(q, r)}?"),
    Phrasing("query/the_x_is_what", _attr_is("color", "shape", "size"),
             lambda q, r: f"{_capital(_the(q, r))} is what {q.attr}?"),
    Phrasing("query/the_x_has_what", _attr_is("color", "shape", "size"),
             lambda q, r: f"{_capital(_the(q, r))} has what {q.attr}?"),
    Phrasing("query/there_is_what_attr_is_it", _any,
             lambda q, r: f"{_there_is(q.phrases[0], r)}; what {q.attr} is it?"),
    Phrasing("query/there_is_what_is_its", _any,
             lambda q, r: f"{_there_is(q.phrases[0], r)}; what is its {q.attr}?"),
    Phrasing("query/how_big", _attr_is("size"), lambda q, r: f"How big is {_the(q, r)}?"),
    Phrasing("query/there_is_how_big_is_it", _attr_is("size"),
             lambda q, r: f"{_there_is(q.phrases[0], r)}; how big is it?"),
    Phrasing("query/what_is_made_of", _attr_is("material"), lambda q, r: f"What is {_the(q, r)} made of?"),
    Phrasing("query/what_material_made_of", _attr_is("material"),
             lambda q, r: f"What material is {_the(q, r)} made of?"),
    Phrasing("query/is_made_of_what_material", _attr_is("material"),
             lambda q, r: f"{_capital(_the(q, r))} is made of what material?"),
    Phrasing("query/there_is_what_is_it_made_of", _attr_is("material"),
             lambda q, r: f"{_there_is(q.phrases[0], r)}; what is it made of?"),
    Phrasing("query/what_kind_of", _attr_is("shape"), lambda q, r: f"What kind of shape is {_the(q, r)}?"),
]


def _outer(q: Question, rng) -> str:
    """The head of a union count: "things", "large objects", "cubes"."""
    return head_text(NounPhrase(dict(q.outer)), rng, plural=True)


def _or_parts(q: Question, rng) -> tuple[str, str]:
    return tuple(np_text(p, rng, plural=True, article="") for p in q.phrases)


def _count_or(lead: str):
    def render(q, rng):
        a, b = _or_parts(q, rng)
        return f"{lead} {_outer(q, rng)} are {_pick(rng, ['either ', ''])}{a} or {b}?"
    return render


def _no_outer_plain(q: Question) -> bool:
    return not q.outer and all(not p.relations and p.same is None for p in q.phrases)


COUNT_OR = [
    Phrasing("count_or/how_many_are_either", _any, _count_or("How many")),
    Phrasing("count_or/what_number_are_either", _any, _count_or("What number of")),
    Phrasing("count_or/how_many_or_are_there", _no_outer_plain,
             lambda q, r: "How many {} or {} are there?".format(*_or_parts(q, r))),
]


def _counts(a_lead: str, b_lead: str = ""):
    def render(q, rng):
        a, b = _or_parts(q, rng)
        return a_lead.format(a=a, b=b)
    return render


COMPARE_COUNT = [
    Phrasing("compare_count/are_there_more", lambda q: q.op == "more", _counts("Are there more {a} than {b}?")),
    Phrasing("compare_count/number_greater", lambda q: q.op == "more",
             _counts("Is the number of {a} greater than the number of {b}?")),
    Phrasing("compare_count/are_there_fewer", lambda q: q.op == "fewer", _counts("Are there fewer {a} than {b}?")),
    Phrasing("compare_count/number_less", lambda q: q.op == "fewer",
             _counts("Is the number of {a} less than the number of {b}?")),
    Phrasing("compare_count/same_number", lambda q: q.op == "equal", _counts("Are there the same number of {a} and {b}?")),
    Phrasing("compare_count/equal_number", lambda q: q.op == "equal", _counts("Are there an equal number of {a} and {b}?")),
    Phrasing("compare_count/number_same_as", lambda q: q.op == "equal",
             _counts("Is the number of {a} the same as the number of {b}?")),
]


def _same_as(q: Question, rng) -> str:
    """"the same size as" / "made of the same material as"."""
    return "made of the same material as" if q.attr == "material" else f"the same {q.attr} as"


COMPARE_ATTR = [
    Phrasing("compare_attr/do_x_and_y_have_same", _any,
             lambda q, r: f"Do {_the(q, r)} and {_the(q, r, 1)} have the same {q.attr}?"),
    Phrasing("compare_attr/is_attr_of_x_same_as_y", _any,
             lambda q, r: f"Is the {q.attr} of {_the(q, r)} the same as {_the(q, r, 1)}?"),
    # "Is the cube left of the ball made of the same material as ..." could also make the ball the one
    # made of that material, so the parser rightly refuses it: not generated after a relation
    Phrasing("compare_attr/is_x_same_as_y", lambda q: q.attr != "material" or not q.phrases[0].relations,
             lambda q, r: f"Is {_the(q, r)} {_same_as(q, r)} {_the(q, r, 1)}?"),
    Phrasing("compare_attr/does_x_have_same", _any,
             lambda q, r: f"Does {_the(q, r)} have the same {q.attr} as {_the(q, r, 1)}?"),
    Phrasing("compare_attr/are_x_and_y_made_of_same", _attr_is("material"),
             lambda q, r: f"Are {_the(q, r)} and {_the(q, r, 1)} made of the same material?"),
    Phrasing("compare_attr/there_is_does_it_have_same", _any,
             lambda q, r: f"{_there_is(q.phrases[0], r)}; does it have the same {q.attr} as {_the(q, r, 1)}?"),
    Phrasing("compare_attr/there_is_is_it_same", _any,
             lambda q, r: f"{_there_is(q.phrases[0], r)}; is it {_same_as(q, r)} {_the(q, r, 1)}?"),
    Phrasing("compare_attr/there_is_is_its_attr_same", _any,
             lambda q, r: f"{_there_is(q.phrases[0], r)}; is its {q.attr} the same as {_the(q, r, 1)}?"),
]

RELATION_CHECK = [
    Phrasing("relation_check/is_x_rel_y", _any,
             lambda q, r: f"Is {_the(q, r)} {_pick(r, RELATION_PHRASES[q.op])} {_the(q, r, 1)}?"),
]

MOST_COMMON = [
    Phrasing("most_common/what_is_in_the_image", _attr_is("shape"), lambda q, r: "What is in the image?"),
    Phrasing("most_common/what_is_in_the_picture", _attr_is("shape"), lambda q, r: "What is in the picture?"),
    Phrasing("most_common/what_do_you_see", _attr_is("shape"), lambda q, r: "What do you see?"),
    Phrasing("most_common/what_kind_of_things", _attr_is("shape"),
             lambda q, r: "What kind of things are in the image?"),
    Phrasing("most_common/what_attr_are_most", _any, lambda q, r: f"What {q.attr} are most of the things?"),
]

PHRASINGS: dict[str, list[Phrasing]] = {
    "count": COUNT, "exist": EXIST, "query": QUERY, "count_or": COUNT_OR, "compare_count": COMPARE_COUNT,
    "compare_attr": COMPARE_ATTR, "relation_check": RELATION_CHECK, "most_common": MOST_COMMON,
}
PHRASING_BY_ID = {p.id: p for phrasings in PHRASINGS.values() for p in phrasings}

# Whole phrasings the builder keeps out of the training split (val and test keep them, flagged). Each
# leaves its words and its kind of question in training through other phrasings, so a held-out
# phrasing tests a new word order, not a new word.
HELDOUT_PHRASINGS = frozenset({
    "count/what_number_are_rel", "count/there_is_what_number_it", "count/what_number_other_have_same",
    "exist/are_any_visible", "exist/there_is_is_there_a_it", "exist/anything_else_of_same",
    "exist/another_of_same", "query/the_x_has_what", "query/there_is_how_big_is_it",
    "query/is_made_of_what_material", "count_or/what_number_are_either", "compare_count/equal_number",
    "compare_attr/is_attr_of_x_same_as_y", "compare_attr/there_is_is_its_attr_same",
})


def phrasings_for(q: Question) -> list[Phrasing]:
    return [p for p in PHRASINGS[q.kind] if p.applies(q)]


def render_question(q: Question, rng: np.random.Generator, heldout: frozenset[str] = frozenset()) -> tuple[str, str]:
    """(text, phrasing id): one of the phrasings that fit the tree, never one in `heldout`."""
    options = [p for p in phrasings_for(q) if p.id not in heldout]
    if not options:
        raise ValueError(f"every phrasing of this {q.kind} question is held out")
    phrasing = _pick(rng, options)
    return phrasing.render(q, rng), phrasing.id


def question_text(q: Question, rng: np.random.Generator) -> str:
    return render_question(q, rng)[0]


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


def random_description(scene: Scene, among: list[int], rng: np.random.Generator,
                       exclude: tuple[str, ...] = ()) -> dict[str, str]:
    """A description for counting/existence: usually borrowed from an object present, sometimes made up."""
    names = [a for a in rng.permutation(ATTRIBUTE_ORDER) if a not in exclude][: int(rng.integers(0, 3))]
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


def set_phrase(scene: Scene, rng: np.random.Generator, hops: int) -> NounPhrase | None:
    """A set phrase: described from the scene (hops = 0) or reached through relations."""
    if hops == 0:
        attrs = random_description(scene, list(range(len(scene.objects))), rng)
        return NounPhrase(attrs) if attrs else None
    return related_set_phrase(scene, rng, hops)


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


def _sample_query(hops: int, attr: str):
    def sample(scene, rng):
        found = unique_phrase(scene, rng, hops, exclude=(attr,))
        return found and Question("query", [found[0]], attr=attr)
    return sample


def _sample_and(kind: str, attr: str | None = None):
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
            target = int(_pick(rng, both))
            attrs = describe_unique(scene, target, both, rng, exclude=(attr,))
            return attrs is not None and Question("query", [NounPhrase(attrs, relations=relations)], attr=attr) or None
        return Question(kind, [NounPhrase(random_description(scene, both, rng), relations=relations)])
    return sample


def _distinct(first: NounPhrase, second: NounPhrase) -> bool:
    """Neither description contains the other ("cubes or red cubes" is no choice)."""
    if first.relations or second.relations:
        return first != second
    a, b = first.attrs.items(), second.attrs.items()
    return bool(first.attrs) and bool(second.attrs) and not (a <= b or b <= a)


def _sample_or(hops: tuple[int, int], outer: str | None = None):
    """count(union) of two sets, each described (0) or reached through a relation (1); `outer` filters
    the union by one attribute the two descriptions leave free."""
    def sample(scene, rng):
        exclude = (outer,) if outer else ()
        parts = []
        for h in hops:
            if h == 0:
                parts.append(NounPhrase(random_description(scene, list(range(len(scene.objects))), rng, exclude)))
            else:
                parts.append(related_set_phrase(scene, rng, 1))
        if any(p is None for p in parts) or not _distinct(*parts):
            return None
        outer_filter = {}
        if outer:
            outer_filter = {outer: _attrs_of(scene, int(rng.integers(len(scene.objects))))[outer]}
        return Question("count_or", parts, outer=outer_filter)
    return sample


def _sample_same(kind: str, attr: str, filtered: bool = False, asked: str | None = None):
    """same_relate: exist/count of the other objects sharing `attr` with a unique one (filtered: also
    described), or the query of `asked` about the one such object a description picks."""
    def sample(scene, rng):
        found = unique_phrase(scene, rng, 0, exclude=(attr,))
        if found is None:
            return None
        anchor_phrase, anchor = found
        others = [i for i in range(len(scene.objects))
                  if i != anchor and scene.objects[i].attribute(attr) == scene.objects[anchor].attribute(attr)]
        if kind == "query":
            if not others:
                return None
            target = int(_pick(rng, others))
            attrs = describe_unique(scene, target, others, rng, exclude=(attr, asked))
            return attrs is not None and Question("query", [NounPhrase(attrs, same=(attr, anchor_phrase))], attr=asked) or None
        attrs = {}
        if filtered:
            attrs = random_description(scene, others, rng, exclude=(attr,))
            if not attrs:
                return None
        return Question(kind, [NounPhrase(attrs, same=(attr, anchor_phrase))])
    return sample


def _sample_compare_count(hops: tuple[int, int], op: str):
    def sample(scene, rng):
        first, second = set_phrase(scene, rng, hops[0]), set_phrase(scene, rng, hops[1])
        if first is None or second is None or not _distinct(first, second):
            return None
        return Question("compare_count", [first, second], op=op)
    return sample


def _sample_compare_attr(attr: str, hops: tuple[int, int]):
    def sample(scene, rng):
        a, b = unique_phrase(scene, rng, hops[0], exclude=(attr,)), unique_phrase(scene, rng, hops[1], exclude=(attr,))
        if a is None or b is None or a[1] == b[1]:
            return None
        return Question("compare_attr", [a[0], b[0]], attr=attr)
    return sample


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
    type: str       # one of CLEVR's nine question types
    sample: object  # (scene, rng) -> Question | None
    weight: float = 1.0  # how often for_scene offers the family, relative to the others


def _clevr_families() -> list[Family]:
    """CLEVR's 90 program shapes, one family each."""
    attrs = ATTRIBUTE_ORDER
    families = []
    for hops, name in enumerate(("zero_hop", "one_hop", "two_hop", "three_hop")):
        families += [Family(f"{name}_count", name, _sample_count_exist("count", hops)),
                     Family(f"{name}_exist", name, _sample_count_exist("exist", hops))]
        families += [Family(f"{name}_query_{a}", name, _sample_query(hops, a)) for a in attrs]
    families.append(Family("single_and_count", "single_and", _sample_and("count")))
    families += [Family(f"single_and_query_{a}", "single_and", _sample_and("query", a)) for a in attrs]
    families.append(Family("single_or_count", "single_or", _sample_or((0, 0))))
    families += [Family(f"single_or_count_{a}", "single_or", _sample_or((0, 0), a)) for a in attrs]
    families += [Family("single_or_count_related", "single_or", _sample_or((1, 1))),
                 Family("single_or_count_related_first", "single_or", _sample_or((1, 0))),
                 Family("single_or_count_related_second", "single_or", _sample_or((0, 1)))]
    for kind in ("exist", "count"):
        families += [Family(f"same_relate_{kind}_{a}", "same_relate", _sample_same(kind, a)) for a in attrs]
        families += [Family(f"same_relate_{kind}_filtered_{a}", "same_relate", _sample_same(kind, a, filtered=True))
                     for a in attrs]
    families += [Family(f"same_relate_query_{asked}_same_{a}", "same_relate", _sample_same("query", a, asked=asked))
                 for a in attrs for asked in attrs if asked != a]
    for hops, suffix in (((0, 0), ""), ((1, 0), "_related"), ((1, 1), "_both_related")):
        families += [Family(f"compare_integer_{op}{suffix}", "compare_integer", _sample_compare_count(hops, op))
                     for op in ("equal", "fewer", "more")]
    for a in attrs:
        for hops, suffix in (((0, 0), ""), ((1, 0), "_related_first"), ((0, 1), "_related_second"),
                             ((1, 1), "_both_related")):
            families.append(Family(f"comparison_{a}{suffix}", "comparison", _sample_compare_attr(a, hops)))
    return families


PLAYER_WEIGHT = 3.0  # player families are few; this keeps their questions near a fifth of a world's
FAMILIES: list[Family] = _clevr_families() + [
    Family("player_exist", "zero_hop", _sample_player_exist, PLAYER_WEIGHT),
    Family("player_count", "zero_hop", _sample_player_count, PLAYER_WEIGHT),
    Family("player_color", "zero_hop", _sample_player_query("color"), PLAYER_WEIGHT),
    Family("player_material", "zero_hop", _sample_player_query("material"), PLAYER_WEIGHT),
    Family("player_relation", "single_and", _sample_player_relation, PLAYER_WEIGHT),
    Family("player_more", "compare_integer", _sample_player_more, PLAYER_WEIGHT),
    Family("player_what_is_there", "zero_hop", _sample_most_common, PLAYER_WEIGHT),
]
FAMILY_BY_NAME = {f.name: f for f in FAMILIES}
_FAMILY_WEIGHTS = np.array([f.weight for f in FAMILIES]) / sum(f.weight for f in FAMILIES)


def _too_common(counts: Counter, answer: str) -> bool:
    """Would one more `answer` make it more than its share of the family's answers so far? A family
    whose scenes nearly always give one answer ("is there anything else made of the same material as
    the cube?" is nearly always yes) then produces fewer questions instead of lopsided ones."""
    total = sum(counts.values()) + 1
    limit = 0.55 if answer in ("yes", "no") else 0.35
    return total > 10 and (counts[answer] + 1) / total > limit


@dataclass
class GeneratedQuestion:
    question: str
    tree: Question
    program: Program
    answer: str
    family: str
    type: str
    phrasing: str = ""
    heldout_phrasing: bool = False


class QuestionGenerator:
    """Draws well-posed questions for scenes while keeping each family's answers balanced: for every
    question it samples several candidates and keeps the one whose answer the family has produced least
    (CLEVR rejects over-represented answers; choosing among candidates does the same without stalling).

    heldout: phrasing ids never used unless a call allows them (the builder allows them outside the
    training split, and flags the questions that use one)."""

    def __init__(self, candidates: int = 8, tries: int = 30, heldout: frozenset[str] = HELDOUT_PHRASINGS) -> None:
        self.candidates = candidates
        self.tries = tries
        self.heldout = frozenset(heldout)
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

    def generate(self, scene: Scene, family: Family, rng: np.random.Generator,
                 allow_heldout: bool = True) -> GeneratedQuestion | None:
        found = self._candidates(family, scene, rng)
        if not found:
            return None
        counts = self.answer_counts[family.name]
        least = min(counts[a] for _, a in found)
        tree, answer = next((q, a) for q, a in found if counts[a] == least)
        if _too_common(counts, answer):
            return None  # like CLEVR, skip the family here rather than skew its answers
        counts[answer] += 1
        text, phrasing = render_question(tree, rng, frozenset() if allow_heldout else self.heldout)
        return GeneratedQuestion(text, tree, tree.program(), answer, family.name, family.type, phrasing,
                                 phrasing in self.heldout)

    def for_scene(self, scene: Scene, n: int, rng: np.random.Generator,
                  allow_heldout: bool = True) -> list[GeneratedQuestion]:
        """n questions from distinct families where possible (families drawn by weight; the rest of the
        families fill the places of questions that came out ill-posed or duplicated), no duplicate texts."""
        result, seen = [], set()
        order = rng.choice(len(FAMILIES), size=len(FAMILIES), replace=False, p=_FAMILY_WEIGHTS)
        for index in order:
            if len(result) == n:
                break
            q = self.generate(scene, FAMILIES[int(index)], rng, allow_heldout)
            if q is not None and q.question not in seen:
                seen.add(q.question)
                result.append(q)
        return result
