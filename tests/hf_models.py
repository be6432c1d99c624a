"""Tiny random-weight transformers VQA models for the tests of the hf:PATH adapter (built offline; the
builders live in vqa_agent/hf_tiny.py, where the latency benchmark's --make-tiny finds them too)."""
from vqa_agent.hf_tiny import ANSWERS, make_tiny_bert, make_tiny_blip, make_tiny_vilt

__all__ = ["ANSWERS", "make_tiny_bert", "make_tiny_blip", "make_tiny_vilt"]
