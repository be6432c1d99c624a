"""The Socket.IO message queue on the game's Redis (server/events.py `message_queue`) takes a crowd's emits
at once: with redis-py's default pool of 100 connections, 200 players' handler threads publishing together
made python-socketio log "Cannot publish to redis... retrying" thousands of times a minute and reconnect
each time (issue 29)."""
from __future__ import annotations

import logging
import threading

from server.embedded_redis import EmbeddedRedis
from server.events import message_queue


def test_many_threads_publish_at_once_without_a_failure(tmp_path):
    redis_server = EmbeddedRedis(tmp_path / "redis").start()
    failures: list[str] = []

    class Failures(logging.Handler):
        def emit(self, record):
            failures.append(getattr(record, "redis_exception", record.getMessage()))

    try:
        queue = message_queue(redis_server.url)
        queue._get_logger().addHandler(Failures())
        start = threading.Barrier(250)

        def publish():
            start.wait()
            for _ in range(4):
                queue._publish({"method": "emit", "event": "state", "data": "x" * 1000})

        threads = [threading.Thread(target=publish) for _ in range(250)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []
    finally:
        redis_server.stop()
