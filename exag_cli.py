"""The `exag` command: one subcommand per job. `exag --help` and `exag COMMAND --help` explain each."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

DEFAULT_WORLD = Path("data/world")


def _world_build(args: argparse.Namespace) -> int:
    from vqa_agent.world.build import WorldConfig, build_world

    config = WorldConfig(images=args.images, pool=args.pool, seed=args.seed,
                         questions_per_image=args.questions_per_image)
    out = build_world(args.out, config, workers=args.workers, force=args.force)
    manifest = json.loads((out / "manifest.json").read_text())
    print(f"world ready in {out}: {manifest['images']} images, {manifest['questions']} questions "
          f"({', '.join(f'{k} {v}' for k, v in manifest['images_per_split'].items())})")
    return 0


def _world_sheet(args: argparse.Namespace) -> int:
    from vqa_agent.world.sheet import write_contact_sheet

    world = _default_world(args.world)
    _render_sheet_images(world, args.n, args.seed, args.split)
    out = write_contact_sheet(world, args.out, n=args.n, seed=args.seed, split=args.split)
    print(f"contact sheet written to {out}")
    return 0


def _render_sheet_images(world: Path, n: int, seed: int, split: str | None) -> None:
    """The images write_contact_sheet will draw (its first random choice), rendered if not yet."""
    from vqa_agent.world.build import ensure_rendered, render_progress

    if not (world / "manifest.json").exists() or render_progress(world)["done"]:
        return
    import numpy as np

    scenes = json.loads((world / "scenes.json").read_text())["scenes"]
    with_questions = {q["image_index"] for q in json.loads((world / "questions.json").read_text())["questions"]}
    candidates = [s for s in scenes if (split is None or s["split"] == split) and s["image_index"] in with_questions]
    if candidates:
        for i in np.random.default_rng(seed).choice(len(candidates), min(n, len(candidates)), replace=False):
            ensure_rendered(world, candidates[i]["image_filename"])


def _world_parse(args: argparse.Namespace) -> int:
    from vqa_agent.world.parser import Unparseable, parse
    from vqa_agent.world.programs import program_to_json

    status = 0
    for text in args.questions:
        try:
            result = {"question": text, "gradable": True, "program": program_to_json(parse(text).program())}
        except Unparseable as reason:
            status = 1
            result = {"question": text, "gradable": False, "reason": str(reason)}
        print(json.dumps(result))
    return status


def _train_agent(args: argparse.Namespace) -> int:
    from vqa_agent.config import preset
    from vqa_agent.train import train_agent

    overrides = {k: v for k, v in (("epochs", args.epochs), ("seed", args.seed)) if v is not None}
    world = _default_world(args.world, ("train", "val"), "`exag train agent`")
    out = train_agent(world, args.out, preset(args.preset, **overrides), device=args.device)
    training = json.loads((out / "training.json").read_text())
    print(f"best agent in {out}: validation accuracy {training['val']['accuracy']:.1%}")
    return 0


def _train_word2vec(args: argparse.Namespace) -> int:
    from explainers.word_vectors import Word2VecConfig, train_world_word_vectors

    overrides = {k: v for k, v in (("dim", args.dim), ("epochs", args.epochs), ("seed", args.seed)) if v is not None}
    world = _default_world(args.world, ("train",), "`exag train word2vec`")
    out, stats = train_world_word_vectors(world, args.out, Word2VecConfig(**overrides))
    print(f"word vectors in {out}: {stats['vocabulary']} words, trained on {stats['sentences']} sentences "
          f"({stats['words']} words) in {stats['seconds']:.1f} s")
    return 0


def _train_nle(args: argparse.Namespace) -> int:
    from explainers.nle_train import NLETrainingConfig, train_nle

    overrides = {k: v for k, v in (("epochs", args.epochs), ("max_items", args.max_items), ("seed", args.seed),
                                   ("threads", args.threads), ("device", args.device)) if v is not None}
    if overrides.get("max_items") == 0:
        overrides["max_items"] = None
    world = _default_world(args.world, ("train", "val"), "`exag train nle`")
    out = train_nle(args.agent, world, args.out, NLETrainingConfig(**overrides))
    training = json.loads((out / "training.json").read_text())
    print(f"best NLE model in {out}: validation loss {training['val']['loss']:.3f}, exact matches "
          f"{training['val']['exact_match']:.1%} (trained in {training['seconds'] / 60:.1f} min)")
    return 0


def _ask(args: argparse.Namespace) -> int:
    from vqa_agent.agent import VQAAgent

    agent = VQAAgent.from_pretrained(args.agent, device=args.device)
    for out in agent.answer([_image_file(args.image)] * len(args.questions), args.questions):
        print(json.dumps({
            "question": out.question, "answer": out.answer, "probability": round(out.probability, 4),
            "top_k": [[a, round(p, 4)] for a, p in out.top_k], "unknown_words": out.unknown_words,
            "outside_words": out.outside_words, "refusal": out.refusal,
            "spatial_attention": out.spatial_attention.round(4).tolist(),
            "proposals": [{"box": [round(v, 1) for v in p.box], "score": round(p.score, 3),
                           "attention": round(p.attention, 4), "mask_pixels": int(p.mask.sum()),
                           "attributes": {a: [v, round(q, 3)] for a, (v, q) in p.attributes.items()}}
                          for p in out.proposals],
            "concept_probabilities": {k: round(v, 4) for k, v in out.concept_probabilities.items()},
        }))
    return 0


def _explain(args: argparse.Namespace) -> int:
    from explainers import EXPLAINERS, ExplanationRequest, load_explainer
    from vqa_agent.agent import VQAAgent

    names = [n.strip() for n in args.explainers.split(",") if n.strip()]
    unknown = [n for n in names if n not in EXPLAINERS]
    if unknown:
        raise SystemExit(f"unknown explainer(s): {', '.join(unknown)}; choose from {', '.join(EXPLAINERS)}")
    world = _default_world(args.world) if "relqa" in names else args.world
    agent = VQAAgent.from_pretrained(args.agent, device=args.device)
    output = agent.answer([_image_file(args.image)], [args.question])[0]
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
        payload = e.payload
        if e.kind == "attention":
            summary = ", ".join(f"{o['weight']:.0%} at {[round(v) for v in o['box']]}" for o in payload["objects"]) \
                or "no objects found"
        elif e.kind == "words":
            summary = ", ".join(w["word"] for w in payload["words"])
        elif e.kind == "qa_pairs":
            summary = "; ".join(f"{p['question']} {p['answer']}" for p in payload["pairs"])
        else:
            summary = payload["text"]
        print(f"[{e.explainer}, {e.seconds * 1000:.0f} ms] {summary}")
    return 0


def _bench_explainers(args: argparse.Namespace) -> int:
    from experiments.benchmark.explainer_latency import main as bench_main

    from vqa_agent.world.build import POOL_SPLIT, missing_images, render_missing

    world = _default_world(args.world)
    if (world / "manifest.json").exists() and missing_images(world, splits=(POOL_SPLIT,)):
        print(f"rendering the rest of {world}'s game pool first (the benchmark draws images from all of it)",
              flush=True)
        render_missing(world, splits=(POOL_SPLIT,))
    return bench_main(["--agent", str(args.agent), "--world", str(world), "--repeats", str(args.repeats)] +
                      (["--json", str(args.json)] if args.json else []))


def _bench_vqa(args: argparse.Namespace) -> int:
    from experiments.benchmark.vqa_accuracy import main as bench_main

    world = _default_world(args.world, ("test", "pool"), "`exag bench vqa`")
    return bench_main(["--agent", str(args.agent), "--world", str(world)] +
                      (["--json", str(args.json)] if args.json else [])) or 0


def _bench_nle(args: argparse.Namespace) -> int:
    from experiments.benchmark.nle_metrics import main as bench_main

    world = _default_world(args.world, ("test",), "`exag bench nle`")
    return bench_main(["--agent", str(args.agent), "--world", str(world)] +
                      (["--json", str(args.json)] if args.json else []) +
                      (["--max-items", str(args.max_items)] if args.max_items else []) +
                      (["--model", str(args.model)] if args.model else []) +
                      (["--threads", str(args.threads)] if args.threads else [])) or 0


def _bench_card(args: argparse.Namespace) -> int:
    from experiments.benchmark.card import main as bench_main

    world = _default_world(args.world, ("test",), "`exag bench card`")
    return bench_main(["--agent", str(args.agent), "--world", str(world), "--out", str(args.out),
                       "--seed", str(args.seed)] +
                      (["--max-items", str(args.max_items)] if args.max_items else []) +
                      (["--explainers", args.explainers] if args.explainers else []) +
                      (["--nle-model", str(args.nle_model)] if args.nle_model else []) +
                      (["--threads", str(args.threads)] if args.threads else [])) or 0


def _bench_zoo(args: argparse.Namespace) -> int:
    from experiments.benchmark.zoo import main as bench_main
    return bench_main([str(d) for d in args.cards] + (["--out", str(args.out)] if args.out else []))


def _bench_clevr(args: argparse.Namespace) -> int:
    from experiments.benchmark.clevr_phrased import main as bench_main
    world = _default_world(args.world, ("test",), "`exag bench clevr`")
    extra = ["--clevr-generator", str(args.clevr_generator)] if args.clevr_generator else []
    bench_main(["--world", str(world), "--agents", args.agents, "--images", str(args.images),
                "--seed", str(args.seed)] + extra + (["--json", str(args.json)] if args.json else []))
    return 0


def _bench_latency(args: argparse.Namespace) -> int:
    from experiments.benchmark.vqa_latency import main as bench_main

    return bench_main(["--agent", str(args.agent), "--repeats", str(args.repeats)] +
                      (["--json", str(args.json)] if args.json else [])) or 0


def _bench_secret_attacks(args: argparse.Namespace) -> int:
    from experiments.benchmark.secret_attacks import main as bench_main

    world = _game_world() if args.world == GAME_WORLD else args.world
    return bench_main(["--agent", str(args.agent), "--world", str(world), "--games", str(args.games),
                       "--medoid-games", str(args.medoid_games), "--seed", str(args.seed)] +
                      (["--json", str(args.json)] if args.json else [])) or 0


GAME_WORLD = Path("data/game-world")
WORLD_HELP = f"built world (default: {DEFAULT_WORLD} when built, else {GAME_WORLD})"
FULL_WORLD_HELP = f"built world with train, val and test splits (default: {DEFAULT_WORLD})"


def _default_world(world: Path | None, needs: tuple[str, ...] = (), command: str = "this command") -> Path:
    """The one default-world rule of every command: --world when given; else the whole world
    (data/world) when built; else the game world (the pool and the RelQA bank: the val and pool splits),
    laid out from the shipped scenes and questions on first use (images rendered on demand). A command
    that needs other splits (`needs`) says how to build the whole world instead."""
    if world is not None:
        return world
    if (DEFAULT_WORLD / "manifest.json").exists():
        return DEFAULT_WORLD
    from vqa_agent.world.build import GAME_WORLD_SPLITS

    missing = [split for split in needs if split not in GAME_WORLD_SPLITS]
    if missing:
        raise FileNotFoundError(
            f"{command} needs the whole world ({', '.join(missing)} split{'s' * (len(missing) > 1)}), and "
            f"{DEFAULT_WORLD} is not built; {GAME_WORLD} (what the game uses) holds only the val and pool "
            f"splits. Build it once with `exag world build --out {DEFAULT_WORLD}` (about 6 minutes on 2 cores, "
            "0.5 GB), or pass --world DIR")
    return _game_world()


def _game_world() -> Path:
    """data/game-world: laid out in seconds from the shipped scenes and questions (byte-identical to
    the build's), its images rendered on demand and by `exag serve`'s background renderer."""
    from vqa_agent.world.build import GAME_WORLD_SPLITS, WorldConfig, build_world, is_built, shipped_source

    config = WorldConfig(splits=GAME_WORLD_SPLITS)
    if not is_built(GAME_WORLD, config):
        print(f"laying out the game world (the game pool and the RelQA question bank) in {GAME_WORLD}"
              f"{'' if shipped_source(config) else ' (building it: this takes minutes, once)'}", flush=True)
    return build_world(GAME_WORLD, config, lazy=True)


def _image_file(path: Path) -> Path:
    """An image of a built world that is not rendered yet (a lazily laid out game world) is rendered now."""
    world = path.parent.parent
    if not path.exists() and path.parent.name == "images" and (world / "manifest.json").exists():
        from vqa_agent.world.build import ensure_rendered

        ensure_rendered(world, path.name)
    return path


def _seed_pool_embeddings(world: Path, agent: str, data_dir: Path) -> None:
    """Stores the shipped pool embeddings of the agent (the default one's ship with the game world) where
    the game pool reads them, so that a first start neither renders nor embeds the whole pool."""
    from server.agents import checkpoint_fingerprint
    from server.pool import GamePool
    from vqa_agent.world.build import shipped_pool_embeddings

    try:
        embeddings = shipped_pool_embeddings(world, checkpoint_fingerprint(agent))
    except (OSError, ValueError):      # not a shipped agent name nor a checkpoint directory
        return
    if embeddings is None:
        return
    paths = GamePool(world).embeddings_paths(agent, data_dir / "cache")
    if any(path.exists() for path in paths):
        return
    import numpy as np

    for path in paths:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.stem}.shipped.npy")
            np.save(tmp, embeddings)
            tmp.replace(path)
            return
        except OSError:
            continue


_background_render = None


def _serve_world(world: Path | None, agent: str = "default", data_dir: Path = Path("data/server")) -> Path:
    """The world games draw from (the default-world rule), with the shipped pool embeddings in place and
    a low-priority background process rendering the images a lazily laid out world still lacks (the
    game renders the images it needs on demand, so the first game needs none of them)."""
    global _background_render
    import atexit

    from vqa_agent.world.build import render_progress, start_background_render

    world = _default_world(world)
    if not (world / "manifest.json").exists():
        raise FileNotFoundError(f"{world} is not a built world; build it with `exag world build --out {world}`")
    _seed_pool_embeddings(world, agent, data_dir)
    if _background_render is None and not render_progress(world)["done"]:
        _background_render = start_background_render(world)
        if _background_render is not None:
            progress = render_progress(world)
            print(f"rendering {world}'s remaining {progress['total'] - progress['rendered']} images in the "
                  f"background (pid {_background_render.pid}, low priority); games render what they need "
                  "at once", flush=True)
            atexit.register(_background_render.terminate)
    return world


def _above_zero(kind):
    """An argparse type: a finite number of `kind` above 0."""
    def parse(text: str):
        value = kind(text)
        if not 0 < value < float("inf"):
            raise argparse.ArgumentTypeError(f"must be a number above 0, not {text}")
        return value
    parse.__name__ = kind.__name__        # argparse's message: "invalid float value: 'x'"
    return parse


def _serve(args: argparse.Namespace) -> int:
    from server.config import ServerConfig
    from server.serve import redis_for, run_web

    config = ServerConfig(host=args.host, port=args.port, redis_url=args.redis_url, data_dir=args.data_dir,
                          world=_serve_world(args.world, args.agent, args.data_dir), agent=args.agent,
                          admin_token=args.admin_token or "",
                          max_connections_per_address=args.max_connections_per_address,
                          max_events_per_second=args.max_events_per_second, event_burst=args.event_burst,
                          **({"studies_dir": args.studies} if args.studies else {}))
    def ready(app) -> None:       # once the web process answers
        base = f"http://{'127.0.0.1' if args.host in ('0.0.0.0', '::') else args.host}:{args.port}"
        print(f"\nExAG is ready (agent {config.agent}, world {config.world}, Redis {config.redis_url}; "
              f"{'the development server' if args.dev else 'gunicorn'}).")
        print(f"  play (at-will demo):    {base}/?study=demo")
        print(f"  play (controlled demo): {base}/?study=demo-controlled&arm=both")
        print(f"  rating task:            {base}/rate?rater=ID&sig=...  (issue signed rater links on the admin page)")
        print(f"  admin:                  {base}/admin?token={config.admin_token}")
        print("Stop with Ctrl-C.", flush=True)

    with redis_for(config):      # the embedded Redis unless a URL is given; stopped on Ctrl-C and SIGTERM
        _check_study_files(config)
        workers = None
        if args.workers:             # this machine's inference workers, restarted when one dies
            from server.worker import WorkerProcesses, worker_arguments
            workers = WorkerProcesses(worker_arguments(config, args.threads), args.workers)
            print(f"started {args.workers} inference worker(s) ({args.threads} torch thread(s) each): "
                  f"pids {' '.join(map(str, workers.pids))}", flush=True)
        try:
            return run_web(config, dev=args.dev, threads=args.web_threads, log_requests=args.log,
                           trusted_proxies=args.trusted_proxies, ready=ready)
        finally:
            if workers is not None:
                workers.stop()


def _check_study_files(config) -> None:
    """Before anything starts: a study file that is malformed or would change a stored study's
    pre-registration stops `exag serve` with one line; a paid study playing a public agent is warned of."""
    from server.store import Store
    from server.study_check import check_study_files

    store = Store.connect(config.redis_url)
    try:
        for warning in check_study_files(config.studies_dir, store, config.agent):
            print(f"warning: {warning}", flush=True)
    finally:
        store.close()


def _worker(args: argparse.Namespace) -> int:
    import os

    from server.inference import BatchSettings
    from server.worker import WorkerConfig, run_worker

    url = args.redis_url or os.environ.get("REDIS_URL")
    if not url:
        raise ValueError("pass --redis-url URL (or set REDIS_URL): the game server's Redis")
    world = _default_world(args.world)
    return run_worker(WorkerConfig(url, world, args.data_dir, args.agent, args.device, args.threads,
                                   json.loads(args.explainer_options) if args.explainer_options else {},
                                   BatchSettings(args.max_batch_rounds, args.max_wait_ms, args.batch_invariant),
                                   feature_cache=args.feature_cache, warm_pool=args.warm_pool))


def _bot(args: argparse.Namespace) -> int:
    from experiments.benchmark import write_report
    from game.players import SimplePlayer
    from server.bot import DEMO_CONTROLLED_ARMS, format_load, parse_mix, play_games, run_load

    if args.players is not None:      # the load test
        arms = tuple(a.strip() for a in args.arms.split(",") if a.strip()) if args.arms else DEMO_CONTROLLED_ARMS
        report = run_load(args.url, args.players, args.duration, parse_mix(args.mix), arms=arms,
                          server_pids=args.server_pid or (), reply_timeout_s=args.timeout, seed=args.seed)
        print(format_load(report))
        write_report(args.json, report)
        return 0
    report = play_games(args.url, args.games, args.setting, args.arm, args.study,
                        SimplePlayer(questions_per_game=args.questions, seed=args.seed))
    print(f"{report['games']} games, {report['wins']} won; ask-to-answer p50 "
          f"{report['ask_to_answer_ms'].get('p50', float('nan')):.0f} ms, p95 "
          f"{report['ask_to_answer_ms'].get('p95', float('nan')):.0f} ms")
    for error in report["errors"]:
        print(f"  error: {error}", file=sys.stderr)
    write_report(args.json, report)
    return 1 if report["errors"] else 0


def _export(args: argparse.Namespace) -> int:
    from server.embedded_redis import EmbeddedRedis
    from server.export import write_export
    from server.store import Store

    embedded = None
    url = args.redis_url
    if url is None:
        embedded = EmbeddedRedis(args.data_dir / "redis")
        if not embedded.alive() and not embedded.has_data():
            raise FileNotFoundError(f"no game data in {args.data_dir} (no Redis there); pass --data-dir or --redis-url")
        url = embedded.start().url
    try:
        events = list(Store.connect(url).events())
        written = write_export(events, args.out, args.format)
    finally:
        if embedded is not None:
            embedded.stop()
    print(f"{len(events)} events exported to {args.out}: {', '.join(p.name for p in written)}")
    return 0


def _exclude_flags(text: str | None) -> frozenset[str] | None:
    """--exclude fast_games,straight_lined -> those flags (analyze checks them); "none" or "" -> none;
    not given -> None (analyze's default: a pre-registered study's registered exclusions, else none)."""
    if text is None:
        return None
    return frozenset(f.strip() for f in text.split(",") if f.strip() and f.strip() != "none")


def _analyze(args: argparse.Namespace) -> int:
    from experiments.analysis import AnalysisError, analyze, load_tables
    from experiments.analysis.write import format_summary, write_report

    if (args.data is None) == (args.redis_url is None):
        raise ValueError("pass one of --data PATH (an `exag export` directory or a server data directory such as "
                         "data/server) or --redis-url URL")
    exclude = _exclude_flags(args.exclude)
    try:
        tables = load_tables(args.redis_url or args.data, studies=args.study or None)
        report = analyze(tables, bench_dir=args.bench, progress=True, no_exclusions=args.no_exclusions,
                         **({"exclude_flags": exclude} if exclude is not None else {}))
    except AnalysisError as error:
        print(f"exag: error: {error}", file=sys.stderr)
        return 2
    written = write_report(report, args.out, progress=True)
    print(format_summary(report, written))
    return 0


def _simulation_inputs(args: argparse.Namespace, what: str):
    """The study and the player mix of `exag simulate` (and its `power`), checked before any world is laid out."""
    from game.study import load_study
    from server.simulate import parse_players, study_file

    if args.study is None or args.out is None:
        raise ValueError(f"{what} needs --study STUDY.json and --out DIR")
    return load_study(study_file(args.study)), parse_players(args.players)


def _simulate(args: argparse.Namespace) -> int:
    from server.simulate import SimulationConfig, format_summary, simulate

    study, players = _simulation_inputs(args, "exag simulate")
    if args.participants is None or args.participants < 1:
        raise ValueError("exag simulate needs --participants N (at least 1)")
    token = args.admin_token or os.environ.get("EXAG_ADMIN_TOKEN", "")
    if args.url and not token:
        raise ValueError("--url needs the server's admin token (--admin-token or EXAG_ADMIN_TOKEN): the study is "
                         "created and its events exported through the admin pages")
    world = _default_world(args.world)
    if not args.url:
        _seed_pool_embeddings(world, args.agent, Path("data/server"))
    summary = simulate(SimulationConfig(study=args.study, participants=args.participants, out=args.out,
                                        players=players, world=world, agent=args.agent, url=args.url,
                                        admin_token=token, seed=args.seed, threads=args.threads,
                                        export_format=args.format, explanation_weight=_assumed_weight(args)))
    print(format_summary(summary))
    print(f"export: {summary['export']} (exag analyze --data {args.out} --out REPORT_DIR); "
          f"summary: {args.out / 'summary.json'}")
    return 1 if summary["errors"] else 0


def _simulate_power(args: argparse.Namespace) -> int:
    from experiments.power import PowerConfig, format_power, parse_sizes, power

    study, players = _simulation_inputs(args, "exag simulate power")
    sizes = parse_sizes(args.sizes)
    if study.kind != "controlled":
        raise ValueError(f"{args.study}: power is computed on Table 1, which needs a controlled study")
    if args.repeats < 1:
        raise ValueError(f"--repeats must be at least 1, got {args.repeats}")
    world = _default_world(args.world)
    _seed_pool_embeddings(world, args.agent, Path("data/server"))
    report = power(PowerConfig(study=args.study, sizes=sizes, repeats=args.repeats, out=args.out, players=players,
                               world=world, agent=args.agent, seed=args.seed, processes=args.processes,
                               threads=args.threads, explanation_weight=_assumed_weight(args)))
    print(format_power(report))
    return 1 if report["errors"] else 0


def _assumed_weight(args: argparse.Namespace) -> float | None:
    """--null or --explanation-weight W (not both): the assumed effect of explanations; None: the presets'."""
    if args.null and args.explanation_weight is not None:
        raise ValueError("--null is --explanation-weight 0: give one of them")
    if args.explanation_weight is not None and not 0 <= args.explanation_weight < float("inf"):
        raise ValueError(f"--explanation-weight must be a number >= 0, got {args.explanation_weight}")
    return 0.0 if args.null else args.explanation_weight


def _assumption_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "the assumed effect of explanations",
        "A simulated participant's benefit from explanations is an input, not a finding: it reads each explanation "
        "against what it sees and moves its trust in the round's answer by EXPLANATION_WEIGHT log-odds per unit of "
        "fit (0 to 1) above 0.75. A simulation shows what the game and the analysis do under that assumption, "
        "never whether explanations help people.")
    group.add_argument("--explanation-weight", type=float, default=None, metavar="W",
                       help="the same weight for every preset (default: each preset's own, careful 5, hasty 3, "
                            "over-trusting 6, ignores-explanations 0); summary.json records it under 'assumed'")
    group.add_argument("--null", action="store_true",
                       help="explanations change nothing (--explanation-weight 0; participants still buy them at "
                            "will): checks the false-positive rate of the whole pipeline end to end")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="exag", description="ExAG: explanation-assisted image guessing "
                                     "games, their agents, explainers and analysis.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    world = commands.add_parser("world", help="build and inspect the synthetic CLEVR-compatible world",
                                description="Build and inspect the synthetic CLEVR-compatible world.")
    world_commands = world.add_subparsers(dest="world_command", required=True, metavar="WORLD_COMMAND")

    build = world_commands.add_parser(
        "build", help="render scenes and generate questions into a directory",
        description="Render scenes, masks and questions (with programs, answers and reference explanations) "
                    "into DIR. Re-running with the same settings does nothing; an interrupted build resumes.")
    build.add_argument("--out", type=Path, default=DEFAULT_WORLD, help=f"output directory (default: {DEFAULT_WORLD})")
    build.add_argument("--images", type=int, default=10_000, help="train+val+test images (default: 10000)")
    build.add_argument("--pool", type=int, default=1_500, help="game pool images held out from training (default: 1500)")
    build.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    build.add_argument("--questions-per-image", type=int, default=10, help="questions per image (default: 10)")
    build.add_argument("--workers", type=int, default=None, help="rendering processes (default: one per core)")
    build.add_argument("--force", action="store_true", help="replace a world built with other settings")
    build.set_defaults(run=_world_build)

    sheet = world_commands.add_parser("sheet", help="draw sample scenes with their questions and answers",
                                      description="Write a PNG contact sheet of sample scenes with questions, "
                                                  "answers and a reference explanation.")
    sheet.add_argument("--world", type=Path, default=None, help=WORLD_HELP)
    sheet.add_argument("--out", type=Path, default=Path("data/contact_sheet.png"), help="PNG to write")
    sheet.add_argument("--n", type=int, default=8, help="number of scenes (default: 8)")
    sheet.add_argument("--seed", type=int, default=0, help="which scenes to pick (default: 0)")
    sheet.add_argument("--split", choices=["train", "val", "test", "pool"], default=None, help="only this split")
    sheet.set_defaults(run=_world_sheet)

    parse = world_commands.add_parser("parse", help="parse typed questions into programs",
                                      description="Print, as JSON lines, the program of each question, or "
                                                  "gradable=false when it is outside the world's language.")
    parse.add_argument("questions", nargs="+", help="questions, each one argument")
    parse.set_defaults(run=_world_parse)

    train = commands.add_parser("train", help="train models (the VQA agent)", description="Train models.")
    train_commands = train.add_subparsers(dest="train_command", required=True, metavar="WHAT")
    agent = train_commands.add_parser(
        "agent", help="train a VQA agent on a built world",
        description="Train a VQA agent preset on a world: progress bar with loss and running accuracy, "
                    "validation each epoch, the best checkpoint kept in OUT, resumable (run it again).")
    agent.add_argument("--preset", required=True, help="tiny, weak, medium or strong")
    agent.add_argument("--world", type=Path, default=None, help=FULL_WORLD_HELP)
    agent.add_argument("--out", type=Path, required=True, help="directory for the agent")
    agent.add_argument("--epochs", type=int, default=None, help="override the preset's epochs")
    agent.add_argument("--seed", type=int, default=None, help="override the preset's seed")
    agent.add_argument("--device", default="auto", help="auto (GPU when present), cpu or cuda")
    agent.set_defaults(run=_train_agent)
    word2vec = train_commands.add_parser(
        "word2vec", help="train the ObjScene explainer's word vectors on a world's text",
        description="Train Word2Vec (seeded, deterministic) on a world's questions, answers, reference "
                    "explanations and scene descriptions; save gensim KeyedVectors to OUT.")
    word2vec.add_argument("--world", type=Path, default=None, help=FULL_WORLD_HELP)
    word2vec.add_argument("--out", type=Path, required=True, help="file for the vectors (e.g. vectors.kv)")
    word2vec.add_argument("--dim", type=int, default=None, help="vector size (default: 32)")
    word2vec.add_argument("--epochs", type=int, default=None, help="passes over the corpus (default: 5)")
    word2vec.add_argument("--seed", type=int, default=None, help="random seed (default: 0)")
    word2vec.set_defaults(run=_train_word2vec)
    nle = train_commands.add_parser(
        "nle", help="train the NLE explainer's GPT-2 on an agent's outputs and a world's explanations",
        description="Train the natural-language explainer for an agent: its outputs on the train questions "
                    "(computed once, cached in OUT/cache) as prefix, the reference explanations as targets; "
                    "validation each epoch, the best model kept in OUT, resumable (run it again).")
    nle.add_argument("--agent", default="default", help="shipped agent name or a directory (default: default)")
    nle.add_argument("--world", type=Path, default=None, help=FULL_WORLD_HELP)
    nle.add_argument("--out", type=Path, required=True, help="directory for the NLE model")
    nle.add_argument("--epochs", type=int, default=None, help="passes over the items (default: 5)")
    nle.add_argument("--max-items", type=int, default=None, help="use the first N train questions (default: 40000; 0: all)")
    nle.add_argument("--seed", type=int, default=None, help="random seed (default: 0)")
    nle.add_argument("--threads", type=int, default=None, help="CPU threads (default: 1, fastest for this small "
                                                                 "model when the other core is busy)")
    nle.add_argument("--device", default=None, help="cpu (default), cuda or auto")
    nle.set_defaults(run=_train_nle)

    ask = commands.add_parser("ask", help="ask an agent questions about an image",
                              description="Print the agent's outputs (answer, top-k, attention, proposals, "
                                          "concepts) as one JSON line per question.")
    ask.add_argument("--agent", default="default", help="shipped agent name or a directory (default: default)")
    ask.add_argument("--image", required=True, type=Path, help="image file")
    ask.add_argument("questions", nargs="+", help="questions, each one argument")
    ask.add_argument("--device", default="auto")
    ask.set_defaults(run=_ask)

    explain = commands.add_parser("explain", help="explain an agent's answer with explainer plugins",
                                  description="Answer one question about one image and run the chosen "
                                              "explainers on the answer.")
    explain.add_argument("--agent", default="default", help="shipped agent name or a directory (default: default)")
    explain.add_argument("--image", required=True, type=Path, help="image file")
    explain.add_argument("--question", required=True)
    explain.add_argument("--explainers", default="attention,objscene,relqa,nle,introspect",
                         help="comma-separated names (default: all)")
    explain.add_argument("--world", type=Path, default=None,
                         help=f"world whose validation questions are the RelQAs bank (default: {DEFAULT_WORLD} "
                              f"when built, else {GAME_WORLD})")
    explain.add_argument("--json", action="store_true", help="print JSON (default: a readable summary)")
    explain.add_argument("--device", default="auto")
    explain.set_defaults(run=_explain)

    bench = commands.add_parser("bench", help="benchmarks that print and save measured figures",
                                description="Benchmarks of the agents.")
    bench_commands = bench.add_subparsers(dest="bench_command", required=True, metavar="WHAT")
    vqa = bench_commands.add_parser("vqa", help="accuracy on test, pool and player-style questions",
                                    description="Accuracy overall, per question type and answer type.")
    vqa.add_argument("--agent", default="default")
    vqa.add_argument("--world", type=Path, default=None, help=FULL_WORLD_HELP)
    vqa.add_argument("--json", type=Path, help="write the results here")
    vqa.set_defaults(run=_bench_vqa)
    clevr = bench_commands.add_parser(
        "clevr", help="agents and parser on CLEVR-phrased questions and on held-out phrasings",
        description="Questions written by CLEVR's own generator (when it is on disk) about the world's test "
                    "scenes, and the world's held-out phrasings: accuracy by type, parser coverage.")
    clevr.add_argument("--world", type=Path, default=None, help=FULL_WORLD_HELP)
    clevr.add_argument("--agents", default="weak,medium,strong")
    clevr.add_argument("--clevr-generator", type=Path, default=None,
                       help="CLEVR's question_generation directory (clevr-dataset-gen); skipped when absent")
    clevr.add_argument("--images", type=int, default=400)
    clevr.add_argument("--seed", type=int, default=5)
    clevr.add_argument("--json", type=Path, help="write the results here")
    clevr.set_defaults(run=_bench_clevr)
    latency = bench_commands.add_parser("latency", help="p50/p95 of one question over 5 and 20 images",
                                        description="Latency of one question over 5 and over 20 images, with "
                                                    "new images (cold) and images seen before (warm).")
    latency.add_argument("--agent", default="default")
    latency.add_argument("--repeats", type=int, default=30)
    latency.add_argument("--json", type=Path, help="write the results here")
    latency.set_defaults(run=_bench_latency)
    nle_bench = bench_commands.add_parser(
        "nle", help="NLG metrics and e-ViL scores of the NLE explainer's explanations",
        description="BLEU-4, METEOR, ROUGE-L, CIDEr, BERTScore and e-ViL's S_E/S_T/S_O of the nle explainer on "
                    "the correctly answered test questions, beside a random-explanation baseline.")
    nle_bench.add_argument("--agent", default="default")
    nle_bench.add_argument("--world", type=Path, default=None, help=FULL_WORLD_HELP)
    nle_bench.add_argument("--json", type=Path, help="write the results here")
    nle_bench.add_argument("--max-items", type=int, default=None, help="only the first N test questions")
    nle_bench.add_argument("--model", default=None, help="NLE model directory (default: the one shipped for the agent)")
    nle_bench.add_argument("--threads", type=int, default=None, help="CPU threads (default: torch's choice)")
    nle_bench.set_defaults(run=_bench_nle)
    card_bench = bench_commands.add_parser(
        "card", help="every explainer benchmarked the way the field does, in one card (card.json, card.md, plots)",
        description="Grading, e-ViL, F1@ExplanationScore, faithfulness tests, attention localisation and the "
                    "randomisation sanity check of every explainer (shams included) on one agent; "
                    "`exag analyze --bench OUT` shows the card beside a study.")
    card_bench.add_argument("--agent", default="default")
    card_bench.add_argument("--world", type=Path, default=None, help=FULL_WORLD_HELP)
    card_bench.add_argument("--out", type=Path, required=True, help="directory for card.json, card.md and the plots")
    card_bench.add_argument("--max-items", type=int, default=None, help="test questions sampled (default 400)")
    card_bench.add_argument("--explainers", default=None, help="comma-separated explainer names (default: all)")
    card_bench.add_argument("--nle-model", default=None, help="NLE model directory (default: the agent's shipped one)")
    card_bench.add_argument("--seed", type=int, default=0)
    card_bench.add_argument("--threads", type=int, default=None, help="CPU threads (default: torch's choice)")
    card_bench.set_defaults(run=_bench_card)
    zoo_bench = bench_commands.add_parser(
        "zoo", help="several agents' cards side by side (each real explainer beside its sham)",
        description="Reads card.json files written by `exag bench card` and prints one row per agent.")
    zoo_bench.add_argument("cards", nargs="+", type=Path, help="directories written by `exag bench card`")
    zoo_bench.add_argument("--out", type=Path, default=None, help="also write the table to this markdown file")
    zoo_bench.set_defaults(run=_bench_zoo)
    explainers_bench = bench_commands.add_parser(
        "explainers", help="latency of each explainer and of controlled (N=5) and at-will (N=20) rounds",
        description="p50/p95 of each explainer on one request and of whole game rounds with explanations.")
    explainers_bench.add_argument("--agent", default="default")
    explainers_bench.add_argument("--world", type=Path, default=None, help=WORLD_HELP)
    explainers_bench.add_argument("--repeats", type=int, default=40)
    explainers_bench.add_argument("--json", type=Path, help="write the results here")
    explainers_bench.set_defaults(run=_bench_explainers)
    attacks_bench = bench_commands.add_parser(
        "secret-attacks", help="how often a program finds the secret from what a player is sent",
        description="Plays games through the server's interface and measures two attacks: the medoid of the shown "
                    "images' embeddings (nothing bought) and replaying the public agent after one bought at-will round.")
    attacks_bench.add_argument("--agent", default="default")
    attacks_bench.add_argument("--world", type=Path, default=GAME_WORLD)
    attacks_bench.add_argument("--games", type=int, default=40, help="at-will games of the replay attack")
    attacks_bench.add_argument("--medoid-games", type=int, default=200, help="games per setting of the medoid attack")
    attacks_bench.add_argument("--seed", type=int, default=0, help="the server's seed")
    attacks_bench.add_argument("--json", type=Path, help="write the results here")
    attacks_bench.set_defaults(run=_bench_secret_attacks)

    serve = commands.add_parser("serve", help="start the game server (embedded Redis, default world and agent)",
                                description="Start the game: Flask-SocketIO on Redis (a private redis-server in "
                                "--data-dir unless --redis-url or REDIS_URL is given), the default agent and its "
                                "explainers. Prints the players' and the admin's URLs.")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=5000)
    serve.add_argument("--redis-url", default=None, help="use this Redis (default: REDIS_URL, else a private one)")
    serve.add_argument("--data-dir", type=Path, default=Path("data/server"),
                       help="the private Redis's data (append-only file) and caches")
    serve.add_argument("--world", type=Path, default=None,
                       help=f"a built world (default: {DEFAULT_WORLD} when built, else {GAME_WORLD}, laid out "
                            "on first start)")
    serve.add_argument("--agent", default="default", help="agent name or checkpoint directory")
    serve.add_argument("--admin-token", default=None, help="admin token (default: EXAG_ADMIN_TOKEN, else random)")
    serve.add_argument("--studies", type=Path, default=None,
                       help="directory of study files to load when new (default: the repo's studies/)")
    serve.add_argument("--log", action="store_true", help="log every HTTP request")
    serve.add_argument("--dev", action="store_true",
                       help="Werkzeug's development server instead of gunicorn (debugging only)")
    serve.add_argument("--web-threads", type=int, default=None, metavar="N",
                       help="gunicorn threads of the web process; each open websocket holds one "
                            "(default: server/serve.py's DEFAULT_WEB_THREADS, 300)")
    serve.add_argument("--trusted-proxies", type=int, default=0, metavar="N",
                       help="proxies in front that set X-Forwarded-For (1 behind one nginx), so limits per client "
                            "address see the client's own (default 0: none)")
    serve.add_argument("--max-connections-per-address", type=int, default=20, metavar="N",
                       help="open Socket.IO connections one client address may hold (default 20; raise it behind a "
                            "proxy and for load tests from one machine)")
    from server.config import ServerConfig      # a dataclass: cheap to import
    serve.add_argument("--max-events-per-second", type=_above_zero(float), default=ServerConfig.max_events_per_second,
                       metavar="R", help="messages a connection may send a second on average (default "
                       f"{ServerConfig.max_events_per_second:g}; a token bucket, see --event-burst and docs/protocol.md)")
    serve.add_argument("--event-burst", type=_above_zero(int), default=ServerConfig.event_burst, metavar="N",
                       help=f"messages a connection may send at once (default {ServerConfig.event_burst})")
    serve.add_argument("--workers", type=int, default=os.cpu_count() or 1, metavar="N",
                       help="inference worker processes started on this machine (default: one per core; 0: none, "
                            "workers run elsewhere on the same Redis)")
    serve.add_argument("--threads", type=int, default=1, metavar="T", help="torch threads per worker (default 1)")
    serve.set_defaults(run=_serve)

    from server.worker import add_arguments as worker_arguments
    worker = commands.add_parser("worker", help="start an inference worker for the game server",
                                 description="Answers game rounds from the server's Redis streams (any number of "
                                 "workers, on any machine that reaches the Redis and has the world): batches rounds "
                                 "across games, runs the agent and its explainers, grades them and returns each "
                                 "round's one result. Stops on SIGTERM or Ctrl-C.")
    worker_arguments(worker)
    worker.set_defaults(run=_worker)

    bot = commands.add_parser("bot", help="play games through the real Socket.IO interface",
                              description="Simulated players: join, consent, ask, (buy explanations,) rate and "
                              "guess through Socket.IO, and report outcomes and ask-to-answer times.")
    bot.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:5000")
    bot.add_argument("--games", type=int, default=5)
    bot.add_argument("--setting", choices=("controlled", "at-will"), default="controlled")
    bot.add_argument("--arm", default=None, help="the study arm (demo studies let bots choose; default: assigned)")
    bot.add_argument("--study", default=None, help="study id (default: the demo study of the setting)")
    bot.add_argument("--questions", type=int, default=3, help="questions per game")
    bot.add_argument("--seed", type=int, default=0)
    bot.add_argument("--json", type=Path, help="write the report here")
    load = bot.add_argument_group("load test", "N participants at once (half at-will, half controlled over every "
                                  "arm): a question every 3 s, a rating after each, explanations in a third of at-will "
                                  "rounds, a guess after 4 questions; p50/p95/p99 per event, errors, timeouts, server "
                                  "CPU and RSS (start the server with --max-connections-per-address above N)")
    load.add_argument("--players", type=int, default=None, help="concurrent participants (turns the load test on)")
    load.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    load.add_argument("--mix", default="at-will=0.5", help="share of at-will participants, e.g. at-will=0.5")
    load.add_argument("--arms", default=None,
                      help="controlled arms to spread over, comma-separated (default: every demo-controlled arm)")
    load.add_argument("--server-pid", type=int, action="append", default=None, metavar="PID",
                      help="sample this server process and its children (workers, redis-server) for CPU and RSS; "
                           "repeatable")
    load.add_argument("--timeout", type=float, default=30.0, help="seconds without a reply that count as a timeout")
    bot.set_defaults(run=_bot)

    export = commands.add_parser("export", help="write the event log as tidy tables",
                                 description="One row per game, per round, per rating, per explanation shown, per "
                                 "participant and per rater's rating, plus the raw events (events.jsonl).")
    export.add_argument("--format", choices=("csv", "jsonl", "parquet"), default="csv")
    export.add_argument("--out", type=Path, required=True)
    export.add_argument("--redis-url", default=None)
    export.add_argument("--data-dir", type=Path, default=Path("data/server"))
    export.set_defaults(run=_export)

    analyze = commands.add_parser(
        "analyze", help="the paper's Table 1 and Figures 5-10 from the logs, as an HTML report",
        description="Analyse the logged games: Table 1 (controlled studies, with participant-clustered tests), "
                    "at-will use and adoption of explanations, win rates by helpfulness and correctness ratings "
                    "(Figures 5-10), rater agreement, and the benchmarks beside them. Writes OUT/report.json, "
                    "OUT/report.html (self-contained), OUT/figures/ (PNG and SVG) and OUT/tables/ (CSV).")
    analyze.add_argument("--data", type=Path, default=None,
                         help="an `exag export` directory (CSV, Parquet or JSONL), the directory `exag simulate "
                              "--out` wrote (its export/ is read) or a server data directory (e.g. data/server)")
    analyze.add_argument("--redis-url", default=None, help="read the event log from this Redis instead of --data")
    analyze.add_argument("--out", type=Path, required=True, help="directory for the report")
    analyze.add_argument("--study", action="append", default=None, metavar="ID",
                         help="only this study (repeat for several; default: every study)")
    analyze.add_argument("--bench", type=Path, default=None,
                         help="directory of `exag bench ... --json` results to show beside the study")
    analyze.add_argument("--exclude", default=None, metavar="FLAGS",
                         help="exclude participants with any of these quality flags, comma-separated: "
                              "no_questions, fast_games, straight_lined (default: a pre-registered study's registered "
                              "exclusions, else none; on pre-registered data other flags are a deviation, "
                              "reported as such)")
    analyze.add_argument("--no-exclusions", action="store_true",
                         help="exclude nobody, pre-registered or not: only the unexcluded analysis (what a "
                              "pre-registered report shows as its sensitivity analysis)")
    analyze.set_defaults(run=_analyze)

    from experiments import preregister as preregistration     # the command's own module (plain data: cheap)
    preregister = commands.add_parser("preregister", help=preregistration.HELP,
                                      description=preregistration.DESCRIPTION,
                                      formatter_class=argparse.RawDescriptionHelpFormatter)
    preregistration.add_arguments(preregister)

    simulate = commands.add_parser(
        "simulate", help="a whole study played by simulated participants, exported for `exag analyze`",
        description="Simulated participants (game/participant.py presets) play a whole study through the real game: "
                    "in-process (the server's Play service, rules, inference worker and a private embedded Redis, "
                    "no sockets) or, with --url, a running server over Socket.IO. Writes OUT/export/ (what `exag "
                    "export` writes) and OUT/summary.json, and prints win rates by arm with and without "
                    "explanations. `exag simulate power --help`: the participants a study needs.")
    simulate.add_argument("--study", type=Path, default=None, help="the study file (JSON, as in studies/)")
    simulate.add_argument("--participants", type=int, default=None, metavar="N", help="simulated participants")
    simulate.add_argument("--players", default=None, metavar="PRESET[=SHARE],...",
                          help="preset mix, e.g. careful=0.5,hasty=0.5 (shares sum to 1; default: "
                               "game/participant.py's DEFAULT_MIX of all four presets)")
    simulate.add_argument("--out", type=Path, default=None, help="output directory")
    simulate.add_argument("--agent", default="default", help="in-process: the agent (name or checkpoint directory)")
    simulate.add_argument("--url", default=None, help="play a running server instead, e.g. http://127.0.0.1:5000")
    simulate.add_argument("--admin-token", default=None,
                          help="--url: the server's admin token (default: EXAG_ADMIN_TOKEN)")
    simulate.add_argument("--seed", type=int, default=0,
                          help="seed of the participants and of the in-process server (default 0). In-process, the "
                               "same seed gives the same study: every exported table equal but for clock times, "
                               "durations and the fast_games flag (server/simulate.py RUN_DEPENDENT), whatever "
                               "--threads or the machine's load; with --url only the participants are seeded")
    simulate.add_argument("--world", type=Path, default=None, help=f"{WORLD_HELP}; with --url, the server's world")
    simulate.add_argument("--threads", type=int, default=8, metavar="T",
                          help="participants playing at once (default 8: while one waits for its answer, the "
                               "others think)")
    simulate.add_argument("--format", choices=("csv", "jsonl", "parquet"), default="csv", help="export format")
    _assumption_arguments(simulate)
    simulate.set_defaults(run=_simulate)
    simulate_commands = simulate.add_subparsers(dest="simulate_command", metavar="power")
    power = simulate_commands.add_parser(
        "power", help="share of simulated studies reaching p < 0.05, by number of participants",
        description="Repeats fresh simulated studies (in-process) at each number of participants and reports the "
                    "share whose Table 1 comparison (overall and each mode; naive z-test and the analysis's "
                    "participant-clustered test) reaches p < 0.05, with the participants needed for 80% power and "
                    "its interval; with --null, that share is the false-positive rate. Writes OUT/power.json, "
                    "OUT/power.csv and OUT/power.png/.svg. Costs sizes x repeats whole studies.")
    power.add_argument("--study", type=Path, required=True, help="the study file (a controlled study)")
    power.add_argument("--sizes", required=True, help="numbers of participants, e.g. 10,20,40,80")
    power.add_argument("--repeats", type=int, required=True, help="simulated studies per size")
    power.add_argument("--out", type=Path, required=True, help="output directory")
    power.add_argument("--players", default=None, metavar="PRESET[=SHARE],...", help="preset mix (as exag simulate)")
    _assumption_arguments(power)
    power.add_argument("--agent", default="default")
    power.add_argument("--world", type=Path, default=None, help=WORLD_HELP)
    power.add_argument("--seed", type=int, default=0)
    power.add_argument("--processes", type=int, default=os.cpu_count() or 1,
                       help="studies played side by side (default: one per core)")
    power.add_argument("--threads", type=int, default=8, help="participants at once within a process (default 8)")
    power.set_defaults(run=_simulate_power)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (FileExistsError, FileNotFoundError, ValueError) as error:
        print(f"exag: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
