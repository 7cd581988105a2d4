"""Task registry: names, duplicate and unknown-name errors, options."""

import pytest

from benchctl.errors import BenchctlError, UnknownNameError
from benchctl.tasks import Task, get_task, list_tasks, register_task
from benchctl.tasks.arith import ArithTask

ALL = [
    "aime24",
    "aime25",
    "amc23",
    "arith",
    "arith_chat",
    "arith_chat_val",
    "arith_mix",
    "arith_mix_val",
    "arith_steps",
    "arith_steps_val",
    "arith_val",
    "arith_words",
    "arith_words_val",
    "gsm8k",
    "math500",
    "math_train",
    "mbpp",
    "minerva",
    "olympiadbench",
]


def test_every_builtin_task_is_registered_sorted_by_name():
    assert [t.name for t in list_tasks()] == ALL


def test_every_task_declares_kind_description_and_source():
    for task in list_tasks():
        assert task.kind in ("math", "code") and task.description
        assert (task.hub_id is None) == (task.local_file is None) == (task.name.startswith("arith"))


def test_unknown_task_error_lists_the_valid_names():
    with pytest.raises(UnknownNameError) as err:
        get_task("math5000")
    assert all(name in str(err.value) for name in ALL)
    assert isinstance(err.value, ValueError)


def test_registering_a_name_twice_with_another_class_is_an_error():
    class Other(ArithTask):
        pass

    with pytest.raises(BenchctlError, match="already registered"):
        register_task("arith")(Other)
    assert type(get_task("arith")) is ArithTask


def test_reregistering_the_same_class_is_harmless():
    assert register_task("arith")(ArithTask) is ArithTask


def test_only_task_subclasses_can_be_registered():
    with pytest.raises(BenchctlError):
        register_task("not_a_task")(dict)


def test_unknown_option_names_the_valid_options():
    with pytest.raises(BenchctlError, match="valid options: split, challenge_tests"):
        get_task("mbpp", seed=1)
    with pytest.raises(BenchctlError, match="valid options: none"):
        get_task("math500", split="train")


def test_tasks_are_task_instances():
    assert all(isinstance(t, Task) for t in list_tasks())
