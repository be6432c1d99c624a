"""Training of a VQA agent on a built world: seeded, resumable, validated every epoch, best kept.

    exag train agent --preset medium --world data/world --out agents/medium

`out` holds the best agent so far (load it with VQAAgent.from_pretrained(out)) and, while training,
training_state.pt (model, optimizer, schedule, random states) so that a stopped run resumes at the
epoch after its last finished one.
"""
from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from .agent import VQAAgent, normalize_images
from .config import AgentConfig
from .data import PreparedSplit, WorldTables, prepare_split
from .evaluate import evaluate
from .model import CONCEPT_ATTRIBUTES, CONCEPT_SLICES, DETECTION_STRIDE, VQAModel
from .tokenizer import Vocabulary
from .world.parser import VOCABULARY as PARSER_WORDS

STATE_FILE = "training_state.pt"
BOX_JITTER = 0.05   # relative jitter of ground-truth boxes while training, so predicted boxes look familiar


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def focal_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """CenterNet's penalty-reduced focal loss on the centre heatmap."""
    p = torch.sigmoid(logits).clamp(1e-4, 1 - 1e-4)
    positive = target.eq(1).float()
    pos = -((1 - p) ** 2 * torch.log(p) * positive).sum()
    neg = -((1 - target) ** 4 * p ** 2 * torch.log(1 - p) * (1 - positive)).sum()
    return (pos + neg) / positive.sum().clamp(min=1)


def detection_targets(boxes: list[torch.Tensor], height: int, width: int):
    """Centre heatmaps (Gaussian bumps), and offset/size targets at the centre cells."""
    heat = torch.zeros(len(boxes), height, width)
    cells, offsets, sizes = [], [], []
    ys = torch.arange(height).view(height, 1).float()
    xs = torch.arange(width).view(1, width).float()
    for i, b in enumerate(boxes):
        for x1, y1, x2, y2 in (b / DETECTION_STRIDE).tolist():
            cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
            ix, iy = min(int(cx), width - 1), min(int(cy), height - 1)
            sigma = max(0.7, ((x2 - x1) * (y2 - y1)) ** 0.5 / 6)
            bump = torch.exp(-((xs - ix) ** 2 + (ys - iy) ** 2) / (2 * sigma ** 2))
            heat[i] = torch.maximum(heat[i], bump)
            heat[i, iy, ix] = 1.0
            cells.append((i, iy, ix))
            offsets.append((cx - ix - 0.5, cy - iy - 0.5))
            sizes.append(((x2 - x1) / width, (y2 - y1) / height))
    return heat, torch.tensor(cells, dtype=torch.long).view(-1, 3), torch.tensor(offsets).view(-1, 2), torch.tensor(sizes).view(-1, 2)


def jitter(boxes: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    w = (boxes[:, 2] - boxes[:, 0]).unsqueeze(1)
    h = (boxes[:, 3] - boxes[:, 1]).unsqueeze(1)
    noise = (torch.rand(len(boxes), 4, generator=generator) * 2 - 1) * BOX_JITTER
    return boxes + noise * torch.cat([w, h, w, h], dim=1)


def attention_loss(reasoning, targets: torch.Tensor) -> torch.Tensor:
    """Gates of the last reasoning step should select the program's answer set (training objects are
    the ground-truth objects in scene order, so object k of the targets is proposal k); for a one-object
    set the object attention should also point at it."""
    k = reasoning.object_gates.shape[-1]
    targets = targets[:, :k]
    known = targets >= 0
    gates = reasoning.object_gates[:, -1].clamp(1e-4, 1 - 1e-4)
    gate_loss = F.binary_cross_entropy(gates[known], targets[known]) if known.any() else gates.sum() * 0
    single = (targets == 1).sum(1) == 1
    if not single.any():
        return gate_loss
    attention = (reasoning.object_attention[single] * targets[single].clamp(min=0)).sum(1)
    return gate_loss - torch.log(attention.clamp(min=1e-6)).mean()


def training_step(model: VQAModel, data: PreparedSplit, images: torch.Tensor, config: AgentConfig,
                  device: torch.device, generator: torch.Generator) -> tuple[torch.Tensor, dict]:
    features = model.encode_images(normalize_images(data.images[images].to(device)))
    boxes = [jitter(data.boxes[int(i)], generator).to(device) for i in images]
    objects = model.objects(features, boxes)
    # perception: proposal head and attribute head
    dh, dw = features.detection.shape[-2:]
    heat, cells, offsets, sizes = detection_targets([data.boxes[int(i)] for i in images], dh, dw)
    det = features.detection
    n, y, x = cells[:, 0].to(device), cells[:, 1].to(device), cells[:, 2].to(device)
    loss_heat = focal_loss(det[:, 0], heat.to(device))
    loss_box = F.l1_loss(det[n, 1:3, y, x], offsets.to(device)) + 5 * F.l1_loss(det[n, 3:5, y, x], sizes.to(device))
    loss_foreground = F.binary_cross_entropy_with_logits(det[:, 5], data.foreground[images].float().to(device))
    truth = torch.cat([data.attributes[int(i)] for i in images]).to(device)
    flat = objects.attributes[objects.mask]
    loss_attributes = sum(F.cross_entropy(flat[:, CONCEPT_SLICES[a]], truth[:, j]) for j, a in enumerate(CONCEPT_ATTRIBUTES))
    # answers
    questions = data.questions_of(images)
    position = torch.full((int(images.max()) + 1,), -1, dtype=torch.long)
    position[images] = torch.arange(len(images))
    of_image = position[data.image_of_question[questions]].to(device)
    lengths = data.lengths[questions]
    ids = data.question_ids[questions][:, : int(lengths.max())].to(device)
    question, words, word_mask = model.encode_questions(ids, lengths)
    reasoning = model.reason(question, words, word_mask, features.grid, objects, of_image)
    answers = data.answers[questions].to(device)
    loss_answer = F.cross_entropy(reasoning.logits, answers, ignore_index=-1)
    perception = loss_heat + loss_box + loss_foreground + loss_attributes
    if config.symbolic:
        ground = torch.cat([data.ground[int(i)] for i in images]).to(device)
        perception = perception + F.smooth_l1_loss(objects.ground[objects.mask], ground, beta=0.1) * 4
    loss = loss_answer + config.perception_weight * perception
    if config.attention_supervision > 0:
        loss = loss + config.attention_supervision * attention_loss(reasoning, data.target_objects[questions].to(device))
    correct = (reasoning.logits.argmax(1) == answers).sum().item()
    return loss, {"loss": loss.item(), "answer": loss_answer.item(), "perception": perception.item(),
                  "correct": correct, "n": len(answers)}


def train_agent(world: Path | str, out: Path | str, config: AgentConfig, device: str = "auto",
                progress: bool = True, log=print) -> Path:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seed_everything(config.seed)
    tables = WorldTables.load(world)
    train_questions = [q for q in tables.questions if q["split"] == "train"]
    # words of the world's language that training never shows (held-out phrasings, parser-only player
    # words) are known to exist, so they are read as <unk> rather than refused or "corrected"
    vocabulary = Vocabulary.build([q["question"] for q in train_questions], [q["answer"] for q in tables.questions],
                                  world_questions=[q["question"] for q in tables.questions] + sorted(PARSER_WORDS))
    agent = VQAAgent.create(config, vocabulary, device)
    model, device = agent.model, agent.device
    train = prepare_split(tables, "train", config, vocabulary, config.max_train_images, progress)
    val = prepare_split(tables, "val", config, vocabulary, None, progress)
    n_images = train.images.shape[0]
    steps_per_epoch = -(-n_images // config.batch_images)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=config.learning_rate,
                                                   total_steps=config.epochs * steps_per_epoch, pct_start=0.15)
    generator = torch.Generator().manual_seed(config.seed)
    history, best, start_epoch = [], -1.0, 0

    state_path = out / STATE_FILE
    if state_path.exists():
        state = torch.load(state_path, weights_only=False)
        if state["config"] != config.to_dict():
            raise ValueError(f"{out} holds a training run with another configuration; choose another --out "
                             f"or delete {state_path}")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        generator.set_state(state["generator"])
        torch.set_rng_state(state["torch_rng"])
        history, best, start_epoch = state["history"], state["best"], state["epoch"] + 1
        log(f"resuming {out} at epoch {start_epoch + 1}/{config.epochs}")

    for epoch in range(start_epoch, config.epochs):
        model.train()
        started = time.time()
        order = torch.randperm(n_images, generator=generator)
        bar = tqdm(range(steps_per_epoch), desc=f"epoch {epoch + 1}/{config.epochs}", unit="step", disable=not progress)
        totals = {"loss": 0.0, "correct": 0, "n": 0}
        for step in bar:
            images = order[step * config.batch_images:(step + 1) * config.batch_images]
            loss, stats = training_step(model, train, images, config, device, generator)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
            schedule.step()
            totals["loss"] += stats["loss"]
            totals["correct"] += stats["correct"]
            totals["n"] += stats["n"]
            bar.set_postfix(loss=f"{totals['loss'] / (step + 1):.3f}", acc=f"{totals['correct'] / max(totals['n'], 1):.3f}")
        bar.close()
        report = evaluate(model, val, vocabulary.answers)
        record = {"epoch": epoch + 1, "train_loss": totals["loss"] / steps_per_epoch,
                  "train_accuracy": totals["correct"] / max(totals["n"], 1), "val_accuracy": report["accuracy"],
                  "seconds": time.time() - started}
        history.append(record)
        log(f"epoch {epoch + 1}/{config.epochs}: train loss {record['train_loss']:.3f}, "
            f"train acc {record['train_accuracy']:.3f}, val acc {report['accuracy']:.3f} ({record['seconds']:.0f} s)")
        if report["accuracy"] > best:
            best = report["accuracy"]
            agent.save_pretrained(out / "best.tmp-agent", extra={"history": history, "val": report, "world": str(world)})
            for name in ("model.safetensors", "config.json", "vocabulary.json", "training.json"):
                os.replace(out / "best.tmp-agent" / name, out / name)
            (out / "best.tmp-agent").rmdir()
        torch.save({"config": config.to_dict(), "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "schedule": schedule.state_dict(), "generator": generator.get_state(),
                    "torch_rng": torch.get_rng_state(), "history": history, "best": best, "epoch": epoch},
                   state_path.with_suffix(".tmp"))
        os.replace(state_path.with_suffix(".tmp"), state_path)
    # keep the training record next to the best weights
    training = json.loads((out / "training.json").read_text())
    training["history"] = history
    (out / "training.json").write_text(json.dumps(training, indent=2))
    return out
