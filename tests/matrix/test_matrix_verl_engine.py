"""Matrix cells with `train: {engine: verl}`: without veRL here a cell's RUN/verl/ is written and
the cell stays pending with the cluster command; once veRL's outputs are in RUN/verl/ the launch ingests them."""

import json

import pyarrow.parquet as pq

from benchctl.integrations import verl_launch
from benchctl.matrix import read_matrix, run_matrix
from benchctl.results import train_run
from benchctl.results.index import read_index
from benchctl.trainers import build_config


def test_a_verl_cell_without_verl_here_is_pending_with_the_cluster_command(tmp_path, chat_model):
    spec_file = tmp_path / "m.yaml"
    spec_file.write_text(
        f"models: [{chat_model}]\ntask: arith\nestimators: {{grpo: {{}}}}\ngroup_sizes: [4]\nseeds: [1]\n"
        "train: {steps: 3, prompts_per_step: 8, engine: verl}\neval: {n: 2, k: [1]}\n"
    )
    outcome = run_matrix(read_matrix(spec_file), tmp_path / "results")
    (cell,) = outcome.outcomes
    run = tmp_path / "results" / "runs" / cell.name
    assert cell.status == "pending" and not outcome.failed
    script = run.resolve() / "verl" / "launch.sh"
    assert cell.reason.startswith("veRL not run here (veRL is not importable by ")
    assert cell.reason.endswith(f": run bash {script} on the cluster, then benchctl ingest verl {run.resolve()}")
    (row,) = read_index(tmp_path / "results").to_pylist()
    assert row["status"] == "pending" and row["reason"] == cell.reason
    assert (run / "verl" / "launch.sh").is_file() and (run / "verl" / "train.parquet").is_file()


def test_veRL_outputs_in_the_launch_folder_are_ingested_with_the_launch_config_and_problem_ids(tmp_path, chat_model):
    cfg = build_config(
        flag_values={"model": str(chat_model), "engine": "verl", "steps": 2, "group_size": 2, "prompts_per_step": 2}
    )
    cfg = build_config(flag_values={**{k: getattr(cfg, k) for k in cfg.sources}, "out": str(tmp_path / "run")})
    first = verl_launch.launch(cfg)
    assert not first.ran
    folder = first.folder
    rows = pq.read_table(folder / "train.parquet").slice(0, 2).to_pylist()
    log = [{"step": s, "data": {"critic/score/mean": 0.5, "response_length/mean": 2.0}} for s in (1, 2)]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log))
    (folder / "rollouts").mkdir()
    for step in (1, 2):
        lines = []
        for row in rows:
            prompt = f"<user>{row['extra_info']['question']}\n<assistant>"
            gold = row["reward_model"]["ground_truth"]
            for out, score in ((gold, 1.0), ("x", 0.0)):
                lines.append({"input": prompt, "output": out, "gts": gold, "score": score, "step": step})
        (folder / "rollouts" / f"{step}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    again = verl_launch.launch(cfg)
    assert again.ran and again.steps == 2 and again.pending is None
    ids = train_run.read_rollouts(again.run).column("problem_id").to_pylist()
    assert ids == [r["extra_info"]["problem_id"] for r in rows for _ in range(2)] * 2
    stored = train_run.read_config(again.run)
    assert stored["engine"]["value"] == "verl" and stored["model_resolved"]["value"] == str(chat_model)
    assert stored["group_size"] == {"value": 2, "source": "flag"}
