"""Claims: a paper's statement gets `holds` only when the seed-level interval says so; too few seeds, an
inconsistent gain or a claim the testbed cannot express never does."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from benchctl.errors import BenchctlError
from benchctl.report.claims import Claim, evaluate_claims, read_claims, verdict


def _data(per_seed: dict[tuple[str, int], list[float]], acr: dict[str, float] | None = None):
    """Runs with given per-seed pass@1 (over 4 problems each); key (label, group_size) -> one value per seed."""
    runs, problems, metrics = [], [], []
    for (label, g), values in per_seed.items():
        for seed, value in enumerate(values):
            run_id = len(runs)
            runs.append({"run_id": run_id, "estimator_label": label, "group_size": g, "seed": seed})
            for p in range(4):
                problems.append({"run_id": run_id, "eval_task": "arith", "problem_id": str(p), "k": 1, "value": value})
            for step in range(1, 4):
                metrics.append({"run_id": run_id, "step": step, "acr/all": (acr or {}).get(label, 0.5) + 0.01 * seed})
    return SimpleNamespace(runs=pd.DataFrame(runs), problems=pd.DataFrame(problems), metrics=pd.DataFrame(metrics))


def _claim(**kw) -> Claim:
    return Claim(paper="0000.00000", claim="x", arm=kw.pop("arm", "new"), baseline=kw.pop("baseline", "grpo"), **kw)


def test_a_consistent_gain_over_five_seeds_holds():
    data = _data({("grpo", 8): [0.3, 0.32, 0.31, 0.29, 0.3], ("new", 8): [0.4, 0.41, 0.42, 0.39, 0.4]})
    row = evaluate_claims(data, [_claim()]).iloc[0]
    assert row.verdict == "holds" and row.seeds == 5
    assert row.effect == pytest.approx(0.1, abs=1e-9) and row.low > 0


def test_gains_of_plus_25_minus_22_plus_3_points_do_not_make_a_claim_hold():
    data = _data({("grpo", 8): [0.3, 0.3, 0.3], ("new", 8): [0.55, 0.08, 0.33]})
    row = evaluate_claims(data, [_claim()]).iloc[0]
    assert row.verdict == "inconclusive" and row.low < 0 < row.high


def test_two_seeds_get_no_verdict_and_say_why():
    data = _data({("grpo", 8): [0.3, 0.3], ("new", 8): [0.5, 0.5]})
    row = evaluate_claims(data, [_claim()]).iloc[0]
    assert row.verdict == "inconclusive" and row.reason.startswith("too few seeds: 2")


def test_a_consistent_loss_means_a_greater_claim_does_not_hold():
    data = _data({("grpo", 8): [0.5, 0.52, 0.51], ("new", 8): [0.3, 0.31, 0.33]})
    assert evaluate_claims(data, [_claim()]).iloc[0].verdict == "does not hold"


def test_at_least_matches_compares_arms_from_different_contexts_with_a_margin():
    data = _data({("grpo", 16): [0.40, 0.42, 0.41, 0.40], ("ha_dw", 8): [0.39, 0.41, 0.40, 0.39]})
    claim = _claim(arm="ha_dw", direction="at_least", margin=0.02, arm_where={"group_size": 8})
    claim = Claim(**{**claim.__dict__, "baseline_where": {"group_size": 16}})
    row = evaluate_claims(data, [claim]).iloc[0]
    assert row.effect == pytest.approx(-0.01) and row.verdict == "holds"
    strict = Claim(**{**claim.__dict__, "margin": 0.0})
    assert evaluate_claims(data, [strict]).iloc[0].verdict == "does not hold"


def test_a_relative_training_metric_claim_uses_the_ratio_of_seed_means():
    data = _data({("grpo", 8): [0.3] * 5, ("avspo", 8): [0.3] * 5}, acr={"grpo": 0.5, "avspo": 0.2})
    claim = _claim(arm="avspo", metric="acr/all", direction="less", relative=True)
    row = evaluate_claims(data, [claim]).iloc[0]
    assert row.effect == pytest.approx(0.22 / 0.52 - 1, abs=0.02) and row.verdict == "holds" and pd.isna(row.k)


def test_a_claim_the_testbed_cannot_express_keeps_its_row_with_the_reason():
    data = _data({("grpo", 8): [0.3] * 3})
    row = evaluate_claims(data, [_claim(testbed="needs a 7B model")]).iloc[0]
    assert row.verdict == "inconclusive" and "needs a 7B model" in row.reason and np.isnan(row.effect)
    missing = evaluate_claims(data, [_claim(arm="dgpo")]).iloc[0]
    assert missing.verdict == "inconclusive" and "no finished run of 'dgpo'" in missing.reason


def test_verdict_rules_mirror_for_less_and_at_most():
    assert verdict("less", -0.3, -0.1, 5) == "holds"
    assert verdict("less", 0.0, 0.2, 5) == "does not hold"
    assert verdict("at_most", -0.1, 0.01, 5, margin=0.02) == "holds"
    assert verdict("greater", 0.1, 0.3, 2) == "inconclusive"


def test_claims_files_with_bad_entries_are_refused_in_one_line(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("claims:\n  - {paper: 1, claim: x, arm: a, baseline: b, direction: better}\n")
    with pytest.raises(BenchctlError, match="claim 1: direction 'better'; choose one of: greater"):
        read_claims(path)
    path.write_text("claims:\n  - {paper: 1, claim: x, arm: a, baseline: b, kk: 1}\n")
    with pytest.raises(BenchctlError, match="unknown key 'kk'"):
        read_claims(path)
    path.write_text("claims:\n  - {paper: 2601.08521, claim: x, arm: a, baseline: b, k: 4}\n")
    assert read_claims(path)[0].paper == "2601.08521" and read_claims(path)[0].k == 4
