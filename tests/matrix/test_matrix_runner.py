"""The matrix runner's bookkeeping with the training and evaluation patched out (no engine, seconds):
failures are recorded with their reason and do not stop the other cells; a rerun skips finished cells and
retries failed ones; the index is written after every state change."""

import shutil
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchctl.errors import BenchctlError
from benchctl.matrix import parse_matrix, run_matrix, runner
from benchctl.results.index import read_index
from benchctl.results.train_run import write_config

SPEC = {
    "estimators": {"grpo": {}, "dr_grpo": {}, "ha_dw": {"lambda_scale": [1.3]}},
    "group_sizes": [4],
    "seeds": [0],
    "train": {"steps": 2},
    "eval": {"tasks": ["arith"], "n": 2, "k": [1]},
}


class FakeWork:
    """Stands in for train_cell / evaluate_cell: writes RUN/model and RUN/eval/final/summary.parquet."""

    def __init__(self, fail: set[str]):
        self.fail, self.trained, self.evaluated, self.index_seen = fail, [], [], []

    def train(self, cell, run: Path, report_to=None):
        self.index_seen.append(read_index(run.parents[1]).column("status").to_pylist())
        self.trained.append(cell.name)
        if cell.name in self.fail:
            raise BenchctlError(f"boom in {cell.name}")
        write_config(run, {k: {"value": v, "source": "flag"} for k, v in cell.train_values().items()})
        (run / "model").mkdir(parents=True)
        (run / "model" / "config.json").write_text("{}")
        return type("R", (), {"interrupted": False, "steps": 2})()

    def evaluate(self, cell, run: Path):
        self.evaluated.append(cell.name)
        (run / "eval" / "final").mkdir(parents=True)
        summary = pa.table({"task": ["arith"], "k": [1], "pass_at_k": [0.5]})
        pq.write_table(summary, run / "eval" / "final" / "summary.parquet")
        task = type("T", (), {"task": "arith", "summary": summary})()
        return type("E", (), {"tasks": (task,)})()


@pytest.fixture
def fake(monkeypatch):
    def install(fail=()):
        work = FakeWork(set(fail))
        monkeypatch.setattr(runner, "train_cell", work.train)
        monkeypatch.setattr(runner, "evaluate_cell", work.evaluate)
        return work

    return install


def test_failed_cell_is_recorded_with_reason_and_the_others_finish(tmp_path, fake):
    spec = parse_matrix(SPEC)
    work = fake(fail={"tiny-dr_grpo-G4-s0"})
    outcome = run_matrix(spec, tmp_path)
    assert [o.status for o in outcome.outcomes] == ["done", "failed", "done"]
    index = read_index(tmp_path).to_pylist()
    assert [(r["run"], r["status"]) for r in index] == [
        ("runs/tiny-grpo-G4-s0", "done"),
        ("runs/tiny-dr_grpo-G4-s0", "failed"),
        ("runs/tiny-ha_dw-lambda_scale=1.3-G4-s0", "done"),
    ]
    assert index[1]["reason"] == "boom in tiny-dr_grpo-G4-s0"
    assert "boom" in (tmp_path / "runs" / "tiny-dr_grpo-G4-s0" / "error.txt").read_text()
    # the index on disk while each cell trained: that cell `running`, earlier ones final, later ones pending
    assert work.index_seen == [
        ["running", "pending", "pending"],
        ["done", "running", "pending"],
        ["done", "failed", "running"],
    ]


def test_rerun_skips_finished_cells_and_retries_failed_ones(tmp_path, fake):
    spec = parse_matrix(SPEC)
    fake(fail={"tiny-dr_grpo-G4-s0"})
    run_matrix(spec, tmp_path)
    finished = tmp_path / "runs" / "tiny-grpo-G4-s0" / "eval" / "final" / "summary.parquet"
    before = finished.stat().st_mtime_ns
    work = fake(fail=())
    outcome = run_matrix(spec, tmp_path)
    assert work.trained == ["tiny-dr_grpo-G4-s0"] and work.evaluated == ["tiny-dr_grpo-G4-s0"]
    assert [o.status for o in outcome.outcomes] == ["skipped", "done", "skipped"]
    assert set(read_index(tmp_path).column("status").to_pylist()) == {"done"}
    assert read_index(tmp_path).column("reason").null_count == 3
    assert finished.stat().st_mtime_ns == before


def test_done_in_index_but_eval_missing_is_run_again(tmp_path, fake):
    spec = parse_matrix(SPEC)
    fake()
    run_matrix(spec, tmp_path)
    import shutil

    shutil.rmtree(tmp_path / "runs" / "tiny-grpo-G4-s0" / "eval")
    work = fake()
    run_matrix(spec, tmp_path)
    assert work.evaluated == ["tiny-grpo-G4-s0"] and work.trained == []  # RUN/model present: evaluation only


def test_rows_of_runs_from_other_matrix_files_are_kept(tmp_path, fake):
    fake()
    run_matrix(parse_matrix(SPEC), tmp_path)
    fake()
    run_matrix(parse_matrix({**SPEC, "estimators": {"grpo": {}}}), tmp_path)
    assert len(read_index(tmp_path)) == 3


def test_status_reports_index_state_and_final_pass_at_k(tmp_path, fake):
    spec = parse_matrix(SPEC)
    fake(fail={"tiny-dr_grpo-G4-s0"})
    run_matrix(spec, tmp_path)
    rows = {r.cell.name: r for r in runner.matrix_status(spec, tmp_path)}
    assert rows["tiny-grpo-G4-s0"].status == "done" and rows["tiny-grpo-G4-s0"].pass_at == (("arith", 1, 0.5),)
    assert rows["tiny-dr_grpo-G4-s0"].status == "failed"
    assert rows["tiny-dr_grpo-G4-s0"].reason == "boom in tiny-dr_grpo-G4-s0"


def test_unknown_executor_is_refused(tmp_path):
    with pytest.raises(BenchctlError, match="unknown executor 'dask'; choose one of: serial, ray"):
        run_matrix(parse_matrix(SPEC), tmp_path, executor="dask")


def test_finished_run_trained_with_other_settings_fails_with_the_reason(tmp_path, fake):
    fake()
    run_matrix(parse_matrix(SPEC), tmp_path)
    work = fake()
    outcome = run_matrix(parse_matrix({**SPEC, "train": {"steps": 5}}), tmp_path)
    assert {o.status for o in outcome.outcomes} == {"failed"} and work.trained == []
    assert "tiny-grpo-G4-s0 was trained with steps=2, the matrix file now says 5" in outcome.outcomes[0].reason


def test_report_to_reaches_each_cells_train_config_and_a_resume_may_change_it(tmp_path, monkeypatch):
    import benchctl.trainers as trainers

    seen = []
    monkeypatch.setattr(trainers, "train", lambda cfg: seen.append(cfg) or "trained")
    cell = parse_matrix(SPEC).cells[0]
    run = tmp_path / "run"
    assert runner.train_cell(cell, run, report_to="tensorboard") == "trained"
    assert seen[-1].report_to == "tensorboard" and seen[-1].out == str(run)
    write_config(run, {k: {"value": v, "source": "flag"} for k, v in {**cell.train_values(), "report_to": "x"}.items()})
    runner.train_cell(cell, run, report_to="none")  # continued: report_to is a resumable run setting
    assert (seen[-1].report_to, seen[-1].resume) == ("none", str(run))
    shutil.rmtree(run)
    settings = {**dict(cell.train_settings), "report_to": "tensorboard"}
    in_file = replace(cell, train_settings=tuple(sorted(settings.items())))
    runner.train_cell(in_file, run)  # the file's `train: {report_to: ...}` and no flag
    assert seen[-1].report_to == "tensorboard"


def test_an_unknown_tracker_fails_before_any_cell(tmp_path, fake):
    work = fake()
    with pytest.raises(BenchctlError, match="--report-to 'mlflow' is not valid"):
        run_matrix(parse_matrix(SPEC), tmp_path, report_to="mlflow")
    assert work.trained == []


def test_a_setting_a_resume_may_freely_change_leaves_a_finished_cell_fresh(tmp_path, fake):
    fake()
    run_matrix(parse_matrix({**SPEC, "train": {"steps": 2, "threads": 1}}), tmp_path)
    work = fake()
    outcome = run_matrix(parse_matrix({**SPEC, "train": {"steps": 2, "threads": 2}}), tmp_path)
    assert {o.status for o in outcome.outcomes} == {"skipped"} and work.trained == []


def test_index_row_holds_the_cells_arm_and_its_estimators_label():
    spec = parse_matrix(
        {
            "estimators": {"agrae_dr": {"estimator": "a_grae", "base": "dr_grpo"}, "ha_dw": {"lambda_scale": [1.5]}},
            "losses": [None, "cispo"],
            "group_sizes": [4],
        }
    )
    rows = [runner.cell_row(Path("results"), cell, "pending") for cell in spec.cells]
    assert sorted((r["arm"], r["estimator_label"]) for r in rows) == [
        ("agrae_dr(base=dr_grpo)", "a_grae(base=dr_grpo)"),
        ("agrae_dr(base=dr_grpo)+cispo", "a_grae(base=dr_grpo)"),
        ("ha_dw(lambda_scale=1.5)", "ha_dw(base=grpo)"),
        ("ha_dw(lambda_scale=1.5)+cispo", "ha_dw(base=grpo)"),
    ]


def test_a_finished_run_made_at_a_default_learning_rate_that_has_since_moved_is_stale(tmp_path, fake):
    spec = parse_matrix({**SPEC, "estimators": {"dapo": {"estimator": "grpo", "recipe": "dapo"}}})
    cell, run = spec.cells[0], tmp_path / "runs" / spec.cells[0].name
    record = {k: {"value": v, "source": "flag"} for k, v in cell.train_values().items()}
    write_config(run, {**record, "lr_resolved": {"value": 3e-4, "source": "derived"}})  # before the sqrt rule
    (run / "model").mkdir(parents=True)
    (run / "model" / "config.json").write_text("{}")
    runner.check_not_stale(replace(cell, train_settings=(*cell.train_settings, ("lr", 3e-4))), run)  # lr named: ok
    with pytest.raises(BenchctlError, match=r"was trained with lr 0.0003, this cell resolves it to 7.5e-05 now"):
        runner.check_not_stale(cell, run)  # DAPO's 16 updates a batch: 3e-4 / sqrt(16)


def _finished_run(tmp_path, stored: dict):
    """A finished run folder whose config.json holds `stored` ({key: value})."""
    run = tmp_path / "runs" / "cell"
    write_config(run, {k: {"value": v, "source": "flag"} for k, v in stored.items()})
    (run / "model").mkdir(parents=True)
    (run / "model" / "config.json").write_text("{}")
    return run


def test_a_run_is_judged_by_its_resolved_values_so_a_moved_default_is_stale_and_an_equal_explicit_one_is_not(tmp_path):
    from benchctl.trainers import build_config
    from benchctl.trainers.plan import record, resolve

    cell = parse_matrix(SPEC).cells[0]
    made = record(resolve(build_config(flag_values=cell.train_values())))  # the run the cell makes today
    stored = {k: entry["value"] for k, entry in made.items()}
    runner.check_not_stale(cell, _finished_run(tmp_path / "a", stored))  # the same run: fresh
    explicit = {**stored, "max_tokens": stored["max_tokens_resolved"], "lr": stored["lr_resolved"]}
    runner.check_not_stale(cell, _finished_run(tmp_path / "b", explicit))  # explicit values equal to the defaults
    moved = {**stored, "max_tokens_resolved": 16}  # a run made when arith's default was 16 tokens
    with pytest.raises(BenchctlError, match=r"trained with max_tokens 16, this cell resolves it to 8 now"):
        runner.check_not_stale(cell, _finished_run(tmp_path / "c", moved))
    default_moved = {**stored, "clip_high": 0.28}  # a setting the matrix file does not name, whose default moved
    with pytest.raises(BenchctlError, match=r"trained with clip_high=0.28, the matrix file now says 0.2"):
        runner.check_not_stale(cell, _finished_run(tmp_path / "d", default_moved))


def test_a_run_recorded_before_its_resolved_values_is_judged_on_the_settings_it_recorded(tmp_path):
    cell = parse_matrix(SPEC).cells[0]
    old = {**cell.train_values(), "lr": None, "max_tokens": None, "loss": None}  # no *_resolved keys, no new settings
    runner.check_not_stale(cell, _finished_run(tmp_path / "a", old))
    with pytest.raises(BenchctlError, match=r"trained with steps=3, the matrix file now says 2"):
        runner.check_not_stale(cell, _finished_run(tmp_path / "b", {**old, "steps": 3}))


@pytest.mark.parametrize(
    ("keep", "left"),
    [("all", {"checkpoints", "model.safetensors"}), ("model", {"model.safetensors"}), ("results", {"PRUNED"})],
)
def test_an_evaluated_cell_keeps_what_the_files_keep_says_and_stays_finished(tmp_path, fake, monkeypatch, keep, left):
    spec = parse_matrix({**SPEC, "estimators": {"grpo": {}}, "keep": keep})
    work = fake()
    train = work.train

    def train_with_weights(cell, run, report_to=None):
        out = train(cell, run, report_to)
        (run / "checkpoints" / "step-000002").mkdir(parents=True)
        (run / "model" / "model.safetensors").write_bytes(b"weights")
        return out

    monkeypatch.setattr(runner, "train_cell", train_with_weights)
    run_matrix(spec, tmp_path)
    run = tmp_path / "runs" / "tiny-grpo-G4-s0"
    found = {p.name for p in (run / "model").iterdir()} | {p.name for p in run.iterdir()}
    assert found & {"checkpoints", "model.safetensors", "PRUNED"} == left
    assert (run / "eval" / "final" / "summary.parquet").is_file() and (run / "model" / "config.json").is_file()
    work = fake()
    assert [o.status for o in run_matrix(spec, tmp_path).outcomes] == ["skipped"] and work.trained == []


def test_keep_is_not_part_of_a_cells_name_or_hash_and_a_bad_value_is_one_line():
    from benchctl.matrix.spec import cell_hash

    plain, kept = parse_matrix(SPEC).cells[0], parse_matrix({**SPEC, "keep": "results"}).cells[0]
    assert plain.name == kept.name and cell_hash(plain) == cell_hash(kept) and kept.keep == "results"
    with pytest.raises(BenchctlError, match="keep must be one of all, model, results; got 'none'"):
        parse_matrix({**SPEC, "keep": "none"})


def test_a_pruned_run_asked_to_evaluate_again_says_its_weights_were_removed(tmp_path):
    from benchctl.trainers import run_folder

    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    run_folder.prune(tmp_path, "results")
    with pytest.raises(BenchctlError, match="weights were removed after its evaluation"):
        runner.load_run_weights(None, tmp_path / "model")
