"""The randomized offer of explanations in at-will studies (StudyConfig.offer = "randomized"): in a seeded,
balanced random half of each participant's games explanations can be bought, in the others they cannot.

Why: in an at-will study the player chooses when to buy explanations, so "games that used them vs games that
did not" compares the player's choices, an association. Offering them only in randomly chosen games makes the
offer a randomized contrast within each participant: the analysis can estimate its intention-to-treat effect,
and use the offer as an instrument for using explanations.

Like the arm assignment (game/assignment.py), the offer is a pure function of what the export holds: the
study's seed (its `studies` table) and the participant's slot (its `assignments` table), or the participant id
for one who named their arm in the link and took no slot. Anyone recomputes it with `offered`; the server
also logs it in every game_start event (`offered`, the export's games table).

    offered(study, participant_key(slot=3, pid="prolific:5f0c"), game_number=0)   # True, False; None: "always"
"""
from __future__ import annotations

from typing import Protocol

from .seeding import seeded_rng


class OfferingStudy(Protocol):
    """What `offered` reads of a study (game/study.py StudyConfig, which imports OFFERS from here)."""
    study_id: str
    offer: str
    seed: int | None

    @property
    def games(self) -> int: ...

OFFERS = ("always", "randomized")     # the study's option (game/study.py StudyConfig.offer)


def participant_key(slot: int | None, pid: str) -> int | str:
    """What the offer is seeded by, besides the study's seed: the participant's slot of the assignment
    sequence, else (an arm named by the link: no slot) their participant id."""
    return pid if slot is None else slot


def offered_games(seed: int, key: int | str, games: int) -> frozenset[int]:
    """The game numbers (0-based) offered to the participant `key` of a study of `games` games under `seed`:
    a random half of them; of an odd number, the seed decides which side gets the extra game. A slot read back
    from an export (NumPy's int64, or 3.0 in a column with gaps) is the same slot as the server's 3."""
    rng = seeded_rng(seed, "offer", key if isinstance(key, str) else int(key))
    half = games // 2 + (int(rng.integers(2)) if games % 2 else 0)
    return frozenset(int(g) for g in rng.permutation(games)[:half])


def offered(study: OfferingStudy, key: int | str, game_number: int) -> bool | None:
    """Whether explanations can be bought in game `game_number` (0-based) of the participant `key`
    (`participant_key`): None when the study offers them always (every at-will game, and controlled studies)."""
    if study.offer == "always":
        return None
    if study.seed is None:
        raise ValueError(f"study {study.study_id} has no seed yet: the server draws one when it stores the study")
    if not 0 <= game_number < study.games:
        raise ValueError(f"study {study.study_id} has games 0 to {study.games - 1}, not {game_number}")
    return game_number in offered_games(study.seed, key, study.games)
