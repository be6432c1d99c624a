"""ObjScene (Ray et al. 2019): the object and scene words most relevant to the agent's answer.

    explainer = ObjSceneExplainer(agent)                     # vectors=..., k=...
    [explanation] = explainer.explain_batch([ExplanationRequest(image, question, output)])
    explanation.payload == {"words": [{"word": "red", "score": 0.0012, "probability": 0.97,
                                       "distance": 0.001}, ...],
                            "anchor": ["red"], "basis": "answer"}

Relevance of a word O, lower = more relevant:

    S(O) = dist(O, A) / p(O | I)

dist is the Word2Vec cosine distance (1 - cosine similarity) between O and the answer A; p(O | I) is
the agent's probability that O is in the image (`AgentOutput.concept_probabilities`: the shapes,
colors, sizes and materials its image encoder reads from the object proposals). A word is relevant
when it is both close in meaning to the answer and seen in the image. Two floors keep S defined and
honest: p is floored at MIN_PROBABILITY (a word the agent does not see at all gets a huge score, never
a division by zero), and dist at MIN_DISTANCE, so that the answer word itself (distance 0) cannot rank
first by its name alone when the agent does not see it: 0 / p would be 0 for any p, even p ~ 0.

What A is. The answer's own vector is used when the answer is a content word the vectors know ("red",
"cube", "metal"). Yes/no and number answers say nothing about which objects matter: their vectors
encode the *kind* of question ("yes" is nearest to "no", "can", "does"; "3" to "2", "4"), so distances
to object words would be the same noise for every question. For them, and for answers missing from the
vectors, A is the mean of the unit vectors of the question's object words (the world's adjectives and
shape nouns, canonicalized: "big ball" -> large, sphere): for "is there a big red ball?" -> yes, the
words near "large", "red" and "sphere" that the agent sees are what the yes rests on (and for "no",
the low p of those words is what shows). The answer word is left out of that mean for the same reason
it is not used alone. If the question names no object word, its other content words (not STOPWORDS)
are used; if none is in the vectors either, every distance is 1 and the ranking is by p(O|I) alone.
The payload says which words formed A ("anchor") and why ("basis": answer, question or none).
"""
from __future__ import annotations

import re
from pathlib import Path

from typing import TYPE_CHECKING

import numpy as np

from vqa_agent.world.parser import ADJECTIVE_WORDS, NOUN_WORDS

from .base import Explainer, ExplanationRequest
from .word_vectors import load_word_vectors, tokens

if TYPE_CHECKING:
    from .agent_interface import Agent

DEFAULT_K = 5                 # words shown, as in the paper's interface
MIN_PROBABILITY = 1e-6        # floor of p(O|I) in S(O)
MIN_DISTANCE = 1e-3           # floor of dist(O, A) in S(O)
UNINFORMATIVE_DISTANCE = 1.0  # dist when no anchor word is known: cosine distance of orthogonal vectors
YES_NO = frozenset({"yes", "no"})
NUMBER = re.compile(r"^\d+$")
STOPWORDS = frozenset("""
a an the is are was were be been do does did can could there here it its this that these those which
what who whom whose how many much any some all of in on at to by for with from as than and or not no
yes you your i me my we see visible image picture scene photo thing things object objects item items
one ones kind type have has same other else number either both
""".split())


def object_word(word: str) -> str | None:
    """The canonical attribute value or shape a question word names ("big" -> large, "balls" -> sphere),
    None for other words (including "thing"/"object", which name no particular kind of object)."""
    if word in ADJECTIVE_WORDS:
        return ADJECTIVE_WORDS[word]
    if word in NOUN_WORDS:
        return NOUN_WORDS[word][0]
    return None


class ObjSceneExplainer(Explainer):
    name = "objscene"
    kind = "words"
    cacheable = True
    requires = frozenset({"answer", "concepts"})

    def __init__(self, agent: Agent, vectors: str | Path | None = None, k: int = DEFAULT_K) -> None:
        super().__init__(agent)
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        self.k = k
        self.vectors = load_word_vectors(vectors)
        self._unit: dict[str, np.ndarray] = {}

    def unit(self, word: str) -> np.ndarray:
        if word not in self._unit:
            self._unit[word] = np.asarray(self.vectors.get_vector(word, norm=True), np.float64)
        return self._unit[word]

    def known(self, word: str) -> bool:
        return word in self.vectors.key_to_index

    def anchor(self, question: str, answer: str) -> tuple[list[str], str]:
        """The words whose mean vector stands for the answer A, and which rule chose them."""
        answer_words = [w for w in tokens(answer)
                        if self.known(w) and w not in YES_NO and not NUMBER.match(w) and w not in STOPWORDS]
        if answer_words:
            return answer_words, "answer"
        words = tokens(question)
        named = list(dict.fromkeys(o for o in map(object_word, words) if o is not None and self.known(o)))
        if named:
            return named, "question"
        content = list(dict.fromkeys(w for w in words if w not in STOPWORDS and not NUMBER.match(w) and self.known(w)))
        if content:
            return content, "question"
        return [], "none"

    def rank(self, anchor: list[str], concept_probabilities: dict[str, float]) -> list[dict]:
        """Every known word with its S(O), most relevant first (ties broken by the word)."""
        if anchor:
            target = np.mean([self.unit(w) for w in anchor], axis=0)
            target /= max(np.linalg.norm(target), 1e-12)
        rows = []
        for word, probability in concept_probabilities.items():
            if not self.known(word):
                continue
            distance = float(1.0 - self.unit(word) @ target) if anchor else UNINFORMATIVE_DISTANCE
            distance = max(distance, 0.0)  # rounding can make 1 - cos slightly negative
            score = max(distance, MIN_DISTANCE) / max(float(probability), MIN_PROBABILITY)
            rows.append({"word": word, "score": score, "probability": float(probability), "distance": distance})
        rows.sort(key=lambda row: (row["score"], row["word"]))
        return rows

    def payloads(self, requests: list[ExplanationRequest]) -> list[dict]:
        payloads = []
        for request in requests:
            anchor, basis = self.anchor(request.question, request.output.answer)
            ranked = self.rank(anchor, request.output.concept_probabilities)
            payloads.append({"words": ranked[: self.k], "anchor": anchor, "basis": basis})
        return payloads
