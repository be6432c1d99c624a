"""Ask-to-answer time in the browser, both settings: `exag serve` (the given agent and world) in a
subprocess, Debian's Chromium driven by Playwright asking questions through the real page. Time runs
from pressing Enter to the answer on screen; at-will also from clicking "get explanations" to the
explanations on screen. Saves screenshots of both settings for the README.

    python -m experiments.benchmark.browser_latency --world data/world --questions 15 --json results/browser_latency.json
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
from experiments.benchmark import write_report
from experiments.benchmark.capacity import free_port

QUESTIONS = ["Is there a red cube?", "How many spheres are there?", "What color is the large cylinder?",
             "Is there a metal sphere?", "Are there more cubes than cylinders?", "What shape is the small green thing?",
             "How many rubber things are there?", "Is there a blue object left of the sphere?",
             "What material is the large cube?", "Is there a yellow thing?"]
STUDIES = {
    "bench-controlled": {"study_id": "bench-controlled", "kind": "controlled", "arms": ["both"], "sessions": 4,
                         "games_per_session": 1, "choose_arm": True},
    "bench-at-will": {"study_id": "bench-at-will", "kind": "at-will", "arms": ["both"], "sessions": 1,
                      "games_per_session": 5, "nle": True, "choose_arm": True},
}


def start_server(world: Path, agent: str, work: Path) -> tuple[subprocess.Popen, str]:
    studies = work / "studies"
    studies.mkdir()
    for study in STUDIES.values():
        (studies / f"{study['study_id']}.json").write_text(json.dumps(study))
    port = free_port()
    exag = Path(sys.executable).with_name("exag")
    process = subprocess.Popen([str(exag), "serve", "--port", str(port), "--world", str(world), "--agent", agent,
                                "--data-dir", str(work / "data"), "--studies", str(studies)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"exag serve exited:\n{process.stdout.read()}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:
                if json.loads(response.read())["ok"]:
                    return process, url
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise RuntimeError("the server did not become healthy in 10 minutes")


def percentiles(times: list[float]) -> dict:
    return {"n": len(times), "p50_ms": float(np.percentile(times, 50)), "p95_ms": float(np.percentile(times, 95)),
            "mean_ms": float(np.mean(times))} if times else {"n": 0}


def run(world: Path, agent: str, questions: int, screenshots: Path | None, chromium: str) -> dict:
    from playwright.sync_api import expect, sync_playwright

    results = {"agent": agent, "world": str(world), "cores": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        process, url = start_server(world, agent, Path(tmp))
        results["server_start_s"] = time.perf_counter() - started
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1400, "height": 1100})
                page.set_default_timeout(60_000)

                def ask(question: str) -> float:
                    count = page.locator("#history li.round").count()
                    page.fill("#question", question)
                    t = time.perf_counter()
                    page.press("#question", "Enter")
                    expect(page.locator("#history li.round")).to_have_count(count + 1)
                    return (time.perf_counter() - t) * 1000

                def rate() -> None:
                    page.locator("button.rating").nth(1).click()
                    expect(page.locator("#question")).to_be_enabled()

                def finish_game() -> None:
                    page.locator("button.tile").first.click()
                    page.click("#guess")
                    expect(page.locator("#outcome")).to_be_visible()
                    page.click("#next-game")
                    expect(page.locator("#history li.round")).to_have_count(0)

                def enter(study: str) -> None:
                    page.goto(f"{url}/?study={study}&pid=bench-{study}&arm=both")
                    page.click("#consent-agree")
                    page.click("#begin")
                    expect(page.locator("button.tile").first).to_be_visible()

                # controlled: game 1 without explanations, game 2 with the arm's (attention + RelQAs on all 5);
                # 10 points allow 9 questions a game
                enter("bench-controlled")
                for block in ("without_explanations", "with_explanations"):
                    times = []
                    for i in range(min(questions, 9)):
                        times.append(ask(QUESTIONS[i % len(QUESTIONS)]))
                        if screenshots and block == "with_explanations" and i == 1:
                            page.screenshot(path=str(screenshots / "screenshot_controlled.png"), full_page=True)
                        rate()
                    results[f"controlled_{block}"] = percentiles(times)
                    finish_game()

                # at-will: every question's round bought (3 points), a new game when fewer than 3 are left
                enter("bench-at-will")
                asks, buys = [], []
                for i in range(questions):
                    asks.append(ask(QUESTIONS[i % len(QUESTIONS)]))
                    t = time.perf_counter()
                    page.click("#explain")
                    expect(page.locator('.explanation[data-kind="words"]').first).to_be_visible()
                    buys.append((time.perf_counter() - t) * 1000)
                    if screenshots and i == 1:
                        page.screenshot(path=str(screenshots / "screenshot_at_will.png"), full_page=True)
                    rate()
                    if int(page.locator("#points").inner_text().split()[0]) < 4:
                        finish_game()
                results["at_will_ask"] = percentiles(asks)
                results["at_will_explanations"] = percentiles(buys)
                browser.close()
        finally:
            process.terminate()
            process.wait(timeout=30)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--world", type=Path, default=Path("data/world"))
    parser.add_argument("--agent", default="default")
    parser.add_argument("--questions", type=int, default=15, help="questions per measured block")
    parser.add_argument("--screenshots", type=Path, default=Path("docs"), help="where to save screenshots ('' = none)")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    results = run(args.world, args.agent, args.questions, args.screenshots if str(args.screenshots) else None,
                  args.chromium)
    print(f"server start (agent, explainers, pool) {results['server_start_s']:.1f} s")
    for key in ("controlled_without_explanations", "controlled_with_explanations", "at_will_ask", "at_will_explanations"):
        r = results[key]
        print(f"{key:34s} p50 {r.get('p50_ms', float('nan')):6.0f} ms  p95 {r.get('p95_ms', float('nan')):6.0f} ms  (n={r['n']})")
    write_report(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
