"""`--k` parsing, crash-safe part files, run-dir identity checks, the --model run-folder convention."""

import json
import os

import pyarrow as pa
import pytest

from benchctl.errors import BenchctlError
from benchctl.results import store
from benchctl.results.kspec import parse_ks
from benchctl.results.runs import default_out_dir, resolve_model


def test_range_gives_every_power_of_two_between_the_ends():
    assert parse_ks("1..256") == (1, 2, 4, 8, 16, 32, 64, 128, 256)
    assert parse_ks("4..16") == (4, 8, 16)


def test_explicit_lists_and_mixes_are_sorted_and_deduplicated():
    assert parse_ks("1,5,10") == (1, 5, 10)
    assert parse_ks("10, 1,5,1") == (1, 5, 10)
    assert parse_ks("3,8..32") == (3, 8, 16, 32)


@pytest.mark.parametrize("bad", ["", "0", "-1", "a", "1..", "..4", "8..2", "1...4", "1..100", "3..8", "1,,2", "1.5"])
def test_bad_k_forms_raise_one_error(bad):
    with pytest.raises(BenchctlError, match="--k"):
        parse_ks(bad)


def _table(ids):
    return pa.table({"problem_id": ids, "x": list(range(len(ids)))})


def test_parts_are_numbered_in_write_order_and_stale_temp_files_are_ignored(tmp_path):
    parts = store.SampleParts(tmp_path)
    parts.append(_table(["a", "a"]))
    parts.append(_table(["b"]))
    (parts.dir / ".part-00002.parquet.123.tmp").write_bytes(b"half-written")
    reopened = store.SampleParts(tmp_path)
    assert [p.name for p in reopened.paths()] == ["part-00000.parquet", "part-00001.parquet"]
    assert reopened.sample_counts() == {"a": 2, "b": 1}
    assert not list(parts.dir.glob("*.tmp"))


def test_failed_write_leaves_no_file_behind(tmp_path):
    def boom(tmp):
        tmp.write_text("partial")
        raise RuntimeError("crash mid-write")

    with pytest.raises(RuntimeError):
        store.write_atomic(tmp_path / "x.parquet", boom)
    assert list(tmp_path.iterdir()) == []


def test_changed_sampling_config_is_an_error_unless_overwrite(tmp_path):
    out = tmp_path / "run"
    store.prepare_run_dir(out, {"a": 1}, {"temperature": 0.6, "n": 4}, overwrite=False)
    (out / "keep.txt").write_text("x")
    store.prepare_run_dir(out, {"a": 2}, {"temperature": 0.6, "n": 4}, overwrite=False)  # resume: fine
    assert (out / "keep.txt").exists()
    with pytest.raises(BenchctlError, match=r"temperature=0.6 \(now 1.0\).*--overwrite"):
        store.prepare_run_dir(out, {}, {"temperature": 1.0, "n": 4}, overwrite=False)
    store.prepare_run_dir(out, {}, {"temperature": 1.0, "n": 4}, overwrite=True)
    assert not (out / "keep.txt").exists()
    assert json.loads((out / "config.json").read_text())["identity"]["temperature"] == 1.0


def test_foreign_nonempty_folder_is_never_overwritten(tmp_path):
    (tmp_path / "precious.txt").write_text("x")
    with pytest.raises(BenchctlError, match="not a benchctl eval run dir"):
        store.prepare_run_dir(tmp_path, {}, {}, overwrite=True)
    assert (tmp_path / "precious.txt").exists()


def _hf(folder):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    return folder


def test_model_folder_run_final_and_latest_checkpoint_conventions(tmp_path):
    plain = _hf(tmp_path / "plain")
    assert resolve_model(str(plain)).kind == "hf_folder"
    run = tmp_path / "myrun"
    _hf(run / "checkpoints" / "step_10" / "model")
    (run / "checkpoints" / "latest").write_text("step_10\n")
    resolved = resolve_model(str(run))
    assert (resolved.kind, resolved.name) == ("run_checkpoint", "myrun")
    assert resolved.path.endswith(os.path.join("step_10", "model"))
    _hf(run / "model")
    assert resolve_model(str(run)).kind == "run_final"
    assert default_out_dir(resolve_model(str(run))).as_posix() == "results/eval/myrun"


def test_symlinked_latest_checkpoint_and_hub_ids(tmp_path):
    run = tmp_path / "r2"
    target = _hf(run / "checkpoints" / "step_5")
    (run / "checkpoints" / "latest").symlink_to(target)
    assert resolve_model(str(run)).path == str(target)
    hub = resolve_model("Qwen/Qwen2.5-Math-7B")
    assert (hub.kind, hub.path, hub.name) == ("hub", "Qwen/Qwen2.5-Math-7B", "Qwen__Qwen2.5-Math-7B")


def test_existing_folder_without_a_model_is_an_error(tmp_path):
    with pytest.raises(BenchctlError, match="holds no config.json"):
        resolve_model(str(tmp_path))
    with pytest.raises(BenchctlError, match="no such folder"):
        resolve_model(str(tmp_path / "missing"))
