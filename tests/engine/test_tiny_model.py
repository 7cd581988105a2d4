"""The tiny model builder: deterministic, loadable by transformers, learns from SFT, cached once under a lock."""

import json
import multiprocessing
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from benchctl.errors import BenchctlError
from benchctl.models import build_tiny_model, cached_tiny_model
from benchctl.models import cache as cache_module
from benchctl.models.chartok import CHARS
from benchctl.models.tiny import INFO_FILE, TinyModelConfig

QUICK = {"sft_steps": 3, "train_problems": 256, "batch_size": 16}  # a build of about a second


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(str(folder / "model.safetensors"))


def test_same_seed_builds_bit_identical_weights_and_other_seed_differs(tmp_path):
    a = _weights(build_tiny_model(tmp_path / "a", seed=7, **QUICK))
    b = _weights(build_tiny_model(tmp_path / "b", seed=7, **QUICK))
    c = _weights(build_tiny_model(tmp_path / "c", seed=8, **QUICK))
    assert a.keys() == b.keys() == c.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)


def test_sft_steps_change_the_weights(tmp_path):
    init = _weights(build_tiny_model(tmp_path / "init", seed=7, **{**QUICK, "sft_steps": 0}))
    trained = _weights(build_tiny_model(tmp_path / "sft", seed=7, **QUICK))
    changed = [k for k in init if not torch.equal(init[k], trained[k])]
    assert len(changed) == len(init)  # every saved tensor moved


def test_default_sft_halves_the_answer_loss(tiny_model):
    info = json.loads((tiny_model / INFO_FILE).read_text())
    assert info["sft/steps"] == TinyModelConfig().sft_steps
    assert info["sft/last_loss"] < 0.5 * info["sft/first_loss"]
    assert 700_000 < info["parameters"] < 900_000  # ~0.8M


def test_tokenizer_is_one_token_per_ascii_character_and_round_trips_any_text(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    text = CHARS + " é\t"  # newline, printable ASCII, then multi-byte and control characters
    ids = tok(text)["input_ids"]
    assert len(ids) == len(text) + 1  # é is two UTF-8 bytes, hence two tokens
    assert tok.decode(ids) == text
    assert tok.eos_token == "<eos>" and tok.pad_token == "<pad>" and tok.bos_token is None
    assert not getattr(tok, "chat_template", None)
    assert tok.decode(tok("3+5=8")["input_ids"] + [tok.eos_token_id], skip_special_tokens=True) == "3+5=8"


def test_tiny_model_loads_with_transformers_in_float32(tiny_model):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(tiny_model))
    assert model.config.model_type == "qwen2" and model.dtype == torch.float32
    assert model.config.max_position_embeddings == TinyModelConfig().max_position_embeddings
    logits = model(torch.tensor([[21, 15, 22, 33]])).logits  # "1+2="
    assert logits.shape == (1, 4, model.config.vocab_size) and torch.isfinite(logits).all()


def test_unknown_builder_option_names_the_valid_ones(tmp_path):
    with pytest.raises(BenchctlError, match="sft_steps"):
        build_tiny_model(tmp_path, sft_stepz=3)


def _counting_build(out_dir, *, config):  # wraps the real builder in the child processes to count builds
    with open(Path(out_dir).parent / "builds.log", "a") as log:
        log.write("build\n")
    return _REAL_BUILD(out_dir, config=config)


_REAL_BUILD = cache_module.build_tiny_model


def _cached_in_child(root, queue):
    cache_module.build_tiny_model = _counting_build
    queue.put(str(cached_tiny_model(cache_dir=root, **QUICK)))


@pytest.mark.slow
def test_concurrent_cache_users_build_once_and_get_the_same_folder(tmp_path):
    ctx = multiprocessing.get_context("spawn")  # not fork: this process may already run vLLM's threads
    queue = ctx.Queue()
    procs = [ctx.Process(target=_cached_in_child, args=(tmp_path, queue)) for _ in range(2)]
    for proc in procs:
        proc.start()
    paths = {queue.get(timeout=180) for _ in procs}
    for proc in procs:
        proc.join(timeout=60)
    assert len(paths) == 1
    folder = Path(paths.pop())
    assert (folder / INFO_FILE).is_file() and (folder / "model.safetensors").is_file()
    assert (tmp_path / "builds.log").read_text().count("build") == 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tiny-")]  # no scratch folder left
    assert cached_tiny_model(cache_dir=tmp_path, **QUICK) == folder  # later calls hit the cache


def test_sft_sources_name_a_task_and_its_options():
    from benchctl.models.tiny import parse_source

    assert parse_source("arith") == ("arith", {})
    assert parse_source("arith_mix:levels=1") == ("arith_mix", {"levels": "1"})
    with pytest.raises(BenchctlError, match="key=value"):
        parse_source("arith_mix:levels")


def test_an_sft_source_with_a_level_option_trains_on_that_level_only():
    from benchctl.models.chartok import char_ids
    from benchctl.models.tiny import sft_sequences
    from benchctl.tasks import get_task

    cfg = TinyModelConfig(sft_sources=("arith_mix:levels=1",), train_problems=50)
    task = get_task("arith_mix", split="train", size=50, levels="1")
    problems = task.load()
    assert [ids for ids, _ in sft_sequences(cfg)] == [char_ids(task.prompt_text(p)) for p in problems]
    assert all(p.meta["level"] == 1 for p in problems)


def test_embedded_model_names_resolve_to_their_own_cached_builds(monkeypatch):
    from benchctl.models.tiny import EMBEDDED_MODELS
    from benchctl.results.runs import resolve_model

    asked = []
    monkeypatch.setattr(cache_module, "cached_tiny_model", lambda **options: asked.append(options) or Path("/m"))
    assert [resolve_model(name).name for name in ("tiny", "tiny-warm")] == ["tiny", "tiny-warm"]
    assert asked == [EMBEDDED_MODELS["tiny"], EMBEDDED_MODELS["tiny-warm"]]
    assert asked[0] == {}  # the default model is the builder's defaults: the demo's model is unchanged
