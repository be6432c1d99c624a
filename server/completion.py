"""Per-participant completion codes (StudyConfig.completion_codes = "per_participant").

A study's single, static completion code is earned by whoever reaches the end once, under any id (a
fabricated Prolific id did, in 12 s), and then works for everyone it is passed to. A per-participant code
is an HMAC of the participation (study and participant id) under the server's secret: nobody without the
secret can make the code of another id, and a code passed on names the participation that earned it. It
is made once, when the participant finishes, stored with them and in the `finish` event, so the export's
participants table carries it (column `completion_code`) and a researcher verifies a submitted code by
finding it on the row of the participant id the platform reports.
"""
from __future__ import annotations

import base64
import hashlib
import hmac

CODE_LENGTH = 12     # base32 characters: 60 bits, beyond guessing within any study's lifetime


def completion_code(secret: str, study_id: str, pid: str) -> str:
    """The code only this participation (study, participant id) earns under the server's secret."""
    mac = hmac.new(secret.encode(), f"{study_id}\0{pid}".encode(), hashlib.sha256).digest()
    return base64.b32encode(mac).decode()[:CODE_LENGTH]


def verify(secret: str, study_id: str, pid: str, code: str) -> bool:
    """Whether `code` is the one this participation earned (constant time)."""
    return hmac.compare_digest(completion_code(secret, study_id, pid), code.strip().upper())
