"""The RelQA explainer's retrieval index: a question bank embedded by the agent's question encoder.

    index = load_or_build_index(agent, "data/world", split="val")   # cached on disk, built once
    index.embeddings   # [N, hidden] float32, unit rows: cosine similarity is a matrix product
    index.questions, index.answers

The bank is one split of a world (the validation questions by default, as the paper used VQA val).
Each entry is embedded as "question answer" (its ground-truth answer), the same way the asked question
is embedded with the agent's answer at play time; see relqa.py for why.

The index depends on the agent's question encoder and on the bank, so it is cached per agent
fingerprint (`agent.fingerprint()`: its configuration and weights, which its vocabulary is saved and
loaded with) and checked against the bank:

    <world>/relqa_index/<agent fingerprint>-<split>.npz
        embeddings  float32 [N, hidden]  what `agent.embed_texts` returns, as computed
        bank        uint8               UTF-8 JSON {"questions": [...], "answers": [...]}
        meta        uint8               UTF-8 JSON: format, agent, split, bank hash, source file stat

Loading trusts the cache when questions.json has the size and modification time it had when the index
was built (reading 100+ MB of JSON just to check it would cost seconds at every start). When the file
changed, the bank is read again and hashed: the same bank keeps its embeddings (the stored stat is
refreshed), a different one is embedded again. Files are written to a temporary name and renamed, so
a reader never sees half an index and two processes building at once both leave a whole one.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tqdm import tqdm

if TYPE_CHECKING:
    from .agent_interface import Agent

INDEX_FORMAT = 1
INDEX_DIR_NAME = "relqa_index"
INDEX_FILE_MODE = 0o644
EMBED_CHUNK = 512   # texts per embed_texts call while building (one progress-bar step)


@dataclass
class RelQAIndex:
    questions: list[str]
    answers: list[str]
    embeddings: np.ndarray   # [N, hidden] float32 as the encoder gave them
    unit: np.ndarray         # the same rows scaled to length 1
    meta: dict
    path: Path
    origin: str              # "built", "cached" (read from disk) or "revalidated" (bank file touched, same bank)

    def __len__(self) -> int:
        return len(self.questions)


FINGERPRINT_CHARS = 16   # of the agent's fingerprint in an index's file name


def agent_fingerprint(agent: Agent) -> str:
    """A short hash of everything that decides what the agent's encoder makes of a text."""
    return agent.fingerprint()[:FINGERPRINT_CHARS]


def bank_texts(questions: list[str], answers: list[str]) -> list[str]:
    """What is embedded for each bank entry: its question and answer words."""
    return [f"{q} {a}" for q, a in zip(questions, answers)]


def bank_fingerprint(split: str, questions: list[str], answers: list[str]) -> str:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(json.dumps([split, questions, answers]).encode())
    return digest.hexdigest()


def read_bank(world: Path, split: str) -> tuple[list[str], list[str]]:
    questions_file = world / "questions.json"
    rows = [q for q in json.loads(questions_file.read_text())["questions"] if q["split"] == split]
    if not rows:
        raise ValueError(f"{questions_file} has no questions in split {split!r}")
    return [q["question"] for q in rows], [str(q["answer"]) for q in rows]


def source_stat(path: Path) -> dict:
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def index_path(world: Path | str, fingerprint: str, split: str, cache_dir: Path | str | None = None) -> Path:
    directory = Path(cache_dir) if cache_dir is not None else Path(world) / INDEX_DIR_NAME
    return directory / f"{fingerprint}-{split}.npz"


def _json_bytes(value) -> np.ndarray:
    return np.frombuffer(json.dumps(value).encode("utf-8"), dtype=np.uint8)


def _from_json_bytes(array: np.ndarray):
    return json.loads(array.tobytes().decode("utf-8"))


def write_index(path: Path, embeddings: np.ndarray, questions: list[str], answers: list[str], meta: dict) -> None:
    """Atomic: a temporary file in the same directory, renamed over `path`. A directory that cannot be
    written (a read-only world) costs a warning, not the explainer: the index then lives in memory."""
    try:
        _write_index(path, embeddings, questions, answers, meta)
    except OSError as error:
        warnings.warn(f"cannot cache the RelQA index at {path} ({error}); pass cache_dir= to keep it", stacklevel=3)


def _write_index(path: Path, embeddings: np.ndarray, questions: list[str], answers: list[str], meta: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            np.savez(file, embeddings=np.ascontiguousarray(embeddings, dtype=np.float32),
                     bank=_json_bytes({"questions": questions, "answers": answers}), meta=_json_bytes(meta))
        os.chmod(tmp, INDEX_FILE_MODE)   # mkstemp makes it private; the index is as public as the world
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_index(path: Path) -> tuple[np.ndarray, list[str], list[str], dict] | None:
    """The stored index, or None when there is none or it cannot be read (then it is rebuilt)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            embeddings = data["embeddings"]
            bank = _from_json_bytes(data["bank"])
            meta = _from_json_bytes(data["meta"])
    except (OSError, KeyError, ValueError, EOFError):
        return None
    if meta.get("format") != INDEX_FORMAT or len(embeddings) != len(bank["questions"]):
        return None
    return embeddings, bank["questions"], bank["answers"], meta


def embed_bank(agent: Agent, questions: list[str], answers: list[str], progress: bool = True) -> np.ndarray:
    texts = bank_texts(questions, answers)
    chunks = []
    for start in tqdm(range(0, len(texts), EMBED_CHUNK), desc="relqa index", unit="chunk",
                      disable=not progress, leave=False):
        chunks.append(agent.embed_texts(texts[start:start + EMBED_CHUNK]))
    return np.concatenate(chunks).astype(np.float32, copy=False)


def unit_rows(embeddings: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(embeddings, axis=1, keepdims=True)
    return (embeddings / np.maximum(norms, 1e-12)).astype(np.float32)


def load_or_build_index(agent: Agent, world: Path | str, split: str = "val",
                        cache_dir: Path | str | None = None, progress: bool = True) -> RelQAIndex:
    """The bank of `world`'s `split`, embedded by `agent`: read from the cache when it is current,
    otherwise built (with a progress bar) and cached."""
    world = Path(world)
    questions_file = world / "questions.json"
    if not questions_file.exists():
        raise FileNotFoundError(f"{world} is not a built world (no questions.json); "
                                f"run `exag world build --out {world}`")
    fingerprint = agent_fingerprint(agent)
    path = index_path(world, fingerprint, split, cache_dir)
    stat = source_stat(questions_file)
    stored = read_index(path)
    current = stored is not None and stored[3].get("agent") == fingerprint and stored[3].get("split") == split
    if current and stored[3].get("source") == stat:
        embeddings, questions, answers, meta = stored
        return RelQAIndex(questions, answers, embeddings, unit_rows(embeddings), meta, path, "cached")

    questions, answers = read_bank(world, split)
    bank = bank_fingerprint(split, questions, answers)
    if current and stored[3].get("bank") == bank:   # the file was touched or rewritten, the bank is the same
        embeddings, meta = stored[0], dict(stored[3], source=stat)
        write_index(path, embeddings, questions, answers, meta)
        return RelQAIndex(questions, answers, embeddings, unit_rows(embeddings), meta, path, "revalidated")

    started = time.perf_counter()
    embeddings = embed_bank(agent, questions, answers, progress)
    meta = {"format": INDEX_FORMAT, "agent": fingerprint, "split": split, "bank": bank, "source": stat,
            "entries": len(questions), "hidden": int(embeddings.shape[1]), "text": "question answer",
            "build_seconds": round(time.perf_counter() - started, 3)}
    write_index(path, embeddings, questions, answers, meta)
    return RelQAIndex(questions, answers, embeddings, unit_rows(embeddings), meta, path, "built")
