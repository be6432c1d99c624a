"""A study that shows an explainer its transformers agent (hf:PATH) cannot support is refused when it is
checked (study files at server start, the admin form: server/study_check.py), with one sentence that says
why and what runs instead, not when a participant's round fails; the torch-free tables that check uses are
the explainers' and the adapter's own."""
from __future__ import annotations

import json

import pytest

from explainers.registry import BUILTIN
from explainers.table_entry import explainer_class
from game.study import BUILTIN_REQUIRES, StudyConfig, check_agent_explainers


def study(**fields) -> StudyConfig:
    return StudyConfig.from_dict({"study_id": "s", "kind": "controlled", "arms": ["attention"], "sessions": 4,
                                  "games_per_session": 1, **fields})


@pytest.mark.parametrize("fields, explainer, needs", [
    ({"arms": ["objscene"]}, "objscene", "concepts"),
    ({"arms": ["none", "attention+introspect"]}, "introspect", "proposals"),
    ({"arms": ["both", "nle"]}, "nle", "concepts and proposals"),
    ({"arms": ["attention+nle-other"]}, "nle-other", "concepts and proposals"),        # a sham needs what it imitates
    ({"kind": "at-will", "arms": ["both"], "sessions": 1}, "objscene", "concepts"),    # at-will's default secret panel
    ({"kind": "at-will", "arms": ["both"], "sessions": 1, "nle": True,
      "settings": {"for_the_secret": ["relqa"]}}, "nle", "concepts and proposals"),
])
def test_an_explainer_the_hf_agent_cannot_support_is_one_sentence(fields, explainer, needs):
    with pytest.raises(ValueError) as refused:
        check_agent_explainers(study(**fields), "hf:/models/vilt")
    message = str(refused.value)
    assert f"shows the {explainer} explainer, which needs {needs} of the agent" in message
    assert "hf:/models/vilt" in message and "show only attention or relqa" in message
    assert "\n" not in message and message.count(". ") == 0


@pytest.mark.parametrize("fields", [{"arms": ["none", "attention", "relqa", "both"]},
                                    {"arms": ["attention-shuffled", "attention+relqa"]},
                                    {"kind": "at-will", "arms": ["both"], "sessions": 1,
                                     "settings": {"for_the_secret": ["relqa"]}}])
def test_what_the_hf_agent_supports_passes_and_other_agents_are_left_to_their_workers(fields):
    check_agent_explainers(study(**fields), "hf:/models/vilt")
    check_agent_explainers(study(arms=["objscene", "nle"]), "default")
    check_agent_explainers(study(arms=["objscene"]), "/srv/agents/private")


def test_the_table_is_the_explainers_own():
    # (what an hf: agent offers is one constant, vqa_agent/checkpoints.py HF_CAPABILITIES, that the adapter uses)
    real = {row.name for row in BUILTIN if not row.imitates}
    assert set(BUILTIN_REQUIRES) == real
    for name in real:
        assert BUILTIN_REQUIRES[name] == frozenset(explainer_class(next(r for r in BUILTIN if r.name == name)).requires)


class NoWorkersYet:
    """The web process's queue before any inference worker has published what it loaded."""

    def unavailable(self, agent: str) -> dict[str, str]:
        return {}


def test_the_server_refuses_such_a_study_before_any_worker_has_loaded_the_agent(tmp_path):
    from server.agents import Agents
    from server.study_check import check_study

    vilt = tmp_path / "vilt"
    vilt.mkdir()
    (vilt / "config.json").write_text(json.dumps({"architectures": ["ViltForQuestionAnswering"]}))
    pool = type("Pool", (), {"__len__": lambda self: 200, "world": tmp_path})()
    served = Agents(f"hf:{vilt}", NoWorkersYet())
    with pytest.raises(ValueError, match=f"shows the objscene explainer, which needs concepts.*hf:{vilt}"):
        check_study(study(arms=["objscene"]), pool, served)
    # a study naming the hf agent on a server that plays the default one
    with pytest.raises(ValueError, match="shows the introspect explainer, which needs proposals"):
        check_study(study(arms=["introspect"], agent=f"hf:{vilt}"), pool, Agents("default", NoWorkersYet()))
