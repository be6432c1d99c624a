"""Whether a study can run on this server, checked before it is accepted (from a study file at start or
from the admin form): the config itself (StudyConfig and GameSettings validate their fields; `check_fields`
the types and sizes JSON leaves open), then what only the server knows: the pool is large enough, the
study's agent has a checkpoint here, no explainer it shows is one the inference workers could not load (they
publish what they loaded, server/rounds.py), and an image set can really be chosen at its difficulty (a dry
run). Nothing here loads a model or imports torch.

Beside it: a study already on the server keeps its pre-registration (`check_unchanged`), and a paid study
that plays a public agent is warned of (`paid_study_warnings`: the admin page and `exag serve` show it)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from explainers import registry
from game import preregistration
from game.image_sets import choose_image_set
from game.pool import GamePool, check_pool
from game.settings import settings_named
from game.study import (StudyConfig, check_agent_explainers, check_new_study, explainers_of, load_study,
                        missing_checkpoint)
from vqa_agent.checkpoints import PRIVATE_AGENT_COMMANDS, PRIVATE_AGENT_MINUTES, is_shipped

from .agents import Agents
from .store import Store

# docs/threat-model.md, in one sentence, and what to do about it
THREAT_MODEL = ("The shipped agents are public: a participant's program can replay the same checkpoint on a game's "
                "images and, after one bought at-will round, find the secret almost every time "
                "(docs/threat-model.md).")
PRIVATE_AGENT = (f"Train a private agent in about {PRIVATE_AGENT_MINUTES} minutes on 2 cores (`"
                 + "`, then `".join(PRIVATE_AGENT_COMMANDS) + "`; docs/real-study.md) and name it in the study: "
                 "\"agent\": \"checkpoints/private-medium\".")


MAX_GAMES = 1_000          # one participant's games (the paper's studies have 20): more is a slip of the keyboard
MAX_TEXT_CHARS = 2_000     # a title, a completion code, a redirect URL


def check_fields(study: StudyConfig) -> None:
    """What StudyConfig leaves to its users (JSON gives any type): its counts are whole numbers of a sane size
    (every export format holds them), its switches true or false, its texts text; and what a new study must be
    (game/study.py `check_new_study`: a safe id, an https redirect)."""
    for name in ("sessions", "games_per_session"):
        if type(getattr(study, name)) is not int:
            raise ValueError(f"{name} must be a whole number, not {getattr(study, name)!r}"[:200])
    if study.games > MAX_GAMES:
        raise ValueError(f"sessions x games_per_session: at most {MAX_GAMES} games per participant, not {study.games}")
    for name in ("nle", "choose_arm"):
        if type(getattr(study, name)) is not bool:
            raise ValueError(f"{name} must be true or false, not {getattr(study, name)!r}"[:200])
    for name in ("completion_code", "redirect_url", "title"):
        if not isinstance(getattr(study, name), str) or len(getattr(study, name)) > MAX_TEXT_CHARS:
            raise ValueError(f"{name} must be text of at most {MAX_TEXT_CHARS} characters")
    check_new_study(study)


def check_study(study: StudyConfig, pool: GamePool, agents: Agents, prove: bool = False) -> None:
    """Raises ValueError with the reason a participant of this study would fail; `prove`: its agent answers
    a warm-up question on a worker first (server/agents.py; before a study is created, not as one types)."""
    check_fields(study)
    check_pool(study.pool, pool)                 # a study that names its pool runs on a server serving that one
    settings = settings_named(study.kind, **study.settings)
    if settings.images > len(pool):
        raise ValueError(f"settings.images: a game of {settings.images} images needs a pool at least that large; "
                         f"this server's pool has {len(pool)} images")
    worker = agents.worker(study.agent)          # AgentUnavailable (a ValueError) says why not
    preregistration.check_agent(study, study.agent or agents.server_agent)
    check_agent_explainers(study, study.agent or agents.server_agent)   # before any worker published what it loaded
    shown = sorted({name for arm in study.arms for name in explainers_of(study, arm)})
    for name in shown:      # not built in: a third-party explainer, imported and checked (ValueError says why not)
        if name not in worker.explainers and name not in worker.unavailable:
            registry.entry(name)
    missing = [name for name in shown if name in worker.unavailable]
    if missing:
        raise ValueError(f"the {', '.join(missing)} explainer could not be loaded on this server: "
                         f"{'; '.join(worker.unavailable[m] for m in missing)}"[:500])
    choose_image_set(pool.embeddings, settings.images, settings.difficulty, np.random.default_rng(0))
    if prove:
        agents.prove(study.agent)


def check_unchanged(study: StudyConfig, stored: StudyConfig) -> None:
    """Raises ValueError when `study` would change the pre-registration of the study stored under its id:
    once a study exists on the server (and may have data), its registered rules are fixed."""
    before, after = stored.preregistration.get("sha256"), study.preregistration.get("sha256")
    if before == after:
        return
    if before is None:
        raise ValueError(f"study {study.study_id} exists on this server without a pre-registration; rules fixed "
                         "after a study began are no pre-registration: register the study under a new study_id")
    old, new = stored.preregistration.get("exclusions"), study.preregistration.get("exclusions")
    changed = f", exclusions {old} -> {new}" if old != new else ""
    raise ValueError(f"study {study.study_id} was pre-registered (sha256 {before[:12]}...) and its rules cannot "
                     f"change now (this config has {f'sha256 {after[:12]}...' if after else 'no pre-registration'}"
                     f"{changed}): keep the registered study, or run the new rules as a new study (a new study_id)")


def paid_study_warnings(study: StudyConfig, server_agent: str) -> list[str]:
    """The warning for a study that pays through a platform (a completion code or a redirect URL) and plays a
    shipped, public agent ("" = the server's). Demos and pilots whose links name the arm (choose_arm) are
    no paid studies."""
    agent = study.agent or server_agent
    if study.choose_arm or not (study.completion_code or study.redirect_url) or not is_shipped(agent):
        return []
    return [f"study {study.study_id} pays through a platform (completion code or redirect URL) and plays the "
            f"public agent {agent!r}. {THREAT_MODEL} {PRIVATE_AGENT}"]


def check_study_files(studies_dir: Path, store: Store, server_agent: str) -> list[str]:
    """`exag serve`'s look at its study files before it starts: each is a valid study (a malformed
    pre-registration included) whose agent is here, that keeps the pre-registration of the study stored
    under its id; returns the paid-study warnings. ValueError: "FILE: why", one line."""
    warnings = []
    for path in sorted(Path(studies_dir).glob("*.json")) if Path(studies_dir).is_dir() else []:
        study = load_study(path)
        found = store.study(study.study_id)
        if found is None:
            try:
                check_new_study(study)
            except ValueError as error:
                raise ValueError(f"{path}: {error}") from error
        why = found is None and study.agent and missing_checkpoint(study.agent)   # not in a gunicorn traceback
        if why:
            raise ValueError(f"{path}: the agent {study.agent!r} could not be loaded on this server: {why}"[:500])
        if found is not None:
            try:
                check_unchanged(study, found[0])
            except ValueError as error:
                raise ValueError(f"{path}: {error}") from error
        warnings += paid_study_warnings(found[0] if found else study, server_agent)
    return warnings
