"""`benchctl plan RESULTS`: from a finished matrix (the pilot), the mde and core-hours of a grid of designs and
the cheapest one that reaches a target mde for every comparison (docs/report.md, "Planning a design").

The statistics are `benchctl.report.design` (variance components; the mde the report would print, through its own
code), the cost `benchctl.report.design_cost`; this module lays out the grid and chooses.  Grid [our choice]: every
seeds x questions x samples of the given lists (samples only at k = 1, where the sampling component is split off);
the pilot's own design is always in it; question counts above the evaluated tasks' held-out size (the smallest,
where the task registry knows it: MATH500's 500) are replaced by that size, so no design asks for questions the
benchmark does not have.  Families, for the table and the plot: "add seeds", "add questions", "add
samples" (the other two axes at the pilot's values) and "cheapest" (the lower frontier of the designs evaluated:
no design costs less and prints a smaller mde; the scan in order of cost stops at the first design that meets the
target, `_to_evaluate`).  Family m (the primary family's size) is the pilot's number of comparisons.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from benchctl.fields import setting
from benchctl.report.config import ReportConfig
from benchctl.report.design import COMPONENT_COLUMNS, PlanInputError, pilot_components, predicted_mde
from benchctl.report.design_cost import CellCost, cell_cost
from benchctl.report.load import load_report_data
from benchctl.report.stats import comparisons_table

AXES = ["seeds", "questions", "samples"]
DESIGN_COLUMNS = ["family", "seeds", "questions", "samples", "core_hours", "cell_s", "mde", "worst", "meets"]


@dataclass(frozen=True)
class PlanConfig:
    """What `benchctl plan` needs; `sources` says where each value came from (flag/default)."""

    inputs: tuple[str, ...] = setting((), "the pilot: results folders with index.parquet, or run folders")
    baseline: str = setting("grpo", "arm every other arm is compared against (as in benchctl report)")
    where: tuple[str, ...] = setting((), "run filters key=value (as in benchctl report)")
    tasks: tuple[str, ...] = setting((), "evaluated tasks to plan for; () -> every task found")
    target_mde: float = setting(3.0, "mde to reach for every comparison, in points (percentage points)")
    budget: float | None = setting(None, "core-hours the design may cost; None -> no limit")
    seeds: tuple[int, ...] = setting((3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32), "seed counts of the grid")
    questions: tuple[int, ...] = setting((50, 100, 200, 500, 1000, 2000), "held-out question counts of the grid")
    samples: tuple[int, ...] = setting((1, 2, 4, 8, 16, 32, 64), "samples per question of the grid (k = 1 only)")
    seed_bound: float = setting(
        0.0,
        "plan with the pilot's seed mean square at its upper confidence limit of this level (e.g. 0.75; chi-square, "
        "seeds - 1 df): a pilot of 3-5 seeds often underestimates the seed component; 0 -> the point estimate",
    )
    cores: float = setting(1.0, "cores one cell holds (core-hours = cell hours x cores)")
    alpha: float = setting(0.05, "family-wise error rate of the primary family (as in benchctl report)")
    primary_k: int = setting(1, "the k whose comparisons are planned for (the report's primary family)")
    population: str = setting("problems", "'problems' or 'fixed' (as in benchctl report)")
    as_json: bool = setting(False, "print the plan as JSON instead of tables")
    out: str | None = setting(None, "folder for plan_designs.parquet, plan_components.parquet, plan.json, plan.png")
    sources: Mapping[str, str] = field(default_factory=dict, metadata={"help": "key -> flag|default"})

    def __post_init__(self) -> None:
        if not self.target_mde > 0:
            raise PlanInputError(f"--target-mde {self.target_mde:g}: must be a positive number of points, e.g. 3")
        if self.budget is not None and not self.budget > 0:
            raise PlanInputError(f"--budget {self.budget:g}: must be positive core-hours, or left out for no limit")
        if not self.cores > 0:
            raise PlanInputError(f"--cores {self.cores:g}: must be positive")
        for name, low in (("seeds", 3), ("questions", 2), ("samples", 1)):
            if not getattr(self, name) or min(getattr(self, name)) < low:
                raise PlanInputError(f"--{name}: a comma list of counts of at least {low}, e.g. 3,5,10")
        if not 0 <= self.seed_bound < 1:
            raise PlanInputError(f"--seed-bound {self.seed_bound:g}: a confidence level in [0, 1), e.g. 0.75")
        if self.population not in ("problems", "fixed"):
            raise PlanInputError(f"--population {self.population!r}: expected 'problems' or 'fixed'")


def parse_counts(name: str, text: str | None) -> tuple[int, ...]:
    """'3,5,10' -> (3, 5, 10) for the grid axis `name`; None -> PlanConfig's default."""
    if text is None:
        return PlanConfig.__dataclass_fields__[name].default
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise PlanInputError(f"--{name} {text!r}: expected a comma list of whole numbers, e.g. 3,5,10") from None


@dataclass(frozen=True)
class PlanResult:
    """The pilot's components, its cell cost, every design of the grid and the recommendation."""

    config: PlanConfig
    components: pd.DataFrame  # COMPONENT_COLUMNS, points
    cost: CellCost
    designs: pd.DataFrame  # DESIGN_COLUMNS, one row per (design, family); `mde` the worst comparison's, points
    per_comparison: pd.DataFrame  # seeds, questions, samples, arm, baseline, eval_task, mde (points)
    pilot: dict  # seeds, questions, samples of the pilot
    choice: dict | None  # the cheapest design meeting the target within the budget, or None
    message: str  # one line saying what to run, or why nothing in the grid does it
    files: tuple[Path, ...] = ()


def held_out_size(tasks) -> int | None:
    """The fewest held-out questions among the evaluated `tasks` that the task registry knows the size of (the
    local file's rows, else the task's known size); None when it knows none."""
    from benchctl.errors import BenchctlError
    from benchctl.tasks import get_task

    sizes = []
    for name in tasks:
        try:
            sizes.append(get_task(name).size())
        except BenchctlError:  # a task this install does not register: no cap from it
            continue
    sizes = [n for n in sizes if n > 0]
    return min(sizes) if sizes else None


def _grid(
    config: PlanConfig, pilot: dict, cost: CellCost, arms: int, sampling_split: bool, cap: int | None = None
) -> pd.DataFrame:
    """Every (seeds, questions, samples) of the grid, the pilot's own design included, with its cell seconds and
    core-hours (arms x seeds cells); question counts above `cap` become `cap`."""
    seeds = sorted({*config.seeds, pilot["seeds"]} - {1, 2})
    cap = max(cap, pilot["questions"]) if cap else None
    questions = sorted({*(min(q, cap) if cap else q for q in config.questions), pilot["questions"]})
    samples = sorted({*config.samples, pilot["samples"]}) if sampling_split else [pilot["samples"]]
    grid = pd.DataFrame([(s, q, n) for s in seeds for q in questions for n in samples], columns=AXES)
    grid["cell_s"] = [cost.cell_s(q, n, pilot["questions"], pilot["samples"]) for _, q, n in grid[AXES].to_numpy()]
    grid["core_hours"] = arms * grid["seeds"] * grid["cell_s"] * config.cores / 3600.0
    return grid


def _to_evaluate(grid: pd.DataFrame, pilot: dict, predict) -> list[tuple]:
    """The designs whose mde is computed: the three families, and the grid in order of cost up to the first design
    that meets the target within the budget.  A design no larger on every axis than one that failed is skipped (the
    mde falls with seeds, questions and samples), so the scan is short [our choice: `benchctl plan` in seconds]."""
    fam = grid[sum((grid[k] == pilot[k]).astype(int) for k in AXES) >= 2]
    out, failed = [tuple(d) for d in fam[AXES].to_numpy()], []
    for d in grid.sort_values(["core_hours", *AXES], kind="stable")[AXES].to_numpy():
        if any((d <= f).all() for f in failed):
            continue
        out.append(tuple(d))
        if predict(tuple(d)):
            break
        failed.append(d)
    return list(dict.fromkeys(out))


def _families(grid: pd.DataFrame, pilot: dict) -> pd.DataFrame:
    """Evaluated rows of `grid` tagged by family; a design may sit in several.  "cheapest": the lower frontier of
    the designs evaluated (no cheaper one prints a smaller mde)."""
    at = {k: grid[k] == pilot[k] for k in AXES}
    parts = [
        grid[at["questions"] & at["samples"]].assign(family="add seeds"),
        grid[at["seeds"] & at["samples"]].assign(family="add questions"),
        grid[at["seeds"] & at["questions"]].assign(family="add samples"),
    ]
    ordered = grid.sort_values(["core_hours", "mde"], kind="stable")
    frontier = ordered[ordered["mde"] < ordered["mde"].cummin().shift(fill_value=np.inf)]
    parts.append(frontier.assign(family="cheapest"))
    return pd.concat(parts, ignore_index=True)


def _predict(comps: list, designs: list[tuple], config: PlanConfig, memo: dict) -> pd.DataFrame:
    """seeds, questions, samples, arm, baseline, eval_task, mde (points) for each design and comparison."""
    level = config.alpha / len(comps)  # Holm's first step over the primary family, as the report prints it
    rows = []
    for s, q, n in designs:
        for c in comps:
            key = (int(s), int(q), float(n), c.arm, c.baseline, c.eval_task)
            if key not in memo:
                memo[key] = 100 * predicted_mde(c, int(s), int(q), float(n), level, config.population)
            rows.append((*key, memo[key]))
    return pd.DataFrame(rows, columns=[*AXES, "arm", "baseline", "eval_task", "mde"])


def _choose(grid: pd.DataFrame, config: PlanConfig) -> tuple[dict | None, str]:
    """(the cheapest evaluated design that meets the target within the budget, or None; the line that says so)."""
    ok = grid[grid["meets"]]
    within = ok if config.budget is None else ok[ok["core_hours"] <= config.budget]
    if len(within):
        best = within.sort_values(["core_hours", "mde"], kind="stable").iloc[0].to_dict()
        return best, (
            f"cheapest design reaching mde {config.target_mde:g} points for every comparison: {int(best['seeds'])} "
            f"seeds x {int(best['questions'])} questions x {best['samples']:g} samples, {best['core_hours']:.3g} "
            f"core-hours (worst: {best['worst']}, mde {best['mde']:.2f})"
        )
    affordable = grid if config.budget is None else grid[grid["core_hours"] <= config.budget]
    where = "in the grid" if config.budget is None else f"within {config.budget:g} core-hours"
    if not len(affordable):
        return None, f"no design {where}: the cheapest costs {grid['core_hours'].min():.3g} core-hours"
    low = affordable.sort_values(["mde", "core_hours"], kind="stable").iloc[0]
    return None, (
        f"no design {where} reaches mde {config.target_mde:g} points for every comparison; the smallest worst-case "
        f"mde is {low['mde']:.2f} ({int(low['seeds'])} seeds x {int(low['questions'])} questions x "
        f"{low['samples']:g} samples, {low['core_hours']:.3g} core-hours; worst: {low['worst']})"
    )


def _components_frame(comps: list, level: float, population: str, printed: pd.DataFrame) -> pd.DataFrame:
    """COMPONENT_COLUMNS plus printed_mde: what `benchctl report` prints for the pilot (its comparisons table)."""
    rows = []
    for c in comps:
        sds = [100 * float(np.sqrt(v)) for v in (c.seed, c.problem, c.interaction, c.sampling)]
        mde = 100 * predicted_mde(c, c.seeds, c.questions, c.samples, level, population)
        rows.append([c.arm, c.baseline, c.eval_task, c.k, c.seeds, c.questions, c.samples, 100 * c.diff, *sds, mde])
    frame = pd.DataFrame(rows, columns=COMPONENT_COLUMNS)
    printed = printed[printed["primary"]][["arm", "baseline", "eval_task", "mde"]]
    frame = frame.merge(printed.rename(columns={"mde": "printed_mde"}), on=["arm", "baseline", "eval_task"], how="left")
    frame["printed_mde"] = 100 * frame["printed_mde"]
    return frame


def build_plan(config: PlanConfig) -> PlanResult:
    """Load the pilot, estimate its components and cell cost, predict every design of the grid, choose."""
    report = ReportConfig(
        inputs=config.inputs, baseline=config.baseline, where=config.where, tasks=config.tasks,
        ks=(config.primary_k,), alpha=config.alpha, primary_k=config.primary_k, population=config.population,
    )  # fmt: skip
    data = load_report_data(report)
    comps = pilot_components(data, report, config.seed_bound)
    cost = cell_cost(data)
    first = comps[0]
    pilot = {"seeds": first.seeds, "questions": first.questions, "samples": first.samples}
    split = config.primary_k == 1 and np.isfinite(first.samples)
    grid = _grid(config, pilot, cost, data.runs["arm"].nunique(), split, held_out_size({c.eval_task for c in comps}))
    memo: dict = {}
    meets = lambda d: _predict(comps, [d], config, memo)["mde"].max() <= config.target_mde  # noqa: E731
    within = grid if config.budget is None else grid[grid["core_hours"] <= config.budget]
    per = _predict(comps, _to_evaluate(within, pilot, meets) + _to_evaluate(grid, pilot, lambda d: True), config, memo)
    per = per.drop_duplicates(["seeds", "questions", "samples", "arm", "baseline", "eval_task"])
    per["comparison"] = per["arm"] + " vs " + per["baseline"] + " (" + per["eval_task"] + ")"
    worst = per.loc[per.groupby(AXES, sort=False)["mde"].idxmax(), [*AXES, "mde", "comparison"]]
    grid = grid.merge(worst.rename(columns={"comparison": "worst"}), on=AXES)  # the evaluated designs
    grid["meets"] = grid["mde"] <= config.target_mde
    choice, message = _choose(grid, config)
    designs = _families(grid, pilot)[DESIGN_COLUMNS]
    if choice is not None:  # the frontier was scanned up to the recommendation only
        beyond = (designs["family"] == "cheapest") & (designs["core_hours"] > choice["core_hours"])
        designs = designs[~beyond].reset_index(drop=True)
    printed = comparisons_table(data, report)
    comp = _components_frame(comps, config.alpha / len(comps), config.population, printed)
    result = PlanResult(config, comp, cost, designs, per.drop(columns="comparison"), pilot, choice, message)
    if config.out is not None:
        from benchctl.report.design_plot import write_plan

        result = replace(result, files=write_plan(result, Path(config.out)))
    return result
