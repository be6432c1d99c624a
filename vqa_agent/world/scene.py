"""Scene graphs of the synthetic CLEVR-compatible world.

A scene is a handful of objects on a ground plane (z up, CLEVR's Blender convention), seen by a
jittered perspective camera and lit by three jittered lights. Spatial relations are computed from the
camera exactly the way CLEVR's generator does: project the camera's left/behind axes onto the ground
plane, and call object j "left of" object i when (p_j - p_i) . left > eps. Placement rejects layouts
where two objects are almost aligned along any of those axes, so every relation is unambiguous.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

SHAPES = ("cube", "sphere", "cylinder")
# CLEVR's own palette (properties.json), RGB 0-255.
COLORS = {
    "gray": (87, 87, 87),
    "red": (173, 35, 35),
    "blue": (42, 75, 215),
    "green": (29, 105, 20),
    "brown": (129, 74, 25),
    "purple": (129, 38, 192),
    "cyan": (41, 208, 208),
    "yellow": (255, 238, 51),
}
# Size name -> object "radius" in world units, as in CLEVR (cubes are then divided by sqrt(2)).
SIZES = {"large": 0.7, "small": 0.35}
MATERIALS = ("rubber", "metal")
ATTRIBUTES = {"shape": SHAPES, "color": tuple(COLORS), "size": tuple(SIZES), "material": MATERIALS}
RELATIONS = ("left", "right", "front", "behind")

# CLEVR's default camera and its jitter.
CAMERA_POSITION = (7.358891487121582, -6.925790786743164, 4.958309173583984)
CAMERA_FOV_DEG = 49.13  # Blender's default 35 mm lens on a 32 mm sensor, horizontal field of view


@dataclass
class SceneConfig:
    min_objects: int = 3
    max_objects: int = 10
    area: float = 3.0             # objects are placed with x, y in [-area, area]
    min_dist: float = 0.25        # minimum gap between object surfaces (CLEVR's --min_dist)
    margin: float = 0.4           # minimum offset along each relation axis (CLEVR's --margin)
    relation_eps: float = 0.2     # threshold of the relation dot product (CLEVR's eps)
    camera_jitter: float = 0.5    # uniform jitter of each camera coordinate
    light_jitter: float = 1.0     # uniform jitter of each light position coordinate
    width: int = 320
    height: int = 240
    min_visible_pixels: int = 100  # CLEVR asks 200 px at 480x320; same share of a 320x240 image
    max_placement_tries: int = 50


@dataclass
class Camera:
    position: tuple[float, float, float]
    look_at: tuple[float, float, float] = (0.0, 0.0, 0.0)
    fov_deg: float = CAMERA_FOV_DEG  # horizontal
    width: int = 320
    height: int = 240

    def axes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Unit vectors (forward, right, up) of the camera in world space."""
        forward = np.asarray(self.look_at, float) - np.asarray(self.position, float)
        forward /= np.linalg.norm(forward)
        right = np.cross(forward, (0.0, 0.0, 1.0))
        right /= np.linalg.norm(right)
        up = np.cross(right, forward)
        return forward, right, up

    def project(self, points: np.ndarray) -> np.ndarray:
        """World points (..., 3) -> (..., 3) of pixel x, pixel y and depth along the view axis."""
        forward, right, up = self.axes()
        rel = np.asarray(points, float) - np.asarray(self.position, float)
        depth = rel @ forward
        half = math.tan(math.radians(self.fov_deg) / 2)
        x = (rel @ right) / (depth * half)                      # -1 .. 1 across the width
        y = (rel @ up) / (depth * half * self.height / self.width)  # -1 .. 1 across the height
        px = (x + 1) * self.width / 2
        py = (1 - y) * self.height / 2
        return np.stack([px, py, depth], axis=-1)

    def ray_directions(self) -> np.ndarray:
        """Unit ray directions through the centre of every pixel, shape (height, width, 3)."""
        forward, right, up = self.axes()
        half = math.tan(math.radians(self.fov_deg) / 2)
        xs = ((np.arange(self.width) + 0.5) / self.width * 2 - 1) * half
        ys = (1 - (np.arange(self.height) + 0.5) / self.height * 2) * half * self.height / self.width
        dirs = forward + xs[None, :, None] * right + ys[:, None, None] * up
        return dirs / np.linalg.norm(dirs, axis=-1, keepdims=True)


@dataclass
class Light:
    position: tuple[float, float, float]
    intensity: float


@dataclass
class SceneObject:
    shape: str
    color: str
    size: str
    material: str
    position: tuple[float, float, float]  # centre; z equals the object's radius (it rests on the plane)
    rotation: float                        # degrees about the vertical axis
    pixel_coords: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def radius(self) -> float:
        """CLEVR's object scale: sphere radius, cylinder radius and half height, cube half side."""
        r = SIZES[self.size]
        return r / math.sqrt(2) if self.shape == "cube" else r

    def attribute(self, name: str) -> str:
        return getattr(self, name)


@dataclass
class Scene:
    index: int
    objects: list[SceneObject]
    camera: Camera
    lights: list[Light]
    split: str = "train"
    image_filename: str = ""
    directions: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    relationships: dict[str, list[list[int]]] = field(default_factory=dict)

    def related(self, index: int, relation: str) -> list[int]:
        """Objects that are `relation` of object `index` (e.g. everything left of it)."""
        return self.relationships[relation][index]


def compute_directions(camera: Camera) -> dict[str, tuple[float, float, float]]:
    """CLEVR's six direction vectors: camera axes projected onto the ground plane."""
    forward, right, up = camera.axes()

    def on_plane(v: np.ndarray) -> np.ndarray:
        v = v - np.array([0.0, 0.0, v[2]])
        return v / np.linalg.norm(v)

    behind = on_plane(forward)
    left = on_plane(-right)
    vectors = {"behind": behind, "front": -behind, "left": left, "right": -left,
               "above": np.array([0.0, 0.0, 1.0]), "below": np.array([0.0, 0.0, -1.0])}
    return {k: tuple(float(x) for x in v) for k, v in vectors.items()}


def compute_relationships(objects: list[SceneObject], directions: dict, eps: float) -> dict[str, list[list[int]]]:
    """relationships[rel][i] lists every j with (p_j - p_i) . direction(rel) > eps (CLEVR's rule)."""
    positions = np.array([o.position for o in objects], float).reshape(-1, 3)
    result = {}
    for name in RELATIONS:
        d = np.array(directions[name])
        dots = (positions[None, :, :] - positions[:, None, :]) @ d  # [i, j] = (p_j - p_i) . d
        result[name] = [[j for j in range(len(objects)) if j != i and dots[i, j] > eps]
                        for i in range(len(objects))]
    return result


def jittered_camera(rng: np.random.Generator, config: SceneConfig) -> Camera:
    base = np.array(CAMERA_POSITION)
    position = base + rng.uniform(-config.camera_jitter, config.camera_jitter, 3)
    return Camera(position=tuple(float(x) for x in position), width=config.width, height=config.height)


def jittered_lights(rng: np.random.Generator, config: SceneConfig) -> list[Light]:
    """Key, fill and back light in CLEVR's arrangement, each position jittered."""
    base = [((6.4, -3.0, 8.5), 1.0), ((-4.7, -5.0, 4.0), 0.35), ((-1.0, 5.5, 6.0), 0.3)]
    lights = []
    for pos, intensity in base:
        p = np.array(pos) + rng.uniform(-config.light_jitter, config.light_jitter, 3)
        lights.append(Light(position=tuple(float(x) for x in p), intensity=intensity))
    return lights


def _placement_ok(candidate: SceneObject, placed: list[SceneObject], directions: dict, config: SceneConfig) -> bool:
    x, y, _ = candidate.position
    for other in placed:
        ox, oy, _ = other.position
        dx, dy = x - ox, y - oy
        if math.hypot(dx, dy) - candidate.radius - other.radius < config.min_dist:
            return False
        for name in RELATIONS:
            d = directions[name]
            offset = dx * d[0] + dy * d[1]
            if 0 < offset < config.margin:
                return False
    return True


def generate_scene(rng: np.random.Generator, config: SceneConfig | None = None, index: int = 0,
                   split: str = "train") -> Scene:
    """A random scene, valid except for occlusion (the renderer checks visibility; see build.py)."""
    config = config or SceneConfig()
    while True:
        camera = jittered_camera(rng, config)
        directions = compute_directions(camera)
        count = int(rng.integers(config.min_objects, config.max_objects + 1))
        objects: list[SceneObject] = []
        for _ in range(count):
            for _ in range(config.max_placement_tries):
                shape = str(rng.choice(SHAPES))
                size = str(rng.choice(list(SIZES)))
                r = SIZES[size] / math.sqrt(2) if shape == "cube" else SIZES[size]
                x, y = rng.uniform(-config.area, config.area, 2)
                obj = SceneObject(shape=shape, color=str(rng.choice(list(COLORS))), size=size,
                                  material=str(rng.choice(MATERIALS)),
                                  position=(float(x), float(y), float(r)),
                                  rotation=float(rng.uniform(0, 360)))
                if _placement_ok(obj, objects, directions, config):
                    objects.append(obj)
                    break
            else:
                break  # crowded layout: start the whole scene over, as CLEVR does
        if len(objects) == count:
            break
    for obj in objects:
        px, py, depth = camera.project(np.array(obj.position))
        obj.pixel_coords = (float(px), float(py), float(depth))
    return Scene(index=index, objects=objects, camera=camera, lights=jittered_lights(rng, config),
                 split=split, directions=directions,
                 relationships=compute_relationships(objects, directions, config.relation_eps))
