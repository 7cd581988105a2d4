"""`device.default_threads`: the policy's forward/backward threads when `--threads` is not given."""

import os

from benchctl.trainers.device import default_threads


def test_default_threads_follow_omp_num_threads_as_ray_sets_it_for_a_one_cpu_task(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert default_threads() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert default_threads() == 3


def test_default_threads_are_the_usable_cores_without_a_valid_omp_num_threads(monkeypatch):
    cores = len(os.sched_getaffinity(0))
    for value in (None, "", "0", "two", "-1"):
        if value is None:
            monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        else:
            monkeypatch.setenv("OMP_NUM_THREADS", value)
        assert default_threads() == cores
