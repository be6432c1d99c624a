"""The study files shipped in studies/ (the running demos and the `.example`s the docs tell researchers to
copy) load as the server loads them, and the reviewed example excludes on every check it collects: a check
whose failures nobody may exclude by is collected for nothing, and deciding afterwards is not pre-registered."""
from __future__ import annotations

from pathlib import Path

import pytest

from game.checks import CHECK_FLAGS
from game.study import load_study

STUDIES = Path(__file__).resolve().parents[2] / "studies"
SHIPPED = sorted([*STUDIES.glob("*.json"), *STUDIES.glob("*.json.example")])
REVIEWED = STUDIES / "reviewed-controlled.json.example"
FLAG_OF_CHECK = {"comprehension": "comprehension_failed", "attention": "attention_failed",
                 "colour_screen": "colour_screen_failed"}


def test_the_check_flags_are_the_ones_named_here():
    assert set(FLAG_OF_CHECK.values()) == set(CHECK_FLAGS)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_study_file_loads(path):
    load_study(path)          # refuses bad checks, and a plan whose sha256 no longer matches (game/preregistration.py)


def test_the_reviewed_example_excludes_on_every_check_it_collects():
    study = load_study(REVIEWED)
    collected = {FLAG_OF_CHECK[name] for name in FLAG_OF_CHECK if name in study.checks}
    assert collected == set(CHECK_FLAGS)     # the example shows every check ...
    assert collected <= set(study.preregistration["exclusions"])     # ... and registers their flags
