"""Words in, ids out: the question vocabulary and the answer vocabulary of an agent.

Players type questions their own way, so a question is read onto the vocabulary before it is encoded:
lower case, contractions expanded, British spellings, filler dropped ("please", "can you tell me"),
CLEVR's synonyms and the singular or plural the vocabulary knows ("balls" -> "spheres", "cubes" ->
"cube"), and a typo corrected when it is close to exactly one known word ("cyllinder" -> "cylinder").
A word still unknown after that is <unk> to the model. `check` refuses a question when such a word is
not English glue ("its", "else") but something the world does not have ("dog"): the agent says so
instead of answering "yes" with confidence.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

PAD, UNK = "<pad>", "<unk>"
MAX_QUESTION_CHARS = 300  # the game refuses longer questions; the agent truncates to max words anyway
_CONTRACTIONS = {"what's": "what is", "whats": "what is", "where's": "where is", "there's": "there is",
                 "theres": "there is", "that's": "that is", "thats": "that is", "it's": "it is",
                 "how's": "how is", "what're": "what are", "there're": "there are", "isn't": "is not",
                 "aren't": "are not", "wasn't": "was not", "weren't": "were not", "don't": "do not",
                 "doesn't": "does not", "didn't": "did not", "hasn't": "has not", "haven't": "have not",
                 "can't": "can not", "cannot": "can not", "couldn't": "could not", "i'd": "i would",
                 "i'm": "i am", "you're": "you are", "let's": "let us"}
_CONTRACTION = re.compile(r"\b(" + "|".join(map(re.escape, _CONTRACTIONS)) + r")\b")
_SPELLING = {"grey": "gray", "colour": "color", "colours": "colors", "coloured": "colored"}

# Said around a question, never part of what it asks. Dropped only when the vocabulary does not know
# every word of the phrase: a world whose own phrasings say "tell me" keeps it.
_POLITE_WORDS = ("please", "pls", "plz", "kindly", "hey", "hi", "hello", "ok", "okay", "so", "um", "uh",
                 "umm", "hmm", "well", "thanks", "thx", "cheers")
_ASKING = ("can you tell me", "could you tell me", "would you tell me", "will you tell me", "tell me",
           "i want to know", "i would like to know", "i wonder", "do you know", "do you think")
_GREETINGS = ("thank you", "hi there", "hey there", "hello there")


def _by_first_word(phrases) -> dict[str, list[tuple[str, ...]]]:
    """First word -> the phrases it starts, longest first (so "tell me if" goes whole, not "tell me")."""
    table: dict[str, list[tuple[str, ...]]] = {}
    for phrase in sorted(phrases, key=len, reverse=True):
        table.setdefault(phrase[0], []).append(phrase)
    return table


_POLITE_PHRASES = _by_first_word((w,) for w in _POLITE_WORDS)
_FILLER_PHRASES = _by_first_word({tuple(p.split()) for p in _ASKING + _GREETINGS} |
                                 {tuple(p.split()) + (w,) for p in _ASKING for w in ("if", "whether")})

# CLEVR's own synonyms and the words players use for the same things: an unknown word reads as the
# first word of its group the vocabulary knows. "one" is no number here ("the red one").
_SYNONYM_GROUPS = [("thing", "object", "item"), ("things", "objects", "items"), ("sphere", "ball"),
                   ("spheres", "balls"), ("cube", "block", "box"), ("cubes", "blocks", "boxes"),
                   ("large", "big"), ("small", "tiny", "little"), ("metal", "metallic", "shiny"),
                   ("rubber", "matte"), ("image", "picture", "photo", "photograph", "pic", "scene"),
                   ("0", "zero"), ("2", "two"), ("3", "three"), ("4", "four"), ("5", "five"), ("6", "six"),
                   ("7", "seven"), ("8", "eight"), ("9", "nine"), ("10", "ten")]
_SYNONYMS = {w: tuple(o for o in group if o != w) for group in _SYNONYM_GROUPS for w in group}

# English glue: a question may use these even where the vocabulary lacks them (they become <unk>), and
# they never make it a question about something outside the world. Things, colors, relations and
# question words the world does not have ("dog", "pink", "above", "why") are not here on purpose.
FUNCTION_WORDS = frozenset("""
    a an the this that these those it its itself they them their there here 's
    is are was were be been being am has have had do does did can could would should will shall may might must
    of in on at to from by with for as than into onto about
    and or but not no nor
    what which how many much whether if
    any some all each every both either neither none other others another anything something everything
    nothing else one ones
    i me my we us our you your
    just also too very really exactly total altogether overall visible shown
""".split())

ENGLISH_ONLY = "I only understand English questions about the objects in the images"
WORLD_SCOPE = ("I can only answer questions about the cubes, spheres and cylinders in these images: "
               "their color, size, material, position and how many there are.")


class QuestionError(ValueError):
    """A question the agent cannot take (not text, empty, not English, or about things outside its world)."""


def outside_world_message(words: list[str], suggestions: dict[str, list[str]] | None = None) -> str:
    """The player's message for a question with words outside the world, each named, with what the
    agent might have read instead where a typo was too close to call:
    "I don't know the word 'dog'. I can only answer questions about the cubes, ..."."""
    suggestions = suggestions or {}
    named = [f"'{w}'" + (f" (did you mean {_either(suggestions[w])}?)" if suggestions.get(w) else "")
             for w in words]
    listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    return f"I don't know the word{'s' if len(words) > 1 else ''} {listed}. {WORLD_SCOPE}"


def _either(words: list[str]) -> str:
    quoted = [f"'{w}'" for w in words]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _foreign_letters(text: str) -> bool:
    """Letters of another script (Cyrillic, Han, Greek, ...): accented Latin letters are still English-ish."""
    return any(c.isalpha() and not c.isascii() and not unicodedata.name(c, "").startswith("LATIN") for c in text)


def normalize(text) -> list[str]:
    """Lower-case words, punctuation dropped, contractions expanded, British spellings made American, a
    possessive "'s" split off ("the cube's color" -> the cube 's color)."""
    if not isinstance(text, str):
        raise QuestionError(f"a question must be text, got {type(text).__name__}")
    text = text.lower()[: MAX_QUESTION_CHARS * 4]
    text = _CONTRACTION.sub(lambda m: _CONTRACTIONS[m.group(1)], text.replace("\u2019", "'"))
    text = re.sub(r"'s\b", " 's", text)
    words = re.findall(r"[a-z0-9']+", text)
    words = [_SPELLING.get(w, w) for w in words if w.strip("'")]
    if not words:
        raise QuestionError("the question is empty")
    return words


def _other_number_forms(word: str) -> list[str]:
    """The word's plural if it is singular and the reverse, by English spelling rules (cubes -> cube,
    boxes -> box, cube -> cubes); candidates only, the vocabulary says which one exists."""
    if not word.isalpha() or len(word) < 3:
        return []
    singular = ([word[:-3] + "y"] if word.endswith("ies") else []) + \
               ([word[:-2]] if word.endswith("es") else []) + \
               ([word[:-1]] if word.endswith("s") and not word.endswith("ss") else [])
    plural = [word + "s", word + "es"] + ([word[:-1] + "ies"] if word.endswith("y") else [])
    return singular + plural


def edit_distance(a: str, b: str) -> int:
    """Damerau-Levenshtein distance (optimal string alignment): insertions, deletions, substitutions and
    swaps of two neighbouring letters ("spehre" -> "sphere" is 1)."""
    previous, row = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        before, previous, row = previous, row, [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], before[j - 2] + 1)
    return row[-1]


def _typo_limit(word: str) -> int:
    """How many edits a typo may be from the word meant: none for short words and numbers (too many
    words are one edit from "red" or "3"), 1 from 4 letters, 2 from 7."""
    if not word.isalpha() or len(word) < 4:
        return 0
    return 1 if len(word) < 7 else 2


@dataclass
class Vocabulary:
    words: list[str]      # index -> word; 0 is <pad>, 1 is <unk>
    answers: list[str]    # index -> answer
    # words of the world's language with no embedding (only in held-out phrasings, or rare): <unk> to
    # the model unless a synonym or plural is known, never "corrected" as a typo, not outside the world
    world_words: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.word_index = {w: i for i, w in enumerate(self.words)}
        self.answer_index = {a: i for i, a in enumerate(self.answers)}
        self._world_words = set(self.world_words) - set(self.words)
        self._typo_targets = sorted(set(self.words[2:]) | self._world_words)   # what a typo may be meant as
        self._in_world = set(self.words) | self._world_words | FUNCTION_WORDS  # words no refusal names
        self._readings: dict[str, str] = {}          # typed word -> the word read (a cache: reading is pure)

    @classmethod
    def build(cls, questions: list[str], answers: list[str], min_count: int = 1,
              world_questions: Iterable[str] = ()) -> "Vocabulary":
        """`questions`: the training questions (their words get embeddings); `world_questions`: every
        question the world asks, held-out phrasings included. Words of either that get no embedding
        (rarer than min_count, or never in training) become world_words."""
        counts = Counter(w for q in questions for w in normalize(q))
        words = [PAD, UNK] + sorted(w for w, c in counts.items() if c >= min_count)
        spoken = set(counts) | {w for q in world_questions for w in normalize(q)}
        return cls(words=words, answers=sorted(set(answers)), world_words=sorted(spoken - set(words)))

    # --- reading a question ----------------------------------------------------------------------

    def _typed(self, question) -> list[str]:
        """The normalized words without filler (none left for "thank you"): single polite words first,
        so that "could you please tell me" is then one whole phrase."""
        words = self._drop_filler(normalize(question), _POLITE_PHRASES)
        return self._drop_filler(words, _FILLER_PHRASES)

    def _drop_filler(self, words: list[str], phrases: dict[str, list[tuple[str, ...]]]) -> list[str]:
        if not any(w in phrases for w in words):      # most questions: nothing to look at
            return words
        kept, i = [], 0
        while i < len(words):
            phrase = next((p for p in phrases.get(words[i], ()) if tuple(words[i:i + len(p)]) == p
                           and not all(w in self.word_index for w in p)), None)
            if phrase:
                i += len(phrase)
            else:
                kept.append(words[i])
                i += 1
        return kept

    def _nearest(self, word: str) -> list[str]:
        """The known words at the smallest edit distance from `word`, within its typo limit."""
        limit = _typo_limit(word)
        if not limit:
            return []
        distances = {t: edit_distance(word, t) for t in self._typo_targets if abs(len(t) - len(word)) <= limit}
        best = min(distances.values(), default=limit + 1)
        return [t for t, d in distances.items() if d == best] if best <= limit else []

    def _read_word(self, word: str) -> str:
        if word not in self._readings:
            if len(self._readings) > 100_000:       # players can type anything: the cache stays bounded
                self._readings.clear()
            self._readings[word] = self._reading(word)
        return self._readings[word]

    def _known_synonym(self, word: str) -> str | None:
        """The word itself if the vocabulary knows it, else the first synonym it knows."""
        return next((s for s in (word,) + _SYNONYMS.get(word, ()) if s in self.word_index), None)

    def _reading(self, word: str) -> str:
        """The known word a typed word stands for, or the word itself: a synonym; then (not for glue like
        "its") the other grammatical number or its synonym ("boxes" -> "cube"); then (not for a word of
        the world's own language) the one nearest known word of a typo."""
        synonym = self._known_synonym(word)
        if synonym or word in FUNCTION_WORDS:
            return synonym or word
        form = next(filter(None, map(self._known_synonym, _other_number_forms(word))), None)
        if form or word in self._world_words:
            return form or word
        nearest = self._nearest(word)
        return nearest[0] if len(nearest) == 1 else word

    def read(self, question: str) -> list[str]:
        """The words the agent sees, in order: filler dropped, each word as the vocabulary knows it
        (synonym, singular or plural, corrected typo) or, when it knows none, as typed (<unk> to it)."""
        return [self._read_word(w) for w in self._typed(question)]

    def corrections(self, question: str) -> dict[str, str]:
        """Typed word -> the word read instead, for each word read differently ("cyllinder" -> "cylinder")."""
        return {t: r for t, r in zip(self._typed(question), self.read(question)) if t != r}

    def encode(self, question: str, max_words: int) -> list[int]:
        """Word ids of the question as read, cut to its first max_words (they say what kind of question it
        is); a question of filler only is one <unk>."""
        return [self.word_index.get(w, 1) for w in self.read(question)][:max_words] or [1]

    def unknown_words(self, question: str) -> list[str]:
        """Typed words (filler aside) the vocabulary does not know as typed, whether read as another word
        or left unknown."""
        return [w for w in self._typed(question) if w not in self.word_index]

    def outside_words(self, question: str) -> list[str]:
        """Words that, even read as well as possible, name nothing in the world: neither a word the
        agent knows, a word of the world's language, nor English glue. Each once, in order."""
        return list(dict.fromkeys(w for w in self.read(question) if w not in self._in_world))

    def check(self, question) -> None:
        """Raises QuestionError with an honest message for a question this agent must not answer: not text,
        words of another script, not one word it knows (ENGLISH_ONLY), or words outside its world
        (outside_world_message). Run before a question joins a batch."""
        if isinstance(question, str) and _foreign_letters(question):
            raise QuestionError(ENGLISH_ONLY)
        try:
            words = self.read(question)
        except QuestionError as error:
            raise QuestionError(ENGLISH_ONLY if isinstance(question, str) else str(error)) from None
        if not any(w in self.word_index for w in words):
            raise QuestionError(ENGLISH_ONLY)
        outside = self.outside_words(question)
        if outside:
            raise QuestionError(outside_world_message(outside, {w: self._nearest(w)[:3] for w in outside}))

    # --- persistence -----------------------------------------------------------------------------

    def to_dict(self) -> dict:
        return {"words": self.words, "answers": self.answers, "world_words": self.world_words}

    @classmethod
    def from_dict(cls, data: dict) -> "Vocabulary":
        """Reads today's files and those written before `world_words` existed."""
        return cls(words=list(data["words"]), answers=list(data["answers"]),
                   world_words=list(data.get("world_words", [])))
