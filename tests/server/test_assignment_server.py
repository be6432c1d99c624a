"""Randomized assignment on a real server (real Redis, the Socket.IO test client): the server draws the
study's seed when it stores the study, deals arms and orders from it, refills a dropout's slot, and the
export (its assignments, participants, games and studies tables) reproduces every assignment from the seed."""
from __future__ import annotations

import json
import random
import time
from concurrent.futures import ThreadPoolExecutor

from socket_player import joined, signed_cookie, started

from game.assignment import next_slot, slot
from game.export import tables
from game.study import StudyConfig
from server.slots import deal_slot, record_seen


def test_the_export_reproduces_every_assignment_from_the_seed(app, connect):
    services = app.extensions["exag"]
    store = services.store
    study, _ = store.study("real")
    assert study.seed is not None and study.order == "counterbalanced"      # drawn when the study was stored
    for i in range(10):
        started(connect, "real", f"a{i}")
    dropout = store.participant("real", "pid:a3")       # went silent long ago: their slot is dealt again
    dropout["last_seen"] -= 10 * services.config.dropout_after_s
    store.commit(participant=dropout)
    started(connect, "real", "a10")
    joined(connect, "ctl", "demo", arm="both")           # a demo's named arm takes no slot

    exported = tables(store.events())
    config = json.loads(exported["studies"].set_index("study").loc["real", "config"])
    assert config["seed"] == study.seed and config["order"] == "counterbalanced"
    assignments = exported["assignments"]
    real = assignments[assignments["study"] == "real"]
    assert [int(s) for s in real["slot"]] == list(range(10)) + [3]
    for row in real.itertuples():
        expected = slot(config["seed"], config["arms"], config["order"], int(row.slot))
        assert (int(row.block), row.arm, row.order) == (expected.block, expected.arm, expected.order)
        assert row.assigned_by == "randomization" and row.assigned > 0
    assert real["refilled_slot"].iloc[:10].isna().all() and real["refilled_slot"].iloc[10] == 3
    first_block = real.iloc[:8]             # one block: every arm once with each order
    assert sorted(zip(first_block["arm"], first_block["order"])) == \
        sorted((arm, order) for arm in config["arms"] for order in ("abab", "baba"))
    demo = assignments[assignments["participant"] == "pid:demo"].iloc[0]
    assert demo["assigned_by"] == "link" and demo["order"] == "abab" and demo["arm"] == "both"

    # the participants table has each order, and every first game follows it
    participants = exported["participants"].set_index("participant")
    games = exported["games"]
    firsts = games[(games["study"] == "real") & (games["game_number"] == 0)]
    assert len(firsts) == 11
    for game in firsts.itertuples():
        order = participants.loc[game.participant, "order"]
        assert game.order == order
        assert bool(game.with_explanations) == (order == "baba" and game.arm != "none")


def test_the_admin_form_refuses_an_unknown_order_in_one_line_and_seeds_a_new_study(app):
    def create(config: dict):
        return app.test_client().post("/admin/studies?token=test-admin", data={"config": json.dumps(config)})

    refused = create({"study_id": "bad-order", "order": "abba"})
    assert refused.status_code == 400
    assert "<b>Not created: order must be abab, baba or counterbalanced, got &#39;abba&#39;</b>" in \
        refused.get_data(as_text=True)
    assert create({"study_id": "fresh", "arms": ["none", "both"], "order": "baba"}).status_code == 302
    store = app.extensions["exag"].store
    study, _ = store.study("fresh")
    created = next(e for e in store.events() if e["type"] == "study_created" and e["study"] == "fresh")
    assert study.seed is not None and created["config"]["seed"] == study.seed and study.order == "baba"


def test_a_crowd_of_a_thousand_joins_is_dealt_in_arrival_order_none_refused(app):
    """Issue 45: joins queued on a study-wide lock and were refused after 10 s. The slot is dealt in one atomic
    Redis step: 1,000 joins from 50 threads at once are all assigned within 20 s, each slot once, each the
    seeded sequence's arm and order."""
    services = app.extensions["exag"]
    services.store.save_study(StudyConfig("crowd", arms=("none", "attention", "relqa", "both")), "open",
                              {"type": "study_created", "study": "crowd"}, only_if_new=True)
    study, _ = services.store.study("crowd")
    started = time.monotonic()
    with ThreadPoolExecutor(50) as pool:
        list(pool.map(lambda n: services.play.join({"study": "crowd", "pid": f"c{n}"}, signed_cookie(app, f"{n:04d}")),
                      range(1000)))
    seconds = time.monotonic() - started
    assert seconds < 20, f"1,000 joins took {seconds:.1f} s"
    joined_at = sorted(services.store.participants("crowd"), key=lambda p: p["joined"])
    assert sorted(p["slot"] for p in joined_at) == list(range(1000))
    for p in joined_at:
        expected = slot(study.seed, study.arms, study.order, p["slot"])
        assert (p["arm"], p["order"]) == (expected.arm, expected.order)


def test_the_atomic_deal_follows_the_assignment_rule_through_dropouts_and_screen_outs(app):
    """server/slots.py against game/assignment.py next_slot, the rule it implements, over a random history of
    arrivals, dropouts (silent past the cutoff), finishes and screen-outs."""
    store = app.extensions["exag"].store
    rng = random.Random(7)
    holders: dict[int, list[dict]] = {}      # slot -> its holders, as the rule sees them
    dealt, now, cutoff_s = 0, 1_000.0, 100.0
    for step in range(300):
        now += 1.0
        for held in [p for ps in holders.values() for p in ps if p["stage"] == "game"]:
            fate = rng.random()
            if fate < 0.02:
                held["stage"] = "done"
            elif fate < 0.03:
                held["stage"] = "screened_out"
            elif fate < 0.1:
                held["last_seen"] = now      # still playing
            else:
                continue
            pipe = store.redis.pipeline()
            record_seen(pipe, held)
            pipe.execute()
        held_slots = {k for k, ps in holders.items() if any(
            p["stage"] == "done" or (p["stage"] != "screened_out" and p["last_seen"] > now - cutoff_s) for p in ps)}
        expected = next_slot(dealt, held_slots)
        got, before = deal_slot(store, "rule", f"p{step}", now - cutoff_s, now)
        assert (got, before) == (expected, dealt), f"step {step}"
        dealt = max(dealt, got + 1)
        holders.setdefault(got, []).append({"study": "rule", "pid": f"p{step}", "slot": got, "stage": "game",
                                            "last_seen": now})
