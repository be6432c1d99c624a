"""The Redis locks that serialise one participant's actions (`Store.locked`), held by any server process.

A lock lives LOCK_TIMEOUT_S and is renewed while its holder works, so a crashed holder's lock is gone
within seconds; one thread per process's Locks renews all the locks held there (a thread per message cost
more CPU than the message), never past LOCK_MAX_HOLD_S after the lock was taken (a holder hung on a lost
reply frees the participant then), and a release never waits for it. A commit can release its caller's
lock in its own transaction (`Store.commit(release=...)`, then `released`).
"""
from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import redis
from redis.exceptions import LockError
from redis.lock import Lock

LOCK_TIMEOUT_S = 6         # a crashed holder's lock expires after this ...
LOCK_RENEW_S = 2           # ... while a live holder renews it this often ...
LOCK_MAX_HOLD_S = 45       # ... but never longer than this in all: longer than any message's work (a round's
                           # reply is waited for at most ServerConfig.round_timeout_s, 30 s), so only a hung holder
                           # loses its lock, and its participant waits at most this long
LOCK_WAIT_S = 10           # how long a participant's next message waits for the previous one
log = logging.getLogger(__name__)


@dataclass(eq=False)
class Held:
    """A lock this process holds (what `Store.lock` yields)."""
    lock: Lock
    taken: float                 # time.monotonic() when it was taken
    released: bool = False       # by a commit (`Store.commit(release=...)`)


class Locks:
    """The locks this process holds, on one Redis client, and the one thread that renews them."""

    def __init__(self, client: redis.Redis) -> None:
        self.redis = client
        self._held: set[Held] = set()                  # locks held in this process (the renewer's)
        self._held_mutex = threading.Lock()
        self._renewer: threading.Thread | None = None
        self._closed = threading.Event()

    def close(self) -> None:
        self._closed.set()

    @contextmanager
    def lock(self, name: str) -> Iterator[Held]:
        """The Redis lock `exag:lock:NAME`, renewed every LOCK_RENEW_S while the block runs, so that it
        outlives slow work (inference) but not a crashed holder: that one's lock is gone after LOCK_TIMEOUT_S.
        It is renewed for LOCK_MAX_HOLD_S at most: a block that runs longer no longer holds it after that.
        Yields the Held lock: a block whose last write is a commit has it released by that commit
        (`Store.commit(release=(held,))`), one write fewer (each waits for an fsync of the append-only file)."""
        lock = self.redis.lock(f"exag:lock:{name}", timeout=LOCK_TIMEOUT_S, blocking_timeout=LOCK_WAIT_S,
                               thread_local=False)      # the renewing thread uses the holder's token
        if not lock.acquire():
            raise LockError(f"could not take the lock {name} within {LOCK_WAIT_S} s")
        held = Held(lock, time.monotonic())
        self._hold(held)
        try:
            yield held
        finally:
            with self._held_mutex:      # the renewer may be renewing it right now: a release never waits for that
                self._held.discard(held)
            if not held.released:
                try:
                    lock.release()
                except LockError:   # it expired (Redis was away, or it was held past LOCK_MAX_HOLD_S): the work is done
                    log.warning("the lock %s had expired before it was released", name)

    def _hold(self, held: Held) -> None:
        """Hands a lock just taken to the renewer (started with the first lock: a web process forks first)."""
        with self._held_mutex:
            self._held.add(held)
            if self._renewer is None or not self._renewer.is_alive():
                self._renewer = threading.Thread(target=self._renew_held, name="lock renewer", daemon=True)
                self._renewer.start()

    def _renew_held(self) -> None:
        """Every LOCK_RENEW_S, sets each held lock to expire LOCK_TIMEOUT_S from now, or at LOCK_MAX_HOLD_S after
        it was taken if that comes first; a lock that reached its last renewal is renewed no more."""
        while not self._closed.wait(LOCK_RENEW_S):
            now = time.monotonic()
            with self._held_mutex:
                held = list(self._held)
            for one in held:
                ttl = min(LOCK_TIMEOUT_S, one.taken + LOCK_MAX_HOLD_S - now)
                if ttl < LOCK_TIMEOUT_S:
                    with self._held_mutex:
                        self._held.discard(one)
                    log.warning("the lock %s has been held for %.0f s: it is renewed no more and expires in %.1f s",
                                one.lock.name, now - one.taken, max(ttl, 0))
                if ttl <= 0:
                    continue
                try:
                    one.lock.extend(ttl, replace_ttl=True)
                except LockError:   # released (or expired and taken by another) since `held` was read: not ours
                    pass
                except redis.RedisError as error:
                    log.warning("could not renew the lock %s: %s", one.lock.name, error)

    def released(self, held: Held) -> None:
        """`held` was released by a commit's transaction: nothing is left to release or renew."""
        held.released = True
        with self._held_mutex:
            self._held.discard(held)
