"""HFVQAAgent: a pretrained transformers VQA model (ViLT or BLIP) in a local directory, as a game agent.

    agent = HFVQAAgent("hf:/models/vilt-b32-finetuned-vqa")    # or load_agent("hf:...") (vqa_agent/loading.py)
    outputs = agent.answer(images, "is there a dog?")          # one AgentOutput per image

It answers what the game and the explainers ask of VQAAgent (explainers/agent_interface.py): answers with
their alternatives, a question-guided attention grid read from the model's own attention, question and
text embeddings, image embeddings (the pool's image-set distances) and a fingerprint of its files. It
finds no object proposals and knows no concept words, so explainers that need "proposals" or "concepts"
are refused for it when they are loaded (explainers/registry.py), with a sentence that says so.

A natural-image model has an open vocabulary: no question is refused for its words (`vocabulary.check`
only turns away what is no text at all). The weights are loaded with local_files_only: nothing is downloaded.
"""
from __future__ import annotations

import json
import logging
from contextlib import contextmanager
from typing import Sequence

import numpy as np
import torch

from .agent import AgentOutput, as_rgb_array, pick_device, question_per_image
from .checkpoints import HF_ARCHITECTURES, HF_CAPABILITIES, HF_PREFIX, HFAgentError, checkpoint_fingerprint, hf_path
from .tokenizer import ENGLISH_ONLY, QuestionError

log = logging.getLogger(__name__)

MAX_BATCH = 20          # images in one forward pass: one question over a whole at-will round
TOP_K = 5               # alternatives reported with every answer, as VQAAgent's presets do
MAX_ANSWER_TOKENS = 10  # BLIP generates answers; VQA answers are one to three words
ROLLOUT_RESIDUAL = 0.5  # attention rollout (Abnar & Zuidema 2020): each layer's attention mixed with the identity,
                        # for the residual connection that carries a token's own state past the layer


class OpenVocabulary:
    """What the game's `agent.vocabulary.check(question)` gets for a model with an open vocabulary: every
    question in words is taken (server/inference.py refuses a round whose question this raises for)."""

    def check(self, question) -> None:
        if not isinstance(question, str) or not question.strip():
            raise QuestionError(ENGLISH_ONLY)


@contextmanager
def _quiet_loading():
    """transformers draws progress bars while it loads weights: noise in a worker's log."""
    from transformers.utils import logging as hf_logging
    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:          # as the caller had it
            hf_logging.enable_progress_bar()


class HFVQAAgent:
    capabilities = HF_CAPABILITIES

    def __init__(self, name_or_path, device: str = "auto") -> None:
        import transformers

        self.path = hf_path(str(name_or_path))          # HFAgentError, one line, for anything but a VQA model
        self.name = f"{HF_PREFIX}{self.path}"
        config = json.loads((self.path / "config.json").read_text())
        self.architecture = next(a for a in config["architectures"] if a in HF_ARCHITECTURES)
        self.device = pick_device(device)      # a GPU asked for where there is none: one warning, the CPU
        # half precision where it is fast (a GPU); float32 on the CPU, where float16 is slow and inexact
        self.dtype = torch.float16 if self.device.type == "cuda" else torch.float32
        try:
            with _quiet_loading():
                self.processor = transformers.AutoProcessor.from_pretrained(self.path, local_files_only=True)
                # eager attention: the fused kernels return no attention weights, and the grid is read from them
                self.model = getattr(transformers, self.architecture).from_pretrained(
                    self.path, local_files_only=True, attn_implementation="eager", dtype=self.dtype)
        except (OSError, ValueError, KeyError) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise HFAgentError(f"{self.path}: the {self.architecture} model could not be loaded: {first}") from error
        self.model.to(self.device).eval()
        self.is_vilt = self.architecture == "ViltForQuestionAnswering"
        self.vocabulary = OpenVocabulary()
        self._fingerprint = checkpoint_fingerprint(self.name)   # of the files as they were when loaded
        # what the game sets on every agent: True answers each image in a pass of its own, so its results
        # do not depend on the images it came with (server/inference.py, BatchSettings.batch_invariant)
        self.batch_invariant = False
        self.feature_cache = 0    # no image features are kept: ViLT's depend on the question (single stream)

    # --- what the game asks of an agent beyond answers --------------------------------------------

    def prepare(self, images: Sequence) -> None:
        """Nothing to look at ahead of the questions: no per-image features are cached."""

    def save_seen(self, path) -> None:
        """Nothing to store (the game pool calls it for the server's agent: game/pool.py)."""

    def load_seen(self, path) -> int:
        return 0

    @property
    def question_dim(self) -> int:
        return self._text_config.hidden_size

    @property
    def dim(self) -> int:
        """The size of an image embedding (embed_images)."""
        return self.model.config.hidden_size if self.is_vilt else self.model.config.vision_config.hidden_size

    @property
    def _text_config(self):
        return self.model.config if self.is_vilt else self.model.config.text_config

    def fingerprint(self) -> str:
        """A hash of the model's configuration, weights and processor files (vqa_agent/checkpoints.py): the
        same wherever the directory lies."""
        return self._fingerprint

    # --- answering --------------------------------------------------------------------------------

    @torch.inference_mode()
    def answer(self, images: Sequence, questions) -> list[AgentOutput]:
        """Answers questions[i] about images[i]. A single question is asked of every image."""
        questions = question_per_image(images, questions)
        embedded = dict(zip(dict.fromkeys(questions), self.embed_texts(list(dict.fromkeys(questions)))))
        size = 1 if self.batch_invariant else MAX_BATCH
        outputs = []
        for start in range(0, len(images), size):
            arrays = _pixels(images[start:start + size])
            asked = list(questions[start:start + size])
            answered = self._vilt(arrays, asked) if self.is_vilt else self._blip(arrays, asked)
            for question, (top_k, grid) in zip(asked, answered):
                outputs.append(AgentOutput(
                    question=question, answer=top_k[0][0], probability=top_k[0][1], top_k=top_k,
                    spatial_attention=grid, proposals=[], concept_probabilities={},
                    question_embedding=embedded[question], unknown_words=[], answered_by="classifier",
                    outside_words=[], refusal=None))
        return outputs

    def _inputs(self, arrays, texts) -> dict:
        encoded = self.processor(images=arrays, text=texts, return_tensors="pt", padding=True, truncation=True,
                                 max_length=self._text_config.max_position_embeddings)
        return {k: v.to(self.device, self.dtype if v.is_floating_point() else v.dtype) for k, v in encoded.items()}

    def _vilt_image_tokens(self, inputs: dict):
        """ViLT's image tokens, made as its forward pass makes them, and where each comes from: the patch grid
        (patch_index), which the forward pass keeps to itself. ViLT draws its patches in a random order
        (torch.multinomial): the order changes only the last bits of the sums, but a fixed seed on a forked
        generator makes every answer the same on every call, without touching the caller's random state."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            embeds, mask, (patch_index, (height, width)) = self.model.vilt.embeddings.visual_embed(
                inputs["pixel_values"], inputs["pixel_mask"], max_image_length=self.model.config.max_image_length)
        # the patches that hold image (the rest pad images of other sizes in the batch): rows, columns of each
        small = torch.nn.functional.interpolate(inputs["pixel_mask"][:, None].float(), size=(height, width))[:, 0]
        extent = [(int(small[i, :, 0].sum()), int(small[i, 0, :].sum())) for i in range(len(small))]
        return embeds, mask, patch_index, (height, width), extent

    def _vilt(self, arrays, questions) -> list[tuple[list, np.ndarray]]:
        inputs = self._inputs(arrays, questions)
        embeds, mask, patch_index, (height, width), extent = self._vilt_image_tokens(inputs)
        out = self.model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"],
                         token_type_ids=inputs.get("token_type_ids"), image_embeds=embeds, pixel_mask=mask,
                         output_attentions=True)
        # ViLT is trained as a multi-label classifier (a sigmoid per answer, against VQA's soft scores), so its
        # scores do not sum to 1: normalised over the answer vocabulary they become the distribution that
        # top_k and probability report, as for every other agent
        scores = torch.sigmoid(out.logits.float())
        probabilities = (scores / scores.sum(dim=1, keepdim=True)).cpu()
        # attention rollout from the pooled token (the text's [CLS], first in the sequence) to every token;
        # its share on the image patches (after the text and the image's own [CLS]) is the grid
        text_length = inputs["input_ids"].shape[1]
        flow = None
        for layer in reversed(out.attentions):
            mixed = ROLLOUT_RESIDUAL * layer.float().mean(dim=1) + \
                (1 - ROLLOUT_RESIDUAL) * torch.eye(layer.shape[-1], device=layer.device)
            mixed = mixed / mixed.sum(dim=-1, keepdim=True)
            flow = mixed[:, 0] if flow is None else torch.einsum("bt,bts->bs", flow, mixed)
        on_patches = flow[:, text_length + 1:] * mask[:, 1:].float()
        cells = patch_index[..., 0] * width + patch_index[..., 1]      # one per image token after the [CLS]
        grids = torch.zeros(len(arrays), height * width, device=flow.device).scatter_add_(1, cells, on_patches)
        grids = grids.view(len(arrays), height, width).cpu()
        return [(self._top_k(probabilities[i]), _unit_grid(grids[i, :h, :w])) for i, (h, w) in enumerate(extent)]

    def _top_k(self, probabilities: torch.Tensor) -> list[tuple[str, float]]:
        top_p, top_i = probabilities.topk(min(TOP_K, len(probabilities)))
        labels = self.model.config.id2label
        return [(str(labels.get(int(i), labels.get(str(int(i)), int(i)))), float(p)) for p, i in zip(top_p, top_i)]

    def _blip(self, arrays, questions) -> list[tuple[list, np.ndarray]]:
        # BlipForQuestionAnswering.generate's steps, taken one by one to read the question encoder's attention
        inputs = self._inputs(arrays, questions)
        image = self.model.vision_model(pixel_values=inputs["pixel_values"]).last_hidden_state
        image_mask = torch.ones(image.shape[:2], dtype=torch.long, device=self.device)
        encoded = self.model.text_encoder(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"],
                                          encoder_hidden_states=image, encoder_attention_mask=image_mask,
                                          output_attentions=True)
        # where the question looked: its tokens' cross-attention to the vision tower's patches (the answer
        # decoder attends to the question's states only), averaged over layers, heads and the question's
        # tokens; the vision [CLS] token (first) is no place in the image
        cross = torch.stack([a.float() for a in encoded.cross_attentions]).mean(dim=(0, 2))     # [B, T, 1 + N]
        words = inputs["attention_mask"].float()
        on_patches = (cross * words[:, :, None]).sum(dim=1)[:, 1:] / words.sum(dim=1, keepdim=True)
        patch = self.model.config.vision_config.patch_size
        h, w = (s // patch for s in inputs["pixel_values"].shape[-2:])
        grids = on_patches.view(len(arrays), h, w).cpu()
        states = encoded.last_hidden_state
        config = self.model.config.text_config
        start = torch.full((len(arrays), 1), config.bos_token_id, dtype=torch.long, device=self.device)
        # length_penalty 0: a beam's score is the sum of its tokens' log-probabilities, so exp(score) is the
        # model's probability of that answer (not a per-token average)
        generated = self.model.text_decoder.generate(
            input_ids=start, eos_token_id=config.sep_token_id, pad_token_id=config.pad_token_id,
            encoder_hidden_states=states, encoder_attention_mask=torch.ones(states.shape[:2], dtype=torch.long,
                                                                            device=self.device),
            num_beams=TOP_K, num_return_sequences=TOP_K, output_scores=True, return_dict_in_generate=True,
            length_penalty=0.0, max_new_tokens=MAX_ANSWER_TOKENS, do_sample=False)
        texts = self.processor.tokenizer.batch_decode(generated.sequences, skip_special_tokens=True)
        probabilities = generated.sequences_scores.float().exp().cpu().tolist()
        results = []
        for i in range(len(arrays)):
            found: dict[str, float] = {}
            for text, p in zip(texts[i * TOP_K:(i + 1) * TOP_K], probabilities[i * TOP_K:(i + 1) * TOP_K]):
                found[text.strip()] = found.get(text.strip(), 0.0) + p     # two beams, one answer once spelled
            total = sum(found.values())
            if total > 1:     # distinct answers cannot hold more than all of it (float16 rounding can)
                found = {a: p / total for a, p in found.items()}
            results.append((sorted(found.items(), key=lambda item: -item[1]), _unit_grid(grids[i])))
        return results

    # --- embeddings -------------------------------------------------------------------------------

    @torch.inference_mode()
    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """[len(texts), question_dim] float32: the model's text encoder on the text alone, mean-pooled over its
        tokens (ViLT: its transformer over the text tokens without image tokens; BLIP: its question encoder,
        which skips cross-attention without an image)."""
        vectors = []
        tokenizer = self.processor.tokenizer
        for start in range(0, len(texts), 256):
            chunk = [str(t) for t in texts[start:start + 256]]
            encoded = tokenizer(chunk, return_tensors="pt", padding=True, truncation=True,
                                max_length=self._text_config.max_position_embeddings).to(self.device)
            mask = encoded["attention_mask"]
            if self.is_vilt:
                vilt = self.model.vilt
                hidden = vilt.embeddings.text_embeddings(input_ids=encoded["input_ids"],
                                                         token_type_ids=encoded.get("token_type_ids"))
                hidden = hidden + vilt.embeddings.token_type_embeddings(torch.zeros_like(mask))   # "text" modality
                additive = (1.0 - mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(hidden.dtype).min
                hidden = vilt.layernorm(vilt.encoder(hidden, attention_mask=additive).last_hidden_state)
            else:
                hidden = self.model.text_encoder(input_ids=encoded["input_ids"], attention_mask=mask).last_hidden_state
            weights = mask[:, :, None].float()
            vectors.append(((hidden.float() * weights).sum(dim=1) / weights.sum(dim=1)).cpu().numpy())
        return np.concatenate(vectors).astype(np.float32) if vectors else np.zeros((0, self.question_dim), np.float32)

    @torch.inference_mode()
    def embed_images(self, images: Sequence, batch_size: int = MAX_BATCH) -> np.ndarray:
        """[len(images), dim] float32, each of length 1: the image seen by the vision side alone (BLIP: the
        vision tower's pooled [CLS]; ViLT, one transformer for both: its image tokens after an empty
        question, averaged). What the game chooses similar image sets by."""
        vectors = []
        for start in range(0, len(images), batch_size):
            arrays = _pixels(images[start:start + batch_size])
            if self.is_vilt:
                inputs = self._inputs(arrays, [""] * len(arrays))
                embeds, mask, _, _, _ = self._vilt_image_tokens(inputs)
                hidden = self.model.vilt(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"],
                                         token_type_ids=inputs.get("token_type_ids"), image_embeds=embeds,
                                         pixel_mask=mask).last_hidden_state
                patches = hidden[:, inputs["input_ids"].shape[1] + 1:].float()    # after the text and the image [CLS]
                weights = mask[:, 1:, None].float()
                pooled = (patches * weights).sum(dim=1) / weights.sum(dim=1)
            else:
                pixels = self.processor.image_processor(arrays, return_tensors="pt")["pixel_values"]
                pooled = self.model.vision_model(pixel_values=pixels.to(self.device, self.dtype)).pooler_output.float()
            pooled = torch.nn.functional.normalize(pooled, dim=1)
            vectors.append(pooled.cpu().numpy())
        return np.concatenate(vectors).astype(np.float32) if vectors else np.zeros((0, self.dim), np.float32)


def _pixels(images) -> list[np.ndarray]:
    """HxWx3 uint8 arrays the processor may turn into tensors: a read-only array (a PIL image's, a pool
    image's) is copied, which torch.from_numpy wants (it warns otherwise)."""
    arrays = [as_rgb_array(image) for image in images]
    return [a if a.flags.writeable else a.copy() for a in arrays]


def _unit_grid(grid: torch.Tensor) -> np.ndarray:
    """A float32 grid of weights >= 0 summing to 1 (even, where the model put no weight at all on it)."""
    grid = grid.float().clamp(min=0)
    total = float(grid.sum())
    grid = grid / total if total > 0 else torch.full_like(grid, 1.0 / grid.numel())
    return grid.numpy().astype(np.float32)
