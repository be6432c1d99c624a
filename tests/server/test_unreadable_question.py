"""Issue 55: a question the agent cannot read exactly is said so to the player, in the round. The built-in agent
answers "What color is the biggest object?" (the world's language has "large", not "biggest") from the words
it knows, confidently, and the round is ungraded; its view carries the notice, with the parser's reason in
plain words and how to ask instead (game/unread_question.py), kept in the game state (it is there after a
reload and in the event log). A question the parser reads carries none, and so does every question where the
parser has no say: an imported pool (no scenes), an agent with an open vocabulary (a transformers model)."""
from __future__ import annotations

import exag_cli
import pytest
from PIL import Image
from socket_player import joined, started

from game import unread_question
from game.export import tables
from game.pool import GamePool
from game.settings import RATINGS
from server.explained_rounds import answer_rounds
from server.inference import Predictor, RoundRequest
from server.rounds import RoundJob
from vqa_agent.loading import load_agent

UNREAD = "What color is the biggest object?"      # known words to the agent's vocabulary, not to the parser
READ = "Is there a red cube?"


def test_the_round_of_a_question_the_agent_cannot_read_carries_a_notice(app, connect):
    player = started(connect, "ctl", "unread-1", "none")
    game_id = player.game["game_id"]
    state = player.ok("ask", {"game_id": game_id, "question": UNREAD})
    [round_] = state["game"]["rounds"]
    notice = round_["notice"]
    assert notice and "does not know the word 'biggest'" in notice and "guess" in notice, notice
    assert "size (small or large)" in notice, notice                 # how to ask instead
    assert round_["cost"] == player.game["question_cost"]           # played as any round (the choice documented)
    player.ok("rate", {"game_id": game_id, "rating": RATINGS[2]})
    state = player.ok("ask", {"game_id": game_id, "question": READ})
    assert [r["notice"] for r in state["game"]["rounds"]] == [notice, None]
    # kept in the game: a reload (join again) shows it, and the event log records what the player was told
    again = joined(connect, "ctl", "unread-1")
    assert [r["notice"] for r in again.game["rounds"]] == [notice, None]
    asked = [e for e in app.extensions["exag"].store.events() if e.get("game") == game_id and e["type"] == "question"]
    assert [(e["parsed"], e.get("notice")) for e in asked] == [(False, notice), (True, None)]
    rounds = tables(app.extensions["exag"].store.events())["rounds"]            # and the export's rounds table
    assert rounds[rounds["game_id"] == game_id]["notice"].fillna("").tolist() == [notice, ""]


def test_the_notice_names_the_reason_in_plain_words():
    assert unread_question.notice(READ) is None
    assert "could not read \u201cbigger than the sphere\u201d" in unread_question.notice("Is the cube bigger than the sphere?")
    assert "more than one way" in unread_question.notice("Is the cube left of the sphere behind the cylinder?")
    assert "the words 'biggest' and 'tiniest'" in unread_question.notice("Is the biggest cube the tiniest?")
    for question in ("What color is the biggest object?", "Is the cube bigger than the sphere?", "is it red"):
        text = unread_question.notice(question)
        assert "guess" in text and unread_question.HOW_TO_ASK in text and "Unparseable" not in text, text


@pytest.fixture(scope="module")
def imported_pool(agent_world, tiny_agent_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("unread-pool")
    photos = root / "photos"
    photos.mkdir()
    for k, path in enumerate(sorted((agent_world / "images").glob("*.png"))[:6]):
        with Image.open(path) as image:
            image.convert("RGB").save(photos / f"photo-{k}.jpg")
    assert exag_cli.main(["pool", "import", str(photos), "--out", str(root / "pool"), "--agent", str(tiny_agent_dir)]) == 0
    return GamePool(root / "pool")


def notices(agent, pool) -> list[str | None]:
    """The notices an inference worker's rounds carry for UNREAD and READ, answered by `agent` on `pool`."""
    predictor = Predictor(agent)
    pairs = [(RoundJob("round", [0, 1], question, 0, ["t0", "t1"]),
              RoundRequest([pool.known(0), pool.known(1)], question, 0)) for question in (UNREAD, READ)]
    return [result["notice"] for result in answer_rounds(predictor, pairs, pool)]


def test_where_the_parser_has_no_say_nothing_is_said(agent_world, tiny_agent_dir, imported_pool, tmp_path):
    from vqa_agent.hf_tiny import make_tiny_vilt

    world, agent = GamePool(agent_world), load_agent(tiny_agent_dir, device="cpu")
    told, plain = notices(agent, world)
    assert told and "biggest" in told and plain is None
    assert notices(agent, imported_pool) == [None, None]                # photos: no scenes, no world language
    vilt = load_agent(f"hf:{make_tiny_vilt(tmp_path / 'vilt')}", device="cpu")
    assert not unread_question.applies(vilt, True)
    assert notices(vilt, world) == [None, None]                         # open English: the parser says nothing of it
