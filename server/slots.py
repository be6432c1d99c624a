"""The assignment's slots in Redis: each join takes its slot of the study's seeded sequence (game/assignment.py)
in one atomic Lua step, so a crowd of joins is dealt in arrival order without a study-wide lock (issue 45:
with one, joins queued for seconds and were refused past 10 s).

Per study, two keys: how many slots were dealt (`DEALT`), and each holder's "seen" score (`SEEN`, member
"SLOT:PID"): +inf once they finished, -inf once screened out or declined consent (their slot goes to the next arrival), else their
latest message (each commit of a participant with a slot sets it: `record_seen`). `deal_slot` takes the lowest
dealt slot none of whose holders was seen after the dropout cutoff (all dropped out), else the next new one,
and enters the newcomer as its holder: game/assignment.py `next_slot` over the same holders, so the same
sequence. One join reads the study's holders once, inside Redis (~1 ms for a thousand).

A study whose slots were dealt before these keys existed gets them rebuilt from its participants once, under
the study's assignment lock (`rebuild`).
"""
from __future__ import annotations

import math

DEALT = "exag:slots:{}:dealt"
SEEN = "exag:slots:{}:seen"
# KEYS: DEALT, SEEN; ARGV: the dropout cutoff (a holder last seen at or before it dropped out), now, the newcomer's
# participant id. Returns {slot, dealt before}, or nil when the study's keys were never made (rebuild them first).
DEAL = """
local dealt = redis.call('GET', KEYS[1])
if not dealt then return nil end
dealt = tonumber(dealt)
local held = {}
for _, member in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ARGV[1], '+inf')) do
  held[tonumber(string.match(member, '^(%d+):'))] = true
end
local slot = 0
while slot < dealt and held[slot] do slot = slot + 1 end
if slot == dealt then redis.call('SET', KEYS[1], dealt + 1) end
redis.call('ZADD', KEYS[2], ARGV[2], slot .. ':' .. ARGV[3])
return {slot, dealt}
"""


def seen_score(participant: dict) -> float:
    """How a participant holds their slot (the stages of server/participation.py)."""
    if participant["stage"] == "done":
        return math.inf
    return -math.inf if participant["stage"] in ("screened_out", "declined") else participant["last_seen"]


def record_seen(pipe, participant: dict) -> None:
    """In a participant's commit: how their slot is held by them now."""
    if participant.get("slot") is not None:
        pipe.zadd(SEEN.format(participant["study"]), {f"{participant['slot']}:{participant['pid']}":
                                                      seen_score(participant)})


def deal_slot(store, study_id: str, pid: str, cutoff: float, now: float) -> tuple[int, int]:
    """(the slot of the next arrival `pid`, how many were dealt before it): one atomic step on Redis."""
    keys = [DEALT.format(study_id), SEEN.format(study_id)]
    dealt = store.redis.eval(DEAL, 2, *keys, repr(cutoff), repr(now), pid)
    if dealt is None:
        rebuild(store, study_id)
        dealt = store.redis.eval(DEAL, 2, *keys, repr(cutoff), repr(now), pid)
    return int(dealt[0]), int(dealt[1])


def rebuild(store, study_id: str) -> None:
    """Makes the study's keys from its stored participants, once (a new study: none dealt)."""
    with store.lock(f"assign:{study_id}"):
        if store.redis.exists(DEALT.format(study_id)):
            return                                  # another join made them meanwhile
        seen = {f"{p['slot']}:{p['pid']}": seen_score(p) for p in store.participants(study_id)
                if p.get("slot") is not None}     # a named arm, or a participant from before slots, has none
        pipe = store.redis.pipeline()
        if seen:
            pipe.zadd(SEEN.format(study_id), seen)
        pipe.set(DEALT.format(study_id), max((int(member.split(":")[0]) for member in seen), default=-1) + 1)
        pipe.execute()
