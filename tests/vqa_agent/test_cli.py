"""The agent's command-line jobs, run as a user would run them."""
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def exag(*args):
    return subprocess.run([sys.executable, "-m", "exag_cli", *map(str, args)], capture_output=True, text=True, cwd=REPO)


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
