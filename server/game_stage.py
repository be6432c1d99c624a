"""The game stage of a participant's path: a game starts (its images drawn, the workers told to look at
them), then questions are asked (answered by an inference worker, server/rounds.py), explanations bought,
rounds rated and the secret guessed, each under the participant's lock and committed with its event. The
view of a game is built here (`game_view`), and never includes the secret before the guess, an explanation's
grade, or the ground truth.
"""
from __future__ import annotations

import logging
import secrets
import time

from game import rules
from game.image_sets import ImageSet, choose_image_set
from game.offer import offered, participant_key
from game.seeding import seeded_rng
from game.settings import GameSettings
from game.state import GameState, player_view
from game.study import StudyConfig, explainers_of, for_the_secret, with_explanations

from .participation import GAME, Participation, PlayError
from .rounds import NO_WORKER, AgentFailed, RoundError, RoundJob, RoundTimeout

log = logging.getLogger(__name__)
AGENT_STARTING = ("The agent is still starting on the server: your question waits for it and is answered as soon "
                  "as it is ready (this can take a minute).")


def unanswered_cause(error: RoundError) -> str:
    """Why a round went unanswered, as its `round_unanswered` event records it: "agent_failed" (its agent could
    not be loaded or answer on a worker), "no_worker" (no live worker), "timeout" (a live worker did not answer
    in time, or the answer was lost), else the worker's refusal (server/worker.py): "unparseable" (a question the
    agent cannot read), "refused" (explainers it lacks), "failed" (it could not answer this round)."""
    if isinstance(error, AgentFailed):
        return "agent_failed"
    if isinstance(error, RoundTimeout):
        return "no_worker" if str(error) == NO_WORKER else "timeout"
    return getattr(error, "cause", None) or "failed"


class GameStage(Participation):
    """A participant's games: `_start_game` (from the instructions, a check or the previous game), then the
    events `ask`, `explain`, `rate`, `guess` and `history`."""

    def _start_game(self, participant: dict, events: list[dict] | tuple = (), release: tuple = ()) -> None:
        """Starts the participant's next game; `events` (a check's result) are committed with its start, and
        the locks in `release` (Store.lock) released by the same transaction."""
        study, _ = self._study(participant["study"])
        settings = self._settings(study)
        number = participant["game_number"]
        chosen, names = self._draw_game(study, participant["pid"], number, settings)
        game_id, tokens = names[0], names[1:]
        order = participant.get("order") or "abab"      # a participant from before orders played abab
        shown = with_explanations(study, participant["arm"], number, order)
        offer = offered(study, participant_key(participant.get("slot"), participant["pid"]), number)
        state, event = rules.new_game(game_id, participant["pid"], settings, list(chosen.images), tokens,
                                      chosen.secret, chosen.difficulty, shown, offer)
        record = {"study": study.study_id, "pid": participant["pid"], "arm": participant["arm"], "game_number": number,
                  "session": number // study.games_per_session, "modes": list(explainers_of(study, participant["arm"])),
                  "nle": study.nle, "agent": study.agent, "started": time.time()}
        # the workers look at the new images ahead of the first question; nobody waits for it here
        self.agents.queue.prepare(RoundJob("prepare", list(chosen.images), agent=self._worker(study.agent).name,
                                           reply=False))
        participant.update(stage=GAME, current_game=game_id, last_seen=time.time())
        participant["games"].append(game_id)
        event.update(world_images=[self.pool.world_index(i) for i in chosen.images], arm=participant["arm"],
                     game_number=number, session=record["session"], modes=record["modes"],
                     order=participant.get("order"))
        self.store.commit(participant=participant, game=(state, record),
                          events=[*events, self._event_for(state, record, event)], release=release)

    def agent_starting(self, who: tuple[str, str]) -> str | None:
        """What to tell a player whose question will wait: no worker has warmed up the study's agent yet."""
        if self.agents.all_warm():
            return None
        study, _ = self._study(who[0])
        return AGENT_STARTING if self.agents.starting(study.agent) else None

    def ask(self, who: tuple[str, str], payload: dict) -> dict:
        with self.store.locked(*who) as held:
            participant, (state, record) = self._participant_and_game(who, GAME, "ask", payload["game_id"])
            question = payload["question"]
            rules.ask(state, question, "")          # refuse out-of-turn or bad questions before any work
            text = question.strip()
            controlled_explanations = state.with_explanations and not state.settings.explanations_at_will
            started = time.perf_counter()
            result, shown, graded = self._answer(state, record, text,
                                                 tuple(record["modes"]) if controlled_explanations else (), ())
            state, event = rules.ask(state, question, result["answer"], result.get("notice"))
            event.update(round=len(state.rounds) - 1, **graded, explanations=shown["log"],
                         inference_ms=result["inference_ms"], batch_rounds=result["batch_rounds"],
                         ask_to_answer_ms=(time.perf_counter() - started) * 1000)
            participant["last_seen"] = time.time()
            self.store.commit(participant=participant, game=(state, record), new_round=shown["view"],
                              events=[self._event_for(state, record, event)], release=(held,))
        return self.view(*who, state.game_id)

    def explain(self, who: tuple[str, str], payload: dict) -> dict:
        with self.store.locked(*who) as held:
            participant, (state, record) = self._participant_and_game(who, GAME, "get explanations",
                                                                      payload["game_id"])
            rules.buy_explanations(state)          # refuses before any work
            result, shown, _ = self._answer(state, record, state.rounds[-1].question, state.settings.for_every_image,
                                            for_the_secret(state.settings, record["nle"]), slow=True)
            state, event = rules.buy_explanations(state)
            event.update(explanations=shown["log"], inference_ms=result["inference_ms"])
            participant["last_seen"] = time.time()
            self.store.commit(participant=participant, game=(state, record),
                              set_round=(len(state.rounds) - 1, shown["view"]),
                              events=[self._event_for(state, record, event)], release=(held,))
        return self.view(*who, state.game_id)

    def rate(self, who: tuple[str, str], payload: dict) -> dict:
        with self.store.locked(*who) as held:
            participant, (state, record) = self._participant_and_game(who, GAME, "rate", payload["game_id"])
            state, event = rules.rate(state, payload["rating"])
            event.update(with_explanations=state.with_explanations, question=state.rounds[-1].question)
            participant["last_seen"] = time.time()
            self.store.commit(participant=participant, game=(state, record),
                              events=[self._event_for(state, record, event)], release=(held,))
        return self.view(*who, state.game_id)

    def guess(self, who: tuple[str, str], payload: dict) -> dict:
        with self.store.locked(*who) as held:
            participant, (state, record) = self._participant_and_game(who, GAME, "guess", payload["game_id"])
            if payload["image"] not in state.tokens:
                raise PlayError("guess one of this game's images")
            state, event = rules.guess(state, state.tokens.index(payload["image"]))
            record["finished"] = time.time()
            event.update(secret_image=self.pool.world_index(state.images[state.secret]),
                         guess_image=self.pool.world_index(state.images[state.guess]),
                         seconds=record["finished"] - record["started"])
            arm, block = record["arm"], "with" if state.with_explanations else "without"
            stats = {f"{arm}:games": 1, f"{arm}:wins": int(state.won), f"{arm}:{block}:games": 1,
                     f"{arm}:{block}:wins": int(state.won)}
            participant["last_seen"] = time.time()
            self.store.commit(participant=participant, game=(state, record), stats=stats,
                              events=[self._event_for(state, record, event)], release=(held,))
        return self.view(*who, state.game_id)

    def _answer(self, state: GameState, record: dict, question: str, for_every: tuple[str, ...],
                for_secret: tuple[str, ...], slow: bool = False) -> tuple[dict, dict, dict]:
        """The round, answered by an inference worker (server/rounds.py; images by pool position): its
        result, the explanations to show (player-safe) and to log (with grades, no masks), and the parsed
        question with the answer's grade. Plain questions go to the fast stream, bought explanations to
        the slow one."""
        job = RoundJob("round", list(state.images), question, state.secret, list(state.tokens), list(for_every),
                       list(for_secret), seed=len(state.rounds), agent=self._worker(record.get("agent", "")).name)
        try:
            result = self.agents.queue.submit(job, slow=slow)
        except RoundError as error:
            if isinstance(error, AgentFailed):    # its study closes to newcomers until the researcher opens it again
                because = f"its agent {job.agent or self.agents.server_agent!r} failed on a worker: {error.why}"
                if self.store.close_study(record["study"], because):
                    log.error("study %s closed to new joins: %s", record["study"], because)
            # refused with its reason, and recorded: a question nobody answered is in the log, never lost
            self.store.commit(events=[self._event_for(state, record, {
                "type": "round_unanswered", "request": "explain" if slow else "ask", "question": question,
                "reason": str(error), "cause": unanswered_cause(error),
                "round": len(state.rounds) - (1 if slow else 0)})])
            raise PlayError(str(error)) from error
        return result, result["shown"], result["graded"]

    def game_view(self, game_id: str, found: tuple[GameState, dict, dict | None] | None = None) -> dict:
        """found: the game's `Store.game_with_latest_round`, when the caller read it already."""
        state, record, latest = found or self.store.game_with_latest_round(game_id)
        view = player_view(state)
        view["image_urls"] = {t: f"/image/{game_id}/{t}.png" for t in state.tokens}
        view["modes"] = record["modes"]
        if view["rounds"]:    # only the latest round's explanations: the page keeps or fetches (`history`) earlier ones
            view["rounds"][-1]["explanations"] = latest
        return view

    def history(self, who: tuple[str, str], payload: dict) -> dict:
        """An earlier round's explanations as they were shown (the state carries only the latest round's):
        {"game_id", "round", "explanations"} for any round of one of the participant's own games."""
        game_id, number = payload["game_id"], payload["round"]
        participant, found = self.store.participant_and_game(*who, game_id)
        if participant is None:
            raise PlayError("join the study first")
        found = found if game_id in participant.get("games", []) else None
        if found is None:
            raise PlayError("that is not one of your games")
        if not 0 <= number < len(found[0].rounds):
            raise PlayError(f"this game has no question {number + 1}")
        return {"game_id": game_id, "round": number, "explanations": self.store.round_explanation(game_id, number)}

    def image_path(self, game_id: str, token: str):
        found = self.store.game(game_id)
        if found is None or token not in found[0].tokens:
            return None
        state, _ = found
        return self.pool.image_path(state.images[state.tokens.index(token)])

    def _draw_game(self, study: StudyConfig, pid: str, number: int,
                   settings: GameSettings) -> tuple[ImageSet, list[str]]:
        """Game `number` of a participant: its image set and its names (the game id, then one token per image).
        Real studies (no seed): the set from the server's one generator, the names unguessable. A seeded
        server (tests, simulations) draws both from the generator of (seed, study, participant, game number),
        so a participant gets the same games whatever the order in which participants' games start."""
        if self.config.seed is None:
            with self._rng_lock:
                chosen = choose_image_set(self.pool.embeddings, settings.images, settings.difficulty, self._rng)
            return chosen, [secrets.token_hex(8) for _ in range(settings.images + 1)]
        rng = seeded_rng(self.config.seed, "game", study.study_id, pid, number)
        chosen = choose_image_set(self.pool.embeddings, settings.images, settings.difficulty, rng)
        return chosen, [rng.bytes(8).hex() for _ in range(settings.images + 1)]
