"""docs/real-study.md's private agent (issue 55: the page said 4 minutes for the training, the console "about 8", and it
took 29): the commands and the measured minutes are one constant each (vqa_agent/checkpoints.py), which the page and
the console's advice (server/study_check.py) both say."""
from __future__ import annotations

from pathlib import Path

from server.study_check import PRIVATE_AGENT
from vqa_agent.checkpoints import PRIVATE_AGENT_COMMANDS, PRIVATE_AGENT_MINUTES

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_page_and_the_console_give_the_same_commands_and_minutes():
    page = (DOCS / "real-study.md").read_text()
    said = " ".join(page.split())
    assert f"about {PRIVATE_AGENT_MINUTES} minutes" in said and "2-core CI machine" in said
    assert f"about {PRIVATE_AGENT_MINUTES} minutes on 2 cores" in PRIVATE_AGENT
    for command in PRIVATE_AGENT_COMMANDS:
        assert f"\n{command}\n" in page                   # in the page's code block, as typed
        assert f"`{command}`" in PRIVATE_AGENT
    assert f"about {PRIVATE_AGENT_MINUTES} minutes" in " ".join((DOCS / "studies.md").read_text().split())
