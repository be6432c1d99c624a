"""Issue 43, no peeking: exporting a pre-registered study's data is a look at its outcomes (the console and the live
report show none before the planned N). Each export logs it, with how many participants had finished, and the
analysis lists every look, those before the planned N as deviations."""
from __future__ import annotations

import dataclasses
import io
import json
import zipfile

import pandas as pd
import pytest
from cli import exag

from experiments.analysis.data import Tables
from experiments.analysis.report import analyze
from game.export import tables
from game.export_signature import server_key

PLAN = {"hypotheses": ["Explanations raise the win rate."], "primary": "overall",
        "stopping_rule": "Stop when 30 participants have finished.", "exclusions": []}
STUDY = {"study_id": "looked", "kind": "controlled", "arms": ["none", "attention"], "sessions": 4,
         "games_per_session": 1, "completion_code": "LOOKED", "preregistration": PLAN}


@pytest.fixture(autouse=True)
def registrable(monkeypatch, tiny_agent_dir, agent_world):
    """A registered study names its agent and pool: those the test server runs."""
    monkeypatch.setitem(STUDY, "agent", str(tiny_agent_dir))
    monkeypatch.setitem(STUDY, "pool", str(agent_world))


def test_an_export_of_a_registered_study_is_a_logged_look_listed_by_the_analysis(app, tmp_path):
    path = tmp_path / "looked.json"
    path.write_text(json.dumps(STUDY))
    assert exag("preregister", str(path), "--out", str(tmp_path / "doc"), "--planned-n", "30").returncode == 0
    client = app.test_client()
    created = client.post("/admin/studies?token=test-admin", data={"config": path.read_text()})
    assert created.status_code == 302
    store = app.extensions["exag"].store
    before = sum(e["type"] == "outcomes_looked" for e in store.events())

    exported = client.get("/admin/export.zip?token=test-admin&format=csv")
    assert exported.status_code == 200
    looks = [e for e in store.events() if e["type"] == "outcomes_looked"][before:]
    assert [(e["study"], e["where"], e["finished"], e["planned_n"]) for e in looks] == [("looked", "admin export", 0, 30)]
    with zipfile.ZipFile(io.BytesIO(exported.data)) as archive:       # the export holds its own look
        studies = pd.read_csv(archive.open("studies.csv"))
    row = studies.set_index("study").loc["looked"]
    assert json.loads(row["looks"])[-1]["where"] == "admin export"
    registered = json.loads(row["preregistration"])["registered"]
    assert json.loads(row["ran_with"]) == [registered]                   # what ran is what was registered ...
    assert isinstance(row["signature"], str) and len(row["signature"]) == 64     # ... signed by the server
    key = server_key(store.redis)
    assert (app.extensions["exag"].config.data_dir / "server.key").read_bytes().strip() == key

    report = analyze(dataclasses.replace(Tables.from_frames(tables(store.events(), key), "the server's log"),
                                         server_key=key))
    assert report["preregistration"]["analysis"] == "preregistered"
    held = report["preregistration"]["studies"]["looked"]
    assert [look["where"] for look in held["looks"]] == ["admin export"]
    assert any("exported 1 time(s) before the planned 30 participants had finished" in d for d in held["deviations"])


def test_analysing_a_registered_study_on_its_server_is_a_logged_look(app, tmp_path):
    """Issue 54: `exag analyze --redis-url` (and --data on a server's data directory, which reads the same way)
    read the outcomes without logging a look. Now it logs one first, and the report lists it."""
    from experiments.analysis.data import load_tables

    path = tmp_path / "looked-live.json"
    path.write_text(json.dumps({**STUDY, "study_id": "looked-live"}))
    assert exag("preregister", str(path), "--out", str(tmp_path / "doc"), "--planned-n", "30").returncode == 0
    client = app.test_client()
    assert client.post("/admin/studies?token=test-admin", data={"config": path.read_text()}).status_code == 302
    store = app.extensions["exag"].store
    where = store.redis.connection_pool.connection_kwargs
    url = f"unix://{where['path']}" if where.get("path") else f"redis://{where['host']}:{where['port']}/{where.get('db', 0)}"
    before = [e for e in store.events() if e["type"] == "outcomes_looked" and e["study"] == "looked-live"]
    assert before == []
    report = analyze(load_tables(url))
    logged = [e for e in store.events() if e["type"] == "outcomes_looked" and e["study"] == "looked-live"]
    assert len(logged) == 1 and logged[0]["where"] == f"exag analyze ({url})" and logged[0]["planned_n"] == 30
    held = report["preregistration"]["studies"]["looked-live"]
    assert [look["where"] for look in held["looks"]] == [f"exag analyze ({url})"]
