"""Configs of `benchctl eval` / `benchctl grade` and the config.json record they write (orchestration layer)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from benchctl.errors import BenchctlError, check_range
from benchctl.fields import setting


@dataclass(frozen=True)
class EvalConfig:
    """Everything `benchctl eval` needs; `sources` says where each value came from (flag/env/default)."""

    model: str = setting("", "HF model folder, hub id, or benchctl run folder (see benchctl.results.runs)")
    tasks: tuple[str, ...] = setting((), "task names (benchctl.tasks registry)")
    ks: tuple[int, ...] = setting((1,), "k values for pass@k / maj@k; each k <= n")
    n: int | None = setting(None, "samples per problem; None -> max(ks)")
    temperature: float = setting(0.6, "sampling temperature (A-GRAE eval: 0.6)")
    top_p: float = setting(0.95, "nucleus sampling top-p (A-GRAE eval: 0.95)")
    max_tokens: int = setting(4096, "max new tokens per sample (A-GRAE eval: 4096)")
    seed: int = setting(0, "sampling seed (engine) and bootstrap seed")
    limit: int | None = setting(None, "evaluate only the first N problems of each task")
    data_dir: str | None = setting(
        None, "local benchmark folder (shared/benchmarks schema); None -> $BENCHCTL_DATA_DIR / hub"
    )
    out: str | None = setting(None, "run folder; None -> results/eval/<model-name>")
    overwrite: bool = setting(False, "discard samples in --out made with a different sampling config")
    max_model_len: int | None = setting(None, "engine context length; None -> the model's own")
    chunk_samples: int = setting(4096, "samples per part file / generation chunk (bounds memory, not n)")
    resamples: int = setting(1000, "bootstrap resamples for the CIs")
    confidence: float = setting(0.95, "two-sided CI level")
    grade_workers: int | None = setting(None, "grader processes (None -> task default)")
    grade_timeout: float = setting(5.0, "seconds per graded item")
    progress: bool = setting(True, "show the engine's progress bar")
    sources: Mapping[str, str] = field(default_factory=dict, metadata={"help": "key -> flag|env|default"})

    def __post_init__(self) -> None:
        check_range("temperature", self.temperature, 0.0)
        check_range("top_p", self.top_p, 0.0, 1.0, low_open=True)
        check_range("max_tokens", self.max_tokens, 1)
        check_range("chunk_samples", self.chunk_samples, 1)
        check_range("resamples", self.resamples, 1)
        check_range("confidence", self.confidence, 0.0, 1.0, low_open=True, high_open=True)
        if self.limit is not None:
            check_range("limit", self.limit, 1)

    def resolved_n(self) -> int:
        """n if given, else the largest k; BenchctlError when some k > n."""
        if not self.ks:
            raise BenchctlError("no k given; e.g. --k 1..256 or --k 1,5,10")
        n = max(self.ks) if self.n is None else self.n
        check_range("n", n, 1)
        if max(self.ks) > n:
            raise BenchctlError(f"k={max(self.ks)} > n={n}: pass@k needs k <= n; raise --n or lower --k")
        return n


@dataclass(frozen=True)
class GradeConfig:
    """Everything `benchctl grade` needs: completions made elsewhere, graded like `benchctl eval`."""

    task: str = setting("", "task whose problems and grader to use")
    samples: str = setting("", "JSON Lines file: {'problem_id': ..., 'completion': ...} per line")
    out: str = setting("", "output folder (same layout as benchctl eval)")
    ks: tuple[int, ...] | None = setting(None, "k values; None -> powers of two <= min samples per problem")
    data_dir: str | None = setting(None, "local benchmark folder; None -> $BENCHCTL_DATA_DIR / hub")
    overwrite: bool = setting(False, "replace an --out folder made from another samples file")
    chunk_samples: int = setting(4096, "samples per part file")
    resamples: int = setting(1000, "bootstrap resamples")
    confidence: float = setting(0.95, "two-sided CI level")
    seed: int = setting(0, "bootstrap seed")
    grade_workers: int | None = setting(None, "grader processes (None -> task default)")
    grade_timeout: float = setting(5.0, "seconds per graded item")
    sources: Mapping[str, str] = field(default_factory=dict, metadata={"help": "key -> flag|env|default"})

    def __post_init__(self) -> None:
        check_range("chunk_samples", self.chunk_samples, 1)
        check_range("resamples", self.resamples, 1)
        check_range("confidence", self.confidence, 0.0, 1.0, low_open=True, high_open=True)
        check_range("grade_timeout", self.grade_timeout, 0.0, low_open=True)


def config_record(config, **derived) -> dict:
    """{key: {"value": v, "source": flag|env|default}} for every field, plus derived values (source 'derived')."""
    record = {
        f.name: {"value": getattr(config, f.name), "source": config.sources.get(f.name, "default")}
        for f in dataclasses.fields(config)
        if f.name != "sources"
    }
    record.update({k: {"value": v, "source": "derived"} for k, v in derived.items()})
    return record
