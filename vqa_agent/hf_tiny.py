"""Tiny random-weight transformers VQA models, built offline: what the tests and the latency benchmark load
through the `hf:PATH` adapter (vqa_agent/hf_agent.py) in place of a downloaded ViLT or BLIP.

    make_tiny_vilt(dir)     # ViltForQuestionAnswering, 5 answers, 64-pixel images in 16-pixel patches
    make_tiny_blip(dir)     # BlipForQuestionAnswering, a 2-layer vision tower and text encoder/decoder

Each directory holds what a real checkpoint holds (config.json, model.safetensors, the processor's and
the tokenizer's files), written by save_pretrained, so the adapter loads them exactly as it loads a real
model. The weights are random (seeded): the answers mean nothing, the shapes and the plumbing are real.
"""
from __future__ import annotations

from pathlib import Path

# [PAD] [UNK] [CLS] [SEP] [MASK] (BERT's special tokens, ids 0-4 here) and the words the tests ask with
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
WORDS = ("is there a an the any what which color colour of how many are in on to left right front behind "
         "red blue green yellow gray brown purple cyan dog cat cube cubes sphere spheres cylinder ball "
         "thing things object large small big metal rubber shiny matte same size shape material "
         "yes no 0 1 2 3 ?").split()
ANSWERS = ("yes", "no", "2", "red", "dog", "blue", "cube", "3")


def write_vocabulary(path: Path, extra: tuple[str, ...] = ()) -> Path:
    """A BERT vocab.txt: the special tokens, then WORDS (and `extra` tokens, e.g. BLIP's [DEC])."""
    file = Path(path) / "vocab.txt"
    file.write_text("\n".join(SPECIAL_TOKENS + tuple(WORDS) + tuple(extra)) + "\n")
    return file


def make_tiny_vilt(path, answers=ANSWERS, image_size: int = 64, patch_size: int = 16, seed: int = 0) -> Path:
    """A ViltForQuestionAnswering with random weights and its ViltProcessor, saved in `path`."""
    import torch
    from transformers import BertTokenizer, ViltConfig, ViltForQuestionAnswering, ViltImageProcessor, ViltProcessor

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = BertTokenizer(str(write_vocabulary(path)))
    config = ViltConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=37, image_size=image_size, patch_size=patch_size,
                        max_position_embeddings=40, num_labels=len(answers),
                        id2label=dict(enumerate(answers)), label2id={a: i for i, a in enumerate(answers)})
    torch.manual_seed(seed)
    ViltForQuestionAnswering(config).eval().save_pretrained(path)
    # the real processor's rule (shortest edge to size, the longer one capped, sides a multiple of the
    # patch), at the tiny model's resolution: 320x240 images become 64x80 (4x5 patches)
    images = ViltImageProcessor(size={"shortest_edge": image_size}, size_divisor=patch_size)
    ViltProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(path)
    return path


def make_tiny_blip(path, image_size: int = 64, patch_size: int = 16, seed: int = 0) -> Path:
    """A BlipForQuestionAnswering with random weights and its BlipProcessor, saved in `path`."""
    import torch
    from transformers import (BertTokenizer, BlipConfig, BlipForQuestionAnswering, BlipImageProcessor,
                              BlipProcessor)

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    # BLIP's decoder starts answers with its own [DEC] token (the bos token), as the real checkpoint does
    tokenizer = BertTokenizer(str(write_vocabulary(path, ("[DEC]",))), bos_token="[DEC]")
    text = dict(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=37, num_hidden_layers=2,
                num_attention_heads=2, max_position_embeddings=40, projection_dim=32,
                bos_token_id=tokenizer.convert_tokens_to_ids("[DEC]"), pad_token_id=0,
                sep_token_id=tokenizer.sep_token_id, eos_token_id=tokenizer.sep_token_id)
    # BLIP's vision tower starts its weights at 1e-10 (it is meant to be loaded): the tiny one gets BERT's
    # 0.02, or its features vanish in float16 and its attention is even everywhere
    vision = dict(hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=2,
                  image_size=image_size, patch_size=patch_size, projection_dim=32, initializer_range=0.02)
    config = BlipConfig(text_config=text, vision_config=vision, projection_dim=32, image_text_hidden_size=32)
    torch.manual_seed(seed)
    BlipForQuestionAnswering(config).eval().save_pretrained(path)
    images = BlipImageProcessor(size={"height": image_size, "width": image_size})
    BlipProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(path)
    return path


def make_tiny_bert(path, seed: int = 0) -> Path:
    """A transformers model directory that is no VQA model (a BertModel): what the adapter must refuse."""
    import torch
    from transformers import BertConfig, BertModel

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    write_vocabulary(path)
    torch.manual_seed(seed)
    BertModel(BertConfig(vocab_size=len(SPECIAL_TOKENS) + len(WORDS), hidden_size=32, num_hidden_layers=1,
                         num_attention_heads=2, intermediate_size=37)).save_pretrained(path)
    return path
