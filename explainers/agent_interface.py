"""What an explainer may ask of an agent: the `Agent` protocol, and the capabilities an explainer declares.

An explainer is constructed with an agent and afterwards sees only this: the agent's `answer` (and what
an AgentOutput carries), its question encoder (`embed_texts`, `question_dim`), its `fingerprint` and the
`device` its own models should run on. Nothing reaches past it into the agent's modules, config or
vocabulary, so any agent that implements the protocol (VQAAgent, or an adapter for an agent trained
elsewhere) can be explained by every explainer whose capabilities it has.

Each explainer class declares what it uses in `requires` (names from CAPABILITIES). An agent may say
which capabilities it has in a `capabilities` attribute (an adapter that produces no proposals leaves
"proposals" out); an agent that does not say is taken to have every capability whose members it has.
`missing_capabilities` compares the two when an explainer is loaded (explainers/registry.py), so an
explainer that needs what the agent cannot give is refused with a message, not failed at play time.

Torch-free: explainer classes, the web process and third-party plugins import it without torch.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

    from vqa_agent.agent import AgentOutput

# capability -> what it gives an explainer (docs/writing-an-explainer.md lists the same)
CAPABILITIES: dict[str, str] = {
    "answer": "agent.answer(images, questions): each AgentOutput's answer, probability and top_k "
              "alternatives; explainers may ask the agent further questions",
    "attention": "AgentOutput.spatial_attention: a grid over the image of where the answer's evidence lies (the heatmap)",
    "proposals": "AgentOutput.proposals: object boxes and masks (from pixels) with their attention weights and "
                 "predicted attributes",
    "concepts": "AgentOutput.concept_probabilities: p(word | image) for the object and scene words",
    "question_embedding": "AgentOutput.question_embedding and agent.question_dim, its size",
    "text_embedding": "agent.embed_texts(texts): the agent's question encoder on any text",
    "fingerprint": "agent.fingerprint(): identifies the agent's configuration and weights",
}
# the agent members a capability needs (the rest are carried by AgentOutput)
MEMBERS: dict[str, tuple[str, ...]] = {
    "answer": ("answer",),
    "question_embedding": ("question_dim",),
    "text_embedding": ("embed_texts",),
    "fingerprint": ("fingerprint",),
}


@runtime_checkable
class Agent(Protocol):
    """Everything an explainer may use of an agent."""

    device: Any   # where an explainer puts its own models ("cpu", "cuda" or a torch.device)

    def answer(self, images: Sequence, questions: Sequence[str]) -> list[AgentOutput]:
        """questions[i] about images[i] (one question is asked of every image), batched."""
        ...

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """[len(texts), question_dim] float32: the question encoder's vector of each text."""
        ...

    @property
    def question_dim(self) -> int:
        """The size of a question embedding (AgentOutput.question_embedding, embed_texts)."""
        ...

    def fingerprint(self) -> str:
        """A hash of the agent's configuration and weights, the same wherever it was loaded from."""
        ...


def brief_answers(agent, images: Sequence, questions: Sequence[str]) -> list[AgentOutput]:
    """`agent.answer` for a caller that reads only each output's answer, probability, top_k and answered_by
    (an explainer asking further questions): an agent that says it can (`answers_briefly`, VQAAgent) then
    leaves out what costs most and nobody reads (each proposal's mask; for a question its program answers,
    the network's reasoning, so top_k holds the program's answer alone); any other agent answers in full."""
    if getattr(agent, "answers_briefly", False):
        return agent.answer(images, questions, brief=True)
    return agent.answer(images, questions)


def agent_capabilities(agent) -> frozenset[str]:
    """What `agent` can give: its declared `capabilities`, else every capability whose members it has."""
    declared = getattr(agent, "capabilities", None)
    if declared is not None:
        return frozenset(declared)
    return frozenset(c for c in CAPABILITIES if all(hasattr(agent, m) for m in MEMBERS.get(c, ())))


def missing_capabilities(agent, required) -> list[str]:
    """The capabilities in `required` that `agent` lacks, in the order of CAPABILITIES."""
    have = agent_capabilities(agent)
    return [c for c in CAPABILITIES if c in set(required) and c not in have]


def unknown_capabilities(required) -> list[str]:
    return sorted(set(required) - set(CAPABILITIES))
