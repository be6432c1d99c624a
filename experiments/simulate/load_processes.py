"""A load test spread over several processes: one Python process plays a few hundred participants before its
own threads, not the server, set the pace (at 200 players the bot used a fifth of a core; at 1,000 it would
need a whole one, and its GIL would add its own waits to every reply time). Each process runs `run_load` on
its share of the players (seeded apart, the first also sampling the server), and their reports are merged
into one as `run_load` writes it, percentiles computed from every reply time.

    from experiments.simulate.load_processes import run_load_processes
    report = run_load_processes(url, 1000, 40.0, processes=4, server_pids=[pid])
"""
from __future__ import annotations

import multiprocessing

from .bot import _stats, run_load


def _part(url: str, players: int, duration_s: float, kwargs: dict) -> dict:
    return run_load(url, players, duration_s, **kwargs)


def run_load_processes(url: str, players: int, duration_s: float, processes: int = 1, **kwargs) -> dict:
    """`run_load(url, players, duration_s, **kwargs)` played by `processes` processes, its report merged."""
    processes = max(1, min(processes, players))
    if processes == 1:
        return run_load(url, players, duration_s, **kwargs)
    shares = [players // processes + (k < players % processes) for k in range(processes)]
    seed, server_pids = kwargs.pop("seed", 0), kwargs.pop("server_pids", ())
    jobs = [(url, share, duration_s, {**kwargs, "seed": seed * 1_000 + k, "raw_times": True,
                                      "server_pids": server_pids if k == 0 else (), "progress": False})
            for k, share in enumerate(shares)]
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        return merge_loads(pool.starmap(_part, jobs))


def merge_loads(parts: list[dict]) -> dict:
    """One report of several `run_load(..., raw_times=True)` reports of the same load, played at once."""
    first = parts[0]
    times: dict[str, list[float]] = {}
    for part in parts:
        for event, values in part["raw_times"].items():
            times.setdefault(event, []).extend(values)

    def summed(key: str) -> dict:
        by_event: dict[str, int] = {}
        for part in parts:
            for event, n in part[key]["by_event"].items():
                by_event[event] = by_event.get(event, 0) + n
        return {"total": sum(by_event.values()), "by_event": by_event}

    events = {event: _stats(values) for event, values in sorted(times.items())}
    errors, timeouts = summed("errors"), summed("timeouts")
    for event in {**errors["by_event"], **timeouts["by_event"]}:
        events.setdefault(event, {"n": 0})
    report = {key: first[key] for key in ("url", "duration_s", "mix", "studies", "arms", "profile")}
    report.update(
        players=sum(p["players"] for p in parts), events=events,
        errors={**errors, "examples": [e for p in parts for e in p["errors"]["examples"]][:20]},
        timeouts=timeouts,
        messages={key: sum(p["messages"][key] for p in parts) for key in ("sent", "answered", "per_second")},
        games_finished=sum(p["games_finished"] for p in parts), participants=sum(p["participants"] for p in parts),
        refused_at_door=sum(p.get("refused_at_door", 0) for p in parts),
        elapsed_s=max(p["elapsed_s"] for p in parts), stopped_cleanly=all(p["stopped_cleanly"] for p in parts),
        bot={"cpu_percent": sum(p["bot"]["cpu_percent"] for p in parts), "rss_mb": sum(p["bot"]["rss_mb"] for p in parts),
             "threads_at_peak": sum(p["bot"]["threads_at_peak"] for p in parts), "processes": len(parts)})
    for part in parts:
        if "server" in part:
            report["server"] = part["server"]
    return report
