"""The rating task for independent raters (RESEARCH.md 1): each item is the secret image of a finished
game, a question, the agent's answer and one explanation of the secret image; three different raters
rate the explanation on the 5-point correctness scale and the answer on the 3-point scale.

Items come from the event log of finished games only (so no rater ever sees a secret still in play),
collected incrementally: the stream position read so far is kept in Redis.
"""
from __future__ import annotations

import hashlib
import json
import time

from explainers.grading import ANSWER_SCALE, EXPLANATION_SCALE

from .store import EVENTS, Store

RATERS_PER_ITEM = 3
CURSOR, ITEMS, PENDING = "exag:rate:cursor", "exag:rate:items", "exag:rate:pending"


class RatingError(ValueError):
    pass


class RatingTask:
    def __init__(self, store: Store, image_index_to_pool: dict[int, int]) -> None:
        self.store = store
        self.pool_position = image_index_to_pool     # world image index -> pool position (for the image URL)

    def _collect(self) -> None:
        """Reads new events: explanations of secret images wait in PENDING until their game's guess."""
        r = self.store.redis
        with r.lock("exag:lock:rate:collect", timeout=60, blocking_timeout=60):
            start = r.get(CURSOR) or "-"
            while True:
                chunk = r.xrange(EVENTS, min=start, count=2000)
                if not chunk:
                    break
                for event_id, fields in chunk:
                    kind, game = fields["type"], fields["game"]
                    if kind == "game_start":
                        payload = json.loads(fields["payload"])
                        r.hset(PENDING, f"{game}:image", payload["world_images"][payload["secret"]])
                    elif kind in ("question", "explanations_bought"):
                        payload = json.loads(fields["payload"])
                        for x in payload.get("explanations") or []:
                            if not x["is_secret"]:
                                continue
                            item = {"game": game, "round": payload["round"], "explainer": x["explainer"],
                                    "kind": x["kind"], "payload": x["payload"]}
                            if kind == "question":
                                item.update(question=payload["question"], answer=payload["answer"])
                            r.rpush(f"{PENDING}:{game}", json.dumps(item))
                        if kind == "question":
                            r.hset(PENDING, f"{game}:{payload['round']}",
                                   json.dumps([payload["question"], payload["answer"]]))
                    elif kind == "guess":
                        self._release(game)
                start = "(" + chunk[-1][0]
                r.set(CURSOR, start)

    def _release(self, game: str) -> None:
        r = self.store.redis
        image = r.hget(PENDING, f"{game}:image")
        for raw in r.lrange(f"{PENDING}:{game}", 0, -1):
            item = json.loads(raw)
            if "question" not in item:
                question, answer = json.loads(r.hget(PENDING, f"{game}:{item['round']}") or '["", ""]')
                item.update(question=question, answer=answer)
            item["image"] = int(image)
            item_id = hashlib.blake2b(f"{game}:{item['round']}:{item['explainer']}".encode(), digest_size=8).hexdigest()
            if r.hsetnx(f"exag:rate:item:{item_id}", "item", json.dumps(item)):
                r.rpush(ITEMS, item_id)
        r.delete(f"{PENDING}:{game}")

    def next_item(self, rater: str) -> dict | None:
        self._collect()
        r = self.store.redis
        done = r.smembers(f"exag:rate:by:{rater}")
        for item_id in r.lrange(ITEMS, 0, -1):
            if item_id in done or int(r.hget(f"exag:rate:item:{item_id}", "count") or 0) >= RATERS_PER_ITEM:
                continue
            item = json.loads(r.hget(f"exag:rate:item:{item_id}", "item"))
            return {"item": item_id, "image_url": f"/rate/image/{item_id}.png", "question": item["question"],
                    "answer": item["answer"],
                    "explanation": {"explainer": item["explainer"], "kind": item["kind"], "payload": item["payload"]},
                    "rated": len(done)}
        return None

    def item_image(self, item_id: str) -> int | None:
        raw = self.store.redis.hget(f"exag:rate:item:{item_id}", "item")
        return self.pool_position.get(json.loads(raw)["image"]) if raw else None

    def rate(self, rater: str, item_id: str, explanation_rating: str, answer_rating: str) -> None:
        if explanation_rating not in EXPLANATION_SCALE:
            raise RatingError(f"explanation_rating must be one of: {', '.join(EXPLANATION_SCALE)}")
        if answer_rating not in ANSWER_SCALE:
            raise RatingError(f"answer_rating must be one of: {', '.join(ANSWER_SCALE)}")
        r = self.store.redis
        raw = r.hget(f"exag:rate:item:{item_id}", "item")
        if raw is None:
            raise RatingError("unknown item")
        with r.lock(f"exag:lock:rate:{item_id}", timeout=30, blocking_timeout=30):
            if r.sismember(f"exag:rate:by:{rater}", item_id):
                raise RatingError("you have already rated this item")
            if int(r.hget(f"exag:rate:item:{item_id}", "count") or 0) >= RATERS_PER_ITEM:
                raise RatingError(f"this item already has {RATERS_PER_ITEM} ratings")
            item = json.loads(raw)
            pipe = r.pipeline(transaction=True)
            pipe.hincrby(f"exag:rate:item:{item_id}", "count", 1)
            pipe.sadd(f"exag:rate:by:{rater}", item_id)
            self.store.add_event(pipe, {"type": "rater_rating", "time": time.time(), "game": item["game"],
                                      "rater": rater, "item": item_id, "round": item["round"],
                                      "explainer": item["explainer"], "kind": item["kind"],
                                      "explanation_rating": explanation_rating, "answer_rating": answer_rating})
            pipe.execute()
