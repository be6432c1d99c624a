"""A participant's lock outlives slow work but not a crashed holder (issue 10, finding 7), nor a hung one
(issue 29: it is renewed for LOCK_MAX_HOLD_S at most); a commit can release it."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from socket_player import joined

from server import locks as locks_module
from server.locks import LOCK_TIMEOUT_S, LOCK_WAIT_S
from server.store import Store

REPO = Path(__file__).resolve().parents[2]
# a server process in the middle of a message: it holds the participant's lock, then dies without releasing it
# (its lock's lifetime scaled down from LOCK_TIMEOUT_S to HOLDER_TIMEOUT_S, so that the test takes a second)
HOLDER_TIMEOUT_S = 1
HOLDER = """
import sys, time
from server import locks
from server.store import Store
locks.LOCK_TIMEOUT_S = int(sys.argv[2])
held = Store.connect(sys.argv[1]).locked("aw", "pid:lockout")
held.__enter__()
print("held", flush=True)
time.sleep(120)
"""


def test_a_crashed_holders_lock_is_gone_within_seconds(app, connect):
    player = joined(connect, "aw", "lockout")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, app.extensions["exag"].redis.url, str(HOLDER_TIMEOUT_S)],
                              cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
    finally:
        holder.kill()
        holder.wait()
    left_ms = app.extensions["exag"].store.redis.pttl("exag:lock:aw:pid:lockout")
    assert left_ms <= HOLDER_TIMEOUT_S * 1000                 # the dead holder's lock is gone in seconds (-2: gone) ...
    assert HOLDER_TIMEOUT_S <= LOCK_TIMEOUT_S < LOCK_WAIT_S                       # ... sooner than a message waits for a lock, so
    player.ok("join", {"study": "aw", "pid": "lockout"})     # this one waits for it and is handled, not "busy"


def test_a_live_holder_keeps_its_lock_while_it_works(app, monkeypatch):
    # the lock's lifetime scaled down from 6 s, and renewals from every 2 s, so that the test takes seconds
    monkeypatch.setattr(locks_module, "LOCK_TIMEOUT_S", 1)
    monkeypatch.setattr(locks_module, "LOCK_RENEW_S", 0.25)
    store = Store.connect(app.extensions["exag"].redis.url)      # its renewer starts with these
    try:
        with store.locked("aw", "pid:slow"):
            time.sleep(locks_module.LOCK_TIMEOUT_S + 1)           # longer than the lock lives unless renewed
            assert store.redis.pttl("exag:lock:aw:pid:slow") > 0
        assert not store.redis.exists("exag:lock:aw:pid:slow")
    finally:
        store.close()


def test_a_hung_holder_loses_its_lock_after_the_maximum_hold(app, monkeypatch):
    # the maximum hold scaled down from 45 s, and renewals from every 2 s, so that the test takes seconds
    monkeypatch.setattr(locks_module, "LOCK_MAX_HOLD_S", 2.0)
    monkeypatch.setattr(locks_module, "LOCK_RENEW_S", 0.25)
    store = Store.connect(app.extensions["exag"].redis.url)      # its renewer starts with these
    key = "exag:lock:aw:pid:hung"
    try:
        with store.locked("aw", "pid:hung"):
            time.sleep(1.0)
            assert store.redis.exists(key)                        # renewed while within the maximum hold ...
            threads = threading.active_count()
            with store.locked("aw", "pid:other"):                 # (one renewer for all the locks: no thread per lock)
                assert threading.active_count() == threads
            deadline = time.monotonic() + 3.0
            while store.redis.exists(key) and time.monotonic() < deadline:
                time.sleep(0.05)
            gone_after = time.monotonic()
            assert not store.redis.exists(key)                   # ... and gone at the maximum hold, while still "held"
            with store.locked("aw", "pid:hung"):                  # so the participant's next message gets it
                pass
        assert time.monotonic() - gone_after < 1.0               # and the hung holder's release waited for nothing
    finally:
        store.close()


def test_a_commit_releases_its_callers_lock_but_never_anothers(app):
    store = app.extensions["exag"].store
    participant = {"study": "aw", "pid": "pid:commit-release", "stage": "consent"}
    with store.locked("aw", "pid:commit-release") as held:
        store.commit(participant=participant, release=(held,))
        assert not store.redis.exists("exag:lock:aw:pid:commit-release")   # released with the commit
    with store.locked("aw", "pid:commit-release") as held:
        # the lock expired and another holder took it: the commit must not release theirs
        store.redis.set("exag:lock:aw:pid:commit-release", "another-holder", px=5000)
        store.commit(participant=participant, release=(held,))
        assert store.redis.get("exag:lock:aw:pid:commit-release") == "another-holder"
    assert store.redis.get("exag:lock:aw:pid:commit-release") == "another-holder"
    store.redis.delete("exag:lock:aw:pid:commit-release")
