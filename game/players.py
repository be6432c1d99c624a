"""Simulated players: the decisions of a simple player, as pure functions of what a player sees (the
player view), so bots, load tests and pilot simulations play through the real interface.

`SimplePlayer` asks questions from templates a guessing-game player types ("is there a red cube?",
"how many spheres are there?"), buys explanations in every other at-will round, rates at random and
guesses at random: it exercises the system (costs, ratings, explanations, logging), not strategy. Neither
player tries to buy explanations in a game whose study's randomized offer left them out (game/offer.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .checks import PREFER_NOT
from .settings import RATINGS
from .state import sells_explanations

COLORS = ("gray", "red", "blue", "green", "brown", "purple", "cyan", "yellow")
SHAPES = ("cube", "sphere", "cylinder")
MATERIALS = ("rubber", "metal")
TEMPLATES = ("is there a {color} {shape}?", "how many {shape}s are there?", "is there a {material} {shape}?",
             "what color is the {material} {shape}?", "are there more {shape}s than {other}s?")


@dataclass
class SimplePlayer:
    questions_per_game: int = 3
    buy_every: int = 2          # at-will: buy explanations in every buy_every-th round (0 = never)
    seed: int = 0

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def question(self) -> str:
        template = TEMPLATES[int(self.rng.integers(len(TEMPLATES)))]
        shape, other = self.rng.choice(SHAPES, 2, replace=False)
        return template.format(color=self.rng.choice(COLORS), shape=shape, other=other,
                               material=self.rng.choice(MATERIALS))

    def wants_question(self, game: dict) -> bool:
        return len(game["rounds"]) < self.questions_per_game and game["questions_left"] > 0 \
            and game["points"] > game["question_cost"]

    def wants_explanations(self, game: dict) -> bool:
        return bool(sells_explanations(game) and self.buy_every and len(game["rounds"]) % self.buy_every == 1
                    and game["points"] >= game["explanation_cost"] + game["question_cost"])

    def rating(self) -> str:
        return RATINGS[int(self.rng.integers(len(RATINGS)))]

    def guess(self, game: dict) -> str:
        return game["images"][int(self.rng.integers(len(game["images"])))]


@dataclass
class LoadPlayer(SimplePlayer):
    """The load profile of a capacity test (`exag bot --players N`): a question every
    `question_interval_s` (the bot does the pacing), a rating after each, explanations bought in one of
    every `buy_every` at-will rounds (a third), and a guess after `questions_per_game` questions (4)."""
    questions_per_game: int = 4
    buy_every: int = 3
    question_interval_s: float = 3.0

    def __post_init__(self) -> None:
        super().__post_init__()
        self.at_will_rounds = 0                             # at-will rounds played so far, over every game
        self.buy_offset = int(self.rng.integers(self.buy_every)) if self.buy_every else 0   # players out of step

    def wants_explanations(self, game: dict) -> bool:
        """Asked once after each answer (the game's last round is the one just answered)."""
        if not sells_explanations(game) or not self.buy_every:
            return False
        self.at_will_rounds += 1
        return (self.at_will_rounds - 1) % self.buy_every == self.buy_offset \
            and game["points"] >= game["explanation_cost"] + game["question_cost"]

    def wants_guess(self, game: dict) -> bool:
        """Guess once the game's questions are asked (or no more can be) and the last one is rated."""
        return game["phase"] == "asking" and not self.wants_question(game)


def indifferent_answers(questionnaire: list[dict], demographics: list[dict] = (), text: str = "") -> dict[str, str]:
    """A player's end questionnaire, as the page is sent it (the study's items, game/consent_form.py, and its
    demographics items, game/checks.py), answered with no opinion: each choice its middle option, a required text
    `text`, an optional one empty; each demographics choice "Prefer not to say", a text item empty."""
    answers = {}
    for item in questionnaire:
        if item["type"] == "text":
            answers[item["key"]] = text if item.get("required") else ""
        else:
            answers[item["key"]] = item["options"][len(item["options"]) // 2]
    for item in demographics:
        options = item.get("options") or []
        answers[item["key"]] = (PREFER_NOT if PREFER_NOT in options else options[len(options) // 2]) if options else ""
    return answers
