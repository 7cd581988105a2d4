"""The side-by-side memory rule of the Ray executor on one CPU machine (`benchctl.matrix.ray_executor.may_start`):
which cells start beside running ones, from each model's measured footprint, without Ray or a model."""

import pytest

from benchctl.matrix.ray_executor import (
    CPU_CELL_GIB,
    FOOTPRINT_MARGIN,
    HEADROOM_GIB,
    SMOLLM2_FIXED_GIB,
    SMOLLM2_SLOT_GIB,
    cell_footprint,
    may_start,
)
from benchctl.matrix.spec import Cell


def smollm2_cell(prompts: int = 8, group: int = 8, max_tokens: int | None = 64) -> Cell:
    settings = {"prompts_per_step": prompts, **({} if max_tokens is None else {"max_tokens": max_tokens})}
    return Cell(model="smollm2-135m", task="arith_chat", group_size=group, train_settings=tuple(settings.items()))


SMOLLM2 = cell_footprint(smollm2_cell())  # examples/real-model.yaml's rollout settings: the measured cell's


def test_the_tiny_models_cells_take_their_measured_2_5_gib_and_an_unmeasured_model_has_no_footprint():
    assert cell_footprint(Cell(model="tiny")) == cell_footprint(Cell(model="tiny-warm")) == CPU_CELL_GIB == 2.5
    assert cell_footprint(Cell(model="HuggingFaceTB/SmolLM2-1.7B-Instruct")) is None


def test_a_smollm2_cells_footprint_is_the_measured_peak_at_its_settings_and_grows_with_p_x_g_x_max_tokens():
    assert SMOLLM2 == pytest.approx(FOOTPRINT_MARGIN * (SMOLLM2_FIXED_GIB + SMOLLM2_SLOT_GIB * 8 * 8 * 64))
    assert 10.5 < SMOLLM2 / FOOTPRINT_MARGIN < 11.5  # the 10.9 GiB peak measured at 8 prompts x G=8, 64 tokens
    doubled = [smollm2_cell(prompts=16), smollm2_cell(group=16), smollm2_cell(max_tokens=128)]
    assert {round(cell_footprint(c), 9) for c in doubled} == {
        round(SMOLLM2 + (SMOLLM2 - FOOTPRINT_MARGIN * SMOLLM2_FIXED_GIB), 9)
    }
    assert cell_footprint(smollm2_cell(prompts=1, group=2, max_tokens=8)) < SMOLLM2


def test_two_smollm2_cells_run_side_by_side_where_memory_holds_both_and_a_third_waits():
    available = HEADROOM_GIB + 2 * SMOLLM2 + 0.1  # what two cells need, and a little: at the run's start and now
    budget = available - HEADROOM_GIB
    assert may_start(SMOLLM2, [], budget, available)
    assert may_start(SMOLLM2, [SMOLLM2], budget, available)  # the first has not taken its memory yet
    assert not may_start(SMOLLM2, [SMOLLM2, SMOLLM2], budget, available)
    assert may_start(CPU_CELL_GIB, [SMOLLM2], budget, available) == (CPU_CELL_GIB <= SMOLLM2 + 0.1)


def test_a_smollm2_cell_that_would_not_fit_is_not_started_beside_another():
    available = HEADROOM_GIB + 2 * SMOLLM2 - 0.1
    budget = available - HEADROOM_GIB
    assert may_start(SMOLLM2, [], budget, available)  # alone it always starts, as the serial executor runs it
    assert not may_start(SMOLLM2, [SMOLLM2], budget, available)
    assert may_start(CPU_CELL_GIB, [SMOLLM2], budget, available) == (SMOLLM2 + CPU_CELL_GIB <= budget)


def test_a_cell_waits_when_the_memory_available_now_no_longer_holds_it_whatever_the_budget():
    budget = 4 * SMOLLM2
    assert may_start(SMOLLM2, [SMOLLM2], budget, HEADROOM_GIB + SMOLLM2)
    assert not may_start(SMOLLM2, [SMOLLM2], budget, HEADROOM_GIB + SMOLLM2 - 0.1)  # a spike elsewhere


@pytest.mark.parametrize("running", [[None], [CPU_CELL_GIB, None]])
def test_nothing_starts_beside_a_cell_of_an_unmeasured_model(running):
    assert not may_start(CPU_CELL_GIB, running, budget=100.0, available=100.0)


def test_a_cell_of_an_unmeasured_model_runs_alone():
    assert may_start(None, [], budget=100.0, available=100.0)
    assert not may_start(None, [CPU_CELL_GIB], budget=100.0, available=100.0)


def test_a_quiet_24_gib_machine_runs_two_smaller_real_model_cells_side_by_side_and_the_measured_ones_one_by_one():
    """The machine the footprint was measured on has 23.5 GiB; quiet, 22 GiB of it available (MemAvailable)."""
    small = cell_footprint(smollm2_cell(prompts=4))
    assert may_start(small, [small], 22.0 - HEADROOM_GIB, 22.0)
    assert not may_start(SMOLLM2, [SMOLLM2], 22.0 - HEADROOM_GIB, 22.0)
    assert not may_start(small, [small], 15.0 - HEADROOM_GIB, 15.0)  # 7 GiB more in use elsewhere
