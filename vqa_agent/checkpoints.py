"""Where an agent's checkpoint is, and a short hash of it, without importing torch: the web process (which
checks a study's agent and keys the pool's embeddings by it), the world builder and the agent itself look
checkpoints up here.

    path = resolve_agent_path("default")        # a shipped agent by name, or a directory with config.json
    key = checkpoint_fingerprint("default")     # changes whenever the checkpoint's files do

An agent named `hf:PATH` is a pretrained transformers VQA model in the directory PATH (ViLT or BLIP, loaded
by vqa_agent/hf_agent.py): its config.json is checked here (torch-free, so a web process refuses a study
naming a BERT directory with a one-line HFAgentError), and its fingerprint covers its configuration,
weights and processor/tokenizer files.
"""
from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

CHECKPOINT_DIR = Path(__file__).resolve().parent / "checkpoints"   # agents shipped with the package, by name
DEFAULT_AGENT = "medium"                                           # what "default" means
CHECKPOINT_FILES = ("config.json", "vocabulary.json", "model.safetensors")
# An agent's own NLE explainer model, in its checkpoint directory (`exag train nle --agent DIR` writes it there, the
# nle explainer finds it there: explainers/nle.py): a private agent carries its NLE wherever it is copied
OWN_NLE = "nle"
# docs/real-study.md's private agent: the commands that make it (a world of its own, the agent, the agent's own NLE
# model) and the minutes they took together on the project's 2-core CI machine (24 GB), one after the other, one
# thread each (world 2 min 26 s with one rendering process, agent 4 min 26 s, NLE 6 min 55 s). The console's
# advice (server/study_check.py) reads both; tests/vqa_agent/test_private_agent_recipe.py holds the page to them.
PRIVATE_AGENT_COMMANDS = (
    "exag world build --out data/private-world --images 3500 --pool 0 --seed 7",
    "exag train agent --preset medium --epochs 2 --world data/private-world --seed 7 --out checkpoints/private-medium",
    "exag train nle --agent checkpoints/private-medium --world data/private-world --epochs 6 --max-items 15000",
)
PRIVATE_AGENT_MINUTES = 14
HF_PREFIX = "hf:"
HF_ARCHITECTURES = ("ViltForQuestionAnswering", "BlipForQuestionAnswering")   # what hf_agent.py can answer with
# what such an agent gives an explainer (explainers/agent_interface.py CAPABILITIES): no object proposals nor
# concept words; here, torch-free, so that a study is checked against it without loading the model
HF_CAPABILITIES = frozenset({"answer", "attention", "question_embedding", "text_embedding", "fingerprint"})
# the files of a transformers model directory that decide what it answers: configuration, weights (one file or
# shards with their index), and what turns images and text into its inputs
HF_FILE_PATTERNS = ("config.json", "generation_config.json", "*.safetensors", "*.safetensors.index.json",
                    "pytorch_model*.bin", "pytorch_model.bin.index.json", "preprocessor_config.json",
                    "processor_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                    "added_tokens.json", "vocab.txt")


class HFAgentError(FileNotFoundError):
    """An `hf:PATH` that is no transformers VQA model directory the adapter can load; the text says why in
    one line. No agent found, as for any name that leads to none (resolve_agent_path): whoever reports a
    missing agent reports this one (server/agents.py, the `exag` commands' one-line errors)."""


def agent_name(name) -> str:
    """An agent as people read it: "default" is said as the shipped preset it stands for ("medium (default)"),
    so the start message, /healthz and the docs name one agent alike."""
    return f"{DEFAULT_AGENT} (default)" if str(name) == "default" else str(name)


def is_hf_agent(name) -> bool:
    """Whether `name` names a transformers model directory ("hf:PATH")."""
    return isinstance(name, str) and name.startswith(HF_PREFIX)


def hf_path(name: str) -> Path:
    """The directory of "hf:PATH", checked: it exists, has a config.json, and that config is a supported VQA
    model (HF_ARCHITECTURES). HFAgentError otherwise."""
    path = Path(name[len(HF_PREFIX):] if is_hf_agent(name) else name).expanduser()
    if not path.is_dir():
        raise HFAgentError(f"{path} is not a transformers VQA model directory (no such directory)")
    if not (path / "config.json").is_file():
        raise HFAgentError(f"{path} is not a transformers VQA model directory (no config.json)")
    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, ValueError) as error:
        raise HFAgentError(f"{path} is not a transformers VQA model directory (config.json: {error})") from None
    if not isinstance(config, dict):
        raise HFAgentError(f"{path} is not a transformers VQA model directory (config.json holds no object)")
    architectures = config.get("architectures") or []
    if not any(a in HF_ARCHITECTURES for a in architectures):
        what = config.get("model_type") or "/".join(architectures) or "unknown"
        raise HFAgentError(f"{path} is a {what} model; supported: {', '.join(HF_ARCHITECTURES)}")
    return path


def checkpoint_files(name_or_path) -> list[Path]:
    """The files that make up an agent (what its fingerprint hashes): CHECKPOINT_FILES of a shipped agent or
    checkpoint directory, the transformers files (HF_FILE_PATTERNS) of an "hf:PATH" model."""
    if is_hf_agent(str(name_or_path)):
        path = hf_path(str(name_or_path)).resolve()
        return sorted({f for pattern in HF_FILE_PATTERNS for f in path.glob(pattern) if f.is_file()})
    path = resolve_agent_path(name_or_path).resolve()
    return [path / f for f in CHECKPOINT_FILES]


def resolve_agent_path(name_or_path) -> Path:
    """A directory holding an agent, the name of a shipped agent ("default" or a preset), or "hf:PATH"."""
    if is_hf_agent(str(name_or_path)):
        return hf_path(str(name_or_path))
    path = Path(name_or_path)
    if (path / "config.json").exists():
        return path
    name = DEFAULT_AGENT if str(name_or_path) == "default" else str(name_or_path)
    shipped = CHECKPOINT_DIR / name
    if (shipped / "config.json").exists():
        return shipped
    available = sorted(p.name for p in CHECKPOINT_DIR.glob("*") if (p / "config.json").exists())
    raise FileNotFoundError(f"no agent at {name_or_path!r}: not a directory with config.json, nor a shipped agent "
                            f"(shipped: {', '.join(['default'] + available) if available else 'none yet'})")


def is_shipped(name: str | Path) -> bool:
    """Whether the agent is one of the shipped (public) checkpoints, whose replay the threat model warns of.
    (A downloaded transformers model is public too, but it is not shipped: the study's author knows it.)"""
    if is_hf_agent(str(name)):
        return False
    try:
        return resolve_agent_path(name).resolve().is_relative_to(CHECKPOINT_DIR)
    except FileNotFoundError:
        return False


def checkpoint_fingerprint(name: str | Path) -> str:
    """A short hash of the checkpoint's files (configuration, vocabulary, weights; for "hf:PATH", its
    transformers files: checkpoint_files), and of the agent's own NLE model when its directory holds one (OWN_NLE:
    the explainer it shows players, so a registration freezes it too). The same wherever the files lie: only their
    names and bytes count."""
    files = [(f.name, f) for f in checkpoint_files(name)]
    own_nle = files[0][1].parent / OWN_NLE if files else None
    if own_nle is not None and own_nle.is_dir():
        files += [(f.relative_to(own_nle.parent).as_posix(), f) for f in sorted(own_nle.rglob("*")) if f.is_file()]
    stamps = tuple((label, f, f.stat().st_mtime_ns, f.stat().st_size) for label, f in files)
    return _fingerprint(stamps)


@functools.lru_cache(maxsize=32)
def _fingerprint(stamps: tuple) -> str:
    # keyed by the files' times and sizes too, so a checkpoint rewritten in place is hashed again
    digest = hashlib.blake2b(digest_size=8)
    for label, file, _, _ in stamps:
        digest.update(label.encode())
        with open(file, "rb") as data:      # in blocks: a transformers model's weights may be gigabytes
            for block in iter(lambda: data.read(1 << 24), b""):
                digest.update(block)
    return digest.hexdigest()
