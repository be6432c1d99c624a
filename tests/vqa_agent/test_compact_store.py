"""Issue 29: what the agent keeps of an image is compact (features and attention projections in float16,
proposal masks bit-packed at the model's resolution), and its answers are those of features computed afresh
in float32 with full-resolution masks (VQAModel's own calls, nothing stored).

Tolerances: float16 keeps 11 significant bits (relative rounding <= 2**-11 ~ 5e-4 per stored value). With the
shipped agents on 40 pool images x 5 questions the compact store moved probabilities by at most 1.3e-4,
object attention by 1.2e-4 and a spatial attention cell by 6.6e-4 (then the network's grid attention: the cells'
float16 projection inside the softmax over 300 cells; about 0.1% of the largest cell); the bounds below leave a
few times that. The spatial map is now the object attention spread over the masks (vqa_agent/evidence_map.py),
so a cell moves by at most the object attention's error.
"""
import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image

from vqa_agent.evidence_map import CellShares
from vqa_agent.agent import STORE_DTYPE, PackedMasks, VQAAgent, as_rgb_array, pad_questions, to_model_input

PROBABILITY_TOLERANCE = 1e-3     # every answer's probability, and the top-k's
SPATIAL_TOLERANCE = 2e-3         # a spatial attention cell
OBJECT_TOLERANCE = 1e-3          # a proposal's attention weight
QUESTIONS = ["how many spheres are there?", "what color is the large cube?", "is there a metal cylinder?",
             "what size is the red thing?", "are there more cubes than spheres?"]


@pytest.fixture(scope="module")
def agent(tiny_agent_dir):
    agent = VQAAgent.from_pretrained(tiny_agent_dir, device="cpu")
    agent.batch_invariant = True    # each image's features computed alone, as the reference computes them
    return agent


@pytest.fixture(scope="module")
def images(agent_world):
    scenes = [s for s in json.loads((agent_world / "scenes.json").read_text())["scenes"] if s["split"] == "test"][:4]
    pool = [np.asarray(Image.open(agent_world / "images" / s["image_filename"]).convert("RGB")) for s in scenes]
    # beside the world's 320x240 renders: one at the model's own resolution, one of an odd size
    return pool + [np.asarray(Image.fromarray(pool[0]).resize((80, 60))), np.ascontiguousarray(pool[1][:233, :301])]


@torch.inference_mode()
def fresh_float32(agent: VQAAgent, image: np.ndarray, question: str) -> dict:
    """One image and question with nothing stored: features, projections and full-size masks in float32."""
    model = agent.model
    features = model.encode_images(to_model_input([image], agent.config))
    boxes, scores = model.propose(features.detection)[0]
    objects = model.objects(features, [boxes])
    masks = model.proposal_masks(features.detection, [boxes], *image.shape[:2])[0].numpy()
    small = model.proposal_masks(features.detection, [boxes], agent.config.image_height, agent.config.image_width)[0]
    ids, lengths = pad_questions([agent.vocabulary.encode(question, agent.config.max_question_words)])
    reasoning = model.reason(*model.encode_questions(ids, lengths), features.grid, objects, torch.tensor([0]))
    attention = reasoning.object_attention[0, :len(boxes)].numpy()
    return {"probabilities": torch.softmax(reasoning.logits, dim=1)[0].numpy(), "masks": masks,
            "spatial": CellShares.of_masks(small.numpy()).spread(attention), "objects": attention}


def test_the_compact_store_answers_as_features_computed_afresh_in_float32(agent, images):
    agent.prepare(images)
    compared = 0
    for question in QUESTIONS:
        outputs = agent.answer(images, question)
        for image, out in zip(images, outputs):
            fresh = fresh_float32(agent, image, question)
            p = fresh["probabilities"]
            order = np.argsort(-p, kind="stable")
            margin = p[order[0]] - p[order[1]]
            if margin > 2 * PROBABILITY_TOLERANCE:    # (an exact tie could go either way)
                assert out.answer == agent.vocabulary.answers[order[0]]
                compared += 1
            assert abs(out.probability - p[agent.vocabulary.answers.index(out.answer)]) <= PROBABILITY_TOLERANCE
            for answer, probability in out.top_k:
                assert abs(probability - p[agent.vocabulary.answers.index(answer)]) <= PROBABILITY_TOLERANCE
            assert min(q for _, q in out.top_k) >= p[order[len(out.top_k)]] - PROBABILITY_TOLERANCE   # the k best
            assert np.abs(out.spatial_attention - fresh["spatial"]).max() <= SPATIAL_TOLERANCE
            assert len(out.proposals) == len(fresh["masks"]) == len(fresh["objects"])
            for k, proposal in enumerate(out.proposals):
                assert abs(proposal.attention - fresh["objects"][k]) <= OBJECT_TOLERANCE
                assert proposal.mask.dtype == bool and proposal.mask.shape == image.shape[:2]
                assert np.array_equal(proposal.mask, fresh["masks"][k])       # exactly: masks are bits
    assert compared >= len(QUESTIONS) * len(images) * 0.8
    assert sum(len(o.proposals) for o in outputs) > 0


def test_what_is_kept_of_an_image_is_float16_and_bits(agent, images):
    agent.prepare(images[:1])
    seen = agent._cache[agent._key(images[0])]
    assert seen.grid.dtype == STORE_DTYPE == torch.float16 and all(x.dtype == STORE_DTYPE for x in seen.projected)
    k, h, w = seen.masks.shape
    assert (h, w) == (agent.config.image_height, agent.config.image_width) and k == len(seen.proposals)
    assert seen.masks.bits.dtype == np.uint8 and seen.masks.bits.shape == (k, (h * w + 7) // 8)
    assert all(p.mask is None for p in seen.proposals)     # unpacked into each output, never kept twice


@pytest.mark.parametrize("size", [(12, 16), (24, 32), (7, 50), (999, 17), (25, 31), (3, 2)])
@pytest.mark.parametrize("k", [0, 1, 5])
def test_packed_masks_unpack_as_nearest_interpolation_scales_them(size, k):
    masks = np.random.default_rng(k).random((k, 12, 16)) > 0.7
    expected = F.interpolate(torch.from_numpy(masks).unsqueeze(1).float(), size=size, mode="nearest")[:, 0].bool()
    unpacked = PackedMasks.pack(masks).unpack(*size)
    assert unpacked.dtype == bool and unpacked.shape == (k, *size)
    assert np.array_equal(unpacked, expected.numpy())


def test_any_image_array_still_gets_masks_of_its_own_size(agent):
    image = as_rgb_array(np.random.default_rng(0).random((37, 53, 3)))
    out = agent.answer([image], "how many things are there?")[0]
    assert all(p.mask.shape == (37, 53) and p.mask.dtype == bool for p in out.proposals)
