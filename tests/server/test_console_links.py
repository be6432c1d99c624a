"""Issue 44: the console's participant link is absolute, and a ready-to-paste Prolific study URL sits beside it,
with Prolific's placeholders for the participant, the study and the session."""
from __future__ import annotations

import html
import json


def test_the_console_gives_the_absolute_link_and_the_prolific_url(app):
    client = app.test_client()
    study = {"study_id": "links-1", "kind": "controlled", "sessions": 4, "games_per_session": 1}
    assert client.post("/admin/studies?token=test-admin", data={"config": json.dumps(study)}).status_code == 302
    page = client.get("/admin?token=test-admin", base_url="https://exag.example.org").get_data(as_text=True)
    assert 'href="https://exag.example.org/?study=links-1"' in page
    url = ("https://exag.example.org/?study=links-1&PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}"
           "&SESSION_ID={{%SESSION_ID%}}")
    assert f'value="{html.escape(url)}"' in page
