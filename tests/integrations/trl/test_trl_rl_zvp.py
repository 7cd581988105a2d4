"""RL-ZVP (arXiv:2509.21880) through benchctl.integrations.trl: TRL's GRPOTrainer trains on benchctl's rl_zvp token
advantages, from the policy's entropies at the sampled completion tokens.

Runs in the main venv (`trl` is the `integrations` test extra); CPU, fp32, the embedded tiny model.
"""

import pytest

pytest.importorskip("trl", reason="TRL is not installed: pip install -e '.[integrations]' (make test does)")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import trl  # noqa: E402
from datasets import Dataset  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402
from trl import GRPOConfig  # noqa: E402

from benchctl.estimators import get_estimator  # noqa: E402
from benchctl.integrations.trl import BenchctlGRPOTrainer  # noqa: E402
from benchctl.models.testing import tiny_model_fixture  # noqa: E402

tiny_model = tiny_model_fixture()
G, PROMPTS, STEPS, TEMPERATURE, ALPHA = 4, 3, 2, 0.7, 0.3


def reward(prompts, completions, **_):
    """All-correct groups for prompts "0+b=", all-wrong for "1+b=", a spread of rewards for "2+b=": any 3 of the 6
    prompts hold a zero-variance group."""
    spread = [(sum(map(ord, c)) % 5) / 4 for c in completions]
    return [1.0 if p.startswith("0") else 0.0 if p.startswith("1") else s for p, s in zip(prompts, spread)]


def make_trainer(model_dir, out_dir, **options):
    args = GRPOConfig(
        output_dir=str(out_dir),
        use_cpu=True,
        bf16=False,
        fp16=False,
        gradient_checkpointing=False,
        per_device_train_batch_size=PROMPTS * G,
        num_generations=G,
        max_completion_length=6,
        temperature=TEMPERATURE,
        learning_rate=1e-3,
        beta=0.0,
        max_steps=STEPS,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=0,
        disable_tqdm=True,
        log_level="error",
        **options,
    )
    data = Dataset.from_list([{"prompt": f"{a}+{b}="} for a in range(3) for b in range(2)])
    return BenchctlGRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32),
        reward_funcs=reward,
        args=args,
        train_dataset=data,
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        estimator="rl_zvp",
        estimator_params={"alpha": ALPHA},
    )


def plain_entropies(model_dir, output) -> torch.Tensor:
    """H_t (N, T) of the completion tokens from an ordinary forward of the initial weights (no fused head):
    softmax(logits / temperature) at the position before each token."""
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
    mask = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
    width = output["completion_ids"].shape[1]
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits[:, -width - 1 : -1].float() / TEMPERATURE
    logp = torch.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp).sum(dim=-1)


@pytest.fixture(scope="module")
def zvp_run(tiny_model, tmp_path_factory):
    """Two TRL steps with estimator="rl_zvp"; records per step the rewards, the entropies the plug-in used, the
    output (ids, masks, advantages) and the advantages the loss saw."""
    trainer = make_trainer(tiny_model, tmp_path_factory.mktemp("trl_zvp"))
    seen = {"rewards": [], "entropies": [], "output": [], "loss": []}
    generate, entropies, loss = (
        trainer._generate_and_score_completions,
        trainer.completion_entropies,
        trainer._compute_loss,
    )

    def spy_entropies(output, mode):
        seen["entropies"].append(entropies(output, mode).clone())
        return seen["entropies"][-1]

    def spy_generate(inputs):
        output = generate(inputs)
        seen["rewards"].append(trainer._sequence_rewards().clone())
        seen["output"].append({k: v.clone() for k, v in output.items() if isinstance(v, torch.Tensor)})
        return output

    def spy_loss(model, inputs):
        seen["loss"].append(inputs["advantages"].clone())
        return loss(model, inputs)

    trainer.completion_entropies, trainer._generate_and_score_completions = spy_entropies, spy_generate
    trainer._compute_loss = spy_loss
    trainer.train()
    return trainer, seen


def benchctl_rl_zvp(rewards: torch.Tensor, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """benchctl's own rl_zvp on a TRL batch: rewards (N,) in TRL's (P, G) order, entropies h and mask (N, T) ->
    A_t (N, T), rows with A = 0 left at 0 as benchctl's trainer leaves them."""
    r = rewards.view(-1, G)  # (P, G)
    degenerate = np.repeat((r == r[:, :1]).all(dim=1).numpy(), G)  # (N,)
    assert degenerate.any()  # the batch holds a zero-variance group
    seq = get_estimator("rl_zvp", alpha=ALPHA).advantages(r).reshape(-1)  # (N,)
    rows = (seq != 0).nonzero().view(-1)
    want = torch.zeros(mask.shape)  # (N, T)
    want[rows] = get_estimator("rl_zvp", alpha=ALPHA).token_advantages(
        seq[rows], h[rows], mask[rows].bool(), degenerate[rows.numpy()]
    )
    flat = seq[torch.as_tensor(degenerate), None] * mask[torch.as_tensor(degenerate)]
    assert not torch.equal(want[torch.as_tensor(degenerate)], flat)  # the entropies shaped the zero-variance rows
    return want


@pytest.mark.slow
def test_trls_loss_trains_on_benchctls_rl_zvp_token_advantages_every_step(zvp_run):
    _, seen = zvp_run
    assert len(seen["rewards"]) == len(seen["entropies"]) == len(seen["output"]) == len(seen["loss"]) == STEPS
    for rewards, h, output, in_loss in zip(seen["rewards"], seen["entropies"], seen["output"], seen["loss"]):
        want = benchctl_rl_zvp(rewards, h, output["completion_mask"])
        assert torch.equal(output["advantages"], want)  # bit for bit
        assert in_loss.shape == want.shape  # TRL's loss took the (N, T) token advantages
        assert sorted(map(tuple, in_loss.tolist())) == sorted(map(tuple, want.tolist()))  # TRL shuffles rows


@pytest.mark.slow
def test_the_entropies_are_the_policys_at_the_rollout_temperature_before_the_update(zvp_run, tiny_model):
    _, seen = zvp_run
    want = plain_entropies(tiny_model, seen["output"][0])  # step 1: the policy still has its initial weights
    mask = seen["output"][0]["completion_mask"].bool()
    got = seen["entropies"][0]
    assert not got.requires_grad
    torch.testing.assert_close(got[mask], want[mask], rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_rl_zvp_reports_its_mechanism_and_its_shaped_share_under_its_own_name_in_trls_logs(zvp_run):
    trainer, _ = zvp_run
    steps = [row for row in trainer.state.log_history if "mechanism/rl_zvp/acted" in row]
    assert len(steps) == STEPS
    assert all(row["mechanism/rl_zvp/acted"] == 1.0 for row in steps)  # every step held a zero-variance group
    assert all(0 < row["benchctl/zvp_shaped_frac"] <= 1 for row in steps)
    assert not any(key.endswith("reshaped_frac") or key.startswith("oar/") for row in steps for key in row)


@pytest.mark.parametrize("options, trl_forward", [({}, False), ({"num_iterations": 2}, True)])
def test_rl_zvp_equals_benchctls_with_entropies_from_trls_old_policy_forward_or_one_extra_forward(
    tiny_model, tmp_path, monkeypatch, options, trl_forward
):
    """num_iterations=2 makes TRL compute the old policy's log-probs while generating (as vLLM with importance
    sampling does): their forward's entropies are kept, no extra forward. Either way one forward, same entropies."""
    trainer = make_trainer(tiny_model, tmp_path, **options)
    calls = []
    forward = trl.GRPOTrainer._get_per_token_logps_and_entropies

    def counting(self, *args, **kwargs):
        calls.append(kwargs.get("compute_entropy", False))
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(trl.GRPOTrainer, "_get_per_token_logps_and_entropies", counting)
    used = []
    entropies = trainer.completion_entropies
    trainer.completion_entropies = lambda output, mode: used.append(entropies(output, mode)) or used[-1]
    trainer.model.train()  # as in trainer.train(): the training batch, the estimator's own state
    output = trainer._generate_and_score_completions(
        [{"prompt": p} for p in ("0+0=", "1+0=", "2+0=") for _ in range(G)]
    )
    assert ("old_per_token_logps" in output) == trl_forward
    assert calls == [True]  # one policy forward in all, its entropies asked for
    mask = output["completion_mask"].bool()
    torch.testing.assert_close(used[0][mask], plain_entropies(tiny_model, output)[mask], rtol=1e-5, atol=1e-5)
    want = benchctl_rl_zvp(trainer._sequence_rewards(), used[0], output["completion_mask"])
    assert torch.equal(output["advantages"], want)  # benchctl's rl_zvp on the same batch, bit for bit
    assert trainer._metrics["train"]["mechanism/rl_zvp/acted"] == [1.0]
