"""A built world as a torch Dataset of (image, question, answer) items, one split at a time."""
from __future__ import annotations

import json
from pathlib import Path

import torch
from torch.utils.data import Dataset
from PIL import Image
from torchvision.transforms.functional import pil_to_tensor

from .clevr_io import QuestionRecord, load_questions


class WorldDataset(Dataset):
    """Items are dicts: image (uint8 tensor 3xHxW), question, answer, family, type, image_index.
    Decoded images are cached in memory because every image carries about ten questions."""

    def __init__(self, world: Path | str, split: str, cache_images: bool = True) -> None:
        self.world = Path(world)
        manifest = self.world / "manifest.json"
        if not manifest.exists():
            raise FileNotFoundError(f"{self.world} is not a built world (no manifest.json); "
                                    f"run `exag world build --out {self.world}`")
        splits = json.loads(manifest.read_text())["images_per_split"]
        if split not in splits:
            raise ValueError(f"{self.world} has no split {split!r}; it has {sorted(splits)}")
        self.records: list[QuestionRecord] = [q for q in load_questions(self.world / "questions.json") if q.split == split]
        self.cache: dict[str, torch.Tensor] | None = {} if cache_images else None

    def __len__(self) -> int:
        return len(self.records)

    def image(self, filename: str) -> torch.Tensor:
        if self.cache is not None and filename in self.cache:
            return self.cache[filename]
        with Image.open(self.world / "images" / filename) as file:
            image = pil_to_tensor(file.convert("RGB"))
        if self.cache is not None:
            self.cache[filename] = image
        return image

    def __getitem__(self, index: int) -> dict:
        q = self.records[index]
        return {"image": self.image(q.image_filename), "question": q.question, "answer": q.answer,
                "family": q.family, "type": q.type, "image_index": q.image_index}
