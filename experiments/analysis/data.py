"""The input of `exag analyze`: the tables `exag export` writes, read from wherever they are.

    tables = load_tables("export/")                 # an export directory: CSV, Parquet or JSONL
    tables = load_tables("results/sim")             # what `exag simulate --out results/sim` wrote: its export/
    tables = load_tables("data/server")             # a server data directory: its Redis, exported on the fly
    tables = load_tables("redis://host:6379/0")     # a running Redis (redis://, rediss:// or unix://)

The columns `exag export` writes (game/export.py, where READ_BY_ANALYSIS names those read here) are the
contract. A table or column the analysis uses but the input lacks costs only what needs it: `Tables.notes`
names the file and column, the column is added empty, and the report says what it could not compute. Only
input with nothing usable in it (no games table, or one that is not an export's) raises AnalysisError, with
a message that says why.

Types are made uniform here, whatever the format: identifiers are text, flags are floats (1.0 true,
0.0 false, NaN unknown: CSV and JSONL lose booleans' types where a value is missing), numbers are floats.
"""
from __future__ import annotations

import time

from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np
import pandas as pd

from game.export import FORMULA_STARTS
from game.export import READ_BY_ANALYSIS as COLUMNS     # what the analysis reads of each table (the contract)
from game.export import TABLE_KEYS as KEYS              # without these a table is unusable
from game.export import outcome_looks
from game.export import tables as export_tables
from game.study import is_pilot

FORMATS = ("parquet", "jsonl", "csv")        # tried in this order when a directory holds several
URL_SCHEMES = ("redis://", "rediss://", "unix://")
SIMULATION_EXPORT = "export"     # `exag simulate --out DIR` writes DIR/export/ and DIR/summary.json

TEXT = {"game_id", "study", "participant", "arm", "setting", "modes", "rating", "explainer", "kind", "grade",
        "answer_grade", "flags", "rater", "item", "game", "explanation_rating", "answer_rating", "question",
        "order"}      # a participant's order of blocks (abab | baba; games and participants tables)
FLAGS = {"with_explanations", "won", "right", "explained", "answer_correct", "is_secret", "for_the_secret",
         "game_won", "straight_lined", "offered", "parsed",
         # participant checks (game/checks.py; game/export.py _check_result)
         "comprehension_passed", "comprehension_failed", "colour_screen_passed", "colour_screen_failed",
         "attention_failed"}
NUMBERS = {"game_number", "session", "difficulty", "score", "started", "finished", "seconds", "questions", "round",
           "rating_score", "time", "games_without_questions", "fast_games", "cost", "spent", "inference_ms", "joined",
           "ask_to_answer_ms", "comprehension_failures", "colour_screen_correct", "colour_screen_plates",
           "attention_passed", "attention_total"}
GUARDED = tuple("'" + start for start in FORMULA_STARTS)   # CSV cells export kept from spreadsheets
NO_RATER_DATA = "no rater data yet (the independent raters' task, /rate, has no ratings of these games)"
TRUE_WORDS, FALSE_WORDS = {"true", "1", "1.0", "yes"}, {"false", "0", "0.0", "no"}


class AnalysisError(ValueError):
    """Input with nothing to analyse: the message says what was looked for and where."""


@dataclass
class Tables:
    games: pd.DataFrame
    rounds: pd.DataFrame = field(default_factory=pd.DataFrame)
    ratings: pd.DataFrame = field(default_factory=pd.DataFrame)
    explanations: pd.DataFrame = field(default_factory=pd.DataFrame)
    participants: pd.DataFrame = field(default_factory=pd.DataFrame)
    rater_ratings: pd.DataFrame = field(default_factory=pd.DataFrame)
    problems: pd.DataFrame = field(default_factory=pd.DataFrame)
    studies: pd.DataFrame = field(default_factory=pd.DataFrame)     # one row per study: config, pre-registration
    assignments: pd.DataFrame = field(default_factory=pd.DataFrame)  # one row per join: slot, block, arm, order
    notes: list[str] = field(default_factory=list)     # what is missing, by file and column
    source: str = ""
    server_key: bytes | None = None     # the server's key, read on the server (or given): verifies signed exports

    @classmethod
    def from_frames(cls, frames: dict[str, pd.DataFrame], source: str, where: dict[str, str] | None = None,
                    notes: list[str] | None = None) -> "Tables":
        """Tables from DataFrames named as export's tables; `where` names each table's file for notes."""
        where = where or {}
        notes = list(notes or [])
        if "games" not in frames:
            raise AnalysisError(f"{source} has no games table (games.csv / games.parquet / games.jsonl)")
        typed = {}
        for name in COLUMNS:
            frame = frames.get(name)
            label = where.get(name, f"{name} table")
            if frame is None:
                # an export without studies: none pre-registered; without assignments: from before them
                if name not in ("problems", "studies", "assignments"):
                    notes.append(f"{source} has no {name} table ({name}.csv / .parquet / .jsonl): "
                                 + _missing_table(name))
                frame = pd.DataFrame()
            elif name == "games" and not frame.empty and "game_id" not in frame.columns:
                raise AnalysisError(f"{label} is not an exag export games table: it has no column 'game_id' "
                                    f"(its columns: {', '.join(map(str, frame.columns[:12]))})")
            elif name == "rater_ratings" and frame.empty:
                notes.append(f"{label} is empty: {NO_RATER_DATA}")
            typed[name] = _typed(frame, name, label, notes)
        if typed["problems"].shape[0]:
            notes.append(f"{where.get('problems', 'problems table')}: {len(typed['problems'])} events could not be "
                         "tabulated by the export (see its `error` column); they are not analysed")
        return cls(**typed, notes=notes, source=source)

    def study_ids(self) -> list[str]:
        return sorted(self.games["study"].dropna().unique().tolist())

    def without_pilots(self) -> "Tables":
        """The tables without pilot participations (`exag bot --pilot`, ?pid=test- links: game/study.py
        PILOT_PARTICIPATIONS), which are no data; a note says how many were left out."""
        pilots = set()
        for f in fields(self):
            frame = getattr(self, f.name)
            if isinstance(frame, pd.DataFrame) and "participant" in frame.columns:
                pilots |= {p for p in frame["participant"].dropna().unique() if is_pilot(p)}
        if not pilots:
            return self
        games = set(self.games.loc[self.games["participant"].isin(pilots), "game_id"]) \
            if "participant" in self.games.columns else set()
        kept = {}
        for f in fields(self):
            frame = getattr(self, f.name)
            if not isinstance(frame, pd.DataFrame) or frame.empty:
                continue
            drop = pd.Series(False, index=frame.index)
            if "participant" in frame.columns:
                drop |= frame["participant"].isin(pilots)
            for column in ("game_id", "game"):
                if column in frame.columns:
                    drop |= frame[column].isin(games)
            kept[f.name] = frame[~drop]
        note = (f"{len(pilots)} pilot participation{'s' * (len(pilots) != 1)} left out ({len(games)} game{'s' * (len(games) != 1)}): `exag bot "
                "--pilot` and ?pid=test- links are no participants (game/study.py PILOT_PARTICIPATIONS)")
        return replace(self, **kept, notes=self.notes + [note])

    def only(self, studies: list[str] | None) -> "Tables":
        """These studies' rows (rater ratings by their games). A study id found nowhere is an error; one
        with participants but no games yet is noted."""
        if not studies:
            return self
        present = self.study_ids()
        joined = set(self.participants["study"].dropna()) if "study" in self.participants else set()
        unknown = [s for s in studies if s not in present and s not in joined]
        if unknown:
            raise AnalysisError(f"unknown study {', '.join(map(repr, unknown))} in {self.source}; "
                                f"studies there: {', '.join(sorted(set(present) | joined)) or 'none'}")
        notes = self.notes + [f"study {s} has participants but no games yet" for s in studies if s not in present]
        keep = set(studies)
        games = self.games[self.games["study"].isin(keep)]
        chosen = {}
        for f in fields(self):
            frame = getattr(self, f.name)
            if not isinstance(frame, pd.DataFrame) or f.name == "problems":
                continue
            if "study" in frame.columns:
                chosen[f.name] = frame[frame["study"].isin(keep)]
            elif "game_id" in frame.columns or "game" in frame.columns:
                column = frame["game_id"] if "game_id" in frame.columns else frame["game"]
                chosen[f.name] = frame[column.isin(set(games["game_id"]))]
        return replace(self, **chosen, notes=notes)


def _missing_table(name: str) -> str:
    return {"rounds": "which games used explanations, and answer correctness, are unknown",
            "ratings": "no helpfulness ratings", "explanations": "no automatic explanation grades",
            "participants": "no quality flags, so no exclusions", "games": "nothing to analyse",
            "rater_ratings": NO_RATER_DATA}[name]


def _typed(frame: pd.DataFrame, name: str, label: str, notes: list[str]) -> pd.DataFrame:
    frame = frame.reset_index(drop=True).copy()
    if frame.empty and not len(frame.columns):
        frame = pd.DataFrame(columns=list(COLUMNS[name]))
    for column, lost in COLUMNS[name].items():
        if column not in frame.columns:
            if column in KEYS.get(name, ()) and name != "games":
                notes.append(f"{label} has no column '{column}': the {name} table is not used")
                frame = pd.DataFrame(columns=list(COLUMNS[name]))
                break
            notes.append(f"{label} has no column '{column}'" + (f": no {lost}" if lost else ""))
            frame[column] = np.nan
    for column in frame.columns:
        if column in TEXT:
            frame[column] = _text(frame[column])
        elif column in FLAGS:
            frame[column] = _flag(frame[column])
        elif column in NUMBERS:
            frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    return frame


def _text(column: pd.Series) -> pd.Series:
    """Text, missing values kept missing."""
    return column.where(column.notna()).astype(str)


def _unguarded(frame: pd.DataFrame) -> pd.DataFrame:
    """A CSV's text as it was: export put a ' before cells a spreadsheet would run as formulas."""
    for column in frame.columns[(frame.dtypes == object) | (frame.dtypes == "str")]:
        text = frame[column]
        try:
            guarded = text.str.startswith(GUARDED).fillna(False).astype(bool)
        except AttributeError:                       # not text (booleans with gaps, say)
            continue
        if guarded.any():
            frame[column] = text.where(~guarded, text.str[1:])
    return frame


def _flag(column: pd.Series) -> pd.Series:
    def one(v) -> float:
        if v is None or (isinstance(v, float) and np.isnan(v)):
            return np.nan
        if isinstance(v, (bool, np.bool_)):
            return float(v)
        if isinstance(v, (int, float, np.integer, np.floating)):
            return float(v != 0)
        word = str(v).strip().lower()
        return 1.0 if word in TRUE_WORDS else 0.0 if word in FALSE_WORDS else np.nan
    return column.astype(object).map(one).astype(float)


# --- reading ---------------------------------------------------------------------------------------

def load_tables(source: str | Path, studies: list[str] | None = None, pilots: bool = False) -> Tables:
    """The tables of an export directory, a server data directory or a Redis URL (see the module doc), without
    pilot participations (`Tables.without_pilots`) unless `pilots`."""
    text = str(source)
    if text.startswith(URL_SCHEMES):
        tables = _from_url(text, text)
    else:
        path = Path(source)
        if not path.exists():
            raise AnalysisError(f"{path} does not exist: pass an `exag export` directory, a server data "
                                "directory (data/server) or --redis-url URL")
        if not path.is_dir():
            raise AnalysisError(f"{path} is not a directory: pass the directory `exag export --out` wrote")
        if _export_files(path, "games"):
            tables = _from_export_dir(path)
        elif (path / "redis").is_dir():
            tables = _from_server_dir(path)
        elif _export_files(path / SIMULATION_EXPORT, "games"):
            tables = _from_export_dir(path / SIMULATION_EXPORT)
        else:
            raise AnalysisError(f"{path} has no games table (games.csv / games.parquet / games.jsonl), nor has "
                                f"{path / SIMULATION_EXPORT}: pass the directory `exag export --out DIR` wrote, the "
                                "one `exag simulate --out DIR` wrote, a server data directory (data/server) or "
                                "--redis-url URL")
    return tables.only(studies) if pilots else tables.only(studies).without_pilots()


def _export_files(directory: Path, name: str) -> list[Path]:
    return [directory / f"{name}.{fmt}" for fmt in FORMATS if (directory / f"{name}.{fmt}").is_file()]


def _from_export_dir(directory: Path) -> Tables:
    """The tables of a directory that holds a games table (load_tables checked)."""
    games = _export_files(directory, "games")
    fmt = games[0].suffix[1:]
    notes = []
    if len(games) > 1:
        notes.append(f"{directory} holds games in several formats; read {games[0].name}")
    frames, where = {}, {}
    for name in COLUMNS:
        files = _export_files(directory, name)
        files.sort(key=lambda p: p.suffix[1:] != fmt)         # the games table's format first
        if not files:
            continue
        where[name] = str(files[0])
        try:
            frames[name] = _read(files[0])
        except (ValueError, OSError, ImportError) as error:   # pandas' and pyarrow's parse errors are ValueErrors
            if name == "games":
                raise AnalysisError(f"{files[0]} cannot be read: {error}") from error
            notes.append(f"{files[0]} cannot be read ({type(error).__name__}: {str(error)[:200]}); not used")
    return Tables.from_frames(frames, str(directory), where, notes)


def _read(path: Path) -> pd.DataFrame:
    fmt = path.suffix[1:]
    if fmt == "parquet":
        return pd.read_parquet(path)
    if path.stat().st_size <= 1:               # an empty table is written as one newline
        return pd.DataFrame()
    if fmt == "jsonl":
        return pd.read_json(path, lines=True, dtype=False)       # no type guessing: ids stay text
    try:
        return _unguarded(pd.read_csv(path, dtype={c: str for c in TEXT}))
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def _from_events(events: list[dict], source: str, server_key: bytes | None = None) -> Tables:
    frames = export_tables(events, server_key)
    where = {name: f"{source} ({name})" for name in frames}
    tables = Tables.from_frames(frames, source, where, [] if events else [f"{source} holds no events"])
    return replace(tables, server_key=server_key)


def _from_url(url: str, source: str) -> Tables:
    import redis

    from game.export_signature import server_key
    from server.store import Store

    store = Store.connect(url)
    try:
        # reading a pre-registered study's outcomes from its server is a look, like an export: logged first
        # (game/export.py outcome_looks), so that the analysis lists it with the others
        for look in outcome_looks(store.events(), f"exag analyze ({source})", time.time()):
            store.log(look)
        events = list(store.events())
        key = server_key(store.redis)
    except redis.RedisError as error:
        raise AnalysisError(f"cannot read the event log from {source}, or log the look at its outcomes there "
                            f"(every look at a registered study's outcomes is logged): {error}") from error
    finally:
        store.close()
    return _from_events(events, source, key)


def _from_server_dir(directory: Path) -> Tables:
    from server.embedded_redis import EmbeddedRedis

    embedded = EmbeddedRedis(directory / "redis")
    if not embedded.alive() and not embedded.has_data():
        raise AnalysisError(f"no game data in {directory} (its redis/ directory is empty): pass an export "
                            "directory or --redis-url URL")
    url = embedded.start().url
    try:
        return _from_url(url, str(directory))
    finally:
        embedded.stop()
