"""The design advisor against a real matrix (issue 41, item 3; docs/report.md, "Validated on real runs").

A finished matrix of S seeds is its own out-of-sample check: a pilot made of its first 2, 3, ... seeds (the same
arms, questions and samples) predicts the mde the report prints on all S seeds (`design.predicted_mde` at the
matrix's own S x P x n, at the report's primary-family level alpha / m), with and without `--seed-bound 0.75`; the
last column is what `benchctl report` printed (its comparisons.parquet, primary k). Prints one row per comparison
and the ratio predicted / printed - 1 in percent.

    PYTHONPATH=. .venv/bin/python benchmarks/design_real_check.py results/claims/runs \
        --printed results/claims/report/comparisons.parquet --arms grpo,ha_dw,a_grae,avspo,dgpo,oar_g,oar_p
    PYTHONPATH=. .venv/bin/python benchmarks/design_real_check.py results/demo \
        --printed results/demo/report/comparisons.parquet --group-by arm,group_size
"""

from __future__ import annotations

import argparse

import pandas as pd

from benchctl.report.config import ReportConfig
from benchctl.report.design import pilot_components, predicted_mde
from benchctl.report.load import load_report_data


def pilot(
    results: str, arms: str, seeds: list[int] | None, bound: float = 0.0, group_by: tuple[str, ...] = ()
) -> tuple[list, float]:
    """The Components of the pilot made of `seeds` (None: all) and the report's primary-family level, with the
    report's `--group-by` (() : its default), so that the comparisons carry the printed report's labels."""
    where = (*((f"seed={','.join(map(str, seeds))}",) if seeds else ()), *((f"arm={arms}",) if arms else ()))
    grouping = {"group_by": group_by} if group_by else {}
    config = ReportConfig(inputs=(results,), baseline="grpo", where=where, **grouping)
    comps = pilot_components(load_report_data(config), config, bound)
    return comps, config.alpha / len(comps)  # Holm's first step over the primary family, as the report prints it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("--printed", required=True, help="the full matrix's report comparisons.parquet")
    parser.add_argument("--arms", default="", help="comma list of arms, the baseline grpo among them (default: all)")
    parser.add_argument("--group-by", default="", help="the report's --group-by (make demo: arm,group_size)")
    args = parser.parse_args()
    group_by = tuple(g for g in args.group_by.split(",") if g)
    printed = pd.read_parquet(args.printed)
    printed = printed[printed["primary"]].set_index("arm")
    full, _ = pilot(args.results, args.arms, None, group_by=group_by)
    design = (full[0].seeds, full[0].questions, full[0].samples)  # the matrix's own S x P x n
    seeds = sorted(int(s) for s in load_report_data(ReportConfig(inputs=(args.results,))).runs["seed"].unique())
    table = {}
    for m in range(2, len(seeds) + 1):
        for bound in (0.0, 0.75) if m < len(seeds) else (0.0,):
            comps, level = pilot(args.results, args.arms, seeds[:m], bound, group_by)
            name = f"pilot {m} seeds" + (" bound .75" if bound else "")
            table[name] = {c.arm: 100 * predicted_mde(c, *design, level) for c in comps}
    out = pd.DataFrame(table)
    out["printed"] = 100 * printed["mde"]
    ratio = (out.drop(columns="printed").div(out["printed"], axis=0) - 1) * 100
    print(f"design {design[0]} seeds x {design[1]} questions x {design[2]:g} samples; mde in points")
    print(out.round(2).to_string())
    print("predicted / printed - 1 (%)")
    print(ratio.round(0).to_string())
    print("median |error| (%):", ratio.abs().median().round(0).to_dict())


if __name__ == "__main__":
    main()
