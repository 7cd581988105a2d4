"""Run health on synthetic metric tables: each state from the metric that defines it, with its evidence; the cases a
collapse detector must tell apart (a rise then a fall, a late collapse, a reward collapse without periodic evaluation,
an entropy blow-up, entropy decay on an improving run, heavy-tailed but healthy gradient norms, a real spike) and inert
mechanisms."""

import numpy as np
import pandas as pd
import pytest

from benchctl.report import ReportConfig, build_report, render
from benchctl.report.health import Health, classify, eval_se, inert_arms, mechanism_activity, summarize

from .fixtures import train_config, write_matrix

STEPS = 40


def _metrics(**cols) -> pd.DataFrame:
    """A healthy 40-step run (reward rising, entropy slowly falling, informative groups), columns overridden."""
    steps = np.arange(1, STEPS + 1)
    base = {
        "step": steps,
        "reward/mean": np.linspace(0.3, 0.6, STEPS),
        "acr/all": np.full(STEPS, 0.4),
        "policy/entropy": np.linspace(1.2, 0.6, STEPS),
        "policy/grad_norm": 0.5 + 0.1 * np.sin(steps),
        "loss/total": np.full(STEPS, -0.01),
        "update/rows_trained": np.full(STEPS, 40.0),
    }
    base.update({k.replace("__", "/"): v for k, v in cols.items()})
    return pd.DataFrame(base)


def _evals(*points) -> pd.DataFrame:
    return pd.DataFrame([{"step": s, "eval_task": "arith", "pass@1": v} for s, v in points])


def test_a_healthy_run_is_ok_with_no_evidence():
    assert classify(_metrics(), _evals((0, 0.2), (20, 0.3), (40, 0.35))) == Health("ok", "")


def test_held_out_pass1_under_half_of_its_peak_is_collapsed():
    health = classify(_metrics(), _evals((0, 0.2), (20, 0.1), (40, 0.04)))
    assert health.state == "collapsed"
    assert "held-out pass@1 on arith 0.2 at its peak (step 0) -> 0.04 at the end (step 40)" in health.evidence
    assert classify(_metrics(), _evals((0, 0.2), (40, 0.12))).state == "ok"  # 0.6x its peak: not under half
    assert classify(_metrics(), _evals((0, 0.06), (40, 0.02))).state == "ok"  # under half, but only 0.04 lower


def test_entropy_falling_under_5pct_of_its_first_value_is_entropy_decayed_not_collapsed():
    entropy = np.r_[np.linspace(1.0, 0.1, 30), np.full(10, 0.02)]
    health = classify(_metrics(policy__entropy=entropy))
    assert health.state == "entropy_decayed"
    assert "policy/entropy 1 (first) -> 0.02 (step 37-40)" in health.evidence
    floor = classify(_metrics(policy__entropy=np.full(STEPS, 5e-4)))  # never high, but deterministic
    assert floor.state == "entropy_decayed" and "under the floor" in floor.evidence


def test_training_reward_falling_under_half_of_its_peak_is_collapsed():
    reward = np.r_[np.full(10, 0.3), np.linspace(0.3, 0.0, 20), np.zeros(10)]
    health = classify(_metrics(reward__mean=reward))
    assert health.state == "collapsed"
    assert "reward/mean 0.3 at its peak (step 1-2) -> 0 at the end (step 39-40)" in health.evidence


def test_solving_no_held_out_problem_of_the_training_task_after_a_nonzero_start_is_collapsed():
    final = pd.DataFrame({"eval_task": ["arith", "arith"], "k": [1, 16], "pass@k": [0.0, 0.0]})
    health = classify(_metrics(), final=final, tasks=("arith",))
    assert health.state == "collapsed"
    assert "held-out pass@16 on arith = 0 in the evaluation reported (no problem solved)" in health.evidence
    assert "reward/mean started at 0.308 (step 1-3)" in health.evidence  # mean of linspace(0.3, 0.6, 40)[:3]
    other = classify(_metrics(), final=final, tasks=("math_train", "math500"))
    assert other.state == "ok"  # arith is not this run's task: it may just be too hard
    math = final.assign(eval_task="math500")  # the designated held-out task of math_train: same distribution
    assert classify(_metrics(), final=math, tasks=("math_train", "math500")).state == "collapsed"
    never = classify(_metrics(reward__mean=np.zeros(STEPS)), final=final, tasks=("arith",))
    assert never.state == "never_learned" and "collapsed" not in never.evidence  # never solved: nothing to lose
    some = final.assign(**{"pass@k": [0.0, 0.05]})  # pass@1 rounds to 0 but pass@16 does not: alive
    assert classify(_metrics(), final=some, tasks=("arith",)).state == "ok"


def test_nan_loss_at_a_trained_step_is_diverged():
    loss = np.full(STEPS, -0.01)
    loss[25:] = np.nan
    health = classify(_metrics(loss__total=loss))
    assert health == Health("diverged", "diverged: loss/total = nan at step 26 (15 steps)")


def test_nan_loss_where_no_row_was_trained_is_not_divergence():
    loss, rows = np.full(STEPS, -0.01), np.full(STEPS, 40.0)
    loss[10], rows[10] = np.nan, 0.0  # a step with every group degenerate logs no loss
    assert classify(_metrics(loss__total=loss, update__rows_trained=rows)).state == "ok"


def test_inf_gradient_norm_and_a_100x_blow_up_of_a_steady_norm_are_diverged():
    inf = np.full(STEPS, 0.5)
    inf[30] = np.inf
    assert classify(_metrics(policy__grad_norm=inf)).state == "diverged"
    spike = np.full(STEPS, 0.5)
    spike[33] = 80.0  # 160x the median
    health = classify(_metrics(policy__grad_norm=spike))
    assert health.state == "diverged"
    assert "policy/grad_norm 80 at step 34 = 160x the run's median 0.5" in health.evidence
    spike[33] = 40.0  # 80x: under the threshold
    assert classify(_metrics(policy__grad_norm=spike)).state == "ok"


def test_no_informative_group_in_the_last_quarter_is_stalled():
    acr = np.r_[np.full(28, 0.5), np.ones(12)]
    health = classify(_metrics(acr__all=acr))
    assert health == Health(
        "stalled", "stalled: no informative group in the last 10 steps (31-40): acr/all = 1 at each"
    )
    rows = np.r_[np.full(30, 40.0), np.zeros(10)]
    assert "update/rows_trained = 0" in classify(_metrics(update__rows_trained=rows)).evidence
    acr[-1] = 0.9  # one informative step in the window: not stalled
    assert classify(_metrics(acr__all=acr)).state == "ok"


def test_the_label_is_the_most_severe_state_and_the_evidence_lists_every_finding():
    loss = np.full(STEPS, -0.01)
    loss[-1] = np.inf
    health = classify(_metrics(loss__total=loss, acr__all=np.ones(STEPS)), _evals((0, 0.4), (40, 0.0)))
    assert health.state == "diverged"
    assert [part.split(":")[0] for part in health.evidence.split("; ")] == ["diverged", "collapsed", "stalled"]


def test_a_plain_eval_run_is_ok_and_short_runs_are_not_judged_on_noisy_windows():
    assert classify(None, _evals((-1, 0.0))).state == "ok"
    three = _metrics().iloc[:3].assign(**{"reward/mean": [0.6, 0.5, 0.0]})
    assert classify(three).state == "ok"  # fewer than 2 x 3 steps: the reward windows would be one noisy step


def test_summarize_names_the_seeds_of_each_state():
    assert summarize(["ok", "ok"], [1, 2]) == "ok"
    assert summarize(["collapsed", "ok", "stalled", "stalled"], [1, 2, 3, 4.0]) == (
        "collapsed: seed 1; stalled: seeds 3, 4"
    )


def test_report_marks_comparisons_whose_arm_has_a_collapsed_run(tmp_path):
    good = {f"q{i}": [j < 2 for j in range(4)] for i in range(5)}
    dead = {f"q{i}": [False] * 4 for i in range(5)}
    collapse = {"reward/mean": [0.5] * 4 + [0.3, 0.1] + [0.0] * 6, "acr/all": [0.5] * 6 + [1.0] * 6}
    cells = [(f"grpo-s{s}", train_config("grpo", s), good) for s in (1, 2, 3)]
    cells += [(f"avspo-s{s}", train_config("avspo", s), good) for s in (2, 3)]
    cells += [("avspo-s1", train_config("avspo", 1), dead, collapse)]
    write_matrix(tmp_path / "results", cells, steps=12)
    out = tmp_path / "rep"
    result = build_report(ReportConfig(inputs=(str(tmp_path / "results"),), out=str(out), rliable_reps=100))
    runs = pd.read_parquet(out / "runs.parquet").set_index(["estimator", "seed"])
    assert runs.loc[("avspo", 1), "health"] == "collapsed"
    assert (
        "reward/mean 0.5 at its peak (step 1-2) -> 0 at the end (step 11-12)"
        in runs.loc[("avspo", 1), "health_evidence"]
    )
    assert "stalled: no informative group in the last 3 steps (10-12)" in runs.loc[("avspo", 1), "health_evidence"]
    assert "held-out pass@4 on arith = 0" in runs.loc[("avspo", 1), "health_evidence"]
    assert (runs.drop(index=("avspo", 1))["health"] == "ok").all()
    cmp = pd.read_parquet(out / "comparisons.parquet")
    assert cmp["unhealthy"].all() and set(cmp["arm_health"]) == {"collapsed: seed 1"}
    assert set(cmp["baseline_health"]) == {"ok"}
    main = result.tables["main"].set_index("arm")
    assert (main.loc["avspo", "health"] == "\u26a0 collapsed: seed 1").all()
    assert (main.loc["grpo", "health"] == "ok").all()
    page = (out / "report.md").read_text()
    assert "avspo vs grpo (arm: collapsed: seed 1; baseline: ok)" in page
    assert "6 runs: 5 ok, 1 collapsed" in (out / "report.html").read_text()


def test_entropy_decayed_is_a_note_in_run_health_that_marks_no_comparison_unhealthy(tmp_path):
    good = {f"q{i}": [j < 2 for j in range(4)] for i in range(5)}
    decay = {"policy/entropy": list(np.geomspace(1.0, 1e-4, 12))}
    cells = [(f"grpo-s{s}", train_config("grpo", s), good) for s in (1, 2, 3)]
    cells += [(f"avspo-s{s}", train_config("avspo", s), good, decay if s == 1 else {}) for s in (1, 2, 3)]
    write_matrix(tmp_path / "results", cells, steps=12)
    out = tmp_path / "rep"
    result = build_report(ReportConfig(inputs=(str(tmp_path / "results"),), out=str(out), rliable_reps=100))
    runs = pd.read_parquet(out / "runs.parquet").set_index(["estimator", "seed"])
    assert runs.loc[("avspo", 1), "health"] == "entropy_decayed"  # the label stays
    cmp = result.tables["comparisons"]
    assert not cmp["unhealthy"].any() and set(cmp["arm_health"]) == {"ok"}
    assert (result.tables["main"].set_index("arm").loc["avspo", "health"] == "ok").all()
    assert summarize(["entropy_decayed", "ok"], [1, 2]) == "ok"
    noted = render.health_view(result.tables["runs"])
    assert noted[["arm", "seed", "health"]].values.tolist() == [["avspo", 1, "entropy_decayed"]]
    html = (out / "report.html").read_text()
    assert "6 runs: 5 ok, 1 entropy_decayed" in html and "0 runs not ok" in html
    assert "Comparisons with runs that are not ok" not in html


@pytest.mark.parametrize("state", ["diverged", "stalled"])
def test_an_unhealthy_baseline_marks_every_comparison_against_it(tmp_path, state):
    good = {f"q{i}": [j < 2 for j in range(4)] for i in range(5)}
    bad = {"loss/total": [0.1] * 11 + [np.nan]} if state == "diverged" else {"acr/all": [0.5] * 8 + [1.0] * 4}
    cells = [(f"grpo-s{s}", train_config("grpo", s), good, bad if s == 2 else {}) for s in (1, 2, 3)]
    cells += [(f"dgpo-s{s}", train_config("dgpo", s), good) for s in (1, 2, 3)]
    write_matrix(tmp_path / "results", cells, steps=12)
    result = build_report(ReportConfig(inputs=(str(tmp_path / "results"),), rliable_reps=100))
    cmp = result.tables["comparisons"]
    assert cmp["unhealthy"].all() and set(cmp["baseline_health"]) == {f"{state}: seed 2"}
    assert result.tables["main"].set_index("arm").loc["dgpo", "health"].str.contains(f"baseline grpo: {state}").all()


# ---- the collapse cases, on noisy synthetic runs (many replications where a rate is the point) -------------


def _noisy_run(rng, reward: np.ndarray, entropy: np.ndarray | None = None, grad: np.ndarray | None = None):
    """A run of len(reward) steps: reward/mean = `reward` + binomial-like noise (sd 0.03), healthy defaults else."""
    n = len(reward)
    return _metrics_of(
        n,
        reward__mean=np.clip(reward + rng.normal(0, 0.03, n), 0, 1),
        policy__entropy=np.linspace(1.2, 0.8, n) if entropy is None else entropy,
        policy__grad_norm=np.exp(rng.normal(0, 0.3, n)) if grad is None else grad,
    )


def _metrics_of(n: int, **cols) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "step": np.arange(1, n + 1),
            "acr/all": np.full(n, 0.4),
            "loss/total": np.full(n, -0.01),
            "update/rows_trained": np.full(n, 40.0),
        }
    )
    for key, value in cols.items():
        frame[key.replace("__", "/")] = value
    return frame


def _eval_curve(rng, values: np.ndarray, every: int = 10) -> pd.DataFrame:
    """Held-out pass@1 at steps 0, every, 2 every, ... with evaluation noise (sd 0.03: about 200 problems)."""
    noisy = np.clip(values + rng.normal(0, 0.03, len(values)), 0, 1)
    return _evals(*((i * every, v) for i, v in enumerate(noisy)))


def test_a_rise_from_030_to_060_then_a_fall_to_012_is_collapsed():
    rng = np.random.default_rng(0)
    held_out = np.r_[np.linspace(0.3, 0.6, 10), np.linspace(0.6, 0.12, 10)]  # 20 evaluations, every 10 steps
    states = [classify(_noisy_run(rng, np.full(200, 0.4)), _eval_curve(rng, held_out)).state for _ in range(50)]
    assert states == ["collapsed"] * 50
    reward = np.r_[np.linspace(0.3, 0.6, 100), np.linspace(0.6, 0.12, 100)]  # no periodic evaluation: the reward
    assert all(classify(_noisy_run(rng, reward)).state == "collapsed" for _ in range(50))


def test_a_collapse_in_the_last_5pct_of_the_steps_is_collapsed():
    rng = np.random.default_rng(1)
    reward = np.r_[np.linspace(0.3, 0.6, 190), np.full(10, 0.05)]
    assert all(classify(_noisy_run(rng, reward)).state == "collapsed" for _ in range(50))
    held_out = np.r_[np.linspace(0.3, 0.6, 20), [0.05]]  # the last of 21 evaluations
    assert all(classify(_noisy_run(rng, reward), _eval_curve(rng, held_out)).state == "collapsed" for _ in range(50))


def test_training_reward_falling_to_30pct_without_periodic_evaluation_is_collapsed():
    rng = np.random.default_rng(2)
    reward = np.linspace(0.5, 0.15, 200)
    final_only = _evals((200, 0.3))  # one evaluation: not periodic, the training reward decides
    assert all(classify(_noisy_run(rng, reward), final_only).state == "collapsed" for _ in range(50))


def test_entropy_rising_4x_while_reward_falls_is_flagged():
    rng = np.random.default_rng(3)
    entropy = np.linspace(0.8, 3.2, 200)
    health = classify(_noisy_run(rng, np.linspace(0.5, 0.4, 200), entropy=entropy))
    assert health.state == "collapsed" and "entropy blow-up: policy/entropy" in health.evidence
    assert classify(_noisy_run(rng, np.linspace(0.4, 0.6, 200), entropy=entropy)).state == "ok"  # reward rising


def test_an_improving_run_whose_entropy_decays_is_entropy_decayed_never_collapsed():
    rng = np.random.default_rng(4)
    entropy = 1.2 * np.exp(-np.linspace(0, 6, 200))  # 1.2 -> 0.003
    states = {classify(_noisy_run(rng, np.linspace(0.3, 0.6, 200), entropy=entropy)).state for _ in range(50)}
    assert states == {"entropy_decayed"}


def test_lognormal_gradient_norms_with_sigma_15_are_not_diverged_and_a_real_spike_is():
    rng = np.random.default_rng(5)
    reward = np.linspace(0.3, 0.6, 200)
    heavy = [classify(_noisy_run(rng, reward, grad=np.exp(rng.normal(0, 1.5, 200)))).state for _ in range(200)]
    assert heavy.count("diverged") == 0
    grad = np.exp(rng.normal(0, 0.3, 200))
    grad[150] = 1000.0  # 1000x the median of a steady run
    health = classify(_noisy_run(rng, reward, grad=grad))
    assert health.state == "diverged" and "policy/grad_norm 1e+03 at step 151" in health.evidence


def test_a_healthy_noisy_run_is_ok():
    rng = np.random.default_rng(6)
    held_out = np.linspace(0.3, 0.45, 21)
    states = [
        classify(_noisy_run(rng, np.linspace(0.3, 0.5, 200)), _eval_curve(rng, held_out)).state for _ in range(50)
    ]
    low = [classify(_noisy_run(rng, np.full(200, 0.1))).state for _ in range(50)]  # a small score, noisy
    assert set(states) == {"ok"} and set(low) == {"ok"}


# ---- inert mechanisms ---------------------------------------------------------------------------


def test_mechanism_acted_frac_is_the_least_active_mechanism_and_nan_without_one():
    acted = np.r_[np.ones(10), np.zeros(30)]  # 25% of the steps
    never = np.r_[np.ones(1), np.zeros(39)]  # 2.5%
    activity = mechanism_activity(_metrics(mechanism__avspo__acted=acted, mechanism__dapo_filter__acted=never))
    assert activity.acted_frac == pytest.approx(0.025) and activity.inert == ("dapo_filter",)
    assert np.isnan(mechanism_activity(_metrics()).acted_frac) and mechanism_activity(_metrics()).inert == ()
    health = classify(_metrics(mechanism__avspo__acted=np.zeros(STEPS)))
    assert health.state == "ok"  # inert is not a failure of training: its evidence says so
    assert health.evidence == "inert: trained as its base: mechanism/avspo/acted on 0.0% of steps (under 5%)"


def test_an_arm_is_inert_when_its_runs_median_acted_fraction_is_under_5pct():
    runs = pd.DataFrame(
        {
            "arm": ["avspo"] * 3 + ["ha_dw"] * 3 + ["grpo"] * 3,
            "mechanism_acted_frac": [0.0, 0.01, 0.5, 0.3, 0.02, 0.4, np.nan, np.nan, np.nan],
            "inert_mechanisms": ["avspo", "avspo", "", "", "ha_dw", "", "", "", ""],
        }
    )
    assert inert_arms(runs) == {"avspo": "inert: trained as its base (median mechanism_acted_frac 1.0%; avspo)"}


def test_report_marks_an_inert_arm_in_the_verdict_claims_and_run_health(tmp_path):
    good = {f"q{i}": [j < 2 for j in range(4)] for i in range(5)}
    inert = {"mechanism/avspo/acted": [0.0] * 12}
    active = {"mechanism/dgpo/acted": [1.0] * 12}
    cells = [(f"grpo-s{s}", train_config("grpo", s), good) for s in (1, 2, 3)]
    cells += [(f"avspo-s{s}", train_config("avspo", s), good, inert) for s in (1, 2, 3)]
    cells += [(f"dgpo-s{s}", train_config("dgpo", s), good, active) for s in (1, 2, 3)]
    write_matrix(tmp_path / "results", cells, steps=12)
    claims = tmp_path / "claims.yaml"
    claims.write_text(
        "claims:\n  - {paper: p, claim: c, arm: avspo, baseline: grpo, metric: pass@k, k: 1, direction: greater, "
        "paper_effect: '+3'}\n"
    )
    out = tmp_path / "rep"
    config = ReportConfig(inputs=(str(tmp_path / "results"),), out=str(out), rliable_reps=100, claims=str(claims))
    result = build_report(config)
    runs = pd.read_parquet(out / "runs.parquet").set_index(["estimator", "seed"])
    assert (runs.loc["avspo", "mechanism_acted_frac"] == 0).all() and (
        runs.loc["avspo", "inert_mechanisms"] == "avspo"
    ).all()
    assert (runs.loc["dgpo", "mechanism_acted_frac"] == 1).all() and runs.loc[
        "grpo", "mechanism_acted_frac"
    ].isna().all()
    assert runs.loc[("avspo", 1), "health_evidence"].startswith("inert: trained as its base")
    verdict = result.tables["verdict"].set_index("arm")
    assert verdict.loc["avspo", "health"].startswith("\u26a0 inert: trained as its base")
    assert verdict.loc["dgpo", "health"] == "ok"
    assert "inert: trained as its base" in pd.read_parquet(out / "claims.parquet")["inert"].iloc[0]
    page = (out / "report.md").read_text()
    assert "arm avspo inert: trained as its base" in page  # the claims view
    assert "3 inert (mechanism acted on under 5% of steps)" in (out / "report.html").read_text()


# ---- flat low runs, runs that never learned: a collapse needs a real peak ----------------------------------------


def _sampled_run(rng, expected: np.ndarray) -> pd.DataFrame:
    """A run whose reward/mean is the mean of 32 prompts x 8 rollouts a step, each prompt's rate drawn from
    Beta(2 p, 2 (1 - p)) around the step's expected reward p (most prompts near 0, a few often solved)."""
    p = np.broadcast_to(expected[:, None], (len(expected), 32))  # (T, 32)
    right = rng.binomial(8, rng.beta(np.maximum(2 * p, 1e-9), np.maximum(2 * (1 - p), 1e-9)))  # (T, 32)
    return _noisy_run(rng, np.zeros(len(expected))).assign(
        **{"reward/mean": right.mean(axis=1) / 8, "acr/all": ((right == 0) | (right == 8)).mean(axis=1)}
    )


def test_flat_low_run_is_not_collapsed():
    rng = np.random.default_rng(7)
    runs = [_sampled_run(rng, np.full(steps, 0.06)) for steps in (50, 100) for _ in range(200)]
    collapsed = sum(classify(run).state == "collapsed" for run in runs)
    assert collapsed <= 8  # 2% of 400; benchmarks/report_health.py measures 0.4-0.7%, the size rules alone 7-16%
    curves = [_eval_curve(rng, np.full(6, 0.10)) for _ in range(200)]  # 6 evaluations, wobble sd 0.03
    assert sum(classify(_sampled_run(rng, np.full(50, 0.1)), c).state == "collapsed" for c in curves) <= 4


def test_never_learned_is_its_own_label():
    rng = np.random.default_rng(8)
    final = pd.DataFrame({"eval_task": ["arith", "arith"], "k": [1, 16], "pass@k": [0.0, 0.0]})  # nothing solved
    healths = [classify(_sampled_run(rng, np.full(50, 0.004)), final=final, tasks=("arith",)) for _ in range(100)]
    never = [h for h in healths if h.state == "never_learned"]
    assert len(never) >= 95  # benchmarks/report_health.py: 99.1% (a few spikes reach 0.02 over 5 steps)
    assert sum(h.state == "collapsed" for h in healths) <= 3  # the size rules alone: 47%
    assert all("never above 0.02" in h.evidence and "collapsed" not in h.evidence for h in never)
    learned = _sampled_run(rng, np.full(50, 0.2))  # the same evaluation after a real start: a collapse
    assert classify(learned, final=final, tasks=("arith",)).state == "collapsed"


def test_rise_then_collapse_and_a_late_collapse_over_3pct_of_the_steps_are_detected():
    rng = np.random.default_rng(9)
    rise = np.r_[np.linspace(0.1, 0.4, 25), np.linspace(0.4, 0.05, 25)]
    rises = [classify(_sampled_run(rng, rise)).state for _ in range(100)]
    assert rises.count("collapsed") >= 98  # the end under half of the peak by more than noise: 99.2% (500 runs)
    late = np.r_[np.linspace(0.3, 0.6, 48), np.full(2, 0.05)]  # the last 2 of 50 steps (3% rounded up)
    assert all(classify(_sampled_run(rng, late)).state == "collapsed" for _ in range(100))


def test_a_fall_within_the_runs_noise_band_is_not_collapsed_and_the_same_fall_on_a_quiet_run_is():
    wobble = np.tile([0.0, 0.12], 20)  # a run jumping 0.12 every step: noise sd 0.085 from its differences
    noisy = np.r_[0.1 + wobble, 0.0, 0.0]  # ends 0.16 under its peak window, under half of it
    health = classify(_metrics_of(42, reward__mean=noisy))
    assert health.state == "ok"
    quiet = np.r_[np.full(40, 0.16), 0.0, 0.0]  # the same fall from a steady level
    health = classify(_metrics_of(42, reward__mean=quiet))
    assert health.state == "collapsed" and "over its noise band 0 (noise sd 0)" in health.evidence


def test_report_names_a_run_that_never_learned_beside_its_arm_without_a_warning(tmp_path):
    good = {f"q{i}": [j < 2 for j in range(4)] for i in range(5)}
    dead = {f"q{i}": [False] * 4 for i in range(5)}
    never = {"reward/mean": [0.0] * 11 + [0.01]}
    cells = [(f"grpo-s{s}", train_config("grpo", s), good) for s in (1, 2, 3)]
    cells += [(f"avspo-s{s}", train_config("avspo", s), good) for s in (2, 3)]
    cells += [("avspo-s1", train_config("avspo", 1), dead, never)]
    write_matrix(tmp_path / "results", cells, steps=12)
    out = tmp_path / "rep"
    result = build_report(ReportConfig(inputs=(str(tmp_path / "results"),), out=str(out), rliable_reps=100))
    runs = pd.read_parquet(out / "runs.parquet").set_index(["estimator", "seed"])
    assert runs.loc[("avspo", 1), "health"] == "never_learned"
    assert "collapsed" not in runs.loc[("avspo", 1), "health_evidence"]
    assert not result.tables["comparisons"]["unhealthy"].any()
    main = result.tables["main"].set_index("arm")
    assert (main.loc["avspo", "health"] == "ok (never learned: seed 1)").all()  # text, no warning mark
    assert (main.loc["grpo", "health"] == "ok").all()
    assert render.health_cell("ok (never learned: seed 1); baseline grpo: collapsed: seed 2").startswith("\u26a0")
    assert "6 runs: 5 ok, 1 never_learned" in (out / "report.html").read_text()


# ---- issue 41: short measured evaluation curves, a run stuck under the never-learned threshold -----------------


def _measured(rng, levels, problems: int = 200, n: int = 4) -> pd.DataFrame:
    """Held-out evaluations of `problems` x `n` samples at steps 0, 10, ...: pass@1 and its sampling se from the
    counts (`eval_se`), each problem's rate Beta(4 p, 4 (1 - p)) around the point's level p."""
    rows = []
    for i, p in enumerate(levels):
        c = rng.binomial(n, rng.beta(4 * p, 4 * (1 - p), problems))
        se = eval_se(np.full(problems, n), c)
        rows.append({"step": 10 * i, "eval_task": "arith", "pass@1": c.mean() / n, "pass@1_se": se})
    return pd.DataFrame(rows)


def test_the_evaluation_se_is_the_binomial_se_of_the_mean_of_c_over_n():
    n, c = np.array([4, 4, 4, 1]), np.array([1, 2, 0, 1])
    p = c / n
    expected = np.sqrt(p[0] * (1 - p[0]) / 3 + p[1] * (1 - p[1]) / 3 + 0 + p.mean() * (1 - p.mean()) / 1) / 4
    assert eval_se(n, c) == pytest.approx(expected)
    assert np.isnan(eval_se(np.array([]), np.array([])))


def test_a_collapse_on_six_measured_evaluations_is_collapsed_and_the_curve_alone_cannot_tell():
    curve = [0.12, 0.21, 0.30, 0.30, 0.175, 0.05]  # 0.12 -> 0.30 -> 0.05, the demo's cadence (every 10 of 50 steps)
    evals = _evals(*((10 * i, v) for i, v in enumerate(curve)))
    assert classify(_metrics(), evals).state == "ok"  # noise from the rise and fall themselves: 4 differences
    health = classify(_metrics(), evals.assign(**{"pass@1_se": 0.012}))  # 200 problems x 4 samples
    assert health.state == "collapsed" and "(evaluation se 0.012 at the end)" in health.evidence
    rng = np.random.default_rng(10)
    sampled = [classify(_metrics(), _measured(rng, curve)).state for _ in range(100)]
    assert sampled.count("collapsed") >= 95  # benchmarks/report_health.py: 100% (500 runs)


def test_measured_flat_curves_and_a_45pct_decline_are_not_collapsed():
    rng = np.random.default_rng(11)
    flat = [classify(_metrics(), _measured(rng, np.full(6, 0.1))).state for _ in range(100)]
    decline = [classify(_metrics(), _measured(rng, [0.2, 0.3, 0.4, 0.4, 0.31, 0.22])).state for _ in range(100)]
    assert flat.count("collapsed") <= 3 and decline.count("collapsed") <= 3  # 0.55x the peak: not under half


def test_a_run_stuck_at_0015_is_never_learned_not_collapsed():
    rng = np.random.default_rng(12)
    final = pd.DataFrame({"eval_task": ["arith", "arith"], "k": [1, 16], "pass@k": [0.0, 0.0]})  # nothing solved
    healths = [classify(_sampled_run(rng, np.full(50, 0.015)), final=final, tasks=("arith",)) for _ in range(100)]
    assert sum(h.state == "collapsed" for h in healths) <= 5  # before: the highest of 46 noisy windows over 0.02
    assert sum(h.state == "never_learned" for h in healths) >= 95


def test_the_report_gives_each_evaluation_its_sampling_se_from_the_problems_counts(tmp_path):
    from benchctl.results.train_run import eval_dir

    from .fixtures import write_eval, write_train_run

    counts = lambda c: {f"q{i}": [j < n for j in range(4)] for i, n in enumerate(c)}  # noqa: E731  (n = 4)
    run = tmp_path / "run"
    write_train_run(run, train_config("grpo", 1), counts([4, 4, 4]), steps=3)
    write_eval(eval_dir(run, 0), "arith", counts([0, 0, 0]))
    write_eval(eval_dir(run, 2), "arith", counts([2, 1, 0]))
    config = ReportConfig(inputs=(str(run),), out=str(tmp_path / "rep"), rliable_reps=100)
    curve = build_report(config).tables["eval_curve"].sort_values("step")
    p = np.array([0.5, 0.25, 0.0])  # step 2: 2, 1, 0 of 4 right; se = sqrt(sum p (1 - p) / 3) / 3
    assert curve["pass@1_se"].tolist() == pytest.approx([0.0, np.sqrt((p * (1 - p) / 3).sum()) / 3, 0.0])
    assert (pd.read_parquet(tmp_path / "rep" / "eval_curve.parquet")["pass@1_se"].notna()).all()
