"""The NLE model: a small GPT-2 that writes why the agent answered what it did, after e-UG (e-ViL).

e-UG prepends UNITER's embeddings of image regions and question words to the question and the
predicted answer and lets GPT-2 continue with the explanation, decoding greedily. Here the image-
question representation is the agent's own output, so the explanation is conditioned only on what
the agent saw and attended to:

    [question vector] <q> question words <a> answer words [proposal vectors] <e> explanation <eos>

    question vector    from the agent's question embedding (+ the image's concept beliefs and the
                       answer's probability)
    proposal vectors   one per proposal, most attended first: attribute beliefs, box geometry,
                       detection score, the question's attention weight on it; plus the word
                       embeddings of its attribute values weighted by their beliefs, so that "purple"
                       in the question and a purple proposal meet in one space, and the (tied) output
                       layer can name what a proposal is

The vectors enter GPT-2 as `inputs_embeds` beside the word embeddings; the GPT-2 itself
(transformers' GPT2LMHeadModel, a few layers, trained from scratch in `nle_train.py`) reads words of a
closed, word-level vocabulary built from the world's text. The proposals come after the question
(e-UG puts the image first), so that each proposal's position can already attend to the question's
words and ask "am I the purple thing left of the cube?": on our world this trains faster and better.
The padding of the variable-length parts sits in the middle, masked, and positions count only real
entries, so every sequence of a batch ends at the same index and is continued together while decoding.

Saved as model.safetensors + config.json + vocabulary.json (+ training.json); from_pretrained(path)
restores it exactly.
"""
from __future__ import annotations

import inspect
import json
import os
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
import torch.nn as nn
from safetensors.torch import load_model, save_model
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.utils import logging as transformers_logging

from vqa_agent.agent import AgentOutput, write_checkpoint
from vqa_agent.model import CONCEPT_ATTRIBUTES, CONCEPT_SLICES, CONCEPTS
from vqa_agent.tokenizer import QuestionError, normalize

# transformers renamed GPT-2's key/value cache from `past_key_values` to `cache` (the old name warns, and goes
# in 5.40): decode with whichever name this transformers' GPT-2 takes, and read the cache back under it.
CACHE_ARGUMENT = "cache" if "cache" in inspect.signature(GPT2LMHeadModel.forward).parameters else "past_key_values"

PAD, UNK, QUESTION, ANSWER, EXPLANATION, EOS = "<pad>", "<unk>", "<q>", "<a>", "<e>", "<eos>"
SPECIALS = [PAD, UNK, QUESTION, ANSWER, EXPLANATION, EOS]
MAX_ANSWER_TOKENS = 4
GEOMETRY = 8                                   # x1, y1, x2, y2, centre x, centre y, width, height (0..1)
PROPOSAL_FEATURES = len(CONCEPTS) + GEOMETRY + 3   # + detection score, attention, attention / max attention
_WORDS = re.compile(r"[a-z0-9]+|[.,:;?!]")
NO_REPEAT_NGRAM = 4                            # decoding writes no 4-gram twice ("is a large matte ball is a large ..."); 4, not 3: CLEVR-X-style sentences rightly repeat "there is a" (3-gram blocking cost 1-3 points of answers stated, 4 none)


# --- words ---------------------------------------------------------------------------------------

@dataclass
class NLETokenizer:
    """A closed word-level vocabulary: lower-case words and punctuation; the rest is <unk>."""
    words: list[str]    # index -> token; the special tokens first

    def __post_init__(self) -> None:
        self.index = {w: i for i, w in enumerate(self.words)}
        self.pad, self.unk, self.question, self.answer, self.explanation, self.eos = (self.index[s] for s in SPECIALS)

    @classmethod
    def build(cls, texts: Sequence[str]) -> "NLETokenizer":
        found = {w for text in texts for w in cls.split(text)}
        return cls(SPECIALS + sorted(found - set(SPECIALS)))

    @staticmethod
    def split(text: str) -> list[str]:
        return _WORDS.findall(text.lower())

    def encode(self, text: str) -> list[int]:
        return [self.index.get(w, self.unk) for w in self.split(text)]

    def encode_question(self, question: str) -> list[int]:
        """Questions are normalized as the agent normalizes them (contractions, spelling), so that
        what players type maps onto the world's words."""
        try:
            words = normalize(question)
        except QuestionError:
            words = []
        return [self.index.get(w, self.unk) for w in words]

    def decode(self, ids: Sequence[int]) -> str:
        words = [self.words[i] for i in ids if i >= len(SPECIALS)]
        text = " ".join(words)
        text = re.sub(r" ([.,:;?!])", r"\1", text)
        return re.sub(r"(^|[.?!] )([a-z])", lambda m: m.group(1) + m.group(2).upper(), text)

    def to_dict(self) -> dict:
        return {"words": self.words}

    @classmethod
    def from_dict(cls, data: dict) -> "NLETokenizer":
        return cls(list(data["words"]))


# --- what the agent produced, as numbers ----------------------------------------------------------

def agent_fingerprint(agent) -> str:
    """Identifies an agent by its configuration and weights, wherever it was loaded from (the Agent
    protocol's fingerprint, explainers/agent_interface.py): what an NLE model records of its agent."""
    return agent.fingerprint()


def encode_output(output: AgentOutput, max_proposals: int) -> tuple[np.ndarray, np.ndarray]:
    """(global vector, proposal vectors [n, PROPOSAL_FEATURES]) of one agent output; proposals most
    attended first (then left to right), at most max_proposals."""
    concepts = [output.concept_probabilities.get(c, 0.0) for c in CONCEPTS]
    global_vector = np.concatenate([np.asarray(output.question_embedding, np.float32).ravel(),
                                    np.asarray(concepts + [output.probability], np.float32)])
    proposals = sorted(output.proposals, key=lambda p: (-round(p.attention, 4), p.box[0]))[:max_proposals]
    most = max([p.attention for p in proposals], default=0.0)
    rows = np.zeros((len(proposals), PROPOSAL_FEATURES), np.float32)
    for k, p in enumerate(proposals):
        for attribute in CONCEPT_ATTRIBUTES:
            if attribute in p.attributes:
                value, probability = p.attributes[attribute]
                names = CONCEPTS[CONCEPT_SLICES[attribute]]
                if value in names:
                    rows[k, CONCEPT_SLICES[attribute].start + names.index(value)] = probability
        height, width = p.mask.shape[:2] if np.ndim(p.mask) == 2 else (1.0, 1.0)
        x1, y1, x2, y2 = p.box
        x1, x2, y1, y2 = x1 / width, x2 / width, y1 / height, y2 / height
        rows[k, len(CONCEPTS):] = [x1, y1, x2, y2, (x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1,
                                   p.score, p.attention, p.attention / most if most > 0 else 0.0]
    return global_vector, rows


@dataclass
class Prompts:
    """A batch of prompts: the agent's outputs and the words before the explanation."""
    global_vectors: torch.Tensor   # [B, G]
    proposals: torch.Tensor        # [B, P, PROPOSAL_FEATURES]
    proposal_mask: torch.Tensor    # [B, P] bool
    tokens: torch.Tensor           # [B, T] <q> question <a> answer <e>, padded on the left
    token_mask: torch.Tensor       # [B, T] bool

    def __len__(self) -> int:
        return self.tokens.shape[0]

    def to(self, device) -> "Prompts":
        return Prompts(*(getattr(self, f.name).to(device) for f in fields(self)))


def prompt_tokens(tokenizer: NLETokenizer, question: str, answer: str, max_question_tokens: int) -> list[int]:
    return ([tokenizer.question] + tokenizer.encode_question(question)[:max_question_tokens] +
            [tokenizer.answer] + tokenizer.encode(answer)[:MAX_ANSWER_TOKENS] + [tokenizer.explanation])


def collate_prompts(encoded: Sequence[tuple[np.ndarray, np.ndarray]], tokens: Sequence[list[int]]) -> Prompts:
    """Stacks encoded agent outputs and prompt token ids into a batch."""
    n, p, t = len(tokens), max([len(rows) for _, rows in encoded] + [1]), max(len(ids) for ids in tokens)
    proposals = torch.zeros(n, p, PROPOSAL_FEATURES)
    proposal_mask = torch.zeros(n, p, dtype=torch.bool)
    ids = torch.zeros(n, t, dtype=torch.long)
    token_mask = torch.zeros(n, t, dtype=torch.bool)
    for i, ((_, rows), seq) in enumerate(zip(encoded, tokens)):
        proposals[i, :len(rows)] = torch.from_numpy(np.asarray(rows, np.float32))
        proposal_mask[i, :len(rows)] = True
        ids[i, t - len(seq):] = torch.tensor(seq)
        token_mask[i, t - len(seq):] = True
    global_vectors = torch.from_numpy(np.stack([np.asarray(g, np.float32) for g, _ in encoded]))
    return Prompts(global_vectors, proposals, proposal_mask, ids, token_mask)


def repeated_ngram_tokens(written: torch.Tensor, n: int, vocabulary: int) -> torch.Tensor:
    """[B, vocabulary] bool: the tokens that, written next, would repeat an n-gram already in `written`
    ([B, T] token ids): those that followed an earlier occurrence of the last n-1 tokens. Vectorised over
    the batch and the earlier positions."""
    found = torch.zeros(written.shape[0], vocabulary + 1, dtype=torch.bool, device=written.device)
    if n < 1 or written.shape[1] < n:
        return found[:, :vocabulary]
    windows = written.unfold(1, n, 1)                                        # [B, T - n + 1, n]
    if n == 1:
        seen = torch.ones(windows.shape[:2], dtype=torch.bool, device=written.device)
    else:
        seen = (windows[:, :, :-1] == written[:, None, written.shape[1] - n + 1:]).all(-1)   # [B, W]
    nexts = windows[:, :, -1].masked_fill(~seen, vocabulary)                 # no match -> the spare column
    return found.scatter_(1, nexts, True)[:, :vocabulary]


# --- the model -------------------------------------------------------------------------------------

@dataclass
class NLEConfig:
    n_layer: int = 3                  # GPT-2 blocks
    n_head: int = 4
    n_embd: int = 128                 # width of the residual stream
    dropout: float = 0.0              # the model underfits in the minutes it trains; dropout only slows it
    question_dim: int = 128           # the agent's question embedding size (its `hidden`)
    max_proposals: int = 12           # prefix vectors beyond the question's
    max_question_tokens: int = 40
    max_explanation_tokens: int = 48  # words of a generated explanation, at most
    concept_words: bool = True        # proposals also carry their attribute words' embeddings (see above)
    agent: str = ""                   # the agent whose outputs it learned from (name or path) ...
    agent_fingerprint: str = ""       # ... and that agent's agent_fingerprint()

    @property
    def global_dim(self) -> int:
        return self.question_dim + len(CONCEPTS) + 1

    @property
    def n_positions(self) -> int:
        return 1 + self.max_proposals + self.max_question_tokens + MAX_ANSWER_TOKENS + 3 + self.max_explanation_tokens + 1

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "NLEConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


class NLEModel(nn.Module):
    def __init__(self, config: NLEConfig, tokenizer: NLETokenizer) -> None:
        super().__init__()
        self.config, self.tokenizer = config, tokenizer
        d = config.n_embd
        gpt = GPT2Config(vocab_size=len(tokenizer.words), n_positions=config.n_positions, n_embd=d,
                         n_layer=config.n_layer, n_head=config.n_head, resid_pdrop=config.dropout,
                         embd_pdrop=config.dropout, attn_pdrop=config.dropout, activation_function="gelu",
                         bos_token_id=tokenizer.question, eos_token_id=tokenizer.eos, pad_token_id=tokenizer.pad, tie_word_embeddings=True)
        verbosity = transformers_logging.get_verbosity()
        transformers_logging.set_verbosity_error()
        try:
            self.gpt = GPT2LMHeadModel(gpt)
        finally:
            transformers_logging.set_verbosity(verbosity)
        self.global_projection = nn.Sequential(nn.LayerNorm(config.global_dim), nn.Linear(config.global_dim, d),
                                               nn.GELU(), nn.Linear(d, d))
        self.proposal_projection = nn.Sequential(nn.Linear(PROPOSAL_FEATURES, d), nn.GELU(), nn.Linear(d, d))
        # the word of each concept (sphere, purple, ...): a proposal also carries the embeddings of the words
        # of its attribute values, weighted by their beliefs, so that the question's words find it and the
        # (tied) output layer can name it
        self.register_buffer("concept_words", torch.tensor([tokenizer.index.get(c, tokenizer.unk) for c in CONCEPTS]),
                             persistent=False)
        # tokens the decoder may not write: all special tokens but <eos>
        banned = torch.zeros(len(tokenizer.words), dtype=torch.bool)
        banned[[tokenizer.index[s] for s in SPECIALS if s != EOS]] = True
        self.register_buffer("banned", banned, persistent=False)

    def _embed(self, prompts: Prompts, continuation: torch.Tensor | None = None,
               continuation_mask: torch.Tensor | None = None):
        """inputs_embeds, attention mask and position ids of
        [question vector | <q> question <a> answer | proposals | <e> | continuation]."""
        proposals = self.proposal_projection(prompts.proposals)
        if self.config.concept_words:
            proposals = proposals + prompts.proposals[..., :len(CONCEPTS)] @ self.gpt.transformer.wte(self.concept_words)
        tokens = self.gpt.transformer.wte(prompts.tokens)    # <q> question <a> answer <e>: the last is <e>
        one = torch.ones_like(prompts.token_mask[:, :1])
        parts = [self.global_projection(prompts.global_vectors).unsqueeze(1), tokens[:, :-1], proposals, tokens[:, -1:]]
        masks = [one, prompts.token_mask[:, :-1], prompts.proposal_mask, one]
        if continuation is not None:
            parts.append(self.gpt.transformer.wte(continuation))
            masks.append(continuation_mask)
        mask = torch.cat(masks, dim=1)
        positions = (mask.long().cumsum(1) - 1).clamp(min=0)
        return torch.cat(parts, dim=1), mask.long(), positions

    def loss(self, prompts: Prompts, targets: torch.Tensor, target_mask: torch.Tensor) -> tuple[torch.Tensor, dict]:
        """Cross-entropy of the explanation tokens (targets: explanation + <eos>, right-padded) given the prompt."""
        inputs = targets[:, :-1]
        embeds, mask, positions = self._embed(prompts, inputs, target_mask[:, :-1])
        logits = self.gpt(inputs_embeds=embeds, attention_mask=mask, position_ids=positions).logits
        start = embeds.shape[1] - inputs.shape[1] - 1          # the <e> token predicts the first target
        logits = logits[:, start:]
        labels = targets.masked_fill(~target_mask, -100)
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)
        correct = ((logits.argmax(-1) == targets) & target_mask).sum().item()
        return loss, {"tokens": int(target_mask.sum()), "correct": correct}

    @torch.inference_mode()
    def generate(self, prompts: Prompts, max_tokens: int | None = None, no_repeat_ngram: int = NO_REPEAT_NGRAM,
                 banned: torch.Tensor | None = None, prefixes: Sequence[Sequence[int]] | None = None) -> list[list[int]]:
        """Greedy decoding, batched; each sequence stops at its <eos>. Returns the token ids (no <eos>).

        no_repeat_ngram: no n-gram of the explanation is written twice (0: off): the token that would
        repeat one gets no probability, so a sentence that never repeats one is decoded exactly as
        without blocking. banned: [B, vocabulary] bool, tokens row b may not write; prefixes: the
        tokens each row starts with (forced), then greedy (used to regenerate under constraints)."""
        max_tokens = max_tokens or self.config.max_explanation_tokens
        embeds, mask, positions = self._embed(prompts)
        device = embeds.device
        out = self.gpt(inputs_embeds=embeds, attention_mask=mask, position_ids=positions, use_cache=True)
        past, position = getattr(out, CACHE_ARGUMENT), positions[:, -1:]
        written = torch.zeros(len(prompts), 0, dtype=torch.long, device=device)
        done = torch.zeros(len(prompts), dtype=torch.bool, device=device)
        never = self.banned if banned is None else self.banned | banned.to(device)
        forced = None
        if prefixes is not None and any(prefixes):
            forced = torch.full((len(prompts), max(len(p) for p in prefixes)), -1, dtype=torch.long)
            for i, prefix in enumerate(prefixes):
                forced[i, :len(prefix)] = torch.tensor(list(prefix), dtype=torch.long)
            forced = forced.to(device)
        logits = out.logits[:, -1]
        for step in range(max_tokens):
            logits = logits.masked_fill(never, float("-inf"))
            if no_repeat_ngram > 0:
                logits = logits.masked_fill(repeated_ngram_tokens(written, no_repeat_ngram, logits.shape[-1]),
                                            float("-inf"))
            token = logits.argmax(-1)
            if forced is not None and step < forced.shape[1]:
                token = torch.where(forced[:, step] >= 0, forced[:, step], token)
            token = token.masked_fill(done, self.tokenizer.pad)
            written = torch.cat([written, token.unsqueeze(1)], dim=1)
            done |= token == self.tokenizer.eos
            if bool(done.all()):
                break
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
            position = position + 1
            out = self.gpt(input_ids=token.unsqueeze(1), attention_mask=mask, position_ids=position,
                           use_cache=True, **{CACHE_ARGUMENT: past})
            past, logits = getattr(out, CACHE_ARGUMENT), out.logits[:, -1]
        results = []
        for row in written.tolist():
            results.append(row[:row.index(self.tokenizer.eos)] if self.tokenizer.eos in row else row)
        return results

    def prompts(self, outputs: Sequence[AgentOutput]) -> Prompts:
        encoded = [encode_output(o, self.config.max_proposals) for o in outputs]
        for g, _ in encoded:
            if g.shape[0] != self.config.global_dim:
                raise ValueError(f"this NLE model expects an agent with {self.config.question_dim}-dimensional "
                                 f"question embeddings, got {g.shape[0] - len(CONCEPTS) - 1}")
        tokens = [prompt_tokens(self.tokenizer, o.question, o.answer, self.config.max_question_tokens) for o in outputs]
        return collate_prompts(encoded, tokens)

    def word_ids(self, words: Sequence[str]) -> list[int]:
        """The vocabulary ids of `words` (lower-cased); words outside the vocabulary are left out."""
        return [self.tokenizer.index[w] for w in (w.lower() for w in words) if w in self.tokenizer.index]

    def explain(self, outputs: Sequence[AgentOutput], batch_size: int = 64, no_repeat_ngram: int = NO_REPEAT_NGRAM,
                banned_words: Sequence[Sequence[str]] | None = None,
                prefixes: Sequence[str] | None = None) -> list[str]:
        """One explanation per agent output, in order. banned_words[i]: words explanation i may not use;
        prefixes[i]: the words it starts with (both optional; see generate)."""
        self.eval()
        device = next(self.parameters()).device
        texts = []
        for start in range(0, len(outputs), batch_size):
            part = range(start, min(start + batch_size, len(outputs)))
            banned = None
            if banned_words is not None:
                banned = torch.zeros(len(part), len(self.tokenizer.words), dtype=torch.bool)
                for row, i in enumerate(part):
                    banned[row, self.word_ids(banned_words[i])] = True
            forced = None if prefixes is None else [self.tokenizer.encode(prefixes[i]) for i in part]
            ids = self.generate(self.prompts(outputs[start:start + batch_size]).to(device),
                                no_repeat_ngram=no_repeat_ngram, banned=banned, prefixes=forced)
            texts.extend(self.tokenizer.decode(row) for row in ids)
        return texts

    # --- persistence ------------------------------------------------------------------------------

    def save_pretrained(self, path: str | os.PathLike, extra: dict | None = None) -> Path:
        """Writes the model to `path` atomically (a sibling temp directory renamed into place)."""
        # save_model, not save_file: GPT-2's input and output embeddings share one tensor
        return write_checkpoint(path, lambda file: save_model(self, str(file)), self.config.to_dict(),
                                self.tokenizer.to_dict(), extra)

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, device: str | torch.device = "cpu") -> "NLEModel":
        path = Path(path)
        if not (path / "config.json").exists():
            raise FileNotFoundError(f"no NLE model at {path} (no config.json)")
        config = NLEConfig.from_dict(json.loads((path / "config.json").read_text()))
        tokenizer = NLETokenizer.from_dict(json.loads((path / "vocabulary.json").read_text()))
        model = cls(config, tokenizer)
        load_model(model, str(path / "model.safetensors"), device=str(device))
        return model.to(device).eval()
