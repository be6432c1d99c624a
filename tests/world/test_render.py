"""The renderer: determinism, buffers, masks against geometry, materials and shadows."""
from __future__ import annotations

import math

import numpy as np
import pytest

from vqa_agent.world.render import (RenderConfig, Rendering, load_mask_png, render, save_mask_png,
                                    visible_pixel_counts)
from vqa_agent.world.scene import (CAMERA_POSITION, SIZES, Camera, Light, Scene, SceneConfig, SceneObject,
                                   compute_directions, compute_relationships, generate_scene)

CLEVR_LIGHTS = [Light((6.4, -3.0, 8.5), 1.0), Light((-4.7, -5.0, 4.0), 0.35), Light((-1.0, 5.5, 6.0), 0.3)]


def make_scene(objects: list[tuple], lights: list[Light] | None = None) -> Scene:
    """objects: (shape, color, size, material, x, y[, rotation]) resting on the floor, CLEVR's camera."""
    camera = Camera(position=CAMERA_POSITION)
    placed = []
    for shape, color, size, material, x, y, *rotation in objects:
        r = SIZES[size] / math.sqrt(2) if shape == "cube" else SIZES[size]
        obj = SceneObject(shape, color, size, material, (x, y, r), rotation[0] if rotation else 0.0)
        obj.pixel_coords = tuple(float(v) for v in camera.project(np.array(obj.position)))
        placed.append(obj)
    directions = compute_directions(camera)
    return Scene(index=0, objects=placed, camera=camera, lights=lights or CLEVR_LIGHTS, directions=directions,
                 relationships=compute_relationships(placed, directions, 0.2))


def luminance(image: np.ndarray) -> np.ndarray:
    return image.astype(float) @ np.array([0.299, 0.587, 0.114])


@pytest.fixture(scope="module")
def random_scene() -> Scene:
    return generate_scene(np.random.default_rng(7), SceneConfig(min_objects=8, max_objects=10))


def test_buffers_have_the_promised_shapes_and_types(random_scene):
    out = render(random_scene)
    assert isinstance(out, Rendering)
    assert out.image.shape == (240, 320, 3) and out.image.dtype == np.uint8
    assert out.mask.shape == (240, 320) and out.mask.dtype == np.int16
    assert out.depth.shape == (240, 320) and out.depth.dtype == np.float32
    assert out.mask.min() >= -1 and out.mask.max() < len(random_scene.objects)
    # The CLEVR camera looks down: every pixel sees the floor or an object, at a positive distance.
    assert np.all(np.isfinite(out.depth)) and out.depth.min() > 0


def test_config_size_overrides_the_camera(random_scene):
    out = render(random_scene, RenderConfig(width=160, height=120))
    assert out.image.shape == (120, 160, 3) and out.mask.shape == (120, 160)
    assert random_scene.camera.width == 320  # the scene itself is left alone


def test_same_scene_gives_byte_identical_output(random_scene):
    a, b = render(random_scene), render(random_scene)
    assert a.image.tobytes() == b.image.tobytes()
    assert a.mask.tobytes() == b.mask.tobytes()
    assert a.depth.tobytes() == b.depth.tobytes()


@pytest.mark.parametrize("features", [dict(shadows=False), dict(reflections=False), dict(antialias=False)])
def test_features_can_be_switched_off(random_scene, features):
    full, reduced = render(random_scene), render(random_scene, RenderConfig(**features))
    assert np.array_equal(full.mask, reduced.mask)  # visibility never depends on shading features
    assert not np.array_equal(full.image, reduced.image)


def test_unblurred_fields_fall_back_to_tracing(random_scene):
    # Without blurs, silhouette sub-pixel rays often land where the first pass left no value to reuse;
    # they must trace instead (a NaN slipping through would show as black pixels).
    sharp = render(random_scene, RenderConfig(shadow_softness=0, metal_roughness=0)).image
    assert luminance(sharp).min() > 20
    soft = render(random_scene).image
    assert np.abs(sharp.astype(int) - soft.astype(int)).mean() < 3


def test_mask_centroid_sits_on_the_projected_centre():
    for shape, tolerance in (("sphere", 1.5), ("cube", 4.0), ("cylinder", 4.0)):
        scene = make_scene([(shape, "red", "large", "rubber", 1.0, -0.5, 30.0)])
        mask = render(scene).mask
        ys, xs = np.nonzero(mask == 0)
        assert len(xs) > 500
        px, py, _ = scene.objects[0].pixel_coords
        # Pixel (col, row) has its centre at (col + 0.5, row + 0.5) in projected coordinates.
        assert abs(xs.mean() + 0.5 - px) < tolerance, shape
        assert abs(ys.mean() + 0.5 - py) < tolerance, shape


def test_lone_sphere_covers_its_analytic_disc():
    scene = make_scene([("sphere", "blue", "large", "rubber", 0.0, 0.0)])
    out = render(scene)
    camera, obj = scene.camera, scene.objects[0]
    distance = np.linalg.norm(np.subtract(obj.position, camera.position))
    focal = camera.width / 2 / math.tan(math.radians(camera.fov_deg) / 2)  # pixels
    # Angular radius of the sphere, projected near the image centre.
    radius_px = focal * math.tan(math.asin(obj.radius / distance))
    expected = math.pi * radius_px ** 2
    assert visible_pixel_counts(out.mask, 1)[0] == pytest.approx(expected, rel=0.15)


def test_nearer_object_occludes_the_farther_one():
    behind = np.array(compute_directions(Camera(position=CAMERA_POSITION))["behind"][:2])
    near_xy = (1.0, -1.0)
    far_xy = tuple(np.add(near_xy, 1.8 * behind))  # straight behind it, as seen from the camera
    near = ("sphere", "red", "large", "rubber", *near_xy)
    far = ("sphere", "gray", "large", "metal", *far_xy)
    both = render(make_scene([far, near]))
    near_alone = render(make_scene([near])).mask == 0
    far_alone = render(make_scene([far])).mask == 0
    overlap = near_alone & far_alone
    assert overlap.sum() > 100
    assert np.all(both.mask[overlap] == 1)  # object 1 is the near sphere
    assert np.array_equal(both.mask == 1, near_alone)
    assert 0 < (both.mask == 0).sum() < far_alone.sum()  # the far sphere peeks out, partly hidden


def test_visible_pixel_counts():
    mask = np.array([[-1, 0, 0], [2, 2, 2]], np.int16)
    assert visible_pixel_counts(mask, 4).tolist() == [2, 0, 3, 0]


@pytest.mark.parametrize("n_objects", [10, 300])
def test_mask_png_round_trip(tmp_path, n_objects):
    mask = np.random.default_rng(0).integers(-1, n_objects, size=(24, 32)).astype(np.int16)
    path = tmp_path / "mask.png"
    save_mask_png(mask, path)
    back = load_mask_png(path)
    assert back.dtype == np.int16 and np.array_equal(back, mask)


def test_metal_shows_a_highlight_rubber_does_not():
    brightest = {}
    for material in ("metal", "rubber"):
        out = render(make_scene([("sphere", "blue", "large", material, 0.0, 0.0)]))
        brightest[material] = luminance(out.image)[out.mask == 0].max()
    assert brightest["metal"] > brightest["rubber"] + 60
    assert brightest["metal"] > 230  # a near-white specular spot


def test_metal_reflects_its_neighbours():
    right = np.array(compute_directions(Camera(position=CAMERA_POSITION))["right"][:2])
    alone = render(make_scene([("sphere", "gray", "large", "metal", 0.0, 0.0)]))
    with_neighbour = render(make_scene([("sphere", "gray", "large", "metal", 0.0, 0.0),
                                        ("cube", "yellow", "large", "rubber", *(1.8 * right))]))
    on_sphere = (alone.mask == 0) & (with_neighbour.mask == 0)
    changed = np.abs(alone.image.astype(int) - with_neighbour.image.astype(int)).sum(-1)[on_sphere] > 30
    assert changed.sum() > 30  # a small yellow patch: a convex mirror shrinks what it shows


def test_object_casts_a_shadow_away_from_the_key_light():
    # Key light to the camera's right, so the shadow falls to the left where the camera sees it.
    camera = Camera(position=CAMERA_POSITION)
    right = np.array(compute_directions(camera)["right"][:2])
    key = Light((float(6 * right[0]), float(6 * right[1]), 6.0), 1.0)
    scene = make_scene([("cylinder", "green", "large", "rubber", 0.0, 0.0)], lights=[key] + CLEVR_LIGHTS[1:])
    obj = scene.objects[0]
    away = -right  # horizontal direction from the light through the object
    near_point = np.array([*(away * (obj.radius + 0.3)), 0.0])
    far_point = np.array([*(-away * 3.0), 0.0])  # same distance band, on the lit side

    lum = luminance(render(scene).image)
    unshadowed = luminance(render(scene, RenderConfig(shadows=False)).image)
    mask = render(scene).mask
    (nx, ny, _), (fx, fy, _) = camera.project(near_point), camera.project(far_point)
    near, far = (int(ny), int(nx)), (int(fy), int(fx))
    assert mask[near] == -1 and mask[far] == -1
    assert lum[near] < 0.75 * lum[far]
    assert lum[near] < 0.8 * unshadowed[near]
