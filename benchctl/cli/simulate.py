"""`benchctl simulate ...`: the estimator lab (bias, symmetry, collapse, bandit, anchor). Parsing only.

Estimators: `--estimators "grpo,ha_dw(base=dr_grpo,lambda_scale=1.5),grpo(std=population)"`: comma list of
registry names, each optionally with `(key=value,...)` hyperparameters (base= for modifiers).
Outputs: a rich table on stdout; `--out FILE.parquet` (rows, config in the schema metadata);
`--json FILE` or `--json -` (JSON on stdout, then no table); `--plot DIR` (PNG files).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from benchctl.lab.bandit import DEFAULT_BANDIT
from benchctl.lab.symmetry import DEFAULT_SYMMETRY

EstimatorsOpt = Annotated[
    str,
    typer.Option(
        "--estimators",
        "-e",
        help=(
            "comma list of estimators, each NAME or NAME(key=value,...), "
            "e.g. 'grpo,ha_dw(base=dr_grpo,lambda_scale=1.5)'"
        ),
    ),
]
GroupSizesOpt = Annotated[str | None, typer.Option("--G", "-G", help="group size, or a comma list: 8 or 4,8,16")]
PGridOpt = Annotated[str | None, typer.Option("--p", help="success-probability grid, comma list, e.g. 0.1,0.5,0.9")]
MethodOpt = Annotated[str, typer.Option("--method", help="exact (closed form / finite sum) or mc (Monte Carlo)")]
SeedOpt = Annotated[int, typer.Option("--seed", help="seed of the numpy Generator")]
OutOpt = Annotated[Path | None, typer.Option("--out", help="write the rows to this parquet file")]
JsonOpt = Annotated[str | None, typer.Option("--json", help="write JSON to this file, or '-' for stdout (no table)")]
PlotOpt = Annotated[Path | None, typer.Option("--plot", help="write PNG plots into this folder")]

simulate_app = typer.Typer(
    help="Estimator lab: analytic and simulated ground truth for advantage estimators.", no_args_is_help=True
)


def _emit(result, out, json_target, plot_dir) -> None:
    from benchctl.lab.report import emit

    emit(result, out=out, json_target=json_target, plot_dir=plot_dir)


@simulate_app.command("bias")
def bias(
    estimators: EstimatorsOpt = "grpo,dr_grpo",
    G: GroupSizesOpt = None,
    p: PGridOpt = None,
    method: MethodOpt = "exact",
    groups: Annotated[int, typer.Option(help="Monte Carlo groups per (estimator, G, p) cell")] = 20000,
    batch_prompts: Annotated[int, typer.Option(help="Monte Carlo groups per estimator call")] = 64,
    state: Annotated[str, typer.Option(help="stateful estimators: fresh per batch, or carry")] = "fresh",
    seed: SeedOpt = 0,
    out: OutOpt = None,
    json: JsonOpt = None,
    plot: PlotOpt = None,
) -> None:
    """Expected advantage of a correct / wrong rollout given a non-degenerate group.

    Beside the true advantage r - p (normalised: (r-p)/sqrt(p(1-p)) in the files) and HA-DW's Lemma 2. Exact
    finite sums over the number correct for stateless group-local estimators, else Monte Carlo with SEs.
    """
    from benchctl.lab import BiasConfig, run_bias
    from benchctl.lab.common import DEFAULT_P, parse_numbers

    config = BiasConfig(
        estimators=estimators,
        G=parse_numbers("G", G, int, (8,)),
        p=parse_numbers("p", p, float, DEFAULT_P),
        method=method,
        groups=groups,
        batch_prompts=batch_prompts,
        state=state,
        seed=seed,
    )
    _emit(run_bias(config), out, json, plot)


@simulate_app.command("symmetry")
def symmetry(
    estimators: EstimatorsOpt = DEFAULT_SYMMETRY,
    G: GroupSizesOpt = None,
    context: Annotated[str, typer.Option(help="single (one group per call) or pooled")] = "single",
    out: OutOpt = None,
    json: JsonOpt = None,
    plot: PlotOpt = None,
) -> None:
    """Sum of |A| over correct vs wrong rollouts and the total update magnitude per p_hat = c/G.

    A-GRAE Theorem 2: GRPO with the population std gives 2G sqrt(p(1-p)) split evenly; DGPO gives G.
    """
    from benchctl.lab import SymmetryConfig, run_symmetry
    from benchctl.lab.common import parse_numbers

    config = SymmetryConfig(estimators=estimators, G=parse_numbers("G", G, int, (8,)), context=context)
    _emit(run_symmetry(config), out, json, plot)


@simulate_app.command("collapse")
def collapse(
    G: GroupSizesOpt = None,
    p: PGridOpt = None,
    beta: Annotated[str | None, typer.Option(help="also prompts with p ~ Beta(a,b): 'a,b'")] = None,
    batch: Annotated[int, typer.Option(help="prompts per batch (ACR sd, Monte Carlo)")] = 256,
    method: MethodOpt = "exact",
    batches: Annotated[int, typer.Option(help="Monte Carlo batches per cell")] = 400,
    seed: SeedOpt = 0,
    out: OutOpt = None,
    json: JsonOpt = None,
    plot: PlotOpt = None,
) -> None:
    """Probability of a degenerate group and the expected advantage-collapse rate (ACR).

    (1-p)^G all wrong and p^G all correct, per p and G; optionally for prompts with p ~ Beta(a,b).
    """
    from benchctl.lab import CollapseConfig, run_collapse
    from benchctl.lab.collapse import COLLAPSE_P
    from benchctl.lab.common import parse_numbers

    config = CollapseConfig(
        G=parse_numbers("G", G, int, (4, 8, 16)),
        p=parse_numbers("p", p, float, COLLAPSE_P),
        beta=parse_numbers("beta", beta, float, None),
        batch=batch,
        method=method,
        batches=batches,
        seed=seed,
    )
    _emit(run_collapse(config), out, json, plot)


@simulate_app.command("bandit")
def bandit(
    estimators: EstimatorsOpt = DEFAULT_BANDIT,
    steps: Annotated[int, typer.Option(help="training steps")] = 150,
    prompts: Annotated[int, typer.Option(help="prompts")] = 256,
    behaviours: Annotated[int, typer.Option(help="behaviours per prompt")] = 16,
    correct: Annotated[int, typer.Option(help="correct behaviours per prompt")] = 2,
    G: Annotated[int, typer.Option("--G", "-G", help="group size")] = 8,
    lr: Annotated[float, typer.Option(help="learning rate on the logits")] = 2.0,
    seeds: Annotated[int, typer.Option(help="independent seeds")] = 5,
    mode: Annotated[str, typer.Option(help="sampled or expected")] = "sampled",
    k: Annotated[str, typer.Option(help="pass@k values, comma list")] = "1,4,16,64",
    seed: SeedOpt = 0,
    out: OutOpt = None,
    json: JsonOpt = None,
    plot: PlotOpt = None,
) -> None:
    """Train A-GRAE Theorem 1's behaviour-space softmax model with each estimator.

    Exact pass@k curves with 95% CIs over seeds, and a findings table: which of the paper's claims hold here.
    """
    from benchctl.lab import BanditConfig, run_bandit
    from benchctl.lab.common import parse_numbers

    config = BanditConfig(
        estimators=estimators,
        steps=steps,
        prompts=prompts,
        behaviours=behaviours,
        correct=correct,
        G=G,
        lr=lr,
        seeds=seeds,
        mode=mode,
        k=parse_numbers("k", k, int, (1,)),
        seed=seed,
    )
    _emit(run_bandit(config), out, json, plot)


@simulate_app.command("anchor")
def anchor(
    steps: Annotated[int, typer.Option(help="optimizer steps of each simulated run")] = 60,
    noise: Annotated[float, typer.Option(help="sd of the batch accuracy around its trajectory")] = 0.02,
    eta: Annotated[float, typer.Option(help="HA-DW's eta")] = 0.1,
    m: Annotated[int, typer.Option(help="anchors in Eq. 10's sigma")] = 10,
    seeds: Annotated[int, typer.Option(help="simulated runs per trajectory and gain rule")] = 200,
    seed: SeedOpt = 0,
    out: OutOpt = None,
    json: JsonOpt = None,
    plot: PlotOpt = None,
) -> None:
    """HA-DW's evolving anchor on a rising (0.18 -> 0.30) and a flat noisy accuracy: Eq. 10's gain (eta x the std of
    the last anchors) against the default constant gain. Does the anchor follow the model's accuracy?"""
    from benchctl.lab.anchor import AnchorConfig, run_anchor

    config = AnchorConfig(steps=steps, noise=noise, eta=eta, m=m, seeds=seeds, seed=seed)
    _emit(run_anchor(config), out, json, plot)


def register(app: typer.Typer) -> None:
    """Add `benchctl simulate {bias,symmetry,collapse,bandit}` to the root app."""
    app.add_typer(simulate_app, name="simulate")
