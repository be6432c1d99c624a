"""A simulated participant who plays the way the paper's people did: it looks at the images, asks
questions that split the images it still believes in, weighs each answer by how far it trusts the agent,
reads explanations to judge this round's answer, rates how helpful the round was before it learns the
outcome, buys explanations when they seem worth their points, and guesses its most probable image.

It is pure and seeded: it sees only what a player sees (the game view the page gets, and each image as
perceived through game/perception.py) and decides with its own random generator, so one seed gives one
player. experiments/simulate/simulate.py drives it through the real game.

    player = SimulatedParticipant(PRESETS["careful"], seed=1)
    player.start_game(game_view, scenes_by_token)      # scenes of the images shown, seen with its errors
    move, payload = player.next_move(game_view)        # ("ask", {"question": ...}), ("explain", {}),
                                                       # ("rate", {"rating": ...}) or ("guess", {"image": token})
    player.end_game(finished_view)                     # the outcome: it learns how far to trust the agent

The model (docs/research.md §1, the ExAG game; every number is a ParticipantConfig field):
- Belief: a distribution over the N images, uniform at the start.
- An answer a about the secret is evidence: if image i were the secret, the agent would say what the
  participant sees in i (t_i) when it is right, anything of the answer's kind when wrong:
      P(a | i) = c_i [a = t_i] + (1 - c_i) / K,   c_i = trust_i * perception_confidence,
  K the number of answers of the kind (2 for yes/no, 11 for counts).
- Trust: a Beta belief over the agent's reliability (mean trust_prior, weight trust_strength), updated
  after each game from what the participant can check itself (was each answer right about the secret,
  as it sees the secret now).
- Explanations for every image change trust_i for this round only: logit(trust_i) = logit(trust) +
  explanation_weight * (fit_i - EXPECTED_FIT), fit_i in [0, 1] from game/evidence.py (does the attention
  lie on the objects asked about and cover each of them, do the related answers agree with the image, do
  the stated facts hold). So a wrong answer whose explanation shows the agent looking at the wrong thing
  does not rule out the secret as firmly, and a perfectly fitting one counts more. Related
  answers shown for an image that contradict this round's answer ("1 cylinder" beside "2 small
  cylinders") make that image less likely the secret: the agent contradicts itself about the secret far
  less often than about the other images, right or wrong.
  Explanations for the secret alone (at-will ObjScene, RelQAs, NLE) are evidence about which image is the
  secret: related answers count as more answers about the secret, stated facts favour the images where
  they hold.
- Why explanations can raise the win rate at all: a player who guesses once its belief reaches a
  threshold wins about as often as that threshold says when its trust is right. People trust the agent
  more than it deserves (the presets anchor trust high), so without explanations a wrong answer makes
  them confidently wrong; explanations that expose it keep the secret in play, and players with a
  question limit (`max_questions`) get more out of each round.
- Questions: "is there a red cube?", "how many spheres are there?", "what color is the large cylinder?",
  "is the red cube left of the ball?", "are there more cubes than cylinders?" in the world's player
  phrasings. It thinks of `question_candidates` questions, each about an object it sees in an image drawn
  by its belief, of a kind drawn from `question_kinds`, and asks the one with the most expected information
  about the secret (softmax noise `choice_temperature`).
- Rating (before the outcome): how much the round sharpened the belief and, with explanations, how well
  they fit what the participant sees, plus noise.
- Buying (at-will): in a share `buy_rate` of the rounds, while it can still afford another question
  and is not yet sure; never in a game whose study's randomized offer left explanations out (game/offer.py).
- Guess: the most probable image once its probability reaches guess_confidence, when no question is
  left that could still leave points to win, or when the next question is not worth its point: a win
  scores the points left, so it asks only while the expected chance of its best guess after the answer,
  times the points left then, beats the chance now times the points now by more than the `effort` of
  asking (0 in the presets; with it, a player who doubts every answer guesses sooner instead of asking
  more: docs/simulation.md). How much it expects to learn depends on how far it will
  trust the next answer: its trust in the agent, moved, when explanations will come with the answer, as
  far as the last RECENT_FITS explanations it read moved it (over games). Explanations that keep failing
  to fit (a sham) make every coming answer worth less, so it guesses sooner; one explanation that exposed
  a wrong answer among good ones makes it doubt that answer, hardly the next, so a caught error sends it
  on asking rather than guessing.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from vqa_agent.world.programs import IllPosed, ProgramError, execute
from vqa_agent.world.questions import PHRASING_BY_ID, NounPhrase, Question
from vqa_agent.world.scene import ATTRIBUTES, RELATIONS, Scene

from .evidence import agreement, answer_on, facts_hold, matching, qa_coherence, question_of, words_hold
from .perception import PerceptionErrors, perceive
from .settings import RATINGS
from .state import sells_explanations

# The phrasings people type in a guessing game (the world's own, never a held-out one).
PLAYER_PHRASINGS = {
    "exist": ("exist/is_there_a", "exist/do_you_see_a", "exist/are_there_any"),
    "count": ("count/how_many_there", "count/how_many_in_image", "count/how_many_can_you_see"),
    "query": ("query/what_attr_is", "query/what_is_the_attr_of"),
    "relation_check": ("relation_check/is_x_rel_y",),
    "compare_count": ("compare_count/are_there_more", "compare_count/are_there_fewer"),
}
# What people ask about in a guessing game, and how often (ParticipantConfig.question_kinds).
QUESTION_KINDS = {"exist": 0.25, "count": 0.1, "query": 0.25, "relation_check": 0.25, "compare_count": 0.15}
COUNT_ANSWERS = 11                                 # "0" to "10"
EXPECTED_FIT = 0.75         # the fit (0 to 1) at which an explanation leaves trust as it is, see _trusts
RECENT_FITS = 10            # explained rounds it remembers when it foresees how far it will trust the next answer
COHERENCE_WEIGHT = 0.4      # related answers all contradicting the answer scale an image's probability by
                            # exp(-explanation_weight * this): careful 0.14; measured: about the secret
                            # 0-8% of rounds, about the other images 17-29%


def answers_of(question: Question) -> int:
    """K: how many answers an agent can give to a question of this kind."""
    if question.kind == "count":
        return COUNT_ANSWERS
    if question.kind == "query":
        return len(ATTRIBUTES[question.attr])
    return 2


@dataclass(frozen=True)
class ParticipantConfig:
    name: str = "custom"
    perception: PerceptionErrors = field(default_factory=PerceptionErrors)
    perception_confidence: float = 0.9   # how far it relies on its own reading of an image (1: never doubts it)
    trust_prior: float = 0.8             # prior mean of the agent's reliability (share of right answers)
    trust_strength: float = 10.0         # weight of that prior in answers; large: trust hardly changes
    explanation_weight: float = 2.0      # how strongly an explanation moves this round's trust (0: ignored)
    question_candidates: int = 8         # questions it thinks of each round (each about an object it sees in
                                         # an image it still believes in); it asks the most informative
    question_kinds: tuple[tuple[str, float], ...] = tuple(QUESTION_KINDS.items())   # what it asks about, how often
    choice_temperature: float = 0.05     # softmax noise over information gains in bits (0: always the best)
    guess_confidence: float = 0.9        # guesses once an image is this probable
    max_questions: int | None = None     # asks at most this many questions a game (None: the game's limit)
    min_questions: int = 1               # the study's minimum before a guess (the runner sets it from the study)
    buy_rate: float = 0.5                # at-will: the share of rounds it buys explanations in, while it can
                                         # afford them and one more question and is not yet sure
    rating_noise: float = 0.1            # noise of its helpfulness judgement (score units, see rate())
    effort: float = 0.0                  # what asking costs it besides the points, in points (people tire of
                                         # asking): a question must promise this much more than it costs

    def __post_init__(self) -> None:
        for name in ("perception_confidence", "trust_prior", "guess_confidence"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in (0, 1], got {getattr(self, name)}")
        if not 0.0 <= self.buy_rate <= 1.0:
            raise ValueError(f"buy_rate must be in [0, 1], got {self.buy_rate}")
        for name in ("trust_strength", "explanation_weight", "choice_temperature", "rating_noise", "effort"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)}")


PRESETS: dict[str, ParticipantConfig] = {
    # looks closely, thinks about every question, uses explanations fully, guesses only when sure
    "careful": ParticipantConfig("careful", PerceptionErrors(0.03, 0.2, 0.03, 0.02), perception_confidence=0.9,
                                 trust_prior=0.95, trust_strength=50.0, explanation_weight=5.0,
                                 question_candidates=10, choice_temperature=0.02, guess_confidence=0.75,
                                 buy_rate=0.6, rating_noise=0.1),
    # glances, picks one of a few questions, guesses early
    "hasty": ParticipantConfig("hasty", PerceptionErrors(0.1, 0.5, 0.1, 0.05), perception_confidence=0.85,
                               trust_prior=0.95, trust_strength=50.0, explanation_weight=3.0,
                               question_candidates=3, choice_temperature=0.3, guess_confidence=0.6,
                               max_questions=4, buy_rate=0.3, rating_noise=0.3),
    # plays like a careful player but never looks at explanations (nor buys them)
    "ignores-explanations": ParticipantConfig("ignores-explanations", PerceptionErrors(0.02, 0.15, 0.02, 0.01),
                                              perception_confidence=0.95, explanation_weight=0.0,
                                              buy_rate=0.0, guess_confidence=0.9, rating_noise=0.3),
    # takes every answer as true and hardly learns otherwise from mistakes; only an explanation that
    # shows the answer wrong makes it doubt one
    "over-trusting": ParticipantConfig("over-trusting", PerceptionErrors(0.05, 0.3, 0.05, 0.02),
                                       perception_confidence=0.95, trust_prior=0.98, trust_strength=500.0,
                                       explanation_weight=6.0, guess_confidence=0.8, buy_rate=0.3, rating_noise=0.2),
}
DEFAULT_MIX = {"careful": 0.4, "hasty": 0.3, "over-trusting": 0.2, "ignores-explanations": 0.1}


def entropy(p: np.ndarray) -> float:
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


def logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


@dataclass
class RoundMemory:
    """What the participant keeps of the round it is in."""
    question: Question
    belief_before: np.ndarray
    plain: np.ndarray | None = None        # the belief after the answer alone
    explained: np.ndarray | None = None    # the belief after the answer and its explanations
    fit: float | None = None               # how well the explanations fit what it sees (0 to 1)
    bought: bool = False


class SimulatedParticipant:
    def __init__(self, config: ParticipantConfig, seed: int) -> None:
        self.config = config
        self.rng = np.random.default_rng(seed)
        self.right = config.trust_prior * config.trust_strength          # Beta(right, wrong) over reliability
        self.wrong = (1 - config.trust_prior) * config.trust_strength
        self.tokens: list[str] = []
        self.scenes: list[Scene] = []
        self.belief = np.ones(1)
        self.round: RoundMemory | None = None
        self.asked: list[Question] = []
        self.recent_fits: list[float] = []     # how well the last explanations it read fit, over games

    @property
    def trust(self) -> float:
        return self.right / (self.right + self.wrong)

    # --- a game ---------------------------------------------------------------------------------------

    def start_game(self, game: dict, scenes: dict[str, dict]) -> None:
        """Looks at the game's images: `scenes` maps each token of game["images"] to its scene (CLEVR JSON)."""
        self.tokens = list(game["images"])
        missing = [t for t in self.tokens if t not in scenes]
        if missing:
            raise ValueError(f"no scene for image(s) {', '.join(missing)}")
        self.scenes = [perceive(scenes[t], self.config.perception, self.rng) for t in self.tokens]
        self.belief = np.full(len(self.tokens), 1.0 / len(self.tokens))
        self.round, self.asked = None, []

    def next_move(self, game: dict) -> tuple[str, dict]:
        if game["phase"] == "rating":
            return self._after_answer(game)
        if game["phase"] != "asking":
            raise ValueError(f"nothing to do in phase {game['phase']!r}")
        if self._wants_guess(game):
            return "guess", {"image": self._most_probable()}
        trust = self._foreseen_trust(game)
        question = self._choose_question(trust)
        if not self._worth_asking(game, question, trust):
            return "guess", {"image": self._most_probable()}
        self.round = RoundMemory(question, self.belief.copy())
        self.asked.append(question)
        return "ask", {"question": self._phrase(question)}

    def end_game(self, game: dict) -> None:
        """The outcome shows the secret: it checks each answer against the secret as it sees it, and
        trusts the agent more or less from then on."""
        if game.get("secret") not in self.tokens:
            return
        scene = self.scenes[self.tokens.index(game["secret"])]
        for r in game["rounds"]:
            seen = answer_on(r["question"], scene)
            if seen is not None:
                self.right += float(seen == r["answer"])
                self.wrong += float(seen != r["answer"])

    # --- one round ------------------------------------------------------------------------------------

    def _after_answer(self, game: dict) -> tuple[str, dict]:
        last = game["rounds"][-1]
        memory = self.round
        if memory is None:       # a round it did not ask (e.g. resumed): judge it from scratch
            memory = self.round = RoundMemory(question_of(last["question"]), self.belief.copy())
        if memory.plain is None:
            memory.plain = self._update(memory.belief_before, memory.question, last["answer"], self._trusts(None))
        explanations = last.get("explanations")
        if explanations and memory.explained is None:
            memory.explained, memory.fit = self._read_explanations(memory, last["answer"], explanations)
            if memory.fit is not None:
                self.recent_fits = (self.recent_fits + [memory.fit])[-RECENT_FITS:]
        if not explanations and not last["explained"] and self._wants_explanations(game, memory):
            memory.bought = True
            return "explain", {}
        self.belief = memory.explained if memory.explained is not None else memory.plain
        return "rate", {"rating": self._rating(memory)}

    def _trusts(self, fits: list[float | None] | None) -> np.ndarray:
        """This round's trust in the agent for each image: the general trust, moved by how well the
        explanation fits the image compared with how well explanations usually fit (EXPECTED_FIT): a poor
        fit (the agent looked at the wrong objects, its related answers are false there) lowers it, a
        perfect fit raises it. Measured on the medium agent, the answer about the secret was right in 97%
        of rounds whose explanations fit perfectly and in about 50% of those fitting about 0.3; with
        EXPECTED_FIT = 0.75 and the careful weight 5, trust 0.9 becomes 0.97 and 0.5 there."""
        trust = np.full(len(self.tokens), self.trust)
        if fits is not None and self.config.explanation_weight > 0:
            shift = np.array([f - EXPECTED_FIT if f is not None else 0.0 for f in fits])
            trust = sigmoid(logit(self.trust) + self.config.explanation_weight * shift)
        return trust

    def _foreseen_trust(self, game: dict) -> float:
        """How far it expects to trust the next answer: as far as it trusts the agent, unless that answer
        will come with explanations, which it expects to fit as well as the last ones it read did (each
        moving trust as in _trusts). Explanations that keep failing to fit (a sham) make every coming
        answer worth less, so it stops asking sooner; one that exposed a single wrong answer among good
        ones hardly changes what it expects."""
        explained = game.get("with_explanations") and not game.get("explanations_at_will")
        share = 1.0 if explained else self.config.buy_rate if sells_explanations(game) else 0.0
        if not self.recent_fits or self.config.explanation_weight == 0 or share == 0:
            return self.trust
        shifts = np.array(self.recent_fits) - EXPECTED_FIT
        explained_trust = float(sigmoid(logit(self.trust) + self.config.explanation_weight * shifts).mean())
        return share * explained_trust + (1 - share) * self.trust

    def _likelihood(self, question: Question, answer: str, trusts: np.ndarray) -> np.ndarray:
        seen = [_answer(question, scene) for scene in self.scenes]
        c = trusts * self.config.perception_confidence
        chance = 1.0 / answers_of(question)
        return np.array([ci * (s == answer) + (1 - ci) * chance if s is not None else chance
                         for ci, s in zip(c, seen)])

    def _update(self, belief: np.ndarray, question: Question, answer: str, trusts: np.ndarray) -> np.ndarray:
        posterior = belief * self._likelihood(question, answer, trusts)
        total = posterior.sum()
        return posterior / total if total > 0 else belief.copy()

    def _read_explanations(self, memory: RoundMemory, answer: str, explanations: dict) -> tuple[np.ndarray, float | None]:
        """The belief after the answer read with its explanations, and how well they fit what it sees."""
        if self.config.explanation_weight == 0:
            return memory.plain, None
        # what the question is about: both sets of a comparison, the first phrase's objects otherwise
        targets = [p.attrs for p in memory.question.phrases] if memory.question.kind == "compare_count" \
            else [memory.question.phrases[0].attrs]
        every = explanations.get("for_every_image") or {}
        fits: list[float | None] = []
        for token, scene in zip(self.tokens, self.scenes):
            checked = [agreement(e, scene, targets) for e in every.get(token, [])]
            checked = [(score + 1.0) / 2.0 for score in checked if score is not None]
            fits.append(float(np.mean(checked)) if checked else None)
        belief = self._update(memory.belief_before, memory.question, answer, self._trusts(fits))
        belief = self._coherence_evidence(belief, memory.question, answer, every)
        belief = self._secret_evidence(belief, explanations.get("for_the_secret") or [])
        checked = [(p, f) for p, f in zip(belief, fits) if f is not None]
        if not checked:
            return belief, None
        weights, values = np.array(checked).T           # the fit where it believes the secret is
        return belief, float(np.dot(weights, values) / max(weights.sum(), 1e-9))

    def _coherence_evidence(self, belief: np.ndarray, question: Question, answer: str, every: dict) -> np.ndarray:
        """Related answers shown for an image that cannot hold together with this round's answer ("2 small
        cylinders" beside "1 cylinder") say the agent would not have given this answer about that image,
        so it is less likely the secret: the agent contradicts itself about the secret far less often than
        about the other images, right answer or wrong (0-8% against 17-29% of rounds, medium agent)."""
        coherence = []
        for token in self.tokens:
            shares = [qa_coherence(e.get("payload") or {}, question, answer)
                      for e in every.get(token, []) if e.get("kind") == "qa_pairs"]
            shares = [c for c in shares if c is not None]
            coherence.append(min(shares) if shares else 1.0)
        belief = belief * np.exp(self.config.explanation_weight * COHERENCE_WEIGHT * (np.array(coherence) - 1.0))
        return belief / belief.sum()

    def _secret_evidence(self, belief: np.ndarray, explanations: list[dict]) -> np.ndarray:
        """Explanations about the secret alone: related answers are more answers about the secret, stated
        facts and words favour the images where they hold."""
        weight = min(self.config.explanation_weight / 2.0, 1.0)
        for e in explanations:
            payload = e.get("payload") or {}
            if e.get("kind") == "qa_pairs":
                for pair in payload.get("pairs", []):
                    question = question_of(pair["question"])
                    if question is not None:
                        belief = self._update(belief, question, pair["answer"], np.full(len(self.tokens), weight * self.trust))
            elif e.get("kind") in ("words", "text"):
                check = (lambda s: words_hold(payload, s)) if e["kind"] == "words" else \
                    (lambda s: facts_hold(payload.get("text", ""), s))
                shares = [check(scene) for scene in self.scenes]
                if all(s is None for s in shares):
                    continue
                belief = belief * np.exp(weight * np.array([2 * s - 1 if s is not None else 0.0 for s in shares]))
                belief = belief / belief.sum()
        return belief

    def _rating(self, memory: RoundMemory) -> str:
        """Helpfulness before the outcome: how much sharper the belief got (relative to what was left to
        learn) and, with explanations, how far they agreed with what it sees; 0 is the best rating."""
        after = memory.explained if memory.explained is not None else memory.plain
        before = entropy(memory.belief_before)
        sharpened = (before - entropy(after)) / before if before > 0 else 0.0
        score = sharpened if memory.fit is None else 0.5 * sharpened + 0.5 * memory.fit
        score += self.rng.normal(0.0, self.config.rating_noise)
        level = int(np.clip(round((1.0 - score) * (len(RATINGS) - 1) * 1.25 - 0.5), 0, len(RATINGS) - 1))
        return RATINGS[level]

    # --- decisions ------------------------------------------------------------------------------------

    def _wants_guess(self, game: dict) -> bool:
        asked = len(game["rounds"])
        if asked < self.config.min_questions:
            return False
        out_of_questions = game["questions_left"] <= 0 or \
            (self.config.max_questions is not None and asked >= self.config.max_questions)
        # a question that leaves no points cannot be followed by a winning guess
        out_of_points = game["points"] - game["question_cost"] < 1
        return out_of_questions or out_of_points or float(self.belief.max()) >= self.config.guess_confidence

    def _wants_explanations(self, game: dict, memory: RoundMemory) -> bool:
        """At-will: in a share buy_rate of the rounds (the paper's players bought them in most games), when
        it can still pay for another question afterwards and the answer has not already made it sure."""
        # buying follows buy_rate alone: a population assumed unaffected by explanations (weight 0, the null
        # of `exag simulate --null`) still buys them at will, so an at-will null has games that used them
        if not sells_explanations(game) or self.config.buy_rate == 0:
            return False
        if game["points"] - game["explanation_cost"] - game["question_cost"] < 1:
            return False
        if float(memory.plain.max()) >= self.config.guess_confidence:
            return False
        return bool(self.rng.random() < self.config.buy_rate)

    def _most_probable(self) -> str:
        best = np.flatnonzero(self.belief >= self.belief.max() - 1e-12)
        return self.tokens[int(self.rng.choice(best))]

    def _choose_question(self, trust: float) -> Question:
        candidates = self._candidates()
        gains = np.array([self._expected_gain(q, trust) for q in candidates])
        if self.config.choice_temperature > 0:
            weights = np.exp((gains - gains.max()) / self.config.choice_temperature)
            return candidates[int(self.rng.choice(len(candidates), p=weights / weights.sum()))]
        return candidates[int(np.argmax(gains))]

    def _candidates(self) -> list[Question]:
        """The questions that come to its mind: each about an object it sees in an image it still believes
        in (images drawn by belief), of a kind drawn from question_kinds; never one it asked this game."""
        kinds, weights = zip(*self.config.question_kinds)
        weights = np.array(weights, float) / sum(weights)
        asked, found = {_key(q) for q in self.asked}, {}
        for _ in range(self.config.question_candidates * 4):
            if len(found) >= self.config.question_candidates:
                break
            scene = self.scenes[int(self.rng.choice(len(self.scenes), p=self.belief))]
            if not scene.objects:
                continue
            question = _question_about(scene, str(self.rng.choice(kinds, p=weights)), self.rng)
            if question is not None and _key(question) not in asked:
                found.setdefault(_key(question), question)
        return list(found.values()) or [Question("count", [NounPhrase({})])]

    def _outcomes(self, question: Question, trust: float) -> np.ndarray | None:
        """P(answer, secret = i) for each answer it can expect (and "anything else"), by its belief and
        how far it will trust the answer; None when it cannot tell the answer in any image."""
        seen = [_answer(question, scene) for scene in self.scenes]
        c = trust * self.config.perception_confidence
        chance = 1.0 / answers_of(question)
        outcomes = sorted({s for s in seen if s is not None})
        if not outcomes:
            return None
        # P(a | i) for each answer it can expect, plus "anything else" (the rest of the answer's kind)
        table = np.array([[c * (s == a) + (1 - c) * chance if s is not None else chance for s in seen]
                          for a in outcomes])
        rest = np.clip(1.0 - table.sum(axis=0), 0.0, None)
        return np.vstack([table, rest]) * self.belief

    def _expected_gain(self, question: Question, trust: float) -> float:
        """Expected bits about the secret from the agent's answer, trusted this far."""
        joint = self._outcomes(question, trust)
        if joint is None:         # it cannot tell the answer in any image: the answer would tell it nothing
            return 0.0
        marginal = joint.sum(axis=1)
        after = sum(m * entropy(row / m) for row, m in zip(joint, marginal) if m > 0)
        return entropy(self.belief) - after

    def _worth_asking(self, game: dict, question: Question, trust: float) -> bool:
        """Whether asking `question` and then guessing is expected to score more than guessing now: a win
        scores the points left, so each question must raise the chance of the best guess enough to pay
        for itself and for the effort of asking it. With answers it barely trusts (`trust`, see
        _foreseen_trust), no question does, and it guesses sooner."""
        if len(game["rounds"]) < self.config.min_questions:
            return True
        joint = self._outcomes(question, trust)
        if joint is None:
            return False
        now = float(self.belief.max()) * game["points"]
        after = float(joint.max(axis=1).sum()) * (game["points"] - game["question_cost"])
        return after - self.config.effort > now

    def _phrase(self, question: Question) -> str:
        fitting = [i for i in PLAYER_PHRASINGS[question.kind] if PHRASING_BY_ID[i].applies(question)]
        return PHRASING_BY_ID[str(self.rng.choice(fitting))].render(question, self.rng)


def _answer(question: Question, scene: Scene) -> str | None:
    """What the participant sees as the answer in this scene (None: no single answer)."""
    phrase = question.phrases[0]
    if question.kind in ("exist", "count") and not phrase.relations and phrase.same is None:
        n = len(matching(scene, phrase.attrs))       # its own questions: counted directly (fast)
        return str(n) if question.kind == "count" else ("yes" if n else "no")
    try:
        return execute(question.program(), scene)
    except (IllPosed, ProgramError):
        return None


def _some_attributes(obj, rng: np.random.Generator, most: int, without: str | None = None) -> dict[str, str]:
    """1 to `most` of an object's attributes, as a person would name it (the shape more often than not)."""
    names = [a for a in ("color", "size", "material") if a != without]
    chosen = list(rng.choice(names, int(rng.integers(1, most + 1)) - 1, replace=False)) if most > 1 else []
    if without != "shape" and (rng.random() < 0.7 or not chosen):
        chosen.append("shape")
    elif not chosen:
        chosen.append(str(rng.choice(names)))
    return {a: obj.attribute(a) for a in chosen}


def _question_about(scene: Scene, kind: str, rng: np.random.Generator) -> Question | None:
    """A question of `kind` about an object of the scene (or two, for relations and comparisons)."""
    obj = scene.objects[int(rng.integers(len(scene.objects)))]
    if kind in ("exist", "count"):
        return Question(kind, [NounPhrase(_some_attributes(obj, rng, 3 if kind == "exist" else 2))])
    if kind == "query":
        attr = str(rng.choice(["color", "material", "shape", "size"], p=[0.4, 0.2, 0.25, 0.15]))
        return Question("query", [NounPhrase(_some_attributes(obj, rng, 2, without=attr))], attr=attr)
    if kind == "relation_check":
        if len(scene.objects) < 2:
            return None
        i, j = (int(x) for x in rng.choice(len(scene.objects), 2, replace=False))
        relation = str(rng.choice(RELATIONS))
        return Question("relation_check", [NounPhrase(_some_attributes(scene.objects[i], rng, 2)),
                                           NounPhrase(_some_attributes(scene.objects[j], rng, 2))], op=relation)
    if kind == "compare_count":
        first, second = rng.choice(ATTRIBUTES["shape"], 2, replace=False)
        return Question("compare_count", [NounPhrase({"shape": str(first)}), NounPhrase({"shape": str(second)})],
                        op=str(rng.choice(["more", "fewer"])))
    raise ValueError(f"unknown question kind {kind!r}")


def _key(question: Question) -> tuple:
    return (question.kind, question.attr, question.op,
            tuple(tuple(sorted(p.attrs.items())) for p in question.phrases))


def preset(name: str) -> ParticipantConfig:
    if name not in PRESETS:
        raise ValueError(f"unknown player preset {name!r}; choose from {', '.join(PRESETS)}")
    return PRESETS[name]


def with_min_questions(config: ParticipantConfig, min_questions: int) -> ParticipantConfig:
    return replace(config, min_questions=min_questions)
