"""VQAAgent: answers questions about images and exposes why (attention, proposals, concepts).

    agent = VQAAgent.from_pretrained("default")          # or a preset name, or a directory
    outputs = agent.answer(images, questions)            # one output per (image, question) pair

Saved as model.safetensors + config.json + vocabulary.json; from_pretrained restores it exactly.
Images of any size and mode are converted to RGB and resized to the model's resolution; image
features are cached by content, because a game asks many questions about the same few images. What is
cached of an image is compact, so that a worker keeps the whole game pool (SeenImage): features and
attention projections in float16, proposal masks bit-packed at the model's resolution.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
import shutil
from collections import OrderedDict
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from safetensors.torch import load_file, save_file

from .checkpoints import CHECKPOINT_DIR, DEFAULT_AGENT, resolve_agent_path   # noqa: F401 - also read from here
from .config import AgentConfig, fingerprint_dict
from .evidence_map import CellShares
from .known_image import KnownImage
from .run_lengths import mask_to_rle
from .model import CONCEPT_SLICES, CONCEPTS, DETECTION_STRIDE, ImageFeatures, Objects, VQAModel
from .symbolic import PerceivedScene, answer_symbolically, perceive
from .tokenizer import QuestionError, Vocabulary
from .world.scene import Scene

IMAGE_MEAN = torch.tensor([0.5, 0.5, 0.5]).view(1, 3, 1, 1)
IMAGE_STD = torch.tensor([0.25, 0.25, 0.25]).view(1, 3, 1, 1)
FEATURE_CACHE_SIZE = 256   # images whose features stay in memory by default (SeenImage: ~0.26 MB each)
KNOWN_ARRAYS = 64          # read-only image arrays whose content key is remembered (a few games' images; the
                           # references keep them alive: 0.23 MB each at 320x240)
STORE_DTYPE = torch.float16   # of the features and projections kept per image; the reasoning runs in float32
                              # (the shipped agents' answers as with a float32 store, probabilities within 2e-4,
                              # spatial attention cells within 7e-4: tests/test_compact_store.py)
OBJECT_FIELDS = tuple(f.name for f in fields(Objects))
SEEN_FORMAT = 2               # of save_seen's files: raise it when SeenImage changes


class ImageError(ValueError):
    """An input that is not an image the agent can look at."""


def pick_device(device: str = "auto") -> torch.device:
    """auto (or nothing): the GPU when there is one, else the CPU. A GPU asked for where there is none
    ("cuda", "cuda:1") is one warning line, not an error: the agent runs on the CPU (a worker must still
    answer). Every agent picks its device here (VQAAgent, hf_agent.HFVQAAgent, the NLE's training)."""
    if device in ("auto", None, ""):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    chosen = torch.device(device)
    if chosen.type == "cuda" and not torch.cuda.is_available():
        logging.getLogger(__name__).warning(
            "device %r was asked for but no CUDA GPU is available: the agent runs on the CPU", str(device))
        return torch.device("cpu")
    return chosen


def as_rgb_array(image) -> np.ndarray:
    """PIL image, path, KnownImage or array (HxW, HxWx1/3/4; uint8 or float in [0, 1]) -> HxWx3 uint8."""
    if isinstance(image, KnownImage):
        return as_rgb_array(image.load())
    if isinstance(image, (str, os.PathLike)):
        try:
            with Image.open(image) as file:
                return np.asarray(file.convert("RGB"))
        except (OSError, ValueError) as error:
            raise ImageError(f"cannot read image {image}: {error}") from error
    if isinstance(image, Image.Image):
        return np.asarray(image.convert("RGB"))
    if isinstance(image, np.ndarray):
        array = image
        if array.ndim == 3 and array.shape[2] == 1:
            array = array[:, :, 0]
        if array.ndim == 2:
            array = np.stack([array] * 3, axis=-1)
        if array.ndim != 3 or array.shape[2] not in (3, 4) or min(array.shape[:2]) < 1:
            raise ImageError(f"an image array must be HxW, HxWx1, HxWx3 or HxWx4, got shape {image.shape}")
        if array.shape[2] == 4:
            array = array[:, :, :3]
        if array.dtype != np.uint8:
            if not np.issubdtype(array.dtype, np.number) or not np.isfinite(array).all():
                raise ImageError("an image array must hold finite numbers")
            scale = 255.0 if array.max(initial=0) <= 1.0 else 1.0
            array = np.clip(array * scale, 0, 255).astype(np.uint8)
        return np.ascontiguousarray(array)
    raise ImageError(f"not an image: {type(image).__name__}")


def to_model_input(arrays: Sequence[np.ndarray], config: AgentConfig) -> torch.Tensor:
    """HxWx3 uint8 arrays -> [B, 3, H, W] normalized floats at the config's resolution."""
    size = (config.image_width, config.image_height)
    resized = [np.asarray(Image.fromarray(a).resize(size, Image.BILINEAR)) if a.shape[1::-1] != size else a
               for a in arrays]
    return normalize_images(torch.from_numpy(np.stack(resized)).permute(0, 3, 1, 2))


def normalize_images(images: torch.Tensor) -> torch.Tensor:
    """[B, 3, H, W] uint8 -> normalized float."""
    return (images.float() / 255 - IMAGE_MEAN.to(images.device)) / IMAGE_STD.to(images.device)


@dataclass
class Proposal:
    box: tuple[float, float, float, float]   # x1, y1, x2, y2 in the input image's pixels
    score: float                             # proposal head confidence
    mask: np.ndarray                         # bool, the input image's height x width (None in the agent's
                                             # cache, which keeps them packed: SeenImage.masks)
    attention: float                         # question-guided object attention weight
    attributes: dict[str, tuple[str, float]]  # attribute -> (predicted value, probability)
    # the mask's run lengths (vqa_agent/run_lengths.py), as an agent remembers them per image: the attention
    # explanation of every round about the image sends them (None: computed from `mask` by whoever needs them)
    rle: dict | None = field(default=None, compare=False, repr=False)


@dataclass
class AgentOutput:
    question: str
    answer: str
    probability: float
    top_k: list[tuple[str, float]]
    spatial_attention: np.ndarray             # grid (rows, columns) of weights summing to 1: where the answer's
                                              # evidence lies (vqa_agent/evidence_map.py), the board's heatmap
    proposals: list[Proposal]
    concept_probabilities: dict[str, float]   # p(O|I) for each object/scene word
    question_embedding: np.ndarray
    unknown_words: list[str] = field(default_factory=list)
    answered_by: str = "classifier"           # or "program" (symbolic agents, parsed questions)
    # a program's answer: the reading of the scene the program ran on (vqa_agent/symbolic.py), so that an
    # explanation can trace what the agent computed (explainers/nle.py)
    program_scene: Scene | None = field(default=None, compare=False, repr=False)
    # Words naming nothing in the agent's world ("dog"): the answer is then no answer at all, and
    # `refusal` says why. The game refuses such questions before they reach the agent (Vocabulary.check).
    outside_words: list[str] = field(default_factory=list)
    refusal: str | None = None
    # the network's own spatial attention grid (VQAModel.reason, mean over steps): an input to its memory,
    # not where its answer came from (evidence_map.py says why); kept for research, never drawn
    network_attention: np.ndarray | None = field(default=None, compare=False, repr=False)


def question_per_image(images: Sequence, questions: Sequence[str] | str) -> list[str]:
    """questions[i] for images[i]; a single question is asked of every image."""
    questions = [questions] if isinstance(questions, str) else list(questions)
    if len(questions) == 1 and len(images) > 1:
        questions = questions * len(images)
    if len(images) != len(questions):
        raise ValueError(f"got {len(images)} images but {len(questions)} questions")
    return questions


def pad_questions(encoded: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([len(e) for e in encoded])
    ids = torch.zeros(len(encoded), int(lengths.max()), dtype=torch.long)
    for i, e in enumerate(encoded):
        ids[i, : len(e)] = torch.tensor(e)
    return ids, lengths


class VQAAgent:
    answers_briefly = True      # answer(..., brief=True): explainers/agent_interface.py `brief_answers`

    def __init__(self, model: VQAModel, vocabulary: Vocabulary, device: str = "auto") -> None:
        self.device = pick_device(device)
        self.model = model.to(self.device).eval()
        self.config: AgentConfig = model.config
        self.vocabulary = vocabulary
        self._cache: OrderedDict[bytes, tuple] = OrderedDict()
        self._keys: OrderedDict[int, tuple[np.ndarray, bytes]] = OrderedDict()   # id -> (array, its key): _key
        self.feature_cache = FEATURE_CACHE_SIZE   # images whose features stay in memory (a worker raises it)
        # True: each new image is looked at alone, so its features are the same bits whichever images came
        # with it and whatever the cache held (a batch's shape changes the last bits of its sums); slower
        self.batch_invariant = False
        self.path: Path | None = None    # the checkpoint directory it was loaded from (its own NLE model is there)

    # --- persistence ------------------------------------------------------------------------------

    @classmethod
    def create(cls, config: AgentConfig, vocabulary: Vocabulary, device: str = "auto") -> "VQAAgent":
        torch.manual_seed(config.seed)
        return cls(VQAModel(config, len(vocabulary.words), len(vocabulary.answers)), vocabulary, device)

    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike, device: str = "auto") -> "VQAAgent":
        path = resolve_agent_path(name_or_path)
        config = AgentConfig.from_dict(json.loads((path / "config.json").read_text()))
        vocabulary = Vocabulary.from_dict(json.loads((path / "vocabulary.json").read_text()))
        model = VQAModel(config, len(vocabulary.words), len(vocabulary.answers))
        model.load_state_dict(load_file(path / "model.safetensors"))
        agent = cls(model, vocabulary, device)
        agent.path = Path(path)
        return agent

    def save_pretrained(self, path: str | os.PathLike, extra: dict | None = None) -> Path:
        """Writes the agent to `path` atomically (a sibling temp directory renamed into place)."""
        state = {k: v.detach().cpu().contiguous() for k, v in self.model.state_dict().items()}
        return write_checkpoint(path, lambda file: save_file(state, file), self.config.to_dict(),
                                self.vocabulary.to_dict(), extra)

    # --- answering --------------------------------------------------------------------------------

    def _look(self, images: Sequence) -> list["SeenImage"]:
        """What the agent sees in each image, whatever the question: features, proposals with masks
        and attributes, concept probabilities. Cached by image (KnownImage.key, else the content)."""
        keys, arrays = [], {}
        for image in images:
            if isinstance(image, KnownImage):
                keys.append(image.key.encode())
            else:
                array = as_rgb_array(image)
                keys.append(self._key(array))
                arrays[keys[-1]] = array
        for k in keys:
            if k in self._cache:
                self._cache.move_to_end(k)
        new = [(k, arrays.get(k) if k in arrays else as_rgb_array(image))
               for k, image in dict(zip(keys, images)).items() if k not in self._cache]
        size = 1 if self.batch_invariant else max(len(new), 1)
        for part in (new[start:start + size] for start in range(0, len(new), size)):
            features = self.model.encode_images(to_model_input([a for _, a in part], self.config).to(self.device))
            found = self.model.propose(features.detection)
            objects = self.model.objects(features, [boxes for boxes, _ in found])
            for j, (key, array) in enumerate(part):
                self._cache[key] = self._seen_image(array, features, found[j], objects, j)
        # evict the least recently used, never an image of this request
        while len(self._cache) > max(self.feature_cache, len(set(keys))):
            self._cache.popitem(last=False)
        return [self._cache[k] for k in keys]

    def _key(self, array: np.ndarray) -> bytes:
        """The cache key of an image given as pixels: a hash of its content, computed once per read-only array
        object (hashing a 20-image round cost ~7 ms). A read-only array cannot change under its id while
        this cache holds a reference to it."""
        known = self._keys.get(id(array))
        if known is not None and known[0] is array:
            self._keys.move_to_end(id(array))
            return known[1]
        key = hashlib.blake2b(array.tobytes() + str(array.shape).encode(), digest_size=16).digest()
        if not array.flags.writeable:
            self._keys[id(array)] = (array, key)
            while len(self._keys) > KNOWN_ARRAYS:
                self._keys.popitem(last=False)
        return key

    def _seen_image(self, array: np.ndarray, features: ImageFeatures, found, objects: Objects, j: int) -> "SeenImage":
        boxes, scores = found
        height, width = array.shape[:2]
        # masks at the model's resolution, where they are worked out (scaled to the image's when an output is made)
        small = (features.detection.shape[-2] * DETECTION_STRIDE, features.detection.shape[-1] * DETECTION_STRIDE)
        masks = self.model.proposal_masks(features.detection[j:j + 1], [boxes], *small)[0].cpu().numpy()
        n = len(boxes)
        beliefs = {a: torch.softmax(objects.attributes[j, :n, s], dim=-1).cpu() for a, s in CONCEPT_SLICES.items()}
        scale = torch.tensor([width / self.config.image_width, height / self.config.image_height] * 2)
        proposals = [Proposal(box=tuple((boxes[k].cpu() * scale).tolist()), score=float(scores[k]), mask=None,
                              attention=0.0,
                              attributes={a: (CONCEPTS[CONCEPT_SLICES[a].start + int(p[k].argmax())], float(p[k].max()))
                                          for a, p in beliefs.items()})
                     for k in range(n)]
        concepts = {}
        for a, p in beliefs.items():
            present = p * scores.cpu().unsqueeze(1)  # noisy-OR over proposals, weighted by their confidence
            for value, probability in zip(CONCEPTS[CONCEPT_SLICES[a]], (1 - torch.prod(1 - present, dim=0)).tolist()):
                concepts[value] = probability
        grid = features.grid[j:j + 1]
        # copies, not views: a view would keep its whole batch's tensor alive
        mine = Objects(*(getattr(objects, f)[j:j + 1, :max(n, 1)].clone() for f in OBJECT_FIELDS))
        packed = PackedMasks.pack(masks)
        return SeenImage(grid=grid.to(STORE_DTYPE), objects=mine,
                         projected=tuple(x.to(STORE_DTYPE) for x in self.model.project(grid, mine)),
                         proposals=proposals, masks=packed, size=(height, width), concepts=concepts,
                         perceived=perceive(objects, j, scores.cpu()) if self.config.symbolic else None,
                         rles=[compact_rle(m) for m in packed.unpack(height, width)], cells=CellShares.of_masks(masks))

    @torch.inference_mode()
    def prepare(self, images: Sequence) -> None:
        """Looks at images ahead of the questions (a game knows its images when it starts), so that the
        first question about them costs no more than the later ones."""
        for start in range(0, len(images), 32):
            self._look(images[start:start + 32])

    def save_seen(self, path: str | os.PathLike) -> None:
        """Writes what the agent keeps of the images it has looked at (by key) to `path`, atomically, so that
        another process of the same checkpoint can start with it (`load_seen`) instead of looking again."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        torch.save({"format": SEEN_FORMAT, "seen": dict(self._cache)}, tmp)
        tmp.replace(path)

    def load_seen(self, path: str | os.PathLike) -> int:
        """Adds what `save_seen` wrote (by this agent's checkpoint: the caller keys the file by it); returns
        how many images. A file this code cannot read (another format, damaged) raises ValueError."""
        try:
            # a pickle: only ever a file a worker of this project wrote beside its own world (save_seen)
            stored = torch.load(path, map_location=self.device, weights_only=False)
        except (OSError, EOFError, RuntimeError, AttributeError, ModuleNotFoundError, pickle.UnpicklingError) as error:
            raise ValueError(f"cannot read the stored features {path}: {error}") from error
        if not isinstance(stored, dict) or stored.get("format") != SEEN_FORMAT:
            raise ValueError(f"{path} holds features of another format than {SEEN_FORMAT}")
        for seen in stored["seen"].values():     # stored before they were kept: spread once now, not in a round
            if getattr(seen, "cells", None) is None:
                seen.cells = CellShares.of_masks(seen.masks.unpack(*seen.masks.shape[1:]))
        self._cache.update(stored["seen"])
        while len(self._cache) > self.feature_cache:
            self._cache.popitem(last=False)
        return len(stored["seen"])

    @torch.inference_mode()
    def embed_images(self, images: Sequence, batch_size: int = 64) -> np.ndarray:
        """[len(images), channels] float32: the image encoder's last stage, averaged over the grid (an
        ImageEmbedder, the synthetic world's stand-in for the paper's VGG16 FC7 image-set distances)."""
        vectors = []
        for start in range(0, len(images), batch_size):
            arrays = [as_rgb_array(image) for image in images[start:start + batch_size]]
            raw = self.model.encode_images(to_model_input(arrays, self.config).to(self.device)).raw
            vectors.append(raw.mean(dim=(2, 3)).float().cpu().numpy())
        return np.concatenate(vectors) if vectors else np.zeros((0, self.config.channels[-1]), np.float32)

    @property
    def dim(self) -> int:
        return self.config.channels[-1]

    # --- what explainers may ask beyond answers (explainers/agent_interface.py, the Agent protocol) ---

    @property
    def question_dim(self) -> int:
        """The size of a question embedding (AgentOutput.question_embedding, embed_texts)."""
        return self.config.hidden

    def fingerprint(self) -> str:
        """Identifies the agent by its configuration and weights, wherever it was loaded from: explainers key
        what they build for one agent by it (NLE models record it, RelQA caches its index under it).
        Stable as AgentConfig grows: a field added since the first fingerprints were recorded enters it only
        when it differs from its default (config.fingerprint_dict), so the shipped NLE models' recorded
        fingerprints still match their agents."""
        digest = hashlib.blake2b(json.dumps(fingerprint_dict(self.config), sort_keys=True).encode(), digest_size=16)
        for key, value in sorted(self.model.state_dict().items()):
            digest.update(key.encode())
            digest.update(value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
        return digest.hexdigest()

    @torch.inference_mode()
    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """The question encoder's vector of each text, [len(texts), hidden] float32: what the agent makes
        of a question (or of question and answer words together), for retrieval by distance."""
        vectors = []
        for start in range(0, len(texts), 1024):
            chunk = texts[start:start + 1024]
            ids, lengths = pad_questions([self.vocabulary.encode(t, self.config.max_question_words) for t in chunk])
            vectors.append(self.model.encode_questions(ids.to(self.device), lengths)[0].float().cpu().numpy())
        return np.concatenate(vectors) if vectors else np.zeros((0, self.config.hidden), np.float32)

    @torch.inference_mode()
    def answer(self, images: Sequence, questions: Sequence[str], brief: bool = False,
               alternatives: bool | Sequence[bool] = True) -> list[AgentOutput]:
        """Answers questions[i] about images[i]. A single question is asked of every image. `brief`: the
        caller reads only each output's answer, probability, top_k and how it was answered (RelQA's related
        questions), so the outputs carry no proposals (their masks are most of an output's cost), and no
        alternatives. `alternatives` (one for all, or one per question) False: a question a program answers
        skips the network's reasoning, so its top_k is the program's answer alone (the classifier's guesses
        are not computed) and it has no network attention; answer, probability, proposals and attention are
        the program's either way (a game round's images other than the secret: server/inference.py)."""
        questions = question_per_image(images, questions)
        if not images:
            return []
        # what depends on the question alone, once per distinct question (a round asks one of 20 images)
        read = {q: self._read(q) for q in dict.fromkeys(questions)}
        ids, lengths = pad_questions([read[q].ids for q in questions])
        seen = self._look(list(images))
        question, words, word_mask = self.model.encode_questions(ids.to(self.device), lengths)
        programs = [self._program_answer(q, read[q], image) for q, image in zip(questions, seen)]
        wanted = [alternatives] * len(questions) if isinstance(alternatives, bool) else list(alternatives)
        if len(wanted) != len(questions):
            raise ValueError(f"got {len(wanted)} alternatives flags for {len(questions)} questions")
        reasoned = [n for n, program in enumerate(programs) if program is None or (wanted[n] and not brief)]
        top_p, top_i, object_attention, network_attention = self._reason(
            seen, reasoned, question, words, word_mask) if reasoned else ([], [], [], [])
        row = {n: r for r, n in enumerate(reasoned)}
        question_embedding = question.cpu().numpy()
        outputs = []
        for n, (question_text, image, symbolic) in enumerate(zip(questions, seen, programs)):
            r = row.get(n)
            top_k = [] if r is None else [(self.vocabulary.answers[j], p) for p, j in zip(top_p[r], top_i[r])]
            attention = [] if r is None else object_attention[r][:len(image.proposals)]
            question_read = read[question_text]
            if symbolic is not None:
                # the program's own evidence is what this agent looked at; the classifier's guesses
                # stay as alternatives, scaled to share what the program's answer leaves
                top_k = [(symbolic.answer, symbolic.probability)] + \
                    [(a, p * (1 - symbolic.probability)) for a, p in top_k if a != symbolic.answer][: self.config.top_k - 1]
                # an answer about nothing ("no", "0") rests on every perceived object not matching
                looked = symbolic.evidence or range(len(image.proposals))
                attention = [float(k in looked) / max(len(looked), 1) for k in range(len(image.proposals))]
            refusal = question_read.refusal
            masks = [] if brief else image.masks.unpack(*image.size)
            if image.rles is None and not brief:        # an image stored before they were kept: once
                image.rles = [compact_rle(m) for m in masks]
            outputs.append(AgentOutput(
                question=question_text, answer=top_k[0][0], probability=0.0 if refusal else top_k[0][1], top_k=top_k,
                spatial_attention=image.cells.spread(attention),
                proposals=[] if brief else [replace(p, attention=attention[k], mask=masks[k], rle=image.rles[k])
                                            for k, p in enumerate(image.proposals)],
                concept_probabilities=dict(image.concepts), question_embedding=question_embedding[n].copy(),
                unknown_words=list(question_read.unknown_words),
                answered_by="program" if symbolic is not None else "classifier",
                program_scene=symbolic.scene if symbolic is not None else None,
                outside_words=list(question_read.outside_words),
                refusal=refusal, network_attention=None if r is None else network_attention[r].copy()))
        return outputs

    def _program_answer(self, question: str, question_read: "ReadQuestion", image: "SeenImage"):
        """A symbolic agent's program answer on the scene it perceived, or None (not symbolic, no parse)."""
        if not image.perceived:
            return None
        # as typed first ("There is a cube; what is its size?" needs its semicolon), then as the agent reads
        # it (typos fixed, filler dropped, synonyms it knows)
        reach = self.config.symbolic_max_relations
        return answer_symbolically(question, image.perceived, reach) or \
            answer_symbolically(question_read.as_read, image.perceived, reach)

    def _reason(self, seen: list, rows: list[int], question, words, word_mask) -> tuple:
        """The network's reasoning on questions `rows` (each about its image in `seen`): its top-k answer
        probabilities and indices, object attention (lists) and spatial attention grids (numpy), per row."""
        subset = (lambda x: x) if len(rows) == len(seen) else (lambda x: x[rows])
        chosen = [seen[n] for n in rows]
        objects = stack_objects([s.objects for s in chosen])
        k = objects.mask.shape[1]
        # the stored float16 back to float32, the reasoning's precision
        grid = torch.cat([s.grid for s in chosen]).float()
        cells_key = torch.cat([s.projected[0] for s in chosen]).float()
        objects_key, gates_key = (torch.cat([pad_objects(s.projected[i], k) for s in chosen]).float() for i in (1, 2))
        reasoning = self.model.reason(subset(question), subset(words), subset(word_mask), grid, objects,
                                      torch.arange(len(chosen), device=self.device), (cells_key, objects_key, gates_key))
        probabilities = torch.softmax(reasoning.logits, dim=1).cpu()
        top_p, top_i = (t.tolist() for t in probabilities.topk(min(self.config.top_k, probabilities.shape[1]), dim=1))
        # each to the host once for the batch: on a GPU a copy per output is a synchronisation per output
        return top_p, top_i, reasoning.object_attention.cpu().tolist(), reasoning.spatial_attention.cpu().numpy()

    def _read(self, question: str) -> "ReadQuestion":
        refusal = self._refusal(question)
        return ReadQuestion(ids=self.vocabulary.encode(question, self.config.max_question_words),
                            as_read=" ".join(self.vocabulary.read(question)), refusal=refusal,
                            unknown_words=tuple(self.vocabulary.unknown_words(question)),
                            outside_words=tuple(self.vocabulary.outside_words(question)) if refusal else ())

    def _refusal(self, question: str) -> str | None:
        """Why a question gets no confident answer (a word outside the world, another script), or None."""
        try:
            self.vocabulary.check(question)
        except QuestionError as error:
            return str(error)
        return None


@dataclass(frozen=True)
class ReadQuestion:
    """What the agent makes of a question's text, whatever the image."""
    ids: list[int]                   # the encoder's word ids
    as_read: str                     # typos fixed, filler dropped, synonyms it knows
    refusal: str | None              # why it gets no confident answer, or None
    unknown_words: tuple[str, ...]
    outside_words: tuple[str, ...]


@dataclass
class SeenImage:
    """Everything question-independent about an image the agent has looked at, kept compactly (a worker keeps
    the whole game pool: ~0.26 MB an image with the shipped agents, against ~0.9 MB in float32 with
    full-resolution bool masks)."""
    grid: torch.Tensor          # [1, hidden, gh, gw] STORE_DTYPE
    objects: Objects            # batch of one, padded to at least one slot; float32 (small)
    projected: tuple            # VQAModel.project of grid and objects, STORE_DTYPE: what every question's attention reuses
    proposals: list[Proposal]   # attention left at 0 (it depends on the question), mask None: see masks
    masks: "PackedMasks"        # the proposals' masks, at the model's resolution
    size: tuple[int, int]       # the image's height and width: what the masks are scaled to in an output
    concepts: dict[str, float]
    perceived: PerceivedScene | None = None   # symbolic agents: the scene graph read from the proposals
    rles: list[dict] | None = None   # the masks' run lengths at the image's size (int32 counts): every attention
                                     # explanation of the image sends them (~0.4 KB a mask)
    cells: CellShares | None = None  # the masks laid over the evidence grid: each answer's spatial map (~1 KB;
                                     # laid when the image is seen, or by load_seen for a store without them)


def compact_rle(mask: np.ndarray) -> dict:
    """mask_to_rle with its counts as an int32 array (kept per proposal of every image a worker has seen)."""
    rle = mask_to_rle(mask)
    return {"size": rle["size"], "counts": np.asarray(rle["counts"], dtype=np.int32)}


@dataclass(frozen=True)
class PackedMasks:
    """Boolean masks [K, h, w], one bit a pixel (np.packbits): 2.4 KB a proposal at 160x120."""
    bits: np.ndarray              # [K, ceil(h * w / 8)] uint8
    shape: tuple[int, int, int]   # K, h, w

    @classmethod
    def pack(cls, masks: np.ndarray) -> "PackedMasks":
        k, h, w = masks.shape
        return cls(np.packbits(masks.reshape(k, h * w), axis=1), (k, h, w))

    def unpack(self, height: int, width: int) -> np.ndarray:
        """[K, height, width] bool, scaled as F.interpolate(mode="nearest") scales them (VQAModel.proposal_masks)."""
        k, h, w = self.shape
        masks = np.unpackbits(self.bits, axis=1, count=h * w).reshape(k, h, w).view(bool)
        if (height, width) == (h, w):
            return masks
        if (height, width) == (2 * h, 2 * w):   # the pool's images: each pixel doubled (nearest's i // 2), fast
            doubled = (masks.view(np.uint8).astype(np.uint16) * 257).view(np.uint8)   # both bytes of 0x0101 * m
            return np.repeat(doubled, 2, axis=1).view(bool)
        return masks.take(nearest_indices(h, height), axis=1).take(nearest_indices(w, width), axis=2)


@lru_cache(maxsize=64)
def nearest_indices(size: int, scaled: int) -> np.ndarray:
    """Which of `size` rows (or columns) each of `scaled` comes from under F.interpolate(mode="nearest")."""
    rows = torch.arange(size, dtype=torch.float32).view(1, 1, size)
    indices = F.interpolate(rows, size=scaled, mode="nearest").view(-1).long().numpy()
    indices.setflags(write=False)   # shared by every caller
    return indices


def pad_objects(x: torch.Tensor, k: int) -> torch.Tensor:
    """[1, K', ...] -> [1, k, ...], zeros after the image's own K' proposals."""
    return torch.nn.functional.pad(x, (0, 0) * (x.dim() - 2) + (0, k - x.shape[1]))


def stack_objects(parts: list[Objects]) -> Objects:
    """Objects of several images in one batch, padded to the largest number of proposals."""
    k = max(p.mask.shape[1] for p in parts)
    return Objects(*(torch.cat([pad_objects(getattr(p, f), k) for p in parts]) for f in OBJECT_FIELDS))


def write_checkpoint(path: str | os.PathLike, write_weights, config: dict, vocabulary: dict,
                     extra: dict | None = None) -> Path:
    """A model directory (model.safetensors written by `write_weights(file)`, config.json,
    vocabulary.json, training.json when `extra` is given), written atomically: a sibling temp directory
    renamed into place, so a crash never leaves half a checkpoint."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    write_weights(tmp / "model.safetensors")
    (tmp / "config.json").write_text(json.dumps(config, indent=2))
    (tmp / "vocabulary.json").write_text(json.dumps(vocabulary))
    if extra:
        (tmp / "training.json").write_text(json.dumps(extra, indent=2))
    if path.exists():
        shutil.rmtree(path)
    os.replace(tmp, path)
    return path
