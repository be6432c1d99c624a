"""The Socket.IO message queue on the game's Redis (server/events.py `message_queue`) takes a crowd's emits
at once: with redis-py's default pool of 100 connections, 200 players' handler threads publishing together
made python-socketio log "Cannot publish to redis... retrying" thousands of times a minute and reconnect
each time (issue 29). A process alone on the channel publishes nothing: it has delivered each message to its own
clients already (issue 45)."""
from __future__ import annotations

import logging
import threading
import time

import redis

from server.embedded_redis import EmbeddedRedis
from server.events import MESSAGE_QUEUE_CHANNEL, message_queue
from server.release import SUBSCRIBERS_COUNTED_S


def another_web_process(url: str):
    """What another web process does on the channel: listen (a real subscriber, on its own connection)."""
    listener = redis.Redis.from_url(url).pubsub(ignore_subscribe_messages=True)
    listener.subscribe(MESSAGE_QUEUE_CHANNEL)
    return listener


def received(listener, within_s: float = 2.0) -> list[bytes]:
    got, until = [], time.monotonic() + within_s
    while time.monotonic() < until:
        message = listener.get_message(timeout=0.1)
        if message is not None:
            got.append(message["data"])
    return got


def test_many_threads_publish_at_once_without_a_failure(tmp_path):
    redis_server = EmbeddedRedis(tmp_path / "redis").start()
    failures: list[str] = []

    class Failures(logging.Handler):
        def emit(self, record):
            failures.append(getattr(record, "redis_exception", record.getMessage()))

    try:
        listener = another_web_process(redis_server.url)      # else a lone process publishes nothing
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
        listener.close()
    finally:
        redis_server.stop()


def test_a_lone_process_publishes_nothing_and_publishes_once_another_listens(tmp_path):
    redis_server = EmbeddedRedis(tmp_path / "redis").start()
    try:
        queue = message_queue(redis_server.url)
        queue._redis_connect()
        spy = redis.Redis.from_url(redis_server.url)

        def published() -> int:
            return spy.info("commandstats").get("cmdstat_publish", {}).get("calls", 0)

        queue._publish({"method": "emit", "event": "state", "data": "alone"})
        assert published() == 0
        listener = another_web_process(redis_server.url)
        time.sleep(SUBSCRIBERS_COUNTED_S)
        queue._publish({"method": "emit", "event": "state", "data": "to the other"})
        assert published() == 1 and any(b"to the other" in m for m in received(listener))
        listener.close()
        spy.close()
    finally:
        redis_server.stop()
