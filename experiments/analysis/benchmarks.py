"""The offline benchmarks of the study's agent and explainers, next to what the study measured.

`exag bench ... --json DIR/NAME.json` writes one JSON per benchmark; `--bench DIR` hands that directory
to the report. Each file is recognised by its contents (results/*.json are examples):
- vqa (`exag bench vqa`): {"agent", "accuracy", "n", "by_type", ...}
- nle (`exag bench nle`): {"agent", "nle": {"s_t", "s_e", "s_o", "bleu4", "meteor", ...}, "random_baseline", ...}
- explainers (`exag bench explainers`): {"agent", "explainers": {name: {"p50_ms", "p95_ms", "mean_ms"}},
  "rounds": {"controlled"|"at_will": {...}}}
- latency (`exag bench latency`): {"agent", "cold_5"|"warm_5"|"cold_20"|"warm_20": {"p50_ms", ...}}
- card (`exag bench card --out DIR`, its DIR/card.json; `--bench` takes that DIR): {"agent": {"name",
  "accuracy", "by_type", "latency"}, "explainers": {name: {"grading", "e_vil", "f1_at_es", "faithfulness",
  "localisation", "sanity", ...}}}; each explainer's headline scores (experiments/benchmark/card.py
  COLUMNS) go beside its study figures
Anything else is listed under `skipped` with the reason.

The study side comes from the logs: per explainer, the explanations of the secret image (items), the
share graded on-point (Exactly or Mostly) automatically and by the raters, and their games' win rate;
for the agent, the share of gradable rounds answered right and the ask-to-answer latency.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .frames import Frames, paper_order
from .stats import rate_of

MISSING = ("no benchmark results: run exag bench vqa|nle|explainers|latency --agent AGENT --json DIR/NAME.json "
           "or exag bench card --agent AGENT --out DIR for the study's agent, and pass --bench DIR")
LATENCY_KEYS = ("p50_ms", "p95_ms", "mean_ms")
NLE_KEYS = ("s_t", "s_e", "s_o", "bleu4", "meteor", "rouge_l", "cider", "bertscore_f1", "ngram_score", "exact_match")
ON_POINT = 1


def _latency(entry: dict) -> dict:
    return {k: entry.get(k) for k in LATENCY_KEYS if isinstance(entry.get(k), (int, float))}


def _kind(data: dict) -> str | None:
    if isinstance(data.get("agent"), dict) and isinstance(data.get("explainers"), dict):
        return "card"
    if isinstance(data.get("accuracy"), (int, float)):
        return "vqa"
    if isinstance(data.get("nle"), dict) and "s_e" in data["nle"]:
        return "nle"
    if isinstance(data.get("explainers"), dict):
        return "explainers"
    if any(isinstance(v, dict) and "p50_ms" in v for v in data.values()):
        return "latency"
    return None


def read_bench(directory: str | Path) -> dict:
    """The benchmark results in a directory, by agent and by explainer."""
    directory = Path(directory)
    agents: dict[str, dict] = {}
    explainers: dict[str, dict] = {}
    skipped, files = [], []
    if not directory.is_dir():
        return {"dir": str(directory), "missing": f"{directory} is not a directory. " + MISSING}
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            skipped.append({"file": path.name, "reason": f"not readable JSON ({type(error).__name__})"})
            continue
        kind = _kind(data) if isinstance(data, dict) else None
        if kind is None:
            skipped.append({"file": path.name,
                            "reason": "not an exag bench vqa/nle/explainers/latency/card result"})
            continue
        files.append({"file": path.name, "kind": kind})
        if kind == "card":
            _read_card(data, path.name, agents, explainers)
            continue
        agent = str(data.get("agent") or "(unnamed agent)")
        entry = agents.setdefault(agent, {})
        if kind == "vqa":
            entry["vqa"] = {"accuracy": data["accuracy"], "n": data.get("n"), "file": path.name}
        elif kind == "latency":
            entry["latency_ms"] = {k: _latency(v) for k, v in data.items() if isinstance(v, dict) and "p50_ms" in v}
            entry["latency_device"] = {"device": data.get("device"), "threads": data.get("threads")}
        elif kind == "nle":
            metrics = {k: data["nle"].get(k) for k in NLE_KEYS if k in data["nle"]}
            random = {k: (data.get("random_baseline") or {}).get(k) for k in NLE_KEYS
                      if k in (data.get("random_baseline") or {})}
            explainers.setdefault("nle", {}).setdefault(agent, {}).update(
                nle=metrics, nle_random_baseline=random, nle_scale=data.get("scale"), nle_file=path.name)
        else:
            for name, latency in data["explainers"].items():
                if isinstance(latency, dict):
                    explainers.setdefault(name, {}).setdefault(agent, {}).update(
                        latency_ms=_latency(latency), latency_file=path.name)
            entry["rounds_ms"] = {k: _latency(v) for k, v in (data.get("rounds") or {}).items() if isinstance(v, dict)}
    out = {"dir": str(directory), "files": files, "agents": agents, "explainers": explainers, "skipped": skipped}
    if not files:
        out["missing"] = f"no benchmark results in {directory}. " + MISSING
    return out


def _read_card(card: dict, file: str, agents: dict, explainers: dict) -> None:
    """A benchmark card: the agent's accuracy and latency, and each explainer's headline scores."""
    from experiments.benchmark.card import COLUMNS, score_at
    agent = card["agent"]
    name = str(agent.get("name") or "(unnamed agent)")
    agents.setdefault(name, {})["card"] = {"accuracy": agent.get("accuracy"), "n": agent.get("n"),
                                           "by_type": agent.get("by_type"), "latency": agent.get("latency"),
                                           "file": file}
    for explainer, entry in card["explainers"].items():
        scores = {header: score_at(entry, *path) for header, path in COLUMNS}
        explainers.setdefault(explainer, {}).setdefault(name, {}).update(
            card={k: v for k, v in scores.items() if v is not None}, card_file=file)


def study_side(frames: Frames) -> dict:
    """What the study's logs say about its agent and explainers."""
    items, rounds = frames.items, frames.rounds
    per_explainer = {}
    for name in paper_order(items["explainer"].dropna().unique()):
        mine = items[items["explainer"] == name]
        per_explainer[name] = {
            "n_items": int(len(mine)),
            "on_point_automatic": rate_of((mine["auto_rank"] <= ON_POINT).where(mine["auto_rank"].notna()),
                                          key="share", n_key="n"),
            "on_point_raters": rate_of((mine["rater_rank"] <= ON_POINT).where(mine["rater_rank"].notna()),
                                       key="share", n_key="n"),
            "win_rate": rate_of(mine.drop_duplicates("game_id")["won"])}
    latency = rounds["ask_to_answer_ms"].dropna().to_numpy(float) if "ask_to_answer_ms" in rounds else np.array([])
    agent = {"answer_accuracy": rate_of(rounds["answer_correct"], key="share", n_key="n"),
             "ask_to_answer_ms": {"p50_ms": float(np.percentile(latency, 50)),
                                  "p95_ms": float(np.percentile(latency, 95)), "n": int(len(latency))}
             if len(latency) else None}
    return {"agent": agent, "explainers": per_explainer}


def effects(controlled: dict | None) -> dict[str, dict]:
    """Each explainer's measured effect on players: Table 1's row of the arm mode showing it alone (with
    minus without explanations: win rate and score, the clustered p-value)."""
    effect = {}
    for row in (controlled or {}).get("table1") or []:
        improvement = row.get("improvement") or {}
        if "+" in str(row.get("mode")) or "win_rate" not in improvement:
            continue
        effect[row["mode"]] = {"win_rate": improvement.get("win_rate"), "win_rate_ci": improvement.get("win_rate_ci"),
                               "score": improvement.get("score"), "p_value_clustered": row.get("p_value_clustered"),
                               "n_games": (row.get("with_expl") or {}).get("n_games")}
    return effect


def benchmarks(frames: Frames, bench: dict | None, controlled: dict | None = None) -> dict:
    """The `benchmarks` section: `bench` is read_bench's result (None: no --bench DIR given);
    `controlled` the report's controlled section, whose Table 1 gives each explainer's effect."""
    bench = bench if bench is not None else {"missing": MISSING}
    study = study_side(frames)
    for name, effect in effects(controlled).items():
        if name in study["explainers"]:
            study["explainers"][name]["effect"] = effect
    names = paper_order(set(study["explainers"]) | set(bench.get("explainers", {})))
    return {**bench, "study": study,
            "by_explainer": {name: {"study": study["explainers"].get(name),
                                    "bench": bench.get("explainers", {}).get(name)} for name in names}}
