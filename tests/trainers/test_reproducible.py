"""`device.deterministic`, which makes two training runs with one seed bit-identical (the process-level test is
`test_resume.py::test_two_runs_with_one_seed_are_bit_identical`)."""

import torch

from benchctl.trainers.device import deterministic


def test_deterministic_switches_torch_kernels_on_only_inside_and_restores_the_setting():
    before = torch.are_deterministic_algorithms_enabled()
    with deterministic(True):
        assert torch.are_deterministic_algorithms_enabled()
    assert torch.are_deterministic_algorithms_enabled() == before
    with deterministic(False):
        assert torch.are_deterministic_algorithms_enabled() == before
