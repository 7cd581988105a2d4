"""benchctl.integrations.trl: TRL's GRPOTrainer trains on benchctl's advantages.

Runs in the main venv (`trl` is the `integrations` test extra); CPU, fp32, the embedded tiny model.
"""

import json
import zlib

import pytest

pytest.importorskip("trl", reason="TRL is not installed: pip install -e '.[integrations]' (make test does)")

import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402
from trl import GRPOConfig  # noqa: E402

from benchctl.errors import BenchctlError  # noqa: E402
from benchctl.estimators import get_estimator  # noqa: E402
from benchctl.integrations.trl import STATE_FILE, BenchctlGRPOTrainer, trl_estimator  # noqa: E402
from benchctl.models.testing import tiny_model_fixture  # noqa: E402

tiny_model = tiny_model_fixture()
G, PROMPTS, STEPS = 4, 3, 2
PARAMS = {"lambda_scale": 1.5, "eta": 0.5}


def reward_spread(completions, **_):
    """A deterministic reward in {0, 0.25, ..., 1} of the completion text, so groups are rarely degenerate."""
    return [(zlib.crc32(c.encode()) % 5) / 4 for c in completions]


def make_trainer(model_dir, out_dir, recorded, estimator="ha_dw", estimator_params=PARAMS, **options):
    def reward(completions, **kw):
        values = reward_spread(completions)
        recorded.append(values)  # one call per generation batch, completions in TRL's (P, G) order
        return values

    args = GRPOConfig(
        output_dir=str(out_dir),
        use_cpu=True,
        bf16=False,
        fp16=False,
        gradient_checkpointing=False,
        per_device_train_batch_size=PROMPTS * G,
        num_generations=G,
        max_completion_length=6,
        learning_rate=1e-3,
        beta=0.0,
        max_steps=STEPS,
        logging_steps=1,
        save_strategy="steps",
        save_steps=1,
        report_to="none",
        seed=0,
        disable_tqdm=True,
        log_level="error",
        **options,
    )
    data = Dataset.from_list([{"prompt": f"{a}+{b}="} for a in range(4) for b in range(3)])
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    return BenchctlGRPOTrainer(
        model=model,
        reward_funcs=reward,
        args=args,
        train_dataset=data,
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        estimator=estimator,
        estimator_params=estimator_params,
    )


@pytest.fixture(scope="module")
def trained(tiny_model, tmp_path_factory):
    """Two TRL steps with estimator="ha_dw"; records rewards, the advantages returned and those the loss saw."""
    out = tmp_path_factory.mktemp("trl")
    recorded, returned, in_loss = [], [], []
    trainer = make_trainer(tiny_model, out, recorded)
    generate, compute_loss = trainer._generate_and_score_completions, trainer._compute_loss

    def spy_generate(inputs):
        output = generate(inputs)
        returned.append(output["advantages"].clone())
        return output

    def spy_loss(model, inputs):
        in_loss.append(inputs["advantages"].clone())
        return compute_loss(model, inputs)

    trainer._generate_and_score_completions, trainer._compute_loss = spy_generate, spy_loss
    trainer.train()
    return trainer, out, recorded, returned, in_loss


def test_two_trl_steps_with_ha_dw_use_exactly_benchctls_advantages(trained):
    trainer, _, recorded, returned, in_loss = trained
    assert len(recorded) == len(returned) == len(in_loss) == STEPS
    reference = get_estimator("ha_dw", **PARAMS)
    for rewards, got, seen in zip(recorded, returned, in_loss):
        want = reference.advantages(torch.tensor(rewards, dtype=torch.float32).view(-1, G)).reshape(-1)
        assert torch.equal(got, want)  # same values, same (P, G) order, bit for bit
        assert torch.equal(seen.sort().values, want.sort().values)  # the loss got them (TRL shuffles rows)
    assert trainer.estimator.state_dict() == reference.state_dict()  # the anchor moved once per step
    r = torch.tensor(recorded[-1]).view(-1, G)
    trl_own = ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-4)).reshape(-1)
    assert not torch.allclose(returned[-1], trl_own, atol=1e-3)  # HA-DW reweighting differs from TRL's GRPO


def test_benchctl_diagnostics_reach_trls_logs(trained):
    trainer = trained[0]
    steps = [row for row in trainer.state.log_history if "benchctl/anchor" in row]
    assert len(steps) == STEPS
    assert {"benchctl/acr", "benchctl/anchor"} <= set(steps[-1])
    assert steps[-1]["benchctl/anchor"] == pytest.approx(trainer.estimator.diagnostics()["anchor"])
    assert steps[-1]["mechanism/ha_dw/acted"] == 1.0  # the anchor moved: logged as benchctl's trainer logs it
    assert list(trainer._logs["advantages"])[-PROMPTS * G :] == pytest.approx(trained[3][-1].tolist())


def test_estimator_state_is_saved_with_each_checkpoint_and_restored_on_resume(trained, tiny_model, tmp_path):
    trainer, out = trained[0], trained[1]
    saved = json.loads((out / f"checkpoint-{STEPS}" / STATE_FILE).read_text())
    assert saved == trainer.estimator.state_dict()
    first = json.loads((out / "checkpoint-1" / STATE_FILE).read_text())
    assert first != saved
    recorded = []
    resumed = make_trainer(tiny_model, tmp_path, recorded)
    resumed.train(resume_from_checkpoint=str(out / "checkpoint-1"))  # runs step 2 only
    reference = get_estimator("ha_dw", **PARAMS)
    reference.load_state_dict(first)
    (rewards,) = recorded
    reference.advantages(torch.tensor(rewards, dtype=torch.float32).view(-1, G))
    assert resumed.estimator.state_dict() == reference.state_dict()


def test_evaluation_batches_use_the_estimator_without_advancing_its_state(trained):
    trainer = trained[0]
    before = trainer.estimator.state_dict()
    recorded = []
    trainer.reward_funcs[0] = lambda completions, **kw: recorded.append(reward_spread(completions)) or recorded[-1]
    trainer.model.eval()
    try:
        output = trainer._generate_and_score_completions([{"prompt": "1+2="} for _ in range(G)] * 2)
    finally:
        trainer.model.train()
    assert trainer.estimator.state_dict() == before
    reference = get_estimator("ha_dw", **PARAMS)
    reference.load_state_dict(before)
    want = reference.advantages(torch.tensor(recorded[-1], dtype=torch.float32).view(-1, G)).reshape(-1)
    assert torch.equal(output["advantages"], want)


def test_oar_needs_token_scores_trl_does_not_compute():
    with pytest.raises(BenchctlError, match="per-token"):
        BenchctlGRPOTrainer(model="unused", estimator="oar_g")


@pytest.mark.slow
def test_prompt_ids_reach_a_history_aware_estimator(tiny_model, tmp_path):
    """DBB's per-prompt state is keyed by TRL's prompts (a hash of each), not by row numbers."""
    import hashlib

    trainer = make_trainer(tiny_model, tmp_path, [], estimator="dbb", estimator_params={})
    trainer.train()
    ids = trainer.estimator.state_dict()["state"]["ids"]
    hashes = {str(int(hashlib.sha1(f"{a}+{b}=".encode()).hexdigest()[:15], 16)) for a in range(4) for b in range(3)}
    assert len(ids) >= PROMPTS and set(ids) <= hashes


def test_rl_zvp_takes_trls_entropies_and_f_grpo_is_taken():
    assert (
        trl_estimator("rl_zvp", {"alpha": 0.2}).token_scores == "entropy"
    )  # tests/integrations/trl/test_trl_rl_zvp.py
    assert trl_estimator("f_grpo", {"gamma": 0.5}).params.gamma == 0.5
