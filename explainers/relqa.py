"""RelQAs (Ray et al. 2019): questions related to the asked one, answered by the agent on the same image.

    explainer = RelQAExplainer(agent)                # world="data/world", n=5, bank_split="val"
    [explanation] = explainer.explain_batch([ExplanationRequest(image, question, output)])
    explanation.payload == {"pairs": [{"question": "Is there a red block?", "answer": "yes",
                                       "probability": 0.93, "distance": 0.08}, ...]}

The player judges whether the agent is coherent: if it says the big cube is red, does it also say
there is a red block, and count one red thing?

Retrieval. The bank is a split of the world's questions (validation by default, as the paper used VQA
val; the default world's has 10,000, the least accepted by default: MIN_BANK). Texts are compared by
the agent's own question encoder (its LSTM state, `agent.embed_texts`), so "related" means related for
this agent, as in the paper, by cosine distance over question and answer words:
  - the asked question is embedded with the agent's predicted answer, the only answer there is at play
    time (the true one is unknown for a typed question, and must not leak anyway);
  - each bank question is embedded with its ground-truth answer: that is the bank's question-answer
    pair as it was asked of its own image. The alternative, the bare bank question, compares a text
    ending in an answer word with texts that never do, and the encoder's state after that word pulls
    queries toward the same few entries. Measured with the medium agent on 300 test questions (their
    true answers standing in for the agent's), top-5 from the 10,000 val questions:
        question+answer vs question+answer: 62% same question family, 57% same answer, 1351 distinct
        question+answer vs bare question:   27% same family, 22% same answer, 923 distinct
        bare question on both sides:        58% same family, 30% same answer, 1322 distinct
    With answers on both sides, "what color is the cube? red" finds other questions whose answer was
    red and whose words are close, which is what the paper's "question and answer words" asks for.
The bank's answers are never shown: the agent answers each chosen question on the request's image.

Rejected candidates, walking the bank from the nearest: near-paraphrases of the asked question (word
sets, canonicalized, with Jaccard overlap above PARAPHRASE_JACCARD: "are there any red blocks?" for
"is there a red cube?") and near-duplicates of an already chosen question (the same test), so the n
pairs say n different things. The embeddings are precomputed (relqa_index.py), so retrieval is one
matrix product with the [N, hidden] bank; all chosen questions of all requests go to the agent in one
`agent.answer` call.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from vqa_agent.agent import KnownImage, as_rgb_array
from vqa_agent.world.parser import ADJECTIVE_WORDS, NOUN_WORDS, RELATION_WORDS

from .agent_interface import brief_answers
from .base import Explainer, ExplanationRequest
from .relqa_index import RelQAIndex, load_or_build_index
from .word_vectors import tokens

if TYPE_CHECKING:
    from .agent_interface import Agent

DEFAULT_WORLD = Path("data/world")
DEFAULT_N = 5                  # related pairs shown, as in the paper
MIN_BANK = 10_000              # the default bank must be at least this large (pass min_bank= for small worlds)
PARAPHRASE_JACCARD = 0.8       # word-set overlap above which two questions count as the same question
CANDIDATES_PER_PAIR = 20       # nearest bank entries examined per wanted pair before looking further
# Words that change nothing a question asks ("is there a" / "are there any"); question words, relations,
# attribute names and "same"/"other" stay, because they do change it.
FILLER_WORDS = frozenset("a an the any there is are of that which do does you can see visible in on "
                         "image picture scene photo please".split())
_RELATION_PHRASES = sorted(RELATION_WORDS, key=len, reverse=True)   # "to the left of" before "left of"
_SAME_PHRASES = {"what number of": "how many"}


@lru_cache(maxsize=65536)
def question_words(text: str) -> frozenset[str]:
    """The words that say what a question asks, canonicalized: synonyms to the world's values ("big
    ball" -> large sphere), plurals to singular, relation phrases to one word, fillers dropped."""
    joined = " " + " ".join(tokens(text)) + " "
    for phrase, same in _SAME_PHRASES.items():
        joined = joined.replace(f" {phrase} ", f" {same} ")
    for phrase in _RELATION_PHRASES:
        joined = joined.replace(f" {phrase} ", f" {RELATION_WORDS[phrase]} ")
    words = set()
    for word in joined.split():
        if word in FILLER_WORDS:
            continue
        if word in ADJECTIVE_WORDS:
            word = ADJECTIVE_WORDS[word]
        elif word in NOUN_WORDS:
            word = NOUN_WORDS[word][0] or "object"
        words.add(word)
    return frozenset(words)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def is_paraphrase(first: str, second: str) -> bool:
    return jaccard(question_words(first), question_words(second)) > PARAPHRASE_JACCARD


class RelQAExplainer(Explainer):
    name = "relqa"
    kind = "qa_pairs"
    cacheable = True
    requires = frozenset({"answer", "text_embedding", "fingerprint"})

    def __init__(self, agent: Agent, world: str | Path = DEFAULT_WORLD, n: int = DEFAULT_N,
                 bank_split: str = "val", min_bank: int = MIN_BANK, cache_dir: str | Path | None = None,
                 progress: bool = True) -> None:
        super().__init__(agent)
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        self.n = n
        self.index: RelQAIndex = load_or_build_index(agent, world, bank_split, cache_dir, progress)
        if len(self.index) < min_bank:
            raise ValueError(f"the {bank_split!r} bank of {world} has {len(self.index)} questions, fewer than "
                             f"{min_bank}; build a larger world or pass min_bank= to accept it")
        if len(self.index) < n:
            raise ValueError(f"the bank has {len(self.index)} questions, fewer than n={n}")

    def retrieve(self, questions: list[str], answers: list[str]) -> list[list[tuple[int, float]]]:
        """For each asked question and its answer, the n chosen bank entries as (index, cosine distance),
        nearest first."""
        query = self.agent.embed_texts([f"{q} {a}" for q, a in zip(questions, answers)])
        query /= np.maximum(np.linalg.norm(query, axis=1, keepdims=True), 1e-12)
        similarity = query @ self.index.unit.T                       # [requests, N]
        return [self._choose(asked, row) for asked, row in zip(questions, similarity)]

    def _choose(self, asked: str, similarity: np.ndarray) -> list[tuple[int, float]]:
        size = len(similarity)
        wanted = min(size, self.n * CANDIDATES_PER_PAIR)
        nearest = np.argpartition(-similarity, wanted - 1)[:wanted]
        order = nearest[np.argsort(-similarity[nearest], kind="stable")]
        chosen: list[tuple[int, float]] = []
        asked_words = question_words(asked)   # the same text has the same words: Jaccard 1

        def passes():
            yield order
            yield np.argsort(-similarity, kind="stable")     # the whole bank, sorted only if it is needed

        for pass_order in passes():
            for i in pass_order:
                text = self.index.questions[i]
                words = question_words(text)
                if jaccard(words, asked_words) > PARAPHRASE_JACCARD:
                    continue
                if any(i == j or jaccard(words, question_words(self.index.questions[j])) > PARAPHRASE_JACCARD
                       for j, _ in chosen):
                    continue
                chosen.append((int(i), float(1.0 - similarity[i])))
                if len(chosen) == self.n:
                    return chosen
        return chosen   # the bank holds fewer than n distinct questions unlike the asked one

    def payloads(self, requests: list[ExplanationRequest]) -> list[dict]:
        chosen = self.retrieve([r.question for r in requests], [r.output.answer for r in requests])
        images, questions = [], []
        for request, picks in zip(requests, chosen):
            # a pool image (KnownImage) as it is: the agent has looked at it; pixels read once otherwise
            image = request.image if isinstance(request.image, KnownImage) else as_rgb_array(request.image)
            images += [image] * len(picks)
            questions += [self.index.questions[i] for i, _ in picks]
        outputs = brief_answers(self.agent, images, questions) if questions else []
        payloads, start = [], 0
        for picks in chosen:
            answered = outputs[start:start + len(picks)]
            start += len(picks)
            payloads.append({"pairs": [{"question": self.index.questions[i], "answer": out.answer,
                                        "probability": out.probability, "distance": distance}
                                       for (i, distance), out in zip(picks, answered)]})
        return payloads
