"""Flood control: a token bucket per key (a Socket.IO connection, a client address).

A key may send `rate` messages a second on average and up to `burst` at once: its bucket holds at most
`burst` tokens, refills at `rate` tokens a second, and every allowed message takes one. A bucket starts
full, so a new connection can always send its first `burst` messages, however fast it sends them.

Why a bucket and not a count per second: what a real page sends comes in bursts (the page joins on
connect; a player opens several earlier rounds' explanations in a row, each fetched once with `history`)
separated by the seconds a person needs to read, type and decide. The sizes `exag serve` uses, and why
they leave a real page alone, are in docs/protocol.md, "Refusals and limits".

The clock is a parameter so that a test decides the time between messages; the server uses
`time.monotonic`.
"""
from __future__ import annotations

import threading
import time
from typing import Callable


class Throttle:
    """A token bucket per key: `rate` messages a second on average, bursts up to `burst`. Beyond
    MAX_KEYS keys, those whose bucket has filled up again are forgotten (they would start full anyway)."""
    MAX_KEYS = 10_000

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        if not 0 < rate < float("inf"):
            raise ValueError(f"a throttle's rate must be a positive number of messages a second, not {rate!r}")
        if not (isinstance(burst, int) and burst >= 1):
            raise ValueError(f"a throttle's burst must be a whole number of messages >= 1, not {burst!r}")
        self.rate, self.burst, self.clock = float(rate), burst, clock
        self._buckets: dict[str, tuple[float, float]] = {}     # key -> (tokens, when they were counted)
        self._lock = threading.Lock()

    def allow(self, key: str) -> bool:
        """Takes a token from `key`'s bucket if it holds one; False (and nothing taken) if it is empty."""
        now = self.clock()
        with self._lock:
            if len(self._buckets) > self.MAX_KEYS:
                full_after = self.burst / self.rate
                self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < full_after}
            tokens, last = self._buckets.get(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            allowed = tokens >= 1
            self._buckets[key] = (tokens - 1 if allowed else tokens, now)
            return allowed

    def forget(self, key: str) -> None:
        with self._lock:
            self._buckets.pop(key, None)
