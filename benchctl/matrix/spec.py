"""The matrix file (`benchctl matrix run FILE.yaml`) and its expansion into cells.

    models: [tiny]                       # model names, local HF folders or hub ids
    task: arith                          # training task
    estimators:                          # label -> hyperparameters; a list is a grid axis, a scalar is fixed
      grpo: {}
      ha_dw: {lambda_scale: [1.3, 1.5]}
      a_grae: {base: dr_grpo, alpha: [0.5, 1.0]}
      dapo: {estimator: grpo, recipe: dapo}   # a label that is no estimator names one with `estimator:`
      avspo: {train: {lr: [1e-4, 3e-4]}}      # an entry's own train settings; a list is a grid axis too
    recipes: [null]                      # optional; crossed with every entry that sets no `recipe:` itself
    losses: [ppo_clip, cispo, "sapo(tau_pos=1.0)"]   # optional policy-loss axis (`benchctl losses`), crossed with
                                         # every entry that sets no `loss:` itself; part of the arm (grpo+cispo)
    group_sizes: [4, 8]
    seeds: [1, 2]
    train: {steps: 20}                   # any `benchctl train` setting of every cell (token_budget, lr, ...);
                                         # a list is a grid axis (lr: [1e-4, 3e-4]); an entry's `train:` overrides
    eval: {tasks: [arith], n: 16, k: [1, 4, 16]}   # final evaluation of each cell (RUN/eval/final)
    keep: all                            # what a cell keeps once evaluated: all | model | results (`KEEP`)

A cell is one (model, estimator entry + one point of its grid, one point of the train-setting axes, recipe, G,
seed). Its run folder name is built from exactly those values, so it is stable across runs and machines [our choice]:
`<model>-<label>[-<param>=<value>...][-<setting>=<value>...][-<recipe>]-G<G>-s<seed>` (params and settings sorted by
name; the recipe only when it differs from the label); names that would collide after sanitising get `-h<8 hex>` of
the whole cell. Train-setting axes (e.g. a learning-rate sweep per arm) are not part of the arm: the report sees
them as the run's settings (its `lr`, ... columns) and can pick each arm's best setting on a validation task.
Every unknown key is refused with one line naming the valid keys.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchctl.errors import BenchctlError
from benchctl.results.runs import MODEL_NAMES
from benchctl.trainers.config import settings
from benchctl.yamlfile import read_yaml

TOP_KEYS = ("models", "task", "estimators", "recipes", "losses", "group_sizes", "seeds", "train", "eval", "keep")
# What a cell's run folder keeps once its final evaluation is written [our choice: `all` by default, nothing is
# removed unasked]. A real model's cell writes its last checkpoint (weights and AdamW state: 1.6 GB for
# SmolLM2-135M in float32) and its final model (0.5 GB); a matrix of 60 such cells would need 126 GB.
KEEP = {
    "all": "the final model and the last checkpoint (training can be continued with more steps)",
    "model": "the final model; the checkpoints are removed (the model can be evaluated again)",
    "results": "metrics, rollouts and evaluations; the checkpoints and the model's weights are removed",
}
ENTRY_KEYS = (
    "estimator",
    "recipe",
    "loss",
    "train",
)  # reserved in an estimators entry; every other key is a hyperparameter
EVAL_KEYS = ("tasks", "n", "k", "temperature", "top_p", "max_tokens", "limit", "resamples")
# Train settings the matrix itself sets per cell, or that belong to the run rather than the training (owner "cell" or
# "run" in `benchctl.trainers.config.TrainConfig`'s field metadata): not allowed under `train:`.
CELL_KEYS = (*settings(owner="cell"), *settings(owner="run"), "sources")


def _f(default, help_text: str, **kw):
    return field(default=default, metadata={"help": help_text}, **kw)


@dataclass(frozen=True)
class EvalSettings:
    """The final evaluation of every cell (a `benchctl eval` folder at RUN/eval/final)."""

    tasks: tuple[str, ...] = _f((), "evaluation tasks; empty -> the training task (its test split)")
    ks: tuple[int, ...] = _f((1,), "k values of pass@k, each <= n")
    n: int = _f(1, "samples per problem")
    temperature: float = _f(0.6, "sampling temperature")
    top_p: float = _f(1.0, "nucleus top-p")
    max_tokens: int | None = _f(None, "new tokens per sample; None -> the cell's training max_tokens")
    limit: int | None = _f(None, "first N problems of each task; None = all")
    resamples: int = _f(1000, "bootstrap resamples of the CIs")


@dataclass(frozen=True)
class Cell:
    """One run of the matrix: everything needed to train and evaluate it, self-contained (picklable) so an
    executor may run it in another process."""

    name: str = _f("", "run folder name under RESULTS/runs/ (stable, from the fields below)")
    model: str = _f("tiny", "model name, HF folder or hub id")
    task: str = _f("arith", "training task")
    label: str = _f("grpo", "the estimators entry's key")
    estimator: str = _f("grpo", "estimator name (registry)")
    params: tuple[tuple[str, Any], ...] = _f((), "estimator hyperparameters of this grid point, sorted by name")
    recipe: str | None = _f(None, "trainer recipe (dapo, dr_grpo, gspo) or None")
    loss: str | None = _f(None, "policy loss NAME(params) (`benchctl losses`); None: the trainer's default")
    group_size: int = _f(8, "rollouts per prompt (G)")
    seed: int = _f(0, "training seed (also the final evaluation's sampling seed)")
    train_settings: tuple[tuple[str, Any], ...] = _f(
        (), "every train setting of the cell (matrix and entry `train:`, this point of the axes), sorted by name"
    )
    eval: EvalSettings = _f(EvalSettings(), "final evaluation settings")
    swept: tuple[tuple[str, Any], ...] = _f((), "the train settings swept by an axis, at this cell's point, sorted")
    keep: str = _f("all", "what the run folder keeps once evaluated (`KEEP`); not part of the cell's identity")

    @property
    def arm(self) -> str:
        """The index's arm: the entry's label plus this grid point (and `+loss`), e.g. `ha_dw(lambda_scale=1.3)`."""
        arm = self.label if not self.params else f"{self.label}({','.join(f'{k}={_text(v)}' for k, v in self.params)})"
        return arm if self.loss is None else f"{arm}+{self.loss}"

    def train_values(self) -> dict[str, Any]:
        """Flag values for `benchctl.trainers.build_config` (the run folder `out` is the runner's business)."""
        values = dict(self.train_settings)
        values.update(
            model=self.model,
            task=self.task,
            estimator=self.estimator,
            group_size=self.group_size,
            seed=self.seed,
            estimator_params=dict(self.params),
            progress=False,
        )
        if self.recipe is not None:
            values["recipe"] = self.recipe
        if self.loss is not None:
            values["loss"] = self.loss
        return values


@dataclass(frozen=True)
class MatrixSpec:
    """A parsed matrix file: the cells in expansion order (model, entry, grid point, recipe, G, seed)."""

    path: str = _f("", "the YAML file")
    cells: tuple[Cell, ...] = _f((), "every cell, in the order they run")


# ---- parsing ------------------------------------------------------------------------------------------------


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _check_keys(data: Mapping, valid: tuple[str, ...], path: str, where: str) -> None:
    unknown = [str(k) for k in data if k not in valid]
    if unknown:
        raise BenchctlError(f"{path}: {where}unknown key {unknown[0]!r}; valid keys: {', '.join(valid)}")


def _as_list(value: Any, name: str, path: str) -> list:
    out = value if isinstance(value, list) else [value]
    if not out:
        raise BenchctlError(f"{path}: {name} is an empty list")
    return out


def _ints(data: Mapping, name: str, default: list, path: str) -> list[int]:
    values = _as_list(data.get(name, default), name, path)
    for v in values:
        if not isinstance(v, int) or isinstance(v, bool) or v < (1 if name == "group_sizes" else 0):
            raise BenchctlError(f"{path}: {name} must list integers >= {1 if name == 'group_sizes' else 0}; got {v!r}")
    return list(dict.fromkeys(values))


def read_matrix(path: str | Path) -> MatrixSpec:
    """Read and validate a matrix YAML file; every problem is one BenchctlError line naming the file."""
    p = Path(path)
    data = read_yaml(p, "matrix")
    if not isinstance(data, dict):
        raise BenchctlError(f"matrix file {p} must hold a mapping with keys: {', '.join(TOP_KEYS)}")
    return parse_matrix(data, str(p))


def parse_matrix(data: Mapping[str, Any], path: str = "matrix") -> MatrixSpec:
    """A matrix mapping (the YAML's content) -> MatrixSpec with every cell validated by the trainer's config."""
    _check_keys(data, TOP_KEYS, path, "")
    if "estimators" not in data or not isinstance(data["estimators"], dict) or not data["estimators"]:
        raise BenchctlError(
            f"{path}: 'estimators' must map estimator names to hyperparameter grids, "
            "e.g. estimators: {grpo: {}, ha_dw: {lambda_scale: [1.3, 1.5]}}"
        )
    models = [str(m) for m in _as_list(data.get("models", ["tiny"]), "models", path)]
    task = data.get("task", "arith")
    if not isinstance(task, str):
        raise BenchctlError(f"{path}: task must be one task name or JSON Lines file; got {task!r}")
    recipes = _as_list(data.get("recipes", [None]), "recipes", path)
    losses = _losses(data.get("losses", [None]), "losses", path)
    group_sizes = _ints(data, "group_sizes", [8], path)
    seeds = _ints(data, "seeds", [0], path)
    train = _train_settings(data.get("train") or {}, path, "train")
    eval_settings = _eval_settings(data.get("eval") or {}, task, path)
    keep = data.get("keep", "all")
    if keep not in KEEP:
        raise BenchctlError(f"{path}: keep must be one of {', '.join(KEEP)}; got {keep!r}")
    cells = []
    for model, (label, entry) in itertools.product(models, data["estimators"].items()):
        entry = _entry(label, entry, path)
        settings = {**train, **entry["train"]}  # the entry's own settings override the matrix's
        axes = {k: v for k, v in settings.items() if len(v) > 1}
        for params in entry["grid"]:
            for point in itertools.product(*axes.values()):
                varied = tuple(zip(axes, point))
                values = {**{k: v[0] for k, v in settings.items()}, **dict(varied)}
                for recipe, loss in itertools.product(entry["recipes"] or recipes, entry["losses"] or losses):
                    for g, seed in itertools.product(group_sizes, seeds):
                        cells.append(
                            Cell(
                                "",
                                model,
                                task,
                                str(label),
                                entry["estimator"],
                                params,
                                recipe,
                                loss,
                                g,
                                seed,
                                tuple(sorted(values.items())),
                                eval_settings,
                                varied,
                                keep,
                            )
                        )
    cells = _named(cells)
    for cell in cells:
        _validate(cell, path)
    return MatrixSpec(path, tuple(cells))


def _entry(label: Any, entry: Any, path: str) -> dict:
    where = f"estimators.{label}"
    if entry is None:
        entry = {}
    if not isinstance(entry, dict):
        raise BenchctlError(
            f"{path}: {where} must be a mapping of hyperparameters (lists are grid axes); got {entry!r}"
        )
    estimator = str(entry.get("estimator", label))
    recipes = entry.get("recipe")
    recipes = [] if "recipe" not in entry else _as_list(recipes, f"{where}.recipe", path)
    losses = [] if "loss" not in entry else _losses(entry["loss"], f"{where}.loss", path)
    axes = {
        str(k): _as_list(v, f"{where}.{k}", path)
        for k, v in sorted(entry.items(), key=lambda kv: str(kv[0]))
        if k not in ENTRY_KEYS
    }
    for key, values in axes.items():
        for v in values:
            if isinstance(v, (dict, list)) or v is None:
                raise BenchctlError(
                    f"{path}: {where}.{key} must be a number, bool or string (or a list of them); got {v!r}"
                )
    grid = [tuple(zip(axes, point)) for point in itertools.product(*axes.values())]
    train = _train_settings(entry.get("train") or {}, path, f"{where}.train")
    return {"estimator": estimator, "recipes": recipes, "losses": losses, "grid": grid, "train": train}


def _losses(value: Any, where: str, path: str) -> list[str | None]:
    """`losses:` / an entry's `loss:` -> loss specs (a list is an axis); each one parses (`benchctl.losses`)."""
    out = []
    for v in _as_list(value, where, path):
        if v is not None and not isinstance(v, str):
            raise BenchctlError(f"{path}: {where} must name losses (e.g. cispo or 'sapo(tau_pos=1.0)'); got {v!r}")
        if v is not None:
            from benchctl.losses import parse_loss

            try:
                v = parse_loss(v).label  # one spelling per loss: run folders and arms do not depend on spacing
            except BenchctlError as exc:
                raise BenchctlError(f"{path}: {where}: {exc}") from None
        out.append(v)
    return list(dict.fromkeys(out))


def _train_settings(train: Any, path: str, where: str) -> dict[str, list]:
    """`train:` mapping -> {setting: [values]}, sorted by name; a list is a grid axis, a scalar one value."""
    from benchctl.trainers.config import TrainConfig, field_names

    if not isinstance(train, dict):
        raise BenchctlError(f"{path}: {where} must be a mapping of `benchctl train` settings; got {train!r}")
    valid = tuple(n for n in field_names() if n not in CELL_KEYS)
    train = {str(k).replace("-", "_"): v for k, v in train.items()}
    _check_keys(train, valid, path, f"{where}: ")
    types = {f.name: str(f.type) for f in dataclasses.fields(TrainConfig)}
    out = {}
    for key, given in sorted(train.items()):
        values = []
        for value in _as_list(given, f"{where}.{key}", path):
            if isinstance(value, (dict, list)):
                raise BenchctlError(f"{path}: {where}.{key} must be a value or a list of values; got {value!r}")
            if isinstance(value, str) and types[key].startswith("float"):
                try:  # YAML 1.1 reads 5e-4 as a string
                    value = float(value)
                except ValueError:
                    raise BenchctlError(f"{path}: {where}.{key}={value!r} is not a number") from None
            values.append(value)
        out[key] = list(dict.fromkeys(values))
    return out


def _eval_settings(data: Any, task: str, path: str) -> EvalSettings:
    from benchctl.results.kspec import parse_ks
    from benchctl.tasks import get_task

    if not isinstance(data, dict):
        raise BenchctlError(f"{path}: eval must be a mapping with keys: {', '.join(EVAL_KEYS)}")
    _check_keys(data, EVAL_KEYS, path, "eval: ")
    tasks = tuple(str(t) for t in _as_list(data.get("tasks", [task]), "eval.tasks", path))
    for name in tasks:
        get_task(name)  # an unknown task fails here, before any work
    k = data.get("k", [1])
    ks = parse_ks(",".join(str(x) for x in k) if isinstance(k, list) else str(k))
    n = data.get("n", max(ks))
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise BenchctlError(f"{path}: eval.n must be an integer >= 1; got {n!r}")
    if max(ks) > n:
        raise BenchctlError(f"{path}: eval k={max(ks)} > n={n}: pass@k needs k <= n")
    settings = EvalSettings(tasks=tasks, ks=ks, n=n, **{k: data[k] for k in EVAL_KEYS[3:] if k in data})
    from benchctl.evaluation import EvalConfig

    try:  # the eval's own range checks, now rather than after the first training run
        EvalConfig(
            model="check",
            tasks=tasks,
            ks=ks,
            n=n,
            temperature=settings.temperature,
            top_p=settings.top_p,
            max_tokens=settings.max_tokens or 1,
            limit=settings.limit,
            resamples=settings.resamples,
        )
    except TypeError as exc:
        raise BenchctlError(f"{path}: eval: {exc}") from None
    except BenchctlError as exc:
        raise BenchctlError(f"{path}: eval: {exc}") from None
    return settings


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "-", text).strip("-")


def cell_name(cell: Cell) -> str:
    """`<model>-<label>[-<param>=<value>...][-<recipe>]-G<G>-s<seed>` (sanitised to [A-Za-z0-9_.=+-])."""
    model = cell.model if cell.model in MODEL_NAMES else Path(cell.model.rstrip("/")).name
    parts = [model, cell.label, *(f"{k}={_text(v)}" for k, v in (*cell.params, *cell.swept))]
    parts += [] if cell.loss is None else [cell.loss]
    if cell.recipe is not None and cell.recipe != cell.label:
        parts.append(cell.recipe)
    parts += [f"G{cell.group_size}", f"s{cell.seed}"]
    return "-".join(_slug(p) for p in parts)


def cell_hash(cell: Cell) -> str:
    """8 hex digits of the cell's identity (model, task, entry, grid point, settings, recipe, G, seed, train)."""
    ident = dataclasses.asdict(dataclasses.replace(cell, name=""))
    ident["train"], ident["settings"] = ident.pop("train_settings"), ident.pop("swept")  # the names it was hashed by
    if ident["loss"] is None:  # cells without a loss axis keep the hash they had before it existed
        del ident["loss"]
    del ident["keep"]  # what the folder keeps afterwards changes nothing the cell computes
    return hashlib.blake2b(json.dumps(ident, sort_keys=True, default=str).encode(), digest_size=4).hexdigest()


def _named(cells: list[Cell]) -> list[Cell]:
    names = [cell_name(c) for c in cells]
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    return [dataclasses.replace(c, name=n if counts[n] == 1 else f"{n}-h{cell_hash(c)}") for c, n in zip(cells, names)]


def _validate(cell: Cell, path: str) -> None:
    from benchctl.trainers import build_config
    from benchctl.trainers.plan import resolve

    try:
        resolve(build_config(flag_values=cell.train_values()))
    except BenchctlError as exc:
        raise BenchctlError(f"{path}: cell {cell.name}: {exc}") from None
