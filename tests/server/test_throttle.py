"""The per-connection flood control (server/throttle.py): a token bucket, tested on a clock the test sets,
so that what it allows never depends on how fast the machine runs the test (issue 26)."""
from __future__ import annotations

import pytest

from server.config import ServerConfig
from server.throttle import Throttle


class Clock:
    """Seconds that pass only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def wait(self, seconds: float) -> None:
        self.now += seconds


def allowed(throttle: Throttle, key: str, messages: int) -> int:
    return sum(throttle.allow(key) for _ in range(messages))


def test_a_burst_is_allowed_at_once_and_a_flood_refused_past_it():
    clock = Clock()
    throttle = Throttle(rate=10, burst=20, clock=clock)
    assert allowed(throttle, "a", 20) == 20                # a new connection: its whole burst, no time passing
    assert allowed(throttle, "a", 1000) == 0               # a flood at the same instant: every message refused
    clock.wait(0.1)
    assert allowed(throttle, "a", 5) == 1                  # a tenth of a second buys one message (10 a second)
    clock.wait(1.0)
    assert allowed(throttle, "a", 50) == 10                # a second buys ten
    assert allowed(throttle, "b", 20) == 20                # every key has a bucket of its own


def test_a_steady_sender_at_the_rate_is_never_refused_and_one_at_twice_the_rate_half_the_time():
    clock = Clock()
    throttle = Throttle(rate=8, burst=20, clock=clock)     # 8 a second: a step of 1/8 s is exact in binary
    refused = {"steady": 0, "twice": 0}
    for _ in range(480):                                   # a minute: 8 messages a second, and 16
        refused["steady"] += not throttle.allow("steady")
        refused["twice"] += (not throttle.allow("twice")) + (not throttle.allow("twice"))
        clock.wait(1 / 8)
    assert refused["steady"] == 0
    assert refused["twice"] == 960 - 20 - 479              # all but the burst and one per step after the first


def test_the_bucket_holds_no_more_than_the_burst_after_a_long_pause():
    clock = Clock()
    throttle = Throttle(rate=10, burst=20, clock=clock)
    assert allowed(throttle, "a", 20) == 20
    clock.wait(3600)
    assert allowed(throttle, "a", 100) == 20


def test_a_forgotten_key_starts_full_and_many_keys_forget_only_full_buckets():
    clock = Clock()
    throttle = Throttle(rate=10, burst=20, clock=clock)
    assert allowed(throttle, "gone", 25) == 20
    throttle.forget("gone")                                # a closed connection
    assert allowed(throttle, "gone", 25) == 20
    throttle.MAX_KEYS = 3
    for key in ("x", "y", "z"):
        throttle.allow(key)
    clock.wait(2.5)                                        # gone, x, y, z: full again (2 s refill the burst)
    assert allowed(throttle, "flooding", 30) == 20         # an empty bucket now
    throttle.allow("w")                                    # more than MAX_KEYS keys: the full ones are dropped
    assert set(throttle._buckets) == {"flooding", "w"}
    clock.wait(1.0)
    assert allowed(throttle, "flooding", 30) == 10         # its bucket was kept: refilled by 1 s, not reset


@pytest.mark.parametrize("rate, burst", [(0, 20), (-1, 20), (float("inf"), 20), (float("nan"), 20), (10, 0), (10, 2.5)])
def test_limits_that_cannot_work_are_refused_with_a_reason(rate, burst):
    with pytest.raises(ValueError, match="rate|burst"):
        Throttle(rate, burst)


def test_the_defaults_leave_a_real_pages_bursts_alone():
    """What the page sends (frontend/js/main.js, views/game.js): `join` on every (re)connect; one state-changing
    message at a time, the next only after the answer came and the person read it and acted; `history`
    once per earlier round opened. Played at a brisk human pace (a second between a state and the next
    click), a long at-will game with every round explained, then every earlier round opened in a row as
    fast as a person clicks (4 a second), then a reload, is never refused by ServerConfig's limits."""
    config = ServerConfig()
    clock = Clock()
    throttle = Throttle(config.max_events_per_second, config.event_burst, clock=clock)
    page = []

    def send(event: str, after_s: float) -> None:
        clock.wait(after_s)
        page.append((event, throttle.allow("page")))

    for event in ("join", "consent", "begin"):
        send(event, 1.0)
    rounds = 40
    for _ in range(rounds):
        send("ask", 1.0)
        send("explain", 1.0)
        send("rate", 1.0)
    for _ in range(rounds - 1):
        send("history", 0.25)
    send("join", 0.0)              # a reload joins again at once (on a new connection; here the same bucket)
    for _ in range(5):
        send("history", 0.1)                               # and the player opens five rounds quickly
    assert all(ok for _, ok in page), [event for event, ok in page if not ok]


@pytest.mark.parametrize("flag, value, message", [("--event-burst", "0", "must be a number above 0"),
                                                  ("--event-burst", "2.5", "invalid int value"),
                                                  ("--max-events-per-second", "-1", "must be a number above 0"),
                                                  ("--max-events-per-second", "inf", "must be a number above 0")])
def test_exag_serve_refuses_limits_that_cannot_work(flag, value, message, capsys):
    import exag_cli

    with pytest.raises(SystemExit) as exit_:
        exag_cli.build_parser().parse_args(["serve", flag, value])
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_exag_serve_reads_its_limits_and_defaults_to_the_servers():
    import exag_cli

    args = exag_cli.build_parser().parse_args(["serve", "--max-events-per-second", "2.5", "--event-burst", "40"])
    assert (args.max_events_per_second, args.event_burst) == (2.5, 40)
    defaults = exag_cli.build_parser().parse_args(["serve"])
    assert (defaults.max_events_per_second, defaults.event_burst) == \
        (ServerConfig.max_events_per_second, ServerConfig.event_burst)
