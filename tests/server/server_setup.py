"""Study files, server configs and a live HTTP server for the server tests."""
from __future__ import annotations

import json
import threading
from pathlib import Path

from werkzeug.serving import make_server

from server.config import ServerConfig

# Small studies with the paper's structure (4 sessions alternating without/with explanations).
STUDIES = {
    "ctl": {"study_id": "ctl", "kind": "controlled", "arms": ["none", "attention", "relqa", "both"], "sessions": 4,
            "games_per_session": 1, "choose_arm": True, "completion_code": "CODE-CTL",
            "redirect_url": "https://example.org/done?cc=CODE-CTL"},
    "ctl5": {"study_id": "ctl5", "kind": "controlled", "arms": ["both"], "sessions": 4, "games_per_session": 5,
             "choose_arm": True, "completion_code": "CODE-CTL5"},
    "aw": {"study_id": "aw", "kind": "at-will", "arms": ["both"], "sessions": 1, "games_per_session": 2,
           "nle": True, "choose_arm": True, "completion_code": "CODE-AW"},
    "realb": {"study_id": "realb", "kind": "controlled", "arms": ["none", "both"], "sessions": 4,
              "games_per_session": 1, "completion_code": "CODE-REALB"},
    "quick": {"study_id": "quick", "kind": "controlled", "arms": ["none"], "sessions": 4, "games_per_session": 1,
              "settings": {"min_questions": 0}, "completion_code": "CODE-QUICK"},   # the paper's "guess any time"
    "real": {"study_id": "real", "kind": "controlled", "arms": ["none", "attention", "relqa", "both"], "sessions": 4,
             "games_per_session": 1, "completion_code": "CODE-REAL"},
}


def write_studies(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for study in STUDIES.values():
        (directory / f"{study['study_id']}.json").write_text(json.dumps(study))
    return directory


# A test scripts the game as fast as a program can: tens of messages a second on one connection, where a
# person's page sends a few. The per-connection throttle sized for people (ServerConfig's defaults) would
# refuse such a test on a quiet machine and let it through on a busy one. So the apps that tests play on
# let scripts through, and the throttle is tested where its outcome does not hang on the machine's speed:
# with a clock the test sets (test_throttle.py) and with a rate slow enough that no test run refills it
# unawares (test_refusals.py).
# Scripted play is no crowd: the throttle lets it through, and admission (server/admission.py) lets in as many
# participants as a test makes (its estimate from one in-process worker thread would admit ~60); the tests of
# admission set their own max_players
SCRIPTED_PLAY = {"max_events_per_second": 1e6, "event_burst": 1_000_000, "max_players": 1_000_000}


def server_config(agent_dir, world, nle_dir, data_dir: Path, studies: Path, **changes) -> ServerConfig:
    """One inference worker in the test's process (a thread), on the same Redis streams as `exag worker`;
    the throttle and admission let scripted play through unless `changes` set their limits."""
    changes = {**SCRIPTED_PLAY, **changes}
    changes.setdefault("inprocess_workers", 1)
    changes.setdefault("message_queue", False)      # Flask-SocketIO's test client works without a queue only
    return ServerConfig(world=world, agent=str(agent_dir), data_dir=data_dir, studies_dir=studies,
                        admin_token="test-admin", seed=3, progress=False,
                        explainer_options={"relqa": {"min_bank": 50}, "nle": {"model": str(nle_dir)}}, **changes)


class LiveServer:
    """The app behind a real HTTP server on a free port (for the browser and the bot)."""

    def __init__(self, app) -> None:
        self.server = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join(timeout=10)
