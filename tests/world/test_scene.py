"""Scene validity: placement rules, relations consistent with positions and with each other, visibility."""
import itertools

import numpy as np
import pytest

from vqa_agent.world.build import WorldConfig, make_scene
from vqa_agent.world.render import visible_pixel_counts
from vqa_agent.world.scene import ATTRIBUTES, RELATIONS, SceneConfig, generate_scene

CONFIG = SceneConfig()
SCENES = [generate_scene(np.random.default_rng(seed), CONFIG, index=seed) for seed in range(60)]
OPPOSITE = {"left": "right", "right": "left", "front": "behind", "behind": "front"}


@pytest.mark.parametrize("scene", SCENES[:20])
def test_objects_are_valid_and_apart(scene):
    assert CONFIG.min_objects <= len(scene.objects) <= CONFIG.max_objects
    for obj in scene.objects:
        for attr, values in ATTRIBUTES.items():
            assert obj.attribute(attr) in values
        assert abs(obj.position[0]) <= CONFIG.area and abs(obj.position[1]) <= CONFIG.area
        assert obj.position[2] == pytest.approx(obj.radius)  # resting on the ground
    for a, b in itertools.combinations(scene.objects, 2):
        gap = np.hypot(a.position[0] - b.position[0], a.position[1] - b.position[1]) - a.radius - b.radius
        assert gap >= CONFIG.min_dist


def test_relations_follow_positions_and_each_other():
    for scene in SCENES:
        pos = np.array([o.position for o in scene.objects])
        for rel in RELATIONS:
            d = np.array(scene.directions[rel])
            for i, j in itertools.permutations(range(len(scene.objects)), 2):
                related = j in scene.relationships[rel][i]
                assert related == ((pos[j] - pos[i]) @ d > CONFIG.relation_eps)
                # j left of i  <=>  i right of j
                assert related == (i in scene.relationships[OPPOSITE[rel]][j])
                # margins make every pair comparable along both axes: one of the two relations holds
                if rel in ("left", "behind"):
                    assert related or i in scene.relationships[rel][j]


def test_directions_come_from_the_camera():
    for scene in SCENES[:10]:
        forward, right, _ = scene.camera.axes()
        left, behind = np.array(scene.directions["left"]), np.array(scene.directions["behind"])
        assert left @ right < -0.95 and behind @ forward > 0.5
        assert abs(left @ behind) < 1e-9 and left[2] == behind[2] == 0
        # the object with the smallest projected x is the leftmost in the image, as players see it
        xs = [o.pixel_coords[0] for o in scene.objects]
        leftmost = int(np.argmin(xs))
        assert not any(leftmost in scene.relationships["right"][j] for j in range(len(xs)) if j != leftmost)


def test_camera_is_jittered_but_recognisably_clevr():
    positions = np.array([s.camera.position for s in SCENES])
    assert positions.std(axis=0).min() > 0.1
    assert np.abs(positions - positions.mean(axis=0)).max() <= 2 * CONFIG.camera_jitter


def test_every_object_is_visible_in_built_scenes():
    config = WorldConfig()
    for seed in range(8):
        scene, rendering = make_scene(np.random.default_rng(seed), seed, "train", config)
        counts = visible_pixel_counts(rendering.mask, len(scene.objects))
        assert counts.min() >= SceneConfig().min_visible_pixels
        for obj in scene.objects:
            x, y, depth = obj.pixel_coords
            assert 0 <= x < config.width and 0 <= y < config.height and depth > 0


def test_scenes_are_deterministic_for_a_seed():
    a = generate_scene(np.random.default_rng(5))
    b = generate_scene(np.random.default_rng(5))
    assert a == b
