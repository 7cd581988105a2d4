"""benchctl's estimators inside other trainers.  Each plug-in depends only on `benchctl.estimators`.

- `benchctl.integrations.verl`: every registered estimator as veRL advantage estimator `benchctl_<name>`
  (turned on with `VERL_USE_EXTERNAL_MODULES=benchctl.integrations.verl`).
- `benchctl.integrations.trl`: `BenchctlGRPOTrainer`, TRL's `GRPOTrainer` with `estimator=`.

Neither module is imported here: each needs its trainer installed (veRL lives in an environment of its own, see
the Makefile's `venv-verl`).
"""
