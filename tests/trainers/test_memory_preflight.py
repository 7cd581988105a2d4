"""The GPU memory preflight (issue 40 item 5) on this CPU: the card is faked where only a GPU has it
(`torch.cuda.mem_get_info`), the models are config-only folders of the published shapes (the parameter count comes
from the config on the meta device, no weights exist), and `--device cuda` is asked for explicitly."""

import json

import pytest
import torch
from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config  # noqa: F401 - imported once, at collection
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.errors import BenchctlError
from benchctl.trainers import build_config
from benchctl.trainers.memory import fit
from benchctl.trainers.plan import first_difference, record, resolve

GIB = 2**30
QWEN = dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
            num_key_value_heads=2, vocab_size=151_936, tie_word_embeddings=True)  # fmt: skip
QWEN_7B = dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
               num_key_value_heads=4, vocab_size=152_064, tie_word_embeddings=False)  # fmt: skip
SMOLLM2 = dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
               num_key_value_heads=3, vocab_size=49_152, tie_word_embeddings=True)  # fmt: skip


def _config_folder(tmp_path, name, shape, llama=False):
    folder = tmp_path / name
    (LlamaConfig if llama else Qwen2Config)(**shape, dtype="bfloat16").save_pretrained(folder)
    return str(folder)


@pytest.fixture
def card(monkeypatch):
    """An 80 GB card (79.6 GiB, 79.2 free before the run), as `torch.cuda.mem_get_info` reports it."""

    def set_card(free_gib=79.2, total_gib=79.6):
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (int(free_gib * GIB), int(total_gib * GIB)))

    set_card()
    return set_card


def _plan(folder, **flags):
    return resolve(build_config(flag_values={"model": folder, "max_tokens": 1024, "device": "cuda", **flags}))


def test_the_default_micro_batch_is_chosen_from_the_model_and_the_card_and_recorded(tmp_path, card):
    qwen = _config_folder(tmp_path, "qwen-1.5b", QWEN)
    plan = fit(_plan(qwen), qwen, "cuda")
    assert plan.cfg.micro_batch_tokens == 4096  # docs/gpu.md's recommendation from the H100 measurement
    entry = record(plan)["micro_batch_tokens"]
    assert entry == {"value": 4096, "source": "derived"}  # RUN/config.json shows the choice
    figures = record(plan)["memory_preflight"]["value"]
    assert figures["params"] == 1_543_714_304 and figures["update_gib"] < 0.8 * 79.2


def test_a_smaller_model_gets_a_larger_budget_and_a_smaller_card_a_smaller_one(tmp_path, card):
    smol = _config_folder(tmp_path, "smollm2", SMOLLM2, llama=True)
    assert fit(_plan(smol), smol, "cuda").cfg.micro_batch_tokens == 32768
    qwen = _config_folder(tmp_path, "qwen-1.5b", QWEN)
    card(free_gib=39.0, total_gib=39.4)  # a 40 GB card
    assert fit(_plan(qwen), qwen, "cuda").cfg.micro_batch_tokens == 1536  # no power of two fits 80%: one row


def test_a_given_micro_batch_is_kept_and_refused_only_when_it_cannot_fit(tmp_path, card):
    qwen = _config_folder(tmp_path, "qwen-1.5b", QWEN)
    plan = fit(_plan(qwen, micro_batch_tokens=8192), qwen, "cuda")
    assert plan.cfg.micro_batch_tokens == 8192 and plan.cfg.sources["micro_batch_tokens"] == "flag"
    with pytest.raises(BenchctlError) as err:
        fit(_plan(qwen, micro_batch_tokens=16384), qwen, "cuda")
    message = str(err.value)
    assert "\n" not in message and "activations of 16384 tokens" in message
    assert message.endswith("lower --micro-batch-tokens to 4096")


def test_a_rollout_that_cannot_fit_names_the_engine_share_to_use(tmp_path, card):
    qwen = _config_folder(tmp_path, "qwen-1.5b", QWEN)
    with pytest.raises(BenchctlError, match=r"trainer state 16N 23\.0 \+ vLLM's share 0\.8 x 79\.6 63\.7 = 86\.7 GiB"):
        fit(_plan(qwen, gpu_memory_utilization=0.8), qwen, "cuda")
    with pytest.raises(BenchctlError, match=r"lower --gpu-memory-utilization to 0\.7$"):
        fit(_plan(qwen, gpu_memory_utilization=0.8), qwen, "cuda")
    with pytest.raises(BenchctlError, match=r"raise --gpu-memory-utilization to 0\.05$"):
        fit(_plan(qwen, gpu_memory_utilization=0.01), qwen, "cuda")


def test_nothing_is_checked_or_chosen_on_the_cpu(tmp_path, card):
    qwen = _config_folder(tmp_path, "qwen-7b", QWEN_7B)
    plan = _plan(qwen, device="cpu")
    assert fit(plan, qwen, "cpu") is plan and plan.cfg.micro_batch_tokens is None


def test_a_model_that_cannot_fit_the_card_is_refused_before_any_work_in_one_line(tmp_path, card):
    qwen7 = _config_folder(tmp_path, "qwen-7b", QWEN_7B)
    run = tmp_path / "run"
    args = ["train", "--model", qwen7, "--device", "cuda", "--max-tokens", "1024", "--out", str(run), "--no-progress"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.stderr
    assert "(7.62B parameters) does not fit this GPU (79.2 GiB free of 79.6)" in lines[0]
    assert "trainer state 16N 113.5" in lines[0] and "--engine verl" in lines[0]
    assert not run.exists()  # refused before the run folder, the policy or the engine


def test_a_run_whose_micro_batch_was_chosen_for_its_card_is_not_stale_for_that_choice(tmp_path, card):
    qwen = _config_folder(tmp_path, "qwen-1.5b", QWEN)
    stored = json.loads(json.dumps(record(fit(_plan(qwen), qwen, "cuda")), default=str))
    now = record(_plan(qwen))  # the matrix's view: the settings resolved without a card
    assert first_difference(stored, now, ["micro_batch_tokens"]) is None
    asked = record(_plan(qwen, micro_batch_tokens=8192))
    assert first_difference(stored, asked, ["micro_batch_tokens"]) == ("micro_batch_tokens", 4096, 8192)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_device_cuda_without_a_cuda_device_is_refused_in_one_line(tmp_path):
    qwen = _config_folder(tmp_path, "qwen-1.5b", QWEN)
    with pytest.raises(BenchctlError, match=r"^device='cuda': no usable CUDA device \(.*\); use --device cpu or auto$"):
        fit(_plan(qwen), qwen, "cuda")


def test_a_resumed_run_keeps_the_micro_batch_chosen_for_its_card(tmp_path, card):
    qwen = _config_folder(tmp_path, "qwen-1.5b", QWEN)
    from benchctl.results.train_run import write_config

    run = tmp_path / "run"
    run.mkdir()
    write_config(run, json.loads(json.dumps(record(fit(_plan(qwen), qwen, "cuda")), default=str)))
    cfg = build_config(flag_values={"resume": str(run)})
    assert (cfg.micro_batch_tokens, cfg.sources["micro_batch_tokens"]) == (4096, "derived")
    card(free_gib=59.0, total_gib=59.4)  # resumed on a smaller card: kept (it fits), not chosen again
    assert fit(_plan(qwen), qwen, "cuda").cfg.micro_batch_tokens == 2048  # what a fresh run would choose there
    assert fit(resolve(cfg), qwen, "cuda").cfg.micro_batch_tokens == 4096
