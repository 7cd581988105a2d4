"""Seeds until the verdict is decided: a group-sequential design for the claims (`benchctl matrix run FILE
--until-decided CLAIMS --max-seeds N`, `benchctl.matrix.waves`; docs/report.md "Seeds until decided").

Design [our choice]: the matrix's seeds are the first wave; each further wave adds `wave` seeds numbered after
the largest seed so far (default 2), up to `max_seeds` seeds in all. After each wave the claims are analysed (a
*look*); look k sees the seeds of waves 1..k, its *information fraction* is t_k = seeds at look k / max_seeds.

Boundary: the alpha-spending function of O'Brien-Fleming type of Lan & DeMets (1983, Biometrika 70:659, Eq. (3)
with alpha_1*): alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)), the two-sided error spent by information t
(alpha(1) = alpha). The critical values c_1 < ... of the standardised effect Z_k solve, look by look,
P(|Z_1| < c_1, ..., |Z_{k-1}| < c_{k-1}, |Z_k| >= c_k) = alpha(t_k) - alpha(t_{k-1}) under no effect, where Z_k =
S(t_k) / sqrt(t_k) for a Brownian motion S (independent increments; Corr(Z_j, Z_k) = sqrt(t_j / t_k)): the
recursive numerical integration of Armitage, McPherson & Rowe (1969, JRSS A 132:235), as in Jennison & Turnbull
(2000, Group Sequential Methods, §19.2), on a grid of `GRID` points (`boundary`: the known-variance design). The
claims' intervals are t intervals over few seeds, so the critical values used are those of the paired t
statistics (`t_boundary`): look 1 exactly (the t quantile), each later look calibrated on `T_PATHS` simulated paths
of i.i.d. normal seeds so that its crossing probability equals its increment of spent alpha (mapping the normal
values to t quantiles instead put the level at 6.0% with a 3-seed first look, benchmarks/report_sequential.py).
With `shape="skewed"` (`--seed-shape skewed`) every look, the first included, is calibrated on paths of
exponential seeds minus 1 (skewness 2): the normal-calibrated boundary rejects 13-14% with such seeds where the
fixed t-test rejects 9-11% (docs/report.md, "Skewed per-seed values"); the skewed one holds about 5% there, at a
cost in power for normal seeds.
Look k's interval is the claim's usual interval (`claims.seed_effect`) at the *adjusted confidence* 1 - 2
P(T_{n_k - 1} >= c_k): these are repeated confidence intervals (Jennison & Turnbull 1989, JRSS B 51:305), which
cover the effect at every look at once with probability 1 - alpha (exactly for one value per run; for pass@k under
`--population problems` the confidence is applied to the crossed interval, an approximation). A verdict read off
them therefore keeps its error rate however many looks are taken.

Decided [our choice]: a claim is *decided* at the first look where its verdict (`claims.verdict` at that look's
adjusted confidence) is holds, does not hold or "paper's effect excluded" (the runs rule the paper's effect out:
an equivalence-type decision). Inconclusive is undecided. A claim with `requires` is decided when its premise is
decided and is not "holds" (it stays inconclusive, premise not established), or when the premise holds and its own
verdict is decided. A decided claim keeps the verdict, interval and seeds of its deciding look (later seeds of its
arms, run for other claims, do not enter it). A claim undecided at the last look (max_seeds) reports that look's
verdict. `testbed:` claims are not part of the design.

Swept settings: with `selection` each look chooses a swept setting on its own seeds (`look_data`), as the report
does again from the runs of every setting (`claims_table`), so the report reproduces the looks. The effect at the
deciding look is shown beside its stopping-adjusted estimates (`report.stagewise`).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from scipy.optimize import brentq

from benchctl.errors import BenchctlError
from benchctl.report.claims import CLAIM_COLUMNS, EXCLUDED, Claim, evaluate_claims

RECORD_FILE = "sequential.json"  # RESULTS/sequential.json: the design and every look, written by the matrix run
RECORD_KIND = "benchctl-sequential"
SPENDING = "O'Brien-Fleming-type alpha spending, Lan & DeMets (1983, Biometrika 70:659)"
DEFAULT_WAVE = 2
GRID = 1001  # grid points of the recursive integration
T_PATHS = 200_000  # Monte Carlo paths of the t-scale boundary
DECIDED = ("holds", "does not hold", EXCLUDED)
SHAPES = ("normal", "skewed")  # the per-seed values the t-scale boundary is calibrated on (`t_boundary`)
SEQUENTIAL_COLUMNS = (
    *("decided", "look", "looks", "seeds_at_decision", "confidence", "alpha_spent"),
    *("median_unbiased", "bias_adjusted"),  # report.stagewise
)


@dataclass(frozen=True)
class SequentialDesign:
    """The group-sequential plan of a matrix run (module docstring)."""

    first_seeds: tuple[int, ...] = field(metadata={"help": "the matrix file's seeds: the first wave"})
    max_seeds: int = field(metadata={"help": "seeds per arm at the last look (>= len(first_seeds))"})
    wave: int = field(default=DEFAULT_WAVE, metadata={"help": "seeds each later wave adds"})
    alpha: float = field(default=0.05, metadata={"help": "two-sided error over all looks (1 - confidence)"})
    shape: str = field(
        default="normal",
        metadata={"help": "per-seed values the boundary is calibrated on: normal, or skewed (exponential-shaped)"},
    )

    def __post_init__(self) -> None:
        n = len(self.first_seeds)
        if n < 1 or len(set(self.first_seeds)) != n:
            raise BenchctlError(f"the first wave needs distinct seeds; got {list(self.first_seeds)}")
        if isinstance(self.max_seeds, bool) or not isinstance(self.max_seeds, int) or self.max_seeds < n:
            raise BenchctlError(
                f"--max-seeds {self.max_seeds} is below the matrix's {n} seeds {sorted(self.first_seeds)}; "
                f"give at least {n}"
            )
        if isinstance(self.wave, bool) or not isinstance(self.wave, int) or self.wave < 1:
            raise BenchctlError(f"--wave-seeds must be an integer >= 1; got {self.wave!r}")
        if not 0.0 < self.alpha < 1.0:
            raise BenchctlError(f"alpha must lie in (0, 1); got {self.alpha!r}")
        if self.shape not in SHAPES:
            raise BenchctlError(f"--seed-shape {self.shape!r}; choose one of: {', '.join(SHAPES)}")

    def looks(self) -> tuple[tuple[int, ...], ...]:
        """The seeds seen at each look: the first wave, then `wave` more seeds numbered after the largest."""
        seeds, out = sorted(self.first_seeds), []
        out.append(tuple(seeds))
        while len(seeds) < self.max_seeds:
            top = seeds[-1]
            seeds = seeds + list(range(top + 1, top + 1 + min(self.wave, self.max_seeds - len(seeds))))
            out.append(tuple(seeds))
        return tuple(out)

    def times(self) -> tuple[float, ...]:
        """Information fraction t_k = seeds at look k / max_seeds."""
        return tuple(len(s) / self.max_seeds for s in self.looks())

    def confidences(self) -> tuple[float, ...]:
        """Each look's adjusted two-sided confidence, on the t scale of its seeds (`t_boundary`)."""
        seeds = tuple(len(s) for s in self.looks())
        return tuple(
            float(1.0 - 2.0 * stats.t.sf(c, n - 1)) if np.isfinite(c) else 1.0
            for c, n in zip(t_boundary(seeds, self.max_seeds, self.alpha, self.shape), seeds)
        )

    def as_record(self) -> dict:
        return {**dataclasses.asdict(self), "first_seeds": sorted(self.first_seeds), "spending": SPENDING}


# ---- the boundary -------------------------------------------------------------------------------------------


def spent_alpha(t: float, alpha: float = 0.05) -> float:
    """Lan-DeMets O'Brien-Fleming-type spending, alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)) (Lan & DeMets
    1983, Eq. (3)); 0 at t = 0, alpha at t = 1."""
    if t <= 0.0:
        return 0.0
    return float(2.0 * stats.norm.sf(stats.norm.isf(alpha / 2.0) / np.sqrt(min(t, 1.0))))


@functools.lru_cache(maxsize=256)
def boundary(times: tuple[float, ...], alpha: float = 0.05) -> tuple[float, ...]:
    """Two-sided critical values c_k of Z_k at information fractions `times` (increasing, in (0, 1]) spending
    `spent_alpha` (module docstring: recursive integration of the density of S(t_k) on the continuation region)."""
    times = tuple(float(t) for t in times)
    if not times or any(b <= a for a, b in zip(times, times[1:])) or times[0] <= 0 or times[-1] > 1 + 1e-12:
        raise BenchctlError(f"information fractions must increase within (0, 1]; got {times}")
    c = float(stats.norm.isf(spent_alpha(times[0], alpha) / 2.0))
    grid = np.linspace(-c * np.sqrt(times[0]), c * np.sqrt(times[0]), GRID)  # S(t_1) on |Z_1| < c_1
    density = stats.norm.pdf(grid, scale=np.sqrt(times[0]))  # (GRID,) sub-density of S, not crossed so far
    out = [c]
    for prev, t in zip(times, times[1:]):
        c, grid, density = _next_look(grid, density, prev, t, spent_alpha(t, alpha) - spent_alpha(prev, alpha))
        out.append(c)
    return tuple(out)


def _crossing(c: float, grid: np.ndarray, density: np.ndarray, step: float, t: float) -> float:
    """P(not crossed before, |S(t)| >= c sqrt(t)) from the sub-density of S at the previous look on `grid`."""
    b = c * np.sqrt(t)
    stay = stats.norm.cdf((b - grid) / step) - stats.norm.cdf((-b - grid) / step)  # (GRID,)
    return float(np.trapezoid(density * (1.0 - stay), grid))


def _next_look(grid: np.ndarray, density: np.ndarray, prev: float, t: float, target: float):
    """(c_k, grid, sub-density of S(t_k) on |Z_k| < c_k) from the previous look's, spending `target` at t_k."""
    step = float(np.sqrt(t - prev))  # sd of the increment S(t_k) - S(t_{k-1})
    c = float(brentq(lambda x: _crossing(x, grid, density, step, t) - target, 1e-3, 40.0, xtol=1e-10))
    new = np.linspace(-c * np.sqrt(t), c * np.sqrt(t), GRID)
    kernel = stats.norm.pdf((new[:, None] - grid[None, :]) / step) / step  # (GRID new, GRID old)
    return c, new, np.trapezoid(kernel * density[None, :], grid, axis=1)


def look_confidences(times: tuple[float, ...], alpha: float = 0.05) -> tuple[float, ...]:
    """The normal-theory adjusted two-sided confidence 1 - 2 Phi(-c_k) of each look (known variance)."""
    return tuple(float(1.0 - 2.0 * stats.norm.sf(c)) for c in boundary(tuple(times), alpha))


@functools.lru_cache(maxsize=8)
def _null_t(seeds: tuple[int, ...], shape: str) -> np.ndarray:
    """|T_k| of the T_PATHS null paths (RNG seed 0) at looks of `seeds` seeds: (M, K). normal: i.i.d. standard
    normal seeds; skewed: i.i.d. standard exponential seeds minus 1 (mean 0, skewness 2)."""
    rng = np.random.default_rng(0)
    shape_of = {"normal": rng.standard_normal, "skewed": lambda size: rng.standard_exponential(size) - 1.0}
    x = shape_of[shape]((T_PATHS, max(seeds)))  # (M, N): the seeds' values of each path
    n = np.array(seeds)
    total, squares = np.cumsum(x, axis=1)[:, n - 1], np.cumsum(x * x, axis=1)[:, n - 1]  # (M, K)
    mean = total / n
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(mean / np.sqrt((squares - n * mean**2) / (n - 1) / n))  # (M, K)


@functools.lru_cache(maxsize=256)
def t_boundary(seeds: tuple[int, ...], max_seeds: int, alpha: float = 0.05, shape: str = "normal") -> tuple[float, ...]:
    """Critical values of the paired t statistics T_k = mean / (sd / sqrt(n_k)) at looks of n_k seeds spending
    `spent_alpha(n_k / max_seeds)`: each look the value whose crossing probability among the T_PATHS paths of
    `shape` (`_null_t`) not crossed before equals the look's increment of spent alpha; for normal seeds the first
    look that spends is exact (the t quantile, n_1 - 1 df). A look under 3 seeds (`config.MIN_SEEDS`: no verdict)
    spends nothing (inf) and leaves its alpha to the next."""
    from benchctl.report.config import MIN_SEEDS

    t_stat = _null_t(tuple(seeds), shape)
    alive, out, spent = np.ones(T_PATHS, bool), [], 0.0
    for k, n_k in enumerate(seeds):
        target = spent_alpha(n_k / max_seeds, alpha) - spent
        if n_k < MIN_SEEDS:
            out.append(np.inf)
            continue
        if shape == "normal" and (k == 0 or spent == 0.0):  # nothing crossed before: exact
            c = float(stats.t.isf(target / 2.0, n_k - 1))
        else:
            candidates = np.sort(t_stat[alive, k])[::-1]
            c = float(candidates[max(int(round(target * T_PATHS)) - 1, 0)])
        alive &= t_stat[:, k] < c
        spent += target
        out.append(c)
    return tuple(out)


# ---- the looks ----------------------------------------------------------------------------------------------


def is_decided(verdict: str) -> bool:
    """A verdict that settles the claim (module docstring): holds, does not hold, paper's effect excluded."""
    return verdict in DECIDED


@dataclass(frozen=True)
class Selection:
    """How a swept setting is chosen at every look (`tuning.select_settings`, on the look's seeds only)."""

    select_on: str | None = field(default=None, metadata={"help": "validation task (None: <task>_val)"})
    tuning_seeds: tuple[int, ...] = field(default=(), metadata={"help": "held-apart tuning seeds (none: LOO)"})

    def as_record(self) -> dict:
        return {"select_on": self.select_on, "tuning_seeds": list(self.tuning_seeds)}


def look_data(data, seeds, selection: Selection | None):
    """The data of one look: the runs of `seeds`, each swept setting chosen again on those seeds alone when
    `selection` is given (`data` then holds every setting's runs: the report's data before `select_settings`), so
    a look never sees a later wave's validation scores and the report reproduces the look's choice."""
    view = at_seeds(data, seeds)
    view.notes = []
    if selection is not None:
        from benchctl.report.tuning import select_settings

        view.settings = select_settings(view, selection.select_on, None, selection.tuning_seeds)
    return view


def chosen_settings(view) -> dict:
    """{arm: {setting: seeds}} of the settings a look chose (empty when no setting is swept)."""
    settings = getattr(view, "settings", None)
    if settings is None or settings.empty:
        return {}
    rows = settings[settings["chosen"]].drop_duplicates(["arm", "setting"])
    return {arm: dict(zip(part["setting"], part["chosen_for_seeds"])) for arm, part in rows.groupby("arm")}


def at_seeds(data, seeds) -> object:
    """The report data restricted to the runs of `seeds` (their problems and metrics are joined by run_id)."""
    keep, view = set(seeds), copy.copy(data)
    view.runs = data.runs[data.runs["seed"].isin(keep)].reset_index(drop=True)
    if getattr(data, "asked", None) is not None:
        view.asked = data.asked[data.asked["seed"].isin(keep)].reset_index(drop=True)
    return view


def _premise_closed(row: dict, premise: dict | None, premise_closed: bool, requires: str | None) -> tuple[dict, bool]:
    """A claim's row at a look given its premise's (evaluate_claims' premise rule), and whether it is decided."""
    if premise is None:
        return row, is_decided(row["verdict"])
    if premise["verdict"] != "holds":
        reason = f"premise not established: {requires!r} {premise['verdict']}"
        return {**row, "verdict": "inconclusive", "reason": reason}, premise_closed
    return row, premise_closed and is_decided(row["verdict"])


def sequential_claims(
    data,
    claims: list[Claim],
    design: SequentialDesign,
    population: str = "problems",
    last_look: int | None = None,
    selection: Selection | None = None,
) -> pd.DataFrame:
    """The claims table under the sequential design: each claim at its deciding look, else at the last look the
    runs reach, or `last_look` (1-based; the analysis after that wave) when given (CLAIM_COLUMNS +
    SEQUENTIAL_COLUMNS; module docstring). `selection`: swept settings are chosen at each look on its seeds
    (`look_data`; `data` unselected); the table's attrs["settings"] lists each look's choice."""
    looks, confidences, times = design.looks(), design.confidences(), design.times()
    present = set(data.runs["seed"].dropna().astype(int))
    index = {c.id: i for i, c in enumerate(claims) if c.id is not None}
    own = [dataclasses.replace(c, requires=None) for c in claims]  # premises are resolved look by look below
    state: dict[int, tuple[dict, int, bool]] = {}  # claim -> (row, look, decided)
    chosen = []  # each look's settings
    for k, seeds in enumerate(looks[:last_look]):
        if k > 0 and not set(seeds[len(looks[k - 1]) :]) & present:
            break  # this wave has not run (yet, or for no arm)
        open_ = [i for i in range(len(claims)) if not state.get(i, ({}, 0, False))[2]]
        view = look_data(data, seeds, selection)
        chosen.append(chosen_settings(view))
        table = evaluate_claims(view, [own[i] for i in open_], confidences[k], population=population)
        rows = dict(zip(open_, table.to_dict("records")))
        for i in _premise_order(claims, index):
            if i not in rows:
                continue
            c = claims[i]
            premise = None if c.requires is None else state[index[c.requires]]
            row, closed = _premise_closed(rows[i], premise and premise[0], bool(premise and premise[2]), c.requires)
            state[i] = (row, k, closed or bool(c.testbed))
    out = _table(claims, state, design, times, confidences)
    out.attrs["settings"] = chosen
    return out


def _premise_order(claims: list[Claim], index: dict) -> list[int]:
    """Claim indices with every premise before the claims that require it."""
    order: list[int] = []

    def visit(i: int) -> None:
        if i not in order:
            if claims[i].requires is not None:
                visit(index[claims[i].requires])
            order.append(i)

    for i in range(len(claims)):
        visit(i)
    return order


def _table(claims, state, design: SequentialDesign, times, confidences) -> pd.DataFrame:
    from benchctl.report.stagewise import stagewise_estimate, stagewise_note

    rows, last = [], len(times)
    seeds = tuple(len(s) for s in design.looks())
    crit = t_boundary(seeds, design.max_seeds, design.alpha, design.shape)
    for i, c in enumerate(claims):
        row, k, decided = state[i]
        row = dict(row, median_unbiased=np.nan, bias_adjusted=np.nan)
        if c.testbed:
            row.update(decided=False, look=np.nan, seeds_at_decision=0, confidence=np.nan, alpha_spent=np.nan)
        else:
            row.update(decided=decided, look=k + 1, seeds_at_decision=int(row["seeds"]), confidence=confidences[k])
            row["alpha_spent"] = spent_alpha(times[k], design.alpha)
            if row["seeds"] == seeds[k]:  # the look's seeds all paired (else the design's paths do not apply)
                est = stagewise_estimate(row, c, seeds, crit, design.alpha)
                row.update(zip(("median_unbiased", "bias_adjusted"), est))
            notes = (row.get("reason"), _look_note(row, k, last, design), stagewise_note(row, c))
            row["reason"] = "; ".join(x for x in notes if x)
        row["looks"] = last
        rows.append(row)
    return pd.DataFrame(rows, columns=[*CLAIM_COLUMNS, *SEQUENTIAL_COLUMNS])


def _look_note(row: dict, k: int, last: int, design: SequentialDesign) -> str:
    """'decided at look 2 of 3 (6 seeds, 98.0% interval)', 'not decided by max seeds (8): verdict of look 3 of 3
    (...)' or, before the last look, 'not decided yet at look 1 of 3 (...)'."""
    where = f"look {k + 1} of {last} ({int(row['seeds'])} seeds, {100 * row['confidence']:.1f}% interval)"
    if row["decided"]:
        return f"decided at {where}"
    if k + 1 == last:
        return f"not decided by max seeds ({design.max_seeds}): verdict of {where}"
    return f"not decided yet at {where}"


# ---- the record ---------------------------------------------------------------------------------------------


def read_record(inputs) -> dict | None:
    """The first RESULTS/sequential.json among the report's input folders, or None (a fixed design)."""
    for folder in inputs:
        path = Path(folder) / RECORD_FILE
        if path.is_file():
            try:
                record = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError) as exc:
                raise BenchctlError(f"{path}: not a readable sequential record ({exc})") from None
            if not isinstance(record, dict) or record.get("kind") != RECORD_KIND:
                raise BenchctlError(f"{path}: not a {RECORD_KIND} record")
            return record
    return None


def selection_of(record: dict) -> Selection:
    """The settings rule the looks used (a record written before it was recorded: the report's default)."""
    rule = record.get("selection") or {}
    return Selection(rule.get("select_on"), tuple(int(s) for s in rule.get("tuning_seeds") or ()))


def design_of(record: dict) -> SequentialDesign:
    """The design a record was run with; a record without one is refused in one line."""
    try:
        d = record["design"]
        shape = str(d.get("shape", "normal"))
        return SequentialDesign(tuple(d["first_seeds"]), int(d["max_seeds"]), int(d["wave"]), float(d["alpha"]), shape)
    except (KeyError, TypeError, ValueError) as exc:
        raise BenchctlError(f"{RECORD_FILE}: no readable design ({type(exc).__name__}: {exc})") from None


def claims_table(data, claims: list[Claim], config) -> tuple[pd.DataFrame, str | None]:
    """The report's claims table and its note: sequential when an input folder holds a record of the matrix run's
    looks (`RECORD_FILE`), else `evaluate_claims` at the report's confidence (no note)."""
    record = read_record(config.inputs)
    if record is None:
        return evaluate_claims(data, claims, config.confidence, config.seed, population=config.population), None
    design, selection = design_of(record), selection_of(record)
    raw = getattr(data, "before_selection", None)  # the runs of every setting: each look chooses on its seeds
    table = sequential_claims(data if raw is None else raw, claims, design, config.population, None,
                              None if raw is None else selection)  # fmt: skip
    tested = table[table["look"].notna()]
    note = (
        f"claims: group-sequential design ({SPENDING}; alpha {design.alpha:g} over looks at seeds "
        f"{', '.join(str(len(s)) for s in design.looks())} of max {design.max_seeds}, adjusted confidence "
        f"{', '.join(f'{100 * c:.2f}%' for c in design.confidences())}); {int(tested['decided'].sum())} of "
        f"{len(tested)} tested claims decided; each claim's row gives the look its verdict was reached at"
    )
    if design.shape == "skewed":
        note += "; boundary calibrated on skewed (exponential-shaped) per-seed values (--seed-shape skewed)"
    if any(table.attrs.get("settings") or ()):
        note += "; a swept setting is chosen at each look on that look's seeds, as the matrix run chose it"
    if (config.select_on, tuple(config.tuning_seeds or ())) != (selection.select_on, selection.tuning_seeds):
        note += (f"; the claims keep the looks' setting rule (select_on {selection.select_on}, tuning seeds "
                 f"{list(selection.tuning_seeds) or 'none'}), not this report's")  # fmt: skip
    return table, note
