"""Run a matrix: train then evaluate every cell into RESULTS/runs/<cell>/, keeping RESULTS/index.parquet current.

Resumability [our choice]:
- a cell is *finished* when the index says `done`, RUN/eval/final/summary.parquet exists and RUN/config.json
  holds the cell's settings: it is skipped and none of its files is touched (a run trained with other `train:`
  settings than the file now gives is a failed cell, with that reason: its name cannot tell);
- any other cell runs: a run folder with a config.json is continued from its latest checkpoint (the trainer's
  SIGKILL-safe resume; its stored config must match the cell's, except the settings a resume may change), a
  finished training (RUN/model present) goes straight to the evaluation, which resumes problem by problem;
  a folder without config.json (killed before the trainer wrote one, or holding only a failure log) is cleared;
- once evaluated, a cell's folder keeps what the file's `keep:` says (`spec.KEEP`, `run_folder.prune`): by default
  everything, else without its checkpoints, or also without the model's weights;
- a failing cell is recorded `failed` with a one-line reason (traceback in RUN/error.txt) and the others go on;
  one that failed from outside it (worker killed, out of memory, node lost, engine start-up) runs again from its
  resume point up to `retries` times (`Retries`); the next `run_matrix` runs every cell left failed again;
- the index is written whole and atomically before the first cell and after each state change, so a killed
  matrix leaves the last complete index (the running cell shows `running`) and never half a table.

Cells run through an *executor*: `serial` (one after another; on CPU in this process, sharing the trainer's vLLM
engine, which starts once; a cell that trains on a GPU in a new process of its own, `in_new_process`) or `ray` (one
Ray task per cell, a new worker process per GPU cell, `benchctl.matrix.ray_executor`).
An executor is `fn(cells, work, on_start, on_done)`; `work(cell)` is
picklable (`functools.partial` of a module-level function), so a Ray executor (one cell per GPU) can submit it
as a task and call `on_start` / `on_done` in the driver, which alone writes the index.
"""

from __future__ import annotations

import dataclasses
import functools
import shutil
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchctl.errors import BenchctlError, check_range
from benchctl.matrix.failure import outside_cause
from benchctl.matrix.outcome import CellOutcome, MatrixOutcome
from benchctl.matrix.spec import Cell, MatrixSpec
from benchctl.results import train_run
from benchctl.results.index import INDEX_FILE, index_row, read_index, write_index
from benchctl.trainers import run_folder as train_folder

RUNS_DIR = "runs"
DEFAULT_RETRIES = 2  # runs again of a cell that failed from outside it (`Retries`)


# ---- where things are ---------------------------------------------------------------------------------------


def cell_run_dir(results: Path, cell: Cell) -> Path:
    return Path(results) / RUNS_DIR / cell.name


def eval_finished(run: Path) -> bool:
    """RUN/eval/final holds a complete evaluation (the overall summary is written last)."""
    return (train_run.eval_dir(run) / "summary.parquet").is_file()


def cell_row(results: Path, cell: Cell, status: str, reason: str | None = None) -> dict[str, Any]:
    """The cell's index row, from its configuration alone (so a resumed matrix writes the same rows): its `arm`
    (`Cell.arm`) and its estimator's `Estimator.label` (as RUN/config.json records it; None when the estimator
    cannot be built, a cell that fails)."""
    from benchctl.estimators import get_estimator

    try:
        label = get_estimator(cell.estimator, **dict(cell.params)).label
    except (BenchctlError, TypeError, ValueError):
        label = None
    values = {**cell.train_values(), "recipe": cell.recipe, "estimator_label": label, "arm": cell.arm}
    return index_row(results, cell_run_dir(results, cell), values, status, reason)


def previous_status(results: Path) -> dict[str, dict]:
    """{run (as stored): index row} of RESULTS/index.parquet, or {} when there is none."""
    if not (Path(results) / INDEX_FILE).is_file():
        return {}
    try:
        return {row["run"]: row for row in read_index(results).to_pylist()}
    except BenchctlError:
        return {}  # unreadable: rebuilt from the cells


def is_finished(results: Path, cell: Cell, previous: dict[str, dict]) -> bool:
    row = previous.get(cell_row(results, cell, "pending")["run"])
    if row is None or row.get("status") != "done" or not eval_finished(cell_run_dir(results, cell)):
        return False
    try:
        check_not_stale(cell, cell_run_dir(results, cell))
    except BenchctlError:
        return False  # runs again, and fails with the reason
    return True


# ---- executors ----------------------------------------------------------------------------------------------

Work = Callable[[Cell], CellOutcome]
Executor = Callable[[Sequence[Cell], Work, Callable[[Cell], None], Callable[[Cell, CellOutcome], None]], None]


def serial_executor(cells: Sequence[Cell], work: Work, on_start, on_done, address: str | None = None) -> None:
    """One cell after another; stops after an interrupted cell (`address`: unused). A cell that trains on a GPU
    runs in a new process of its own (`in_new_process`), every other one in this process."""
    for cell in cells:
        on_start(cell)
        outcome = in_new_process(work, cell) if on_gpu(cell) else work(cell)
        on_done(cell, outcome)
        if outcome.status == "interrupted":
            return


def on_gpu(cell: Cell) -> bool:
    """Whether `cell` trains with benchctl's own trainer on a GPU (`device` auto -> cuda where CUDA is present)."""
    from benchctl.trainers.device import resolve_device

    values = cell.train_values()
    return values.get("engine", "native") == "native" and resolve_device(values.get("device", "auto")) == "cuda"


def in_new_process(work: Work, cell: Cell) -> CellOutcome:
    """`work(cell)` in a new (spawned) process that ends with it, so no vLLM engine, CuMemAllocator or CUDA
    context outlives the cell [our choice, issue 40]: vLLM allows one sleep-mode engine per process, an engine left
    asleep or broken by a failure is never used again, and a cell retried after a CUDA out-of-memory error starts
    on a clean GPU. The process is started afresh for every run of the cell (the engine start-up is paid per cell).
    Ctrl-C reaches the child too (same process group): it finishes its step, checkpoints and returns `interrupted`.
    A child that dies is a failure from outside the cell (`BrokenProcessPool`: worker died)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        future = pool.submit(work, cell)
        try:
            try:
                return future.result()
            except KeyboardInterrupt:  # the child got it too: wait for its checkpoint and outcome
                return future.result()
        except Exception as exc:  # noqa: BLE001 - the child died (or could not start): this cell failed
            seconds = time.perf_counter() - start
            text = " ".join(str(exc).split()) or type(exc).__name__
            reason = f"{type(exc).__name__}: {text}"
            return CellOutcome(cell.name, "failed", reason, seconds, outside=outside_cause(exc))


def _ray(cells: Sequence[Cell], work: Work, on_start, on_done, address: str | None = None) -> None:
    from benchctl.matrix.ray_executor import ray_executor

    ray_executor(cells, work, on_start, on_done, address=address)


EXECUTORS: dict[str, Executor] = {"serial": serial_executor, "ray": _ray}


# ---- the matrix ---------------------------------------------------------------------------------------------


def run_matrix(
    spec: MatrixSpec,
    results: str | Path,
    executor: str = "serial",
    on_event: Callable[[str, Cell, CellOutcome | None], None] | None = None,
    address: str | None = None,
    report_to: str | None = None,
    retries: int = DEFAULT_RETRIES,
) -> MatrixOutcome:
    """Train and evaluate every unfinished cell of `spec` under `results`; see the module docstring.

    `on_event(kind, cell, outcome)` is called with kind `skip`, `start`, `retry` (a cell starts again after a
    failure from outside it; `outcome` is that failure), `again` (this run of the cell failed from outside it and it
    will run again) or `done` (for printing progress). `retries`: how many times a cell that failed from outside it
    runs again (`Retries`). `address`: the Ray cluster for `executor="ray"` (benchctl.matrix.ray_executor).
    `report_to`: each cell's experiment trackers (`--report-to`, a run setting a resume may change, so not part of
    the cells; None: the file's `train: {report_to: ...}`, else none)."""
    if executor not in EXECUTORS:
        raise BenchctlError(f"unknown executor {executor!r}; choose one of: {', '.join(EXECUTORS)}")
    check_range("retries", retries, 0)
    from benchctl.trainers.trackers import parse_report_to

    parse_report_to(report_to or "none")  # an unknown tracker fails before any cell
    check_cells(spec.cells)
    results = Path(results)
    results.mkdir(parents=True, exist_ok=True)
    previous = previous_status(results)
    book = Retries(results, on_event or (lambda *args: None), retries)
    todo = []
    for cell in spec.cells:
        if is_finished(results, cell, previous):
            book.rows[cell.name] = cell_row(results, cell, "done")
            book.outcomes[cell.name] = CellOutcome(cell.name, "skipped")
            book.event("skip", cell, None)
        else:
            book.rows[cell.name] = cell_row(results, cell, "pending")
            todo.append(cell)
    known = {row["run"] for row in book.rows.values()}
    book.others = [row for run, row in previous.items() if run not in known]  # runs of earlier matrix files: kept
    book.save()
    absolute = str(results.resolve())  # workers may run elsewhere
    work = functools.partial(run_cell, results=absolute, report_to=report_to)
    while todo and not any(o.status == "interrupted" for o in book.outcomes.values()):
        EXECUTORS[executor](todo, work, book.on_start, book.on_done, address=address)
        todo = [cell for cell in todo if cell.name in book.again]
        book.again.clear()
    ordered = tuple(book.outcomes[c.name] for c in spec.cells if c.name in book.outcomes)
    return MatrixOutcome(results / INDEX_FILE, ordered)


class Retries:
    """The driver's bookkeeping of one `run_matrix`: each cell's index row and latest outcome, and which cells run
    again. Retry rule [our choice; `--retries`, default 2]: a cell whose run failed from outside it
    (`benchctl.matrix.failure.outside_cause`: its worker killed, out of memory, node lost, engine start-up) runs
    again, from its latest checkpoint, up to `retries` more times; a cell that failed in itself (a bad setting, a
    traceback in benchctl) is not run again. Retried cells run after the round they failed in has finished, so a
    brief memory spike has time to pass. Only the driver writes the index (before each cell and after each outcome).
    """

    def __init__(self, results: Path, event: Callable, retries: int) -> None:
        self.results, self.event, self.retries = results, event, retries
        self.rows: dict[str, dict] = {}
        self.others: list[dict] = []
        self.outcomes: dict[str, CellOutcome] = {}
        self.again: set[str] = set()

    def save(self) -> None:
        write_index(self.results, [*self.rows.values(), *self.others])

    def on_start(self, cell: Cell) -> None:
        self.rows[cell.name] = cell_row(self.results, cell, "running")
        self.save()
        earlier = self.outcomes.get(cell.name)
        self.event("start" if earlier is None else "retry", cell, earlier)

    def on_done(self, cell: Cell, outcome: CellOutcome) -> None:
        earlier = self.outcomes.get(cell.name)
        outcome = dataclasses.replace(outcome, attempts=1 if earlier is None else earlier.attempts + 1)
        again = outcome.status == "failed" and outcome.outside is not None and outcome.attempts <= self.retries
        status = {"done": "done", "failed": "failed"}.get(outcome.status, "pending")
        self.rows[cell.name] = cell_row(self.results, cell, status, index_reason(outcome))
        self.outcomes[cell.name] = outcome
        if again:
            self.again.add(cell.name)
        self.save()
        self.event("again" if again else "done", cell, outcome)


def index_reason(outcome: CellOutcome) -> str | None:
    """The index's one-line reason: a failure from outside the cell is prefixed with its cause and the number of
    runs it had (`out of memory, 3 runs: ray task failed: ...`)."""
    if outcome.status != "failed" or outcome.outside is None:
        return outcome.reason
    runs = f", {outcome.attempts} runs" if outcome.attempts > 1 else ""
    return f"{outcome.outside}{runs}: {outcome.reason}"


def check_cells(cells: Sequence[Cell]) -> None:
    """The trainer's refusals, for every cell before any starts (`benchctl.trainers.build.preflight`): a
    token-level estimator (OAR) on a task without reasoning span; an evaluation task (the cell's final `eval:` tasks,
    and its own held-out task when `train:` sets eval_every) sharing questions with the training task, unless
    `train: {allow_overlap: true}`."""
    from benchctl.trainers import build_config
    from benchctl.trainers.build import preflight
    from benchctl.trainers.plan import resolve

    for cell in cells:
        preflight(resolve(build_config(flag_values=cell.train_values())), cell.eval.tasks, cell.eval.limit)


# ---- one cell -----------------------------------------------------------------------------------------------


def run_cell(cell: Cell, results: str, report_to: str | None = None) -> CellOutcome:
    """Train (or continue) and evaluate one cell; never raises for a failing cell (Ctrl-C -> interrupted)."""
    start = time.perf_counter()
    run = cell_run_dir(Path(results), cell)
    try:
        steps = None
        if train_folder.finished(run):
            check_not_stale(cell, run)
        else:
            result = train_cell(cell, run, report_to=report_to)
            if result.interrupted:
                return CellOutcome(cell.name, "interrupted", "interrupted (Ctrl-C)", time.perf_counter() - start)
            if getattr(result, "pending", None):  # engine verl without veRL/GPU here: the cluster runs it
                return CellOutcome(cell.name, "pending", result.pending, time.perf_counter() - start)
            steps = result.steps
        evaluation = evaluate_cell(cell, run)
        train_folder.prune(run, cell.keep)
    except KeyboardInterrupt:
        return CellOutcome(cell.name, "interrupted", "interrupted (Ctrl-C)", time.perf_counter() - start)
    except Exception as exc:  # noqa: BLE001 - any failure is recorded for this cell; the others go on
        seconds = time.perf_counter() - start
        return CellOutcome(cell.name, "failed", _reason(exc, run), seconds, outside=outside_cause(exc))
    pass_at = tuple(
        (t.task, int(k), float(p))
        for t in evaluation.tasks
        for k, p in zip(t.summary.column("k").to_pylist(), t.summary.column("pass_at_k").to_pylist())
    )
    return CellOutcome(cell.name, "done", None, time.perf_counter() - start, steps, pass_at)


def check_not_stale(cell: Cell, run: Path) -> None:
    """A finished training run must be the run the cell would make now: the run folder name holds only the varied
    values, so a changed `train:` setting in the file, or a default that moved, would otherwise reuse runs made with
    the old one. The cell's config is resolved (`benchctl.trainers.plan.resolve`) and its record compared with the
    run's config.json on every setting except those that never change what is computed (change "free" in
    `TrainConfig`'s metadata: trackers, threads, the sync probe, the display, the run folder). A setting the run
    resolves (lr, loss, loss_agg, max_tokens, overlong_buffer, eval_task) is compared by its resolved value
    (`plan.first_difference`): an explicit lr equal to the default is the same run, and a default that moved is
    stale. A config.json written before a setting or a resolved value was recorded lacks its key and is judged on
    the keys it holds (a run from before the resolved values were recorded: on its raw settings)."""
    from benchctl.trainers.config import build_config, field_names, settings
    from benchctl.trainers.plan import first_difference, record, resolve

    now = record(resolve(build_config(flag_values=cell.train_values())))
    keys = [k for k in field_names() if k not in settings("free")]
    found = first_difference(train_run.read_config(run), now, keys)
    if found is None:
        return
    key, have, want = found
    if key.endswith("_resolved"):
        name = key.removesuffix("_resolved")
        raise BenchctlError(
            f"{run} was trained with {name} {have!r}, this cell resolves it to {want!r} now (a default moved); "
            f"use another --results folder, remove the run folder, or set {name} under train:"
        )
    raise BenchctlError(
        f"{run} was trained with {key}={have!r}, the matrix file now says {want!r}; "
        "use another --results folder or remove the run folder"
    )


def _reason(exc: BaseException, run: Path) -> str:
    """One line for the index; the traceback goes to RUN/error.txt."""
    try:
        run.mkdir(parents=True, exist_ok=True)
        (run / "error.txt").write_text("".join(traceback.format_exception(exc)))
    except OSError:
        pass
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if isinstance(exc, BenchctlError) else f"{type(exc).__name__}: {text}"


def train_cell(cell: Cell, run: Path, report_to: str | None = None):
    """Start the cell's training run, or continue it from its latest checkpoint (`engine: verl` under `train:`:
    prepare RUN/verl/ and run or ingest it, `benchctl.integrations.verl_launch.launch`)."""
    from benchctl.trainers import build_config, train

    if cell.train_values().get("engine", "native") == "verl":  # RUN/verl/ may hold the cluster's outputs: kept
        from benchctl.integrations.verl_launch import launch

        return launch(build_config(flag_values={**cell.train_values(), "out": str(run)}))
    if run.exists() and not train_folder.started(run):
        shutil.rmtree(run)  # killed before the trainer wrote its config, or only a failure log: start afresh
    values = cell.train_values() | ({} if report_to is None else {"report_to": report_to})  # the flag wins
    if train_folder.started(run):  # resumed from its latest checkpoint (train_folder)
        cfg = build_config(flag_values={**values, "resume": str(run)})
    else:
        cfg = build_config(flag_values={**values, "out": str(run)})
    return train(cfg)


def run_engine(stored: dict[str, dict]):
    """The engine the trainer used for this run (`benchctl.engine.trainer_engine` with the run's arguments, so the
    process-wide LLM is reused and vLLM does not start again)."""
    from benchctl.engine import trainer_engine
    from benchctl.quiet import native_output_silenced
    from benchctl.trainers.device import resolve_device

    value = {k: entry.get("value") for k, entry in stored.items()}
    with native_output_silenced():  # reusing the LLM reloads the weights from disk: vLLM's loading bars
        return trainer_engine(value["model_resolved"], resolve_device(value["device"]), value["gpu_memory_utilization"])


def load_run_weights(engine, model_dir: Path) -> None:
    """Put RUN/model's weights into `engine` (HF safetensors names are what `Engine.load_weights` takes)."""
    from safetensors.torch import load_file

    files = sorted(Path(model_dir).glob("*.safetensors"))
    if not files and train_folder.pruned(model_dir.parent):
        raise BenchctlError(
            f"{model_dir.parent}'s weights were removed after its evaluation (the matrix file's keep: results); "
            "remove the run folder to train it again"
        )
    if not files:
        raise BenchctlError(f"{model_dir} holds no .safetensors weights")
    state = {}
    for path in files:
        state.update(load_file(str(path)))
    engine.load_weights(state)


def evaluate_cell(cell: Cell, run: Path):
    """RUN/eval/final: pass@k of the final policy on the eval tasks, sampled by the trainer's engine."""
    from benchctl.evaluation import EvalConfig, run_eval

    stored = train_run.read_config(run)
    value = {k: entry.get("value") for k, entry in stored.items()}
    engine = run_engine(stored)
    load_run_weights(engine, run / "model")
    e = cell.eval
    config = EvalConfig(
        model=str(run.resolve()),
        tasks=e.tasks,
        ks=e.ks,
        n=e.n,
        temperature=e.temperature,
        top_p=e.top_p,
        max_tokens=e.max_tokens or value["max_tokens_resolved"],
        seed=cell.seed,
        limit=e.limit,
        data_dir=value.get("data_dir"),
        out=str(train_run.eval_dir(run)),
        resamples=e.resamples,
        progress=False,
    )
    return run_eval(config, engine=engine)


# ---- status -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CellStatus:
    """One line of `benchctl matrix status`."""

    cell: Cell
    run: Path
    status: str  # the index's status; `pending` for a cell it does not list yet
    reason: str | None
    step: int | None  # latest checkpoint step
    pass_at: tuple[tuple[str, int, float], ...]


def matrix_status(spec: MatrixSpec, results: str | Path) -> list[CellStatus]:
    """Each cell's state from the index and its run folder (reads only)."""
    import pyarrow.parquet as pq

    results = Path(results)
    previous = previous_status(results)
    out = []
    for cell in spec.cells:
        run = cell_run_dir(results, cell)
        row = previous.get(cell_row(results, cell, "pending")["run"]) or {}
        status = row.get("status") or "pending"
        if status == "done" and not eval_finished(run):
            status = "pending"
        try:
            step = train_run.latest_checkpoint_step(run)
        except BenchctlError:
            step = None
        pass_at: list = []
        summary = train_run.eval_dir(run) / "summary.parquet"
        if status == "done" and summary.is_file():
            table = pq.read_table(summary, columns=["task", "k", "pass_at_k"]).to_pylist()
            pass_at = [(r["task"], int(r["k"]), float(r["pass_at_k"])) for r in table]
        out.append(CellStatus(cell, run, status, row.get("reason"), step, tuple(pass_at)))
    return out
