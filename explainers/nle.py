"""Natural-language explanations: one sentence on why the agent answered as it did, written by a small
GPT-2 conditioned on the agent's own output (proposals, attention, question embedding), the question
and the answer, in the manner of e-UG (explainers/nle_model.py; trained by `exag train nle`).

    explainer = load_explainer("nle", agent)                 # the model shipped for this agent
    explainer = load_explainer("nle", agent, model="DIR")    # a model trained with `exag train nle`
    [e] = explainer.explain_batch([ExplanationRequest(image, question, output)])
    e.payload   # {"text": "There are two large cylinders left of the red sphere."}

Which shipped model belongs to an agent: a VQAAgent carries no name, and the same agent can be loaded
from a name, its shipped directory or a copy elsewhere. Every NLE model records the fingerprint of
the agent it learned from (its configuration and weights, see agent_fingerprint), and the default is
the shipped model whose fingerprint is the agent's; `agent_name=` picks the model shipped for a named
agent regardless, and `model=` any trained model. An agent with no model of its own gets a clear
error, not explanations learned from another agent's representations.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from vqa_agent.agent import DEFAULT_AGENT

from .base import Explainer, ExplanationRequest
from .nle_model import NLEModel, agent_fingerprint

if TYPE_CHECKING:
    from .agent_interface import Agent

CHECKPOINT_DIR = Path(__file__).parent / "checkpoints"   # NLE models shipped with the package: nle-AGENT
PREFIX = "nle-"
BATCH_SIZE = 64                                          # requests decoded together


def shipped_models() -> dict[str, Path]:
    """Agent name -> directory of the NLE model shipped for it."""
    return {p.name[len(PREFIX):]: p for p in sorted(CHECKPOINT_DIR.glob(PREFIX + "*")) if (p / "config.json").exists()}


def _train_hint(agent: str = "AGENT") -> str:
    return f"train one with `exag train nle --agent {agent} --world WORLD --out DIR` and pass model=DIR"


def resolve_nle_path(agent: Agent, model: str | Path | None = None, agent_name: str | None = None) -> Path:
    """The NLE model directory for `agent`: `model` (a directory, or a shipped model's agent name), else
    the model shipped for `agent_name`, else the shipped model trained on exactly this agent."""
    shipped = shipped_models()
    listing = ", ".join(f"{PREFIX}{name}" for name in shipped) or "none"
    if model is not None:
        path = Path(model)
        if (path / "config.json").exists():
            return path
        name = str(model).removeprefix(PREFIX)
        if name in shipped:
            return shipped[name]
        raise FileNotFoundError(f"no NLE model at {model!r}: not a directory with config.json, nor a shipped model "
                                f"(shipped: {listing})")
    if agent_name is not None:
        name = DEFAULT_AGENT if agent_name == "default" else str(agent_name)
        if name in shipped:
            return shipped[name]
        raise FileNotFoundError(f"no NLE model is shipped for agent {agent_name!r} (shipped: {listing}); "
                                + _train_hint(str(agent_name)))
    fingerprint = agent_fingerprint(agent)
    for path in shipped.values():
        if json.loads((path / "config.json").read_text()).get("agent_fingerprint") == fingerprint:
            return path
    raise FileNotFoundError(f"no shipped NLE model was trained on this agent (shipped: {listing}, each for the agent "
                            f"of its name); " + _train_hint() + ", or pass agent_name=NAME to use the model of a "
                            "shipped agent")


class NLEExplainer(Explainer):
    name = "nle"
    kind = "text"
    # the model reads the agent's output as numbers (nle_model.encode_output) and is matched to the agent
    requires = frozenset({"answer", "question_embedding", "concepts", "proposals", "fingerprint"})

    def __init__(self, agent: Agent, model: str | Path | None = None, agent_name: str | None = None,
                 batch_size: int = BATCH_SIZE) -> None:
        super().__init__(agent)
        self.path = resolve_nle_path(agent, model, agent_name)
        self.model = NLEModel.from_pretrained(self.path, device=agent.device)
        if self.model.config.question_dim != agent.question_dim:
            raise ValueError(f"the NLE model in {self.path} was trained on an agent with {self.model.config.question_dim}"
                             f"-dimensional question embeddings; this agent's are {agent.question_dim}")
        self.batch_size = batch_size

    def payloads(self, requests: list[ExplanationRequest]) -> list[dict]:
        texts = self.model.explain([r.output for r in requests], batch_size=self.batch_size)
        return [{"text": text} for text in texts]
