"""Renderer speed on one core: images per second at the default 320x240 with every feature on.

    python -m experiments.benchmark.render_speed [--images N] [--seed S]

The spec asks for at least 20 images/s (<= 50 ms per image) on a single core, so the thread pools of
numpy's BLAS back-ends are pinned to one thread before numpy is imported (the renderer uses no BLAS in
its hot loop, but this keeps the measurement honest on many-core machines).
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from vqa_agent.world.render import RenderConfig, render  # noqa: E402
from vqa_agent.world.scene import SceneConfig, generate_scene  # noqa: E402

REQUIRED_IMAGES_PER_S = 20.0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    config = RenderConfig()
    scene_config = SceneConfig(width=config.width, height=config.height)
    render(generate_scene(np.random.default_rng(args.seed + 1), scene_config))  # warm-up (imports, caches)

    render_s, total_s = [], []
    for i in range(args.images):
        start = time.perf_counter()
        scene = generate_scene(rng, scene_config, index=i)
        generated = time.perf_counter()
        render(scene, config)
        done = time.perf_counter()
        render_s.append(done - generated)
        total_s.append(done - start)

    render_ms = np.array(render_s) * 1000
    total_ms = np.array(total_s) * 1000
    print(f"{args.images} scenes at {config.width}x{config.height}, shadows={config.shadows} "
          f"reflections={config.reflections} antialias={config.antialias}, one thread")
    for name, ms in (("render only", render_ms), ("generate + render", total_ms)):
        print(f"{name:>18}: {1000 / ms.mean():6.1f} images/s   mean {ms.mean():5.1f} ms   "
              f"p95 {np.percentile(ms, 95):5.1f} ms   max {ms.max():5.1f} ms")
    verdict = "meets" if 1000 / render_ms.mean() >= REQUIRED_IMAGES_PER_S else "MISSES"
    print(f"{verdict} the {REQUIRED_IMAGES_PER_S:.0f} images/s budget")


if __name__ == "__main__":
    main()
