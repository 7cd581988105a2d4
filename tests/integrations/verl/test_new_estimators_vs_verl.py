"""The estimators veRL 0.9.1 also ships equal veRL's functions, imported (not transcribed), on identical random
rewards with degenerate groups and groups of one: reinforce_pp_baseline, gpg, opo (registered equal-length case
and `opo_advantages` with lengths) and the optimal token baseline (registered uniform case and the full
per-token `optimal_token_baseline_advantages`).  Runs in `.venv-verl`; skips where veRL is not installed.
"""

import numpy as np
import pytest

pytest.importorskip(  # a module, not "verl": a folder named verl on sys.path would pass as a namespace
    "verl.trainer.ppo.core_algos",
    reason="veRL is not installed here: these tests run in .venv-verl, which `make test` builds",
)

import torch  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402

from benchctl.estimators import get_estimator  # noqa: E402
from benchctl.estimators.optimal_baseline import opo_advantages, optimal_token_baseline_advantages  # noqa: E402

FP64 = {"rtol": 1e-12, "atol": 1e-12}
# veRL's masked_mean divides by (token count + 1e-8): its batch variance is off by ~1e-8 / N relative
WHITEN = {"rtol": 1e-8, "atol": 1e-12}
# veRL's GPG alpha = bsz / count_nonzero(scores) is a float32 tensor (an int divided by an int64 tensor)
FP32_ALPHA = {"rtol": 1.2e-7, "atol": 1e-12}


def reward_batch(seed, groups, g, binary=True):
    """(P, G) rewards: mixed, all-wrong and all-correct groups (some degenerate)."""
    rng = np.random.default_rng(seed)
    p = rng.choice([0.0, 1.0, 0.3, 0.7], size=groups)
    if binary:
        return (rng.random((groups, g)) < p[:, None]).astype(np.float64)
    cont = rng.random((groups, g))
    return np.where((p == 0.0)[:, None], 0.0, np.where((p == 1.0)[:, None], 1.0, cont))


def to_verl(rewards, lengths, t):
    """(P, G) rewards and lengths -> veRL's (P*G, T) token rewards (at the last token), mask, index."""
    n = rewards.size
    mask = (np.arange(t)[None, :] < lengths.reshape(n, 1)).astype(np.float64)  # (N, T)
    tokens = np.zeros((n, t))
    tokens[np.arange(n), lengths.reshape(n) - 1] = rewards.reshape(n)
    index = np.repeat(np.arange(rewards.shape[0]), rewards.shape[1]).astype(str).astype(object)
    return torch.tensor(tokens), torch.tensor(mask), index


CASES = [(0, 12, 4, True), (1, 9, 8, True), (2, 20, 5, False), (3, 6, 1, True), (4, 1, 6, False)]
IDS = [f"P{c[1]}-G{c[2]}-{'binary' if c[3] else 'continuous'}" for c in CASES]


@pytest.mark.parametrize("seed,groups,g,binary", CASES, ids=IDS)
def test_reinforce_pp_baseline_equals_verl_on_one_token_responses(seed, groups, g, binary):
    rewards = reward_batch(seed, groups, g, binary)
    tokens, mask, index = to_verl(rewards, np.ones(rewards.shape, dtype=int), 1)
    if rewards.size < 2:
        pytest.skip("veRL's masked_var refuses a single token")
    ref, _ = core_algos.compute_reinforce_plus_plus_baseline_outcome_advantage(tokens, mask, index)
    ours = get_estimator("reinforce_pp_baseline").advantages(rewards)
    np.testing.assert_allclose(ours.reshape(-1), ref[:, 0].numpy(), **WHITEN)


def test_reinforce_pp_baseline_with_equal_lengths_differs_from_verl_by_the_token_bessel_factor():
    rewards, t = reward_batch(5, 10, 4), 7
    n = rewards.size
    tokens, mask, index = to_verl(rewards, np.full(rewards.shape, t), t)
    ref, _ = core_algos.compute_reinforce_plus_plus_baseline_outcome_advantage(tokens, mask, index)
    ours = get_estimator("reinforce_pp_baseline", eps=0.0).advantages(rewards)
    factor = np.sqrt((n * t - 1) / (t * (n - 1)))  # veRL's var over N*T tokens vs ours over N rollouts
    np.testing.assert_allclose(ref.numpy(), np.repeat(ours.reshape(n, 1) * factor, t, axis=1), rtol=1e-7)


@pytest.mark.parametrize("seed,groups,g,binary", CASES, ids=IDS)
def test_gpg_equals_verl_including_its_nonzero_reward_count(seed, groups, g, binary):
    rewards = reward_batch(seed, groups, g, binary)
    lengths = np.random.default_rng(seed).integers(1, 6, size=rewards.shape)
    tokens, mask, index = to_verl(rewards, lengths, 6)
    ref, _ = core_algos.compute_gpg_outcome_advantage(tokens, mask, index)
    ours = get_estimator("gpg").advantages(rewards)
    np.testing.assert_allclose(ref.numpy(), ours.reshape(-1, 1) * mask.numpy(), **FP32_ALPHA)


@pytest.mark.parametrize("seed,groups,g,binary", CASES, ids=IDS)
def test_opo_with_lengths_equals_verl(seed, groups, g, binary):
    rewards = reward_batch(seed, groups, g, binary)
    lengths = np.random.default_rng(seed).integers(1, 9, size=rewards.shape)
    tokens, mask, index = to_verl(rewards, lengths, 8)
    ref, _ = core_algos.compute_opo_outcome_advantage(tokens, mask, index)
    ours = opo_advantages(rewards, lengths.astype(np.float64))
    np.testing.assert_allclose(ref.numpy(), ours.reshape(-1, 1) * mask.numpy(), **FP64)


@pytest.mark.parametrize("seed,groups,g,binary", CASES, ids=IDS)
def test_registered_opo_equals_verl_when_all_responses_have_one_length(seed, groups, g, binary):
    rewards = reward_batch(seed, groups, g, binary)
    tokens, mask, index = to_verl(rewards, np.full(rewards.shape, 5), 5)
    ref, _ = core_algos.compute_opo_outcome_advantage(tokens, mask, index)
    ours = get_estimator("opo").advantages(rewards)
    np.testing.assert_allclose(ref[:, 0].numpy(), ours.reshape(-1), **FP64)


def token_statistics(rng, n, t):
    """Random old log-probs and sum of squared probabilities with sum pi^2 >= pi^2 (a valid distribution)."""
    pi = rng.uniform(0.05, 0.95, size=(n, t))
    return np.log(pi), pi**2 + rng.uniform(0.0, (1 - pi) ** 2)


@pytest.mark.parametrize("zero_tail", [True, False])
@pytest.mark.parametrize("seed,groups,g,binary", CASES, ids=IDS)
def test_optimal_token_baseline_function_equals_verl(seed, groups, g, binary, zero_tail):
    rng = np.random.default_rng(seed)
    rewards, t = reward_batch(seed, groups, g, binary), 9
    lengths = rng.integers(1, t + 1, size=rewards.shape)
    tokens, mask, index = to_verl(rewards, lengths, t)
    logp, pi2 = token_statistics(rng, rewards.size, t)
    ref, _ = core_algos.compute_optimal_token_baseline_advantage(
        tokens, mask, index, torch.tensor(logp), torch.tensor(pi2), handle_zero_tail=zero_tail
    )
    shape = (groups, g, t)
    ours = optimal_token_baseline_advantages(
        tokens.numpy().reshape(shape), mask.numpy().reshape(shape), logp.reshape(shape), pi2.reshape(shape), zero_tail
    )
    np.testing.assert_allclose(ref.numpy(), ours.reshape(-1, t), **FP64)


@pytest.mark.parametrize("seed,groups,g,binary", CASES, ids=IDS)
def test_registered_optimal_token_baseline_equals_verl_with_equal_lengths_and_weights(seed, groups, g, binary):
    rng = np.random.default_rng(seed)
    rewards, t = reward_batch(seed, groups, g, binary), 6
    tokens, mask, index = to_verl(rewards, np.full(rewards.shape, t), t)
    logp, pi2 = token_statistics(rng, groups, t)  # one row per group: every rollout of a group gets the same w_t
    logp, pi2 = np.repeat(logp, g, axis=0), np.repeat(pi2, g, axis=0)
    ref, _ = core_algos.compute_optimal_token_baseline_advantage(
        tokens, mask, index, torch.tensor(logp), torch.tensor(pi2), epsilon=0.0
    )  # epsilon=0: with equal weights veRL's baseline is the group mean up to its eps / sum W
    ours = get_estimator("optimal_token_baseline").advantages(rewards)
    np.testing.assert_allclose(ref.numpy(), np.repeat(ours.reshape(-1, 1), t, axis=1), **FP64)
