"""An example ExAG explainer plugin: `topk`, the answers the agent weighed besides its own."""
from .explainer import TopKExplainer

__all__ = ["TopKExplainer"]
