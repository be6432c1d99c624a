"""What a round shows and logs of one explainer's explanation of one pool image, computed once and shared by
every inference worker through Redis (issue 53).

An explanation of a pool image depends on the agent (frozen by a study's pre-registration), the explainer
and its options, the image and the question, never on the player: the answer of the same agent to the same
question about the same image is the same, and so is every explainer's payload built from it (the built-ins
are deterministic; a sham, which shows another image's explanation of the round, is not cached, nor is a
third-party explainer that does not declare `cacheable = True`). So what finish_round makes of it, the
player's view and the log entry with its grade, is kept under

    exag:xcache:<agent fingerprint>:<explainer>:<options digest>:<image key>:<question, normalised>

with the question lower-cased and its spaces collapsed (the agent reads questions so: vqa_agent/tokenizer.py).
A round then computes only the explanations nobody computed before, and its agent answers only the images
those need (server/inference.py). A cached product is the bytes its computation gave (a test compares them
for every explainer and shipped agent); its log entry says `"cached": true`.

Bounded: at most `max_entries` entries (an attention product of a 20-image round is ~5 KB: the default,
40,000, holds ~200 MB), the oldest written dropped first, in the same Lua step that writes (so any number of
workers together never exceed it), and each entry expires `ttl_s` after it was written. Hits and misses are
counted per worker and reach the capacity report through the CPU_STATS hash (server/worker.py).
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass

import redis

from . import json_text

PREFIX = "exag:xcache:"
INDEX = "exag:xcache-index"          # sorted set: key -> when it was written (to drop the oldest)
DEFAULT_MAX_ENTRIES = 40_000
DEFAULT_TTL_S = 24 * 3600

# KEYS: the entries' keys, then the index; ARGV: max entries, ttl, now, then one value per entry. Writes each,
# indexes it, and drops the oldest beyond the bound (their keys and index entries), in one atomic step.
_PUT = """
local index = KEYS[#KEYS]
local limit, ttl, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
for i = 1, #KEYS - 1 do
  redis.call('SET', KEYS[i], ARGV[3 + i], 'EX', ttl)
  redis.call('ZADD', index, now, KEYS[i])
end
local excess = redis.call('ZCARD', index) - limit
if excess > 0 then
  local oldest = redis.call('ZPOPMIN', index, excess)
  for i = 1, #oldest, 2 do redis.call('DEL', oldest[i]) end
end
return math.max(excess, 0)
"""


def normalised_question(question: str) -> str:
    return " ".join(question.split()).lower()


def options_digest(options: dict | None) -> str:
    """A short digest of an explainer's options (paths and numbers as JSON text, sorted)."""
    text = json.dumps(options or {}, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


NO_OPTIONS = options_digest(None)


@dataclass
class CacheCounts:
    hits: int = 0
    misses: int = 0

    def take(self) -> dict[str, int]:
        """The counts since the last take, as CPU_STATS fields, then zero."""
        taken = {"xcache:hits": self.hits, "xcache:misses": self.misses}
        self.hits = self.misses = 0
        return taken


class ExplanationCache:
    def __init__(self, client: redis.Redis, agent_fingerprint: str, options: dict[str, dict] | None = None,
                 max_entries: int = DEFAULT_MAX_ENTRIES, ttl_s: int = DEFAULT_TTL_S) -> None:
        if max_entries < 1 or ttl_s < 1:
            raise ValueError(f"the explanation cache needs max_entries >= 1 and ttl_s >= 1, got {max_entries}, {ttl_s}")
        self.client = client
        self.agent = agent_fingerprint[:20]
        self.options = {name: options_digest(o) for name, o in (options or {}).items()}
        self.max_entries, self.ttl_s = max_entries, ttl_s
        self.counts = CacheCounts()
        self._put = client.register_script(_PUT)

    def key(self, explainer: str, image_key: str, question: str) -> str:
        digest = self.options.get(explainer, NO_OPTIONS)
        return f"{PREFIX}{self.agent}:{explainer}:{digest}:{image_key}:{normalised_question(question)}"

    def get_many(self, keys: list[str]) -> list[dict | None]:
        """The product under each key, or None; one round trip."""
        if not keys:
            return []
        found = [None if raw is None else json_text.loads(raw) for raw in self.client.mget(keys)]
        hits = sum(f is not None for f in found)
        self.counts.hits += hits
        self.counts.misses += len(keys) - hits
        return found

    def put_many(self, products: dict[str, dict]) -> None:
        """Keeps each product under its key (one round trip), dropping the oldest beyond the bound."""
        if not products:
            return
        keys = list(products)
        values = [json_text.dumps(products[k]) for k in keys]
        self._put(keys=[*keys, INDEX], args=[self.max_entries, self.ttl_s, time.time(), *values])


def shared_cache(client: redis.Redis, predictor, max_entries: int = DEFAULT_MAX_ENTRIES) -> ExplanationCache | None:
    """The cache of a predictor's explanations (server/inference.py), or None: caching off (0 entries), or
    an agent that cannot say which weights it has (no `fingerprint`: its explanations cannot be keyed)."""
    fingerprint = getattr(predictor.agent, "fingerprint", None)
    if max_entries <= 0 or fingerprint is None:
        return None
    return ExplanationCache(client, fingerprint(), predictor.options, max_entries)
