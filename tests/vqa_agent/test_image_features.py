"""Image embeddings: shapes, determinism, input modes, weight loading and its errors, set difficulty.

Backbones are randomly initialised (no weights can be downloaded here); random convolutional
features still map near-identical images close together, which is all the difficulty test needs.
Most tests run at image_size=64 to keep VGG16 on CPU fast; FC7 is 4096-d at any input size.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image

from vqa_agent.image_features import (BackboneConfig, CheckpointError, ImageEmbedder, TorchvisionEmbedder,
                                      pairwise_l2, preprocess, set_difficulty)
from vqa_agent.world.render import RenderConfig, render
from vqa_agent.world.scene import generate_scene

SMALL = 64  # image_size for tests that do not care about the resolution


def solid(color: tuple[int, int, int], size: tuple[int, int] = (80, 60)) -> Image.Image:
    return Image.new("RGB", size, color)


def gradient(width: int = 80, height: int = 60) -> Image.Image:
    x = np.linspace(0, 255, width, dtype=np.float32)
    y = np.linspace(0, 255, height, dtype=np.float32)
    rgb = np.stack(np.broadcast_arrays(x[None, :], y[:, None], (x[None, :] + y[:, None]) / 2), axis=-1)
    return Image.fromarray(rgb.astype(np.uint8))


def scene_image(seed: int) -> np.ndarray:
    return render(generate_scene(np.random.default_rng(seed)), RenderConfig(width=160, height=120)).image


@pytest.fixture(scope="module")
def images() -> list:
    return [solid((200, 30, 30)), solid((20, 20, 220)), gradient(), scene_image(0), scene_image(1)]


@pytest.fixture(scope="module")
def vgg() -> TorchvisionEmbedder:
    return TorchvisionEmbedder(BackboneConfig(arch="vgg16", image_size=SMALL, batch_size=2, device="cpu"))


@pytest.fixture(scope="module")
def resnet() -> TorchvisionEmbedder:
    return TorchvisionEmbedder(BackboneConfig(arch="resnet18", image_size=SMALL, device="cpu"))


def test_vgg16_gives_fc7_vectors(vgg, images):
    assert isinstance(vgg, ImageEmbedder)
    out = vgg.embed(images)
    assert vgg.dim == 4096 and out.shape == (len(images), 4096) and out.dtype == np.float32
    assert np.isfinite(out).all() and (out >= 0).all()  # FC7 is taken after its ReLU


def test_resnet18_gives_pooled_vectors(resnet, images):
    out = resnet.embed(images)
    assert resnet.dim == 512 and out.shape == (len(images), 512) and out.dtype == np.float32
    assert np.isfinite(out).all()


def test_default_resolution_and_empty_input():
    embedder = TorchvisionEmbedder(BackboneConfig(arch="resnet18", device="cpu"))  # image_size 224
    assert embedder.embed([scene_image(2)]).shape == (1, 512)
    assert embedder.embed([]).shape == (0, 512)


def test_outputs_are_deterministic(vgg, images):
    first = vgg.embed(images)
    assert np.array_equal(first, vgg.embed(images))
    # Batching (batch_size=2 leaves a batch of 1) changes nothing beyond float rounding.
    alone = np.concatenate([vgg.embed([image]) for image in images])
    np.testing.assert_allclose(alone, first, rtol=1e-4, atol=1e-4)


def test_random_initialisation_is_seeded(resnet, images):
    again = TorchvisionEmbedder(replace(resnet.config, batch_size=2))
    np.testing.assert_allclose(again.embed(images), resnet.embed(images), rtol=1e-4, atol=1e-4)


def test_any_image_mode_and_size(resnet):
    rgb = scene_image(3)
    pil = Image.fromarray(rgb)
    variants = [
        pil, rgb, rgb.astype(np.float64) / 255, np.dstack([rgb, np.full(rgb.shape[:2], 128, np.uint8)]),
        pil.convert("RGBA"), pil.convert("P"), pil.convert("L"), np.asarray(pil.convert("L")),
        pil.convert("L").convert("P"), pil.resize((37, 91)), pil.resize((700, 300)), Image.new("1", (20, 30)),
    ]
    out = resnet.embed(variants)
    assert out.shape == (len(variants), 512) and np.isfinite(out).all()
    # The same picture gives the same embedding whatever container it arrives in; alpha is ignored.
    for same in out[1:5]:
        np.testing.assert_allclose(same, out[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out[7], out[6], rtol=1e-4, atol=1e-4)  # grayscale PIL vs HxW array


def test_preprocess_resizes_shorter_side_then_crops_centre():
    # A wide image whose left and right thirds are black: after the centre crop only white remains.
    wide = np.zeros((64, 192, 3), np.uint8)
    wide[:, 64:128] = 255
    batch = preprocess([wide], 32)
    assert batch.shape == (1, 3, 32, 32)
    white = (1 - torch.tensor([0.485, 0.456, 0.406])) / torch.tensor([0.229, 0.224, 0.225])
    torch.testing.assert_close(batch[0, :, 4:-4, 4:-4].mean(dim=(1, 2)), white, rtol=0, atol=1e-3)


def test_rejects_unusable_arrays(resnet):
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        resnet.embed([np.full((8, 8, 3), 200.0)])
    with pytest.raises(TypeError, match="uint8 or float"):
        resnet.embed([np.zeros((8, 8, 3), np.int32)])
    with pytest.raises(ValueError, match="shape"):
        resnet.embed([np.zeros((8, 8, 2), np.uint8)])


def test_state_dict_round_trip(tmp_path, images):
    # A full torchvision model (head included), initialised differently from the embedder's default.
    torch.manual_seed(123)
    original = torchvision.models.resnet18(weights=None).eval()
    path = tmp_path / "resnet18.pth"
    torch.save(original.state_dict(), path)

    config = BackboneConfig(arch="resnet18", weights=str(path), image_size=SMALL, device="cpu")
    loaded = TorchvisionEmbedder(config).embed(images)
    original.fc = torch.nn.Identity()
    with torch.inference_mode():
        expected = original(preprocess(images, SMALL)).numpy()
    np.testing.assert_array_equal(loaded, expected)
    assert not np.allclose(loaded, TorchvisionEmbedder(replace(config, weights=None)).embed(images))

    # The embedder's own (head-less) state dict, wrapped checkpoints and DataParallel prefixes load too.
    embedder = TorchvisionEmbedder(config)
    state = embedder.model.state_dict()
    for name, checkpoint in [("own.pt", state), ("wrapped.pth", {"state_dict": state, "epoch": 3}),
                             ("model.pth", {"model": state}),
                             ("parallel.pth", {f"module.{k}": v for k, v in state.items()})]:
        torch.save(checkpoint, tmp_path / name)
        again = TorchvisionEmbedder(replace(config, weights=str(tmp_path / name)))
        assert all(torch.equal(again.model.state_dict()[k], v) for k, v in state.items())


def test_missing_weights_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.pth"):
        TorchvisionEmbedder(BackboneConfig(arch="resnet18", weights=str(tmp_path / "nothing.pth")))


def test_file_that_is_not_a_state_dict(tmp_path):
    garbage = tmp_path / "garbage.pth"
    garbage.write_text("not a checkpoint")
    with pytest.raises(CheckpointError, match="could not be read as a state dict"):
        TorchvisionEmbedder(BackboneConfig(arch="resnet18", weights=str(garbage)))
    for name, content in [("list.pth", [torch.zeros(3)]), ("meta.pth", {"epoch": 3, "lr": 0.1}), ("empty.pth", {})]:
        torch.save(content, tmp_path / name)
        with pytest.raises(CheckpointError, match="is not a state dict"):
            TorchvisionEmbedder(BackboneConfig(arch="resnet18", weights=str(tmp_path / name)))


def test_state_dict_that_does_not_fit(tmp_path, resnet):
    path = tmp_path / "resnet18.pth"
    torch.save(resnet.model.state_dict(), path)
    # resnet50 has bottleneck blocks: conv3 layers resnet18 lacks, and different widths.
    with pytest.raises(CheckpointError, match=r"resnet50.*missing keys: .*layer1\.0\.conv3\.weight"):
        TorchvisionEmbedder(BackboneConfig(arch="resnet50", weights=str(path)))

    state = dict(resnet.model.state_dict())
    state["extra.weight"] = torch.zeros(1)
    state["conv1.weight"] = torch.zeros(64, 3, 3, 3)
    torch.save(state, path)
    with pytest.raises(CheckpointError, match=r"unexpected keys: extra\.weight.*conv1\.weight \(64, 3, 3, 3\)"):
        TorchvisionEmbedder(BackboneConfig(arch="resnet18", weights=str(path)))


def test_safetensors_needs_its_package(tmp_path):
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"")
    try:
        import safetensors  # noqa: F401
    except ImportError:
        with pytest.raises(CheckpointError, match="safetensors package is not installed"):
            TorchvisionEmbedder(BackboneConfig(arch="resnet18", weights=str(path)))
    else:
        with pytest.raises(CheckpointError, match="safetensors"):
            TorchvisionEmbedder(BackboneConfig(arch="resnet18", weights=str(path)))


def test_unknown_arch():
    with pytest.raises(ValueError, match="resnet18"):
        BackboneConfig(arch="alexnet")


def test_pairwise_l2():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 4096)).astype(np.float32) * 50
    d = pairwise_l2(x)
    assert d.shape == (6, 6)
    assert np.array_equal(d, d.T) and np.array_equal(np.diag(d), np.zeros(6))
    direct = np.linalg.norm(x[:, None].astype(np.float64) - x[None], axis=-1)
    np.testing.assert_allclose(d, direct, rtol=1e-9)


def test_near_duplicates_make_a_harder_set(vgg):
    rng = np.random.default_rng(0)
    secret = scene_image(4)
    noisy = [np.clip(secret + rng.normal(0, 3, secret.shape), 0, 255).astype(np.uint8) for _ in range(3)]
    different = [solid((250, 250, 0)), gradient(), scene_image(5)]
    embeddings = vgg.embed([secret, *noisy, *different])
    hard = set_difficulty(embeddings, 0, [1, 2, 3])
    easy = set_difficulty(embeddings, 0, [4, 5, 6])
    assert 0 < hard < easy  # lower mean distance to the secret = harder, as in the paper
    assert hard == pytest.approx(pairwise_l2(embeddings)[0, 1:4].mean())
    with pytest.raises(ValueError):
        set_difficulty(embeddings, 0, [])
    with pytest.raises(ValueError):
        set_difficulty(embeddings, 0, [0, 1])
