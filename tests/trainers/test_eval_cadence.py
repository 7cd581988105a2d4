"""Held-out evaluation on a rollout-token cadence (compute curves): due when the tokens cross a multiple of N, at
step 0 and at the end; a run gets one eval folder per crossing, each at the tokens the report reads."""

import pandas as pd
import pytest

from benchctl.report.compute import curve_points
from benchctl.report.load import _eval_curve_rows
from benchctl.results import train_run
from benchctl.trainers import build_config, train
from benchctl.trainers.config import eval_due


def test_an_eval_is_due_when_the_step_crosses_a_multiple_of_the_token_cadence():
    cfg = build_config(flag_values={"eval_every_tokens": 100, "progress": False})
    assert not eval_due(cfg, 1, 0, 99, last=False)
    assert eval_due(cfg, 2, 99, 100, last=False)  # reached exactly
    assert eval_due(cfg, 3, 150, 340, last=False)  # two multiples crossed in one step: one eval
    assert not eval_due(cfg, 4, 340, 399, last=False)
    assert eval_due(cfg, 5, 340, 399, last=True)
    off = build_config(flag_values={"progress": False})
    assert not eval_due(off, 5, 0, 10_000, last=True)
    both = build_config(flag_values={"eval_every_tokens": 1000, "eval_every": 2, "progress": False})
    assert eval_due(both, 2, 0, 10, last=False) and not eval_due(both, 3, 10, 20, last=False)


@pytest.mark.vllm
def test_a_run_evaluates_at_step_zero_and_at_every_token_crossing(tiny_model, tmp_path):
    run = tmp_path / "run"
    cfg = {"prompts_per_step": 4, "group_size": 2, "steps": 5, "save_every": 0, "progress": False, "out": str(run)}
    cfg.update(eval_every_tokens=60, eval_n=2, eval_k="1", eval_limit=8)
    result = train(build_config(flag_values=cfg))
    totals = [0] + [int(r["rollout/tokens_total"]) for r in result.metrics]
    due = {0} | {s for s in range(1, 6) if totals[s] // 60 > totals[s - 1] // 60} | {5}
    assert {step for step, _ in train_run.list_evals(run) if step is not None} == due
    assert all(("eval/pass@1" in r) == (r["step"] in due) for r in result.metrics)
    metrics = train_run.read_train_metrics(run).to_pandas()
    curve = _eval_curve_rows(0, run, "train", metrics)
    assert sorted(r["tokens"] for r in curve) == sorted(float(totals[s]) for s in due)
    runs = pd.DataFrame([{"run_id": 0, "arm": "grpo", "seed": 0}])
    points = curve_points(pd.DataFrame(curve), runs)
    assert len(points) == (len(due) if len(due) - 1 >= 3 else 0)
