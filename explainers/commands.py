"""`exag train word2vec`, `exag train nle` and `exag explain`: train the models explainers load, and explain
an agent's answer with explainer plugins.

Cheap to import (`exag --help` loads it): the explainers, gensim and torch are imported when a command runs.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from vqa_agent.checkpoints import OWN_NLE
from vqa_agent.world.default import DEFAULT_WORLD, FULL_WORLD_HELP, GAME_WORLD, default_world, rendered_image


def add_train_word2vec_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Train Word2Vec (seeded, deterministic) on a world's questions, answers, reference "
                          "explanations and scene descriptions; save gensim KeyedVectors to OUT.")
    parser.add_argument("--world", type=Path, default=None, help=FULL_WORLD_HELP)
    parser.add_argument("--out", type=Path, required=True, help="file for the vectors (e.g. vectors.kv)")
    parser.add_argument("--dim", type=int, default=None, help="vector size (default: 32)")
    parser.add_argument("--epochs", type=int, default=None, help="passes over the corpus (default: 5)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: 0)")
    parser.set_defaults(run=train_word2vec_command)


def train_word2vec_command(args: argparse.Namespace) -> int:
    from .word_vectors import Word2VecConfig, train_world_word_vectors

    overrides = {k: v for k, v in (("dim", args.dim), ("epochs", args.epochs), ("seed", args.seed)) if v is not None}
    world = default_world(args.world, ("train",), "`exag train word2vec`")
    out, stats = train_world_word_vectors(world, args.out, Word2VecConfig(**overrides))
    print(f"word vectors in {out}: {stats['vocabulary']} words, trained on {stats['sentences']} sentences "
          f"({stats['words']} words) in {stats['seconds']:.1f} s")
    return 0


def add_train_nle_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Train the natural-language explainer for an agent: its outputs on the train questions "
                          "(computed once, cached in OUT/cache) as prefix, the reference explanations as targets; "
                          "validation each epoch, the best model kept in OUT, resumable (run it again).")
    parser.add_argument("--agent", default="default", help="shipped agent name or a directory (default: default)")
    parser.add_argument("--world", type=Path, default=None, help=FULL_WORLD_HELP)
    parser.add_argument("--out", type=Path, default=None,
                        help="directory for the NLE model (default, for an agent in a checkpoint directory: its own, "
                             "DIR/nle, where the nle explainer finds it; a private agent needs it)")
    parser.add_argument("--epochs", type=int, default=None, help="passes over the items (default: 8)")
    parser.add_argument("--max-items", type=int, default=None,
                        help="use the first N train questions (default: 40000; 0: all)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: 0)")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads (default: 1, fastest for this small model when the other core is busy)")
    parser.add_argument("--device", default=None, help="cpu (default), cuda or auto")
    parser.set_defaults(run=train_nle_command)


def train_nle_command(args: argparse.Namespace) -> int:
    from .nle_train import NLETrainingConfig, train_nle

    overrides = {k: v for k, v in (("epochs", args.epochs), ("max_items", args.max_items), ("seed", args.seed),
                                   ("threads", args.threads), ("device", args.device)) if v is not None}
    if overrides.get("max_items") == 0:
        overrides["max_items"] = None
    out = args.out
    if out is None:
        if not (Path(args.agent) / "config.json").exists():
            raise ValueError(f"--out: where to write the NLE model of {args.agent!r} (only an agent in a checkpoint "
                             "directory has one of its own, DIR/nle)")
        out = Path(args.agent) / OWN_NLE
    world = default_world(args.world, ("train", "val"), "`exag train nle`")
    out = train_nle(args.agent, world, out, NLETrainingConfig(**overrides))
    training = json.loads((out / "training.json").read_text())
    print(f"best NLE model in {out}: validation loss {training['val']['loss']:.3f}, exact matches "
          f"{training['val']['exact_match']:.1%} (trained in {training['seconds'] / 60:.1f} min)")
    return 0


def add_explain_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Answer one question about one image and run the chosen explainers on the answer."
    parser.add_argument("--agent", default="default", help="shipped agent name or a directory (default: default)")
    parser.add_argument("--image", required=True, type=Path, help="image file")
    parser.add_argument("--question", required=True)
    parser.add_argument("--explainers", default="attention,objscene,relqa,nle,introspect",
                        help="comma-separated names (default: all)")
    parser.add_argument("--world", type=Path, default=None,
                        help=f"world whose validation questions are the RelQAs bank (default: {DEFAULT_WORLD} "
                             f"when built, else {GAME_WORLD})")
    parser.add_argument("--json", action="store_true", help="print JSON (default: a readable summary)")
    parser.add_argument("--device", default="auto")
    parser.set_defaults(run=explain_command)


def explain_command(args: argparse.Namespace) -> int:
    from vqa_agent.loading import load_agent

    from . import ExplanationRequest, load_explainer, registry

    names = [n.strip() for n in args.explainers.split(",") if n.strip()]
    for name in names:          # a built-in, an installed plugin or "module:Class", checked before any model loads
        try:
            registry.entry(name)
        except ValueError as reason:
            raise SystemExit(str(reason)) from None
    world = default_world(args.world) if "relqa" in names else args.world
    agent = load_agent(args.agent, device=args.device)
    output = agent.answer([rendered_image(args.image)], [args.question])[0]
    request = ExplanationRequest(args.image, args.question, output)
    explanations = []
    for name in names:
        options = {"world": world} if name == "relqa" else {}
        explanations += load_explainer(name, agent, **options).explain_batch([request])
    if args.json:
        print(json.dumps({"question": args.question, "answer": output.answer,
                          "probability": round(output.probability, 4),
                          "explanations": [e.to_dict() for e in explanations]}))
        return 0
    print(f"Q: {args.question}\nA: {output.answer} ({output.probability:.0%})")
    for e in explanations:
        print(f"[{e.explainer}, {e.seconds * 1000:.0f} ms] {_summary(e.kind, e.payload)}")
    return 0


def _summary(kind: str, payload: dict) -> str:
    """One line of an explanation for the terminal."""
    if kind == "attention":
        return ", ".join(f"{o['weight']:.0%} at {[round(v) for v in o['box']]}" for o in payload["objects"]) \
            or "no objects found"
    if kind == "words":
        return ", ".join(w["word"] for w in payload["words"])
    if kind == "qa_pairs":
        return "; ".join(f"{p['question']} {p['answer']}" for p in payload["pairs"])
    return payload["text"]
