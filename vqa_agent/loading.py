"""One way to load any agent by the name a study, a worker or a command gives it.

    agent = load_agent("default")                  # a shipped agent, or a checkpoint directory: VQAAgent
    agent = load_agent("hf:/models/vilt-vqa")      # a transformers VQA model directory: HFVQAAgent

Both answer what the game and the explainers ask of an agent (explainers/agent_interface.py).
"""
from __future__ import annotations

from .checkpoints import is_hf_agent


def load_agent(name_or_path, device: str = "auto"):
    """HFVQAAgent for "hf:PATH", VQAAgent.from_pretrained for anything else."""
    if is_hf_agent(str(name_or_path)):
        from .hf_agent import HFVQAAgent
        return HFVQAAgent(name_or_path, device=device)
    from .agent import VQAAgent
    return VQAAgent.from_pretrained(name_or_path, device=device)
