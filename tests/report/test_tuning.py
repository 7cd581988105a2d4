"""Each arm at its own best learning rate: the setting is chosen on the validation task, the other settings' runs
leave the verdict, the validation task never enters it, and the sensitivity table shows every setting."""

import numpy as np
import pyarrow.parquet as pq
from typer.testing import CliRunner

from benchctl.cli import app
from benchctl.results.index import index_row, write_index
from benchctl.results.train_run import eval_dir
from tests.report.fixtures import train_config, write_eval, write_train_run

# (arm, lr) -> (validation accuracy, test accuracy): avspo is best at 1e-4 on validation, grpo at 3e-4
TRUTH = {
    ("grpo", 1e-4): (0.3, 0.3),
    ("grpo", 3e-4): (0.5, 0.5),
    ("avspo", 1e-4): (0.7, 0.6),
    ("avspo", 3e-4): (0.2, 0.9),
}


def _results(tmp_path, with_validation=True, tasks=None):
    results, rows = tmp_path / "results", []
    for (arm, lr), (p_val, p_test) in TRUTH.items():
        task = (tasks or {}).get(arm, "arith")
        for seed in range(3):
            rng = np.random.default_rng([seed, int(lr * 1e5), len(arm)])
            config = {**train_config(arm, seed), "lr": lr, "task": task}
            run = results / "runs" / f"{arm}-lr{lr}-s{seed}"
            test = {f"q{i}": list(rng.random(8) < p_test) for i in range(40)}
            write_train_run(run, config, test, rng_seed=seed, task=task)
            if with_validation:
                val = {f"v{i}": list(rng.random(8) < p_val) for i in range(40)}
                write_eval(eval_dir(run), f"{task}_val", val, model=run.name, seed=seed)
            rows.append(index_row(results, run, config, "done"))
    write_index(results, rows)
    return results


def test_each_arm_is_reported_at_the_setting_chosen_on_validation_not_on_test(tmp_path):
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", str(_results(tmp_path)), "--out", str(out), "--k", "1"])
    assert result.exit_code == 0, result.output
    passk = pq.read_table(out / "passk.parquet").to_pandas()
    assert set(passk["eval_task"]) == {"arith"}  # the validation task is not a verdict
    score = passk.set_index("arm")["pass_at_k"]
    assert abs(score["avspo"] - 0.6) < 0.08  # lr 1e-4 (best on validation), not 3e-4 (best on test: 0.9)
    assert abs(score["grpo"] - 0.5) < 0.08
    settings = pq.read_table(out / "settings.parquet").to_pandas()
    chosen = settings[settings["chosen"]].set_index("arm")["setting"].to_dict()
    assert chosen == {"avspo": "lr=0.0001", "grpo": "lr=0.0003"}
    assert len(settings) == 4 and (settings["seeds"] == 3).all() and set(settings["validation_task"]) == {"arith_val"}


def test_without_a_validation_task_each_setting_is_its_own_arm_with_a_note(tmp_path):
    out = tmp_path / "report"
    results = _results(tmp_path, with_validation=False)
    result = CliRunner().invoke(app, ["report", str(results), "--out", str(out), "--k", "1", "--baseline", "none"])
    assert result.exit_code == 0, result.output
    arms = set(pq.read_table(out / "passk.parquet").to_pandas()["arm"])
    assert arms == {"grpo lr=0.0001", "grpo lr=0.0003", "avspo lr=0.0001", "avspo lr=0.0003"}
    assert "evaluated on no validation task" in " ".join(result.output.split())


def test_arms_trained_on_different_tasks_are_each_chosen_on_their_own_validation_split(tmp_path):
    out = tmp_path / "report"
    results = _results(tmp_path, tasks={"avspo": "arith_steps"})
    result = CliRunner().invoke(app, ["report", str(results), "--out", str(out), "--k", "1", "--baseline", "none"])
    assert result.exit_code == 0, result.output
    settings = pq.read_table(out / "settings.parquet").to_pandas()
    chosen = settings[settings["chosen"]].set_index("arm")
    assert chosen["setting"].to_dict() == {"avspo": "lr=0.0001", "grpo": "lr=0.0003"}
    assert chosen["validation_task"].to_dict() == {"avspo": "arith_steps_val", "grpo": "arith_val"}
    passk = pq.read_table(out / "passk.parquet").to_pandas()
    assert set(passk["eval_task"]) == {"arith", "arith_steps"}
