"""The browser a participation or a rater is bound to.

The game and rating pages give every browser that has none a random id in an HttpOnly cookie
(`COOKIE`), signed by the server: the id, a dot, and an HMAC of the id under a key kept in Redis (made once,
like the rater links' key: valid across restarts and on every web process). A cookie the server did not
sign (made up, edited, or from before signing) is no browser id: the page gives that browser a new one, and a
join or a rater sending it is refused as without a cookie. The first join of a participant binds the
participation to it (play.py), and the first call of the rating API binds the browser to its rater
(rating_task.py). What is stored is a hash of the id, never the cookie itself: it is the browser's credential;
what the event log keeps is another hash of it per study (`in_study`), which tells which participations of a
study came from one browser and nothing else.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from .schemas import ID

COOKIE = "exag_browser"
MAX_AGE_S = 180 * 24 * 3600      # outlives any study: a participant may come back days later
SIGNING_KEY = "exag:browser:signing-key"     # in Redis: the key browser ids are signed with
ID_BYTES = 24                    # random bytes of a new id (32 characters)
SIGNATURE_BYTES = 16             # of the HMAC-SHA256 (22 characters): a cookie is 55 characters, an ID's 64 at most


class Signer:
    """Signs the browser ids the pages give (`new_id`) and checks those browsers send back (`key`)."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    @classmethod
    def kept_in(cls, redis) -> Signer:
        """The signer under the key kept in Redis (the first process to ask makes it)."""
        redis.set(SIGNING_KEY, secrets.token_hex(32), nx=True)
        return cls(redis.get(SIGNING_KEY).encode())

    def cookie(self, browser_id: str) -> str:
        """The cookie value of a browser id (letters, digits, '_' and '-'): the id and its signature."""
        digest = hmac.new(self._secret, f"browser:{browser_id}".encode(), hashlib.sha256).digest()[:SIGNATURE_BYTES]
        return f"{browser_id}.{base64.urlsafe_b64encode(digest).decode().rstrip('=')}"

    def new_id(self) -> str:
        """A new browser's cookie value."""
        return self.cookie(secrets.token_urlsafe(ID_BYTES))

    def key(self, cookie: str | None) -> str | None:
        """What is stored of a browser (a hash of its id), or None when it sent no cookie this server signed."""
        if not isinstance(cookie, str) or not ID.fullmatch(cookie):
            return None
        browser_id = cookie.rpartition(".")[0]
        if not browser_id or not hmac.compare_digest(cookie.encode(), self.cookie(browser_id).encode()):
            return None
        return hashlib.sha256(f"exag-browser:{browser_id}".encode()).hexdigest()[:32]


def in_study(browser_key: str, study: str) -> str:
    """The browser as a study's event log names it (the join's `browser`): the same for every participation of the
    study from that browser, unlike in any other study, and no key to anything."""
    return hashlib.sha256(f"exag-browser-in-study:{study}:{browser_key}".encode()).hexdigest()[:16]


def anonymous_id(browser_key: str, study: str, arm: str | None) -> str:
    """A demo study's (`choose_arm`) id for a browser that joins without one: the same for its every tab, so they
    go on with one participant; a hash of the stored key, so the id (in URLs, exports) tells nothing of the cookie."""
    return "anon-" + hashlib.sha256(f"exag-anonymous:{study}:{arm or ''}:{browser_key}".encode()).hexdigest()[:12]
