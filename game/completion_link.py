"""The link that takes a participant back to the recruiting platform with the code they earned (issue 55).

Prolific reads the completion code from the return link's `cc` parameter. With per-participant codes
(`"completion_codes": "per_participant"`, server/completion.py) the done page showed the participant's own code
but its button returned the study's static `cc=`, so Prolific never saw the codes the export checks against; now
the link carries the participant's code, replacing any `cc` the study's `redirect_url` has (and adding one when it
has none).

    return_link("https://app.prolific.com/submissions/complete?cc=STATIC", "K3Q7...")
    # -> "https://app.prolific.com/submissions/complete?cc=K3Q7..."
"""
from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

CODE_PARAMETER = "cc"          # Prolific's completion-code parameter


def return_link(redirect_url: str, participant_code: str | None) -> str:
    """`redirect_url` with the participant's code as its `cc` (other parameters kept); unchanged without a code or
    a link."""
    if not redirect_url or not participant_code:
        return redirect_url
    parts = urlsplit(redirect_url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != CODE_PARAMETER]
    return urlunsplit(parts._replace(query=urlencode(query + [(CODE_PARAMETER, participant_code)])))
