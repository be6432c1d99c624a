"""A seed reproduces a simulated study: the same seed gives the same export, every table equal but for the
columns experiments/simulate/simulate.py's RUN_DEPENDENT names, whatever the number of participant threads (and with it
the order in which participants' messages arrive and how the inference worker's rounds come together).
And the parts that make it so: the server's draws are a function of the seed and of whose they are, and a
batch-invariant predict step answers a round with the same bits alone or batched."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from experiments.simulate.simulate import EXPORT_DIR, RUN_DEPENDENT, SUMMARY, SimulationConfig, seeded_study, simulate
from game.assignment import slots
from game.seeding import seeded_rng
from game.study import StudyConfig
from server.inference import Predictor, RoundRequest
from vqa_agent.agent import VQAAgent

# what the summary says about the run rather than the study: its clock, where it wrote, how it was run
SUMMARY_OF_THE_RUN = ("seconds", "play_seconds", "games_per_second", "export", "threads")
STUDIES = {   # the paper's structure in small: every arm, 4 sessions of 1 game; and an at-will study with the NLE
    "controlled": {"study_id": "simrep", "kind": "controlled", "arms": ["none", "attention", "relqa", "both"],
                   "sessions": 4, "games_per_session": 1},
    "at-will": {"study_id": "simrepaw", "kind": "at-will", "arms": ["both"], "sessions": 1, "games_per_session": 3,
                "nle": True}}
MIX = {"careful": 0.4, "hasty": 0.3, "over-trusting": 0.3}
REPO = Path(__file__).resolve().parents[2]


def images_of(world, n: int, offset: int) -> list[np.ndarray]:
    paths = sorted((world / "images").glob("*.png"))[offset:offset + n]
    return [np.asarray(Image.open(p).convert("RGB")) for p in paths]


def test_seeded_generators_depend_on_the_seed_and_who_draws_only():
    def draws(seed, *who):
        return seeded_rng(seed, *who).integers(0, 2**62, 4).tolist()

    first = draws(3, "game", "study", "pid:a", 0)
    draws(3, "game", "study", "pid:b", 0)                     # another participant's game drawn in between
    assert draws(3, "game", "study", "pid:a", 0) == first
    others = [draws(4, "game", "study", "pid:a", 0), draws(3, "game", "study", "pid:a", 1),
              draws(3, "game", "study", "pid:b", 0), draws(3, "game", "other", "pid:a", 0),
              draws(3, "game", "study", "pid:a", "0")]
    assert all(o != first for o in others) and len({tuple(o) for o in others}) == len(others)
    # the same in another process with another string hash (Python salts hash() per process)
    code = ("from game.seeding import seeded_rng; "
            "print(seeded_rng(3, 'game', 'study', 'pid:a', 0).integers(0, 2**62, 4).tolist())")
    for salt in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": salt}, cwd=REPO)
        assert json.loads(out.stdout) == first


def test_batch_invariant_rounds_are_the_same_bits_alone_or_batched(tiny_agent_dir, agent_world, tiny_nle_dir):
    options = {"relqa": {"world": agent_world, "min_bank": 50, "progress": False}, "nle": {"model": tiny_nle_dir}}
    requests = [RoundRequest(images_of(agent_world, 5, 3 * g), q, secret=g % 5,
                             for_every_image=("attention", "relqa"), for_the_secret=("objscene", "nle"), seed=g)
                for g, q in enumerate(["is there a red cube?", "how many large spheres are there?",
                                       "what color is the small cylinder?", "are there more cubes than spheres?"])]
    # one predictor sees every image first in one batch and the rounds batched together (overlapping images);
    # the other sees each round alone, from an empty feature cache
    batched = Predictor(VQAAgent.from_pretrained(tiny_agent_dir), options, batch_invariant=True)
    batched.prepare([image for r in requests for image in r.images])
    together = batched.predict(requests)
    alone = [Predictor(VQAAgent.from_pretrained(tiny_agent_dir), options, batch_invariant=True).predict([r])[0]
             for r in requests]
    for a, b in zip(together, alone):
        assert not isinstance(a, Exception) and not isinstance(b, Exception)
        assert a.batch_rounds == b.batch_rounds == 1
        for x, y in zip(a.outputs, b.outputs):
            assert (x.answer, x.probability, x.top_k, x.concept_probabilities) == \
                (y.answer, y.probability, y.top_k, y.concept_probabilities)
            assert np.array_equal(x.spatial_attention, y.spatial_attention)
            assert np.array_equal(x.question_embedding, y.question_embedding)
            assert [(p.box, p.score, p.attention, p.attributes) for p in x.proposals] == \
                [(p.box, p.score, p.attention, p.attributes) for p in y.proposals]
        assert [[e.payload for e in es] for es in a.for_every_image] == \
            [[e.payload for e in es] for es in b.for_every_image]
        assert [e.payload for e in a.for_the_secret] == [e.payload for e in b.for_the_secret]


def comparable(out) -> dict:
    """An export's tables (as text, so nothing is lost to parsing) and its events without what RUN_DEPENDENT
    names, and the summary without what describes the run."""
    export = out / EXPORT_DIR
    found = {}
    for name, columns in RUN_DEPENDENT.items():
        if name == "events":
            continue
        try:
            frame = pd.read_csv(export / f"{name}.csv", dtype=str, keep_default_na=False)
        except pd.errors.EmptyDataError:        # a table without rows or columns (no rater ratings here)
            frame = pd.DataFrame()
        found[name] = frame.drop(columns=[c for c in columns if c in frame.columns]).to_dict("split")
    top = [c for c in RUN_DEPENDENT["events"] if "." not in c]
    nested = [c.split(".", 1) for c in RUN_DEPENDENT["events"] if "." in c]
    events = []
    for line in (export / "events.jsonl").read_text().splitlines():
        event = {k: v for k, v in json.loads(line).items() if k not in top}
        for key, inner in nested:
            if isinstance(event.get(key), list):
                event[key] = [{k: v for k, v in item.items() if k != inner} for item in event[key]]
        events.append(event)
    found["events"] = events
    summary = json.loads((out / SUMMARY).read_text())
    found["summary"] = {k: v for k, v in summary.items() if k not in SUMMARY_OF_THE_RUN}
    return found


def simulated(tmp_path, name, study, threads, agent_dir, world, nle_dir, participants):
    options = {"relqa": {"min_bank": 50}, "nle": {"model": str(nle_dir)}}
    out = tmp_path / name
    summary = simulate(SimulationConfig(study=study, participants=participants, out=out, players=MIX, world=world,
                                        agent=str(agent_dir), seed=5, threads=threads, explainer_options=options,
                                        progress=False))
    assert summary["errors"] == {} and summary["finished"] == participants, summary["errors"]
    return comparable(out)


@pytest.mark.parametrize("kind", ["controlled", "at-will"])
def test_a_seed_gives_the_same_export_whatever_the_threads(kind, tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path):
    """Two runs of one seed, with 4 and with 3 participants playing at once: their messages arrive in other
    orders and their rounds reach the worker together differently, and every exported table is the same."""
    study = tmp_path / "study.json"
    study.write_text(json.dumps(STUDIES[kind]))
    participants = 5 if kind == "controlled" else 4
    first, second = (simulated(tmp_path, f"run{threads}", study, threads, tiny_agent_dir, agent_world, tiny_nle_dir,
                               participants) for threads in (4, 3))
    assert first["games"]["data"] and first["rounds"]["data"] and first["explanations"]["data"]
    for table in first:
        assert first[table] == second[table], f"{kind}: {table} differs between the runs"
    if kind == "controlled":          # arms and orders dealt from the study's seed, derived from --seed
        study = json.loads(dict(zip(first["studies"]["columns"], first["studies"]["data"][0]))["config"])
        assert study["seed"] == seeded_study(StudyConfig.from_dict(STUDIES[kind]), 5).seed
        columns = first["participants"]["columns"]
        dealt = [(row[columns.index("arm")], row[columns.index("order")]) for row in first["participants"]["data"]]
        assert dealt == [(s.arm, s.order) for s in slots(study["seed"], study["arms"], "counterbalanced", 5)]
