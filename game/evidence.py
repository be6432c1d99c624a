"""What a participant can check in an explanation with its own eyes, as numbers a belief update can use.

Each kind of explanation is read by its own module (explainers/kinds/: a kind's `reading`), exactly as
the page receives it (boxes in image pixels, weights and probabilities in whole percent, sentences), and
compared with the participant's perceived scene of that image:

- attention: how much of the agent's object attention lies on objects the question is about, and
  whether it looked at each of them;
- qa_pairs (RelQAs): the share of related answers that agree with what the participant sees;
- words (ObjScene) and text (NLE, introspect): the share of stated facts ("red", "a large sphere") that
  hold in the image.

`agreement` turns any of them into one score in [-1, 1] (1: the explanation shows the agent saw this
image right, -1: it shows the agent got it wrong, 0: nothing to check). The paper's players used
explanations this way: to judge whether this round's answer can be trusted. The other names are the
kinds' own readings, kept here for the simulated participant (game/participant.py).
"""
from __future__ import annotations

from explainers.kinds import reading
from explainers.kinds.attention import attention_on_target
from explainers.kinds.coherence import EVERYTHING, ZERO, coherent, consistent, count_facts
from explainers.kinds.qa_pairs import qa_agreement, qa_coherence
from explainers.kinds.seen import ATTRIBUTE_OF, NOUN_VALUE, WORD_VALUE, answer_on, matching, question_of
from explainers.kinds.text import facts_hold
from explainers.kinds.words import PRESENT, words_hold
from vqa_agent.world.scene import Scene


def agreement(explanation: dict, scene: Scene, targets: list[dict[str, str]]) -> float | None:
    """One explanation (as the page gets it) against the perceived scene: a score in [-1, 1], or None
    when it offers nothing the participant can check."""
    share = reading(explanation, scene, targets)
    return None if share is None else 2.0 * share - 1.0


__all__ = ["ATTRIBUTE_OF", "EVERYTHING", "NOUN_VALUE", "PRESENT", "WORD_VALUE", "ZERO", "agreement", "answer_on",
           "attention_on_target", "coherent", "consistent", "count_facts", "facts_hold", "matching", "qa_agreement",
           "qa_coherence", "question_of", "words_hold"]
