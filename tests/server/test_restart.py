"""Stopping the server mid-game, even with Redis killed outright, loses nothing: a restarted server
on the same data directory resumes the player's exact game."""
from __future__ import annotations

import subprocess
import sys

from server_setup import server_config, write_studies
from socket_player import Player, socket_client, started

from game.export import tables
from game.settings import RATINGS
from server.app import create_app


def test_the_player_resumes_after_a_crash_and_after_a_restart(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path):
    config = server_config(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path / "data", write_studies(tmp_path / "studies"))
    app = create_app(config)
    player = started(lambda: socket_client(app), "aw", "restart")
    gid = player.game["game_id"]
    player.ok("ask", {"game_id": gid, "question": "is there a large cube?"})
    player.ok("explain", {"game_id": gid})
    before_crash = player.state

    # a crash: Redis is killed without a chance to save anything, then the server goes away
    services = app.extensions["exag"]
    redis_process = services.redis.process
    redis_process.kill()
    redis_process.wait()
    services.close()

    app = create_app(config)
    player = Player(socket_client(app))
    player.ok("join", {"study": "aw", "pid": "restart"})
    assert player.state == before_crash
    player.ok("rate", {"game_id": gid, "rating": RATINGS[1]})
    before_restart = player.state
    app.extensions["exag"].close()         # a clean stop

    app = create_app(config)
    player = Player(socket_client(app))
    player.ok("join", {"study": "aw", "pid": "restart"})
    assert player.state == before_restart
    player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})
    events = list(app.extensions["exag"].store.events())
    app.extensions["exag"].close()

    kinds = [e["type"] for e in events if e["game"] == gid and e["type"] != "rejoin"]
    assert kinds == ["game_start", "question", "explanations_bought", "rating", "guess"]
    games = tables(events)["games"]
    assert games.set_index("game_id").loc[gid, "questions"] == 1


def test_export_command_writes_tidy_tables_from_a_stopped_server(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path):
    import pandas as pd

    config = server_config(tiny_agent_dir, agent_world, tiny_nle_dir, tmp_path / "data", write_studies(tmp_path / "studies"))
    app = create_app(config)
    connect = lambda: socket_client(app)   # noqa: E731
    for pid in ("x1", "x2"):
        player = started(connect, "ctl", pid, "relqa")
        for game in range(2):
            gid = player.game["game_id"]
            for question in ("is there a red thing?", "how many cubes are there?"):
                player.ok("ask", {"game_id": gid, "question": question})
                player.ok("rate", {"game_id": gid, "rating": RATINGS[game]})
            player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})
            player.ok("next_game", {"game_id": gid})
    app.extensions["exag"].close()

    for fmt, read in (("csv", pd.read_csv), ("jsonl", lambda p: pd.read_json(p, lines=True)),
                      ("parquet", pd.read_parquet)):
        out = tmp_path / f"export-{fmt}"
        result = subprocess.run([sys.executable, "-m", "exag_cli", "export", "--format", fmt, "--out", str(out), "--data-dir", str(tmp_path / "data")],
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        games, rounds, ratings = (read(out / f"{name}.{fmt}") for name in ("games", "rounds", "ratings"))
        assert len(games) == 6 and set(games["arm"]) == {"relqa"}      # each has started a third game
        finished = games[games["finished"].notna()].sort_values(["participant", "game_number"])
        assert len(finished) == 4 and list(finished["with_explanations"]) == [False, True] * 2
        assert len(rounds) == 8 and rounds["truth"].notna().all() and set(rounds["rating"]) == set(RATINGS[:2])
        assert len(ratings) == 8 and set(ratings["rating_score"]) == {5, 4}
        explanations = read(out / f"explanations.{fmt}")
        assert len(explanations) == 2 * 2 * 5 and set(explanations["explainer"]) == {"relqa"}
        assert (out / "events.jsonl").exists()
    missing = subprocess.run([sys.executable, "-m", "exag_cli", "export", "--out", str(tmp_path / "x"), "--data-dir", str(tmp_path / "nothing")],
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "no game data" in missing.stderr
