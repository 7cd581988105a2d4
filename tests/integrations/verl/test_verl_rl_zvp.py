"""RL-ZVP (arXiv:2509.21880) through benchctl.integrations.verl inside veRL 0.9.1: the entropies veRL's driver computes
in RayPPOTrainer._compute_old_log_prob (and drops before compute_advantage) reach benchctl's rl_zvp.

Runs in `.venv-verl` (see test_verl_plugin.py).
"""

import numpy as np
import pytest

pytest.importorskip(
    "verl.trainer.ppo.core_algos",
    reason="veRL is not installed here: these tests run in .venv-verl, which `make test` builds",
)

import torch  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402
from verl.trainer.ppo.ray_trainer import RayPPOTrainer, compute_advantage  # noqa: E402
from verl.utils import tensordict_utils as tu  # noqa: E402

from benchctl.errors import BenchctlError  # noqa: E402
from benchctl.estimators import get_estimator  # noqa: E402
from benchctl.integrations import verl as plugin  # noqa: E402

ALPHA = 0.25


@pytest.fixture(autouse=True)
def fresh_session():
    plugin.SESSION.reset()
    yield
    plugin.SESSION.reset()


def zvp_batch(rng, groups=4, size=4, length=6, dtype=torch.float64):
    """Rewards (P, G) with an all-correct group 0 and an all-wrong group 1 (the rest random 0/1), veRL's rows
    interleaved by a random permutation: (rewards, perm, token_level_rewards, response_mask, uids), masks (B, T)."""
    rewards = rng.choice([0.0, 1.0], size=(groups, size))  # (P, G)
    rewards[0], rewards[1] = 1.0, 0.0
    perm = rng.permutation(groups * size)  # (B,) row b holds flat entry perm[b]
    lengths = rng.integers(1, length + 1, size=groups * size)  # (B,)
    mask = torch.as_tensor(np.arange(length)[None, :] < lengths[:, None], dtype=dtype)  # (B, T)
    token_rewards = torch.zeros_like(mask)
    token_rewards[torch.arange(groups * size), torch.as_tensor(lengths - 1)] = torch.as_tensor(
        rewards.reshape(-1)[perm], dtype=dtype
    )
    uids = np.array([f"uid-{i // size}" for i in perm], dtype=object)  # (B,)
    return rewards, perm, token_rewards, mask, uids


def benchctl_rl_zvp(rewards, perm, mask, entropies):
    """benchctl's own rl_zvp on the batch, put back on veRL's rows: (B, T) token advantages, rows with A = 0 at 0."""
    est = get_estimator("rl_zvp", alpha=ALPHA)  # stateless: a fresh one per step is the same
    seq_pg = est.advantages(torch.as_tensor(rewards, dtype=mask.dtype))  # (P, G)
    seq = seq_pg.reshape(-1)[torch.as_tensor(perm)]  # (B,)
    degenerate = np.repeat((rewards == rewards[:, :1]).all(axis=1), rewards.shape[1])[perm]  # (B,)
    want = torch.zeros_like(mask)
    live = (seq != 0).nonzero().view(-1)
    want[live] = est.token_advantages(seq[live], entropies[live], mask[live] > 0, degenerate[live.numpy()])
    return want * mask, est


def call(token_rewards, mask, uids, **kwargs):
    fn = core_algos.get_adv_estimator_fn(plugin.PREFIX + "rl_zvp")
    return fn(token_level_rewards=token_rewards, response_mask=mask, index=uids, config=CONFIG, **kwargs)[0]


CONFIG = OmegaConf.create({"adv_estimator": "benchctl_rl_zvp", "benchctl": {"alpha": ALPHA}})


def test_rl_zvp_through_verl_equals_benchctls_rl_zvp_on_the_same_batch_step_after_step():
    rng = np.random.default_rng(11)
    for _ in range(3):
        rewards, perm, token_rewards, mask, uids = zvp_batch(rng)
        entropies = torch.as_tensor(rng.gamma(2.0, 0.5, size=mask.shape))  # (B, T) >= 0, float64
        got = call(token_rewards, mask, uids, entropys=entropies)
        want, reference = benchctl_rl_zvp(rewards, perm, mask, entropies)
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
        zero_variance = torch.as_tensor(np.isin(perm // rewards.shape[1], [0, 1]))  # rows of groups 0 and 1
        assert not torch.allclose(got[zero_variance], torch.zeros(1, dtype=got.dtype))  # they got a signal
        assert len(set(got[zero_variance][mask[zero_variance] > 0].tolist())) > 2  # shaped per token
    (diagnostics,) = plugin.SESSION.diagnostics().values()
    assert list(plugin.SESSION.mechanisms().values()) == [{"rl_zvp": 1.0}] == [reference.mechanisms()]
    assert diagnostics["zvp_shaped_frac"] == reference.diagnostics()["zvp_shaped_frac"] > 0
    assert "reshaped_frac" not in diagnostics  # OAR's name stays OAR's


class ActorWorkers:
    """What RayPPOTrainer._compute_old_log_prob asks of the actor worker group (a GPU worker here absent): per
    token of the unpadded sequences (veRL's no-padding layout), the log-prob and the entropy of the next token's
    distribution, here a fixed function of the token ids."""

    def compute_log_prob(self, batch_td):
        ids = batch_td["input_ids"]  # nested (B, j1)
        values = ids.values().to(torch.float32)
        entropy = torch.nested.nested_tensor_from_jagged(0.5 + (values % 7) / 3, offsets=ids.offsets())
        logp = torch.nested.nested_tensor_from_jagged(-(values % 5) / 2, offsets=ids.offsets())
        return tu.get_tensordict({"entropy": entropy, "log_probs": logp}, non_tensor_dict={"metrics": {"mfu": 0.0}})


def driver_batch(rng, rewards, perm, mask, uids, prompt=3):
    """veRL's padded batch (left-padded prompts, right-padded responses) for the rows of `zvp_batch`."""
    b, t = mask.shape
    prompt_lens = torch.as_tensor(rng.integers(1, prompt + 1, size=b))
    prompt_mask = (torch.arange(prompt)[None, :] >= prompt - prompt_lens[:, None]).long()  # (B, prompt)
    prompts = torch.as_tensor(rng.integers(3, 50, size=(b, prompt))) * prompt_mask
    responses = torch.as_tensor(rng.integers(3, 50, size=(b, t))) * mask.long()
    attention = torch.cat([prompt_mask, mask.long()], dim=1)
    tensors = {
        "prompts": prompts,
        "responses": responses,
        "input_ids": torch.cat([prompts, responses], dim=1),
        "attention_mask": attention,
        "position_ids": (attention.cumsum(dim=1) - 1).clamp(min=0),
        "response_mask": mask.long(),
    }
    return DataProto.from_dict(tensors=tensors, non_tensors={"uid": uids})


def driver(adv_estimator="benchctl_rl_zvp"):
    trainer = RayPPOTrainer.__new__(RayPPOTrainer)
    trainer.config = OmegaConf.create(
        {"algorithm": {"adv_estimator": adv_estimator}, "actor_rollout_ref": {"actor": {}}}
    )
    trainer.actor_rollout_wg = ActorWorkers()
    return trainer


def test_verls_driver_keeps_its_old_log_prob_entropies_and_rl_zvp_uses_them_once():
    """veRL's own _compute_old_log_prob (wrapped), then what RayPPOTrainer.fit does next: pop `entropys`, union,
    veRL's compute_advantage."""
    rng = np.random.default_rng(12)
    rewards, perm, token_rewards, mask, uids = zvp_batch(rng, dtype=torch.float32)
    batch = driver_batch(rng, rewards, perm, mask, uids)
    old_log_prob, _ = driver()._compute_old_log_prob(batch)
    entropies = old_log_prob.batch.pop("entropys")  # (B, T): fit logs actor/entropy and drops them
    assert (entropies[mask > 0] > 0).all()
    batch = batch.union(old_log_prob)
    batch.batch["token_level_rewards"] = token_rewards
    batch.batch["response_mask"] = mask
    config = OmegaConf.create({**OmegaConf.to_container(CONFIG), "gamma": 1.0, "lam": 1.0})
    batch = compute_advantage(batch, adv_estimator="benchctl_rl_zvp", num_repeat=rewards.shape[1], config=config)
    want, _ = benchctl_rl_zvp(rewards, perm, mask, entropies)
    torch.testing.assert_close(batch.batch["advantages"], want, rtol=0, atol=0)  # float32 in, same float32 out
    assert plugin.SESSION.kept is None  # used once: never a later step's
    with pytest.raises(BenchctlError, match="bypass_mode"):
        compute_advantage(batch, adv_estimator="benchctl_rl_zvp", num_repeat=rewards.shape[1], config=config)


def test_the_driver_keeps_no_entropies_for_an_estimator_that_is_not_benchctls():
    rng = np.random.default_rng(13)
    rewards, perm, _, mask, uids = zvp_batch(rng, dtype=torch.float32)
    driver("grpo")._compute_old_log_prob(driver_batch(rng, rewards, perm, mask, uids))
    assert plugin.SESSION.kept is None


def test_missing_entropies_are_refused_in_one_line_naming_the_settings_and_leave_the_state():
    _, _, token_rewards, mask, uids = zvp_batch(np.random.default_rng(14))
    with pytest.raises(BenchctlError) as err:
        call(token_rewards, mask, uids)
    message = str(err.value)
    assert "\n" not in message and "entropys=" in message and "bypass_mode=false" in message
    assert "use_v1=false" in message
    assert plugin.SESSION.mechanisms() == {next(iter(plugin.SESSION.estimators)): {}}  # no step was taken


def test_entropies_kept_for_another_batch_are_refused():
    _, _, token_rewards, mask, uids = zvp_batch(np.random.default_rng(15))
    wider = torch.ones(mask.shape[0], mask.shape[1] + 1)
    plugin.SESSION.keep(wider, entropys=wider)
    with pytest.raises(BenchctlError, match="not this batch's"):
        call(token_rewards, mask, uids)
    plugin.SESSION.keep(torch.zeros_like(mask), entropys=torch.ones_like(mask))  # computed under another mask
    with pytest.raises(BenchctlError, match="not this batch's"):
        call(token_rewards, mask, uids)


def test_importing_the_plugin_wraps_verls_old_log_prob_pass_once():
    assert getattr(RayPPOTrainer._compute_old_log_prob, "_benchctl", False)
    wrapped = RayPPOTrainer._compute_old_log_prob
    assert plugin.patch_old_log_prob() and RayPPOTrainer._compute_old_log_prob is wrapped
