"""Terminal output of `benchctl matrix` (rich tables on stdout, one progress line per cell)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from benchctl.matrix.runner import CellOutcome, CellStatus, MatrixOutcome
from benchctl.matrix.spec import Cell, MatrixSpec

_STYLE = {
    "done": "green",
    "failed": "red",
    "running": "yellow",
    "pending": "dim",
    "skipped": "green",
    "interrupted": "yellow",
}


def _console(soft_wrap: bool = False):
    from rich.console import Console

    return Console(highlight=False, soft_wrap=soft_wrap)


def _pass(pass_at: Sequence[tuple[str, int, float]]) -> str:
    return " ".join(f"{task}@{k}={p:.3f}" for task, k, p in pass_at)


def print_cells(spec: MatrixSpec, results: str | Path) -> None:
    """`--dry-run`: every cell and its run folder, nothing run."""
    from rich.table import Table

    table = Table(title=f"{spec.path}: {len(spec.cells)} cells, run folders under {Path(results) / 'runs'}")
    losses = any(c.loss is not None for c in spec.cells)
    for col in ("#", "cell (run folder)", "estimator", "params", "settings", "recipe", *(["loss"] * losses), "G"):
        table.add_column(col)
    table.add_column("seed")
    for i, c in enumerate(spec.cells, 1):
        table.add_row(
            str(i),
            c.name,
            c.estimator,
            ", ".join(f"{k}={v}" for k, v in c.params),
            ", ".join(f"{k}={v}" for k, v in c.swept),
            c.recipe or "",
            *([c.loss or "default"] * losses),
            str(c.group_size),
            str(c.seed),
        )
    _console().print(table)
    if spec.cells:
        e, train = spec.cells[0].eval, dict(spec.cells[0].train_settings)
        _console().print(
            f"train: {train or 'trainer defaults'}; eval: {', '.join(e.tasks)} n={e.n} "
            f"k={','.join(map(str, e.ks))}" + (f" limit={e.limit}" if e.limit else "")
        )


def print_status(rows: Sequence[CellStatus]) -> None:
    from rich.table import Table

    table = Table()
    for col in ("cell", "status", "checkpoint step", "pass@k (eval/final)", "reason"):
        table.add_column(col)
    for r in rows:
        style = _STYLE.get(r.status, "")
        table.add_row(
            r.cell.name,
            f"[{style}]{r.status}[/]",
            "" if r.step is None else str(r.step),
            _pass(r.pass_at),
            r.reason or "",
        )
    _console().print(table)
    counts = {s: sum(r.status == s for r in rows) for s in ("done", "running", "failed", "pending")}
    _console().print(", ".join(f"{n} {s}" for s, n in counts.items()) + f" of {len(rows)} cells")


def time_left(elapsed: float, finished: int, remaining: int, slots: int = 1) -> str:
    """`about N min left`: the remaining cells at the wall-clock rate of those finished so far (elapsed seconds since
    the first cell started over cells finished), which counts cells running side by side (`--executor ray`, `slots`
    at a time) and their start-up [our choice: no per-arm model, so an arm dearer than the mean makes it optimistic
    while it runs]. "" until every slot has finished a cell (the first wave alone, start-up and all, overstated the
    14-seed demo's 33 min left as 109) and when none remains."""
    if finished < max(1, slots) or remaining < 1:
        return ""
    seconds = elapsed / finished * remaining
    if seconds >= 60:
        return f"about {round(seconds / 60)} min left"
    return f"about {max(1, round(seconds))} s left"


def failure_text(outcome: CellOutcome, retries: int | None = None) -> str:
    """A failed run's cause and what happens next: `in the cell, not retried: REASON`, `outside the cell (worker
    died), retry 1 of 2 follows from its checkpoint: REASON` (while runs are left: `outcome.attempts <= retries`),
    `outside the cell (worker died), left failed after 3 runs: REASON`."""
    if outcome.outside is None:
        return f"in the cell, not retried: {outcome.reason or ''}"
    if retries is not None and outcome.attempts <= retries:
        then = f"retry {outcome.attempts} of {retries} follows from its checkpoint"
    else:
        then = f"left failed after {outcome.attempts} run{'s' * (outcome.attempts > 1)}"
    return f"outside the cell ({outcome.outside}), {then}: {outcome.reason or ''}"


def progress_printer(total: int, retries: int | None = None, clock=time.monotonic):
    """An `on_event` callback for `run_matrix` printing one line per cell on stdout; a finished cell's line ends
    with how many cells are done and the time left (`time_left`); a failed cell's line says whether the failure
    came from outside the cell and is retried (`failure_text`; `retries`: `run_matrix`'s)."""
    state = {"i": 0, "skipped": 0, "finished": 0, "running": 0, "t0": None, "slots": 0}
    console = _console(soft_wrap=True)  # one line per event, also in a log file

    def on_event(kind: str, cell: Cell, outcome: CellOutcome | None) -> None:
        if kind == "skip":
            state["i"] += 1
            state["skipped"] += 1
            console.print(f"[{state['i']}/{total}] {cell.name}: finished earlier, skipped")
        elif kind in ("start", "retry"):
            state["i"] += kind == "start"
            state["t0"] = clock() if state["t0"] is None else state["t0"]
            state["running"] += 1
            state["slots"] = max(state["slots"], state["running"])  # cells side by side: the executor's width
            of = "" if retries is None else f" of {retries}"
            what = "training + evaluation" if outcome is None else f"retry {outcome.attempts}{of}, from its checkpoint"
            console.print(f"[{state['i']}/{total}] {cell.name}: {what} ...")
        elif outcome is not None:
            state["running"] -= 1
            state["finished"] += kind == "done"
            style = _STYLE.get(outcome.status, "")
            tail = _pass(outcome.pass_at) if outcome.status == "done" else failure_text(outcome, retries)
            done = state["skipped"] + state["finished"]
            left = time_left(clock() - state["t0"], state["finished"], total - done, state["slots"])
            where = f"  ({done}/{total} cells{', ' + left if left else ''})"
            console.print(f"      {cell.name}: [{style}]{outcome.status}[/] in {outcome.seconds:.0f} s  {tail}{where}")

    return on_event


def print_outcome(outcome: MatrixOutcome) -> None:
    """The counts of each status, then every cell left failed with its cause, and how to retry only those."""
    counts: dict[str, int] = {}
    for o in outcome.outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    console = _console(soft_wrap=True)
    console.print(", ".join(f"{n} {s}" for s, n in counts.items()) + f"; index: {outcome.index}")
    failed = outcome.failed
    if not failed:
        return
    console.print(
        f"[red]{len(failed)} of {len(outcome.outcomes)} cells left failed[/]; the same command runs only these "
        "again (finished cells are skipped):"
    )
    runs = Path(outcome.index).parent / "runs"
    for o in failed:
        where = f" (traceback: {runs / o.name / 'error.txt'})" if (runs / o.name / "error.txt").is_file() else ""
        console.print(f"  {o.name}: {failure_text(o)}{where}")


def print_look(look: int, looks: int, claims) -> None:
    """`--until-decided`: after each wave, each tested claim's verdict at this look, its seeds, and the look it was
    decided at (`benchctl.report.sequential`)."""
    from rich.table import Table

    tested = claims[claims["look"].notna()]
    decided = int(tested["decided"].sum())
    table = Table(title=f"look {look} of {looks}: {decided} of {len(tested)} claims decided")
    for col in ("claim", "arm vs baseline", "effect [CI]", "seeds", "verdict", "decided at"):
        table.add_column(col, overflow="fold")
    for c in tested.itertuples():
        interval = "-" if c.low != c.low else f"{c.effect:+.3f} [{c.low:+.3f}, {c.high:+.3f}]"
        adjusted = getattr(c, "bias_adjusted", float("nan"))
        interval += f"; bias-adjusted {adjusted:+.3f}" if adjusted == adjusted else ""  # report.stagewise
        at = f"look {int(c.look)} ({100 * c.confidence:.1f}% CI)" if c.decided else "-"
        table.add_row(c.id or c.claim, f"{c.arm} vs {c.baseline}", interval, str(c.seeds), c.verdict, at)
    _console().print(table)
