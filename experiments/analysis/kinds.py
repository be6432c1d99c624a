"""Figs. 6-10 per study kind: a report over several studies never pools at-will games with controlled ones
in these figures. The two settings differ in everything the figures compare (20 images or 5, explanations
bought per round or shown by block, different baselines), so a pooled win rate by rating mixes two
populations in proportions no one chose.

    section = per_kind(frames, by_helpfulness_of_one_kind)

Over frames of one kind (or one study) the section is as before; over several kinds it is
    {"by_kind": {kind: section}, "note": str}
with kinds in the order of game.study.KINDS ("controlled", "at-will"), then "unknown" (studies whose games
name no known setting). SECTIONS names the report's sections that are per kind.

Where each kind has one study (the usual report of a controlled and an at-will study), each kind's section
is its study's own, which the report has already computed: from_studies assembles the pooled one from them.
"""
from __future__ import annotations

import copy
from dataclasses import replace
from typing import Callable

from .frames import AT_WILL, CONTROLLED, Frames

UNKNOWN = "unknown"
SECTIONS = ("rating_histograms", "by_helpfulness", "difficulty_by_rating", "by_correctness", "answer_correctness")
ORDER = (CONTROLLED, AT_WILL, UNKNOWN)
NOTE = ("controlled and at-will studies are reported apart (by_kind): their games are never pooled in Figs. 6-10")


def kinds_of(frames: Frames) -> list[str]:
    """The kinds of the frames' studies (those with games), in ORDER."""
    studies = set(frames.games["study"].unique())
    present = {frames.kinds.get(s) or UNKNOWN for s in studies}
    return [k for k in ORDER if k in present]


def of_kind(frames: Frames, kind: str) -> Frames:
    """The frames of the studies of one kind."""
    studies = {s for s in frames.games["study"].unique() if (frames.kinds.get(s) or UNKNOWN) == kind}
    pick = lambda frame: frame[frame["study"].isin(studies)]
    return replace(frames, games=pick(frames.games), ratings=pick(frames.ratings), items=pick(frames.items),
                   rater=pick(frames.rater), rounds=pick(frames.rounds),
                   kinds={s: k for s, k in frames.kinds.items() if s in studies}, notes=[])


def per_kind(frames: Frames, section: Callable[[Frames], dict]) -> dict:
    """`section` of the frames, or of each kind on its own when they hold several (module doc)."""
    kinds = kinds_of(frames)
    if len(kinds) <= 1:
        return section(frames)
    return {"by_kind": {kind: section(of_kind(frames, kind)) for kind in kinds}, "note": NOTE}


def from_studies(frames: Frames, per_study: dict[str, dict], name: str) -> dict | None:
    """The per-kind section `name` of the frames assembled from the studies' own (per_study: study -> its
    sections), when the frames hold several kinds and each has exactly one study; else None (compute it)."""
    kinds = kinds_of(frames)
    studies = {kind: [s for s in per_study if (frames.kinds.get(s) or UNKNOWN) == kind] for kind in kinds}
    if len(kinds) <= 1 or any(len(of) != 1 for of in studies.values()):
        return None
    return {"by_kind": {kind: copy.deepcopy(per_study[of[0]][name]) for kind, of in studies.items()}, "note": NOTE}
