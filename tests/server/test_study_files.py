"""`exag serve`'s look at its study files before gunicorn starts (issue 44): a study whose agent is not on
this server (a typo such as "meduim") stops it with one line naming the file, as a broken JSON file does,
instead of a worker that fails to boot with a traceback; and once its workers started, a study file whose agent
cannot answer a warm-up question stops it the same way, before the web process opens."""
from __future__ import annotations

import dataclasses
import json
import re

import pytest

from hf_models import make_tiny_vilt
from processes import START_TIMEOUT_S, Web
from server.commands import _check_studies_on_workers, _check_study_files
from server.study_check import check_study_files

STUDY = {"study_id": "typo", "kind": "controlled", "arms": ["none", "both"], "sessions": 4}


@pytest.mark.parametrize("content, expected", [
    (json.dumps({**STUDY, "agent": "meduim"}), r"typo\.json: the agent 'meduim' could not be loaded on this server: "
                                               r"FileNotFoundError: no agent at 'meduim'"),
    ('{"study_id": "typo",', r"typo\.json"),
    (json.dumps({**STUDY, "redirect_url": "javascript:alert(1)"}),          # issue 51: what a new study may be
     r"typo\.json: redirect_url: an https:// link \(http:// only to localhost"),
    (json.dumps({**STUDY, "study_id": ".."}), r"typo\.json: study_id '\.\.': 1-64 letters"),
])
def test_a_study_file_that_cannot_run_is_one_line_naming_it(app, tmp_path, content, expected):
    (tmp_path / "typo.json").write_text(content)
    services = app.extensions["exag"]
    with pytest.raises(ValueError, match=expected) as refused:
        check_study_files(tmp_path, services.store, services.config.agent)
    assert "\n" not in str(refused.value)
    with pytest.raises(ValueError, match=expected):         # what `exag serve` runs before gunicorn
        _check_study_files(dataclasses.replace(services.config, studies_dir=tmp_path, redis_url=services.redis.url))


def test_a_study_file_with_a_shipped_agent_passes(app, tmp_path):
    (tmp_path / "fine.json").write_text(json.dumps({**STUDY, "study_id": "fine", "agent": "medium"}))
    services = app.extensions["exag"]
    assert check_study_files(tmp_path, services.store, services.config.agent) == []


def broken_hf_agent(directory):
    """A transformers folder whose weights are missing: every file the agent check looks for is there."""
    hf = make_tiny_vilt(directory / "hf-without-weights")
    for weights in hf.glob("*.safetensors"):
        weights.unlink()
    return f"hf:{hf}"


def test_a_study_file_whose_agent_cannot_answer_stops_the_start_with_one_line(app, tmp_path, tiny_agent_dir):
    """What `exag serve` runs once its workers started, before the web process opens: each study file's agent
    answers a warm-up question on a worker, or the start stops with one line naming the file."""
    services = app.extensions["exag"]
    config = dataclasses.replace(services.config, studies_dir=tmp_path, redis_url=services.redis.url)
    (tmp_path / "own.json").write_text(json.dumps({**STUDY, "study_id": "own", "agent": str(tiny_agent_dir)}))
    _check_studies_on_workers(config)                                      # the server's agent and a working study agent
    agent = broken_hf_agent(tmp_path)
    (tmp_path / "broken.json").write_text(json.dumps({**STUDY, "study_id": "broken", "agent": agent}))
    with pytest.raises(ValueError, match=r"broken\.json: the agent .* could not answer a warm-up question") as refused:
        _check_studies_on_workers(config)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("case", ["agent", "explainer"])
def test_exag_serve_refuses_a_study_file_that_cannot_run_in_one_line(agent_world, tiny_agent_dir, tmp_path, case):
    """The same as real processes: `exag serve` with a worker exits with one line and no traceback, for an agent
    that cannot answer and for a check only a worker can answer (RelQA cannot load on the tiny world's bank:
    an at-will study shows it), which used to fail the web worker's boot with a gunicorn traceback."""
    (tmp_path / "studies").mkdir()
    study = {**STUDY, "study_id": "broken", "agent": broken_hf_agent(tmp_path)} if case == "agent" else \
        {"study_id": "broken", "kind": "at-will", "arms": ["none"]}
    (tmp_path / "studies" / "broken.json").write_text(json.dumps(study))
    web = Web("serve", ["--world", str(agent_world), "--agent", str(tiny_agent_dir), "--workers", "1",
                        "--studies", str(tmp_path / "studies"), "--data-dir", str(tmp_path / "data")], tmp_path)
    try:
        web.popen.wait(START_TIMEOUT_S)
    finally:
        web.stop()
    log = web.log.read_text()
    assert web.popen.returncode == 2, web.tail()
    assert "Traceback" not in log and "ExAG is ready" not in log, web.tail()
    refusal = [line for line in log.splitlines() if line.startswith("exag: error:")]
    why = "the agent .* could not answer a warm-up question" if case == "agent" else "the relqa explainer could not be loaded"
    assert len(refusal) == 1 and re.search(f"broken.json: {why}", refusal[0]), web.tail()
