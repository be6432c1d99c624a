"""`exag serve`'s look at its study files before gunicorn starts (issue 44): a study whose agent is not on
this server (a typo such as "meduim") stops it with one line naming the file, as a broken JSON file does,
instead of a worker that fails to boot with a traceback."""
from __future__ import annotations

import dataclasses
import json

import pytest

from server.commands import _check_study_files
from server.study_check import check_study_files

STUDY = {"study_id": "typo", "kind": "controlled", "arms": ["none", "both"], "sessions": 4}


@pytest.mark.parametrize("content, expected", [
    (json.dumps({**STUDY, "agent": "meduim"}), r"typo\.json: the agent 'meduim' could not be loaded on this server: "
                                               r"FileNotFoundError: no agent at 'meduim'"),
    ('{"study_id": "typo",', r"typo\.json"),
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
