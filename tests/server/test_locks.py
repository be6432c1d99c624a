"""A participant's lock outlives slow work but not a crashed holder (issue 10, finding 7)."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from socket_player import joined

from server.store import LOCK_TIMEOUT_S

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
    crashed = time.monotonic()
    player.ok("join", {"study": "aw", "pid": "lockout"})     # waits for the dead holder's lock to expire
    assert time.monotonic() - crashed < LOCK_TIMEOUT_S + 4                # not 30 s, then "the server is busy"


def test_a_live_holder_keeps_its_lock_while_it_works(app):
    store = app.extensions["exag"].store
    with store.locked("aw", "pid:slow"):
        time.sleep(LOCK_TIMEOUT_S + 1)                        # longer than the lock lives unless renewed
        assert store.redis.pttl("exag:lock:aw:pid:slow") > 0
    assert not store.redis.exists("exag:lock:aw:pid:slow")
