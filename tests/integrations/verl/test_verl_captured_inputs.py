"""DBB (arXiv:2603.18444) and CoDaPO (arXiv:2606.07950) through benchctl.integrations.verl inside stock veRL 0.9.1:
the stable prompt ids (each row's extra_info.index) and the old log-probs RayPPOTrainer._compute_old_log_prob sees
and computes, which compute_advantage does not pass, reach benchctl's estimators as prompt_ids / seq_logprob.

Runs in `.venv-verl` (see test_verl_plugin.py); the actor worker group and batch layout are test_verl_rl_zvp.py's.
"""

import numpy as np
import pytest

pytest.importorskip(
    "verl.trainer.ppo.core_algos",
    reason="veRL is not installed here: these tests run in .venv-verl, which `make test` builds",
)

import torch  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

# pytest puts this folder on sys.path (a `tests` package in veRL's venv shadows the repository's)
from test_verl_rl_zvp import driver, driver_batch  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402
from verl.trainer.ppo.ray_trainer import RayPPOTrainer, compute_advantage  # noqa: E402

from benchctl.errors import BenchctlError  # noqa: E402
from benchctl.estimators import get_estimator  # noqa: E402
from benchctl.integrations import verl as plugin  # noqa: E402

POOL, GROUPS, SIZE = 6, 4, 4  # dataset rows; prompts per step (drawn from the pool, so they recur) x rollouts
ESTIMATORS = [("dbb", {"discount": 0.75}), ("codapo", {}), ("codapo", {"base": "dbb"})]


@pytest.fixture(autouse=True)
def fresh_session():
    plugin.SESSION.reset()
    yield
    plugin.SESSION.reset()


def step_batch(rng, step, length=6):
    """One training step's batch as veRL's driver holds it after balance_batch: rewards (P, G) of the dataset rows
    `prompts` (P,) drawn this step; rows interleaved by `perm` (B,) (row b holds flat entry perm[b]); uids new every
    step (veRL's uuid4 per prompt); extra_info {index} per row as RLHFDataset reads it from the parquet."""
    rewards = rng.choice([0.0, 1.0], size=(GROUPS, SIZE))  # (P, G)
    prompts = rng.choice(POOL, size=GROUPS, replace=False)  # (P,)
    perm = rng.permutation(GROUPS * SIZE)  # (B,)
    lengths = rng.integers(1, length + 1, size=GROUPS * SIZE)  # (B,)
    mask = torch.as_tensor(np.arange(length)[None, :] < lengths[:, None], dtype=torch.float64)  # (B, T)
    token_rewards = torch.zeros_like(mask)
    token_rewards[torch.arange(GROUPS * SIZE), torch.as_tensor(lengths - 1)] = torch.as_tensor(
        rewards.reshape(-1)[perm]
    )
    uids = np.array([f"step{step}-{i // SIZE}" for i in perm], dtype=object)  # (B,)
    info = np.array([{"index": int(prompts[i // SIZE]), "split": "train"} for i in perm], dtype=object)  # (B,)
    return rewards, prompts, perm, token_rewards, mask, uids, info


def config(name, params):
    return OmegaConf.create({"adv_estimator": plugin.PREFIX + name, "benchctl": params, "gamma": 1.0, "lam": 1.0})


def fit_step(name, params, rng, step, info=None):
    """veRL's own _compute_old_log_prob (wrapped), then what RayPPOTrainer.fit does up to compute_advantage: pop
    `entropys`, union, the rewards, veRL's compute_advantage. Returns (advantages (B, T), old_log_probs (B, T),
    rewards, prompts, perm, mask)."""
    rewards, prompts, perm, token_rewards, mask, uids, rows_info = step_batch(rng, step)
    batch = driver_batch(rng, rewards, perm, mask, uids)
    batch.non_tensor_batch["extra_info"] = rows_info if info is None else info
    old_log_prob, _ = driver(plugin.PREFIX + name)._compute_old_log_prob(batch)
    old_log_prob.batch.pop("entropys")
    batch = batch.union(old_log_prob)
    batch.batch["token_level_rewards"] = token_rewards
    batch.batch["response_mask"] = mask
    batch = compute_advantage(batch, adv_estimator=plugin.PREFIX + name, num_repeat=SIZE, config=config(name, params))
    return batch.batch["advantages"], batch.batch["old_log_probs"], rewards, prompts, perm, mask


@pytest.mark.parametrize("name,params", ESTIMATORS)
def test_dbb_and_codapo_in_verls_driver_equal_benchctls_own_with_the_same_prompt_ids_and_log_probs(name, params):
    rng = np.random.default_rng(21)
    reference = get_estimator(name, **params)  # one for the run: DBB's per-prompt history carries across steps
    for step in range(4):
        got, logp, rewards, prompts, perm, mask = fit_step(name, params, rng, step)
        # veRL's old log-probs here are multiples of 1/2 (ActorWorkers): every sum is exact in any order
        seq = ((logp.double() * mask).sum(dim=-1) / mask.sum(dim=-1)).numpy()  # (B,) mean token log-prob
        flat = np.empty_like(seq)
        flat[perm] = seq  # (P*G,) grouped
        want = reference.advantages(
            torch.as_tensor(rewards), prompt_ids=prompts.tolist(), seq_logprob=flat.reshape(GROUPS, SIZE)
        )  # (P, G)
        torch.testing.assert_close(got, want.reshape(-1)[perm].unsqueeze(-1) * mask, rtol=0, atol=1e-12)
        assert plugin.SESSION.kept is None  # used once: never a later step's
    assert list(plugin.SESSION.mechanisms().values()) == [reference.mechanisms()]
    assert all(acted == 1.0 for acted in reference.mechanisms().values())  # DBB's history acted by the last step


@pytest.mark.parametrize("name,missing", [("dbb", "prompt_ids="), ("codapo", "old_log_probs=")])
def test_without_veRLs_old_log_prob_pass_dbb_and_codapo_are_refused_in_one_line_and_keep_their_state(name, missing):
    _, _, _, token_rewards, mask, uids, _ = step_batch(np.random.default_rng(22), 0)
    fn = core_algos.get_adv_estimator_fn(plugin.PREFIX + name)
    with pytest.raises(BenchctlError) as err:
        fn(token_level_rewards=token_rewards, response_mask=mask, index=uids, config=config(name, {}))
    message = str(err.value)
    assert "\n" not in message and missing in message
    assert "use_v1=false" in message and "bypass_mode=false" in message
    assert plugin.SESSION.mechanisms() == {next(iter(plugin.SESSION.estimators)): {}}  # no step was taken


def test_rows_without_a_dataset_index_are_refused_for_dbb_naming_extra_info_index():
    rng = np.random.default_rng(23)
    no_index = np.array([{} for _ in range(GROUPS * SIZE)], dtype=object)  # RLHFDataset's extra_info when missing
    with pytest.raises(BenchctlError, match="extra_info.index"):
        fit_step("dbb", {}, rng, 0, info=no_index)
    shared = np.array([{"index": 0} for _ in range(GROUPS * SIZE)], dtype=object)  # one id for every group
    with pytest.raises(BenchctlError, match="extra_info.index"):
        fit_step("dbb", {}, rng, 0, info=shared)
    assert fit_step("codapo", {}, rng, 0, info=no_index)[0].shape == (GROUPS * SIZE, 6)  # needs no prompt ids


def test_inputs_kept_for_another_batch_or_row_order_are_refused():
    rng = np.random.default_rng(24)
    _, prompts, perm, token_rewards, mask, uids, _ = step_batch(rng, 1)
    ids = np.array([prompts[i // SIZE] for i in perm], dtype=object)  # (B,)
    fn = core_algos.get_adv_estimator_fn(plugin.PREFIX + "codapo")
    kwargs = {"token_level_rewards": token_rewards, "response_mask": mask, "index": uids, "config": None}
    for uid in (np.array([u.replace("step1", "step0") for u in uids]), uids[::-1]):  # an earlier step's; reordered
        plugin.SESSION.keep(mask, uid, prompt_ids=ids, old_log_probs=-torch.ones_like(mask))
        with pytest.raises(BenchctlError, match="not this batch's"):
            fn(**kwargs)
    plugin.SESSION.keep(mask[:, :-1], uids, old_log_probs=-torch.ones_like(mask[:, :-1]))  # another shape
    with pytest.raises(BenchctlError, match="not this batch's"):
        fn(**kwargs)
    plugin.SESSION.keep(mask, uids, old_log_probs=-torch.ones_like(mask))  # this batch's: accepted
    assert fn(**kwargs)[0].shape == mask.shape


def test_each_verl_trainer_method_is_wrapped_once_however_often_the_plugin_patches():
    originals = {
        m: getattr(RayPPOTrainer, m) for m in ("_save_checkpoint", "_load_checkpoint", "_compute_old_log_prob")
    }
    assert all(getattr(method, "_benchctl", False) for method in originals.values())
    assert plugin.patch_checkpoints() and plugin.patch_old_log_prob()
    assert {m: getattr(RayPPOTrainer, m) for m in originals} == originals

    class Trainer:
        def _compute_old_log_prob(self, batch):
            return batch

    plain = Trainer._compute_old_log_prob
    assert plugin.patch_old_log_prob(Trainer) and plugin.patch_old_log_prob(Trainer)
    assert Trainer._compute_old_log_prob.__wrapped__ is plain  # one layer, not two
