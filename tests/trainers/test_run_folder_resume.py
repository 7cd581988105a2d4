"""Resuming a run folder cuts it back to its latest checkpoint, whatever moment the previous process was killed at
(`train_run.discard_after`); no model or engine needed."""

import json

import pyarrow.parquet as pq

from benchctl.results import train_run


def _killed_run(tmp_path):
    """A run killed after logging step 3 with checkpoint 2 committed, checkpoint 4 and RUN/model/ half-written."""
    run = tmp_path / "run"
    train_run.create_run(run, {"seed": {"value": 0, "source": "default"}})
    rows = [{"step": s, "reward/mean": s / 10} for s in (1, 2, 3)]
    train_run.write_train_metrics(run, rows)
    for step in (1, 2, 3):
        train_run.write_rollouts(
            run, step, train_run.rollout_table(step, ["p"], [[1.0]], [[0.0]], [1], ["stop"], ["x"])
        )
    scratch = train_run.checkpoint_scratch(run, 2)
    (scratch / "state.json").write_text(json.dumps({}))
    train_run.commit_checkpoint(run, scratch, 2)
    (train_run.checkpoint_scratch(run, 4) / "trainer.pt").write_bytes(b"half")
    (run / ".model.12345.tmp").mkdir()
    (run / ".model.12345.tmp" / "model.safetensors").write_bytes(b"half")
    (run / ".train_metrics.parquet.12345.tmp").write_bytes(b"half")
    (run / "rollouts" / ".part-00004.parquet.12345.tmp").write_bytes(b"half")
    return run


def test_discard_after_leaves_exactly_the_checkpoint_state(tmp_path):
    run = _killed_run(tmp_path)
    train_run.discard_after(run, train_run.latest_checkpoint_step(run))
    assert pq.read_table(run / "train_metrics.parquet").column("step").to_pylist() == [1, 2]
    assert [step for step, _ in train_run.rollout_parts(run)] == [1, 2]
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["latest", "step-000002"]
    assert not [*run.glob(".*.tmp"), *run.glob("*/.*.tmp")], "half-written temporaries are removed"


def _adamw_run(resume_after: int | None):
    """Three AdamW steps as the trainer takes them (gradients zeroed in place): a real gradient, then two
    all-skipped mini-batches (zero gradients); optionally 'resumed' after `resume_after` steps into a fresh
    module and optimizer through `checkpoint.load_optimizer`. Returns the final weights."""
    import torch

    from benchctl.trainers.checkpoint import load_optimizer

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1, fused=True)
    for step in range(3):
        if step == resume_after:
            saved, weights = optimizer.state_dict(), {k: v.clone() for k, v in model.state_dict().items()}
            model = torch.nn.Linear(3, 2)
            model.load_state_dict(weights)
            optimizer = torch.optim.AdamW(model.parameters(), lr=0.1, fused=True)
            load_optimizer(optimizer, saved)
        optimizer.zero_grad(set_to_none=False)
        if step == 0:
            model(torch.ones(4, 3)).square().sum().backward()
        optimizer.step()
    return model.weight.detach().clone()


def test_a_resumed_all_skipped_step_moves_the_weights_as_the_uninterrupted_run():
    import torch

    uninterrupted = _adamw_run(None)
    assert torch.equal(_adamw_run(1), uninterrupted)
    assert torch.equal(_adamw_run(2), uninterrupted)
