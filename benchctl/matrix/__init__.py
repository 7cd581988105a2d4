"""`benchctl matrix`: a (model x estimator grid x recipe x G x seed) matrix of training runs, each evaluated,
run resumably into RESULTS/runs/<cell>/ with RESULTS/index.parquet listing every run (`benchctl report` reads it).

    from benchctl.matrix import read_matrix, run_matrix, matrix_status
    spec = read_matrix("examples/demo.yaml")       # validated cells (spec.cells), stable run folder names
    outcome = run_matrix(spec, "results/demo")     # skips finished cells, resumes interrupted ones, retries failed

File format and naming: `benchctl.matrix.spec`; running, resuming and the executor seam: `benchctl.matrix.runner`.
"""

from benchctl.matrix.runner import (
    EXECUTORS,
    CellOutcome,
    CellStatus,
    MatrixOutcome,
    cell_run_dir,
    matrix_status,
    run_matrix,
)
from benchctl.matrix.spec import Cell, EvalSettings, MatrixSpec, parse_matrix, read_matrix

__all__ = [
    "EXECUTORS",
    "Cell",
    "CellOutcome",
    "CellStatus",
    "EvalSettings",
    "MatrixOutcome",
    "MatrixSpec",
    "matrix_status",
    "parse_matrix",
    "read_matrix",
    "cell_run_dir",
    "run_matrix",
]
