"""Image embeddings for choosing how hard a game's image set is.

The paper picks distractors by the L2 distance between VGG16 FC7 features of the images: the lower
the mean distance from the secret image to the distractors, the harder the set (docs/research.md, section
1). `ImageEmbedder` is that contract; `TorchvisionEmbedder` is the adapter for natural-image
backbones, loading a torchvision VGG16 or ResNet from a local state-dict file (nothing is downloaded
on these machines). `pairwise_l2` and `set_difficulty` turn embeddings into the difficulty measure.

The backbone kept is the torchvision model with its classification head removed, so its parameter
names are torchvision's own: a state dict saved from a torchvision model (with or without its head)
loads as is.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import torch
import torchvision
from PIL import Image
from torch import nn
from torchvision.transforms.v2 import functional as TF

from .distances import set_difficulty  # noqa: F401  (numpy only, so a web process can use it without torch)

# Embedding size per architecture: VGG16's FC7, and the ResNets' global-average-pooled last stage.
ARCH_DIMS = {"vgg16": 4096, "resnet18": 512, "resnet50": 2048}
# Checkpoint keys of the classification head, which the embedding never reaches. They are dropped
# before loading, so checkpoints fine-tuned with any number of classes fit.
HEAD_PREFIXES = {"vgg16": "classifier.6.", "resnet18": "fc.", "resnet50": "fc."}
# Per-channel statistics every torchvision ImageNet backbone was trained with.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
# Seed of the random initialisation used when no weights are given, so that random-weight embedders
# (tests, random-feature baselines) agree across processes.
RANDOM_INIT_SEED = 0
# How many offending keys an error message names before it says "and N more".
KEYS_SHOWN = 5

ImageLike = Image.Image | np.ndarray


@runtime_checkable
class ImageEmbedder(Protocol):
    """Maps images to fixed-size vectors whose L2 distance says how alike two images look."""

    dim: int

    def embed(self, images: Sequence[ImageLike]) -> np.ndarray:
        """(N, dim) float32 embeddings, one row per image, in order."""
        ...


@dataclass
class BackboneConfig:
    arch: str = "vgg16"          # "vgg16" (FC7, 4096-d, as the paper) or "resnet18"/"resnet50" (pooled)
    weights: str | None = None   # local state-dict file (.pth/.pt or .safetensors); None = random init (tests only)
    image_size: int = 224        # shorter side is resized to this, then the centre square is cropped
    batch_size: int = 32         # images per forward pass; also bounds the preprocessed images held at once
    device: str = "auto"         # "auto": cuda when available, else cpu; or any torch device string

    def __post_init__(self) -> None:
        if self.arch not in ARCH_DIMS:
            raise ValueError(f"unknown arch {self.arch!r}; choose one of {sorted(ARCH_DIMS)}")
        if self.image_size < 1 or self.batch_size < 1:
            raise ValueError("image_size and batch_size must be positive")


class CheckpointError(ValueError):
    """A weights file that cannot be read as a state dict, or one that does not fit the architecture."""


# ----------------------------------------------------------------------------------------------
# Preprocessing
# ----------------------------------------------------------------------------------------------

def to_rgb_tensor(image: ImageLike) -> torch.Tensor:
    """(3, H, W) float32 in [0, 1] from a PIL image of any mode or an HxW / HxWx1/3/4 uint8 or [0, 1] float array.

    Alpha is dropped (the colour under it is kept), as PIL's own RGBA -> RGB conversion does, so the
    same picture gives the same tensor whichever way it arrives.
    """
    if isinstance(image, Image.Image):
        if image.mode == "P" and "transparency" in image.info:
            image = image.convert("RGBA")  # PIL warns when a palette with transparency goes straight to RGB
        image = np.asarray(image.convert("RGB"))
    if not isinstance(image, np.ndarray):
        raise TypeError(f"expected a PIL image or a numpy array, got {type(image).__name__}")
    array = image
    if array.ndim == 2:
        array = array[:, :, None]
    if array.ndim != 3 or array.shape[2] not in (1, 3, 4) or array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"expected an HxW, HxWx1, HxWx3 or HxWx4 array, got shape {image.shape}")
    if array.dtype == np.uint8:
        array = array.astype(np.float32) / 255  # a copy: arrays of PIL images are read-only
    elif np.issubdtype(array.dtype, np.floating):
        # Refuse rather than clip: a float image in 0..255 would otherwise become a white square.
        if not (array.min() >= 0 and array.max() <= 1):
            raise ValueError("float images must hold values in [0, 1] (no NaN); scale 0..255 data first")
        array = array.astype(np.float32)
    else:
        raise TypeError(f"array images must be uint8 or float in [0, 1], got dtype {array.dtype}")
    tensor = torch.from_numpy(array).permute(2, 0, 1)
    if tensor.shape[0] == 1:
        tensor = tensor.expand(3, -1, -1)
    return tensor[:3]


def preprocess(images: Sequence[ImageLike], image_size: int) -> torch.Tensor:
    """(N, 3, image_size, image_size) normalised batch: resize shorter side, centre crop, ImageNet mean/std."""
    batch = []
    for image in images:
        tensor = TF.resize(to_rgb_tensor(image), [image_size], antialias=True)
        batch.append(TF.center_crop(tensor, [image_size, image_size]))
    return TF.normalize(torch.stack(batch), IMAGENET_MEAN, IMAGENET_STD)


# ----------------------------------------------------------------------------------------------
# Backbones and their weights
# ----------------------------------------------------------------------------------------------

def build_backbone(arch: str) -> nn.Module:
    """The torchvision model without its classification head, randomly initialised (fixed seed).

    VGG16 keeps classifier[:5] (FC6, ReLU, Dropout, FC7, ReLU), so its output is FC7 after the ReLU as
    in the paper; ResNets replace fc by the identity, so their output is the global-average-pooled
    last stage.
    """
    if arch not in ARCH_DIMS:
        raise ValueError(f"unknown arch {arch!r}; choose one of {sorted(ARCH_DIMS)}")
    # weights=None: the weights enums would download. fork_rng keeps the caller's RNG untouched.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(RANDOM_INIT_SEED)
        model = getattr(torchvision.models, arch)(weights=None)
    if arch == "vgg16":
        model.classifier = model.classifier[:5]
    else:
        model.fc = nn.Identity()
    return model.eval()


def read_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """The tensors of a local checkpoint: a plain state dict or one wrapped as {"state_dict"|"model": ...}."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"weights file not found: {path}")
    if path.suffix == ".safetensors":
        try:
            from safetensors.torch import load_file
        except ImportError:
            raise CheckpointError(f"{path} is a .safetensors file, but the safetensors package is not "
                                  "installed; install it or save the state dict with torch.save") from None
        try:
            checkpoint = load_file(str(path))
        except Exception as error:
            raise CheckpointError(f"{path} could not be read as a safetensors file: {error}") from error
    else:
        try:
            # weights_only: a checkpoint is data; never run code pickled into it.
            checkpoint = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as error:
            raise CheckpointError(f"{path} could not be read as a state dict ({type(error).__name__}); "
                                  "expected a file written by torch.save(model.state_dict(), path)") from error
    for wrapper in ("state_dict", "model"):
        if isinstance(checkpoint, Mapping) and isinstance(checkpoint.get(wrapper), Mapping):
            checkpoint = checkpoint[wrapper]
            break
    if (not isinstance(checkpoint, Mapping) or not checkpoint
            or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in checkpoint.items())):
        raise CheckpointError(f"{path} is not a state dict (a mapping of parameter names to tensors); "
                              "expected a file written by torch.save(model.state_dict(), path)")
    state = dict(checkpoint)
    # Models saved from inside nn.DataParallel / DistributedDataParallel prefix every key.
    if all(key.startswith("module.") for key in state):
        state = {key.removeprefix("module."): value for key, value in state.items()}
    return state


def _some(keys: list[str]) -> str:
    more = f" and {len(keys) - KEYS_SHOWN} more" if len(keys) > KEYS_SHOWN else ""
    return ", ".join(keys[:KEYS_SHOWN]) + more


def load_weights(model: nn.Module, arch: str, state: Mapping[str, torch.Tensor], source: str = "state dict") -> None:
    """Load a (head-stripped) state dict into `model`, or say exactly which keys do not fit."""
    state = {k: v for k, v in state.items() if not k.startswith(HEAD_PREFIXES[arch])}
    expected = model.state_dict()
    # BatchNorm's batch counters only matter in training; checkpoints from old PyTorch lack them.
    missing = [k for k in expected if k not in state and not k.endswith("num_batches_tracked")]
    unexpected = [k for k in state if k not in expected]
    mismatched = [f"{k} {tuple(state[k].shape)} vs {tuple(v.shape)}"
                  for k, v in expected.items() if k in state and state[k].shape != v.shape]
    problems = []
    if missing:
        problems.append(f"missing keys: {_some(missing)}")
    if unexpected:
        problems.append(f"unexpected keys: {_some(unexpected)}")
    if mismatched:
        problems.append(f"shape mismatches (checkpoint vs {arch}): {_some(mismatched)}")
    if problems:
        raise CheckpointError(f"{source} does not fit torchvision's {arch}; " + "; ".join(problems))
    model.load_state_dict(state, strict=False)  # strict=False only for the tolerated batch counters


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


# ----------------------------------------------------------------------------------------------
# The adapter
# ----------------------------------------------------------------------------------------------

class TorchvisionEmbedder:
    """ImageEmbedder over a torchvision VGG16 (FC7) or ResNet (pooled) loaded from a local file."""

    def __init__(self, config: BackboneConfig):
        self.config = config
        self.dim = ARCH_DIMS[config.arch]
        self.device = resolve_device(config.device)
        self.model = build_backbone(config.arch)
        if config.weights is not None:
            load_weights(self.model, config.arch, read_state_dict(config.weights), source=str(config.weights))
        self.model.to(self.device).eval()  # eval: dropout off, BatchNorm uses its running statistics

    def embed(self, images: Sequence[ImageLike]) -> np.ndarray:
        """(N, dim) float32 embeddings, computed batch_size images at a time."""
        out = np.empty((len(images), self.dim), dtype=np.float32)
        step = self.config.batch_size
        with torch.inference_mode():
            for start in range(0, len(images), step):
                batch = preprocess(images[start:start + step], self.config.image_size).to(self.device)
                out[start:start + len(batch)] = self.model(batch).float().cpu().numpy()
        return out


# ----------------------------------------------------------------------------------------------
# Distances and set difficulty
# ----------------------------------------------------------------------------------------------

def pairwise_l2(embeddings: np.ndarray) -> np.ndarray:
    """(N, N) float64 Euclidean distances between the rows of `embeddings`; symmetric, zero diagonal."""
    x = np.asarray(embeddings, dtype=np.float64)  # float64: |a|^2 + |b|^2 - 2ab cancels badly in float32
    squared = (x * x).sum(axis=1)
    d2 = squared[:, None] + squared[None, :] - 2.0 * (x @ x.T)
    d = np.sqrt(np.maximum(d2, 0.0))
    d = (d + d.T) / 2  # exact symmetry despite rounding in the matrix product
    np.fill_diagonal(d, 0.0)
    return d
