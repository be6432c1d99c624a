"""What a participant can tell from an image as it perceives it (a Scene, game/perception.py): which
objects have some attributes, what a question's answer is there. The kinds' readings use them to check
an explanation against the image, as the paper's players did."""
from __future__ import annotations

from functools import lru_cache

from vqa_agent.world.parser import Unparseable, parse, parse_program
from vqa_agent.world.programs import IllPosed, ProgramError, execute
from vqa_agent.world.questions import ADJECTIVES, NOUNS, PLURALS, Question
from vqa_agent.world.scene import ATTRIBUTES, Scene

ATTRIBUTE_OF = {value: name for name, values in ATTRIBUTES.items() for value in values}
WORD_VALUE = {word: value for value, words in ADJECTIVES.items() for word in words}
NOUN_VALUE = {word: value for value, words in NOUNS.items() for word in words}
NOUN_VALUE |= {PLURALS[word]: value for word, value in list(NOUN_VALUE.items()) if word in PLURALS}


def matching(scene: Scene, attrs: dict[str, str]) -> list[int]:
    """Objects of the scene with all these attribute values."""
    return [i for i, o in enumerate(scene.objects) if all(o.attribute(a) == v for a, v in attrs.items())]


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
