"""What a player's page is sent of an explanation: the fields its renderer shows (frontend/js/explanations/),
at the precision it shows them, and nothing else.

The explainers' payloads carry the agent's outputs at full precision; the event log keeps them so. Sent
as they are, they would let a participant who replays the public agent checkpoint on the shown images
match the exact floats of the "about the secret image" payloads and find the secret (Issue 10). So
every payload is projected by its kind before it is sent: each kind's `for_player` lives with the kind
(explainers/kinds/: attention, words, qa_pairs, text; docs/protocol.md says what each carries), and a kind
the page has no renderer for is sent with an empty payload. This module keeps the names the server and
the tests import.
"""
from __future__ import annotations

from explainers.kinds import KINDS, for_player
from explainers.kinds.packing import (DIGIT_BITS, DIGITS, MORE, PACKED_MASKS, pack_counts, pack_grid, unpack_counts,
                                      unpack_grid)
from explainers.kinds.precision import PERCENT_DECIMALS, SCORE_DIGITS, share, significant

PROJECTIONS = {name: module.for_player for name, module in KINDS.items()}

__all__ = ["DIGITS", "DIGIT_BITS", "MORE", "PACKED_MASKS", "PERCENT_DECIMALS", "PROJECTIONS", "SCORE_DIGITS",
           "for_player", "pack_counts", "pack_grid", "share", "significant", "unpack_counts", "unpack_grid"]
