"""Accuracy of an agent on a prepared split, through the same inference path the game uses
(proposals from the pixels, never from the scene), overall and by question type, answer type, family."""
from __future__ import annotations

from collections import defaultdict

import torch
from tqdm import tqdm

from .agent import normalize_images
from .data import PreparedSplit
from .model import VQAModel
from .symbolic import answer_symbolically, perceive
from .world.programs import answer_type

OUTSIDE_VOCABULARY = -2


@torch.inference_mode()
def predict(model: VQAModel, data: PreparedSplit, answer_index: dict[str, int], batch_images: int = 64,
            device: torch.device | None = None, progress: bool = False) -> torch.Tensor:
    """Predicted answer index of every question of the split (symbolic answers outside the answer
    vocabulary count as OUTSIDE_VOCABULARY, which never matches)."""
    device = device or next(model.parameters()).device
    model.eval()
    predictions = torch.full((len(data.answers),), -1, dtype=torch.long)
    n = data.images.shape[0]
    for start in tqdm(range(0, n, batch_images), desc="evaluating", disable=not progress, leave=False):
        images = torch.arange(start, min(start + batch_images, n))
        questions = data.questions_of(images)
        if len(questions) == 0:
            continue
        features = model.encode_images(normalize_images(data.images[images].to(device)))
        proposals = model.propose(features.detection)
        lengths = data.lengths[questions]
        ids = data.question_ids[questions][:, : int(lengths.max())].to(device)
        # the agent's inference path: objects from the proposal head's own boxes
        objects = model.objects(features, [boxes for boxes, _ in proposals])
        question, words, word_mask = model.encode_questions(ids, lengths)
        reasoning = model.reason(question, words, word_mask, features.grid, objects,
                                 (data.image_of_question[questions] - start).to(device))
        predictions[questions] = reasoning.logits.argmax(1).cpu()
        if model.config.symbolic:
            for j, (boxes, scores) in enumerate(proposals):
                perceived = perceive(objects, j, scores.cpu())
                for i in data.questions_of(images[j:j + 1]).tolist():
                    symbolic = answer_symbolically(data.texts[i], perceived, model.config.symbolic_max_relations)
                    if symbolic is not None:
                        predictions[i] = answer_index.get(symbolic.answer, OUTSIDE_VOCABULARY)
    return predictions


def accuracy_report(data: PreparedSplit, predictions: torch.Tensor) -> dict:
    correct = (predictions == data.answers).tolist()
    groups: dict[str, dict[str, list[bool]]] = {"by_type": defaultdict(list), "by_answer_type": defaultdict(list),
                                                "by_family": defaultdict(list)}
    for ok, kind, family, answer in zip(correct, data.types, data.families, data.answer_texts):
        groups["by_type"][kind].append(ok)
        groups["by_answer_type"][answer_type(answer)].append(ok)
        groups["by_family"][family].append(ok)
    player = [ok for ok, family in zip(correct, data.families) if family.startswith("player_")]
    heldout = [ok for ok, held in zip(correct, data.heldout_phrasing) if held]
    return {
        "accuracy": sum(correct) / max(len(correct), 1),
        "n": len(correct),
        "player_accuracy": sum(player) / max(len(player), 1),
        "player_n": len(player),
        "heldout_phrasing_accuracy": sum(heldout) / max(len(heldout), 1),
        "heldout_phrasing_n": len(heldout),
        **{name: {k: {"accuracy": sum(v) / len(v), "n": len(v)} for k, v in sorted(group.items())}
           for name, group in groups.items()},
    }


def evaluate(model: VQAModel, data: PreparedSplit, answers: list[str], progress: bool = False) -> dict:
    """`answers`: the agent's answer vocabulary (Vocabulary.answers), whose indices data.answers holds."""
    return accuracy_report(data, predict(model, data, {a: i for i, a in enumerate(answers)}, progress=progress))
