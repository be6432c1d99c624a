"""The ExAG VQA model, after Ray et al. (HCOMP 2019), in one file.

    image (3 x H x W)
      -> CNN: stride-4 map (proposals) and stride-8 grid (attention), coordinates appended
      -> proposal head on the stride-4 map: object centre heatmap, centre offset, box size, foreground
      -> ROI features of each proposal (torchvision roi_align on the grid) + box geometry
      -> attribute head per proposal (shape, color, size, material): the concept probabilities p(O|I)
      -> (symbolic agents) ground head per proposal: where the object stands on the ground plane, along
         the camera's left and front axes, so that CLEVR's relations can be computed from it
    question (words)
      -> embeddings -> LSTM: one vector per word and one for the question
    reasoning, `reasoning_steps` rounds (1 = the paper's single glimpse):
      control = attention over the question's words
      spatial attention over the grid and object attention over proposals, guided by control + memory;
        the object logits also get grounded terms: the concept words the control asks for, scored by
        the objects' log attribute beliefs, and the direction from the object attended last
      object gates (sigmoid) give a soft count of the selected objects
      memory <- GRU(attended grid feature, attended object feature, count)
    classifier over the answer vocabulary from memory, question, counts and the attended objects'
    attribute beliefs (a query's answer can be read off the attended object)

Proposals come from the pixels only. During training the ROI features are pooled from ground-truth
boxes (jittered) so that the attribute head and the reasoning learn from clean objects while the
proposal head learns to find them; at inference the proposal head's own boxes are used.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from .config import AgentConfig
from .roi_align import roi_align
from .world.scene import ATTRIBUTES

CONCEPT_ATTRIBUTES = ("shape", "color", "size", "material")
CONCEPTS = [value for attr in CONCEPT_ATTRIBUTES for value in ATTRIBUTES[attr]]  # 15 words
CONCEPT_SLICES = {}
_start = 0
for _attr in CONCEPT_ATTRIBUTES:
    CONCEPT_SLICES[_attr] = slice(_start, _start + len(ATTRIBUTES[_attr]))
    _start += len(ATTRIBUTES[_attr])
COUNT_BINS = 11                       # soft counts are read through bumps at 0, 1, ..., 10
GRID_STRIDE, DETECTION_STRIDE = 8, 4  # of the model's input resolution
DETECTION_CHANNELS = 6                # centre logit, offset x, offset y, width, height, foreground logit
MASKED = -1e4                         # attention logit of padding (finite, so empty sets give zeros, not NaN)


def conv_block(c_in: int, c_out: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True))


def coordinates(batch: int, height: int, width: int, device) -> Tensor:
    """Two channels with x and y in [-1, 1], so attention can reason about where things are."""
    ys = torch.linspace(-1, 1, height, device=device).view(1, 1, height, 1).expand(batch, 1, height, width)
    xs = torch.linspace(-1, 1, width, device=device).view(1, 1, 1, width).expand(batch, 1, height, width)
    return torch.cat([xs, ys], dim=1)


class AdditiveAttention(nn.Module):
    """logit_i = v . tanh(W_f f_i + W_k key) + (U_f f_i) . (U_k key) / sqrt(h): the additive,
    question-guided attention of the SA/ExAG models, plus a multiplicative term that lets a key pick
    out feature directions directly ("large" and "cylinder" add up), which trains much faster.
    The question-independent halves are computed once per image (`project`)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.hidden = hidden
        self.features = nn.Linear(hidden, 2 * hidden, bias=False)
        self.key = nn.Linear(hidden, 2 * hidden)
        self.score = nn.Linear(hidden, 1)

    def project(self, features: Tensor) -> Tensor:
        return self.features(features)

    def forward(self, projected: Tensor, key: Tensor, mask: Tensor | None = None) -> Tensor:
        h = self.hidden
        k = self.key(key).unsqueeze(1)
        additive = self.score(torch.tanh(projected[..., :h] + k[..., :h])).squeeze(-1)
        multiplicative = (projected[..., h:] * k[..., h:]).sum(-1) / math.sqrt(h)
        logits = additive + multiplicative
        return logits if mask is None else logits.masked_fill(~mask, MASKED)


@dataclass
class ImageFeatures:
    grid: Tensor        # [B, hidden, gh, gw] features the spatial attention looks at
    raw: Tensor         # [B, C, gh, gw] last CNN stage, pooled by roi_align
    detection: Tensor   # [B, 6, dh, dw] proposal head output


@dataclass
class Objects:
    features: Tensor    # [B, K, hidden]
    mask: Tensor        # [B, K] True for real proposals, False for padding
    attributes: Tensor  # [B, K, 15] attribute logits (CONCEPT_SLICES says which are which)
    positions: Tensor   # [B, K, 2] box centre x, y as fractions of the image
    ground: Tensor      # [B, K, 2] position along the camera's left and front ground axes (0 without a ground head)


@dataclass
class Reasoning:
    logits: Tensor             # [Q, answers]
    spatial_attention: Tensor  # [Q, gh, gw], sums to 1 (mean over reasoning steps)
    object_attention: Tensor   # [Q, K], sums to 1 over real proposals (0 when there are none)
    object_gates: Tensor       # [Q, steps, K] the soft selection behind each step's count
    question: Tensor           # [Q, hidden] question embedding


class VQAModel(nn.Module):
    def __init__(self, config: AgentConfig, n_words: int, n_answers: int) -> None:
        super().__init__()
        self.config = config
        c1, c2, c3 = config.channels
        h = config.hidden
        # image encoder
        self.stage1 = conv_block(3, c1, 2)                                          # stride 2
        self.stage2 = nn.Sequential(conv_block(c1, c2, 2), conv_block(c2, c2))      # stride 4
        self.stage3 = nn.Sequential(conv_block(c2, c3, 2), conv_block(c3, c3))      # stride 8
        self.detection_fuse = nn.Sequential(nn.Conv2d(c2 + c3, c2, 1, bias=False), nn.BatchNorm2d(c2), nn.ReLU(inplace=True),
                                            conv_block(c2, c2))
        self.detection_head = nn.Conv2d(c2, DETECTION_CHANNELS, 1)
        self.grid_projection = nn.Conv2d(c3 + 2, h, 1)
        # objects
        self.roi_projection = nn.Sequential(nn.Linear(c3 * config.roi_size ** 2, h), nn.ReLU(inplace=True))
        self.attribute_head = nn.Sequential(nn.Linear(h + 4, h), nn.ReLU(inplace=True), nn.Linear(h, len(CONCEPTS)))
        self.ground_head = nn.Sequential(nn.Linear(h + 4, h), nn.ReLU(inplace=True), nn.Linear(h, 2)) \
            if config.symbolic else None
        # reasoning sees each object's appearance, where it is, and what the attribute head thinks it is
        self.object_projection = nn.Sequential(nn.Linear(h + 4 + len(CONCEPTS), h), nn.ReLU(inplace=True), nn.Linear(h, h))
        # question
        self.embedding = nn.Embedding(n_words, config.word_dim, padding_idx=0)
        self.lstm = nn.LSTM(config.word_dim, h, batch_first=True)
        # reasoning
        self.control = nn.ModuleList(nn.Linear(h, h) for _ in range(config.reasoning_steps))
        self.control_score = nn.Linear(h, 1)
        self.key = nn.Linear(2 * h, h)
        self.spatial_attention = AdditiveAttention(h)
        self.object_attention = AdditiveAttention(h)
        self.object_gate = AdditiveAttention(h)
        # Grounded terms of the object attention: which concept words the step asks for (added to the
        # objects' log attribute beliefs, so "large cylinder" scores log p(large) + log p(cylinder)),
        # and which direction from the previously attended object (image x, y offsets).
        self.concept_key = nn.Linear(h, len(CONCEPTS))
        self.direction_key = nn.Linear(h, 2)
        self.memory = nn.GRUCell(2 * h + COUNT_BINS, h)
        self.classifier = nn.Sequential(
            nn.Linear(2 * h + config.reasoning_steps * (COUNT_BINS + len(CONCEPTS)), 2 * h), nn.ReLU(inplace=True),
            nn.Dropout(config.dropout), nn.Linear(2 * h, n_answers))
        # a confident "nothing here" start keeps early training from proposing every pixel
        nn.init.constant_(self.detection_head.bias[0], -4.0)

    # --- image ------------------------------------------------------------------------------------

    def encode_images(self, images: Tensor) -> ImageFeatures:
        """images: [B, 3, H, W] normalized floats at the config's resolution."""
        x2 = self.stage2(self.stage1(images))
        x3 = self.stage3(x2)
        up = F.interpolate(x3, size=x2.shape[-2:], mode="bilinear", align_corners=False)
        detection = self.detection_head(self.detection_fuse(torch.cat([x2, up], dim=1)))
        b, _, gh, gw = x3.shape
        grid = self.grid_projection(torch.cat([x3, coordinates(b, gh, gw, x3.device)], dim=1))
        return ImageFeatures(grid=grid, raw=x3, detection=detection)

    def objects(self, features: ImageFeatures, boxes: list[Tensor]) -> Objects:
        """ROI features of boxes given per image as [K_i, 4] (x1, y1, x2, y2 in input pixels)."""
        b = features.raw.shape[0]
        k = max([len(x) for x in boxes] + [1])
        height = features.raw.shape[-2] * GRID_STRIDE
        width = features.raw.shape[-1] * GRID_STRIDE
        pooled = roi_align(features.raw, [x.to(features.raw.dtype) for x in boxes], self.config.roi_size,
                           spatial_scale=1 / GRID_STRIDE, sampling_ratio=2, aligned=True)
        pooled = self.roi_projection(pooled.flatten(1))
        all_boxes = torch.cat(boxes) if pooled.shape[0] else pooled.new_zeros(0, 4)
        scale = all_boxes.new_tensor([width, height, width, height])
        geometry = all_boxes / scale
        geometry = torch.stack([(geometry[:, 0] + geometry[:, 2]) / 2, (geometry[:, 1] + geometry[:, 3]) / 2,
                                geometry[:, 2] - geometry[:, 0], geometry[:, 3] - geometry[:, 1]], dim=1)
        appearance = torch.cat([pooled, geometry], dim=1)
        attributes = self.attribute_head(appearance)
        beliefs = torch.cat([torch.softmax(attributes[:, s], dim=1) for s in CONCEPT_SLICES.values()], dim=1)
        ground = self.ground_head(appearance) if self.ground_head is not None else geometry.new_zeros(len(geometry), 2)
        # one row per proposal: features | attribute logits | centre x, y | ground; then padded per image
        flat = torch.cat([self.object_projection(torch.cat([appearance, beliefs], dim=1)), attributes,
                          geometry[:, :2], ground], dim=1)
        out = flat.new_zeros(b, k, flat.shape[1])
        mask = torch.zeros(b, k, dtype=torch.bool, device=flat.device)
        start = 0
        for i, x in enumerate(boxes):
            out[i, : len(x)] = flat[start:start + len(x)]
            mask[i, : len(x)] = True
            start += len(x)
        n = len(CONCEPTS)
        return Objects(features=out[..., : -n - 4], mask=mask, attributes=out[..., -n - 4:-4],
                       positions=out[..., -4:-2], ground=out[..., -2:])

    @torch.no_grad()
    def propose(self, detection: Tensor) -> list[tuple[Tensor, Tensor]]:
        """Boxes [K, 4] (input pixels) and scores [K] per image: peaks of the centre heatmap."""
        heat = torch.sigmoid(detection[:, 0])
        peaks = (heat == F.max_pool2d(heat.unsqueeze(1), 3, 1, 1).squeeze(1)) & (heat > self.config.proposal_threshold)
        dh, dw = heat.shape[-2:]
        result = []
        for i in range(heat.shape[0]):
            ys, xs = torch.nonzero(peaks[i], as_tuple=True)
            scores = heat[i, ys, xs]
            order = torch.argsort(scores, descending=True)[: self.config.max_proposals]
            ys, xs, scores = ys[order], xs[order], scores[order]
            cx = (xs.float() + 0.5 + detection[i, 1, ys, xs]) * DETECTION_STRIDE
            cy = (ys.float() + 0.5 + detection[i, 2, ys, xs]) * DETECTION_STRIDE
            w = F.relu(detection[i, 3, ys, xs]) * dw * DETECTION_STRIDE
            h = F.relu(detection[i, 4, ys, xs]) * dh * DETECTION_STRIDE
            boxes = torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], dim=1)
            limit = boxes.new_tensor([dw, dh, dw, dh]) * DETECTION_STRIDE
            result.append((boxes.clamp(min=0).minimum(limit), scores))
        return result

    @torch.no_grad()
    def proposal_masks(self, detection: Tensor, boxes: list[Tensor], height: int, width: int) -> list[Tensor]:
        """Per-proposal boolean masks [K, height, width]: foreground pixels, each given to the proposal
        whose box holds it and whose centre is nearest (relative to the box size). Worked out at the
        model's input resolution, then scaled to the requested size."""
        dh, dw = detection.shape[-2] * DETECTION_STRIDE, detection.shape[-1] * DETECTION_STRIDE
        foreground = torch.sigmoid(F.interpolate(detection[:, 5:6], size=(dh, dw), mode="bilinear",
                                                 align_corners=False))[:, 0] > 0.5
        ys = (torch.arange(dh, device=detection.device).float() + 0.5).view(1, dh, 1)
        xs = (torch.arange(dw, device=detection.device).float() + 0.5).view(1, 1, dw)
        masks = []
        for i, b in enumerate(boxes):
            if len(b) == 0:
                masks.append(torch.zeros(0, height, width, dtype=torch.bool, device=detection.device))
                continue
            x1, y1, x2, y2 = (b[:, j].view(-1, 1, 1) for j in range(4))
            inside = (xs >= x1) & (xs <= x2) & (ys >= y1) & (ys <= y2)
            dx = (xs - (x1 + x2) / 2) / (x2 - x1).clamp(min=1)
            dy = (ys - (y1 + y2) / 2) / (y2 - y1).clamp(min=1)
            distance = torch.where(inside, dx ** 2 + dy ** 2, torch.full_like(dx * dy, math.inf))
            owned = torch.arange(len(b), device=b.device).view(-1, 1, 1) == distance.argmin(dim=0).unsqueeze(0)
            small = (owned & inside & foreground[i].unsqueeze(0)).unsqueeze(1).float()
            masks.append(F.interpolate(small, size=(height, width), mode="nearest")[:, 0].bool())
        return masks

    # --- question ---------------------------------------------------------------------------------

    def encode_questions(self, ids: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """ids [Q, L] (0-padded), lengths [Q] -> question vector [Q, h], word vectors [Q, L, h], mask."""
        # One pass over the padded batch: the LSTM runs forward only, so a word's state never sees the
        # padding after it, and the question vector is the state at each question's last word. (Packed
        # sequences give the same numbers, but their backward pass on CPU costs ~5x more for CLEVR's
        # 40-word questions.)
        words, _ = self.lstm(self.embedding(ids))
        lengths = lengths.to(ids.device)
        mask = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0) < lengths.unsqueeze(1)
        last = words[torch.arange(ids.shape[0], device=ids.device), (lengths - 1).clamp(min=0)]
        return last, words * mask.unsqueeze(-1), mask

    # --- reasoning --------------------------------------------------------------------------------

    def project(self, grid: Tensor, objects: Objects) -> tuple[Tensor, Tensor, Tensor]:
        """The question-independent halves of the three attentions, per image: cells [B, gh*gw, 2h],
        objects and gates [B, K, 2h] (no bias: a padded object's projection is 0, as its features are).
        An agent that looks at an image once keeps them (vqa_agent/agent.py SeenImage)."""
        cells = grid.flatten(2).transpose(1, 2)
        return (self.spatial_attention.project(cells), self.object_attention.project(objects.features),
                self.object_gate.project(objects.features))

    def reason(self, question: Tensor, words: Tensor, word_mask: Tensor, grid: Tensor, objects: Objects,
               image_of_question: Tensor, projected: tuple[Tensor, Tensor, Tensor] | None = None) -> Reasoning:
        """Questions (with their words) about images: grid [B, h, gh, gw] and objects [B, K, h] per
        image, image_of_question [Q] says which image each question is about; `projected`: the images'
        `project` when already known."""
        q, gh, gw = question.shape[0], grid.shape[-2], grid.shape[-1]
        cells = grid.flatten(2).transpose(1, 2)  # [B, gh*gw, h]
        # one question per image in image order (the game's case) needs no per-question copy of the
        # image tensors, which at 320x240 cost a fifth of a question's time
        identity = q == grid.shape[0] and bool((image_of_question == torch.arange(q, device=image_of_question.device)).all())
        per_question = (lambda x: x) if identity else (lambda x: x[image_of_question])
        # question-independent halves of the attentions, once per image
        cells_key, objects_key, gates_key = (per_question(x) for x in (projected or self.project(grid, objects)))
        cells, features, mask = per_question(cells), per_question(objects.features), per_question(objects.mask)
        beliefs = per_question(torch.cat([torch.log_softmax(objects.attributes[..., s], dim=-1)
                                          for s in CONCEPT_SLICES.values()], dim=-1))
        positions = per_question(objects.positions)
        previous = torch.zeros_like(positions[:, 0])  # where the last step looked (none yet)
        memory = question
        bins = torch.arange(COUNT_BINS, device=grid.device, dtype=grid.dtype)
        spatial_sum = grid.new_zeros(q, gh * gw)
        object_sum = grid.new_zeros(q, mask.shape[1])
        counts, gates_per_step = [], []
        for step in range(self.config.reasoning_steps):
            word_logits = self.control_score(self.control[step](question).unsqueeze(1) * words).squeeze(-1)
            word_weights = torch.softmax(word_logits.masked_fill(~word_mask, MASKED), dim=1)
            control = (word_weights.unsqueeze(-1) * words).sum(1)
            key = self.key(torch.cat([control, memory], dim=1))
            spatial = torch.softmax(self.spatial_attention(cells_key, key), dim=1)
            seen_grid = torch.bmm(spatial.unsqueeze(1), cells).squeeze(1)
            grounded = (self.concept_key(control).unsqueeze(1) * beliefs).sum(-1) + \
                (self.direction_key(control).unsqueeze(1) * (positions - previous.unsqueeze(1))).sum(-1) * 10
            attention = torch.softmax(self.object_attention(objects_key, key, mask) + grounded, dim=1) * mask
            gates = torch.sigmoid(self.object_gate(gates_key, key, mask) + grounded) * mask
            previous = torch.bmm(attention.unsqueeze(1), positions).squeeze(1)
            # what the attended object looks like to the attribute head: a query's answer, read directly
            seen_beliefs = torch.bmm(attention.unsqueeze(1), beliefs.exp()).squeeze(1)
            seen_objects = torch.bmm(attention.unsqueeze(1), features).squeeze(1)
            count = torch.exp(-0.5 * ((gates.sum(1, keepdim=True) - bins) / 0.5) ** 2)
            if not self.config.use_objects:  # the spatial-attention-only baseline: objects never reach the answer
                seen_objects, count, seen_beliefs = (torch.zeros_like(x) for x in (seen_objects, count, seen_beliefs))
            memory = self.memory(torch.cat([seen_grid, seen_objects, count], dim=1), memory)
            spatial_sum, object_sum = spatial_sum + spatial, object_sum + attention
            counts += [count, seen_beliefs]
            gates_per_step.append(gates)
        logits = self.classifier(torch.cat([memory, question] + counts, dim=1))
        steps = self.config.reasoning_steps
        return Reasoning(logits=logits, spatial_attention=(spatial_sum / steps).view(q, gh, gw),
                         object_attention=object_sum / steps, object_gates=torch.stack(gates_per_step, 1),
                         question=question)
