"""Free text -> question tree -> program, for exactly the language the world's questions cover.

A player's typed question is graded against the scene's ground truth, so the parser must never guess:
a question it does not fully understand is marked ungradable instead of being graded as something else.
Hence the rules:

- The whole text must be read. Normalisation is mild (lower case, punctuation dropped, contractions
  expanded, a few common misspellings fixed); any unknown word, or any word left over, means Unparseable.
- Every reading is found (a small backtracking recursive descent over a table of templates), and the
  text is accepted only when all readings compile to the same program and none was refused as
  ungradable. "Is the cube left of the sphere behind the cylinder?" has two readings (which object is
  behind the cylinder?), so it is rejected, not guessed; so is a clause that could describe either of
  two nouns ("a sphere behind the cube that is red", see the note above `_Parser.one`).
- The trees are questions.py's own `Question` / `NounPhrase`, so a generated question and its parse
  compile to the same program by construction.

One thing players ask has no `Question` kind: "is the cube red?". Its program must keep "the cube"
unique, so it is an `AttributeCheck` (defined here, with the same `.program()` as a Question):
scene -> filters(the cube) -> unique (checked), and exist(filter_color[red](the cube)).

Grammar notation (TEMPLATES below): plain words must appear as written, `(a|b c)` is one of the
alternatives, `[a|b c]` one of them or nothing, `{kind}` / `{kind2}` a slot parsed by `_Parser.<kind>`
(noun phrases, relations, attribute words ...). Each template names the function that builds its tree
from the slots; a builder raises Unparseable(reason) when the words fit but the meaning is not gradable.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Callable, ClassVar, Iterator

from .programs import Node, Program, ProgramBuilder, program_key
from .questions import ADJECTIVES, NOUNS, PLURALS, RELATION_PHRASES, NounPhrase, Question
from .scene import ATTRIBUTES


class Unparseable(ValueError):
    """The text is outside the question language; the message says which part was not understood."""


@dataclass
class AttributeCheck:
    """"Is the cube red?": yes when the one object the phrase names has every attribute in `attrs`."""
    phrase: NounPhrase
    attrs: dict[str, str]
    kind: ClassVar[str] = "attribute_check"

    def program(self) -> Program:
        b = ProgramBuilder()
        subject = self.phrase.compile(b)
        b.add("unique", [subject])  # ill-posed unless the phrase names exactly one object
        b.add("exist", [b.filters(subject, self.attrs)])
        return b.nodes


class NotAReading(Unparseable):
    """The words fit a template, but English never means it that way: dropped without a trace."""


class _Attached(NounPhrase):
    """An anchor ("... left of the cube that is red") whose clause may describe the noun before it
    instead (the sphere? the cube?). A reading containing one is never graded; see _Parser.one."""


def _phrases(tree) -> Iterator[NounPhrase]:
    """Every noun phrase of a tree, anchors included."""
    stack = list(tree.phrases) if isinstance(tree, Question) else [tree.phrase]
    while stack:
        phrase = stack.pop()
        yield phrase
        stack += [anchor for _, anchor in phrase.relations] + ([phrase.same[1]] if phrase.same else [])


# --- words ------------------------------------------------------------------------------------------

MAX_WORDS = 80  # longer than any generated question; beyond this a text is not a question we grade

VALUE_ATTRIBUTE = {value: attr for attr, values in ATTRIBUTES.items() for value in values}
# adjective word -> attribute value: the generator's synonyms plus the ones players use
ADJECTIVE_WORDS = {word: value for value, words in ADJECTIVES.items() for word in words} | {
    "grey": "gray", "little": "small", "rubbery": "rubber",
}
# noun word -> (shape or None for "thing", plural?)
NOUN_WORDS = {word: (shape, False) for shape, words in NOUNS.items() for word in words}
NOUN_WORDS |= {PLURALS[word]: (shape, True) for word, (shape, _) in list(NOUN_WORDS.items())}
NOUN_WORDS |= {"box": ("cube", False), "boxes": ("cube", True), "item": (None, False), "items": (None, True),
               "one": (None, False), "ones": (None, True), "shape": (None, False), "shapes": (None, True)}
# relation phrase -> relation
RELATION_WORDS = {phrase: rel for rel, phrases in RELATION_PHRASES.items() for phrase in phrases} | {
    "on the left of": "left", "to the left side of": "left",
    "on the right of": "right", "to the right side of": "right",
}
ATTRIBUTE_WORDS = {attr: attr for attr in ATTRIBUTES}
PICTURE_WORDS = ("image", "picture", "scene", "photo", "photograph", "pic")

CONTRACTIONS = {
    "what's": "what is", "whats": "what is", "there's": "there is", "theres": "there is",
    "that's": "that is", "thats": "that is", "it's": "it is", "isn't": "is not", "aren't": "are not",
    "don't": "do not", "doesn't": "does not", "can't": "can not", "cannot": "can not",
}
FILLERS = {"please"}  # words that change nothing a question asks
# "is there anything else that ..." asks what "is there any other thing that ..." asks
SAME_MEANING = {("anything", "else"): ["any", "other", "thing"], ("something", "else"): ["any", "other", "thing"]}
SPELLING = {
    "colour": "color", "colours": "colors", "coloured": "colored", "cilinder": "cylinder",
    "cyllinder": "cylinder", "cylindar": "cylinder", "cilinders": "cylinders", "cylindars": "cylinders",
    "spere": "sphere", "shpere": "sphere", "sphear": "sphere", "speres": "spheres", "cueb": "cube",
    "metalic": "metallic", "infront": "in front", "behing": "behind", "obejct": "object",
    "obejcts": "objects", "gery": "grey", "materal": "material", "matterial": "material",
}


def normalize(text: str) -> list[str]:
    """Lower-case words with punctuation dropped, contractions expanded, misspellings fixed, "please"
    dropped, and a possessive "'s" split off as its own word ("the cube's color" -> the cube 's color)."""
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    text = re.sub(r"[^a-z0-9' ]+", " ", text)
    words: list[str] = []
    for word in text.split():
        word = word.strip("'") if not word.endswith("'s") else word
        if word in CONTRACTIONS:
            words += CONTRACTIONS[word].split()
        elif word.endswith("'s") and len(word) > 2:
            words += [SPELLING.get(word[:-2].replace("'", ""), word[:-2].replace("'", "")), "'s"]
        elif word.replace("'", ""):
            word = word.replace("'", "")
            words += SPELLING.get(word, word).split()
    words = [word for word in words if word not in FILLERS]
    for i in range(len(words) - 1, 0, -1):
        if (words[i - 1], words[i]) in SAME_MEANING:
            words[i - 1:i + 1] = SAME_MEANING[(words[i - 1], words[i])]
    return words


# --- builders: slots -> tree ------------------------------------------------------------------------

def _attach(base: NounPhrase, extra: NounPhrase) -> NounPhrase:
    """`base` further restricted by `extra` (the part after a noun, or a predicate like "are red")."""
    if any(base.attrs.get(attr, value) != value for attr, value in extra.attrs.items()):
        raise Unparseable("two different values of one attribute for the same objects")
    if (base.relations or base.same) and (extra.relations or extra.same):
        raise Unparseable("too many relations on one noun phrase")
    return NounPhrase({**base.attrs, **extra.attrs}, list(base.relations or extra.relations),
                      base.same or extra.same)


def _other_needs_same(s: dict, phrase: NounPhrase) -> NounPhrase:
    # "other things" only makes sense against an anchor: "other things the same color as the cube"
    if s.get("other") and phrase.same is None:
        raise Unparseable("'other' without 'the same ... as'")
    return phrase


def exist(s):
    return Question("exist", [s["set"]])


def _restricted(s) -> NounPhrase:
    """The {set} of a template restricted by its predicate: "how many cubes are red", "... have the same
    color as the ball"."""
    return _other_needs_same(s, _attach(s["set"], s["pred"] if "pred" in s else s["hassame"]))


def exist_with(s):
    return Question("exist", [_restricted(s)])


def exist_anything(s):
    return Question("exist", [_attach(NounPhrase(), s["pred"])])


def count(s):
    return Question("count", [s["set"]])


def count_with(s):
    return Question("count", [_restricted(s)])


def count_there_of(s):
    # "how many other cubes are there of the same size as the ball"
    return Question("count", [_other_needs_same(s, _attach(s["set"], s["ofsame"]))])


def count_or(s):
    first, second = s["pair"]
    return Question("count_or", [first, second])


def count_or_of(s):
    """"how many large things are either cubes or red spheres": the union filtered by the subject's
    attributes (CLEVR's program: filter after union)."""
    subject = s["set"]
    if subject.relations or subject.same:
        raise Unparseable("a relation on the subject of 'either ... or ...'")
    first, second = s["predpair"]
    return Question("count_or", [first, second], outer=dict(subject.attrs))


def compare_count(op: str):
    return lambda s: Question("compare_count", [s["set"], s["set2"]], op=op)


def query(attr: str | None = None):
    return lambda s: Question("query", [s["one"]], attr=attr or s["attr"])


def query_of(s):
    attr, phrase = s["attrof"]
    return Question("query", [phrase], attr=attr)


def query_choice(s):
    """"Is the cube metal or rubber?" asks the material only when the options are all the materials;
    "is the ball red or blue?" may have the answer "neither", which no program can give."""
    options = s["choice"]
    attrs, values = {attr for attr, _ in options}, {value for _, value in options}
    if len(attrs) != 1 or len(values) != len(options):
        raise Unparseable("the choices are not values of one attribute")
    attr = attrs.pop()
    if values != set(ATTRIBUTES[attr]):
        raise Unparseable(f"a choice between only some {attr}s ({', '.join(sorted(values))}) may have "
                          "the answer 'neither'")
    return Question("query", [s["one"]], attr=attr)


def query_what_is(s):
    # "what is the red thing?" asks for its shape; "what is the cube?" asks nothing
    if "shape" in s["one"].attrs:
        raise Unparseable("'what is' a named shape asks nothing")
    return Question("query", [s["one"]], attr="shape")


def query_what_is_there(s):
    # "what is behind the cube?": the shape of the one thing behind the cube
    pred = s["pred"]
    if pred.attrs or not (pred.relations or pred.same):
        raise Unparseable("'what is' needs a relation ('what is behind the cube')")
    return Question("query", [pred], attr="shape")


def is_pred(s):
    """"Is the X <pred>?": a relation check, an attribute comparison or an attribute check."""
    subject, pred = s["one"], s["pred"]
    if pred.same is not None:
        attr, anchor = pred.same
        return Question("compare_attr", [subject, anchor], attr=attr)
    if pred.relations:
        if subject.same is not None:
            # "is the cube the same size as the ball left of the cylinder" compares the cube with the
            # ball left of the cylinder (CLEVR); it does not ask where "the cube the same size as the
            # ball" is
            raise NotAReading()
        if len(pred.relations) != 1:
            raise Unparseable("one relation at a time: 'is the X left of the Y'")
        relation, anchor = pred.relations[0]
        return Question("relation_check", [subject, anchor], op=relation)
    return AttributeCheck(subject, dict(pred.attrs))


def is_attr_of(s):
    # "is the color of the cube red?"
    attr, phrase = s["attrof"]
    if set(s["pred"].attrs) != {attr} or s["pred"].relations or s["pred"].same:
        raise Unparseable(f"the {attr} of a thing can only be a {attr}")
    return AttributeCheck(phrase, dict(s["pred"].attrs))


def compare_attr(attr: str | None = None):
    return lambda s: Question("compare_attr", [s["one"], s["one2"]], attr=attr or s["attr"])


def compare_attr_of(s):
    (attr, first), (attr2, second) = s["attrof"], s["attrof2"]
    if attr != attr2:
        raise Unparseable(f"comparing a {attr} with a {attr2}")
    return Question("compare_attr", [first, second], attr=attr)


def compare_attr_of_that(s):
    attr, first = s["attrof"]
    return Question("compare_attr", [first, s["one2"]], attr=attr)


def most_common(attr: str | None = None):
    return lambda s: Question("most_common", [s.get("set") or NounPhrase()], attr=attr or s["attr"])


COUNT_TAIL = ("[are there|there are|is there|can you see|do you see|can i see|are visible|are present|exist"
              "|are {loc}|can be seen]")

TEMPLATES: list[tuple[str, Callable]] = [
    # exist
    ("is there [a|an|any|at least one] {set}", exist),
    ("are there [any|some|at least some] {set}", exist),
    ("(is|are) (a|an|any|some) {set} (visible|present|there)", exist),
    ("(is|are) any [of the] [{other}] {set} {pred}", exist_with),
    ("(do|does) any [of the] [{other}] {set} {hassame}", exist_with),
    ("is (anything|something) {pred}", exist_anything),
    ("(do|can) you see [a|an|any|some] {set}", exist),
    ("(does|do) {picture} (contain|have|show|include) [a|an|any|some] {set}", exist),
    ("(does|do) (a|an|any) {set} exist", exist),
    ("any {set}", exist),
    # count
    ("(how many|what number of) {set} " + COUNT_TAIL + " [in total|altogether]", count),
    ("[can you|could you] tell me how many {set} (there are|you see|you can see)", count),
    ("[what is] [the] number of {set}", count),
    ("count [all] [the] {set}", count),
    ("how many [of the] [{other}] {set} are {pred}", count_with),
    ("what number of [{other}] {set} are {pred}", count_with),
    ("(how many|what number of) [of the] [{other}] {set} {hassame}", count_with),
    ("(how many|what number of) [{other}] {set} are there {ofsame}", count_there_of),
    # count_or
    ("(how many|what number of) {set} are [either] {predpair}", count_or_of),
    ("(how many|what number of) [either] {pair} " + COUNT_TAIL, count_or),
    ("count [all] [the] {pair}", count_or),
    # compare_count
    ("are there more {set} than [there are] {set2}", compare_count("more")),
    ("are there (fewer|less) {set} than [there are] {set2}", compare_count("fewer")),
    ("is the number of {set} (greater|more|larger|bigger|higher) than (the number of|that of) {set2}",
     compare_count("more")),
    ("is the number of {set} (less|fewer|smaller|lower) than (the number of|that of) {set2}",
     compare_count("fewer")),
    ("is the number of {set} (the same as|equal to) (the number of|that of) {set2}", compare_count("equal")),
    ("(are|is) there (the same number of|an equal number of|equally many) {set} and {set2}",
     compare_count("equal")),
    ("are there as many {set} as [there are] {set2}", compare_count("equal")),
    ("do {set} outnumber {set2}", compare_count("more")),
    # query
    ("(what|which) [kind of|type of|sort of] {attr} is {one}", query()),
    ("(what|which) [kind of|type of|sort of] {attr} does {one} have", query()),
    ("(what|which) [kind of|type of|sort of] material is {one} made [out] of", query("material")),
    ("[what is] {attrof}", query_of),
    ("[can you|could you] tell me {attrof}", query_of),
    ("[can you|could you] tell me what {attr} {one} is", query()),
    ("{one} (is|has) what {attr}", query()),
    ("{one} is made [out] of what material", query("material")),
    ("how (big|large) is {one}", query("size")),
    ("what is {one} made [out] of", query("material")),
    ("what (kind|type|sort) of (thing|object|item) is {one}", query("shape")),
    ("is {one} [either] {choice}", query_choice),
    ("what is {one}", query_what_is),
    ("what is {pred}", query_what_is_there),
    ("what (kind|type|sort) of (thing|object|item) is {pred}", query_what_is_there),
    # relation_check, compare_attr and attribute checks
    ("is {one} {pred}", is_pred),
    ("is {attrof} {pred}", is_attr_of),
    ("does {one} have the same {attr} as {one2}", compare_attr()),
    ("(do|does) {one} and {one2} (have|share) the same {attr}", compare_attr()),
    ("are {one} and {one2} [of] the same {attr}", compare_attr()),
    ("are {one} and {one2} made [out] of the same material", compare_attr("material")),
    ("is {attrof} (the same as|equal to) {attrof2}", compare_attr_of),
    ("is {attrof} the same as [that of] {one2}", compare_attr_of_that),
    # most_common
    ("what is {loc}", most_common("shape")),
    ("what is (there|visible|shown)", most_common("shape")),
    ("what (do|can) you see", most_common("shape")),
    ("what (does|do) {picture} (show|contain)", most_common("shape")),
    ("what [kind of|kinds of|type of|types of|sort of|sorts of] (things|objects|items|shapes) "
     "(are there|are {loc}|do you see|can you see|are visible)", most_common("shape")),
    ("(what|which) {attr} (are|is) most [of the] {set}", most_common()),
    ("(what|which) {attr} do most [of the] {set} have", most_common()),
    ("what is the most common {attr}", most_common()),
    ("(what|which) {attr} is [the] most common", most_common()),
]


# --- templates: compiled once -----------------------------------------------------------------------

@dataclass(frozen=True)
class _Slot:
    name: str  # "one2" is a second slot of kind "one"

    @property
    def kind(self) -> str:
        return self.name.rstrip("0123456789")


_TOKEN = re.compile(r"\([^)]*\)|\[[^\]]*\]|\S+")


def _compile_words(text: str) -> tuple:
    return tuple(_Slot(w[1:-1]) if w.startswith("{") else w for w in text.split())


def _compile(template: str) -> tuple:
    """Elements: a word (str), a _Slot, or a tuple of alternatives (each a tuple of elements)."""
    elements: list = []
    for token in _TOKEN.findall(template):
        if token[0] in "([":
            alternatives = tuple(_compile_words(alt) for alt in token[1:-1].split("|"))
            elements.append(alternatives + (((),) if token[0] == "[" else ()))
        else:
            elements.extend(_compile_words(token))
    return tuple(elements)


_COMPILED = [(_compile(template), build) for template, build in TEMPLATES]


def _template_words(elements) -> set[str]:
    words = set()
    for element in elements:
        if isinstance(element, str):
            words.add(element)
        elif isinstance(element, tuple):
            for alternative in element:
                words |= _template_words(alternative)
    return words


# words the slot methods below read (templates and lexicons add theirs)
_SLOT_WORDS = ("the a an this other another anything something that which is are has have with having "
               "both and or of out made same as in on 's either share shares") + " " + " ".join(PICTURE_WORDS)
VOCABULARY = (set(_SLOT_WORDS.split()) | set(ADJECTIVE_WORDS) | set(NOUN_WORDS) | set(ATTRIBUTE_WORDS)
              | {w for phrase in RELATION_WORDS for w in phrase.split()}
              | set().union(*(_template_words(elements) for elements, _ in _COMPILED)))


# --- the parser -------------------------------------------------------------------------------------

class _Parser:
    """All readings of one normalised word list. Slot methods yield (value, next position) for every
    way a slot can be read at a position; noun phrases are memoised, so backtracking stays cheap."""

    def __init__(self, words: list[str], antecedent: NounPhrase | None = None) -> None:
        self.words = words
        self.antecedent = antecedent     # what "it" names ("There is a cube; what color is it?")
        self.reached = 0                 # furthest position any reading got to, for the error message
        self.reasons: list[str] = []     # why readings that fit the words were refused
        self._phrases: dict[tuple[int, bool], list] = {}
        self.slots = {"one": self.one, "set": self.set, "pred": self.pred, "hassame": self.hassame, "ofsame": self.ofsame,
                      "attr": self.attr, "attrof": self.attrof, "choice": self.choice, "pair": self.pair,
                      "predpair": self.predpair, "loc": self.loc, "picture": self.picture, "other": self.other}

    # words
    def at(self, i: int, phrase: str) -> int | None:
        """Position after `phrase` when the text has it at i, else None."""
        parts = phrase.split()
        if self.words[i:i + len(parts)] != parts:
            return None
        self.reached = max(self.reached, i + len(parts))
        return i + len(parts)

    def any_of(self, i: int, phrases) -> Iterator[tuple[str, int]]:
        for phrase in phrases:
            j = self.at(i, phrase)
            if j is not None:
                yield phrase, j

    def lookup(self, i: int, table: dict):
        """(table[word], i + 1) for the word at i, when it is in the table."""
        if i < len(self.words) and self.words[i] in table:
            self.reached = max(self.reached, i + 1)
            yield table[self.words[i]], i + 1

    # templates
    def readings(self) -> Iterator:
        n = len(self.words)
        for elements, build in _COMPILED:
            for slots, end in self.match(elements, 0, {}):
                # "... in the image" may end any question
                if end != n and all(j != n for _, j in self.loc(end)):
                    continue
                try:
                    tree = build(slots)
                except NotAReading:
                    continue
                except Unparseable as refused:
                    self.reasons.append(str(refused))
                    continue
                if any(isinstance(phrase, _Attached) for phrase in _phrases(tree)):
                    self.reasons.append("a clause after a second noun could describe either noun")
                    continue
                yield tree

    def match(self, elements: tuple, i: int, slots: dict) -> Iterator[tuple[dict, int]]:
        if not elements:
            yield slots, i
            return
        head, rest = elements[0], elements[1:]
        if isinstance(head, str):
            if self.at(i, head) is not None:
                yield from self.match(rest, i + 1, slots)
        elif isinstance(head, _Slot):
            for value, j in self.slots[head.kind](i):
                yield from self.match(rest, j, {**slots, head.name: value})
        else:
            for alternative in head:
                yield from self.match(alternative + rest, i, slots)

    # small slots
    def attr(self, i):
        yield from self.lookup(i, ATTRIBUTE_WORDS)

    def adjective(self, i):
        """((attr, value), next) for one adjective."""
        for value, j in self.lookup(i, ADJECTIVE_WORDS):
            yield (VALUE_ATTRIBUTE[value], value), j

    def adjectives(self, i):
        """(attrs, next) for every run of adjectives starting at i, the empty one included; an attribute
        may appear once ("big red" yes, "red blue" no)."""
        attrs: dict[str, str] = {}
        yield dict(attrs), i
        while True:
            found = list(self.adjective(i))
            if not found or found[0][0][0] in attrs:
                return
            (attr, value), i = found[0]
            attrs[attr] = value
            yield dict(attrs), i

    def picture(self, i):
        for _, j in self.any_of(i, ("the", "this")):
            for _, k in self.any_of(j, PICTURE_WORDS):
                yield True, k

    def loc(self, i):
        for _, j in self.any_of(i, ("in", "on")):
            yield from self.picture(j)

    def other(self, i):
        for _, j in self.any_of(i, ("other",)):
            yield True, j

    def attrof(self, i):
        """(attr, phrase): "the color of the cube" or "the cube's color"."""
        for _, j in self.any_of(i, ("the",)):
            for attr, k in self.attr(j):
                for _, m in self.any_of(k, ("of",)):
                    for phrase, end in self.one(m):
                        yield (attr, phrase), end
        for phrase, j in self.one(i):
            for _, k in self.any_of(j, ("'s",)):
                for attr, end in self.attr(k):
                    yield (attr, phrase), end

    # noun phrases
    #
    # Which object a trailing clause describes is ambiguous in English: in "a sphere behind the cube
    # that is red", is the sphere red, or the cube? The generator follows CLEVR's one convention: a
    # relation clause after an anchor (of a relation, or of "the same color as") describes the anchor
    # ("the cube left of the sphere that is behind the cylinder": the sphere is behind the cylinder;
    # "is the cube the same size as the ball left of the cylinder": the ball is left of it). Any other
    # clause on an anchor could belong to either noun, so such an anchor is marked _Attached and a
    # reading containing it is not graded.

    def one(self, i, anchor_of: str | None = None):
        """A phrase naming one object: singular, "the" optional. anchor_of: "relation" or "same" when
        the phrase is the anchor of one (see above)."""
        if self.antecedent is not None and self.at(i, IT) is not None:
            yield self.antecedent, i + 1
            return
        for phrase, plural, j, clause in self.noun_phrase(i, True):
            if plural:
                continue
            if clause and not (anchor_of is None or (anchor_of in ("relation", "same") and clause == "relations")):
                phrase = _Attached(phrase.attrs, phrase.relations, phrase.same)
            yield phrase, j

    def set(self, i):
        """A phrase naming a set of objects, without article (templates place "any", "a" ...)."""
        for phrase, _, j, _ in self.noun_phrase(i, False):
            yield phrase, j

    def noun_phrase(self, i: int, definite: bool) -> list[tuple[NounPhrase, bool, int, str | None]]:
        """(phrase, plural, next, clause) for every reading at i; clause says what follows the noun:
        None, "relations" or "other"."""
        key = (i, definite)
        if key not in self._phrases:
            self._phrases[key] = list(self._noun_phrase(i, definite))
        return self._phrases[key]

    def _noun_phrase(self, i, definite):
        starts = [(True, i)] + ([(False, j) for _, j in self.any_of(i, ("the",))] if definite else [])
        for bare, start in starts:
            others = [(False, start)] + [(True, j) for _, j in self.any_of(start, ("other", "another"))]
            for other, j in others:
                for attrs, plural, k in self.head(j, bare, definite):
                    if not other:
                        yield NounPhrase(attrs), plural, k, None
                    for extra, end in self.modifier(k):
                        try:
                            phrase = _attach(NounPhrase(attrs), extra)
                        except Unparseable:
                            continue
                        clause = "relations" if extra.relations and not extra.attrs else "other"
                        if phrase.same is not None or not other:
                            yield phrase, plural, end, clause

    def head(self, i, bare: bool, definite: bool):
        """(attrs, plural, next): adjectives and a noun, or "anything/something" and adjectives.
        bare: no article before it. "One" needs an article or an adjective ("is one red?" is not about
        "the red one"), and "anything" never names one object ("is anything red?" asks existence)."""
        for attrs, j in self.adjectives(i):
            for (shape, plural), k in self.lookup(j, NOUN_WORDS):
                if bare and not attrs and self.words[j] in ("one", "ones"):
                    continue
                yield attrs | ({"shape": shape} if shape else {}), plural, k
        if not definite:
            for _, j in self.any_of(i, ("anything", "something")):
                for attrs, k in self.adjectives(j):
                    yield attrs, False, k

    def modifier(self, i):
        """What may follow a noun: "(that is) left of the cube", "that is red", "made of metal",
        "that is the same color as the cube", "with the same size as the ball" ..."""
        yield from self.relations(i)
        for _, j in self.any_of(i, ("that is", "that are", "which is", "which are")):
            yield from self.pred(j)
        yield from self.made_of(i)
        yield from self.same(i, bare=True)
        for _, j in self.any_of(i, ("with", "that has", "that have", "which has", "which have", "having")):
            yield from self.same(j, bare=False)

    def pred(self, i):
        """A predicate, as after "is the cube ..." or "how many things are ...": properties, a relation
        or a same-attribute clause, returned as a NounPhrase of restrictions."""
        yield from self.properties(i)
        yield from self.relations(i)
        yield from self.same(i, bare=False)
        yield from self.same(i, bare=True)

    def properties(self, i):
        """"red", "big and red", "made of metal", "a cube", "a small metal ball"."""
        for attrs, j in self.property(i):
            yield NounPhrase(attrs), j
            for _, k in self.any_of(j, ("and",)):
                for more, end in self.properties(k):
                    if all(attrs.get(a, v) == v for a, v in more.attrs.items()):
                        yield NounPhrase(attrs | more.attrs), end

    def property(self, i):
        """"red", "made of metal", "a (red) cube", and after "are": "(red) cubes"."""
        for (attr, value), j in self.adjective(i):
            yield {attr: value}, j
        for phrase, j in self.made_of(i):
            yield phrase.attrs, j
        for _, j in self.any_of(i, ("a", "an")):
            for attrs, plural, k in self.head(j, bare=False, definite=True):
                if attrs and not plural:
                    yield attrs, k
        for attrs, plural, k in self.head(i, bare=True, definite=True):
            if attrs and plural:
                yield attrs, k

    def made_of(self, i):
        for _, j in self.any_of(i, ("made of", "made out of")):
            for (attr, value), k in self.adjective(j):
                if attr == "material":
                    yield NounPhrase({attr: value}), k

    def relation(self, i):
        for phrase, j in self.any_of(i, RELATION_WORDS):
            for anchor, k in self.one(j, anchor_of="relation"):
                yield (RELATION_WORDS[phrase], anchor), k

    def relations(self, i):
        """"left of the cube", "left of the cube and behind the ball", "both left of ... and behind ..."."""
        for both, j in [(False, i)] + [(True, j) for _, j in self.any_of(i, ("both",))]:
            for first, k in self.relation(j):
                if not both:
                    yield NounPhrase(relations=[first]), k
                for _, m in self.any_of(k, ("and",)):
                    for second, end in self.relation(m):
                        yield NounPhrase(relations=[first, second]), end

    def same(self, i, bare: bool):
        """"the same color as the cube"; bare: "of the same color as ...", "made of the same material as ..."."""
        starts = [(None, i)] if not bare else (
            [(None, j) for _, j in self.any_of(i, ("of",))]
            + [("material", j) for _, j in self.any_of(i, ("made of", "made out of"))])
        for required, j in starts:
            for _, k in self.any_of(j, ("the same",)):
                for attr, m in self.attr(k):
                    if required not in (None, attr):
                        continue
                    for _, n in self.any_of(m, ("as",)):
                        for anchor, end in self.one(n, anchor_of="same"):
                            yield NounPhrase(same=(attr, anchor)), end

    def ofsame(self, i):
        """"of the same color as the cube"."""
        for _, j in self.any_of(i, ("of",)):
            yield from self.same(j, bare=False)

    def hassame(self, i):
        """"have the same color as the cube" (after a plural subject)."""
        for _, j in self.any_of(i, ("have", "has", "share", "shares")):
            yield from self.same(j, bare=False)

    # choices and pairs
    def choice(self, i):
        """[(attr, value), ...] for "metal or rubber", "big or small", "a cube a sphere or a cylinder"."""
        def option(j):
            yield from self.adjective(j)
            for phrase, k in self.made_of(j):
                yield next(iter(phrase.attrs.items())), k
            for _, k in self.any_of(j, ("a", "an")):
                for (shape, plural), m in self.lookup(k, NOUN_WORDS):
                    if shape and not plural:
                        yield ("shape", shape), m

        def more(j, options, said_or):
            for _, k in [("", j)] + list(self.any_of(j, ("or",))):
                for value, m in option(k):
                    grown = options + [value]
                    if said_or or k != j:
                        yield grown, m
                    yield from more(m, grown, said_or or k != j)

        for first, j in option(i):
            yield from more(j, [first], False)

    def pair(self, i, adjectives_alone: bool = False):
        """(first, second) of "cubes or red spheres", and "red or blue cubes" (-> red cubes, blue cubes).
        adjectives_alone (after "things are"): "red or metal" too."""
        def part(j):
            yield from self.set(j)
            if adjectives_alone:
                for attrs, k in self.adjectives(j):
                    if attrs:
                        yield NounPhrase(attrs), k

        for first, j in part(i):
            for _, k in self.any_of(j, ("or",)):
                for second, end in part(k):
                    yield (first, second), end
        for (attr, value), j in self.adjective(i):
            for _, k in self.any_of(j, ("or",)):
                for (attr2, value2), m in self.adjective(k):
                    for (shape, _), end in self.lookup(m, NOUN_WORDS):
                        noun = {"shape": shape} if shape else {}
                        yield (NounPhrase({attr: value} | noun), NounPhrase({attr2: value2} | noun)), end

    def predpair(self, i):
        yield from self.pair(i, adjectives_alone=True)

    # failure
    def failure(self) -> str:
        if self.reasons:
            return self.reasons[0]
        if self.reached >= len(self.words):
            return "the words are known but the question has no supported form"
        done = " ".join(self.words[:self.reached])
        return f"not understood from {' '.join(self.words[self.reached:])!r}" + (f" (after {done!r})" if done else "")


# "There is a red cube [that is] left of the ball; what is its size?": the first clause introduces
# what "it" names in the second (CLEVR's coreference form). Players may end the first clause with a
# comma or a full stop instead of a semicolon.
_INTRODUCED = re.compile(r"^\s*there\s+is\s+(?P<intro>[^;:,.?!]+?)\s*[;:,.]\s*(?P<rest>.+)$", re.IGNORECASE | re.DOTALL)
IT = "<it>"  # "it", and "its" as "<it> 's", once an antecedent is known


def _check_words(words: list[str], allowed: set[str] = frozenset()) -> None:
    if not words:
        raise Unparseable("empty question")
    if len(words) > MAX_WORDS:
        raise Unparseable(f"longer than {MAX_WORDS} words")
    unknown = [w for w in words if w not in VOCABULARY and w not in allowed]
    if {"it", "its"} & set(unknown):
        raise Unparseable("'it' names nothing: say what it is first ('There is a red cube; what is its size?')")
    if unknown:
        raise Unparseable(f"unknown word{'s' if len(unknown) > 1 else ''}: {', '.join(dict.fromkeys(unknown))}")


def _antecedents(intro: str) -> list[NounPhrase]:
    """Every reading of the one object "There is <intro>" introduces: "a red cube left of the ball",
    "another cube that is the same size as the ball"."""
    words = normalize(intro)
    _check_words(words)
    start = 1 if words[0] in ("a", "an") else 0
    parser = _Parser(words)
    return [phrase for phrase, end in parser.one(start)
            if end == len(words) and not isinstance(phrase, _Attached)
            and (start == 1 or words[0] == "another")]


def _readings(words: list[str], antecedent: NounPhrase | None, readings: dict, reasons: list[str]) -> _Parser:
    parser = _Parser(words, antecedent)
    for tree in parser.readings():
        readings.setdefault(program_key(tree.program()), tree)
    reasons += parser.reasons
    return parser


def parse(text: str) -> Question | AttributeCheck:
    """The question tree of `text`; raises Unparseable when the text is outside the language or has two
    readings with different programs."""
    readings: dict[str, Question | AttributeCheck] = {}
    reasons: list[str] = []
    introduced = _INTRODUCED.match(text) if isinstance(text, str) else None
    rest = normalize(introduced.group("rest")) if introduced else []
    if introduced and {"it", "its"} & set(rest):
        antecedents = _antecedents(introduced.group("intro"))
        words = [w for word in rest for w in ({"it": [IT], "its": [IT, "'s"]}.get(word, [word]))]
        _check_words(words, {IT})
        if not antecedents:
            raise Unparseable(f"not understood what 'it' is: {introduced.group('intro')!r}")
        for antecedent in antecedents:
            parser = _readings(words, antecedent, readings, reasons)
    else:
        words = normalize(text)
        _check_words(words)
        parser = _readings(words, None, readings, reasons)
    if not readings:
        raise Unparseable(reasons[0] if reasons else parser.failure())
    if reasons:
        # another reading fits the words but cannot be graded: the player may have meant that one
        raise Unparseable(f"ambiguous: one reading cannot be graded ({reasons[0]})")
    if len(readings) > 1:
        raise Unparseable(f"ambiguous: {len(readings)} different readings")
    return next(iter(readings.values()))


def parse_program(text: str) -> Program | None:
    """The program of `text`, or None when it is outside the language (the question is ungradable). A
    fresh program each call (nodes are mutable), built from the remembered parse of the same text."""
    nodes, _ = _parsed_nodes(text)
    return None if nodes is None else [Node(function, list(inputs), list(values)) for function, inputs, values in nodes]


def unparsed_reason(text: str) -> str | None:
    """Why parse_program gives no program for `text` (Unparseable's reason), None when it gives one: from the same
    remembered parse."""
    return _parsed_nodes(text)[1]


@functools.lru_cache(maxsize=8192)
def _parsed_nodes(text: str) -> tuple[tuple | None, str | None]:
    """A question is parsed once: a round grades the same question on every image, a symbolic agent reads it
    for every image, and related questions recur across rounds (issue 29: ~13 ms of a 5-image round). (nodes,
    None), or (None, the reason it is outside the language)."""
    try:
        program = parse(text).program()
    except Unparseable as reason:
        return None, str(reason)
    return tuple((n.function, tuple(n.inputs), tuple(n.value_inputs)) for n in program), None
