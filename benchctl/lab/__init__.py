"""The estimator lab: analytic and simulated ground truth for group-relative advantage estimators.

Entry points (one per `benchctl simulate` subcommand), each `run_x(XConfig) -> LabResult`:
`run_bias`, `run_symmetry`, `run_collapse`, `run_bandit`. Closed forms: `conditional_bias` (HA-DW
arXiv:2601.08521 Lemma 2) and `degenerate_probability`. Estimators come only from the public registry
(`benchctl.estimators.get_estimator`), so every registered estimator works here.
"""

from benchctl.lab.bandit import BanditConfig, run_bandit
from benchctl.lab.bias import BiasConfig, run_bias
from benchctl.lab.collapse import CollapseConfig, run_collapse
from benchctl.lab.result import LabResult
from benchctl.lab.specs import EstimatorSpec, parse_estimators
from benchctl.lab.symmetry import SymmetryConfig, run_symmetry
from benchctl.lab.theory import all_correct_probability, all_wrong_probability, conditional_bias, degenerate_probability

__all__ = [
    "BanditConfig",
    "BiasConfig",
    "CollapseConfig",
    "EstimatorSpec",
    "LabResult",
    "SymmetryConfig",
    "all_correct_probability",
    "all_wrong_probability",
    "conditional_bias",
    "degenerate_probability",
    "parse_estimators",
    "run_bandit",
    "run_bias",
    "run_collapse",
    "run_symmetry",
]
