"""The worlds the tests build (once per session, in tests/conftest.py)."""
from vqa_agent.world.build import WorldConfig

TINY_WORLD = WorldConfig(images=30, pool=10, chunk_size=10, questions_per_image=6,
                         explanations_per_question=3, seed=7)

# Enough images for the tiny agent to learn something in about 20 seconds.
AGENT_WORLD = WorldConfig(images=300, pool=20, chunk_size=50, questions_per_image=10,
                          explanations_per_question=2, seed=11)
