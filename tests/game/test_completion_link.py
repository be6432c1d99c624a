"""The return link carries the participant's own completion code (game/completion_link.py, issue 55)."""
from __future__ import annotations

from game.completion_link import return_link


def test_the_participants_code_replaces_or_joins_the_links_cc():
    base = "https://app.prolific.com/submissions/complete"
    assert return_link(f"{base}?cc=STATIC", "K3Q7ABCD") == f"{base}?cc=K3Q7ABCD"
    assert return_link(base, "K3Q7ABCD") == f"{base}?cc=K3Q7ABCD"                # the shipped example has no cc=
    assert return_link(f"{base}?a=1&cc=X&b=", "Z9") == f"{base}?a=1&b=&cc=Z9"   # other parameters kept
    assert return_link(f"{base}?cc=STATIC", None) == f"{base}?cc=STATIC"        # one code for all: as written
    assert return_link("", "K3Q7ABCD") == ""
