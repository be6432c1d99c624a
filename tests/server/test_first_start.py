"""A first start renders the game pool's images before anyone plays (issue 45: rendered on demand under load,
a first game showed 14 of 20 grey tiles after 3 s); the rest of a lazily laid out world is left to the
low-priority background renderer."""
from __future__ import annotations

from dataclasses import replace

from server import commands
from vqa_agent.world import build as world_build
from vqa_agent.world.build import build_world


def test_the_first_start_renders_the_pool_before_it_returns(tiny_world, tmp_path, capsys):
    from tiny_worlds import TINY_WORLD

    config = replace(TINY_WORLD, splits=world_build.GAME_WORLD_SPLITS)
    source = tmp_path / "shipped"
    world_build.write_source(build_world(tmp_path / "built", config, workers=1, progress=False), source)
    lazy = build_world(tmp_path / "lazy", config, progress=False, shipped=source, lazy=True)
    assert world_build.missing_images(lazy, splits=(world_build.POOL_SPLIT,))
    try:
        assert commands._serve_world(lazy, "default", tmp_path / "data") == lazy
        assert not world_build.missing_images(lazy, splits=(world_build.POOL_SPLIT,))
        assert "rendering the game pool's" in capsys.readouterr().out
    finally:
        if commands._background_render is not None:      # the val split's images, rendered in the background
            commands._background_render.terminate()
            commands._background_render.wait(10)
            commands._background_render = None
