"""Group-relative advantage estimators (spec `estimators.md` §1-7).

    from benchctl.estimators import get_estimator, list_estimators, register_estimator
    est = get_estimator("ha_dw", base="grpo", lambda_scale=1.3)
    adv = est.advantages(rewards)          # (P, G) numpy or torch -> same kind, dtype, device
    est.diagnostics(); est.state_dict(); est.load_state_dict(d); est.loss_agg

Each family lives in its own module and registers its pure functions with `@register_estimator`.
"""

# Registration order = listing order: bases first, then modifiers.
from benchctl.estimators import grpo, dgpo, ngrpo, reinforce, passk, avspo  # noqa: F401, I001
from benchctl.estimators import maxrl, batchnorm, optimal_baseline, krpo, bnpo  # noqa: F401, I001
from benchctl.estimators import shrinkage, dbb  # noqa: F401, I001
from benchctl.estimators import hadw, agrae, lead, oar  # noqa: F401, I001
from benchctl.estimators import codapo  # noqa: F401, I001
from benchctl.estimators import fgrpo, rlzvp  # noqa: F401, I001
from benchctl.estimators.api import Estimator, get_estimator
from benchctl.estimators.info import EstimatorInfo, HyperParam, estimator_info, list_estimators
from benchctl.estimators.oar import reshape_token_weights
from benchctl.estimators.registry import register_estimator, registered_names, unregister_estimator

__all__ = [
    "Estimator",
    "EstimatorInfo",
    "HyperParam",
    "estimator_info",
    "get_estimator",
    "list_estimators",
    "register_estimator",
    "registered_names",
    "reshape_token_weights",
    "unregister_estimator",
]
