"""Seeds in waves until the claims are decided: `benchctl matrix run FILE --until-decided CLAIMS --max-seeds N`.

The group-sequential design, its boundary and what "decided" means are `benchctl.report.sequential`'s. The wave
loop [our choice]: wave 1 is the matrix file's cells (every arm, its seeds); after each wave the claims are
analysed on RESULTS (the report's reader, `--population problems`, the report's default) and the next wave runs the
next `wave` seeds (numbered after the largest so far) of the arms that still have an undecided claim, as arm or as
baseline: the baseline runs as long as any arm compared with it does, so every look stays paired by seed. A cell of
a later wave is the file's cell with that seed (same name rule, `-s<seed>`). The loop ends when every tested claim
is decided or the last wave (max_seeds) has run. Each wave is a `run_matrix`, so a rerun of the same command resumes:
finished cells are skipped and the looks come out the same. A wave that leaves a cell failed (or is interrupted)
ends the loop: the next run retries it first. RESULTS/sequential.json records the design and every look (seeds,
arms run, the settings chosen, each claim's verdict and whether it is decided); `benchctl report --claims` reads
it. A swept setting (a matrix `train:` axis) is chosen at each look by the report's rule (`report.tuning`,
leave-one-seed-out on `<task>_val`) on that look's seeds only, and the report chooses it again the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchctl.errors import BenchctlError
from benchctl.matrix.outcome import MatrixOutcome
from benchctl.matrix.spec import Cell, MatrixSpec, parse_matrix, read_matrix
from benchctl.report.claims import Claim, read_claims
from benchctl.report.sequential import (
    DEFAULT_WAVE,
    RECORD_FILE,
    RECORD_KIND,
    Selection,
    SequentialDesign,
    sequential_claims,
)
from benchctl.yamlfile import read_yaml

SELECTION = Selection()  # [our choice] the report's default rule: <task>_val, leave-one-seed-out


@dataclass(frozen=True)
class WavesOutcome:
    """What `run_until_decided` returns: each wave's matrix outcome and the claims table of the last look."""

    waves: tuple[MatrixOutcome, ...]
    claims: object  # pandas DataFrame (`sequential.sequential_claims`)
    record: Path

    @property
    def last(self) -> MatrixOutcome:
        return self.waves[-1]


def check_claim_arms(spec: MatrixSpec, claims: list[Claim], path: str) -> list[Claim]:
    """`claims`, once checked: some claim is tested (no `testbed:` reason), and every arm the tested claims name
    is an arm of the matrix."""
    arms = sorted({cell.arm for cell in spec.cells})  # the report's arm of a matrix run
    tested = [c for c in claims if not c.testbed]
    if not tested:
        raise BenchctlError(f"{path}: no claim to decide (every claim has a testbed: reason)")
    for c in tested:
        for name in (c.arm, c.baseline):
            if name not in arms:
                raise BenchctlError(f"{path}: claim {c.claim!r} names arm {name!r}, not in the matrix; arms: "
                                    f"{', '.join(arms)}")  # fmt: skip
    return claims


def wave_cells(path: str, seeds: tuple[int, ...], arms: set[str] | None) -> tuple[Cell, ...]:
    """The matrix file's cells for `seeds`, of the arms in `arms` (`Cell.arm`; None: every arm)."""
    data = read_yaml(Path(path), "matrix")
    cells = parse_matrix({**data, "seeds": list(seeds)}, path).cells
    return tuple(c for c in cells if arms is None or c.arm in arms)


def open_arms(table, claims: list[Claim]) -> set[str]:
    """Arms and baselines of the tested claims not decided yet."""
    out: set[str] = set()
    for c, decided in zip(claims, table["decided"]):
        if not c.testbed and not decided:
            out |= {c.arm, c.baseline}
    return out


def analyse(results: Path, claims: list[Claim], design: SequentialDesign, look: int):
    """The claims table of the analysis at `look` (1-based) of the runs under `results` (`sequential.
    sequential_claims`; a resumed run's later seeds do not enter an earlier look). A swept setting is chosen at
    each look on that look's seeds (the report's rule, `SELECTION`), as `benchctl report` then reproduces it."""
    from benchctl.report.config import ReportConfig
    from benchctl.report.load import load_report_data

    data = load_report_data(ReportConfig(inputs=(str(results),), baseline=None))
    return sequential_claims(data, claims, design, last_look=look, selection=SELECTION)


def _look_record(k: int, seeds, arms, table, claims) -> dict:
    return {
        "look": k + 1,
        "seeds": list(seeds),
        "arms_run": sorted(arms) if arms is not None else "all",
        "settings": (table.attrs.get("settings") or [{}])[-1],  # {arm: {setting: seeds it served}}
        "claims": [
            {"id": c.id or c.claim, "verdict": row["verdict"], "decided": bool(row["decided"]), "seeds": row["seeds"]}
            for c, row in zip(claims, table.to_dict("records"))
            if not c.testbed
        ],
    }


def run_until_decided(
    path: str,
    results: str | Path,
    claims_path: str,
    max_seeds: int,
    wave: int = DEFAULT_WAVE,
    run: Callable[[MatrixSpec], MatrixOutcome] | None = None,
    on_look: Callable[[int, int, object], None] | None = None,
    shape: str = "normal",
) -> WavesOutcome:
    """Run the matrix file `path` in waves until the claims of `claims_path` are decided (module docstring).
    `run(spec)`: runs one wave's cells (`run_matrix` with the command's executor and options). `on_look(look,
    looks, table)`: called after each analysis (for printing). `shape`: the per-seed values the boundary is
    calibrated on (`sequential.SHAPES`; skewed holds the level for exponential-shaped seeds, docs/report.md)."""
    from benchctl.matrix.runner import run_matrix
    from benchctl.results.store import write_json

    results = Path(results)
    spec_cells = read_matrix(path).cells
    claims = check_claim_arms(MatrixSpec(path, spec_cells), read_claims(claims_path), claims_path)
    design = SequentialDesign(tuple(sorted({c.seed for c in spec_cells})), max_seeds, wave, shape=shape)
    run = run or (lambda spec: run_matrix(spec, results))
    record = {"kind": RECORD_KIND, "matrix": str(path), "claims": str(claims_path), "design": design.as_record()}
    record.update(selection=SELECTION.as_record(), confidences=list(design.confidences()), looks=[])
    results.mkdir(parents=True, exist_ok=True)
    write_json(results / RECORD_FILE, record)
    looks, arms, outcomes, table = design.looks(), None, [], None
    for k, seeds in enumerate(looks):
        new = seeds if k == 0 else seeds[len(looks[k - 1]) :]
        cells = spec_cells if k == 0 else wave_cells(path, new, arms)
        outcomes.append(run(MatrixSpec(path, cells)))
        if outcomes[-1].interrupted or outcomes[-1].failed:
            break
        table = analyse(results, claims, design, k + 1)
        record["looks"].append(_look_record(k, new, arms, table, claims))
        write_json(results / RECORD_FILE, record)
        if on_look is not None:
            on_look(k + 1, len(looks), table)
        arms = open_arms(table, claims)
        if not arms:
            break
    return WavesOutcome(tuple(outcomes), table, results / RECORD_FILE)
