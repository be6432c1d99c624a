"""Study design as plain data: arms, orders and the block schedule of controlled studies (who gets which
arm and order: game/assignment.py; `study_slot` here is a study's slot of it, which server/play.py deals).

Controlled studies (docs/research.md §1): each participant gets one arm for good; sessions of 5 games
alternate without/with explanations, at least 4 sessions. The study's `order` says which comes first:
"abab" (without first, the paper's), "baba" (with first) or "counterbalanced" (the default: half of each
arm each way, drawn with the arm by the study's seeded blocked randomization, game/assignment.py). The
"none" arm (the paper's WithoutExpl control group) never sees explanations. At-will studies have one arm:
the player buys explanations when they like (they have no order).

A study is a JSON file:
    {"study_id": "pilot-1", "kind": "controlled", "arms": ["none", "attention", "relqa", "both"],
     "sessions": 4, "games_per_session": 5, "order": "counterbalanced", "completion_code": "C0DE",
     "redirect_url": "https://..."}
(no "seed": the server draws one when it creates the study, and stores and exports the study with it)
A sanity check adds sham arms ("attention-shuffled", "nle-other", or combined: "attention+nle-other").
An arm's modes are explainer names (explainers/registry.py): the built-ins, or a third-party explainer's
entry point name or an import path an entry point declares or the operator allowed in EXAG_EXPLAINERS
("mypackage.module:MyExplainer"; docs/writing-an-explainer.md).
Optional, each its own module: "consent" and "questionnaire" (the consent form with its information sheet and
decline path, and the end questionnaire: game/consent_form.py), "checks" (a comprehension check after the instructions, attention checks
between games, a colour-vision screen, demographics in the questionnaire: game/checks.py), "preregistration"
(the rules fixed before data and their hash: game/preregistration.py, `exag preregister`) and
"completion_codes": "per_participant" (a code only that participation could have earned: server/completion.py).
An at-will study may randomize the offer of explanations ("offer": "randomized": available in a seeded random
half of each participant's games, game/offer.py), so that the offer is a randomized contrast.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from urllib.parse import urlsplit

from explainers import registry
from vqa_agent.checkpoints import HF_CAPABILITIES, checkpoint_files, is_hf_agent

from . import preregistration
from .assignment import ORDERS, PLAYED, Slot, slot
from .checks import Checks, parse_checks
from .consent_form import AGREEMENT, DEFAULT_QUESTIONNAIRE, ConsentForm, Item, parse_consent, parse_questionnaire
from .offer import OFFERS
from .settings import GameSettings, settings_named

# Sham modes, for sanity checks (explainers/sham.py): each image shows a real explainer's output for another
# image of the same round, drawn and labelled like the real one. A study with a sham arm must find it
# harmful, or the instrument is blind; the analysis keeps sham arms out of Table 1's "overall" rows.
SHAM_MODES = registry.SHAM_NAMES
MODES = registry.BUILTIN_NAMES   # the built-in modes an arm can combine (and any third-party explainer)
NAMED_ARMS = {"none": (), "both": ("attention", "relqa")}          # the paper's names; others are "a+b"
KINDS = ("controlled", "at-will")
COMPLETION_CODES = ("static", "per_participant")
# What a study's "settings" may override: GameSettings' fields but its name (the study's kind names it).
SETTING_NAMES = tuple(f.name for f in fields(GameSettings) if f.name != "name")
# A new study's id (`check_new_study`): it names the study in links (?study=ID), console URLs
# (/admin/studies/ID/close) and file names, so it starts with a letter or digit ("." and ".." are path steps,
# "-x" reads as a command-line option) and is not the console's own name.
NEW_STUDY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
RESERVED_STUDY_IDS = ("admin",)
# Where a study may send its participants back (redirect_url): https only, since the link carries their
# completion code; plain http only to this machine (a lab's or a test's own page). Never javascript: or data:,
# which the page would run or show as its own.
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
# Participations that are no participant's: `exag bot`'s players (pid:bot-...), `exag simulate` run against a
# server (pid:sim-...) and the researcher's own tries from their browser (a link with ?pid=test-...). They play
# like anyone and the export keeps them, but they never count toward a pre-registered study's planned N: the
# no-peeking gate (outcomes hidden until N have finished: the console, the live report, an export's look)
# counts real participants only. A bot piloting a study with its platform's parameters (`exag bot --pilot`: a
# Prolific study's link needs PROLIFIC_PID, STUDY_ID and SESSION_ID) joins as prolific:bot-... (mturk:bot-...):
# real platform ids are the platform's own (Prolific: 24 hex digits), never "bot-".
TEST_PARTICIPATIONS = ("pid:bot-", "pid:sim-", "pid:test-", "prolific:bot-", "mturk:bot-")
# Of them, pilots (`exag bot --pilot` and the researcher's own ?pid=test- tries, run on the real study before and
# while it runs) are no data at all: they take no slot of the study's randomization (their arms come from a
# sequence of their own: server/play.py), so no real participant is dealt a refill or counted a late holder for
# them, and the analysis leaves them out (experiments/analysis/data.py). Simulated participants (pid:sim-) are the
# data of a simulated study: they take slots and are analysed.
PILOT_PARTICIPATIONS = ("pid:bot-", "pid:test-", "prolific:bot-", "mturk:bot-")
PILOT_SLOTS = "exag:slots:{}:pilots"      # Redis, per study: how many pilots were dealt an arm


def arm_modes(arm: str) -> tuple[str, ...]:
    """The explainers an arm shows: "none", "both", a mode, or modes joined by "+" ("attention+nle")."""
    if arm in NAMED_ARMS:
        return NAMED_ARMS[arm]
    modes = tuple(arm.split("+"))
    if not arm or not all(modes):
        raise ValueError(f"unknown arm {arm[:200]!r}: use none, both, or explainers from {', '.join(MODES)} (or an "
                         "installed plugin's) joined by '+'")
    unknown = [m for m in modes if not registry.is_name(m)]
    if unknown:             # nothing is imported: a study only chooses among the explainers the server lists
        raise ValueError(f"unknown arm {arm[:200]!r}: {registry.unknown(unknown[0])}")
    return modes


def missing_checkpoint(agent: str) -> str:
    """Why the agent `agent` (a shipped agent's name, a checkpoint directory or "hf:PATH") has no checkpoint
    on this machine, "" when it has one: what `exag serve` checks before it starts, and a server before it
    accepts a study (server/agents.py)."""
    try:
        missing = [file.name for file in checkpoint_files(agent) if not file.exists()]
    except OSError as error:
        return f"{type(error).__name__}: {error}"
    return f"FileNotFoundError: the checkpoint has no {missing[0]}" if missing else ""


def is_sham(arm: str) -> bool:
    """Whether an arm (or a mode) shows a sham explanation: such an arm is a sanity check, not a treatment."""
    return any(registry.imitates(mode) for mode in arm_modes(arm))


@dataclass(frozen=True)
class StudyConfig:
    study_id: str
    kind: str = "controlled"
    arms: tuple[str, ...] = ("none", "attention", "relqa", "both")
    sessions: int = 4
    games_per_session: int = 5
    completion_code: str = ""
    redirect_url: str = ""
    nle: bool = False            # at-will: offer the NLE with the other explanations
    choose_arm: bool = False     # demos, pilots and bots may name their arm in the link; never in real studies
    settings: dict = field(default_factory=dict)   # overrides of the kind's GameSettings (any number in it)
    title: str = ""              # shown to participants
    agent: str = ""              # the agent players question: a shipped name or a checkpoint directory on the
                                 # server ("" = the server's agent); paid studies can name a private one
    pool: str = ""               # the images games draw from: an imported pool (`exag pool import`), by directory or
                                 # name under data/pools/, that the server must serve ("" = the server's pool)
    preregistration: dict = field(default_factory=dict)   # the rules fixed before data, and their hash once
                                 # `exag preregister` wrote it (game/preregistration.py); {} = not pre-registered
    completion_codes: str = "static"   # "static": everyone is shown completion_code; "per_participant": a code
                                 # only that participation could have earned, in the export (server/completion.py)
    order: str = "counterbalanced"   # controlled: "abab" (without explanations first), "baba" (with first) or
                                     # "counterbalanced" (half of each arm each way); at-will studies ignore it
    seed: int | None = None      # of the arm assignment (game/assignment.py); None: the server draws one at creation
    checks: dict = field(default_factory=dict)   # participant checks as data (game/checks.py: comprehension,
                                 # colour screen, attention, demographics); {} = none
    offer: str = "always"        # at-will: "always" (explanations can be bought in every game) or "randomized" (in a
                                 # seeded random half of each participant's games: game/offer.py)
    prolific_study_id: str = ""  # the study's STUDY_ID on Prolific: then a join's link must carry it and a SESSION_ID
                                 # (a participation is id and session: docs/real-study.md); "" = any link
    consent: dict = field(default_factory=dict)   # the consent form and information sheet (game/consent_form.py);
                                 # {} = the default text
    questionnaire: list = field(default_factory=list)   # the end questionnaire's items (game/consent_form.py);
                                 # [] = the default items

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", self.study_id):
            raise ValueError("study_id: 1-64 letters, digits, '.', '_' or '-'")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be {' or '.join(KINDS)}")
        if not self.arms:
            raise ValueError("a study needs at least one arm")
        for arm in self.arms:
            arm_modes(arm)
        if self.kind == "controlled" and self.sessions < 4:
            raise ValueError("controlled studies have at least 4 sessions")
        if self.sessions < 1 or self.games_per_session < 1:
            raise ValueError("sessions and games_per_session must be positive")
        if not isinstance(self.agent, str) or len(self.agent) > 500 or any(c in self.agent for c in "\n\r\0"):
            raise ValueError("agent: a shipped agent name or a checkpoint directory on the server (\"\" = the server's)")
        if not isinstance(self.pool, str) or len(self.pool) > 500 or any(c in self.pool for c in "\n\r\0"):
            raise ValueError("pool: an imported image pool's directory or name on the server (\"\" = the server's)")
        if not isinstance(self.prolific_study_id, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{0,64}",
                                                                          self.prolific_study_id):
            raise ValueError("prolific_study_id: the STUDY_ID of the study on Prolific (letters and digits), or \"\"")
        if self.completion_codes not in COMPLETION_CODES:
            raise ValueError(f"completion_codes must be {' or '.join(COMPLETION_CODES)}")
        preregistration.check(self)
        if self.order not in ORDERS:
            raise ValueError(f"order must be {', '.join(ORDERS[:-1])} or {ORDERS[-1]}, got {self.order!r}")
        if self.offer not in OFFERS:
            raise ValueError(f"offer must be {' or '.join(OFFERS)}, got {self.offer!r}"[:200])
        if self.offer == "randomized" and self.kind != "at-will":
            raise ValueError("offer: only at-will studies can randomize the offer of explanations (controlled studies "
                             "randomize arms and blocks instead)")
        if self.seed is not None and (type(self.seed) is not int or self.seed < 0):
            raise ValueError(f"seed must be a non-negative integer (or absent: the server draws one), "
                             f"got {self.seed!r}")
        if not isinstance(self.settings, dict):
            raise ValueError("settings must be an object of GameSettings overrides")
        unknown = sorted(str(name)[:40] for name in self.settings if name not in SETTING_NAMES)
        if unknown:
            named = ", ".join(map(repr, unknown[:5]))
            raise ValueError(f"settings: unknown setting{'s' * (len(unknown) > 1)} {named}; the settings are "
                             f"{', '.join(SETTING_NAMES)}")
        try:
            settings_named(self.kind, **self.settings)
        except TypeError as error:
            raise ValueError(f"settings: {error}") from error
        self.parsed_consent                        # refuses a bad consent form, questionnaire or checks now, each
        self.parsed_questionnaire                  # with one line
        self.parsed_checks

    @functools.cached_property
    def parsed_checks(self) -> Checks:
        """The checks as game/checks.py reads them, parsed once per config (the server reads a participant's
        study for every message)."""
        return parse_checks(self.checks, self.games, frozenset(item.key for item in self.parsed_questionnaire))

    @functools.cached_property
    def parsed_consent(self) -> ConsentForm:
        return parse_consent(self.consent)

    @functools.cached_property
    def parsed_questionnaire(self) -> tuple[Item, ...]:
        return parse_questionnaire(self.questionnaire)

    @property
    def games(self) -> int:
        return self.sessions * self.games_per_session

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "StudyConfig":
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown study fields: {', '.join(unknown)}")
        data = dict(data)
        if "arms" in data:
            data["arms"] = tuple(data["arms"])
        return cls(**data)


# The default end-of-session questionnaire (game/consent_form.py; a study may ask its own), as the page is sent it.
QUESTIONNAIRE = [item.public() for item in DEFAULT_QUESTIONNAIRE]


def load_study(path: str | Path) -> StudyConfig:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: {error}") from error
    try:
        return StudyConfig.from_dict(data)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path}: {error}") from error


def check_new_study(study: StudyConfig) -> None:
    """ValueError, one line, for a study that may not be created (the admin form, a new study file: server/
    study_check.py): an id outside NEW_STUDY_ID or reserved, a redirect_url that is no https link. Rules made after
    studies were first stored, so checked where a study is made, not by StudyConfig: one stored before them loads."""
    if not NEW_STUDY_ID.fullmatch(study.study_id) or study.study_id.lower() in RESERVED_STUDY_IDS:
        raise ValueError(f"study_id {study.study_id[:64]!r}: 1-64 letters, digits, '.', '_' or '-', starting with a "
                         f"letter or digit, and not {' or '.join(RESERVED_STUDY_IDS)}")
    check_link("redirect_url", study.redirect_url)
    check_link("consent.declined_url", study.parsed_consent.declined_url)


def check_link(name: str, url: object) -> None:
    """ValueError, one line, unless `url` is "" or a link participants may be sent to: https://HOST..., or
    http:// to LOCAL_HOSTS."""
    if url == "":
        return
    if not isinstance(url, str):
        raise ValueError(f"{name} must be text (an https:// link), not {type(url).__name__}")
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:                        # a malformed host, such as "https://[::1"
        parts, host = None, None
    safe = not any(c.isspace() or not c.isprintable() for c in url)
    if not (safe and host and (parts.scheme == "https" or (parts.scheme == "http" and host in LOCAL_HOSTS))):
        raise ValueError(f"{name}: an https:// link (http:// only to {', '.join(LOCAL_HOSTS)}), not {url[:80]!r}")


def is_test_participation(pid: object) -> bool:
    """Whether a participant id is one of TEST_PARTICIPATIONS, which never count toward a planned N."""
    return isinstance(pid, str) and pid.startswith(TEST_PARTICIPATIONS)


def is_pilot(pid: object) -> bool:
    """Whether a participant id is one of PILOT_PARTICIPATIONS: no slot of the randomization, no data."""
    return isinstance(pid, str) and pid.startswith(PILOT_PARTICIPATIONS)


def for_the_secret(settings: GameSettings, nle: bool) -> tuple[str, ...]:
    """At-will: the explainers run on the secret image when explanations are bought (the NLE when offered)."""
    return settings.for_the_secret + (("nle",) if nle else ())


def explainers_of(study: StudyConfig, arm: str) -> tuple[str, ...]:
    """The explainers an arm's games can show: at-will, those bought per round (for every image, then for
    the secret); controlled, the arm's modes."""
    if study.kind == "at-will":
        settings = settings_named(study.kind, **study.settings)
        return settings.for_every_image + for_the_secret(settings, study.nle)
    return arm_modes(arm)


def with_explanations(study: StudyConfig, arm: str, game_number: int, order: str) -> bool:
    """Whether game `game_number` (0-based) of a participant shows the arm's explanations: sessions
    alternate, starting without in order "abab" and with in "baba" (the participant's order,
    game/assignment.py); at-will studies let the player decide every round."""
    if study.kind == "at-will":
        return True
    if order not in PLAYED:
        raise ValueError(f"a participant plays order abab or baba, not {order!r}")
    if not arm_modes(arm):
        return False
    return (game_number // study.games_per_session) % 2 == (0 if order == "baba" else 1)


def fixed_order(study: StudyConfig) -> str | None:
    """The order of a participant who names their arm (demos: no randomization, so no counterbalancing):
    the study's when it fixes one, else the paper's "abab"; None in at-will studies."""
    if study.kind == "at-will":
        return None
    return study.order if study.order in PLAYED else "abab"


def study_slot(study: StudyConfig, number: int) -> Slot:
    """Slot `number` of a study's sequence (game/assignment.py): its seed, arms and order (at-will studies: no
    order)."""
    if study.seed is None:
        raise ValueError(f"study {study.study_id} has no seed yet: the server draws one when it stores the study")
    return slot(study.seed, study.arms, study.order if study.kind == "controlled" else None, number)


# What each built-in explainer needs of an agent (its class's `requires`, explainers/agent_interface.py),
# written here so that a study is checked without importing torch or the explainers
# (tests/game/test_study_explainers.py keeps it equal to the classes'); what an `hf:PATH` agent offers is
# vqa_agent/checkpoints.py's HF_CAPABILITIES. A sham needs what the explainer it imitates needs.
BUILTIN_REQUIRES = {"attention": frozenset({"attention"}), "objscene": frozenset({"answer", "concepts"}),
                    "relqa": frozenset({"answer", "text_embedding", "fingerprint"}),
                    "nle": frozenset({"answer", "question_embedding", "concepts", "proposals", "fingerprint"}),
                    "introspect": frozenset({"answer", "proposals"})}


def check_agent_explainers(study: StudyConfig, agent: str) -> None:
    """ValueError, one sentence, when the study shows a built-in explainer that its agent (`agent`: the study's,
    else the server's) cannot support: a transformers model (hf:PATH) has no object proposals nor concept
    words, so only attention and relqa run on it. Other agents are checked by the workers that load them."""
    if not is_hf_agent(agent):
        return
    shown = dict.fromkeys(name for arm in study.arms for name in explainers_of(study, arm))
    for name in shown:
        missing = sorted(BUILTIN_REQUIRES.get(registry.imitates(name) or name, frozenset()) - HF_CAPABILITIES)
        if missing:
            where = ("settings.for_every_image / settings.for_the_secret / nle" if study.kind == "at-will"
                     else "its arms")
            supported = [n for n, needs in BUILTIN_REQUIRES.items() if needs <= HF_CAPABILITIES]
            raise ValueError(f"study {study.study_id} shows the {name} explainer, which needs {' and '.join(missing)} "
                             f"of the agent, and the transformers agent {agent} offers neither proposals nor concept "
                             f"words: show only {' or '.join(supported)} with it ({where})")
