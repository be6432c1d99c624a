"""Scenes placed by hand, in camera-aligned coordinates, so relations are obvious to a reader."""
from __future__ import annotations

import numpy as np

from vqa_agent.world.scene import (CAMERA_POSITION, SIZES, Camera, Light, Scene, SceneObject,
                                   compute_directions, compute_relationships)


# Five objects whose relations are easy to read off (rightward, backward):
#   0: (-2, 0)   1: (0, 0)   2: (2, 1.5)   3: (1, -2)   4: (-1, 2)
FIVE_OBJECTS = [
    ("cube", "red", "large", "metal", -2, 0),
    ("sphere", "blue", "small", "rubber", 0, 0),
    ("cylinder", "blue", "large", "rubber", 2, 1.5),
    ("sphere", "red", "small", "rubber", 1, -2),
    ("cube", "yellow", "small", "metal", -1, 2),
]


def hand_scene(objects: list[tuple], index: int = 0) -> Scene:
    """objects: (shape, color, size, material, rightward, backward) with the last two measured along the
    camera's right and behind directions on the ground plane."""
    camera = Camera(position=CAMERA_POSITION)
    directions = compute_directions(camera)
    right, behind = np.array(directions["right"][:2]), np.array(directions["behind"][:2])
    placed = []
    for shape, color, size, material, rightward, backward in objects:
        x, y = rightward * right + backward * behind
        r = SIZES[size] / np.sqrt(2) if shape == "cube" else SIZES[size]
        placed.append(SceneObject(shape, color, size, material, (float(x), float(y), float(r)), 0.0))
    for obj in placed:
        obj.pixel_coords = tuple(float(v) for v in camera.project(np.array(obj.position)))
    lights = [Light((6.4, -3.0, 8.5), 1.0), Light((-4.7, -5.0, 4.0), 0.35), Light((-1.0, 5.5, 6.0), 0.3)]
    return Scene(index=index, objects=placed, camera=camera, lights=lights, directions=directions,
                 relationships=compute_relationships(placed, directions, 0.2))
