"""How a simulated participant sees an image: the objects of its scene, read with a person's errors.

A person looking at a rendered CLEVR image misses some small objects and objects hidden behind others,
and mixes up colors that look alike (cyan and blue, brown and yellow, ...). `perceive` applies those
errors, seeded, to the scene of the image the page showed, and returns the scene as the participant
believes it is: a world `Scene`, so the world's own program executor answers questions about it.

The scene comes from the image the participant was shown (experiments/simulate/simulate.py identifies the
image by its pixels); nothing here reads the secret or the agent.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from vqa_agent.world.clevr_io import scene_from_json
from vqa_agent.world.scene import RELATIONS, Scene

# Colors people confuse in CLEVR renders (shading makes them close); each confusion goes both ways.
SIMILAR_COLORS = {"cyan": ("blue", "green"), "blue": ("cyan", "purple"), "green": ("cyan",), "brown": ("yellow", "red"),
                  "yellow": ("brown",), "red": ("brown", "purple"), "purple": ("blue", "red"), "gray": ()}
OCCLUSION_PIXELS = 14.0   # an object whose image centre is this close to a nearer object's is partly hidden


@dataclass(frozen=True)
class PerceptionErrors:
    miss_small: float = 0.05        # chance of not noticing a small object
    miss_occluded: float = 0.3      # chance of not noticing an object partly hidden behind a nearer one
    confuse_color: float = 0.05     # chance of reading an object's color as a similar one
    confuse_material: float = 0.03  # chance of reading metal as rubber or the other way round

    def __post_init__(self) -> None:
        for name, value in self.__dict__.items():
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"perception error {name} must be a probability, got {value}")


def occluded(scene: Scene) -> set[int]:
    """Objects whose image centre lies close to the centre of an object nearer the camera."""
    hidden = set()
    for i, a in enumerate(scene.objects):
        for j, b in enumerate(scene.objects):
            if i == j or b.pixel_coords[2] >= a.pixel_coords[2]:   # pixel_coords[2]: depth from the camera
                continue
            if np.hypot(a.pixel_coords[0] - b.pixel_coords[0], a.pixel_coords[1] - b.pixel_coords[1]) < OCCLUSION_PIXELS:
                hidden.add(i)
    return hidden


def perceive(scene_json: dict, errors: PerceptionErrors, rng: np.random.Generator) -> Scene:
    """The scene as the participant sees it: missed objects left out, confused colors and materials changed."""
    scene = scene_from_json(scene_json)
    hidden = occluded(scene)
    kept, objects = [], []
    for i, o in enumerate(scene.objects):
        miss = (errors.miss_small if o.size == "small" else 0.0) + (errors.miss_occluded if i in hidden else 0.0)
        if rng.random() < min(miss, 1.0):
            continue
        if SIMILAR_COLORS.get(o.color) and rng.random() < errors.confuse_color:
            o = replace(o, color=str(rng.choice(SIMILAR_COLORS[o.color])))
        if rng.random() < errors.confuse_material:
            o = replace(o, material="rubber" if o.material == "metal" else "metal")
        kept.append(i)
        objects.append(o)
    new_index = {old: new for new, old in enumerate(kept)}
    relationships = {rel: [[new_index[j] for j in scene.relationships[rel][old] if j in new_index] for old in kept]
                     for rel in RELATIONS}
    return replace(scene, objects=objects, relationships=relationships)
