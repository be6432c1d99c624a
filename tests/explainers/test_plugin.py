"""Third-party explainers: the example package (examples/explainer_plugin/), pip-installed, is found by its
entry point and by import path, explains the tiny agent's answers like a built-in (named as the study
names it, its payload checked against its kind), is accepted in a study's arms and listed by `exag bench
card`; broken plugins are refused with a message that names what is wrong."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from PIL import Image
from plugin_example import install, on_path

from explainers import plugins, registry
from explainers.base import ExplanationRequest
from explainers.kinds import for_player
from explainers.plugins import ContractError
from game.study import StudyConfig, arm_modes, is_sham
from vqa_agent.agent import VQAAgent

IMPORT_PATH = "exag_topk.explainer:TopKExplainer"
BROKEN = '''
from explainers.base import Explainer, Explanation

class NotAnExplainer:
    name, kind = "plain", "text"
    def explain_batch(self, requests):
        return []

class NoVerb(Explainer):
    name, kind = "no-verb", "text"

class Nameless(Explainer):
    kind = "text"
    def payloads(self, requests):
        return [{"text": "hi"} for _ in requests]

class Hologram(Explainer):
    name, kind = "hologram", "hologram"
    def payloads(self, requests):
        return [{} for _ in requests]

class Telepathic(Explainer):
    name, kind = "telepathic", "text"
    requires = frozenset({"answer", "telepathy"})
    def payloads(self, requests):
        return [{"text": "hi"} for _ in requests]

class OwnSham(Explainer):
    name, kind, imitates = "own-sham", "text", "nle"
    def payloads(self, requests):
        return [{"text": "hi"} for _ in requests]

class WordsAsText(Explainer):
    name, kind = "words-as-text", "text"
    def payloads(self, requests):
        return [{"words": ["red"]} for _ in requests]

class BadProbability(Explainer):
    name, kind = "bad-probability", "qa_pairs"
    def payloads(self, requests):
        return [{"pairs": [{"question": "is it red?", "answer": "yes", "probability": 7}]} for _ in requests]

class NotJson(Explainer):
    name, kind = "not-json", "text"
    def explain_batch(self, requests):
        return [Explanation(self.name, self.kind, {"text": "hi", "extra": {1, 2}}) for _ in requests]

class TooFew(Explainer):
    name, kind = "too-few", "text"
    def explain_batch(self, requests):
        return []

class OtherKind(Explainer):
    name, kind = "other-kind", "text"
    def explain_batch(self, requests):
        return [Explanation(self.name, "words", {"words": []}) for _ in requests]

class Fine(Explainer):
    name, kind = "fine", "text"
    requires = frozenset({"answer", "text_embedding"})
    def payloads(self, requests):
        return [{"text": f"I answered {r.output.answer}."} for r in requests]
'''


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The example, installed as a user would install it (pip), and a module of broken explainers the
    operator allowed by import path (EXAG_EXPLAINERS)."""
    root = tmp_path_factory.mktemp("plugins")
    target = install(root / "site")
    (root / "code").mkdir()
    (root / "code" / "broken_plugins.py").write_text(textwrap.dedent(BROKEN))
    (root / "code" / "exits_plugin.py").write_text("raise SystemExit('bye')\n")
    allowed = " ".join(["no_such_module:Thing", "exits_plugin:Thing", "interrupted:Thing",
                        *(f"broken_plugins:{c}" for c in re.findall(r"^class (\w+)", BROKEN, re.M)),
                        "broken_plugins:Missing"])
    with on_path(target, root / "code"), pytest.MonkeyPatch.context() as patch:
        patch.setenv(plugins.ALLOW_ENV, allowed)
        yield target


@pytest.fixture(scope="module")
def agent(tiny_agent_dir):
    return VQAAgent.from_pretrained(tiny_agent_dir)


@pytest.fixture(scope="module")
def requests(agent, agent_world):
    images = [np.asarray(Image.open(p).convert("RGB")) for p in sorted((agent_world / "images").glob("*.png"))[:2]]
    questions = ["What color is the large sphere?", "How many cubes are there?"]
    return [ExplanationRequest(i, q, o) for i, q, o in zip(images, questions, agent.answer(images, questions))]


def test_the_example_is_found_by_entry_point_and_by_import_path(installed):
    assert "topk" in registry.installed() and registry.is_name("topk") and registry.is_name(IMPORT_PATH)
    by_name, by_path = registry.entry("topk"), registry.entry(IMPORT_PATH)
    assert by_name.target == by_path.target == IMPORT_PATH
    for row in (by_name, by_path):
        assert (row.kind, row.label, row.plugin, row.imitates) == ("text", "Other answers it considered", True, "")
    assert registry.page_table(["attention", "nle-other", "topk"]) == {
        "attention": registry.page_table(["attention"])["attention"],
        "nle-other": {**registry.page_table(["nle"])["nle"], "kind": "text"},   # a sham shows as what it imitates
        "topk": {"kind": "text", "label": "Other answers it considered", "description": by_name.description}}


def test_the_web_process_reads_it_without_torch(installed):
    script = f"""
import sys
sys.path.insert(0, {str(installed)!r})
from explainers import plugins, registry
from server.player_safe import for_player
from game.evidence import agreement
assert registry.entry("topk").kind == "text" and registry.page_table(["topk"])["topk"]["label"]
assert "torch" not in sys.modules, sorted(m for m in sys.modules if m.startswith("torch"))[:3]
print("torch-free")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "torch-free" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("name", ["topk", IMPORT_PATH])
def test_it_explains_like_a_built_in_named_as_it_was_named(installed, agent, requests, name):
    explainer = registry.load_explainer(name, agent, k=2)
    assert (explainer.name, explainer.kind) == (name, "text")
    explanations = explainer.explain_batch(requests)
    assert [(e.explainer, e.kind) for e in explanations] == [(name, "text")] * len(requests)
    for e, r in zip(explanations, requests):
        assert e.payload["text"].startswith(f"I answered {r.output.answer} (")
        assert for_player(e) == {"explainer": name, "kind": "text", "payload": {"text": e.payload["text"]}}
    loaded, unavailable = registry.load_explainers(agent, ["attention", name], {name: {"k": 1}})
    assert set(loaded) == {"attention", name} and not unavailable


def test_a_study_names_it_in_its_arms(installed):
    study = StudyConfig("plug", arms=("none", "topk", f"attention+{IMPORT_PATH}"))
    assert arm_modes(study.arms[2]) == ("attention", IMPORT_PATH) and not is_sham("topk")
    with pytest.raises(ValueError, match="unknown arm 'topkk'"):
        StudyConfig("plug", arms=("topkk",))


@pytest.mark.parametrize("name, message", [
    ("telepathy", "unknown explainer 'telepathy': installed explainers are attention, .*, topk, .*; install a "
                  "plugin as an exag.explainers entry point"),
    ("this:X", "unknown explainer 'this:X': installed explainers are attention, .*, topk,"),
    ("exits_plugin:Thing", "importing import path 'exits_plugin:Thing' failed: SystemExit: bye"),
    ("no_such_module:Thing", "import path 'no_such_module:Thing' could not be imported: ModuleNotFoundError"),
    ("broken_plugins:Missing", "the module has no 'Missing'"),
    ("broken_plugins:NotAnExplainer", "is not a subclass of explainers.base.Explainer"),
    ("broken_plugins:NoVerb", "implements neither payloads\\(requests\\) nor explain_batch\\(requests\\)"),
    ("broken_plugins:Nameless", "has no name: a class attribute"),
    ("broken_plugins:Hologram", "has kind 'hologram'; a kind is one of attention, words, qa_pairs, text"),
    ("broken_plugins:Telepathic", "requires unknown capabilities telepathy"),
    ("broken_plugins:OwnSham", "shams are built in"),
])
def test_a_broken_plugin_is_refused_with_what_is_wrong(installed, agent, name, message):
    with pytest.raises(ValueError, match=message):
        registry.entry(name)
    with pytest.raises(ValueError, match=message):
        registry.load_explainer(name, agent)
    loaded, unavailable = registry.load_explainers(agent, [name])      # a server only marks it unavailable
    assert not loaded and unavailable[name]


@pytest.mark.parametrize("arm", ["this:X", "unittest.__main__:X", "attention+this:Y"])
def test_a_study_never_imports_a_module_nobody_installed_or_allowed(installed, arm, capfd):
    modules = set(sys.modules)
    with pytest.raises(ValueError) as refused:
        StudyConfig("plug", arms=(arm,))
    assert str(refused.value).startswith(f"unknown arm {arm!r}: unknown explainer ")
    assert "install a plugin as an exag.explainers entry point" in str(refused.value)
    assert "\n" not in str(refused.value) and capfd.readouterr().out == ""      # `this` prints the Zen when imported
    assert {"this", "unittest.__main__"}.isdisjoint(set(sys.modules) - modules)


def test_an_allowed_plugin_that_exits_or_is_interrupted_as_it_is_imported_refuses_only_itself(installed, tmp_path):
    (tmp_path / "interrupted.py").write_text("raise KeyboardInterrupt\n")
    with on_path(tmp_path):
        for name in ("exits_plugin:Thing", "interrupted:Thing"):
            with pytest.raises(ContractError, match=f"explainer '{name}': importing import path .* failed: "
                                                    "(SystemExit: bye|KeyboardInterrupt)"):
                registry.entry(name)


@pytest.mark.parametrize("name, message", [
    ("broken_plugins:WordsAsText", "breaks kind 'text': payload has no 'text'"),
    ("broken_plugins:BadProbability", r"payload\['pairs'\]\[0\]\['probability'\] must be a number in \[0, 1\], got 7"),
    ("broken_plugins:NotJson", "payload is not JSON-safe"),
    ("broken_plugins:TooFew", "explain_batch returned 0 for 2 requests"),
    ("broken_plugins:OtherKind", "has kind 'words'; the class declares 'text'"),
])
def test_an_explanation_that_breaks_the_contract_is_refused(installed, agent, requests, name, message):
    explainer = registry.load_explainer(name, agent)                    # the class itself is fine
    with pytest.raises(ContractError, match=message):
        explainer.explain_batch(requests)


def test_an_agent_without_a_capability_is_told_which(installed, tiny_agent_dir, requests):
    agent = VQAAgent.from_pretrained(tiny_agent_dir)
    assert registry.load_explainer("broken_plugins:Fine", agent).explain_batch(requests[:1])
    agent.capabilities = frozenset({"answer", "attention", "proposals"})   # an agent that says what it offers
    with pytest.raises(ValueError, match="needs text_embedding of the agent"):
        registry.load_explainer("broken_plugins:Fine", agent)
    with pytest.raises(ValueError, match="needs text_embedding, fingerprint of the agent"):
        registry.load_explainer("relqa", agent)
    assert registry.load_explainer("attention", agent).explain_batch(requests[:1])


def test_bench_card_lists_the_installed_plugin(installed, agent_world, tiny_agent_dir, tiny_nle_dir):
    from experiments.benchmark.card import bench_card, markdown
    card = bench_card(str(tiny_agent_dir), agent_world, max_items=3, explainers=["introspect", "topk"],
                      nle_model=tiny_nle_dir, progress=False, log=lambda message: None)
    assert list(card["explainers"]) == ["introspect", "topk"] and not card["unavailable"]
    assert card["explainers"]["topk"]["kind"] == "text" and "not_applicable" not in card["explainers"]["topk"]["e_vil"]
    assert "| topk |" in markdown(card)
