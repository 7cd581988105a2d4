"""`resolve(cfg) -> Plan`: the values a run derives from its settings, worked out once (one estimator, built once,
its state untouched by the checks), frozen, and recorded in RUN/config.json under the names the staleness rule reads;
each setting's range and choices live in its field metadata."""

import dataclasses

import pytest

from benchctl.errors import BenchctlError
from benchctl.fields import Range, check_settings, setting
from benchctl.trainers import TrainConfig, build_config
from benchctl.trainers.plan import RESOLVED, record, resolve


def test_resolve_builds_the_estimator_once(monkeypatch):
    import benchctl.estimators as estimators

    built = []
    real = estimators.get_estimator
    monkeypatch.setattr(estimators, "get_estimator", lambda *a, **kw: built.append(a) or real(*a, **kw))
    resolve(TrainConfig(estimator="ha_dw", estimator_params={"base": "dr_grpo"}))
    assert built == [("ha_dw",)]


@pytest.mark.parametrize("estimator", ["ha_dw", "avspo"])
def test_the_checks_probe_leaves_the_runs_estimator_state_untouched(estimator):
    from benchctl.estimators import get_estimator

    plan = resolve(TrainConfig(estimator=estimator))
    assert plan.estimator.state_dict() == get_estimator(estimator).state_dict()  # as built: no step taken


def test_the_plan_is_frozen_and_holds_every_derived_value():
    plan = resolve(build_config(flag_values={"recipe": "dapo", "eval_every": 5}))
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.lr = 1.0
    got = (plan.lr, plan.loss.label, plan.loss_agg, plan.max_tokens, plan.overlong_buffer, plan.eval_task)
    assert got == (pytest.approx(7.5e-5), "ppo_clip(clip_high=0.28)", "token-mean", 8, 2, "arith")
    assert plan.eval_ks == (1, 8) and plan.correction.mode == "none" and plan.estimator.name == "grpo"


def test_the_record_names_each_resolved_setting_as_the_staleness_rule_reads_it():
    stored = record(resolve(TrainConfig()), run="x")
    assert all(key in stored and stored[key]["source"] == "derived" for key in RESOLVED.values())
    assert set(RESOLVED) <= set(stored) and stored["run"]["value"] == "x"
    assert stored["lr_resolved"]["value"] == 3e-4 and stored["lr"]["value"] is None


def test_check_settings_reads_the_range_and_the_choices_from_the_field_metadata():
    @dataclasses.dataclass(frozen=True)
    class Study:
        n: int = setting(4, "draws", valid=Range(1))
        p: float | None = setting(None, "probability", valid=Range(0, 1, high_open=True))
        kind: str = setting("a", "kind", choices=("a", "b"))

    check_settings(Study(p=0.5))
    with pytest.raises(BenchctlError, match=r"^n=0 is out of range; valid: \[1, inf\]$"):
        check_settings(Study(n=0))
    with pytest.raises(BenchctlError, match=r"^p=1.0 is out of range; valid: \[0, 1\)$"):
        check_settings(Study(p=1.0))
    with pytest.raises(BenchctlError, match=r"^kind='c' is not valid; choose one of: a, b$"):
        check_settings(Study(kind="c"))


def test_every_numeric_train_setting_declares_its_range_in_its_metadata():
    numeric = {
        f.name for f in dataclasses.fields(TrainConfig) if f.type in ("int", "float", "int | None", "float | None")
    }
    declared = {f.name for f in dataclasses.fields(TrainConfig) if "valid" in f.metadata}
    assert numeric - declared == {"rollout_correction_low", "rollout_correction_high"}  # the mode's own check
