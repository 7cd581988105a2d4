"""`benchctl matrix run`'s progress lines: a finished cell's line says how many cells are done and the time left,
at the wall-clock rate of the cells finished so far (so cells running side by side count)."""

from types import SimpleNamespace

from benchctl.matrix.outcome import CellOutcome
from benchctl.matrix.render import progress_printer, time_left


def test_time_left_is_the_remaining_cells_at_the_rate_of_the_finished_ones():
    assert time_left(elapsed=600.0, finished=10, remaining=30) == "about 30 min left"
    assert time_left(elapsed=60.0, finished=4, remaining=2) == "about 30 s left"
    assert time_left(elapsed=10.0, finished=0, remaining=5) == ""  # nothing finished: no rate yet
    assert time_left(elapsed=10.0, finished=5, remaining=0) == ""
    assert time_left(elapsed=600.0, finished=1, remaining=30, slots=2) == ""  # the first wave is not done yet
    assert time_left(elapsed=600.0, finished=2, remaining=30, slots=2) == "about 150 min left"


def _printer(total):
    """A progress printer on a clock the test sets (`now["t"]`), and `total` cells c0, c1, ..."""
    now = {"t": 0.0}
    return progress_printer(total, clock=lambda: now["t"]), [SimpleNamespace(name=f"c{i}") for i in range(total)], now


def test_two_cells_side_by_side_halve_the_time_left(capsys):
    """Four cells, two at a time, 40 s each: after the first two finish at t=40, two remain: 40 s, not 80. After
    only one of the first two, no estimate: its time holds the start-up that the later cells do not pay."""
    on_event, cells, now = _printer(4)
    on_event("start", cells[0], None)
    on_event("start", cells[1], None)
    now["t"] = 40.0
    on_event("done", cells[0], CellOutcome("c0", "done", seconds=40.0))
    on_event("done", cells[1], CellOutcome("c1", "done", seconds=40.0))
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2].endswith("(1/4 cells)")
    assert lines[-1].endswith("(2/4 cells, about 40 s left)")


def test_cells_finished_earlier_count_as_done_but_not_in_the_rate(capsys):
    on_event, cells, now = _printer(3)
    on_event("skip", cells[0], None)
    on_event("start", cells[1], None)
    now["t"] = 30.0
    on_event("done", cells[1], CellOutcome("c1", "failed", reason="boom", seconds=30.0))
    assert capsys.readouterr().out.splitlines()[-1].endswith("boom  (2/3 cells, about 30 s left)")
