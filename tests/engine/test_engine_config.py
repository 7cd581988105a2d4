"""Engine inputs that are rejected before vLLM starts: bad model paths and bad sampling values (no vLLM needed)."""

import subprocess
import sys

import pytest

from benchctl.engine import EngineConfig, SamplingConfig, check_model, prompt_seed
from benchctl.errors import BenchctlError


def test_missing_model_folder_is_a_one_line_benchctl_error(tmp_path):
    from benchctl.engine import Engine

    with pytest.raises(BenchctlError) as err:
        Engine(tmp_path / "no-such-model")
    assert "does not exist" in str(err.value) and "\n" not in str(err.value)


def test_folder_without_config_json_is_rejected(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"")
    with pytest.raises(BenchctlError, match="no config.json"):
        check_model(str(tmp_path))


def test_hub_style_id_passes_the_local_check():
    check_model("Qwen/Qwen2.5-0.5B-Instruct")  # resolved by vLLM, not here


@pytest.mark.parametrize(
    "field, value", [("n", 0), ("temperature", -0.1), ("top_p", 0.0), ("top_p", 1.5), ("max_tokens", 0), ("seed", -1)]
)
def test_sampling_config_rejects_out_of_range_values(field, value):
    with pytest.raises(BenchctlError, match=field):
        SamplingConfig(**{field: value})


def test_engine_config_rejects_unknown_dtype():
    with pytest.raises(BenchctlError, match="bfloat16"):
        EngineConfig(model="m", dtype="fp8")


def test_prompt_seeds_are_distinct_across_prompts_and_base_seeds():
    seeds = {prompt_seed(s, i) for s in range(20) for i in range(500)}
    assert len(seeds) == 20 * 500 and all(0 <= x < 2**63 for x in seeds)


def test_engine_config_is_built_by_keyword_only():
    with pytest.raises(TypeError):
        EngineConfig("m")  # the positional form is what kw_only forbids
    assert EngineConfig(model="m", seed=3).seed == 3


def test_importing_the_engine_package_imports_neither_vllm_nor_torch():
    code = "import sys, benchctl.engine; print(sorted({'vllm', 'torch'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
