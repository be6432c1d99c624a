"""`exag serve --web-processes 2` (issue 45): one port, two gunicorn processes, WebSocket only (gunicorn's
balancing is not sticky, which long-polling would need). Players on either process play, a broadcast reaches
them through the Redis message queue, and a long-polling handshake is refused rather than half-served."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import psutil

from experiments.simulate.bot import Bot
from processes import START_TIMEOUT_S, Web

STUDY = {"study_id": "wp", "kind": "controlled", "arms": ["none"], "sessions": 4, "games_per_session": 1,
         "choose_arm": True}


def test_two_web_processes_serve_one_port(agent_world, tiny_agent_dir, tmp_path):
    (tmp_path / "studies").mkdir()
    (tmp_path / "studies" / "wp.json").write_text(json.dumps(STUDY))
    web = Web("serve", ["--world", str(agent_world), "--agent", str(tiny_agent_dir), "--workers", "1",
                        "--web-processes", "2", "--web-threads", "16", "--studies", str(tmp_path / "studies"),
                        "--data-dir", str(tmp_path / "data"),
                        "--explainer-options", json.dumps({"relqa": {"min_bank": 50}})], tmp_path)
    bots = []
    try:
        web.wait_ready(time.monotonic() + START_TIMEOUT_S)
        said = time.monotonic() + 10             # the process that answered may not be the one that said it
        while "ExAG is ready" not in web.log.read_text() and time.monotonic() < said:
            time.sleep(0.1)
        assert web.log.read_text().count("ExAG is ready") == 1 and "2 web process(es)" in web.log.read_text()
        root = psutil.Process(web.popen.pid)       # `exag serve`: gunicorn's master, which forks the web processes
        served = [p for p in [root, *root.children(recursive=True)] if "serve" in p.cmdline()]
        assert len(served) == 3, [p.cmdline() for p in served]
        for n in range(4):                       # spread over both processes by the kernel's accept
            bot = Bot(web.url, "wp", f"wp-{n}", arm="none")
            bots.append(bot)
            bot.send("consent", {"agree": True})
            game = bot.send("begin", {})["game"]
            assert bot.send("ask", {"game_id": game["game_id"], "question": "is there a red cube?"})["game"]["rounds"]
        try:
            urllib.request.urlopen(f"{web.url}/socket.io/?EIO=4&transport=polling", timeout=10)
            raise AssertionError("a long-polling handshake was accepted by one of several web processes")
        except urllib.error.HTTPError as refused:
            assert refused.code == 400
    finally:
        for bot in bots:
            bot.close()
        assert web.stop() == 0, web.tail()
