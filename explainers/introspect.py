"""An explanation stated only from what the agent itself used: the objects it attended to most (until
most of the attention is covered) and its own attribute predictions for them. Unlike `nle`, which is a
separate model trained to sound like the references, this one cannot say anything the agent did not
compute, which is what the faithfulness tests contrast."""
from __future__ import annotations

from .base import Explainer, ExplanationRequest

MAX_OBJECTS = 3
COVERED_ATTENTION = 0.8   # list attended objects until this share of the attention is covered
MIN_WEIGHT = 0.05         # objects with less attention than this are never mentioned


def describe(attributes: dict[str, tuple[str, float]]) -> str:
    return " ".join(attributes[a][0] for a in ("size", "color", "material", "shape"))


class IntrospectExplainer(Explainer):
    name = "introspect"
    kind = "text"
    cacheable = True
    requires = frozenset({"answer", "proposals"})

    def payloads(self, requests: list[ExplanationRequest]) -> list[dict]:
        return [introspect_payload(r.output) for r in requests]


def introspect_payload(output) -> dict:
    ranked = sorted(enumerate(output.proposals), key=lambda item: -item[1].attention)
    chosen, covered = [], 0.0
    for index, proposal in ranked[:MAX_OBJECTS]:
        if proposal.attention < MIN_WEIGHT or covered >= COVERED_ATTENTION:
            break
        chosen.append((index, proposal))
        covered += proposal.attention
    if chosen:
        parts = [f"a {describe(p.attributes)} ({p.attention:.0%})" for _, p in chosen]
        listing = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        text = f"I answered {output.answer} looking at {listing}."
    else:
        text = f"I answered {output.answer} without looking at any object in particular."
    return {"text": text,
            "objects": [{"proposal": i, "weight": p.attention, "box": list(p.box),
                         "attributes": {a: v for a, (v, _) in p.attributes.items()}} for i, p in chosen]}
