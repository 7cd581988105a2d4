"""Checkpoints with everything an exact resume needs, written atomically (`benchctl.results.train_run`).

step-N/model/       the policy as an HF folder (config, safetensors, tokenizer files), loadable by vLLM; a LoRA
                    policy's weights merged, and its adapters in step-N/model/adapter/ (peft's folder, for resume)
step-N/trainer.pt   optimizer, scheduler and RNG states (torch, numpy, python)
step-N/state.json   TrainState (step, data position, token and sample counters), estimator state; the metrics
                    rows are stored once, in RUN/train_metrics.parquet (`benchctl.trainers.run_folder`)
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchctl.results import train_run

_WEIGHT_FILES = (".safetensors", ".bin", ".pt", ".pth", ".msgpack", ".h5")


def export_model(model, source: str, out: Path) -> None:
    """`model` as an HF folder at `out`: its config and weights, plus the source's tokenizer/generation files."""
    out.mkdir(parents=True, exist_ok=True)
    src = Path(source)
    if src.is_dir():
        for path in src.iterdir():
            skip = path.name.endswith(_WEIGHT_FILES) or path.name.endswith(".index.json") or path.name == "config.json"
            if path.is_file() and not skip:
                shutil.copy2(path, out / path.name)
    else:  # a hub id: the tokenizer's own files
        from transformers import AutoTokenizer

        AutoTokenizer.from_pretrained(source).save_pretrained(str(out))
    _save_weights(model, out)
    _declare_source_dtype(_source_config(source), out / "config.json")


def _save_weights(model, out: Path) -> None:
    """The weights into `out`; a LoRA policy: the merged weights (`weights.merged_state_dict`, what vLLM and
    `benchctl eval` load) and its adapters as a peft folder in `out/adapter` (what a resume loads, exactly: the base
    stays the source model's)."""
    from benchctl.trainers.weights import ADAPTER_DIR, is_lora, merged_state_dict

    if not is_lora(model):
        model.save_pretrained(str(out), safe_serialization=True)
        return
    model.get_base_model().save_pretrained(str(out), state_dict=merged_state_dict(model), safe_serialization=True)
    model.save_pretrained(str(out / ADAPTER_DIR), safe_serialization=True)


def _source_config(source: str) -> Path | None:
    """The source model's config.json: in its folder, or for a hub id the copy in the local hub cache (the policy
    was loaded from there, so it is present; None when it is not, e.g. a cache cleared mid-run)."""
    if Path(source).is_dir():
        return Path(source) / "config.json"
    from transformers.utils import cached_file

    found = cached_file(source, "config.json", _raise_exceptions_for_missing_entries=False)
    return Path(found) if found else None


def _declare_source_dtype(source_config: Path | None, config: Path) -> None:
    """The exported config declares the source model's dtype (e.g. bfloat16 for Qwen2.5) while the weights stay the fp32
    master weights (docs/gpu.md#the-settings): a resume loads them with dtype=float32, exactly; `benchctl eval --model
    RUN` and vLLM's dtype "auto" compute in the source's dtype, as they did on the initial model. A hub id's config
    is read from the hub cache: before, only a local folder's was, and a run from `--model Qwen/...` exported a model
    declaring float32, so its evaluation ran vLLM in fp32."""
    if source_config is None or not source_config.is_file():
        return
    source = json.loads(source_config.read_text())
    want = source.get("dtype") or source.get("torch_dtype")
    data = json.loads(config.read_text())
    if want and data.get("dtype", data.get("torch_dtype")) != want:
        data["dtype" if "dtype" in data else "torch_dtype"] = want
        config.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def save(run: Path, state, *, model, source: str, optimizer, scheduler, estimator) -> Path:
    """Write checkpoint `state.step` into a scratch folder, then rename it into place and move `latest`."""
    scratch = train_run.checkpoint_scratch(run, state.step)
    export_model(model, source, scratch / "model")
    torch.save(
        {
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "rng": {
                "torch": torch.get_rng_state(),
                "numpy": np.random.get_state(),
                "python": random.getstate(),
                "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
            },
        },
        scratch / "trainer.pt",
    )
    body = {"train_state": dataclasses.asdict(state), "estimator": estimator.state_dict()}
    (scratch / "state.json").write_text(json.dumps(body, default=float) + "\n")
    return train_run.commit_checkpoint(run, scratch, state.step)


def load(path: Path, *, optimizer, scheduler, estimator) -> dict[str, Any]:
    """Restore optimizer, scheduler, RNG and estimator state from checkpoint `path`; returns
    the stored TrainState fields. The policy weights are loaded from `path/model` by the caller."""
    blob = torch.load(path / "trainer.pt", map_location="cpu", weights_only=False)
    load_optimizer(optimizer, blob["optimizer"])
    scheduler.load_state_dict(blob["scheduler"])
    torch.set_rng_state(blob["rng"]["torch"])
    np.random.set_state(blob["rng"]["numpy"])
    random.setstate(blob["rng"]["python"])
    if blob["rng"].get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(blob["rng"]["cuda"])
    body = json.loads((path / "state.json").read_text())
    estimator.load_state_dict(body["estimator"])
    return body["train_state"]


def load_optimizer(optimizer, state: dict) -> None:
    """`optimizer.load_state_dict(state)`, and every parameter the saved optimizer had stepped gets a zero gradient.

    The trainer zeroes gradients in place (`zero_grad(set_to_none=False)`) so a mini-batch whose rows are all skipped
    still steps AdamW with zero gradients (its moments keep moving the weights). A freshly loaded model has no
    gradients (None), and AdamW skips such parameters: without this, the first all-skipped step after a resume
    left the weights where the uninterrupted run moved them, and the next rollouts differed. A parameter has
    optimizer state exactly when a backward pass had given it a gradient before, as in the uninterrupted run.
    """
    optimizer.load_state_dict(state)
    for group in optimizer.param_groups:
        for param in group["params"]:
            if param.grad is None and optimizer.state.get(param):
                param.grad = torch.zeros_like(param)
