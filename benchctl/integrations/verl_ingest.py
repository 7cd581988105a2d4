"""`benchctl ingest verl RUN_OR_LOG_DIR --out RUN`: a veRL run as a benchctl training run folder.

Reads (formats of veRL 0.9.1, found anywhere under the folder):

- the file logger (`trainer.logger` with "file"; `verl/utils/tracking.py` FileLogger): JSON Lines
  `{"step": N, "data": {metric: value}}`, at $VERL_FILE_LOGGER_PATH (`benchctl train --engine verl`:
  RUN/verl/metrics.jsonl) or <project>/<experiment>.jsonl.  FileLogger opens its file with "wb", so a resumed
  run would erase the steps before its checkpoint: launch.sh first moves an earlier log to
  `metrics.<unix time>.jsonl`, and those segments are read before metrics.jsonl (a later line of a step wins);
- rollout dumps (`trainer.rollout_data_dir`; `ray_trainer.py` `_write_generations`): `<step>.jsonl`, one line per
  response with `input` (decoded prompt), `output`, `gts`, `score` (sum of token-level scores), `step`, plus the
  reward function's extra keys; a group is the responses sharing one `input` (consecutive unless veRL's
  `balance_batch` reordered the batch; both are handled: rows are grouped by input in order of first appearance);
- checkpoints `global_step_N/actor/huggingface/` holding weights (`checkpoint.save_contents` with `hf_model`,
  which the launch sets): the last one becomes RUN/model;
- the configuration: RUN/verl/launch.json (written by the launch: exact benchctl config), else a Hydra record
  `.hydra/config.yaml` or `.hydra/overrides.yaml` / `overrides.txt` (mapped by `VERL_TO_CONFIG`; keys it does not
  give are null, source `verl`).

Writes (`benchctl.results.train_run`): config.json, train_metrics.parquet (veRL metric names mapped by
`METRIC_MAP`, derived reward/std, acr/*, adv/*, rollout/tokens*; every other veRL metric as `verl/<name>`),
rollouts/part-<step>.parquet (problem_id matched through the launch's train.parquet, else `sha1:<input hash>`;
advantage: the run's benchctl estimator replayed over the logged rewards, step by step with its state, null for
veRL's own estimators; num_tokens and finish_reason: null, veRL does not dump them), model/.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchctl.errors import BenchctlError

METRIC_MAP = {
    "critic/score/mean": "reward/mean",
    "actor/entropy": "policy/entropy",
    "actor/kl_loss": "policy/kl",
    "actor/grad_norm": "policy/grad_norm",
    "actor/pg_loss": "loss/pg",
    "actor/lr": "optim/lr",
    "response_length/mean": "response/length_mean",
    "response_length/max": "response/length_max",
    "response_length/clip_ratio": "response/truncated",
    "timing_s/gen": "time/rollout",
    "timing_s/reward": "time/reward",
    "timing_s/adv": "time/advantage",
    "timing_s/old_log_prob": "time/logprobs",
    "timing_s/update_actor": "time/update",
    "timing_s/update_weights": "time/sync",
    "timing_s/testing": "time/eval",
    "timing_s/step": "time/step",
}
VERL_TO_CONFIG = {
    "model": "actor_rollout_ref.model.path",
    "task": "data.train_files",
    "group_size": "actor_rollout_ref.rollout.n",
    "prompts_per_step": "data.train_batch_size",
    "lr": "actor_rollout_ref.actor.optim.lr",
    "loss_agg": "actor_rollout_ref.actor.loss_agg_mode",
    "clip_low": "actor_rollout_ref.actor.clip_ratio_low",
    "clip_high": "actor_rollout_ref.actor.clip_ratio_high",
    "seed": "data.seed",
    "max_tokens": "data.max_response_length",
    "temperature": "actor_rollout_ref.rollout.temperature",
    "top_p": "actor_rollout_ref.rollout.top_p",
    "epochs": "actor_rollout_ref.actor.ppo_epochs",
}
KIND = "benchctl-train-run"


@dataclass(frozen=True)
class Ingested:
    """What `ingest` wrote."""

    run: Path
    steps: int
    rollout_steps: int
    model: Path | None  # RUN/model when a checkpoint with HF weights was found
    checkpoint: Path | None = None  # the veRL checkpoint it was copied from


# ---- reading veRL's files -----------------------------------------------------------------------------------


def _jsonl(path: Path) -> list[dict]:
    rows = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:
            raise BenchctlError(f"{path}:{number} is not JSON (a veRL log line is one JSON object)") from None
    return rows


def read_metrics_log(*paths: Path) -> list[dict]:
    """FileLogger lines of one run's log segments, oldest first -> [{"step": N, "data": {...}}] by step, the last
    line of a step winning (a resumed veRL run logs again the steps after its checkpoint)."""
    by_step: dict[int, dict] = {}
    for path in paths:
        for row in _jsonl(path):
            if (
                not isinstance(row, dict)
                or not isinstance(row.get("step"), int)
                or not isinstance(row.get("data"), dict)
            ):
                raise BenchctlError(f"{path} is not a veRL file-logger log (lines {{'step': N, 'data': {{...}}}})")
            by_step[row["step"]] = row
    return [by_step[s] for s in sorted(by_step)]


def log_segments(logs: list[Path]) -> list[Path] | None:
    """`logs` in reading order when they are one run's: a single log, or launch.sh's `metrics.<time>.jsonl`
    segments (by time) then the `metrics.jsonl` they sit beside; else None."""
    if len(logs) == 1:
        return logs
    times = [re.fullmatch(r"metrics\.(\d+)\.jsonl", p.name) for p in logs]
    current = [p for p, t in zip(logs, times) if t is None]
    if len({p.parent for p in logs}) != 1 or [p.name for p in current] != ["metrics.jsonl"]:
        return None
    return sorted((p for p in logs if p not in current), key=lambda p: int(p.name.split(".")[1])) + current


def _first_line(path: Path) -> dict | None:
    try:
        with open(path, encoding="utf-8") as fh:
            row = json.loads(fh.readline())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return row if isinstance(row, dict) else None


def find_files(root: Path) -> tuple[list[Path], list[tuple[int, Path]], Path | None]:
    """(metrics log segments, [(step, rollout dump)], last HF checkpoint with weights or None) under `root`."""
    logs, dumps = [], []
    for path in sorted(root.rglob("*.jsonl")):
        row = _first_line(path)
        if row is None:
            continue
        if "data" in row and "step" in row:
            logs.append(path)
        elif re.fullmatch(r"\d+", path.stem) and {"input", "output", "score"} <= set(row):
            dumps.append((int(path.stem), path))
    if not logs:
        raise BenchctlError(f"{root} holds no veRL file-logger log (a .jsonl of {{'step': N, 'data': {{...}}}} lines)")
    segments = log_segments(logs)
    if segments is None:
        raise BenchctlError(f"{root} holds several veRL logs ({', '.join(map(str, logs))}); give one run's folder")
    checkpoints = []
    for hf in root.rglob("global_step_*/actor/huggingface"):
        match = re.fullmatch(r"global_step_(\d+)", hf.parent.parent.name)
        if match and (any(hf.glob("*.safetensors")) or any(hf.glob("*.bin"))):
            checkpoints.append((int(match.group(1)), hf))
    return segments, sorted(dumps), max(checkpoints)[1] if checkpoints else None


# ---- configuration ------------------------------------------------------------------------------------------


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """Hydra override strings -> {dotted key: value} (values read as YAML, `+`/`++` prefixes dropped)."""
    import yaml

    out = {}
    for item in items:
        key, eq, text = str(item).partition("=")
        if not eq:
            continue
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError:
            value = text
        out[key.lstrip("+~")] = value
    return out


def _flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(tree, dict):
        return {prefix: tree}
    out = {}
    for key, value in tree.items():
        out.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def verl_settings(root: Path) -> dict[str, Any]:
    """{dotted key: value} of the run's veRL config: `.hydra/config.yaml`, else the override lists."""
    import yaml

    for name in (".hydra/config.yaml", ".hydra/overrides.yaml", "overrides.txt"):
        found = sorted(root.rglob(name)) if not (root / name).is_file() else [root / name]
        if not found:
            continue
        text = found[0].read_text(encoding="utf-8")
        if name == "overrides.txt":
            return parse_overrides([line for line in text.splitlines() if line.strip()])
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            raise BenchctlError(f"{found[0]} is not YAML (Hydra writes its run configuration there)") from None
        return _flatten(data) if isinstance(data, dict) else parse_overrides(list(data or []))
    raise BenchctlError(
        f"{root} holds no veRL configuration (launch.json, .hydra/config.yaml, .hydra/overrides.yaml or overrides.txt)"
    )


def record_from_settings(settings: dict[str, Any], steps: int) -> dict[str, dict]:
    """A benchctl config record from veRL settings (source `verl`; unknown keys null)."""
    name = str(settings.get("algorithm.adv_estimator", "gae"))
    estimator = name.removeprefix("benchctl_") if name.startswith("benchctl_") else f"verl:{name}"
    params: dict[str, Any] = {}
    for key, value in settings.items():  # algorithm.benchctl.base_params.x -> {"base_params": {"x": ...}}
        if key.startswith("algorithm.benchctl."):
            *parents, leaf = key.split(".")[2:]
            node = params
            for parent in parents:
                node = node.setdefault(parent, {})
            node[leaf] = value
    values: dict[str, Any] = {key: settings.get(path) for key, path in VERL_TO_CONFIG.items()}
    kl = (
        settings.get("actor_rollout_ref.actor.kl_loss_coef")
        if settings.get("actor_rollout_ref.actor.use_kl_loss")
        else 0.0
    )
    label = estimator + (f"({','.join(f'{k}={v}' for k, v in sorted(params.items()))})" if params else "")
    values.update(
        mini_batches=_mini_batches(
            values["prompts_per_step"], settings.get("actor_rollout_ref.actor.ppo_mini_batch_size")
        ),
        estimator=estimator,
        estimator_params=params,
        estimator_label=label,
        kl_coef=kl,
        steps=steps,
        engine="verl",
        model_resolved=values["model"],
        max_tokens_resolved=values["max_tokens"],
        loss_agg_resolved=values["loss_agg"],
        lr_resolved=values["lr"],
        device="auto",
        gpu_memory_utilization=settings.get("actor_rollout_ref.rollout.gpu_memory_utilization", 0.3),
    )
    return {k: {"value": v, "source": "verl"} for k, v in values.items()}


def _mini_batches(prompts: Any, mini_batch: Any) -> int | None:
    """benchctl's mini_batches from veRL's data.train_batch_size / actor.ppo_mini_batch_size (both in prompts);
    None when either is missing or it is not a whole number."""
    if not all(isinstance(v, int) and v > 0 for v in (prompts, mini_batch)) or prompts % mini_batch:
        return None
    return prompts // mini_batch


def config_of(root: Path, steps: int) -> dict[str, dict]:
    """The run's benchctl config record: the launch's own (steps = those logged), else from veRL's config."""
    launch = root / "launch.json"
    if launch.is_file():
        try:
            record = json.loads(launch.read_text(encoding="utf-8"))["config"]
            record["steps"] = {"value": steps, "source": "verl"}
        except (ValueError, KeyError, TypeError):
            raise BenchctlError(f"{launch} is not a launch record of benchctl train --engine verl") from None
        return record
    return record_from_settings(verl_settings(root), steps)


# ---- rollouts -----------------------------------------------------------------------------------------------


def problem_index(files: list[Path]) -> dict[str, list[tuple[str, str]]]:
    """{ground truth: [(question, problem_id)]} from the launch's train.parquet(s), for matching dumps."""
    import pyarrow.parquet as pq

    index: dict[str, list[tuple[str, str]]] = {}
    for path in files:
        if not path.is_file():
            continue
        for row in pq.read_table(path, columns=["reward_model", "extra_info"]).to_pylist():
            info = row["extra_info"] or {}
            if "problem_id" in info:
                gold = str(row["reward_model"]["ground_truth"])
                index.setdefault(gold, []).append((str(info["question"]), str(info["problem_id"])))
    return index


def _problem_id(text: str, gold: Any, index: dict[str, list[tuple[str, str]]]) -> str:
    """The id of the problem with this gold whose question the decoded prompt contains (the longest such question,
    so `1+1=` does not claim `11+1=`), else `sha1:<hash of the prompt>`."""
    matches = [(question, pid) for question, pid in index.get(str(gold), []) if question in text]
    if matches:
        return max(matches, key=lambda m: len(m[0]))[1]
    return "sha1:" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


def step_groups(rows: list[dict]) -> list[list[dict]]:
    """Responses grouped by identical `input`, groups in order of first appearance, rows in dump order."""
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(str(row["input"]), []).append(row)
    return list(groups.values())


def dump_groups(step: int, path: Path) -> list[list[dict]]:
    """The (P, G) groups of one rollout dump (`step_groups`); BenchctlError for a line that is not a response
    with input, output and a numeric score, or for groups of unequal size."""
    rows = _jsonl(path)
    for number, row in enumerate(rows, 1):
        ok = isinstance(row, dict) and {"input", "output", "score"} <= set(row)
        if not ok or not isinstance(row["score"], (int, float)) or isinstance(row["score"], bool):
            raise BenchctlError(f"{path}:{number} is not a veRL rollout dump line (input, output, numeric score)")
    groups = step_groups(rows)
    sizes = sorted({len(g) for g in groups})
    if len(sizes) != 1:
        raise BenchctlError(f"rollout dump of step {step}: groups of unequal size {sizes} (rollout.n must be fixed)")
    return groups


def rollout_step(step: int, groups: list[list[dict]], index, estimator):
    """(rollout table, derived metrics) of one dump's groups; advantages from `estimator` (None -> null)."""
    import numpy as np

    from benchctl.results.train_run import rollout_table
    from benchctl.trainers import metrics as M

    rewards = np.array([[float(r["score"]) for r in g] for g in groups])  # (P, G)
    adv = np.full(rewards.shape, np.nan) if estimator is None else np.asarray(estimator.advantages(rewards))
    ids = [_problem_id(str(g[0]["input"]), g[0].get("gts"), index) for g in groups]
    n = rewards.size
    table = rollout_table(step, ids, rewards, adv, [0] * n, [""] * n, [[str(r["output"]) for r in g] for g in groups])
    table = _nulls(table, ("num_tokens", "finish_reason") + (("advantage",) if estimator is None else ()))
    metrics = M.reward_metrics(rewards, rewards)  # the native trainer's definitions: reports compare like with like
    del metrics["reward/mean"]  # veRL logs it (critic/score/mean)
    if estimator is not None:
        metrics.update(M.advantage_metrics(adv))
        metrics.update(M.estimator_metrics(estimator.diagnostics()))
    return table, metrics


def _nulls(table, names):
    import pyarrow as pa

    for name in names:
        i = table.schema.get_field_index(name)
        table = table.set_column(i, table.schema.field(i), pa.nulls(len(table), table.schema.field(i).type))
    return table


# ---- the run folder -----------------------------------------------------------------------------------------


def metrics_rows(log: list[dict], derived: dict[int, dict], rows_per_step: int | None) -> list[dict]:
    """One benchctl metrics row per logged step >= 1: mapped names, `verl/<name>` for the rest, derived columns."""
    out, tokens, samples = [], 0.0, 0
    for entry in log:
        step, data = entry["step"], entry["data"]
        if step < 1:
            continue  # step 0: veRL's validation before training (benchctl's steps are 1-based)
        row: dict[str, Any] = {"step": step}
        for key, value in data.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                row[METRIC_MAP.get(key, f"verl/{key}")] = float(value)
        row.update(derived.get(step, {}))
        n = derived.get(step, {}).pop("_rows", None) or rows_per_step
        if n and "response/length_mean" in row:
            row["rollout/tokens"] = row["response/length_mean"] * n
            tokens, samples = tokens + row["rollout/tokens"], samples + n
            row["rollout/tokens_total"], row["rollout/samples_total"] = tokens, samples
        row.pop("_rows", None)
        out.append(row)
    return out


def _estimator(record: dict[str, dict]):
    from benchctl.estimators import get_estimator

    name = str(record.get("estimator", {}).get("value", ""))
    if name.startswith("verl:") or not name:
        return None
    return get_estimator(name, **dict(record.get("estimator_params", {}).get("value") or {}))


def _prepare_out(out: Path, source: Path) -> None:
    """`out` may be new, empty, the launch's own RUN (holding verl/), or an earlier ingest; nothing else."""
    if not out.exists():
        return
    try:
        data = json.loads((out / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    ingested = data is not None and (data.get("config", {}).get("engine", {}) or {}).get("value") == "verl"
    others = [p for p in out.iterdir() if p.name != "verl" and p.resolve() != source.resolve()]
    if others and not ingested:
        raise BenchctlError(f"--out {out} exists and is not an ingested veRL run; choose another --out")
    for name in ("train_metrics.parquet", "rollouts", "model"):
        path = out / name
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)


def ingest(source: str | Path, out: str | Path | None = None) -> Ingested:
    """A veRL run (a launch folder RUN/verl, a RUN holding one, or any veRL output folder) -> benchctl run `out`
    (default: the RUN a launch folder belongs to)."""
    from benchctl.results import train_run

    source = Path(source)
    if not source.is_dir():
        raise BenchctlError(f"{source}: no such folder (give a veRL run folder or a benchctl RUN with verl/)")
    root = source / "verl" if (source / "verl" / "launch.json").is_file() else source
    if out is None:
        if not (root / "launch.json").is_file():
            raise BenchctlError(f"{source} was not written by benchctl train --engine verl: give --out RUN")
        out = root.parent
    out = Path(out)
    logs, dumps, checkpoint = find_files(root)
    log = read_metrics_log(*logs)
    record = config_of(root, max((e["step"] for e in log), default=0))
    estimator = _estimator(record)
    for step, path in dumps:
        dump_groups(step, path)  # every input is checked before `out` is touched
    _prepare_out(out, root)
    index = problem_index([root / "train.parquet"])
    derived: dict[int, dict] = {}
    for step, path in dumps:
        table, metrics = rollout_step(step, dump_groups(step, path), index, estimator)
        train_run.write_rollouts(out, step, table)
        derived[step] = {**metrics, "_rows": len(table)}
    G, P = (record.get(k, {}).get("value") for k in ("group_size", "prompts_per_step"))
    rows = metrics_rows(log, derived, G * P if G and P else None)
    train_run.write_train_metrics(out, rows)
    model = None
    if checkpoint is not None:
        model = out / "model"
        shutil.copytree(checkpoint, model)
    record["run"] = {"value": str(out), "source": "derived"}
    train_run.write_config(out, record)
    return Ingested(out, len(rows), len(dumps), model, checkpoint)
