"""Each arm at its own best learning rate: the setting is chosen on the validation task without the seed it is
tested on (or on held-apart seeds), the other settings' runs leave the verdict, the validation task never enters
it, and the settings table shows every setting and the seeds it served."""

import numpy as np
import pandas as pd
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


def _results(tmp_path, with_validation=True, tasks=None, truth=None):
    results, rows = tmp_path / "results", []
    for (arm, lr), (p_val, p_test) in (truth or TRUTH).items():
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


def test_a_lucky_run_never_chooses_the_setting_it_is_tested_on():
    from benchctl.report.tuning import LOO, choose_per_seed

    # settings x seeds validation scores: "b" is worse on seeds 1 and 2 but seed 0's run of "b" was lucky
    val = pd.DataFrame({0: [0.5, 0.9], 1: [0.5, 0.4], 2: [0.5, 0.4]}, index=["a", "b"])
    chosen = choose_per_seed(val, val.notna())
    assert chosen[0] == ("a", LOO)  # chosen on seeds 1 and 2, where "a" is better
    assert chosen[1] == ("b", LOO) and chosen[2] == ("b", LOO)  # seed 0's luck picks, but seeds 1, 2 are tested


def test_held_apart_tuning_seeds_choose_once_and_are_never_tested():
    from benchctl.report.tuning import HELD_APART, choose_per_seed

    val = pd.DataFrame({0: [0.9, 0.1], 1: [0.8, 0.2], 2: [0.1, 0.9], 3: [0.1, 0.9]}, index=["a", "b"])
    chosen = choose_per_seed(val, val.notna(), tuning_seeds=(0, 1))
    assert chosen == {2: ("a", HELD_APART), 3: ("a", HELD_APART)}


def test_settings_table_names_for_every_seed_the_setting_its_test_value_comes_from(tmp_path):
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", str(_results(tmp_path)), "--out", str(out), "--k", "1"])
    assert result.exit_code == 0, result.output
    settings = pq.read_table(out / "settings.parquet").to_pandas()
    for _, part in settings.groupby(["arm", "eval_task"]):
        served = [s for cell in part["chosen_for_seeds"] for s in cell.split(",") if s]
        assert sorted(served) == ["0", "1", "2"]  # each seed served by exactly one setting
    assert set(settings["method"]) == {"leave-one-seed-out"}
    assert "leave-one-seed-out" in " ".join(result.output.split())


def test_an_arm_swept_over_a_wider_grid_than_its_baseline_gets_a_note(tmp_path):
    truth = {k: v for k, v in TRUTH.items() if k != ("grpo", 1e-4)}  # grpo at one lr, avspo at two
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", str(_results(tmp_path, truth=truth)), "--out", str(out), "--k", "1"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "avspo was swept over 2 setting(s)" in text and "its baseline grpo over 1" in text


def test_tuning_seeds_leave_the_test_tables(tmp_path):
    out = tmp_path / "report"
    args = ["report", str(_results(tmp_path)), "--out", str(out), "--k", "1", "--tuning-seeds", "0"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    passk = pq.read_table(out / "passk.parquet").to_pandas()
    assert (passk["seeds"] == 2).all()  # seeds 1 and 2 only
    settings = pq.read_table(out / "settings.parquet").to_pandas()
    assert set(settings["method"]) == {"held-apart tuning seeds"}
    bad = CliRunner().invoke(app, [*args[:-1], "zero"])
    assert bad.exit_code == 2 and "--tuning-seeds 'zero'" in bad.output


def test_runs_without_a_training_task_column_are_chosen_per_arm_on_the_select_on_task():
    from types import SimpleNamespace

    from benchctl.report.tuning import select_settings

    runs, problems = [], []
    for lr, p_val in ((1e-4, 0.2), (3e-4, 0.8)):
        for seed in range(3):
            runs.append({"run_id": len(runs), "arm": "grpo", "seed": seed, "lr": lr})
            for task, value in (("v", p_val), ("t", 0.5)):
                problems += [{"run_id": len(runs) - 1, "eval_task": task, "problem_id": i, "k": 1, "value": value}
                             for i in range(4)]  # fmt: skip
    data = SimpleNamespace(runs=pd.DataFrame(runs), problems=pd.DataFrame(problems), metrics=pd.DataFrame(),
                           eval_curve=pd.DataFrame(), notes=[], group_by=("arm",), arm_column="arm")  # fmt: skip
    settings = select_settings(data, "v")
    assert sorted(data.runs["lr"]) == [3e-4] * 3 and set(data.problems["eval_task"]) == {"t"}
    assert settings.set_index("setting")["chosen_for_seeds"].to_dict() == {"lr=0.0003": "0,1,2", "lr=0.0001": ""}


def test_a_seed_left_out_of_the_procedure_neither_chooses_nor_is_tested():
    from benchctl.report.tuning import LOO, choose_per_seed

    # seed 0's validation favours "a" strongly; without it, seeds 1 and 2 each choose on the other one alone
    val = pd.DataFrame({0: [0.9, 0.2], 1: [0.1, 0.6], 2: [0.5, 0.4]}, index=["a", "b"])
    assert choose_per_seed(val, val.notna(), without=0) == {1: ("a", LOO), 2: ("b", LOO)}


def test_the_jackknife_of_an_unswept_arm_is_the_paired_t_variance_of_its_seed_means():
    from benchctl.report.crossfit import REFIT_COLUMNS, delete_one_seed_means, jackknife_variance

    full = pd.DataFrame(np.random.default_rng(0).random((7, 5)))  # problems x seeds
    replicates = delete_one_seed_means(full, pd.DataFrame(columns=REFIT_COLUMNS))
    assert np.isclose(jackknife_variance(replicates.to_numpy()), full.mean(axis=0).var(ddof=1) / 5)


def _swept(arm_test: dict, base_test: float = 0.0):
    """Arm `new` with lrs a, b (validation and test per seed given) and baseline `grpo` at one lr, 3 seeds."""
    from types import SimpleNamespace

    val = {"a": [0.9, 0.1, 0.5], "b": [0.2, 0.6, 0.4]}
    runs, problems = [], []
    sides = [("new", lr, val[lr], arm_test[lr]) for lr in "ab"] + [("grpo", "a", [0.5] * 3, [base_test] * 3)]
    for arm, lr, v, t in sides:
        for seed in range(3):
            runs.append({"run_id": len(runs), "arm": arm, "task": "t", "seed": seed, "lr": lr})
            for task, value in (("t_val", v[seed]), ("t", t[seed])):
                problems += [{"run_id": len(runs) - 1, "eval_task": task, "problem_id": i, "k": 1, "value": value}
                             for i in range(2)]  # fmt: skip
    return SimpleNamespace(runs=pd.DataFrame(runs), problems=pd.DataFrame(problems), metrics=pd.DataFrame(),
                           eval_curve=pd.DataFrame(), notes=[], group_by=("arm",), arm_column="arm")  # fmt: skip


def test_the_seed_variance_of_a_cross_fitted_arm_is_the_jackknife_of_the_whole_choice():
    from benchctl.report.crossfit import cross_fit_seed_variance
    from benchctl.report.stats import seed_matrix
    from benchctl.report.tuning import select_settings

    # leave-one-seed-out: seed 0 tested at b (10), seeds 1 and 2 at a (2, 3). Re-chosen without seed 0: seed 1 at
    # a (2), seed 2 at b (30): mean 16; without seed 1: a, a (1, 3): 2; without seed 2: b, a (10, 2): 6
    data = _swept({"a": [1.0, 2.0, 3.0], "b": [10.0, 20.0, 30.0]})
    select_settings(data, None, "grpo")
    test = data.problems.merge(data.runs[["run_id", "arm", "seed"]])
    full = seed_matrix(test[test["arm"] == "new"])
    assert full.iloc[0].tolist() == [10.0, 2.0, 3.0]
    expected = 2 / 3 * ((16 - 8) ** 2 + (2 - 8) ** 2 + (6 - 8) ** 2)  # (n - 1) / n sum (theta_i - theta_.)^2
    assert np.isclose(cross_fit_seed_variance(data.refits, "new", None, "t", 1, full, None), expected)
    # without the re-choice the delete-one means would be 2.5, 6.5, 6: a variance of 4.33, not 69.3
    assert cross_fit_seed_variance(data.refits, "grpo", None, "t", 1, full, None) is None  # not swept: plain


def test_a_cross_fitted_comparison_takes_its_interval_from_the_jackknife():
    from scipy import stats as sps

    from benchctl.report.config import ReportConfig
    from benchctl.report.stats import comparisons_table
    from benchctl.report.tuning import select_settings

    data = _swept({"a": [1.0, 2.0, 3.0], "b": [10.0, 20.0, 30.0]})
    select_settings(data, None, "grpo")
    config = ReportConfig(inputs=("runs",), baseline="grpo", population="fixed")
    row = comparisons_table(data, config).iloc[0]
    half = sps.t.ppf(0.975, 2) * np.sqrt(2 / 3 * 104)  # the jackknife of the worked example above, t(S - 1)
    assert np.isclose(row["diff"], 5.0) and np.isclose(row["high"] - row["diff"], half)
    plain = sps.t.ppf(0.975, 2) * np.std([10.0, 2.0, 3.0], ddof=1) / np.sqrt(3)  # seeds taken as independent
    assert row["high"] - row["diff"] > plain
