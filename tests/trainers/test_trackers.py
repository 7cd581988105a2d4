"""Trackers: `--report-to` writes the numeric columns of each metrics row to TensorBoard (read back
with its EventAccumulator), wandb (an offline run under the run folder) and trackio; a missing package or an
unknown name is one BenchctlError line."""

import builtins
import importlib.util
import json
import math
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import torch

from benchctl.errors import BenchctlError
from benchctl.trainers.trackers import Trackers, numeric_scalars, open_trackers, parse_report_to

ROWS = [
    {"step": 1, "reward/mean": 0.25, "policy/entropy": np.float32(1.5), "eval/pass@1": float("nan"), "flag": True},
    {"step": 2, "reward/mean": 0.5, "policy/entropy": torch.tensor(1.25), "eval/pass@1": 0.125, "note": "text"},
    {"step": 3, "reward/mean": 0.75, "policy/entropy": 1.0, "eval/pass@1": float("nan"), "flag": False},
]


def _expected():
    """tag -> [(step, value)], what each tracker must hold: finite numbers only."""
    out: dict[str, list] = {}
    for row in ROWS:
        for key, value in row.items():
            value = value.item() if hasattr(value, "item") else value
            if key != "step" and not isinstance(value, str) and math.isfinite(float(value)):
                out.setdefault(key, []).append((row["step"], float(value)))
    return out


def test_numeric_scalars_keep_finite_numbers_only():
    assert numeric_scalars(ROWS[0]) == {"reward/mean": 0.25, "policy/entropy": 1.5, "flag": 1.0}
    assert numeric_scalars(ROWS[1]) == {"reward/mean": 0.5, "policy/entropy": 1.25, "eval/pass@1": 0.125}


def test_parse_report_to_reads_a_comma_list_and_refuses_unknown_names():
    assert parse_report_to("none") == ()
    assert parse_report_to("") == ()
    assert parse_report_to("tensorboard, wandb,tensorboard") == ("tensorboard", "wandb")
    assert parse_report_to(["trackio"]) == ("trackio",)
    with pytest.raises(BenchctlError, match="'mlflow' is not valid; choose from: none, tensorboard, wandb, trackio"):
        parse_report_to("tensorboard,mlflow")


def test_none_is_a_null_tracker(tmp_path):
    trackers = open_trackers("none", tmp_path)
    trackers.log(1, ROWS[0])
    trackers.close()
    assert list(tmp_path.iterdir()) == []


def test_tensorboard_event_files_hold_the_rows_scalars(tmp_path):
    pytest.importorskip("tensorboard", reason="pip install 'benchctl[tensorboard]'")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    with open_trackers("tensorboard", tmp_path) as trackers:
        for row in ROWS:
            trackers.log(row["step"], row)
    acc = EventAccumulator(str(tmp_path / "tensorboard"))
    acc.Reload()
    got = {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
    want = _expected()
    assert set(got) == set(want)
    for tag, points in want.items():
        assert [s for s, _ in got[tag]] == [s for s, _ in points]
        assert [v for _, v in got[tag]] == pytest.approx([v for _, v in points], rel=1e-6)


def test_tensorboard_resume_purges_the_steps_after_the_checkpoint(tmp_path):
    pytest.importorskip("tensorboard", reason="pip install 'benchctl[tensorboard]'")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    with open_trackers("tensorboard", tmp_path) as trackers:
        for step in (1, 2, 3):
            trackers.log(step, {"x": float(step)})
    with open_trackers("tensorboard", tmp_path, resume_step=1) as trackers:  # crashed after step 3, ckpt at 1
        for step in (2, 3):
            trackers.log(step, {"x": 10.0 * step})
    acc = EventAccumulator(str(tmp_path / "tensorboard"))
    acc.Reload()
    assert [(e.step, e.value) for e in acc.Scalars("x")] == [(1, 1.0), (2, 20.0), (3, 30.0)]


def test_wandb_writes_an_offline_run_under_the_run_folder(tmp_path, monkeypatch):
    pytest.importorskip("wandb", reason="pip install 'benchctl[wandb]'")
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    with open_trackers("wandb", tmp_path, config={"lr": 1e-6}) as trackers:
        for row in ROWS:
            trackers.log(row["step"], row)
    runs = sorted((tmp_path / "wandb").glob("offline-run-*"))
    run_id = (tmp_path / "wandb_id.txt").read_text().strip()
    assert len(runs) == 1 and runs[0].name.endswith(run_id)
    records = list(runs[0].glob("*.wandb"))  # the record file `wandb sync` uploads
    assert len(records) == 1
    deadline = time.monotonic() + 30  # wandb's service process may finish writing after finish() returns
    while b"0.125" not in (data := records[0].read_bytes()) and time.monotonic() < deadline:
        time.sleep(0.2)
    # protobuf records; wandb 0.31 ships no Python reader of them, so look for the bytes
    for key in ("reward/mean", "policy/entropy", "eval/pass@1", "flag"):
        assert key.encode() in data
    assert b"0.125" in data and b"1e-6" in data  # a logged value and the config's lr


def test_trackio_logs_the_rows(tmp_path):
    if importlib.util.find_spec("trackio") is None:
        pytest.skip("trackio is not installed: pip install 'benchctl[trackio]'")
    script = textwrap.dedent(
        f"""
        import json, sqlite3
        from benchctl.trainers.trackers import open_trackers
        with open_trackers("trackio", {str(tmp_path / "run")!r}, project="t") as trackers:
            trackers.log(1, {{"x": 1.0, "s": "skip"}})
            trackers.log(2, {{"x": 2.5, "y": float("nan")}})
        rows = sqlite3.connect({str(tmp_path / "store" / "t.db")!r}).execute("select step, metrics from metrics")
        print(json.dumps([(s, json.loads(m)) for s, m in rows]))
        """
    )
    env = {**os.environ, "TRACKIO_DIR": str(tmp_path / "store")}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    logged = [
        (s, {k: v for k, v in m.items() if k in ("x", "y", "s")}) for s, m in json.loads(out.stdout.splitlines()[-1])
    ]
    assert [(s, m) for s, m in logged if m] == [(1, {"x": 1.0}), (2, {"x": 2.5})]


@pytest.mark.parametrize("backend,module", [("tensorboard", "tensorboard"), ("wandb", "wandb"), ("trackio", "trackio")])
def test_a_missing_package_names_the_extra_to_install(tmp_path, monkeypatch, backend, module):
    real_import = builtins.__import__

    def no_backend(name, *args, **kwargs):
        if name.split(".")[0] == module:
            raise ImportError(f"No module named {module!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_backend)
    with pytest.raises(BenchctlError, match=rf"pip install 'benchctl\[{backend}\]'"):
        open_trackers(backend, tmp_path)


def test_several_trackers_are_one_and_close_once():
    calls = []

    class Probe:
        def __init__(self, name):
            self.name = name

        def log(self, step, row):
            calls.append((self.name, step, row["x"]))

        def close(self):
            calls.append((self.name, "closed"))

    trackers = Trackers([Probe("a"), Probe("b")])
    trackers.log(4, {"x": 1.0})
    trackers.close()
    trackers.close()
    assert calls == [("a", 4, 1.0), ("b", 4, 1.0), ("a", "closed"), ("b", "closed")]
