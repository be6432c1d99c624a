"""Which world a command uses when it is not given one: the one default-world rule of every `exag` command.

    world = default_world(args.world)       # --world, else data/world when built, else the game world
    world = default_world(args.world, ("train", "val"), "`exag train agent`")    # needs more than the game world
    image = rendered_image(args.image)      # an image of a lazily laid out world, rendered now if not yet

Paths are relative to the working directory, as a researcher's `data/` is.
"""
from __future__ import annotations

from pathlib import Path

from .build import GAME_WORLD_SPLITS, WorldConfig, build_world, ensure_rendered, is_built, shipped_source

DEFAULT_WORLD = Path("data/world")          # the whole world (`exag world build`): train, val, test and pool
GAME_WORLD = Path("data/game-world")        # what the game needs (the val and pool splits), laid out on first use
# the --world help of the commands that follow the rule
WORLD_HELP = f"built world (default: {DEFAULT_WORLD} when built, else {GAME_WORLD})"
FULL_WORLD_HELP = f"built world with train, val and test splits (default: {DEFAULT_WORLD})"


def default_world(world: Path | None, needs: tuple[str, ...] = (), command: str = "this command") -> Path:
    """--world when given; else the whole world (data/world) when built; else the game world (the pool and
    the RelQA bank: the val and pool splits), laid out from the shipped scenes and questions on first use
    (images rendered on demand). A command that needs other splits (`needs`) says how to build the whole
    world instead."""
    if world is not None:
        return world
    if (DEFAULT_WORLD / "manifest.json").exists():
        return DEFAULT_WORLD
    missing = [split for split in needs if split not in GAME_WORLD_SPLITS]
    if missing:
        raise FileNotFoundError(
            f"{command} needs the whole world ({', '.join(missing)} split{'s' * (len(missing) > 1)}), and "
            f"{DEFAULT_WORLD} is not built; {GAME_WORLD} (what the game uses) holds only the val and pool "
            f"splits. Build it once with `exag world build --out {DEFAULT_WORLD}` (about 6 minutes on 2 cores, "
            "0.5 GB), or pass --world DIR")
    return game_world()


def game_world() -> Path:
    """data/game-world: laid out in seconds from the shipped scenes and questions (byte-identical to
    the build's), its images rendered on demand and by `exag serve`'s background renderer."""
    config = WorldConfig(splits=GAME_WORLD_SPLITS)
    if not is_built(GAME_WORLD, config):
        print(f"laying out the game world (the game pool and the RelQA question bank) in {GAME_WORLD}"
              f"{'' if shipped_source(config) else ' (building it: this takes minutes, once)'}", flush=True)
    return build_world(GAME_WORLD, config, lazy=True)


def rendered_image(path: Path) -> Path:
    """An image of a built world that is not rendered yet (a lazily laid out game world) is rendered now."""
    world = path.parent.parent
    if not path.exists() and path.parent.name == "images" and (world / "manifest.json").exists():
        ensure_rendered(world, path.name)
    return path
