"""The NLE explainer's last resort: the question's own subject with the answer, and nothing else.

When neither a generated sentence nor the traced one passes the answer check, the explainer shows a
sentence built from the question's program and the answer alone, in CLEVR-X's forms:

    "There is a metal sphere that is the same size as the red cylinder; what color is it?" -> yellow
    -> "There is a yellow metal sphere that has the same size as a red cylinder."
    "How many cubes are made of the same material as the green cylinder?" -> 2
    -> "There are two cubes that have the same material as a green cylinder."
    "Are there any rubber things left of the cube?" -> no  ->  "There are no rubber things left of the cube."

It says no more than the question and the answer do (no attribute the agent was not asked about, no
object the question does not name), so it cannot contradict the answer; it is a restatement, not
evidence, and the event log says so (source "template"). Questions whose answer needs two facts
(comparisons), unions and intersections, and questions that do not parse get "The answer is X.".

Words: each value in the word the question uses in that noun phrase ("shiny", "block"), the answer in
CLEVR's word.
"""
from __future__ import annotations

from vqa_agent.world.explanations import ADJECTIVE_ATTRIBUTES, NUMBER_WORDS, QuestionWords
from vqa_agent.world.parser import parse_program
from vqa_agent.world.programs import Node, Program
from vqa_agent.world.questions import PLURALS, RELATION_PHRASES
from vqa_agent.world.scene import ATTRIBUTES


class _Unsaid(Exception):
    """The program has a shape this template does not write (a union, a comparison), or the answer is of
    another kind than the question asks for."""


def template(question: str, answer: str) -> str:
    """The sentence for `answer` to `question`: the subject with the answer, else "The answer is X."."""
    program = parse_program(question)
    if program is not None:
        try:
            sentence = _sentence(program, answer, QuestionWords.read(question))
            return sentence[0].upper() + sentence[1:] + "."
        except _Unsaid:
            pass
    return answer_only(answer)


def answer_only(answer: str) -> str:
    return f"The answer is {answer}."


def _sentence(program: Program, answer: str, words: QuestionWords) -> str:
    last = program[-1]
    if last.function.startswith("query_"):
        attr = last.function[len("query_"):]
        if answer not in ATTRIBUTES.get(attr, ()):   # an answer of another kind is not written into the phrase
            raise _Unsaid(answer)
        return "there is " + _phrase(program, last.inputs[0], words, "a", extra={attr: answer})
    if last.function == "count" and answer.isdigit():
        n = int(answer)
        if n == 1:
            return "there is " + _phrase(program, last.inputs[0], words, "a")
        article = NUMBER_WORDS[n] if n < len(NUMBER_WORDS) else answer
        return "there are " + _phrase(program, last.inputs[0], words, article, plural=True)
    if last.function == "exist" and answer in ("yes", "no"):
        if answer == "yes":
            return "there is " + _phrase(program, last.inputs[0], words, "a")
        return "there are " + _phrase(program, last.inputs[0], words, "no", plural=True)
    raise _Unsaid(last.function)


def _phrase(program: Program, i: int, words: QuestionWords, article: str, plural: bool = False,
            extra: dict[str, str] | None = None, inner: bool = False) -> str:
    """The set or object that node i stands for: "a yellow metal sphere that has the same size as a red
    cylinder". `extra` adds values the question does not say (the answer), in CLEVR's words."""
    values: dict[str, str] = {}
    node = program[i]
    while node.function.startswith("filter_") or node.function == "unique":
        if node.function.startswith("filter_"):
            values.setdefault(node.function[len("filter_"):], node.value_inputs[0])
        node = program[node.inputs[0]]
    link = _link(program, node, words, plural, inner)
    in_phrase = words.phrase(values.values())
    said = {a: in_phrase.get(v) or (words.values.get(v) or (v,))[0] for a, v in values.items()}
    said.update(extra or {})
    noun = said.get("shape", "thing")
    noun = PLURALS.get(noun, noun + "s") if plural else noun
    head = " ".join([said[a] for a in ADJECTIVE_ATTRIBUTES if a in said] + [noun])
    if article == "a":
        article = "an" if head[0] in "aeiou" else "a"
    return f"{article} {head}{link}"


def _link(program: Program, node: Node, words: QuestionWords, plural: bool, inner: bool) -> str:
    """How the set was reached: "", " that is left of the cube", " that has the same color as a cube".
    Links inside a link drop "that is", as CLEVR's chains do ("left of the cube in front of the ball"):
    a chain that repeats "thing that is" would read as a loop."""
    if node.function == "scene":
        return ""
    verb = "are" if plural else "is"
    if node.function == "relate":
        relation = (words.relations.get(node.value_inputs[0]) or RELATION_PHRASES[node.value_inputs[0]])[0]
        return (" " if inner else f" that {verb} ") + relation + " " + \
            _phrase(program, node.inputs[0], words, "the", inner=True)
    if node.function.startswith("same_"):
        attr = node.function[len("same_"):]
        has = "have" if plural else "has"
        return f" that {has} the same {attr} as " + _phrase(program, node.inputs[0], words, "a", inner=True)
    raise _Unsaid(node.function)
