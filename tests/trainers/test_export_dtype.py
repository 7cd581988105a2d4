"""RUN/model declares the dtype its source declared (issue 40 item 7): a run from a hub id exported a config saying
float32 (the policy's fp32 master weights), so `benchctl eval --model RUN` ran vLLM in fp32 where the source model
ran in bf16. The hub is this machine's local hub cache, laid out as `huggingface_hub` writes it, read offline."""

import json
import shutil

import torch


def _hub_model(tmp_path, monkeypatch, source, repo="org/bf16-model"):
    """`source` (a model folder) as hub id `repo` in a fresh local hub cache, with `dtype: bfloat16` in its config as
    Qwen2.5's; hub access offline (the cache answers)."""
    import huggingface_hub.constants as hub

    cache, revision = tmp_path / "hub", "0" * 40
    repo_dir = cache / f"models--{repo.replace('/', '--')}"
    snapshot = repo_dir / "snapshots" / revision
    shutil.copytree(source, snapshot)
    (repo_dir / "refs").mkdir()
    (repo_dir / "refs" / "main").write_text(revision)
    config = json.loads((snapshot / "config.json").read_text())
    config.pop("torch_dtype", None)
    config["dtype"] = "bfloat16"
    (snapshot / "config.json").write_text(json.dumps(config))
    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(hub, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return repo


def test_a_model_trained_from_a_hub_id_exports_the_dtype_its_source_declared(tiny_model, tmp_path, monkeypatch):
    from safetensors.torch import load_file

    from benchctl.trainers.checkpoint import export_model
    from benchctl.trainers.weights import load_policy

    repo = _hub_model(tmp_path, monkeypatch, tiny_model)
    model = load_policy(repo, "cpu", dtype=torch.float32)  # as build_policy loads every policy
    export_model(model, repo, tmp_path / "out")
    saved = json.loads((tmp_path / "out" / "config.json").read_text())
    assert saved.get("dtype", saved.get("torch_dtype")) == "bfloat16"  # was "float32" for a hub id
    weights = load_file(str(tmp_path / "out" / "model.safetensors"))
    assert {t.dtype for t in weights.values()} == {torch.float32}  # the master weights, for an exact resume
    assert (tmp_path / "out" / "tokenizer.json").is_file() or (tmp_path / "out" / "tokenizer_config.json").is_file()


def test_a_float32_source_exports_float32(tiny_model, tmp_path):
    from benchctl.trainers.checkpoint import export_model
    from benchctl.trainers.weights import load_policy

    export_model(load_policy(str(tiny_model), "cpu", dtype=torch.float32), str(tiny_model), tmp_path / "out")
    saved = json.loads((tmp_path / "out" / "config.json").read_text())
    assert saved.get("dtype", saved.get("torch_dtype")) == "float32"
