"""The rating task for independent raters (docs/research.md §1): each item is the secret image of a finished
game, a question, the agent's answer and one explanation of the secret image; three different raters
rate the explanation on the 5-point correctness scale and the answer on the 3-point scale.

Items come from the event log of finished games only (so no rater ever sees a secret still in play),
collected incrementally: the stream position read so far is kept in Redis.

Raters do not choose their ids: the researcher issues each rater a link `/rate?rater=ID&sig=SIG` (admin
page, POST /admin/raters), SIG an HMAC of the id under a key kept in Redis (made once, so links stay valid
across restarts and on every web process). The API refuses ids without their signature, and a browser (its
`browser.COOKIE`) that has used one rater link cannot act as another rater.
"""
from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import secrets
import time
from urllib.parse import urlencode

from explainers.scales import ANSWER_SCALE, EXPLANATION_SCALE

from . import browser
from .schemas import ID
from .store import EVENTS, Store

RATERS_PER_ITEM = 3
MAX_RATERS_PER_REQUEST = 500           # links one request issues (a lab's raters, not a crowd's)
CURSOR, ITEMS, PENDING = "exag:rate:cursor", "exag:rate:items", "exag:rate:pending"
LINK_KEY = "exag:rate:link-key"        # the key rater links are signed with
BROWSERS = "exag:rate:browsers"        # browser key -> the rater that browser rates as


class RatingError(ValueError):
    status = 400


class RaterRefused(RatingError):
    """A rater link that is not the researcher's, or a browser acting as a second rater."""
    status = 403


class RatingTask:
    def __init__(self, store: Store, image_index_to_pool: dict[int, int]) -> None:
        self.store = store
        self.pool_position = image_index_to_pool     # world image index -> pool position (for the image URL)
        self._link_key: bytes | None = None

    # --- raters -----------------------------------------------------------------------------------

    @functools.cached_property
    def browsers(self) -> browser.Signer:
        """Checks the browser cookies the pages signed (server/browser.py)."""
        return browser.Signer.kept_in(self.store.redis)

    def signature(self, rater: str) -> str:
        if self._link_key is None:
            self.store.redis.set(LINK_KEY, secrets.token_hex(32), nx=True)   # the first process makes it
            self._link_key = self.store.redis.get(LINK_KEY).encode()
        digest = hmac.new(self._link_key, f"rater:{rater}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    @staticmethod
    def rater_ids(sent) -> list[str]:
        """The rater ids a request names (POST /admin/raters `raters`): text, ids separated by spaces or commas,
        or a list of ids; each once, in order. RatingError says what is wrong."""
        raters = sent.replace(",", " ").split() if isinstance(sent, str) else sent
        if not (isinstance(raters, list) and raters and all(isinstance(r, str) and ID.fullmatch(r) for r in raters)):
            raise RatingError("give rater ids of 1-64 letters, digits, '_', '-' or '.' (text separated by spaces or "
                              "commas, or a JSON list of strings)")
        if len(raters) > MAX_RATERS_PER_REQUEST:
            raise RatingError(f"at most {MAX_RATERS_PER_REQUEST} rater ids at once, not {len(raters)}")
        return list(dict.fromkeys(raters))

    def link(self, rater: str) -> str:
        """The rating page's link for this rater (relative to the server's URL)."""
        if not ID.fullmatch(rater):
            raise RatingError("a rater id has 1-64 letters, digits, '_', '-' or '.'")
        return "/rate?" + urlencode({"rater": rater, "sig": self.signature(rater)})

    def check_rater(self, rater, sig, browser_cookie: str | None) -> str:
        """The rater, when the link is the researcher's and this browser rates as no other rater."""
        if not isinstance(rater, str) or not ID.fullmatch(rater):
            raise RatingError("rater must be an id of 1-64 letters, digits, '_', '-' or '.'")
        if not isinstance(sig, str) or not hmac.compare_digest(sig.encode(), self.signature(rater).encode()):
            raise RaterRefused("this rating link is not valid; open the link the researcher gave you")
        key = self.browsers.key(browser_cookie)
        if key is None:
            raise RaterRefused("your browser did not send the rating page's cookie; please allow cookies for this "
                               "site and reload the page")
        r = self.store.redis
        r.hsetnx(BROWSERS, key, rater)
        bound = r.hget(BROWSERS, key)
        if bound != rater:
            raise RaterRefused(f"this browser already rates as {bound}; one browser is one rater")
        return rater

    def _collect(self) -> None:
        """Reads new events: explanations of secret images wait in PENDING until their game's guess."""
        r = self.store.redis
        with self.store.lock("rate:collect"):
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
        with self.store.lock(f"rate:{item_id}"):
            if r.sismember(f"exag:rate:by:{rater}", item_id):
                raise RatingError("you have already rated this item")
            if int(r.hget(f"exag:rate:item:{item_id}", "count") or 0) >= RATERS_PER_ITEM:
                raise RatingError(f"this item already has {RATERS_PER_ITEM} ratings")
            item = json.loads(raw)
            event = {"type": "rater_rating", "time": time.time(), "game": item["game"], "rater": rater,
                     "item": item_id, "round": item["round"], "explainer": item["explainer"], "kind": item["kind"],
                     "explanation_rating": explanation_rating, "answer_rating": answer_rating}

            def write(pipe) -> None:
                pipe.hincrby(f"exag:rate:item:{item_id}", "count", 1)
                pipe.sadd(f"exag:rate:by:{rater}", item_id)
                self.store.add_event(pipe, event)
            self.store.transaction(write)
