"""`ReportConfig` (what `benchctl report` needs) and the `--where` filter syntax."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from benchctl.errors import BenchctlError, check_range
from benchctl.fields import setting

MIN_SEEDS = 3  # fewer common seeds: the estimate is shown, marked, and no significance is claimed


@dataclass(frozen=True)
class ReportConfig:
    """Everything `benchctl report` needs; `sources` says where each value came from (flag/default)."""

    inputs: tuple[str, ...] = setting((), "run folders, results folders with index.parquet, or folders holding runs")
    out: str | None = setting(
        None, "output folder for report.md/.html, the parquet tables and plots; None -> print only"
    )
    baseline: str | None = setting(
        "grpo", "arm to compare against (matrix arm or estimator_label, estimator or model); None -> no comparisons"
    )
    where: tuple[str, ...] = setting((), "run filters key=value, key=v1,v2 (any of), key!=value; on run columns")
    group_by: tuple[str, ...] = setting(
        (),
        "run columns that define an arm ('arm': the matrix arm, else estimator_label, else model); () -> arm plus "
        "the columns that vary across runs (model, recipe, group_size)",
    )
    tasks: tuple[str, ...] = setting((), "evaluated tasks to report; () -> every task found")
    ks: tuple[int, ...] = setting((), "k values to report; () -> every k the evals hold")
    confidence: float = setting(0.95, "two-sided CI level")
    alpha: float = setting(0.05, "family-wise error rate of the primary family (Holm), and the mde's level")
    primary_k: int = setting(1, "the k whose comparisons form the primary family (Holm); the other k are secondary")
    population: str = setting(
        "problems",
        "what an interval speaks for: 'problems' (seeds and problems like these, crossed two-way variance) or "
        "'fixed' (this problem set, new seeds: paired t on per-seed means); docs/report.md",
    )
    rliable_reps: int = setting(1000, "stratified-bootstrap repetitions for the rliable summary")
    seed: int = setting(0, "bootstrap seed")
    select_on: str | None = setting(
        None, "validation task choosing each arm's swept setting; None -> the one *_val task"
    )
    tuning_seeds: tuple[int, ...] = setting(
        (), "seeds held apart to choose swept settings (their runs leave the tests); () -> leave-one-seed-out"
    )
    claims: str | None = setting(None, "claims file (YAML) to test against the runs (benchctl/report/claims.py)")
    sources: Mapping[str, str] = field(default_factory=dict, metadata={"help": "key -> flag|default"})

    def __post_init__(self) -> None:
        check_range("confidence", self.confidence, 0.0, 1.0, low_open=True, high_open=True)
        check_range("alpha", self.alpha, 0.0, 1.0, low_open=True, high_open=True)
        check_range("primary_k", self.primary_k, 1)
        if self.population not in ("problems", "fixed"):
            raise BenchctlError(f"--population {self.population!r}: expected 'problems' or 'fixed'")
        check_range("rliable_reps", self.rliable_reps, 100)
        if not self.inputs:
            raise BenchctlError("no input given; pass run folders or a results folder (with index.parquet)")
        for item in self.where:
            parse_where(item)


@dataclass(frozen=True)
class Where:
    """One filter: `key` equal (or not, `negate`) to any of `values` (compared as text, numbers normalised)."""

    key: str
    values: tuple[str, ...]
    negate: bool = False

    def matches(self, value) -> bool:
        hit = _norm(value) in {_norm(v) for v in self.values}
        return hit != self.negate


def _norm(value) -> str:
    if value is None:
        return "none"
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text.lower() if text.lower() in ("none", "null", "true", "false") else text
    return repr(int(number)) if number.is_integer() else repr(number)


def parse_where(text: str) -> Where:
    """`key=value`, `key=v1,v2`, `key!=value` -> Where; BenchctlError on any other form."""
    negate = "!=" in text
    key, sep, values = text.partition("!=" if negate else "=")
    if not sep or not key.strip() or not values.strip():
        raise BenchctlError(
            f"--where {text!r}: expected key=value, key=v1,v2 or key!=value (e.g. --where estimator=ha_dw)"
        )
    return Where(key.strip(), tuple(v.strip() for v in values.split(",")), negate)


def parse_seeds(text: str) -> tuple[int, ...]:
    """`0,1` -> (0, 1) for --tuning-seeds; BenchctlError on anything but a comma list of integers."""
    try:
        return tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise BenchctlError(f"--tuning-seeds {text!r}: expected a comma list of seeds, e.g. 0,1") from None
