"""A participant's lock outlives slow work but not a crashed holder (issue 10, finding 7)."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from socket_player import joined

from server.store import LOCK_TIMEOUT_S, LOCK_WAIT_S

REPO = Path(__file__).resolve().parents[2]
# a server process in the middle of a message: it holds the participant's lock, then dies without releasing it
HOLDER = """
import sys, time
from server.store import Store
held = Store.connect(sys.argv[1]).locked("aw", "pid:lockout")
held.__enter__()
print("held", flush=True)
time.sleep(120)
"""


def test_a_crashed_holders_lock_is_gone_within_seconds(app, connect):
    player = joined(connect, "aw", "lockout")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, app.extensions["exag"].redis.url], cwd=REPO,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
    finally:
        holder.kill()
        holder.wait()
    left_ms = app.extensions["exag"].store.redis.pttl("exag:lock:aw:pid:lockout")
    assert left_ms <= LOCK_TIMEOUT_S * 1000                   # the dead holder's lock is gone in seconds (-2: gone) ...
    assert LOCK_TIMEOUT_S < LOCK_WAIT_S                       # ... sooner than a message waits for a lock, so
    player.ok("join", {"study": "aw", "pid": "lockout"})     # this one waits for it and is handled, not "busy"


def test_a_live_holder_keeps_its_lock_while_it_works(app):
    store = app.extensions["exag"].store
    with store.locked("aw", "pid:slow"):
        time.sleep(LOCK_TIMEOUT_S + 1)                        # longer than the lock lives unless renewed
        assert store.redis.pttl("exag:lock:aw:pid:slow") > 0
    assert not store.redis.exists("exag:lock:aw:pid:slow")
