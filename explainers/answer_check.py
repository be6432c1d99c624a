"""Does an explanation state the answer it explains, or another one? One rule per CLEVR answer type.

    check_explanation("How many cubes are there?", "2", "There is a red cube and a blue cube.")
    -> AnswerCheck(answer_type="count", states_answer=True, contradicts=False, reason="enumerates 2 objects")

The answer type comes from the question's program (`vqa_agent.world.parser.parse_program`, its last
node), else from the answer's form. The sentence is read the way CLEVR-X writes explanations
(docs/research.md §3): "There is/are ..." clauses and sentence subjects enumerate objects, "The X ... is
V" predicates a value of the subject, "no"/"not"/"nothing" deny. Per type:

- count: the objects the explanation enumerates ("a large brown rubber sphere and cylinder" = 2, "There is
  the big cylinder" = 1, "two red cubes and a red sphere" = 3, "There are no ..." and "No things have ..."
  = 0), summed over its clauses. The two sides of a union may share objects, so a union's clauses allow
  any count from the largest side to their sum.
- exist: "no" must deny ("there are no", "No things have ...", "nothing", "is not left of"), "yes" must
  name some object without denying.
- query: the value the subject is given, by its own noun phrase ("There is a red cube ...") or by a
  predicate ("The cube left of the red sphere is blue"); values of other objects (the red sphere) are
  not the subject's. A contradiction is another value predicated of the subject, a denied answer ("is not
  red"), or another value in the subject phrase when the answer's is absent. For most_common, the value
  the explanation counts most often, or says "most things are ...".
- compare (same attribute, yes/no): the two objects' stated values, equal or not, against the answer.
- compare_integer (equal/fewer/more, yes/no): the counts of the two clauses compared by the program's
  function, against the answer.

A sentence that leaves the answer out (no count, no value for the subject, neither names nor denies)
has states_answer False and contradicts False: incomplete, not contrary. states_answer is None where the
type cannot tell: a comparison whose two facts the sentence does not both state, an answer of another
type than the question's, a yes/no question that does not parse.

Torch-free; the NLE explainer runs it on every sentence. Its false alarms (on reference explanations)
and misses (on made-up contradictions) are measured by `python -m experiments.benchmark.answer_check`.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from vqa_agent.world.parser import parse_program
from vqa_agent.world.questions import ADJECTIVES, NOUNS, PLURALS
from vqa_agent.world.scene import ATTRIBUTES

ANSWER_TYPES = ("count", "exist", "query", "compare", "compare_integer", "unknown")
ATTRIBUTE_OF = {value: attr for attr, values in ATTRIBUTES.items() for value in values}
# every word for every value: adjectives and their synonyms, shape nouns and their plurals
VALUE_OF_WORD = {word: value for value, words in ADJECTIVES.items() for word in words} | \
    {word: shape for shape, words in NOUNS.items() if shape for word in words} | \
    {PLURALS[word]: shape for shape, words in NOUNS.items() if shape for word in words} | \
    {value: value for value in ATTRIBUTE_OF}
THING_WORDS = {w for w in NOUNS[None]} | {PLURALS[w] for w in NOUNS[None]}
NOUN_WORDS = {w for w, v in VALUE_OF_WORD.items() if ATTRIBUTE_OF[v] == "shape"} | THING_WORDS
PLURAL_WORDS = set(PLURALS.values())
NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
QUANTITIES = {"a": 1, "an": 1, "the": 1, "no": 0, "another": 1} | {w: n for n, w in enumerate(NUMBERS)}
FILLERS = {"other"}                        # words allowed between a quantity and its noun
VERBS = frozenset({"is", "are", "has", "have", "was", "were"})
RELATIVES = {"that", "which", "who"}
DENIALS = {"not", "nothing", "none", "isn't", "aren't"}
UNDECIDED_WHEN_SILENT = ("compare", "compare_integer", "unknown")   # types whose facts may not decide
COMPARISONS = {"equal_integer": lambda a, b: a == b, "less_than": lambda a, b: a < b,
               "greater_than": lambda a, b: a > b}


@dataclass(frozen=True)
class AnswerCheck:
    answer_type: str            # "count" | "exist" | "query" | "compare" | "compare_integer" | "unknown"
    states_answer: bool | None  # the sentence states the answer (None: this type cannot tell)
    contradicts: bool           # the sentence states another answer of the same type
    reason: str                 # one line, for logs: what was found


# --- reading a sentence -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Item:
    """One object phrase of an enumeration: "two red cubes" -> quantity 2, values {color: red, shape: cube}."""
    quantity: int | None        # None: a bare plural ("cubes"), any number
    values: dict


@dataclass(frozen=True)
class Clause:
    """The objects a "there is" clause or a sentence's subject enumerates, and where the words go on."""
    items: tuple[Item, ...]
    end: int
    there: bool

    @property
    def total(self) -> int | None:
        return None if any(i.quantity is None for i in self.items) else sum(i.quantity for i in self.items)


def _tokens(text: str) -> list[list[str]]:
    """Sentences as lists of lower-case words, commas kept as tokens."""
    words = re.findall(r"[a-z0-9]+(?:'t)?|[,.;!?]", text.lower())
    sentences, current = [], []
    for w in words:
        if w in ".;!?":
            if current:
                sentences.append(current)
            current = []
        else:
            current.append(w)
    return sentences + ([current] if current else [])


def _quantity(word: str) -> int | None:
    if word.isdigit():
        return int(word)
    return QUANTITIES.get(word)


def _item(words: list[str], i: int, shared: dict, shared_none: bool = False) -> tuple[Item, int] | None:
    """[quantity] [adjectives] noun at words[i]; an item with neither its own quantity nor adjectives shares
    the first item's adjectives ("a red cube, sphere and cylinder") and its "no" ("no cylinder and cube")."""
    said = _quantity(words[i]) if i < len(words) else None
    the = said is not None and words[i] == "the"
    if said is not None:
        i += 1
        if the and i < len(words) and words[i] != "the" and _quantity(words[i]) is not None:
            said, the, i = _quantity(words[i]), False, i + 1      # "the three large spheres"
    values, adjectives = {}, False
    while i < len(words) and (words[i] in FILLERS or (words[i] in VALUE_OF_WORD and words[i] not in NOUN_WORDS)):
        if words[i] in VALUE_OF_WORD:
            values[ATTRIBUTE_OF[VALUE_OF_WORD[words[i]]]] = VALUE_OF_WORD[words[i]]
            adjectives = True
        i += 1
    if i >= len(words) or words[i] not in NOUN_WORDS:
        return None
    noun = words[i]
    if noun in VALUE_OF_WORD:
        values["shape"] = VALUE_OF_WORD[noun]
    plural = noun in PLURAL_WORDS
    if said is None and shared_none and not adjectives:
        quantity = 0                          # "no cylinder and cube": none of either
    elif said is None or (plural and the):
        quantity = None if plural else 1      # "cubes", "the cubes": any number
    else:
        quantity = said
    if said is None and not adjectives:
        values = {**{k: v for k, v in shared.items() if k != "shape"}, **values}
    return Item(quantity, values), i + 1


def _enumeration(words: list[str], i: int, there: bool) -> Clause | None:
    """The items listed from words[i], joined by commas and "and", up to the first word that is none."""
    first = _item(words, i, {})
    if first is None:
        return None
    items, i = [first[0]], first[1]
    while i < len(words) and words[i] in (",", "and"):
        j = i + 1
        if words[i] == "," and j < len(words) and words[j] == "and":
            j += 1
        nxt = _item(words, j, items[0].values, items[0].quantity == 0)
        if nxt is None:
            break
        items.append(nxt[0])
        i = nxt[1]
    return Clause(tuple(items), i, there)


def _clauses(words: list[str], verbs: frozenset = frozenset({"has", "have"})) -> list[Clause]:
    """The sentence's "there is/are" enumerations; else its subject when one of `verbs` follows it ("No
    things have the same size as a cube.", "The red cube and two spheres have ...") or when it is numbered
    ("The two cubes are red."); "The cube is red." counts nothing, it is about the cube's color."""
    found = []
    for i in range(len(words) - 1):
        if words[i] == "there" and words[i + 1] in ("is", "are", "s", "was", "were", "exist", "exists"):
            clause = _enumeration(words, i + 2, there=True)
            if clause is not None:
                found.append(clause)
    if not found and words:
        clause = _enumeration(words, 0, there=False)
        numbered = _quantity(words[0]) not in (None, 1) or (words[0] == "the" and len(words) > 1
                                                              and _quantity(words[1]) not in (None, 1))
        if clause is not None and clause.end < len(words) and (
                words[clause.end] in verbs or (numbered and words[clause.end] in ("is", "are"))):
            found.append(clause)      # "The two cubes are red." counts two
    return found


def _predicates(words: list[str], start: int, attribute: str, first: bool = False) -> list[tuple[str, bool]]:
    """(value, denied) for every value of `attribute` said after a main "is"/"are" from `start` on
    ("is blue", "is not a cube", "are large"), or after the first one only; "that is"/"which is"
    introduce relations, not values."""
    found = []
    for i in range(start, len(words)):
        if words[i] not in ("is", "are") or (i and words[i - 1] in RELATIVES | {"there"}):
            continue
        j, denied = i + 1, False
        if j < len(words) and words[j] == "not":
            j, denied = j + 1, True
        if j < len(words) and words[j] in ("a", "an"):
            j += 1
        while j < len(words) and words[j] in VALUE_OF_WORD:
            value = VALUE_OF_WORD[words[j]]
            if ATTRIBUTE_OF[value] == attribute:
                found.append((value, denied))
            j += 1
            if j < len(words) - 1 and words[j] == "and" and words[j + 1] in VALUE_OF_WORD:
                j += 1    # "is large and red"
        if first:
            break
    return found


def _denies(words: list[str]) -> bool:
    return bool(DENIALS & set(words))


# --- the rules ----------------------------------------------------------------------------------------

def _check_count(answer: str, sentences: list[list[str]], union: bool) -> AnswerCheck:
    if not answer.isdigit():
        return AnswerCheck("count", None, False, f"answer {answer!r} is not a count")
    clauses = [c for words in sentences for c in _clauses(words)]
    totals = [c.total for c in clauses]
    if not clauses:
        return AnswerCheck("count", False, False, "enumerates no objects")
    if None in totals:
        return AnswerCheck("count", False, False, "enumerates a bare plural: any number")
    n, high = int(answer), sum(totals)
    low = high - _shared_at_most(clauses) if union else high
    said = f"{high} object{'s' * (high != 1)}" if low == high else f"{low} to {high} objects"
    if low <= n <= high:
        return AnswerCheck("count", True, False, f"enumerates {said}")
    return AnswerCheck("count", False, True, f"enumerates {said}, not {n}")


def _compatible(a: Item, b: Item) -> bool:
    """Whether two object phrases can name the same object (no attribute given two values)."""
    return all(b.values.get(attr, value) == value for attr, value in a.values.items())


def _shared_at_most(clauses: list[Clause]) -> int:
    """How many objects the sides of a union can have in common, at most: an object named on two sides
    must fit the phrases of both ("two gray cubes" and "a green cube" share none)."""
    if len(clauses) != 2:
        return sum(c.total for c in clauses) - max(c.total for c in clauses)
    first, second = clauses

    def bound(xs, ys):
        return sum(min(x.quantity, sum(y.quantity for y in ys if _compatible(x, y))) for x in xs)
    return min(bound(first.items, second.items), bound(second.items, first.items))


def _check_exist(answer: str, sentences: list[list[str]]) -> AnswerCheck:
    if answer not in ("yes", "no"):
        return AnswerCheck("exist", None, False, f"answer {answer!r} is not yes/no")
    words = [w for s in sentences for w in s]
    clauses = [c for s in sentences for c in _clauses(s, VERBS)]   # "The sphere is behind the cube." names one
    if _denies(words):
        said, why = "no", "denies (not/nothing/none)"
    elif clauses:
        some = any(c.total is None or c.total > 0 for c in clauses)
        said, why = ("yes", "names an object") if some else ("no", "says there are none")
    else:
        return AnswerCheck("exist", False, False, "neither names nor denies an object")
    return AnswerCheck("exist", said == answer, said != answer, why)


def _subject(words: list[str]) -> tuple[dict, int] | None:
    """The values the sentence's subject is named by, and where its words end: the first object of its
    first "there is" clause, else the sentence's first noun phrase ("The cube left of the sphere")."""
    for i in range(len(words) - 1):
        if words[i] == "there" and words[i + 1] in ("is", "are", "s"):
            clause = _enumeration(words, i + 2, there=True)
            if clause is not None:
                return clause.items[0].values, clause.end
    clause = _enumeration(words, 0, there=False)
    return (clause.items[0].values, clause.end) if clause is not None else None


def _check_query(answer: str, sentences: list[list[str]], attribute: str, most_common: bool) -> AnswerCheck:
    if ATTRIBUTE_OF.get(answer) != attribute:
        return AnswerCheck("query", None, False, f"answer {answer!r} is not a {attribute or 'value'}")
    if most_common:
        return _check_most_common(answer, sentences, attribute)
    # the subject of the first sentence that has one, its first predicate, and what "it" is said to be after
    given, predicated, denied, found = set(), set(), set(), False
    for words in sentences:
        if found and words[0] != "it":
            continue
        subject = (words and words[0] == "it" and found and ({}, 1)) or _subject(words)
        if subject is None:
            continue
        found, (values, end) = True, subject
        if attribute in values:
            given.add(values[attribute])
        for value, no in _predicates(words, end, attribute, first=True):
            (denied if no else predicated).add(value)
    if answer in denied:
        return AnswerCheck("query", False, True, f"denies {answer}")
    others = sorted((predicated | given) - {answer})
    if predicated - {answer}:
        return AnswerCheck("query", False, True, f"says the subject is {', '.join(sorted(predicated - {answer}))}")
    if answer in given | predicated:
        return AnswerCheck("query", True, False, f"says the subject is {answer}")
    if others:
        return AnswerCheck("query", False, True, f"names the subject {', '.join(others)}")
    return AnswerCheck("query", False, False, f"gives the subject no {attribute}")


def _check_most_common(answer: str, sentences: list[list[str]], attribute: str) -> AnswerCheck:
    for words in sentences:
        if words[:1] == ["most"]:
            said = [v for v, no in _predicates(words, 1, attribute) if not no]
            if said:
                return AnswerCheck("query", said[0] == answer, said[0] != answer, f"says most are {said[0]}")
    counts = Counter()
    for words in sentences:
        for clause in _clauses(words):
            for item in clause.items:
                if attribute in item.values:
                    counts[item.values[attribute]] += item.quantity if item.quantity is not None else 2
    if not counts:
        return AnswerCheck("query", False, False, f"counts no {attribute}")
    ranked = counts.most_common()
    top, k = ranked[0]
    if len(ranked) > 1 and ranked[1][1] == k:
        return AnswerCheck("query", False, False, f"counts {top} and {ranked[1][0]} as often")
    return AnswerCheck("query", top == answer, top != answer, f"counts {top} most often ({k})")


def _check_compare(answer: str, sentences: list[list[str]], attribute: str) -> AnswerCheck:
    if answer not in ("yes", "no"):
        return AnswerCheck("compare", None, False, f"answer {answer!r} is not yes/no")
    values = []
    for words in sentences:
        said = [v for v, no in _predicates(words, 0, attribute) if not no]
        if len(said) == 2:
            values += said
            continue
        clauses = [c for c in _clauses(words) if c.there]
        heads = [c.items[0].values.get(attribute) for c in clauses]
        if len(clauses) == 2 and all(heads):
            values += heads
        elif len(clauses) == 1 and heads[0] and len(said) == 1:   # "There is a red cube and the ball is red"
            values += heads + said
    if len(values) == 2:
        verdict = "yes" if values[0] == values[1] else "no"
        return AnswerCheck("compare", verdict == answer, verdict != answer,
                           f"states {values[0]} and {values[1]}: {verdict}")
    words = [w for s in sentences for w in s]
    text = " ".join(words)
    if "different" in words or "not the same" in text:
        verdict = "no"
    elif re.search(rf"\b(same|identical) {attribute}\b|\bboth\b", text) and not _denies(words):
        verdict = "yes"
    else:
        return AnswerCheck("compare", None, False, f"states {len(values)} {attribute} values, not two")
    said = "the same" if verdict == "yes" else "different"
    return AnswerCheck("compare", verdict == answer, verdict != answer, f"says the {attribute}s are {said}")


def _check_compare_integer(answer: str, sentences: list[list[str]], function: str | None) -> AnswerCheck:
    if answer not in ("yes", "no"):
        return AnswerCheck("compare_integer", None, False, f"answer {answer!r} is not yes/no")
    clauses = [c for words in sentences for c in _clauses(words)]
    totals = [c.total for c in clauses]
    if function not in COMPARISONS or len(clauses) != 2 or None in totals:
        return AnswerCheck("compare_integer", None, False, f"enumerates {len(clauses)} sets, not two countable ones")
    verdict = "yes" if COMPARISONS[function](*totals) else "no"
    return AnswerCheck("compare_integer", verdict == answer, verdict != answer,
                       f"counts {totals[0]} and {totals[1]}: {function} is {verdict}")


# --- the interface ------------------------------------------------------------------------------------

def answer_kind(program_end: str | None, answer: str) -> tuple[str, str | None]:
    """(answer type, attribute or comparison function) from the program's last function, else from the
    answer's form."""
    f = program_end or ""
    if f in ("count", "exist"):
        return f, None
    if f.startswith("query_"):
        return "query", f[len("query_"):]
    if f == "most_common":
        return "query", ATTRIBUTE_OF.get(answer)
    if f in COMPARISONS:
        return "compare_integer", f
    if f.startswith("equal_"):
        return "compare", f[len("equal_"):]
    if answer.isdigit():
        return "count", None
    if answer in ATTRIBUTE_OF:
        return "query", ATTRIBUTE_OF[answer]
    return "unknown", None


def check_answer(program_end: str | None, answer: str, explanation: str, union: bool = False) -> AnswerCheck:
    """check_explanation for a known last program function ("count", "query_color", "equal_integer",
    ...; None: read the answer's form). union: the counted set is a union (its sides may overlap)."""
    kind, detail = answer_kind(program_end, answer)
    sentences = _tokens(explanation or "")
    if not sentences:
        return AnswerCheck(kind, None if kind in UNDECIDED_WHEN_SILENT else False, False, "empty explanation")
    if kind == "count":
        return _check_count(answer, sentences, union)
    if kind == "exist":
        return _check_exist(answer, sentences)
    if kind == "query":
        return _check_query(answer, sentences, detail, program_end == "most_common")
    if kind == "compare":
        return _check_compare(answer, sentences, detail)
    if kind == "compare_integer":
        return _check_compare_integer(answer, sentences, detail)
    return AnswerCheck("unknown", None, False, "answer type unknown (question not parsed, answer yes/no)")


def check_explanation(question: str, answer: str, explanation: str) -> AnswerCheck:
    """Whether `explanation` states `answer` to `question`, or another answer of the same type."""
    program = parse_program(question) if question else None
    end = program[-1].function if program else None
    union = bool(program) and end == "count" and any(n.function == "union" for n in program)
    return check_answer(end, answer.strip().lower(), explanation, union)
