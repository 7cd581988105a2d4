"""JSPO, DBB and CoDaPO (issue 43 items 3 and 5): equal to the authors' code where it exists, and the paper's
properties where it does not (DBB has no released code).

The `authors_*` functions are transcriptions (loops and torch ops kept as released) of
- guanning03/JSPO-Official @ 3f8539de964b2eb1266422a697a88681c9b70853, code/verl/trainer/ppo/core_algos.py
  compute_jspo_outcome_advantage and compute_jspo_plus_plus_outcome_advantage (js_smooth_coef = 0);
- tmlr-group/CoDaPO @ 210c2051f54de76fdf92eb4cef9bb919dd404789, alphaapollo/core/generation/verl/trainer/ppo/
  core_algos.py compute_codapo_advantage.
"""

import json
from collections import defaultdict

import numpy as np
import pytest
import torch

from benchctl.errors import BenchctlError
from benchctl.estimators import get_estimator


def authors_jspo(scores: torch.Tensor, n: int, m: int, epsilon: float = 1e-6) -> torch.Tensor:
    P = scores.reshape(n, m)
    bsz = n * m
    lam = torch.zeros(bsz, dtype=scores.dtype)
    for i in range(bsz):
        prompt_idx = i // m
        means, variances = [], []
        for p_idx in range(n):
            if p_idx != prompt_idx:
                means.append(P[p_idx].mean())
                variances.append(P[p_idx].var(unbiased=True) / m)
        means, variances = torch.stack(means), torch.stack(variances)
        batch_mean = means.mean()
        v_square, s_square = variances.mean(), ((means - batch_mean) ** 2).mean()
        lam[i] = v_square / (v_square + s_square + epsilon)
    rloo = (torch.sum(P, dim=1, keepdim=True) - P) / (m - 1)
    batch_mean_per_sample = torch.zeros_like(lam)
    for i in range(bsz):
        mask = torch.ones(n, m, dtype=torch.bool)
        mask[i // m, :] = False
        batch_mean_per_sample[i] = P[mask].mean()
    js = rloo * (1 - lam.reshape(n, m)) + batch_mean_per_sample.reshape(n, m) * lam.reshape(n, m)
    return scores - js.flatten()


def authors_jspo_plus_plus(scores: torch.Tensor, n: int, m: int, epsilon: float = 1e-6) -> torch.Tensor:
    P = scores.reshape(n, m)
    prompt_mean, batch_mean = torch.mean(P, dim=1), torch.mean(P)
    v_square = torch.mean(torch.var(P, dim=1, unbiased=True) / m)
    s_square = torch.mean((prompt_mean - batch_mean) ** 2)
    js_lambda = v_square / (v_square + s_square + epsilon)
    rloo = (torch.sum(P, dim=1, keepdim=True) - P) / (m - 1)
    return scores - (rloo * (1.0 - js_lambda) + batch_mean * js_lambda).flatten()


def authors_codapo(scores, response_mask, log_probs, index, epsilon=1e-6, weight_offset=0.1):
    scores = scores.clone()
    bsz = scores.shape[0]
    avg_lp = {}
    for i in range(bsz):
        count = response_mask[i].sum().item()
        avg_lp[i] = (log_probs[i] * response_mask[i]).sum().item() / count if count > 0 else 0.0
    id2score, id2rows = defaultdict(list), defaultdict(list)
    for i in range(bsz):
        id2score[index[i]].append(scores[i])
        id2rows[index[i]].append(i)
    id2mean, id2std, id2acc, id2lp = {}, {}, {}, {}
    for idx in id2score:
        t = torch.stack(id2score[idx])
        id2mean[idx], id2std[idx] = torch.mean(t), torch.std(t)
        id2acc[idx] = (t == 1.0).sum().item() / len(id2score[idx])
        lps = [avg_lp[i] for i in id2rows[idx]]
        id2lp[idx] = sum(lps) / len(lps)
    for i in range(bsz):
        scores[i] = (scores[i] - id2mean[index[i]]) / (id2std[index[i]] + epsilon)
        d = 1 - id2acc[index[i]]
        c = torch.exp(torch.tensor(id2lp[index[i]], dtype=torch.float64)).item()
        scores[i] = scores[i] * (c * (1 - 4 * (d - 0.5) ** 2) + weight_offset)
    return scores


def random_rewards(rng, n, m, binary):
    p = rng.choice([0.0, 1.0, 0.25, 0.5, 0.75], size=n)
    if binary:
        return (rng.random((n, m)) < p[:, None]).astype(np.float64)
    return np.round(rng.random((n, m)), 4)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("binary", [True, False])
def test_jspo_equals_the_authors_code_to_1e_12_on_random_batches(seed, binary):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 12)), int(rng.integers(2, 9))
    r = random_rewards(rng, n, m, binary)
    ours = get_estimator("jspo").advantages(r)
    theirs = authors_jspo(torch.tensor(r.reshape(-1), dtype=torch.float64), n, m).numpy().reshape(n, m)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)
    ours_pp = get_estimator("jspo", leave_one_out=False).advantages(r)
    theirs_pp = authors_jspo_plus_plus(torch.tensor(r.reshape(-1), dtype=torch.float64), n, m)
    np.testing.assert_allclose(ours_pp, theirs_pp.numpy().reshape(n, m), rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_codapo_over_grpo_equals_the_authors_code_to_1e_12_on_random_batches(seed):
    rng = np.random.default_rng(seed)
    n, m, t = int(rng.integers(1, 10)), int(rng.integers(2, 9)), 7
    r = random_rewards(rng, n, m, binary=seed % 2 == 0)
    mask = (rng.random((n * m, t)) < 0.8).astype(np.float64)
    mask[0] = 0.0  # a response with no tokens: the code's mean log-prob 0
    logp = -rng.exponential(0.7, size=(n * m, t))
    seq_lp = np.where(mask.sum(1) > 0, (logp * mask).sum(1) / np.maximum(mask.sum(1), 1), 0.0).reshape(n, m)
    ours = get_estimator("codapo").advantages(r, seq_logprob=seq_lp)
    index = np.repeat(np.arange(n), m)
    theirs = authors_codapo(torch.tensor(r.reshape(-1)), torch.tensor(mask), torch.tensor(logp), index)
    np.testing.assert_allclose(ours, theirs.numpy().reshape(n, m), rtol=0, atol=1e-12)


def test_jspo_shrinks_all_same_groups_toward_the_batch_mean_and_zero_lambda_is_rloo():
    r = np.array([[1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
    est = get_estimator("jspo")
    adv = est.advantages(r)
    assert (adv[0] > 0).all() and est.mechanisms() == {"jspo": 1.0}  # an all-correct group keeps a signal
    wide = np.array([[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]])  # v2 = 0: lambda = 0
    np.testing.assert_allclose(get_estimator("jspo").advantages(wide), get_estimator("rloo").advantages(wide))


def test_jspo_with_one_prompt_is_finite_where_the_released_code_is_nan():
    adv = get_estimator("jspo").advantages(np.array([[1.0, 0.0, 0.0, 1.0]]))
    assert np.isfinite(adv).all()


def test_dbb_posterior_mean_is_the_papers_shrinkage_of_eq_14():
    """p = w mu_prev + (1 - w) S/N with w = lam H_prev / (lam H_prev + N) (Eq. 14 for the realised S)."""
    rng = np.random.default_rng(3)
    est = get_estimator("dbb", discount=0.75, normalise=False)
    ids = ["a", "b", "c"]
    alpha, beta = np.ones(3), np.ones(3)
    for _ in range(5):
        r = (rng.random((3, 8)) < 0.4).astype(float)
        adv = est.advantages(r, prompt_ids=ids)
        s = r.sum(1)
        w = 0.75 * (alpha + beta) / (0.75 * (alpha + beta) + 8)
        p = w * alpha / (alpha + beta) + (1 - w) * s / 8
        np.testing.assert_allclose(r - adv, np.repeat(p[:, None], 8, 1), rtol=0, atol=1e-12)
        alpha, beta = 0.75 * alpha + s, 0.75 * beta + 8 - s


def test_dbb_without_discount_is_the_conjugate_beta_posterior_of_eq_10_and_never_collapses():
    est = get_estimator("dbb", discount=1.0)
    for _ in range(3):
        adv = est.advantages(np.ones((1, 4)), prompt_ids=["q"])
    a, b = 1 + 12, 1  # three all-correct visits of G = 4
    p, sd = a / (a + b), np.sqrt(a * b) / (a + b)
    np.testing.assert_allclose(adv, (1 - p) / (sd + 1e-6), rtol=0, atol=1e-12)
    assert (adv > 0).all() and est.mechanisms() == {"dbb": 1.0}


def test_dbb_follows_prompt_ids_across_batch_orders_and_resumes_bit_exactly():
    rng = np.random.default_rng(0)
    batches = [(rng.random((4, 6)) < 0.5).astype(float) for _ in range(4)]
    ids = ["w", "x", "y", "z"]
    one, two = get_estimator("dbb"), get_estimator("dbb")
    outputs = []
    for k, r in enumerate(batches):
        perm = rng.permutation(4)
        outputs.append(one.advantages(r, prompt_ids=ids))
        np.testing.assert_array_equal(outputs[-1][perm], two.advantages(r[perm], prompt_ids=[ids[i] for i in perm]))
        if k == 1:
            resumed = get_estimator("dbb")
            resumed.load_state_dict(json.loads(json.dumps(one.state_dict())))
    for k in (2, 3):
        np.testing.assert_array_equal(resumed.advantages(batches[k], prompt_ids=ids), outputs[k])
    assert not np.array_equal(get_estimator("dbb").advantages(batches[3], prompt_ids=ids), outputs[3])


def test_a_prompt_repeated_within_a_batch_updates_its_posterior_row_by_row():
    est = get_estimator("dbb", discount=1.0, normalise=False)
    r = np.array([[1.0, 1.0], [0.0, 0.0]])
    adv = est.advantages(r, prompt_ids=["q", "q"])
    np.testing.assert_allclose(r - adv, [[3 / 4] * 2, [3 / 6] * 2])  # Beta(3, 1), then Beta(3, 3)


@pytest.mark.parametrize(
    "name,settings,message",
    [
        ("dbb", {"discount": 0.0}, r"discount=0.0 is out of range; valid: \(0.0, 1.0\]"),
        ("dbb", {"alpha0": -1.0}, r"valid: \(0.0, inf\]"),
        ("jspo", {"eps": -1.0}, r"valid: \[0.0, 1.0\]"),
        ("codapo", {"weight_offset": -0.1}, r"valid: \[0.0, 100.0\]"),
    ],
)
def test_out_of_range_hyperparameters_name_the_valid_range(name, settings, message):
    with pytest.raises(BenchctlError, match=message):
        get_estimator(name, **settings)


def test_bad_inputs_are_one_line_errors():
    r = np.ones((2, 4))
    with pytest.raises(BenchctlError, match="one id per group"):
        get_estimator("dbb").advantages(r, prompt_ids=["a"])
    with pytest.raises(BenchctlError, match="seq_logprob must be finite"):
        get_estimator("codapo").advantages(r, seq_logprob=np.zeros((2, 3)))
    with pytest.raises(BenchctlError, match="unknown estimator input 'ids'; valid: prompt_ids, seq_logprob"):
        get_estimator("grpo").advantages(r, ids=["a", "b"])
    with pytest.raises(BenchctlError, match=r"dbb needs rewards in \[0, 1\]"):
        get_estimator("dbb").advantages(r * 2)
