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


def test_an_agents_own_nle_model_is_part_of_its_fingerprint_so_a_registration_freezes_it(tiny_agent_dir, tmp_path):
    import shutil

    from vqa_agent.checkpoints import CHECKPOINT_FILES, OWN_NLE, checkpoint_fingerprint

    agent = tmp_path / "private"
    agent.mkdir()
    for name in CHECKPOINT_FILES:
        shutil.copy(Path(tiny_agent_dir) / name, agent / name)
    without = checkpoint_fingerprint(agent)
    assert without == checkpoint_fingerprint(tiny_agent_dir)      # only names and bytes count
    (agent / OWN_NLE).mkdir()
    (agent / OWN_NLE / "model.safetensors").write_bytes(b"nle weights")
    with_nle = checkpoint_fingerprint(agent)
    assert with_nle != without
    (agent / OWN_NLE / "model.safetensors").write_bytes(b"other nle weights")
    assert checkpoint_fingerprint(agent) not in (with_nle, without)     # another NLE model: another agent
    moved = tmp_path / "elsewhere"
    shutil.copytree(agent, moved)
    assert checkpoint_fingerprint(moved) == checkpoint_fingerprint(agent)
