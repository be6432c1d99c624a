"""e-ViL scores (Kayser et al., ICCV 2021) of a text explainer: nle, introspect, the nle-other sham, and
RelQAs read as text.

    items = load_items(world, max_items=200); outputs = answer(agent, items)
    e_vil(items, outputs, explain(explainer, items, outputs, agent))
    # {"s_t": 61.0, "s_e_ground_truth": 48.2, "s_o_ground_truth": 29.4, "s_e_proxy": 70.3, ...}

Definitions (e-ViL, docs/research.md §2), all in percent (x100):
- S_T: answer accuracy over all items (the agent's answer equals the world's answer; CLEVR has one).
- S_E: the mean explanation score over the items whose answer is right only (e-ViL counts an explanation
  of a wrong answer as wrong, so it is not scored at all). S_O = S_T * S_E.
- S_E proxy: e-ViL's automatic score used for model selection, the harmonic mean of BERTScore F1 and
  NGRAMScore, computed by nle_metrics.nlg_scores on the right items' texts against their reference
  explanations. NGRAMScore is the harmonic mean of ROUGE-L, METEOR and min(CIDEr, 1); e-ViL's also has
  SPICE, which needs the Stanford CoreNLP models and cannot run offline here, so it is left out.
- S_E ground truth: where e-ViL asks 3 people "does the explanation justify the answer?", we ask our
  fact checker: each explanation is graded by explainers/grading.py (grade_explanation, on the true
  scene) on the ExAG raters' 5-point scale, and the label is put on e-ViL's [0, 1] human scale by
  SCALE_SCORES (below). Questions outside the parser's language cannot be graded and are left out.

Text. `text_of` turns a payload into the text that is scored: kind "text" is its sentence; kind
"qa_pairs" (RelQAs) is every pair written "question answer." and joined. The proxy scores that text;
the ground truth grades each kind by its own rule (RelQAs: the share of related answers that are right
on the scene; text: the facts it states, then its closeness to the references).

Published (e-ViL Table 3, S_O / S_T / S_E, human S_E): e-UG on VQA-X 57.6 / 80.5 / 71.5, e-SNLI-VE
54.8 / 79.5 / 68.9, VCR 45.5 / 69.8 / 65.1; the data sets' own ground-truth explanations S_E 84.5 /
76.2 / 77.3. What differs in our world: CLEVR-like scenes and templated reference explanations (so the
n-gram metrics reward the template more than on VQA-X), one true answer (not VQA's 10 annotators), a
fact checker instead of human raters for the ground truth, and no SPICE.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from tqdm import tqdm

from explainers.scales import EXPLANATION_SCALE

# The ExAG 5-point label -> e-ViL's [0, 1] human scale. e-ViL's raters answer yes / weak yes / weak no /
# no = 1, 2/3, 1/3, 0: evenly spaced over [0, 1]. Our scale has five evenly spaced labels with a neutral
# middle ("Indifferent"), so they are spread evenly the same way, rank r -> 1 - r/4: on-point 1 (yes),
# mostly on-point 0.75 (between yes and weak yes), indifferent 0.5 (halfway between weak yes and weak
# no: it neither justifies nor contradicts), somewhat off 0.25, completely wrong 0 (no).
SCALE_SCORES = {label: 1 - rank / (len(EXPLANATION_SCALE) - 1) for rank, label in enumerate(EXPLANATION_SCALE)}
E_VIL_REFERENCE = {   # Table 3 of e-ViL: S_O / S_T / S_E in percent, human S_E
    "e-UG VQA-X": {"s_o": 57.6, "s_t": 80.5, "s_e": 71.5},
    "e-UG e-SNLI-VE": {"s_o": 54.8, "s_t": 79.5, "s_e": 68.9},
    "e-UG VCR": {"s_o": 45.5, "s_t": 69.8, "s_e": 65.1},
    "ground-truth explanations S_E": {"VQA-X": 84.5, "e-SNLI-VE": 76.2, "VCR": 77.3},
}
PROXY_METRICS = ("bertscore_f1", "ngram_score", "meteor", "rouge_l", "cider", "bleu4")


def text_of(explanation) -> str:
    """The text of a text-like explanation (an Explanation or its dict): a "text" payload's sentence, or
    a "qa_pairs" payload's pairs written "question answer." and joined by spaces."""
    data = explanation.to_dict() if hasattr(explanation, "to_dict") else explanation
    kind, payload = data["kind"], data["payload"]
    if kind == "text":
        return payload["text"]
    if kind == "qa_pairs":
        return " ".join(f"{p['question'].strip()} {p['answer'].strip()}." for p in payload["pairs"])
    raise ValueError(f"an explanation of kind {kind!r} has no text to score (only 'text' and 'qa_pairs' do)")


def scale_score(label: str) -> float:
    """A label of the 5-point EXPLANATION_SCALE on e-ViL's [0, 1] human scale (SCALE_SCORES)."""
    if label not in SCALE_SCORES:
        raise ValueError(f"{label!r} is not a label of the explanation scale {EXPLANATION_SCALE}")
    return SCALE_SCORES[label]


def grade_labels(items: Sequence, outputs: Sequence, explanations: Sequence, progress: bool = False) -> list[str]:
    """The fact checker's label of each explanation (explainers/grading.py grade_explanation on the item's
    true scene): one of EXPLANATION_SCALE, or "ungradable" for a question outside the parser's language."""
    from explainers.grading import GroundTruth, grade_explanation
    if not (len(items) == len(outputs) == len(explanations)):
        raise ValueError(f"need one output and one explanation per item: {len(items)} items, {len(outputs)} outputs, "
                         f"{len(explanations)} explanations")
    return [grade_explanation(ex, out, GroundTruth.for_question(it.question, it.scene, it.masks)).label
            for it, out, ex in tqdm(list(zip(items, outputs, explanations)), desc="grading explanations",
                                    unit="item", disable=not progress)]


def e_scores(correct: Sequence[bool], scores: Sequence[float | None]) -> dict:
    """S_T, S_E and S_O in percent from each item's answer correctness and explanation score in [0, 1]
    (None: not gradable, left out of S_E). S_E averages the right items only; it is None when no right
    item has a score, and then S_O is None too unless S_T is 0 (then S_O = 0 whatever S_E would be)."""
    if len(correct) != len(scores) or not correct:
        raise ValueError(f"need one correctness and one score per item, and some items: {len(correct)} vs {len(scores)}")
    s_t = float(np.mean(correct))
    graded = [s for ok, s in zip(correct, scores) if ok and s is not None]
    s_e = float(np.mean(graded)) if graded else None
    s_o = s_t * s_e if s_e is not None else (0.0 if s_t == 0 else None)
    return {"s_t": 100 * s_t, "s_e": None if s_e is None else 100 * s_e, "s_o": None if s_o is None else 100 * s_o,
            "n_scored": len(graded)}


def e_vil(items: Sequence, outputs: Sequence, explanations: Sequence, bertscore: bool = True,
          progress: bool = True) -> dict:
    """e-ViL's S_T, S_E, S_O of explanations[i] (text or qa_pairs) of the agent's outputs[i] on items[i]
    (experiments.benchmark.items.BenchItem), with the automatic proxy S_E and the fact-checked S_E side by
    side, in percent. bertscore=False skips BERTScore, and so the proxy S_E and S_O."""
    from experiments.benchmark.nle_metrics import nlg_scores

    if not (len(items) == len(outputs) == len(explanations)) or not items:
        raise ValueError(f"need one output and one explanation per item, and some items: {len(items)} items, "
                         f"{len(outputs)} outputs, {len(explanations)} explanations")
    texts = [text_of(e) for e in explanations]      # fails early on an explanation without text
    correct = [out.answer == it.answer for it, out in zip(items, outputs)]

    # ground truth: every item is graded (the share over all items is reported beside e-ViL's S_E)
    labels = grade_labels(items, outputs, explanations, progress)
    # "ungradable" (a question outside the parser's language) has no score
    scores = [scale_score(label) if label in SCALE_SCORES else None for label in labels]
    truth = e_scores(correct, scores)
    all_items = [s for s in scores if s is not None]

    by_type: dict[str, dict] = {}
    for kind in sorted({it.type for it in items}):
        chosen = [i for i, it in enumerate(items) if it.type == kind]
        typed = e_scores([correct[i] for i in chosen], [scores[i] for i in chosen])
        by_type[kind] = {"n_items": len(chosen), "n_correct": sum(correct[i] for i in chosen), "s_t": typed["s_t"],
                         "s_e_ground_truth": typed["s_e"], "s_o_ground_truth": typed["s_o"]}

    # the automatic proxy, on the right items that have reference explanations (a world may lack them)
    right = [i for i, ok in enumerate(correct) if ok and items[i].references]
    proxy = {}
    if right:
        proxy = nlg_scores([texts[i] for i in right], [items[i].references for i in right], bertscore=bertscore)
    s_e_proxy = proxy.get("s_e")
    return {
        "n_items": len(items), "n_correct": sum(correct), "n_gradable": len(all_items),
        "n_ground_truth_scored": truth["n_scored"], "n_proxy_scored": len(right),
        "s_t": truth["s_t"],
        "s_e_proxy": s_e_proxy,
        "s_o_proxy": None if s_e_proxy is None else truth["s_t"] * s_e_proxy / 100,
        "s_e_ground_truth": truth["s_e"], "s_o_ground_truth": truth["s_o"],
        "s_e_ground_truth_all_items": 100 * float(np.mean(all_items)) if all_items else None,
        **{metric: proxy.get(metric) for metric in PROXY_METRICS},
        "labels_right_items": {label: sum(ok and got == label for ok, got in zip(correct, labels))
                               for label in EXPLANATION_SCALE},
        "labels_all_items": {label: labels.count(label) for label in EXPLANATION_SCALE},
        "by_type": by_type,
        "e_vil_reference": E_VIL_REFERENCE,
        "definitions": {
            "scale": "percent (x100); CIDEr 0-1000 as CLEVR-X reports it",
            "s_t": "answer accuracy over all items (the agent's answer equals the world's one true answer)",
            "s_e_proxy": "e-ViL's automatic S_E: harmonic mean of BERTScore F1 and NGRAMScore, over the correctly "
                         "answered items with reference explanations (nle_metrics.nlg_scores); None without BERTScore",
            "ngram_score": "harmonic mean of ROUGE-L, METEOR and min(CIDEr, 1); e-ViL's also has SPICE, left out "
                           "because it needs the Stanford CoreNLP models, which cannot be downloaded here",
            "bertscore_f1": "BERTScore F1, best over the references; offline all-MiniLM-L6-v2, no idf, not rescaled",
            "s_e_ground_truth": "mean over the correctly answered, gradable items of the explanation's grade "
                                "(explainers/grading.py grade_explanation on the true scene) mapped to e-ViL's "
                                "human scale: " + ", ".join(f"{label} {v:.2f}" for label, v in SCALE_SCORES.items())
                                + " (e-ViL: yes / weak yes / weak no / no = 1, 2/3, 1/3, 0; five evenly spaced "
                                  "labels spread evenly the same way, the neutral middle at 0.5)",
            "s_o": "S_T * S_E, for each S_E; when no item is answered right S_T = 0 and so S_O = 0",
            "s_e_ground_truth_all_items": "the same grade averaged over every gradable item, right answer or "
                                          "not (not e-ViL's: it shows how the explanations fare on wrong answers too)",
            "text": "kind 'text': its sentence; kind 'qa_pairs' (RelQAs): each pair 'question answer.' joined by "
                    "spaces (the proxy scores it; the ground truth grades RelQAs by their own rule: related "
                    "answers right on the scene)",
            "n_gradable": "items whose question the world's parser reads (only these get a ground-truth grade)",
        },
    }
