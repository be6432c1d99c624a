"""An at-will study that randomizes the offer of explanations (issue 43, game/offer.py), through the real server:
each game's start logs whether it was offered, in a game not offered the server refuses to sell explanations
(no points spent, nothing computed, no event), in an offered one buying works as ever, and the export's games
table has the offer, which its studies and assignments tables give back."""
from __future__ import annotations

import json

from socket_player import started

from game.export import tables
from game.offer import offered, participant_key
from game.study import StudyConfig

STUDY = {"study_id": "itt", "kind": "at-will", "arms": ["both"], "sessions": 1, "games_per_session": 4,
         "offer": "randomized", "settings": {"images": 6}, "completion_code": "CODE-ITT"}


def test_explanations_are_sold_only_in_the_games_offered(app, connect):
    created = app.test_client().post("/admin/studies?token=test-admin", data={"config": json.dumps(STUDY)})
    assert created.status_code == 302
    store = app.extensions["exag"].store
    assert store.study("itt")[0].seed is not None                      # drawn by the server at creation
    always = started(connect, "aw", "offer-always", arm="both")         # an at-will study as before
    assert always.game["offered"] is None and always.state["instructions"]["offer"] == "always"
    player = started(connect, "itt", "itt-1")
    assert player.state["instructions"]["offer"] == "randomized"     # the page's instructions say so
    seen = []
    for number in range(STUDY["games_per_session"]):
        gid, offer = player.game["game_id"], player.game["offered"]
        seen.append(offer)
        player.ok("ask", {"game_id": gid, "question": "is there a red cube?"})
        points = player.game["points"]
        if offer:
            player.ok("explain", {"game_id": gid})
            assert player.game["rounds"][-1]["explained"] and player.game["rounds"][-1]["explanations"]
            assert player.game["points"] == points - player.game["explanation_cost"]
        else:
            logged = len(list(store.events()))
            player.refused("explain", {"game_id": gid}, match="Explanations are not available in this game")
            assert len(list(store.events())) == logged                 # a refusal logs nothing
            assert player.game["points"] == points and not player.game["rounds"][-1]["explained"]
        player.ok("rate", {"game_id": gid, "rating": "Somewhat helpful"})
        player.ok("guess", {"game_id": gid, "image": player.game["images"][0]})
        player.ok("next_game", {"game_id": gid})
    assert sorted(seen) == [False, False, True, True]                  # a balanced half of the 4 games

    events = [e for e in store.events() if e.get("study") == "itt"]
    starts = {e["game"]: e for e in events if e["type"] == "game_start"}
    assert [starts[g]["offered"] for g in sorted(starts, key=lambda g: starts[g]["game_number"])] == seen
    bought = {e["game"] for e in events if e["type"] == "explanations_bought"}
    assert bought == {g for g, e in starts.items() if e["offered"]}

    exported = tables(store.events())
    games = exported["games"][exported["games"]["study"] == "itt"].sort_values("game_number")
    assert games["offered"].tolist() == seen
    others = exported["games"][exported["games"]["study"] == "aw"]
    assert len(others) and others["offered"].isna().all()              # studies that do not randomize it
    # the offer is given back by the export alone: the study's seed (studies) and the participant's slot
    study = StudyConfig.from_dict(json.loads(exported["studies"].set_index("study").loc["itt", "config"]))
    [joined] = exported["assignments"][exported["assignments"]["study"] == "itt"].to_dict("records")
    key = participant_key(joined["slot"], joined["participant"])
    assert [offered(study, key, int(n)) for n in games["game_number"]] == seen
