"""From export tables to the frames every analysis reads: one row per finished game, per helpfulness
rating, per explanation of a secret image (an "item", as the raters see it) and per rater's rating.

Definitions made once, here:
- a game counts when it is finished (it has an outcome); unfinished games are left out, with a note;
- `cluster`: the participant (study and participant id), the unit clustered tests group by;
- `kind`: the study's kind, from its games' `setting` ("controlled" or "at-will");
- `block` (controlled): session + 1, so block 1 is the first session;
- `order` (controlled): the participant's order of blocks (game/assignment.py): "abab" plays odd blocks
  without explanations and even blocks with them, "baba" the other way round; exports from before orders
  existed are read as "abab" (every participant then played it); `starts_with`: 1.0 for "baba";
- with-blocks (`with_block`): the blocks that show explanations in the participant's order (abab: even,
  baba: odd), in every arm, so that an arm without explanations has the blocks it would have shown them
  in; the group baseline is block 1 of the participants who start without explanations (abab);
- `shows`: the game showed explanations: in a controlled study, a with-block of an arm with
  explanation modes (`with_explanations` when the session is unknown); at-will, `used`;
- `used`: one of the game's rounds had explanations (`rounds.explained`);
- `offered` (at-will studies with a randomized offer): 1.0 where explanations could be bought in the game, 0.0
  where the seeded draw withheld them, NaN elsewhere;
- `play`: the game's place in its participant's games, 1-based (`game_number`, then start time);
- `unit`: the unit of randomization, the participant's assignment slot (a slot re-dealt after a dropout is shared
  by its two holders), else the participant; `first_holder`: 1.0 unless the participant took the slot over
  (`assignments.refilled_slot`): the intention-to-treat analyses count each slot by its first holder;
- `expl_arm`: the arm shows explanations (its modes, game/study.py; "none" does not);
- `sham`: the arm shows a sham explanation (game/study.py SHAM_MODES: a real explainer's output for another
  image of the round), a sanity check: it has its own rows, never in the "overall" ones;
- scales as ranks, 0 = best: helpfulness RATINGS (game/settings.py), explanations EXPLANATION_SCALE and
  answers ANSWER_SCALE (explainers/grading.py); a rater item's consensus is the median rank of its
  ratings, an even split taken on the worse side.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from game.quality import FLAGS
from game.assignment import PLAYED
from game.study import KINDS, arm_modes, is_sham

from .data import AnalysisError, Tables
from .scales import ANSWER_SCALE, EXPLANATION_SCALE, RATINGS

CONTROLLED, AT_WILL = KINDS
FLAG_NAMES = FLAGS     # game/quality.py: the effort flags and those of the participant checks
ITEM_KEY = ["game_id", "round", "explainer"]
PAPER_ORDER = ("attention", "relqa", "both")     # the paper's modes first, then any other by name, shams last


def _rank(labels: pd.Series, scale: tuple[str, ...]) -> pd.Series:
    """A label's position on its scale (0 = best); anything else (ungradable, unknown) NaN."""
    return labels.map({label: float(i) for i, label in enumerate(scale)}).astype(float)


def sham(name: str) -> bool:
    """Whether an arm or an explainer is a sham (game/study.py SHAM_MODES); an unknown name is not."""
    try:
        return is_sham(name)
    except ValueError:
        return False


def paper_order(names) -> list[str]:
    return sorted(names, key=lambda a: (sham(a), a not in PAPER_ORDER, PAPER_ORDER.index(a) if a in PAPER_ORDER else 0,
                                        a))


def starts_with(games: pd.DataFrame) -> pd.Series:
    """Whether each game's participant starts with explanations (order "baba"; no `order` column: abab)."""
    if "order" not in games.columns:
        return pd.Series(False, index=games.index)
    return games["order"] == "baba"


def with_block(games: pd.DataFrame) -> pd.Series:
    """1.0 for a game in a block that shows explanations in its participant's order (abab: even blocks,
    baba: odd ones), 0.0 in the others, NaN where the block is unknown."""
    return ((games["block"] % 2 == 0) != starts_with(games)).astype(float).where(games["block"].notna())


def arms_of(games: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The arms that show explanations and those that do not, in the paper's order."""
    shows = games.groupby("arm")["expl_arm"].max()
    ordered = paper_order(shows.index)
    return [a for a in ordered if shows[a] == 1.0], [a for a in ordered if shows[a] != 1.0]


@dataclass
class Frames:
    games: pd.DataFrame        # finished games, with the derived columns of the module doc
    ratings: pd.DataFrame      # helpfulness ratings of finished games: rank, score (5 best), explained, won, ...
    items: pd.DataFrame        # explanations of the secret image: automatic and raters' ranks, answer's, won
    rater: pd.DataFrame        # raters' ratings of those items: item, rater, explanation_rank, answer_rank
    rounds: pd.DataFrame       # rounds of finished games
    kinds: dict[str, str | None] = field(default_factory=dict)   # study -> kind
    notes: list[str] = field(default_factory=list)

    def study(self, study_id: str) -> "Frames":
        pick = lambda frame: frame[frame["study"] == study_id]
        return replace(self, games=pick(self.games), ratings=pick(self.ratings), items=pick(self.items),
                       rater=pick(self.rater), rounds=pick(self.rounds),
                       kinds={study_id: self.kinds.get(study_id)}, notes=[])


def build_frames(tables: Tables, exclude_flags: set[str] | frozenset[str] | dict[str, frozenset[str]] = frozenset()
                 ) -> tuple[Frames, dict]:
    """The frames, and the exclusions: {"flags" asked for, "participants" and "games" dropped,
    "flagged_participants": {flag: participants raising it}, "removed": {flag: {"participants", "games"}}
    (what each rule removed; a participant with two of the flags counts under both)}. `exclude_flags`: the
    flags for every study, or {study: flags} (each study's pre-registered rules, preregistered.py)."""
    by_study = exclude_flags if isinstance(exclude_flags, dict) else None
    exclude_flags = set().union(*by_study.values()) if by_study else set(exclude_flags)
    unknown = sorted(set(exclude_flags) - set(FLAG_NAMES))
    if unknown:
        raise AnalysisError(f"unknown quality flag {', '.join(map(repr, unknown))}; flags: {', '.join(FLAG_NAMES)}")
    notes: list[str] = []
    games = tables.games.copy()
    games["study"] = games["study"].fillna("(no study)")
    games["participant"] = games["participant"].fillna("(unknown participant)")
    games["arm"] = games["arm"].fillna("(no arm)")
    games["cluster"] = games["study"] + ":" + games["participant"]
    games = games.drop_duplicates("game_id", keep="last")
    exclusions = _exclusions(tables.participants, games, set(exclude_flags), by_study)
    if exclude_flags and tables.participants.empty:
        notes.append("no participants table: quality flags are unknown, so no participant is excluded")
    games = games[~games["cluster"].isin(exclusions.pop("clusters"))]

    unfinished = games["won"].isna()
    if unfinished.any():
        notes.append(f"{int(unfinished.sum())} unfinished games (no guess) are left out")
    games = games[~unfinished].copy()
    kinds = _kinds(games, notes)
    games["kind"] = games["study"].map(kinds)
    games["expl_arm"] = _explanation_arms(games, tables.rounds)
    games["sham"] = games["arm"].map({arm: float(sham(arm)) for arm in games["arm"].unique()}).astype(float)
    games["block"] = games["session"] + 1
    order = games["order"] if "order" in games.columns else pd.Series(np.nan, index=games.index, dtype=object)
    games["order"] = np.where(games["kind"] == CONTROLLED, order.where(order.isin(PLAYED), "abab"), None)
    games["starts_with"] = starts_with(games).astype(float)
    games["play"] = _play_index(games)
    games["unit"] = _units(games, tables.assignments)
    games["first_holder"] = _first_holders(games, tables.assignments)
    # at-will studies with a randomized offer (game/study.py `offer`): whether explanations could be bought
    games["offered"] = games["offered"].astype(float) if "offered" in games.columns else np.nan

    rounds = tables.rounds[tables.rounds["game_id"].isin(set(games["game_id"]))].copy()
    rounds = rounds.merge(games[["game_id", "study", "cluster", "arm"]].rename(
        columns={"study": "_study", "arm": "_arm"}), on="game_id", how="left")
    rounds["study"], rounds["arm"] = rounds["_study"], rounds["_arm"]
    rounds = rounds.drop(columns=["_study", "_arm"])
    explained = rounds.groupby("game_id")["explained"].max()
    games["used"] = games["game_id"].map(explained)
    if rounds.empty:
        notes.append("no rounds: explanation use is taken from `with_explanations` (controlled) and unknown at-will")
    no_rounds = games["used"].isna()
    games.loc[no_rounds, "used"] = np.where(games.loc[no_rounds, "kind"] == CONTROLLED,
                                            games.loc[no_rounds, "with_explanations"].fillna(0.0), np.nan)
    if "questions" in games.columns:                # a game without questions had no explanations
        games.loc[no_rounds & (games["questions"] == 0), "used"] = 0.0
    by_block = np.where(games["block"].notna(), (with_block(games) == 1.0) & (games["expl_arm"] == 1.0),
                        games["with_explanations"] == 1.0)
    games["shows"] = np.where(games["kind"] == CONTROLLED, by_block.astype(float), games["used"])
    games["answer_correctness"] = games["game_id"].map(rounds.groupby("game_id")["answer_correct"].mean())
    if games.loc[games["kind"] == CONTROLLED, "session"].isna().any():
        notes.append("some controlled games have no session: their block is unknown (with/without explanations "
                     "is taken from `with_explanations`; they are not in the group baseline)")

    ratings = _ratings(tables, games, rounds, notes)
    rater = _rater(tables.rater_ratings, games)
    items = _items(tables.explanations, rater, rounds, games)
    frames = Frames(games=games.reset_index(drop=True), ratings=ratings, items=items, rater=rater,
                    rounds=rounds, kinds=kinds, notes=notes)
    return frames, exclusions


def _exclusions(participants: pd.DataFrame, games: pd.DataFrame, flags: set[str],
                by_study: dict[str, frozenset[str]] | None = None) -> dict:
    by_flag = {}
    flagged = pd.Series(dtype=object)
    removed = {name: set() for name in sorted(flags)}
    if not participants.empty:
        marks = participants["flags"].fillna("").str.split("+")
        key = participants["study"].fillna("(no study)") + ":" + participants["participant"].fillna("")
        for name in FLAG_NAMES:
            has = marks.map(lambda m, name=name: name in m).astype(bool)
            by_flag[name] = int(has.sum())
        # the rules each participant is held to: their study's own (pre-registered), else the flags asked for
        rules = participants["study"].map(lambda s: by_study.get(s, frozenset())) if by_study is not None else \
            pd.Series([flags] * len(participants), index=participants.index, dtype=object)
        hits = pd.Series([set(m) & set(r) for m, r in zip(marks, rules)], index=participants.index, dtype=object)
        flagged = key[hits.map(bool)]
        for who, names in zip(key, hits):
            for name in names:
                removed[name].add(who)
    clusters = set(flagged)
    excluded = games["cluster"].isin(clusters)
    played = set(games["cluster"])
    return {"flags": sorted(flags), "participants": len(clusters & played),
            "games": int(excluded.sum()), "flagged_participants": by_flag, "clusters": clusters,
            "removed": {name: {"participants": len(who & played), "games": int(games["cluster"].isin(who).sum())}
                        for name, who in removed.items()}}


def _units(games: pd.DataFrame, assignments: pd.DataFrame) -> pd.Series:
    """Each game's unit of randomization: its participant's arm-assignment slot (game/assignment.py). A slot that was
    re-dealt after its first holder dropped out is one draw shared by two participants, so the randomization tests
    move them together; a participant without a slot (an arm chosen by the link, an export from before slots) is
    their own unit."""
    if assignments.empty or "slot" not in assignments.columns:
        return games["cluster"].copy()
    known = assignments.dropna(subset=["slot"]).drop_duplicates(["study", "participant"], keep="last")
    slot = pd.Series([f"{s}:slot {int(float(n))}" for s, n in zip(known["study"], known["slot"])],
                     index=known["study"].astype(str) + ":" + known["participant"].astype(str))
    mapped = games["cluster"].map(slot).astype(object)
    return mapped.where(mapped.notna(), games["cluster"])


def _first_holders(games: pd.DataFrame, assignments: pd.DataFrame) -> pd.Series:
    """1.0 for the games of a participant who was the first to hold their slot (dealt it new, not as a refill of
    a slot whose holder left: the export's `assignments.refilled_slot`), 0.0 for a refill: intention to treat
    counts each slot by its first holder."""
    if assignments.empty or "refilled_slot" not in assignments.columns:
        return pd.Series(1.0, index=games.index)
    known = assignments.drop_duplicates(["study", "participant"], keep="first")
    refill = pd.Series(known["refilled_slot"].notna().to_numpy(),
                       index=known["study"].astype(str) + ":" + known["participant"].astype(str))
    return (~games["cluster"].map(refill).eq(True)).astype(float)


def _kinds(games: pd.DataFrame, notes: list[str]) -> dict[str, str | None]:
    kinds = {}
    for study, settings in games.groupby("study")["setting"]:
        known = settings[settings.isin(KINDS)]
        kinds[study] = known.mode().iloc[0] if len(known) else None
        if kinds[study] is None:
            notes.append(f"study {study}: its games name no known setting (controlled or at-will); "
                         "neither Table 1 nor the at-will analysis includes it")
    return kinds


def _explanation_arms(games: pd.DataFrame, rounds: pd.DataFrame) -> pd.Series:
    """1.0 where the game's arm shows explanations: by its name when it is a known arm, else by its data."""
    shown = games.groupby("arm")["with_explanations"].max()
    explained = rounds[["game_id", "explained"]].merge(games[["game_id", "arm"]], on="game_id") \
        .groupby("arm")["explained"].max()

    def shows(arm: str) -> float:
        try:
            return float(bool(arm_modes(arm)))
        except ValueError:
            return float(max(shown.get(arm, 0.0) or 0.0, explained.get(arm, 0.0) or 0.0) > 0)
    return games["arm"].map({arm: shows(arm) for arm in games["arm"].unique()}).astype(float)


def _play_index(games: pd.DataFrame) -> pd.Series:
    order = games.sort_values(["cluster", "game_number", "started", "game_id"], na_position="last")
    return order.groupby("cluster").cumcount().add(1).reindex(games.index).astype(float)


def _ratings(tables: Tables, games: pd.DataFrame, rounds: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    ratings = tables.ratings
    if ratings.empty and "rating" in rounds and rounds["rating"].notna().any():
        notes.append("helpfulness ratings are taken from rounds.rating (no ratings table)")
        ratings = rounds[rounds["rating"].notna()][["game_id", "round", "rating", "explained"]]
    ratings = ratings[ratings["game_id"].isin(set(games["game_id"]))].copy()
    ratings = ratings.drop_duplicates(["game_id", "round"], keep="last")
    if ratings["explained"].isna().any() and not rounds.empty:
        from_rounds = ratings[["game_id", "round"]].merge(rounds[["game_id", "round", "explained"]], how="left")
        ratings["explained"] = ratings["explained"].fillna(pd.Series(from_rounds["explained"].to_numpy(),
                                                                     index=ratings.index))
    ratings["rank"] = _rank(ratings["rating"], RATINGS)
    ratings["score"] = len(RATINGS) - ratings["rank"]
    unknown = ratings["rank"].isna() & ratings["rating"].notna()
    if unknown.any():
        notes.append(f"{int(unknown.sum())} helpfulness ratings are not on the scale ({', '.join(RATINGS)}); left out")
    columns = ["game_id", "study", "cluster", "arm", "kind", "expl_arm", "sham", "won", "difficulty", "shows"]
    ratings = ratings.drop(columns=[c for c in columns if c != "game_id" and c in ratings.columns])
    return ratings[ratings["rank"].notna()].merge(games[columns], on="game_id").reset_index(drop=True)


def _rater(rater: pd.DataFrame, games: pd.DataFrame) -> pd.DataFrame:
    rater = rater.rename(columns={"game": "game_id"})
    rater = rater[rater["game_id"].isin(set(games["game_id"]))].copy()
    rater["explanation_rank"] = _rank(rater["explanation_rating"], EXPLANATION_SCALE)
    rater["answer_rank"] = _rank(rater["answer_rating"], ANSWER_SCALE)
    rater["item"] = rater["game_id"] + "|" + rater["round"].astype(str) + "|" + rater["explainer"]
    return rater.merge(games[["game_id", "study"]], on="game_id").reset_index(drop=True)


def _items(explanations: pd.DataFrame, rater: pd.DataFrame, rounds: pd.DataFrame, games: pd.DataFrame) -> pd.DataFrame:
    """One row per explanation of a secret image: `auto_rank` (its automatic grade), `rater_rank` and
    `n_raters` (the raters' consensus), the round's `answer_auto_rank`, `answer_correct` and
    `answer_rater_rank`, and the game's outcome."""
    secret = explanations[(explanations["is_secret"] == 1.0) & explanations["game_id"].isin(set(games["game_id"]))]
    auto = secret.drop_duplicates(ITEM_KEY)[ITEM_KEY].copy()
    auto["auto_rank"] = _rank(secret.drop_duplicates(ITEM_KEY)["grade"], EXPLANATION_SCALE).to_numpy()
    grouped = rater.groupby(ITEM_KEY)
    rated = pd.DataFrame({"rater_rank": np.ceil(grouped["explanation_rank"].median()),      # ties: the worse side
                          "answer_rater_rank": np.ceil(grouped["answer_rank"].median()),
                          "n_raters": grouped.size()}).reset_index() if not rater.empty else \
        pd.DataFrame({"game_id": pd.Series(dtype=str), "round": pd.Series(dtype=float),
                      "explainer": pd.Series(dtype=str), "rater_rank": pd.Series(dtype=float),
                      "answer_rater_rank": pd.Series(dtype=float), "n_raters": pd.Series(dtype=float)})
    items = auto.merge(rated, on=ITEM_KEY, how="outer")
    answers = rounds[["game_id", "round", "answer_correct", "answer_grade"]].drop_duplicates(["game_id", "round"])
    answers = answers.assign(answer_auto_rank=_rank(answers["answer_grade"], ANSWER_SCALE)).drop(columns="answer_grade")
    items = items.merge(answers, on=["game_id", "round"], how="left")
    columns = ["game_id", "study", "cluster", "arm", "kind", "won", "shows"]
    return items.merge(games[columns], on="game_id").astype({"auto_rank": float, "rater_rank": float,
                                                             "answer_rater_rank": float}).reset_index(drop=True)
