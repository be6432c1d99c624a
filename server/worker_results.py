"""What an inference worker writes back for a batch (server/worker.py): each job's one result (the first
writer wins: a job computed twice, by a slow worker and by one that took it over, is answered once), the reply
that wakes the web process waiting for it (server/rounds.py `RoundQueue.submit`), and the acknowledgement of
the stream entries it handled, all in one round trip: a round trip costs ~0.15 ms of CPU on each side on the
2-core CI machine, and a GPU batch of many rounds must not pay one per round (issue 45).
"""
from __future__ import annotations

import logging
import time

import redis

from . import json_text
from .rounds import GROUP, REPLY, RESULT, RESULT_MARGIN_S, RoundJob

log = logging.getLogger(__name__)

# each job's result, written only when none is there yet (a job computed twice is answered once), and its reply,
# which wakes the web process waiting for it; both expire. KEYS: result, reply per job; ARGV: payload, ttl per job
PUBLISH_RESULTS = """
local written = {}
for i = 1, #KEYS, 2 do
    local first = redis.call('SET', KEYS[i], ARGV[i], 'NX', 'EX', ARGV[i + 1])
    if first then
        redis.call('LPUSH', KEYS[i + 1], '1')
        redis.call('EXPIRE', KEYS[i + 1], ARGV[i + 1])
    end
    written[#written + 1] = first and 1 or 0
end
return written
"""


def publish(client: redis.Redis, worker: str, finished: list[tuple[RoundJob, dict]],
            acks: list[tuple[str, str]] = ()) -> None:
    """Writes each job's one result as `worker`'s, wakes the web process waiting for it, and acknowledges
    the stream entries `acks` (stream, entry id): one round trip for a whole batch."""
    finished = [(job, payload) for job, payload in finished if job.reply]
    pipe = client.pipeline(transaction=False)
    if finished:
        keys, args = [], []
        for job, payload in finished:
            ttl = max(int((job.deadline or time.time()) - time.time()) + RESULT_MARGIN_S, RESULT_MARGIN_S)
            keys += [RESULT.format(job.job_id), REPLY.format(job.job_id)]
            args += [json_text.dumps({**payload, "worker": worker}), ttl]
        pipe.eval(PUBLISH_RESULTS, len(keys), *keys, *args)     # EVAL, not a Script: its pipeline adds a round trip
    for stream, entry_id in acks:
        pipe.xack(stream, GROUP, entry_id)
    if not len(pipe):
        return
    replies = pipe.execute()
    for (job, _), first in zip(finished, replies[0] if finished else []):
        if not first:
            log.info("job %s was answered already; this computation is dropped", job.job_id)
