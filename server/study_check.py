"""Whether a study can run on this server, checked before it is accepted (from a study file at start or
from the admin form): the config itself (StudyConfig and GameSettings validate their fields), then what
only the server knows: the pool is large enough, the study's agent has a checkpoint here, no explainer it
shows is one the inference workers could not load (they publish what they loaded, server/rounds.py), and an
image set can really be chosen at its difficulty (a dry run). Nothing here loads a model or imports torch."""
from __future__ import annotations

import numpy as np

from game.image_sets import choose_image_set
from game.settings import settings_named
from game.study import StudyConfig, explainers_of

from .agents import Agents
from .pool import GamePool


def check_study(study: StudyConfig, pool: GamePool, agents: Agents) -> None:
    """Raises ValueError with the reason a participant of this study would fail."""
    settings = settings_named(study.kind, **study.settings)
    if settings.images > len(pool):
        raise ValueError(f"settings.images: a game of {settings.images} images needs a pool at least that large; "
                         f"this server's pool has {len(pool)} images")
    worker = agents.worker(study.agent)          # AgentUnavailable (a ValueError) says why not
    shown = sorted({name for arm in study.arms for name in explainers_of(study, arm)})
    unknown = [name for name in shown if name not in worker.explainers and name not in worker.unavailable]
    if unknown:
        raise ValueError(f"unknown explainer(s) {', '.join(unknown)}; this server has "
                         f"{', '.join(sorted(worker.explainers))}")
    missing = [name for name in shown if name in worker.unavailable]
    if missing:
        raise ValueError(f"the {', '.join(missing)} explainer could not be loaded on this server: "
                         f"{'; '.join(worker.unavailable[m] for m in missing)}"[:500])
    choose_image_set(pool.embeddings, settings.images, settings.difficulty, np.random.default_rng(0))
