"""The losses TRL 1.16 ships equal TRL's, imported: TRL computes its loss inline in `GRPOTrainer._compute_loss`, so
the test calls that very method (unbound) on a stand-in trainer whose forward returns our log-probs; no model,
no accelerator. Identical random fp64 tensors with padding; loss value and gradient w.r.t. the log-probs.

TRL's `loss_type` grpo / bnpo / dr_grpo / dapo are `ppo_clip` with four aggregations; `delta` is ppo_clip's
dual-clip `c`; importance_sampling_level="sequence" is `gspo`; cispo's `epsilon_high` E is `clip_high` = E - 1.
"""

from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch

trl_grpo = pytest.importorskip("trl.trainer.grpo_trainer", reason="TRL is not installed in this venv")

from benchctl.losses import get_loss  # noqa: E402

FP64 = {"rtol": 1e-12, "atol": 1e-14}
N, T = 8, 11
# TRL builds SAPO's temperatures with torch.where on Python floats, a float32 tensor: its 1.05 is 1.0499999523
F32_TAU_NEG = float(torch.tensor(1.05, dtype=torch.float32))


def batch(seed, token_adv=True):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, T + 1, (N,), generator=g)
    lengths[0] = T
    mask = (torch.arange(T)[None, :] < lengths[:, None]).long()  # (N, T), TRL's completion_mask dtype
    logp = torch.log(torch.rand(N, T, generator=g, dtype=torch.float64) * 0.9 + 0.05)
    old = logp + 0.3 * torch.randn(N, T, generator=g, dtype=torch.float64)
    adv = torch.randn(N, T if token_adv else 1, generator=g, dtype=torch.float64).expand(N, T).clone()
    pad = mask == 0
    logp[pad], old[pad], adv[pad] = -7.0, -2.0, 5.0  # garbage that must not reach the loss
    ref = logp + 0.2 * torch.randn(N, T, generator=g, dtype=torch.float64)
    return logp, old, adv, mask, ref


class Trainer(SimpleNamespace):
    """What `GRPOTrainer._compute_loss` reads from `self`, for one process, no accumulation, training mode."""

    get_gamma_weights = staticmethod(trl_grpo.GRPOTrainer.get_gamma_weights)

    def _get_per_token_logps_and_entropies(self, model, *args, **kwargs):
        return self.logps, torch.zeros_like(self.logps), None


def trl_value_and_grad(loss_type, logp, old, adv, mask, ref=None, level="token", **args):
    lp = logp.clone().requires_grad_(True)
    accelerator = SimpleNamespace(num_processes=1, gather=lambda x: x, reduce=lambda x, reduction: x)
    accelerator.gather_for_metrics = accelerator.gather
    defaults = {"delta": None, "use_bias_correction_kl": False, "steps_per_generation": 1}
    defaults |= {"sapo_temperature_pos": 1.0, "sapo_temperature_neg": 1.05}
    defaults |= {"vespo_k_pos": 2.0, "vespo_lambda_pos": 3.0, "vespo_k_neg": 3.0, "vespo_lambda_neg": 2.0}
    trainer = Trainer(
        logps=lp,
        loss_type=loss_type,
        importance_sampling_level=level,
        epsilon_low=args.pop("epsilon_low", 0.2),
        epsilon_high=args.pop("epsilon_high", 0.28),
        beta=args.pop("beta", 0.0),
        args=SimpleNamespace(**(defaults | args)),
        top_entropy_quantile=1.0,
        off_policy_mask_threshold=None,
        use_vllm=False,
        model=SimpleNamespace(training=True),
        current_gradient_accumulation_steps=1,
        max_completion_length=T,
        accelerator=accelerator,
        aux_loss_enabled=False,
        _entropy_bonus_enabled=False,
        _metrics=defaultdict(lambda: defaultdict(list)),
    )
    inputs = {
        "prompt_ids": torch.ones(N, 1, dtype=torch.long),
        "prompt_mask": torch.ones(N, 1, dtype=torch.long),
        "completion_ids": torch.ones(N, T, dtype=torch.long),
        "completion_mask": mask,
        "advantages": adv,
        "old_per_token_logps": old,
        "num_items_in_batch": mask.sum(),
        "ref_per_token_logps": ref,
    }
    loss = trl_grpo.GRPOTrainer._compute_loss(trainer, None, inputs)
    loss.backward()
    return loss.detach(), lp.grad


def ours_value_and_grad(name, agg, logp, old, adv, mask, ref=None, beta=0.0, **params):
    lp = logp.clone().requires_grad_(True)
    loss, _ = get_loss(name, **params)(lp, old, adv, mask.double(), agg, kl_coef=beta, ref_log_prob=ref)
    loss.backward()
    return loss.detach(), lp.grad


# TRL loss_type (+ TRL args), our loss, its aggregation, our params
CASES = [
    ("grpo", {}, "ppo_clip", "seq-mean-token-mean", {"clip_low": 0.2, "clip_high": 0.28}),
    ("bnpo", {}, "ppo_clip", "token-mean", {"clip_low": 0.2, "clip_high": 0.28}),
    ("dr_grpo", {}, "ppo_clip", "seq-mean-token-sum-norm", {"clip_low": 0.2, "clip_high": 0.28}),
    ("dapo", {}, "ppo_clip", "token-mean", {"clip_low": 0.2, "clip_high": 0.28}),
    ("grpo", {"delta": 1.6}, "ppo_clip", "seq-mean-token-mean", {"clip_low": 0.2, "clip_high": 0.28, "c": 1.6}),
    ("grpo", {"level": "sequence"}, "gspo", "seq-mean-token-mean", {"clip_low": 0.2, "clip_high": 0.28}),
    ("luspo", {"level": "sequence"}, "luspo", "seq-mean-token-mean", {"clip_low": 0.2, "clip_high": 0.28}),
    ("cispo", {"epsilon_high": 1.25}, "cispo", "token-mean", {"clip_low": None, "clip_high": 0.25}),
    ("sapo", {}, "sapo", "seq-mean-token-mean", {"tau_neg": F32_TAU_NEG}),
    ("vespo", {}, "vespo", "token-mean", {}),
    ("grpo", {"beta": 0.04}, "ppo_clip", "seq-mean-token-mean", {"clip_low": 0.2, "clip_high": 0.28, "beta": 0.04}),
]
IDS = [f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(CASES)]


@pytest.mark.parametrize("token_adv", [False, True], ids=["row-advantages", "token-advantages"])
@pytest.mark.parametrize("loss_type,trl_args,name,agg,params", CASES, ids=IDS)
def test_loss_equals_trls_compute_loss_value_and_gradient(loss_type, trl_args, name, agg, params, token_adv):
    for seed in range(3):
        logp, old, adv, mask, ref = batch(seed, token_adv)
        want = trl_value_and_grad(loss_type, logp, old, adv, mask, ref, **trl_args)
        got = ours_value_and_grad(name, agg, logp, old, adv, mask, ref, **params)
        torch.testing.assert_close(got[0], want[0], **FP64)
        torch.testing.assert_close(got[1], want[1], **FP64)


def test_trls_gspo_is_not_veRLs_gspo_token_with_token_advantages():
    logp, old, adv, mask, _ = batch(4, token_adv=True)
    want = trl_value_and_grad("grpo", logp, old, adv, mask, level="sequence")
    token_form = ours_value_and_grad("gspo_token", "seq-mean-token-mean", logp, old, adv, mask, clip_low=0.2,
                                     clip_high=0.28)  # fmt: skip
    assert float((token_form[1] - want[1]).abs().max()) > 1e-3


def test_sapo_differs_from_trl_only_by_trls_float32_temperature():
    logp, old, adv, mask, _ = batch(5)
    want = trl_value_and_grad("sapo", logp, old, adv, mask)
    exact = ours_value_and_grad("sapo", "seq-mean-token-mean", logp, old, adv, mask)  # tau_neg = 1.05 in fp64
    assert 1e-10 < float((exact[0] - want[0]).abs() / want[0].abs()) < 1e-6


def test_luspo_kl_term_is_a_row_mean_where_trl_sums_the_row():
    """With a KL term TRL's luspo sums each row's k3 KL before the mean over rows; benchctl aggregates the KL with the
    loss's aggregation (seq-mean-token-mean: a row mean), as for every loss. The values differ by exactly
    (beta/N) sum_i (sum_t kl_it - mean_t kl_it), the documented deviation, and by nothing else."""
    from benchctl.losses._common import k3_kl

    beta = 0.04
    for seed in range(3):
        logp, old, adv, mask, ref = batch(seed, token_adv=False)
        want = trl_value_and_grad("luspo", logp, old, adv, mask, ref, level="sequence", beta=beta)
        got = ours_value_and_grad("luspo", "seq-mean-token-mean", logp, old, adv, mask, ref, beta=beta,
                                  clip_low=0.2, clip_high=0.28)  # fmt: skip
        kl = k3_kl(logp, ref) * mask  # (N, T)
        row_sum = kl.sum(-1)
        gap = beta * (row_sum - row_sum / mask.sum(-1)).mean()
        assert float(gap) > 1e-3  # the KL term differs visibly ...
        torch.testing.assert_close(want[0] - got[0], gap, **FP64)  # ... and only by the KL's aggregation
