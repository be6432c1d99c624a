"""The agent's command-line jobs, run as a user would run them (in this process: tests/cli.py)."""
import json

from cli import exag


def test_ask_prints_one_json_line_per_question(tiny_agent_dir, agent_world):
    image = next((agent_world / "images").glob("EXAG_test_*.png"))
    result = exag("ask", "--agent", tiny_agent_dir, "--image", image, "is there a red cube?", "how many balls?")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["question"] for line in lines] == ["is there a red cube?", "how many balls?"]
    assert all(set(line) >= {"answer", "probability", "top_k", "spatial_attention", "proposals",
                             "concept_probabilities"} for line in lines)


def test_bench_vqa_writes_the_documented_keys(tiny_agent_dir, agent_world, tmp_path):
    out = tmp_path / "vqa.json"
    result = exag("bench", "vqa", "--agent", tiny_agent_dir, "--world", agent_world, "--json", out)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    assert set(report) >= {"accuracy", "by_type", "by_answer_type", "n", "pool", "player"}
    assert report["n"] > 0 and 0 <= report["accuracy"] <= 1 and report["pool"]["n"] > 0


def test_bench_latency_reports_percentiles(tiny_agent_dir, tmp_path):
    out = tmp_path / "latency.json"
    result = exag("bench", "latency", "--agent", tiny_agent_dir, "--repeats", "3", "--json", out)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    for key in ("cold_5", "warm_5", "cold_20", "warm_20"):
        assert 0 < report[key]["p50_ms"] <= report[key]["p95_ms"]


def test_missing_agent_is_a_clear_error(tmp_path):
    result = exag("ask", "--agent", tmp_path / "nothing", "--image", tmp_path / "x.png", "hi?")
    assert result.returncode == 2 and "no agent" in result.stderr


# --- the default world: one rule for every command ------------------------------------------------------

def exag_in(cwd, *args):
    """`exag` as a newcomer runs it in a checkout with no data/ yet (data/ is relative to the cwd)."""
    return exag(*args, cwd=cwd)


def test_default_world_rule(tmp_path, monkeypatch):
    import pytest

    from vqa_agent.world.default import DEFAULT_WORLD, GAME_WORLD, default_world

    monkeypatch.chdir(tmp_path)
    assert default_world(tmp_path / "mine") == tmp_path / "mine"                  # --world wins
    with pytest.raises(FileNotFoundError, match=r"exag world build --out data/world"):
        default_world(None, ("train", "val"), "`exag train agent`")               # needs the whole world
    assert not (tmp_path / "data").exists()                                        # and lays nothing out
    world = default_world(None)                                                    # else the game world
    assert world == GAME_WORLD and (world / "manifest.json").exists()
    assert default_world(None, ("val", "pool")) == GAME_WORLD
    (tmp_path / "data" / "world").mkdir()
    (tmp_path / "data" / "world" / "manifest.json").write_text("{}")
    assert default_world(None) == DEFAULT_WORLD                                    # the whole world when built
    assert default_world(None, ("train",)) == DEFAULT_WORLD


def test_readmes_explain_command_works_before_any_world_is_built(tmp_path):
    image = "data/game-world/images/EXAG_pool_010000.png"
    result = exag_in(tmp_path, "explain", "--agent", "default", "--image", image,
                     "--question", "How many cubes are there?")
    assert result.returncode == 0, result.stderr
    assert "A: " in result.stdout and "[relqa," in result.stdout
    assert (tmp_path / image).exists()          # rendered on demand, as the build renders it
    result = exag_in(tmp_path, "bench", "vqa", "--agent", "default")
    assert result.returncode == 2 and "exag world build --out data/world" in result.stderr
