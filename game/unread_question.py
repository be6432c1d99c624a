"""What a player is told when the agent could not read their question exactly (issue 55).

The built-in agents read the world's question language (vqa_agent/world/parser.py: colors, shapes, sizes,
materials, positions, counts). A question outside it ("What color is the biggest object?": the language has
"large", not "biggest") is still answered, by the agent's neural classifier from the words it knows, and
confidently; it is also left ungraded (rounds.parsed false, answer_grade "ungradable"). So the round is played
as any other (the question costs its points: the agent did answer, and a refund would reward probing the
parser) and the player is told, in the round, that the answer is a guess, why, and how to ask instead.

Where the parser has no say, nothing is said (`applies`): an agent that does not read the world's language (a
transformers model, `hf:PATH`, reads open English: the parser failing says nothing about what it understood),
and an imported image pool (no scenes: the world's language is not what its pictures are about).

Called by the inference worker that answers the round (server/respond.py finish_round); the notice travels in
the round's result to the web process, which keeps it in the game state (game/state.py Round.notice) and sends
it in the player's view. It depends on the question's text alone: it says nothing about the secret.
"""
from __future__ import annotations

import re

from vqa_agent.world.parser import unparsed_reason

HOW_TO_ASK = ("Ask about color, shape, size (small or large), material (metal or rubber), position (left of, right "
              "of, in front of, behind) or how many.")
GUESS = "so its answer is a guess"


def applies(agent, has_ground_truth: bool) -> bool:
    """Whether the parser speaks for `agent` on this pool: a pool of the world's scenes (`has_ground_truth`), and
    an agent whose vocabulary is the world's (the shipped and trained agents: vqa_agent/tokenizer.py Vocabulary,
    which tells the world's words apart; a transformers model's open vocabulary does not)."""
    return has_ground_truth and callable(getattr(getattr(agent, "vocabulary", None), "outside_words", None))


def notice(question: str) -> str | None:
    """The player's notice for `question`, or None when the parser reads it exactly (the grading's own parse:
    vqa_agent/world/parser.py parse_program)."""
    reason = unparsed_reason(question)
    return None if reason is None else f"{plain(reason)} {HOW_TO_ASK}"


def _quoted(words: list[str]) -> str:
    quoted = [f"'{w}'" for w in words]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def plain(reason: str) -> str:
    """The parser's reason (vqa_agent/world/parser.py Unparseable) in the player's words."""
    unknown = re.fullmatch(r"unknown words?: (.+)", reason)
    if unknown:
        words = [w.strip() for w in unknown.group(1).split(",")]
        return f"The agent does not know the word{'s' if len(words) > 1 else ''} {_quoted(words)}, {GUESS}."
    part = re.fullmatch(r"not understood from '(.+?)'(?: \(after '.*'\))?", reason) or \
        re.fullmatch(r"not understood what 'it' is: '(.+)'", reason)
    if part:
        return f"The agent could not read \u201c{part.group(1)}\u201d in your question, {GUESS}."
    if reason.startswith("ambiguous"):
        return f"The agent can read your question in more than one way, {GUESS}."
    if reason.startswith("'it' names nothing"):
        return f"The agent could not tell what \u201cit\u201d is, {GUESS} (say what it is first: " \
               "\u201cThere is a red cube; what is its size?\u201d)."
    if reason.startswith("longer than"):
        return f"Your question is too long for the agent to read exactly ({reason}), {GUESS}."
    if reason == "the words are known but the question has no supported form":
        return f"The agent knows the words but cannot read this kind of question, {GUESS}."
    return f"The agent could not read your question exactly ({reason}), {GUESS}."
