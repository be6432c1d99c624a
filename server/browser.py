"""The browser a participation or a rater is bound to.

The game and rating pages give every browser that has none a random id in an HttpOnly cookie
(`COOKIE`). The first join of a participant binds the participation to it (play.py), and the first call
of the rating API binds the browser to its rater (rating_task.py). What is stored is a hash of the
cookie, never the cookie itself: it is the browser's credential.
"""
from __future__ import annotations

import hashlib
import secrets

from .schemas import ID

COOKIE = "exag_browser"
MAX_AGE_S = 180 * 24 * 3600      # outlives any study: a participant may come back days later


def new_id() -> str:
    return secrets.token_urlsafe(24)


def key(cookie: str | None) -> str | None:
    """What is stored of a browser (a hash of its cookie), or None when it sent no usable cookie."""
    if not isinstance(cookie, str) or not ID.fullmatch(cookie):
        return None
    return hashlib.sha256(f"exag-browser:{cookie}".encode()).hexdigest()[:32]


def anonymous_id(browser_key: str, study: str, arm: str | None) -> str:
    """A demo study's (`choose_arm`) id for a browser that joins without one: the same for its every tab, so they
    go on with one participant; a hash of the stored key, so the id (in URLs, exports) tells nothing of the cookie."""
    return "anon-" + hashlib.sha256(f"exag-anonymous:{study}:{arm or ''}:{browser_key}".encode()).hexdigest()[:12]
