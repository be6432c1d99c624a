"""A contact sheet: sample scenes of a built world, each with a few of its questions and answers."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

CELL_TEXT_LINES = 12     # lines of question/answer text under each image
LINE_HEIGHT = 15
FONT_SIZE = 12
MARGIN = 8


def _font(size: int) -> ImageFont.ImageFont:
    for name in ("DejaVuSans.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"):
        try:
            return ImageFont.truetype(name, size)
        except OSError:
            continue
    return ImageFont.load_default(size=size)


def write_contact_sheet(world: Path | str, out: Path | str, n: int = 8, questions_per_scene: int = 3,
                        columns: int = 4, seed: int = 0, split: str | None = None) -> Path:
    """Draws n random scenes (from `split`, or any) with questions, answers and one explanation each."""
    world, out = Path(world), Path(out)
    scenes = json.loads((world / "scenes.json").read_text())["scenes"]
    questions = json.loads((world / "questions.json").read_text())["questions"]
    by_image: dict[int, list[dict]] = {}
    for q in questions:
        by_image.setdefault(q["image_index"], []).append(q)
    candidates = [s for s in scenes if (split is None or s["split"] == split) and s["image_index"] in by_image]
    if not candidates:
        raise ValueError(f"{world}: no scenes with questions{f' in split {split!r}' if split else ''}")
    rng = np.random.default_rng(seed)
    picked = [candidates[i] for i in rng.choice(len(candidates), min(n, len(candidates)), replace=False)]

    first = Image.open(world / "images" / picked[0]["image_filename"])
    width, height = first.size
    text_width_chars = max(20, width // 7)
    cell_h = height + CELL_TEXT_LINES * LINE_HEIGHT + MARGIN
    rows = -(-len(picked) // columns)
    sheet = Image.new("RGB", (columns * (width + MARGIN) + MARGIN, rows * cell_h + MARGIN), "white")
    draw, font = ImageDraw.Draw(sheet), _font(FONT_SIZE)
    for k, scene in enumerate(picked):
        x = MARGIN + (k % columns) * (width + MARGIN)
        y = MARGIN + (k // columns) * cell_h
        sheet.paste(Image.open(world / "images" / scene["image_filename"]).convert("RGB"), (x, y))
        draw.text((x + 4, y + 4), f"{scene['image_filename']}  ({len(scene['objects'])} objects)", fill="white", font=font)
        lines = []
        own = by_image[scene["image_index"]]
        chosen = [own[i] for i in sorted(rng.choice(len(own), min(questions_per_scene, len(own)), replace=False))]
        for q in chosen:
            lines += textwrap.wrap(f"Q: {q['question']}  A: {q['answer']}", text_width_chars)
        if chosen and chosen[0].get("explanations"):
            lines += textwrap.wrap(f"Why (first Q): {chosen[0]['explanations'][0]}", text_width_chars)
        for i, line in enumerate(lines[:CELL_TEXT_LINES]):
            draw.text((x, y + height + 4 + i * LINE_HEIGHT), line, fill="black", font=font)
    out.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(out)
    return out
