"""Words in, ids out: the question vocabulary and the answer vocabulary of an agent.

Questions are normalized the way players type them (case, punctuation, contractions, "grey") and
words outside the vocabulary map to <unk>, so a typo degrades an answer instead of crashing it.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

PAD, UNK = "<pad>", "<unk>"
MAX_QUESTION_CHARS = 300  # the game refuses longer questions; the agent truncates to max words anyway
_CONTRACTIONS = {"what's": "what is", "where's": "where is", "there's": "there is", "isn't": "is not",
                 "aren't": "are not", "don't": "do not", "doesn't": "does not", "it's": "it is"}
_SPELLING = {"grey": "gray", "colour": "color", "colours": "colors"}


ENGLISH_ONLY = "I only understand English questions about the objects in the images"


class QuestionError(ValueError):
    """A question the agent cannot take (not text, or empty after normalization)."""


def _foreign_letters(text: str) -> bool:
    """Letters of another script (Cyrillic, Han, Greek, ...): accented Latin letters are still English-ish."""
    return any(c.isalpha() and not c.isascii() and not unicodedata.name(c, "").startswith("LATIN") for c in text)


def normalize(text) -> list[str]:
    if not isinstance(text, str):
        raise QuestionError(f"a question must be text, got {type(text).__name__}")
    text = text.lower()[: MAX_QUESTION_CHARS * 4]
    text = re.sub(r"\b(" + "|".join(map(re.escape, _CONTRACTIONS)) + r")\b",
                  lambda m: _CONTRACTIONS[m.group(1)], text.replace("\u2019", "'"))
    text = re.sub(r"'s\b", " 's", text)
    words = re.findall(r"[a-z0-9']+", text)
    words = [_SPELLING.get(w, w) for w in words if w.strip("'")]
    if not words:
        raise QuestionError("the question is empty")
    return words


@dataclass
class Vocabulary:
    words: list[str]      # index -> word; 0 is <pad>, 1 is <unk>
    answers: list[str]    # index -> answer

    def __post_init__(self) -> None:
        self.word_index = {w: i for i, w in enumerate(self.words)}
        self.answer_index = {a: i for i, a in enumerate(self.answers)}

    @classmethod
    def build(cls, questions: list[str], answers: list[str], min_count: int = 1) -> "Vocabulary":
        counts = Counter(w for q in questions for w in normalize(q))
        words = [PAD, UNK] + sorted(w for w, c in counts.items() if c >= min_count)
        return cls(words=words, answers=sorted(set(answers)))

    def encode(self, question: str, max_words: int) -> list[int]:
        """Word ids of a question, cut to its first max_words (they say what kind of question it is)."""
        return [self.word_index.get(w, 1) for w in normalize(question)][:max_words]

    def check(self, question) -> None:
        """Raises QuestionError with an honest message for a question this agent cannot read at all: no
        words, words of another script, or not one word it knows. Run before a question joins a batch."""
        if isinstance(question, str) and _foreign_letters(question):
            raise QuestionError(ENGLISH_ONLY)
        try:
            words = normalize(question)
        except QuestionError as error:
            raise QuestionError(ENGLISH_ONLY if isinstance(question, str) else str(error)) from None
        if not any(w in self.word_index for w in words):
            raise QuestionError(ENGLISH_ONLY)

    def unknown_words(self, question: str) -> list[str]:
        return [w for w in normalize(question) if w not in self.word_index]

    def to_dict(self) -> dict:
        return {"words": self.words, "answers": self.answers}

    @classmethod
    def from_dict(cls, data: dict) -> "Vocabulary":
        return cls(words=list(data["words"]), answers=list(data["answers"]))
