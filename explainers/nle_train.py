"""Training of the NLE model on a world's reference explanations, conditioned on an agent's outputs.

    exag train nle --agent medium --world data/world --out runs/nle-medium

Each training item is one train-split question: the prefix is what the agent actually produced for
it (its outputs are computed once and cached in OUT/cache, keyed by the agent's fingerprint), the
prompt is the question and its ground-truth answer, and the target is a reference explanation (the
canonical one, or a random paraphrase each epoch with references="all"). Validation every epoch
(loss, next-word accuracy, and exact matches of greedy explanations); the best model by validation
loss is kept in OUT; OUT/training_state.pt lets a stopped run resume after its last finished epoch.
"""
from __future__ import annotations

import json
import os
import random
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from PIL import Image
from tqdm import tqdm

from vqa_agent.agent import VQAAgent, pick_device
from vqa_agent.data import WorldTables

from .nle_model import (NLEConfig, NLEModel, NLETokenizer, PROPOSAL_FEATURES, Prompts, agent_fingerprint,
                        collate_prompts, encode_output, prompt_tokens)

STATE_FILE = "training_state.pt"
AGENT_BATCH = 256       # questions per agent call while caching its outputs (about 25 images)
BUCKET_BATCHES = 50     # batches sorted by length together, so that little of a batch is padding
VAL_GENERATE = 300      # validation items explained greedily each epoch (exact-match rate)


@dataclass
class NLETrainingConfig:
    # the defaults made the shipped nle-medium model
    epochs: int = 8
    batch_size: int = 8             # small batches learn far more per second here (64: about 5 METEOR points less)
    learning_rate: float = 1e-3
    weight_decay: float = 0.01
    warmup: float = 0.05            # fraction of the steps with a rising learning rate
    max_items: int | None = 40000   # train-split questions used (the first ones); None: all
    val_items: int = 1000           # val-split questions used for validation
    references: str = "canonical"   # "canonical": the first reference explanation; "all": a random one per epoch
    seed: int = 0
    threads: int | None = 1         # CPU threads; one is fastest for a model this small on a busy machine
    device: str = "cpu"             # "cpu", "cuda" or "auto"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "NLETrainingConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


# --- the agent's outputs, cached ------------------------------------------------------------------

@dataclass
class EncodedOutputs:
    """encode_output() of many agent outputs, in one block of arrays."""
    question_index: np.ndarray   # [N] the world's question_index of each
    global_vectors: np.ndarray   # [N, G]
    offsets: np.ndarray          # [N + 1] rows of item i are proposals[offsets[i]:offsets[i + 1]]
    proposals: np.ndarray        # [sum, PROPOSAL_FEATURES]
    answers: list[str]           # what the agent answered

    def item(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        return self.global_vectors[i], self.proposals[self.offsets[i]:self.offsets[i + 1]]

    @classmethod
    def join(cls, parts: list[tuple[int, np.ndarray, np.ndarray, str]]) -> "EncodedOutputs":
        counts = [len(rows) for _, _, rows, _ in parts]
        return cls(question_index=np.array([q for q, _, _, _ in parts], np.int64),
                   global_vectors=np.stack([g for _, g, _, _ in parts]).astype(np.float32),
                   offsets=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
                   proposals=(np.concatenate([rows for _, _, rows, _ in parts]) if sum(counts)
                              else np.zeros((0, PROPOSAL_FEATURES), np.float32)),
                   answers=[a for _, _, _, a in parts])

    def parts(self) -> list[tuple[int, np.ndarray, np.ndarray, str]]:
        return [(int(q), *self.item(i), a) for i, (q, a) in enumerate(zip(self.question_index, self.answers))]

    def save(self, path: Path) -> None:
        tmp = path.with_name(path.name + ".tmp.npz")
        np.savez(tmp, question_index=self.question_index, global_vectors=self.global_vectors, offsets=self.offsets,
                 proposals=self.proposals, answers=np.array(self.answers))
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> "EncodedOutputs":
        with np.load(path) as data:
            return cls(data["question_index"], data["global_vectors"], data["offsets"], data["proposals"],
                       [str(a) for a in data["answers"]])


def agent_outputs(agent: VQAAgent, tables: WorldTables, questions: list[dict], cache: Path, max_proposals: int,
                  progress: bool = True) -> EncodedOutputs:
    """The agent's encoded outputs for `questions` (in order), computing only those not in `cache`."""
    known: dict[int, tuple] = {}
    if cache.exists():
        known = {p[0]: p for p in EncodedOutputs.load(cache).parts()}
    missing = [q for q in questions if q["question_index"] not in known]
    if missing:
        bar = tqdm(total=len(missing), desc="agent outputs", unit="q", disable=not progress, leave=False)
        for start in range(0, len(missing), AGENT_BATCH):
            chunk = missing[start:start + AGENT_BATCH]
            images = {}
            for q in chunk:
                if q["image_filename"] not in images:
                    with Image.open(tables.path / "images" / q["image_filename"]) as file:
                        images[q["image_filename"]] = np.asarray(file.convert("RGB"))
            outputs = agent.answer([images[q["image_filename"]] for q in chunk], [q["question"] for q in chunk])
            for q, output in zip(chunk, outputs):
                known[q["question_index"]] = (q["question_index"], *encode_output(output, max_proposals), output.answer)
            bar.update(len(chunk))
        bar.close()
        cache.parent.mkdir(parents=True, exist_ok=True)
        EncodedOutputs.join(list(known.values())).save(cache)
    return EncodedOutputs.join([known[q["question_index"]] for q in questions])


# --- items and batches ----------------------------------------------------------------------------

def normalized(text: str) -> str:
    return " ".join(NLETokenizer.split(text))


@dataclass
class Items:
    outputs: EncodedOutputs
    prompts: list[list[int]]            # <q> question <a> answer <e>
    references: list[list[list[int]]]   # per item, each reference's ids + <eos>
    texts: list[list[str]]              # per item, the reference explanations


def make_items(tokenizer: NLETokenizer, config: NLEConfig, questions: list[dict], outputs: EncodedOutputs) -> Items:
    limit = config.max_explanation_tokens
    return Items(outputs=outputs,
                 prompts=[prompt_tokens(tokenizer, q["question"], q["answer"], config.max_question_tokens) for q in questions],
                 references=[[tokenizer.encode(e)[:limit] + [tokenizer.eos] for e in q["explanations"]] for q in questions],
                 texts=[list(q["explanations"]) for q in questions])


def batch_of(items: Items, indices: Sequence[int], targets: list[list[int]]) -> tuple[Prompts, torch.Tensor, torch.Tensor]:
    prompts = collate_prompts([items.outputs.item(i) for i in indices], [items.prompts[i] for i in indices])
    length = max(len(t) for t in targets)
    ids = torch.zeros(len(targets), length, dtype=torch.long)
    for row, t in enumerate(targets):
        ids[row, :len(t)] = torch.tensor(t)
    return prompts, ids, ids != 0


def bucketed_batches(lengths: Sequence[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Shuffled batches of similar lengths (sorted within groups of BUCKET_BATCHES batches)."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    group = batch_size * BUCKET_BATCHES
    batches = []
    for start in range(0, len(order), group):
        chunk = sorted(order[start:start + group], key=lambda i: lengths[i])
        batches.extend(chunk[k:k + batch_size] for k in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def choose_targets(items: Items, indices: Sequence[int], references: str, rng: random.Random) -> list[list[int]]:
    if references == "canonical":
        return [items.references[i][0] for i in indices]
    return [rng.choice(items.references[i]) for i in indices]


def validate(model: NLEModel, items: Items, batch_size: int) -> dict:
    """Loss and next-word accuracy on the canonical references; exact matches of greedy explanations."""
    model.eval()
    device = next(model.parameters()).device
    total, tokens, correct = 0.0, 0, 0
    lengths = [len(p) + len(r[0]) for p, r in zip(items.prompts, items.references)]
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    with torch.inference_mode():
        for start in range(0, len(order), batch_size * 2):
            indices = order[start:start + batch_size * 2]
            prompts, targets, mask = batch_of(items, indices, [items.references[i][0] for i in indices])
            loss, stats = model.loss(prompts.to(device), targets.to(device), mask.to(device))
            total += loss.item() * stats["tokens"]
            tokens += stats["tokens"]
            correct += stats["correct"]
    sample = list(range(min(VAL_GENERATE, len(items.prompts))))
    written = []
    for start in range(0, len(sample), batch_size * 2):
        indices = sample[start:start + batch_size * 2]
        prompts = collate_prompts([items.outputs.item(i) for i in indices], [items.prompts[i] for i in indices])
        written.extend(model.tokenizer.decode(ids) for ids in model.generate(prompts.to(device)))
    exact = sum(normalized(w) in {normalized(t) for t in items.texts[i]} for w, i in zip(written, sample))
    return {"loss": total / max(tokens, 1), "word_accuracy": correct / max(tokens, 1),
            "exact_match": exact / max(len(sample), 1), "n": len(items.prompts), "examples": written[:5]}


# --- training -------------------------------------------------------------------------------------

def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def train_nle(agent_name: str | os.PathLike, world: Path | str, out: Path | str,
              training: NLETrainingConfig | None = None, model_config: NLEConfig | None = None,
              progress: bool = True, log=print) -> Path:
    """Trains an NLE model for the agent on the world; the best model by validation loss is in `out`."""
    training = training or NLETrainingConfig()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    if training.threads:
        torch.set_num_threads(training.threads)
    device = pick_device(training.device)
    seed_everything(training.seed)
    agent = VQAAgent.from_pretrained(agent_name, device=str(device))
    fingerprint = agent_fingerprint(agent)
    config = model_config or NLEConfig()
    config = NLEConfig.from_dict({**config.to_dict(), "question_dim": agent.config.hidden, "agent": str(agent_name),
                                  "agent_fingerprint": fingerprint})
    tables = WorldTables.load(world)
    train_questions = [q for q in tables.questions if q["split"] == "train"][:training.max_items]
    val_questions = [q for q in tables.questions if q["split"] == "val"][:training.val_items]
    if not train_questions or not val_questions:
        raise ValueError(f"{world} has no train or no val questions")
    tokenizer = NLETokenizer.build([t for q in tables.questions if q["split"] == "train"
                                    for t in [q["question"], q["answer"], *q["explanations"]]])
    cache = out / "cache"
    train_items = make_items(tokenizer, config, train_questions, agent_outputs(
        agent, tables, train_questions, cache / f"train-{fingerprint[:16]}.npz", config.max_proposals, progress))
    val_items = make_items(tokenizer, config, val_questions, agent_outputs(
        agent, tables, val_questions, cache / f"val-{fingerprint[:16]}.npz", config.max_proposals, progress))
    outputs_seconds = time.time() - started
    del agent

    torch.manual_seed(training.seed)
    model = NLEModel(config, tokenizer).to(device)
    n = len(train_questions)
    lengths = [len(p) + len(r[0]) + len(train_items.outputs.item(i)[1])
               for i, (p, r) in enumerate(zip(train_items.prompts, train_items.references))]
    steps_per_epoch = -(-n // training.batch_size)
    decay = [p for name, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for name, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": training.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=training.learning_rate)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=training.learning_rate,
                                                   total_steps=training.epochs * steps_per_epoch,
                                                   pct_start=training.warmup, anneal_strategy="cos")
    rng = random.Random(training.seed)
    history, best, start_epoch, previous_seconds = [], float("inf"), 0, 0.0
    settings = {"training": {k: v for k, v in training.to_dict().items() if k not in ("threads", "device")},
                "model": config.to_dict(), "world": str(Path(world).resolve())}

    state_path = out / STATE_FILE
    if state_path.exists():
        state = torch.load(state_path, weights_only=False, map_location="cpu")
        if state["settings"] != settings:
            raise ValueError(f"{out} holds a training run with other settings; choose another --out "
                             f"or delete {state_path}")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        rng.setstate(state["rng"])
        torch.set_rng_state(state["torch_rng"])
        history, best, start_epoch = state["history"], state["best"], state["epoch"] + 1
        previous_seconds = state["seconds"]
        log(f"resuming {out} at epoch {start_epoch + 1}/{training.epochs}")

    for epoch in range(start_epoch, training.epochs):
        model.train()
        epoch_started = time.time()
        batches = bucketed_batches(lengths, training.batch_size, rng)
        bar = tqdm(batches, desc=f"epoch {epoch + 1}/{training.epochs}", unit="batch", disable=not progress)
        total, tokens, correct = 0.0, 0, 0
        for indices in bar:
            prompts, targets, mask = batch_of(train_items, indices, choose_targets(train_items, indices,
                                                                                   training.references, rng))
            loss, stats = model.loss(prompts.to(device), targets.to(device), mask.to(device))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            total += loss.item() * stats["tokens"]
            tokens += stats["tokens"]
            correct += stats["correct"]
            bar.set_postfix(loss=f"{total / tokens:.3f}", acc=f"{correct / tokens:.3f}")
        bar.close()
        report = validate(model, val_items, training.batch_size)
        record = {"epoch": epoch + 1, "train_loss": total / max(tokens, 1), "train_word_accuracy": correct / max(tokens, 1),
                  "val_loss": report["loss"], "val_word_accuracy": report["word_accuracy"],
                  "val_exact_match": report["exact_match"], "seconds": time.time() - epoch_started}
        history.append(record)
        log(f"epoch {epoch + 1}/{training.epochs}: train loss {record['train_loss']:.3f}, val loss {report['loss']:.3f}, "
            f"val word acc {report['word_accuracy']:.3f}, val exact {report['exact_match']:.3f} "
            f"({record['seconds']:.0f} s); e.g. \"{report['examples'][0]}\"")
        seconds = previous_seconds + time.time() - started
        if report["loss"] < best:
            best = report["loss"]
            model.save_pretrained(out / "best.tmp-nle", extra={
                "agent": str(agent_name), "world": str(world), "training": training.to_dict(), "history": history,
                "val": {k: v for k, v in report.items() if k != "examples"}, "train_items": n})
            for name in ("model.safetensors", "config.json", "vocabulary.json", "training.json"):
                os.replace(out / "best.tmp-nle" / name, out / name)
            (out / "best.tmp-nle").rmdir()
        torch.save({"settings": settings, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "schedule": schedule.state_dict(), "rng": rng.getstate(), "torch_rng": torch.get_rng_state(),
                    "history": history, "best": best, "epoch": epoch, "seconds": seconds},
                   state_path.with_suffix(".tmp"))
        os.replace(state_path.with_suffix(".tmp"), state_path)
    record = json.loads((out / "training.json").read_text())
    record["history"] = history
    record["agent_outputs_seconds"] = round(outputs_seconds, 1)
    record["seconds"] = round(previous_seconds + time.time() - started, 1)
    (out / "training.json").write_text(json.dumps(record, indent=2))
    return out
