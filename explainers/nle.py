"""Natural-language explanations: one sentence on why the agent answered as it did, written by a small
GPT-2 conditioned on the agent's own output (proposals, attention, question embedding), the question
and the answer, in the manner of e-UG (explainers/nle_model.py; trained by `exag train nle`).

    explainer = load_explainer("nle", agent)                 # the model shipped for this agent
    explainer = load_explainer("nle", agent, model="DIR")    # a model trained with `exag train nle`
    [e] = explainer.explain_batch([ExplanationRequest(image, question, output)])
    e.payload   # {"text": "There are two large cylinders left of the red sphere.", "source": "generated",
                #  "check": "..."}

Which model belongs to an agent: a VQAAgent carries no name, and the same agent can be loaded
from a name, its shipped directory or a copy elsewhere. Every NLE model records the fingerprint of
the agent it learned from (its configuration and weights, see agent_fingerprint), and the default is
the agent's own model, in its checkpoint directory (`nle/`: `exag train nle --agent DIR` writes it there,
so a private agent carries its NLE wherever its directory goes), else the shipped model whose fingerprint
is the agent's; `agent_name=` picks the model shipped for a named agent regardless, and `model=` any
trained model. An agent with no model of its own gets a clear error, not explanations learned from
another agent's representations.

Faithful by construction where it can be, checked where it cannot (issue 32): the model is conditioned
on the answer it explains (the prompt holds the answer's words: nle_model.prompt_tokens); decoding writes
no 3-gram twice, so it cannot loop; and every sentence is checked against the answer
(explainers/answer_check.py). A sentence that contradicts the answer, or does not state it where the
question's type can tell, is regenerated once under a constraint (the words of the asked attribute's other
values banned, or the words an answer of nothing begins with forced: `constraint_for`); if it still fails
it is replaced by the traced explanation (the world's reference explanation of the parsed question,
traced on the scene the agent perceived: its proposals' predicted attributes and places), or, where none
can be traced, by the question's subject with the answer ("There is a yellow metal sphere that has the
same size as a red cylinder.": explainers/nle_template.py; "The answer is X." where that cannot be
written). The payload says which, and the event log keeps it (the player sees the text only:
explainers/kinds/text.py):

A symbolic agent's answer that its program gave is explained by the program itself: the reference
explanation traced on the reading of the scene the program ran on (source "program", `program_payload`).

    {"text": ..., "source": "program" | "generated" | "regenerated" | "traced" | "template",
     "check": the answer check's reason on the first generated sentence (why it was kept or replaced)}
"""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from vqa_agent.agent import DEFAULT_AGENT
from vqa_agent.checkpoints import OWN_NLE
from vqa_agent.symbolic import scene_of
from vqa_agent.world.explanations import NUMBER_WORDS, explain
from vqa_agent.world.parser import parse_program
from vqa_agent.world.programs import IllPosed, ProgramError, answer_text, trace
from vqa_agent.world.questions import ADJECTIVES, NOUNS, PLURALS
from vqa_agent.world.scene import ATTRIBUTES, Scene, SceneObject

from .answer_check import AnswerCheck, check_explanation
from .base import Explainer, ExplanationRequest
from .nle_model import NO_REPEAT_NGRAM, NLEModel, NLETokenizer, agent_fingerprint
from .nle_template import answer_only, template

if TYPE_CHECKING:
    from .agent_interface import Agent


CHECKPOINT_DIR = Path(__file__).parent / "checkpoints"   # NLE models shipped with the package: nle-AGENT
PREFIX = "nle-"
BATCH_SIZE = 64                                          # requests decoded together
# where a payload's sentence came from: "program" is the trace of the program a symbolic agent ran
SOURCES = ("program", "generated", "regenerated", "traced", "template")
# the perceived scene's ground frame from image positions: x along the camera's left axis (-centre x), y
# along its front axis (the box's bottom: lower in the image is nearer); the image's width spans about
# as many units as CLEVR's visible ground, so that the world's relation threshold keeps its meaning
GROUND_SCALE = 8.0
PARAPHRASES = 10   # a trace's wordings tried, canonical first, for one that states the answer and does not loop


def shipped_models() -> dict[str, Path]:
    """Agent name -> directory of the NLE model shipped for it."""
    return {p.name[len(PREFIX):]: p for p in sorted(CHECKPOINT_DIR.glob(PREFIX + "*")) if (p / "config.json").exists()}


def _train_hint(agent: str = "AGENT") -> str:
    return (f"train one with `exag train nle --agent {agent} --world WORLD --out DIR` and pass model=DIR (for an "
            f"agent in a checkpoint directory, `exag train nle --agent DIR --world WORLD` writes DIR/{OWN_NLE}, "
            "which is found without model=)")


def resolve_nle_path(agent: Agent, model: str | Path | None = None, agent_name: str | None = None) -> Path:
    """The NLE model directory for `agent`: `model` (a directory, or a shipped model's agent name), else
    the model shipped for `agent_name`, else the agent's own (OWN_NLE in the checkpoint directory it was loaded
    from), else the shipped model trained on exactly this agent."""
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
    own = Path(agent.path) / OWN_NLE if getattr(agent, "path", None) else None
    if own is not None and (own / "config.json").exists():
        if json.loads((own / "config.json").read_text()).get("agent_fingerprint") != fingerprint:
            raise FileNotFoundError(f"the NLE model in {own} was trained on another agent than the one in "
                                    f"{agent.path} (retrained since?); train it again: `exag train nle --agent "
                                    f"{agent.path} --world WORLD`")
        return own
    for path in shipped.values():
        if json.loads((path / "config.json").read_text()).get("agent_fingerprint") == fingerprint:
            return path
    raise FileNotFoundError(f"no shipped NLE model was trained on this agent (shipped: {listing}, each for the agent "
                            f"of its name); " + _train_hint() + ", or pass agent_name=NAME to use the model of a "
                            "shipped agent")


class NLEExplainer(Explainer):
    name = "nle"
    kind = "text"
    cacheable = True
    # the model reads the agent's output as numbers (nle_model.encode_output) and is matched to the agent
    requires = frozenset({"answer", "question_embedding", "concepts", "proposals", "fingerprint"})

    def __init__(self, agent: Agent, model: str | Path | None = None, agent_name: str | None = None,
                 batch_size: int = BATCH_SIZE, no_repeat_ngram: int = NO_REPEAT_NGRAM, check_answer: bool = True) -> None:
        super().__init__(agent)
        self.path = resolve_nle_path(agent, model, agent_name)
        self.model = NLEModel.from_pretrained(self.path, device=agent.device)
        if self.model.config.question_dim != agent.question_dim:
            raise ValueError(f"the NLE model in {self.path} was trained on an agent with {self.model.config.question_dim}"
                             f"-dimensional question embeddings; this agent's are {agent.question_dim}")
        self.batch_size = batch_size
        self.no_repeat_ngram = no_repeat_ngram   # 0: decoding may repeat itself
        self.check_answer = check_answer         # False: every sentence is shown as generated (benchmarks' "before")

    def payloads(self, requests: list[ExplanationRequest]) -> list[dict]:
        # a program's answer is explained by its trace; the generator writes the rest
        shown = [program_payload(r.question, r.output) if self.check_answer else None for r in requests]
        rest = [i for i, payload in enumerate(shown) if payload is None]
        for i, payload in zip(rest, self._generated([requests[i] for i in rest])):
            shown[i] = payload
        return shown

    def _generated(self, requests: list[ExplanationRequest]) -> list[dict]:
        if not requests:
            return []
        outputs = [r.output for r in requests]
        texts = self.model.explain(outputs, batch_size=self.batch_size, no_repeat_ngram=self.no_repeat_ngram)
        if not self.check_answer:
            return [{"text": text, "source": "generated", "check": "not checked"} for text in texts]

        def regenerate(indices: list[int], constraints: list[Constraint]) -> list[str]:
            return self.model.explain([outputs[i] for i in indices], batch_size=self.batch_size,
                                      no_repeat_ngram=self.no_repeat_ngram,
                                      banned_words=[c.banned for c in constraints],
                                      prefixes=[c.prefix for c in constraints])

        return faithful_payloads([r.question for r in requests], [o.answer for o in outputs], texts, regenerate,
                                 lambda i: traced_explanation(requests[i].question, outputs[i]))


# --- the final check: the sentence must state the answer ---------------------------------------------

@dataclass(frozen=True)
class Constraint:
    """How a sentence that failed the check is written again."""
    banned: tuple[str, ...] = ()   # words it may not use
    prefix: str = ""               # words it begins with


_VALUE_WORDS = {value: {value, *ADJECTIVES.get(value, []), *NOUNS.get(value, []), *(PLURALS[w] for w in NOUNS.get(value, []))}
                for values in ATTRIBUTES.values() for value in values}
_ATTRIBUTE_OF = {value: attribute for attribute, values in ATTRIBUTES.items() for value in values}
_NUMBERS = {str(n): word for n, word in enumerate(NUMBER_WORDS)}   # "0" -> "no", "2" -> "two", ...
_DENIALS = {"no", "not", "nothing", "none"}


def constraint_for(question: str, answer: str) -> Constraint | None:
    """The constraint a failed sentence is regenerated under, or None where none helps: an attribute
    value's answer bans the words of the attribute's other values; a count bans the other number words;
    an answer of nothing ("0", "no" to "is there ...?") begins "there is no"; "yes" to "is there ...?"
    bans "no" and "nothing". Words of the question itself are never banned ("what is left of the cube?")."""
    said = set(re.findall(r"[a-z0-9]+", question.lower()))
    if answer in _ATTRIBUTE_OF:
        others = [v for v, a in _ATTRIBUTE_OF.items() if a == _ATTRIBUTE_OF[answer] and v != answer]
        return Constraint(banned=tuple(sorted(set().union(*(_VALUE_WORDS[v] for v in others)) - said)))
    if answer == "0":
        return Constraint(prefix="there are no")
    if answer in _NUMBERS:
        banned = {w for n, w in _NUMBERS.items() if n != answer} | {"zero"} | _DENIALS
        return Constraint(banned=tuple(sorted(banned - said)))
    program = parse_program(question) if answer in ("yes", "no") else None
    if program is not None and program[-1].function == "exist":
        return Constraint(prefix="there is no") if answer == "no" else Constraint(banned=tuple(sorted(_DENIALS - said)))
    return None


def fails(check: AnswerCheck) -> bool:
    """A sentence that says another answer, or leaves the answer out where the question's type can tell."""
    return bool(check.contradicts) or check.states_answer is False


LOOP_WORDS, LOOP_TIMES = 3, 3     # issue 32: no 3-word phrase written 3 times


def loops(text: str, n: int = LOOP_WORDS, times: int = LOOP_TIMES) -> bool:
    """Whether some n-word phrase occurs `times` times or more ("a large ball is a large ball is a ...")."""
    words = NLETokenizer.split(text)
    counts = Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1))
    return bool(counts) and max(counts.values()) >= times


def rejected(question: str, answer: str, text: str, check=check_explanation) -> bool:
    """A sentence the explainer does not show: it fails the answer check, or it loops."""
    return fails(check(question, answer, text)) or loops(text)


def first_shown(question: str, answer: str, texts: Sequence[str]) -> str | None:
    """The first of several paraphrases of a trace that the explainer may show."""
    return next((t for t in texts if not rejected(question, answer, t)), None)


def faithful_payloads(questions: Sequence[str], answers: Sequence[str], texts: Sequence[str],
                      regenerate: Callable[[list[int], list[Constraint]], list[str]],
                      traced: Callable[[int], str | None],
                      check: Callable[[str, str, str], AnswerCheck] = check_explanation) -> list[dict]:
    """The payload of each generated sentence texts[i] explaining answers[i] to questions[i]: kept when it
    passes the check; else written again once under `constraint_for` (regenerate(indices, constraints) ->
    their sentences, batched); else the traced explanation (traced(i), None when there is none) when it
    passes the check; else the template."""
    checks = [check(q, a, t) for q, a, t in zip(questions, answers, texts)]
    payloads = [{"text": t, "source": "generated", "check": c.reason + ("; loops" if loops(t) else "")}
                for t, c in zip(texts, checks)]
    failed = [i for i, (c, t) in enumerate(zip(checks, texts)) if fails(c) or loops(t)]
    constrained = [(i, constraint_for(questions[i], answers[i])) for i in failed]
    constrained = [(i, c) for i, c in constrained if c is not None]
    if constrained:
        again = regenerate([i for i, _ in constrained], [c for _, c in constrained])
        for (i, _), text in zip(constrained, again):
            if not rejected(questions[i], answers[i], text, check):
                payloads[i].update(text=text, source="regenerated")
    for i in failed:
        if payloads[i]["source"] != "generated":
            continue
        text = traced(i)
        if text and not rejected(questions[i], answers[i], text, check):
            payloads[i].update(text=text, source="traced")
        else:
            text = template(questions[i], answers[i])
            payloads[i].update(text=text if not loops(text) else answer_only(answers[i]), source="template")
    return payloads


def traced(question: str, answer: str, scene: Scene | None) -> tuple[str | None, str | None]:
    """The world's reference explanation (CLEVR-X style) of the parsed question traced on `scene`, when the
    trace gives `answer`: (the first wording the explainer may show, the canonical wording); the other
    wordings (PARAPHRASES) are written only when the canonical one is rejected. (None, None) when the
    question does not parse, is ill-posed on the scene, or the scene gives another answer (an explanation
    of another answer is no explanation)."""
    program = parse_program(question) if scene is not None else None
    if program is None:
        return None, None
    try:
        if answer_text(trace(program, scene)[-1]) != answer:
            return None, None
        canonical = explain(program, scene, np.random.default_rng(0), n=1, question=question)[0]
        if not rejected(question, answer, canonical):
            return canonical, canonical
        # explain's wordings start with the canonical one whatever n is: the others are new
        others = explain(program, scene, np.random.default_rng(0), n=PARAPHRASES, question=question)[1:]
    except (IllPosed, ProgramError):
        return None, None
    return first_shown(question, answer, others), canonical


def program_payload(question: str, output) -> dict | None:
    """A symbolic agent's program answer explained by what the program did: the trace on the very reading
    of the scene the program ran on (AgentOutput.program_scene), faithful by construction; None for other
    answers, or when no wording of the trace gives the answer, passes the check and does not loop."""
    text, _ = traced(question, output.answer, getattr(output, "program_scene", None))
    if text is None:
        return None
    return {"text": text, "source": "program", "check": check_explanation(question, output.answer, text).reason}


def perceived_scene(output) -> Scene | None:
    """The scene as the agent perceived it: one object per proposal, with its predicted attributes, placed
    on the ground by where its box is in the image (GROUND_SCALE); None when a proposal lacks an attribute."""
    proposals = list(output.proposals)
    boxes = np.array([p.box for p in proposals], float).reshape(-1, 4)
    masks = [p.mask for p in proposals if p.mask is not None and np.ndim(p.mask) == 2]
    height, width = masks[0].shape[:2] if masks else (max(boxes[:, 3].max(initial=1.0), 1.0),
                                                       max(boxes[:, 2].max(initial=1.0), 1.0))
    objects = []
    for p, (x1, _, x2, y2) in zip(proposals, boxes):
        if any(a not in p.attributes for a in ATTRIBUTES):
            return None
        objects.append(SceneObject(position=(-GROUND_SCALE * (x1 + x2) / 2 / width, GROUND_SCALE * y2 / height, 0.0),
                                   rotation=0.0, **{a: p.attributes[a][0] for a in ATTRIBUTES}))
    return scene_of(objects)


def traced_explanation(question: str, output) -> str | None:
    """The world's reference explanation of the parsed question on the scene the agent perceived (its
    proposals, placed by their boxes: perceived_scene), when that scene gives the agent's answer."""
    shown, canonical = traced(question, output.answer, perceived_scene(output))
    return shown or canonical
