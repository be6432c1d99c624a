"""The embedded Redis is supervised (issue 10, finding 8): when redis-server dies the server restarts it
from its append-only file and carries on by itself; a killed server's redis-server is adopted by the next
one and stopped when that one stops."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from server_setup import server_config, write_studies
from socket_player import Player, events_of, socket_client, started

from game.settings import RATINGS
from server.app import create_app
from server.store import EVENTS, Store

REPO = Path(__file__).resolve().parents[2]


def test_the_server_carries_on_when_redis_dies(app, connect):
    player = started(connect, "aw", "phoenix")
    gid = player.game["game_id"]
    player.ok("ask", {"game_id": gid, "question": "is there a large cube?"})
    redis_server = app.extensions["exag"].redis.process
    redis_server.kill()                                   # kill -9: no chance to save anything
    redis_server.wait()
    # handled, not refused: Redis was back within the client's reconnection window (RECONNECT_TRIES, ~10 s)
    player.ok("rate", {"game_id": gid, "rating": RATINGS[2]})
    player.ok("ask", {"game_id": gid, "question": "how many spheres are there?"})
    assert app.test_client().get("/healthz").status_code == 200
    assert len(player.game["rounds"]) == 2 and player.game["rounds"][0]["rating"] == RATINGS[2]
    assert [e["type"] for e in events_of(app, gid)] == ["game_start", "question", "rating", "question"]


class LosesAReply(redis.UnixDomainSocketConnection):
    """A connection that loses the reply to the first transaction it sends (EXEC ran, the answer never came)."""
    lost = False

    def read_response(self, *args, **kwargs):
        response = super().read_response(*args, **kwargs)
        if isinstance(response, list) and not LosesAReply.lost:     # EXEC's reply: the results of the commands
            LosesAReply.lost = True
            self.disconnect()
            raise redis.ConnectionError("the connection broke before the reply came")
        return response


def test_a_commit_whose_reply_was_lost_is_applied_once(app):
    url = app.extensions["exag"].redis.url
    faulty = redis.Redis(connection_pool=redis.ConnectionPool(connection_class=LosesAReply, decode_responses=True,
                                                               path=url.removeprefix("unix://"),
                                                               retry=Retry(NoBackoff(), 0)))
    store = Store(redis.Redis.from_url(url, decode_responses=True), once=faulty)
    before = store.redis.xlen(EVENTS)
    store.log({"type": "study_note", "study": "aw", "text": "sent once"})
    assert LosesAReply.lost and store.redis.xlen(EVENTS) == before + 1
    store.close()


# a server process on a data directory, killed below with SIGKILL
SERVER = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from server_setup import server_config
from server.app import create_app
app = create_app(server_config(sys.argv[2], Path(sys.argv[3]), sys.argv[4], Path(sys.argv[5]), Path(sys.argv[6])))
print(app.extensions["exag"].redis.process.pid, flush=True)
time.sleep(300)
"""


def _serving(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie is dead: nothing reaps an orphan's child here at once)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def test_a_killed_servers_redis_is_adopted_and_stopped(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path):
    data, studies = tmp_path / "data", write_studies(tmp_path / "studies")
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(Path(__file__).parent), str(tiny_agent_dir),
                               str(agent_world), str(tiny_nle_dir), str(data), str(studies)],
                              cwd=REPO, stdout=subprocess.PIPE, text=True)
    orphan = None
    try:
        orphan = int(server.stdout.readline())
        server.kill()                                     # kill -9 of the server: its redis-server lives on
        server.wait()
        assert _serving(orphan)

        app = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, data, studies))
        try:
            player = started(lambda: socket_client(app), "aw", "after-the-crash")
            player.ok("ask", {"game_id": player.game["game_id"], "question": "is there a red thing?"})
        finally:
            app.extensions["exag"].close()               # a graceful stop
        assert not _serving(orphan)

        app = create_app(server_config(tiny_agent_dir, agent_world, tiny_nle_dir, data, studies))
        try:
            again = Player(socket_client(app))
            again.ok("join", {"study": "aw", "pid": "after-the-crash"})
            assert again.state == player.state
            redis_server = app.extensions["exag"].redis.process.pid
        finally:
            app.extensions["exag"].close()
        assert not _serving(redis_server)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        if orphan is not None and _serving(orphan):       # the old code leaves it: do not leak it
            os.kill(orphan, signal.SIGKILL)
