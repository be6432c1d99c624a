"""Word vectors for the ObjScene explainer: Word2Vec trained on a world's text, or pretrained vectors.

    exag train word2vec --world data/world --out explainers/data/word2vec-world.kv
    vectors = load_word_vectors("explainers/data/word2vec-world.kv")   # gensim KeyedVectors
    vectors.distance("red", "cube")

The corpus is everything the world says in words, tokenized with the agent's own normalizer so that
the explainer looks words up exactly as the agent reads them:
  - each question followed by its answer ("is there a red cube ? yes" -> one sentence), so answers
    share contexts with the words that ask for them;
  - up to `explanations_per_question` of its reference explanations;
  - scene descriptions generated from scenes.json: one per object ("a large red metal cube") and one
    per scene listing its objects, so that attribute words co-occur the way they co-occur in images.
Only the training split is read by default: held-out images and questions stay unseen, as for the agent.

Training is deterministic for a seed: one worker thread, a fixed corpus order, and a seeded hash for
the initial vectors (gensim's default is Python's `hash`, which changes with every process).
"""
from __future__ import annotations

import json
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from gensim.models import KeyedVectors, Word2Vec
from gensim.models.callbacks import CallbackAny2Vec
from tqdm import tqdm

from vqa_agent.tokenizer import QuestionError, normalize

SHIPPED_VECTORS = Path(__file__).parent / "data" / "word2vec-world.kv"   # trained on data/world
SCENE_WORD_ORDER = ("size", "color", "material", "shape")               # "a large red metal cube"
TEXT_FORMATS = (".txt", ".vec", ".txt.gz", ".vec.gz")                    # word2vec text format
BINARY_FORMATS = (".bin", ".bin.gz")                                     # word2vec C binary format


@dataclass
class Word2VecConfig:
    dim: int = 32                       # vector size; the world's vocabulary is ~100 words
    epochs: int = 5                     # passes over the corpus
    window: int = 5                     # context words on each side
    min_count: int = 1                  # keep every word: every attribute value must have a vector
    skip_gram: bool = True              # skip-gram (better than CBOW on small corpora)
    negative: int = 5                   # negative samples per positive pair
    sample: float = 1e-3                # down-sampling of frequent words ("the", "is")
    seed: int = 0
    splits: tuple[str, ...] = ("train",)  # which of the world's splits to read
    explanations_per_question: int = 2    # reference explanations read per question (10 exist)


def deterministic_hash(text: str) -> int:
    """The seed hash for gensim's initial vectors: the same in every process (unlike `hash`)."""
    return zlib.crc32(text.encode("utf-8"))


def tokens(text: str) -> list[str]:
    """The agent's normalization; text that normalizes to nothing yields no tokens."""
    try:
        return normalize(text)
    except QuestionError:
        return []


def describe_object(obj: dict) -> str:
    return "a " + " ".join(obj[attr] for attr in SCENE_WORD_ORDER)


def describe_scene(scene: dict) -> list[str]:
    """One sentence per object, and one listing the scene's objects ("there are a ..., a ... and a ...")."""
    objects = [describe_object(o) for o in scene["objects"]]
    if not objects:
        return ["there are no objects"]
    listing = objects[0] if len(objects) == 1 else ", ".join(objects[:-1]) + " and " + objects[-1]
    return objects + [f"there {'is' if len(objects) == 1 else 'are'} {listing}"]


def world_sentences(world: Path | str, splits: Iterable[str] = ("train",),
                    explanations_per_question: int = 2) -> list[list[str]]:
    """The world's text as token lists, in file order (the order is part of what makes training
    deterministic). Tokens are interned: a million sentences share one string per word."""
    world = Path(world)
    for name in ("manifest.json", "scenes.json", "questions.json"):
        if not (world / name).exists():
            raise FileNotFoundError(f"{world} is not a built world (no {name}); run `exag world build --out {world}`")
    splits = set(splits)
    interned: dict[str, str] = {}

    def sentence(text: str) -> list[str]:
        return [interned.setdefault(w, w) for w in tokens(text)]

    sentences = []
    for scene in json.loads((world / "scenes.json").read_text())["scenes"]:
        if scene["split"] in splits:
            sentences += [sentence(text) for text in describe_scene(scene)]
    for q in json.loads((world / "questions.json").read_text())["questions"]:
        if q["split"] in splits:
            sentences.append(sentence(q["question"]) + sentence(str(q["answer"])))
            sentences += [sentence(e) for e in q.get("explanations", [])[:explanations_per_question]]
    sentences = [s for s in sentences if s]
    if not sentences:
        raise ValueError(f"{world} has no text in splits {sorted(splits)}")
    return sentences


class _Progress(CallbackAny2Vec):
    """Advances a tqdm bar by epochs."""

    def __init__(self, bar: tqdm) -> None:
        self.bar = bar

    def on_epoch_end(self, model) -> None:
        self.bar.update(1)


def train_word_vectors(sentences: list[list[str]], config: Word2VecConfig = Word2VecConfig(),
                       progress: bool = True) -> KeyedVectors:
    model = Word2Vec(vector_size=config.dim, window=config.window, min_count=config.min_count,
                     sg=int(config.skip_gram), negative=config.negative, sample=config.sample,
                     seed=config.seed, workers=1, hashfxn=deterministic_hash)
    model.build_vocab(sentences)
    with tqdm(total=config.epochs, desc="word2vec", unit="epoch", disable=not progress) as bar:
        model.train(sentences, total_examples=len(sentences), epochs=config.epochs, callbacks=[_Progress(bar)])
    return model.wv


def train_world_word_vectors(world: Path | str, out: Path | str, config: Word2VecConfig = Word2VecConfig(),
                             progress: bool = True) -> tuple[Path, dict]:
    """Trains Word2Vec on a world's text and saves the KeyedVectors to `out` (gensim's native format;
    arrays larger than gensim's limit go to sidecar .npy files next to it), written atomically.
    Returns the path and what was trained on (sentences, words, vocabulary, seconds)."""
    started = time.perf_counter()
    sentences = world_sentences(world, config.splits, config.explanations_per_question)
    vectors = train_word_vectors(sentences, config, progress)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    vectors.save(str(tmp))
    for sidecar in tmp.parent.glob(tmp.name + ".*.npy"):   # move sidecars first, the main file last
        sidecar.replace(out.parent / sidecar.name.replace(tmp.name, out.name, 1))
    tmp.replace(out)
    return out, {"sentences": len(sentences), "words": sum(map(len, sentences)),
                 "vocabulary": len(vectors.index_to_key), "seconds": time.perf_counter() - started}


def load_word_vectors(path: Path | str | None = None) -> KeyedVectors:
    """KeyedVectors from `path` (default: the vectors shipped with the package, trained on data/world).

    Formats, by name: gensim's native format (`KeyedVectors.save`, usually .kv or .model, possibly
    with sidecar .npy files next to it; this is a pickle, so load only files you trust), word2vec
    text (.txt, .vec, optionally .gz) and word2vec C binary (.bin, optionally .gz). Pretrained vectors
    for natural images (e.g. GoogleNews-vectors-negative300.bin) load the same way, from a local path.
    """
    path = Path(path) if path is not None else SHIPPED_VECTORS
    if not path.is_file():
        raise FileNotFoundError(f"no word vectors at {path}; train them with "
                                f"`exag train word2vec --world DIR --out {path}`")
    name = path.name.lower()
    try:
        if name.endswith(TEXT_FORMATS):
            vectors = KeyedVectors.load_word2vec_format(str(path), binary=False)
        elif name.endswith(BINARY_FORMATS):
            vectors = KeyedVectors.load_word2vec_format(str(path), binary=True)
        else:
            vectors = KeyedVectors.load(str(path))
    except FileNotFoundError as error:   # a native file whose sidecar .npy is missing
        raise FileNotFoundError(f"word vectors at {path} are incomplete: {error}") from error
    except Exception as error:  # gensim raises pickle, unicode, value and EOF errors on a bad file
        raise ValueError(f"{path} is not a word-vector file gensim can read ({type(error).__name__}: {error}); "
                         f"expected gensim's native format or word2vec {TEXT_FORMATS + BINARY_FORMATS}") from error
    if not isinstance(vectors, KeyedVectors):   # e.g. a whole saved Word2Vec model
        vectors = getattr(vectors, "wv", None)
        if not isinstance(vectors, KeyedVectors):
            raise ValueError(f"{path} holds no KeyedVectors")
    if len(vectors.index_to_key) == 0:
        raise ValueError(f"{path} holds no word vectors")
    return vectors
