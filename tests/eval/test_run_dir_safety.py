"""A run folder is never wiped or misread by accident, and bad state / files give one-line errors."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchctl.errors import BenchctlError
from benchctl.estimators import get_estimator
from benchctl.estimators.oar import reshape_token_weights
from benchctl.results import store

IDENTITY = {"model": "m", "n": 4, "temperature": 0.6}


def _run_dir(tmp_path):
    out = tmp_path / "run"
    store.prepare_run_dir(out, {}, IDENTITY, overwrite=False)
    store.write_table(out / "math500" / "summary.parquet", pa.table({"task": ["math500"], "k": [1]}))
    return out


def test_overwrite_keeps_samples_of_an_unchanged_sampling_config(tmp_path):
    out = _run_dir(tmp_path)
    store.prepare_run_dir(out, {}, IDENTITY, overwrite=True)
    assert (out / "math500" / "summary.parquet").is_file()


def test_overwrite_discards_samples_of_a_different_sampling_config(tmp_path):
    out = _run_dir(tmp_path)
    with pytest.raises(BenchctlError, match="different sampling config"):
        store.prepare_run_dir(out, {}, {**IDENTITY, "temperature": 1.0}, overwrite=False)
    store.prepare_run_dir(out, {}, {**IDENTITY, "temperature": 1.0}, overwrite=True)
    assert not (out / "math500").exists()


def test_overall_summary_holds_tasks_of_earlier_commands_too(tmp_path):
    out = _run_dir(tmp_path)
    store.write_table(out / "aime24" / "summary.parquet", pa.table({"task": ["aime24"], "k": [1]}))
    store.write_overall_summary(out)
    assert sorted(pq.read_table(out / "summary.parquet").column("task").to_pylist()) == ["aime24", "math500"]


def test_out_that_is_a_file_is_a_one_line_error(tmp_path):
    path = tmp_path / "afile"
    path.write_text("x")
    with pytest.raises(BenchctlError, match="is a file"):
        store.prepare_run_dir(path, {}, IDENTITY, overwrite=False)
    assert path.read_text() == "x"


def test_corrupt_sample_part_names_the_part_to_delete(tmp_path):
    parts = store.SampleParts(tmp_path / "task")
    parts.dir.mkdir(parents=True)
    (parts.dir / "part-00000.parquet").write_bytes(b"")
    with pytest.raises(BenchctlError, match="part-00000.parquet is unreadable"):
        parts.sample_counts()


def test_estimator_state_of_wrong_shape_or_type_is_rejected():
    with pytest.raises(BenchctlError, match="no state"):
        get_estimator("grpo").load_state_dict({**get_estimator("grpo").state_dict(), "state": {}})
    est = get_estimator("avspo")
    est.advantages([[1.0, 0.0], [1.0, 1.0]])
    saved = est.state_dict()
    with pytest.raises(BenchctlError, match="tau must be a number"):
        est.load_state_dict({**saved, "state": {**saved["state"], "tau": "x"}})


def test_oar_lengths_must_give_one_length_per_response():
    with pytest.raises(BenchctlError, match="lengths must be 1-D with 2 entries"):
        reshape_token_weights([[1.0, 2.0], [3.0, 4.0]], lengths=2, q=0.5, beta=0.5, floor=0.1)
