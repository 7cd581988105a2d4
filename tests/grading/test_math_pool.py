"""The grading process pool: per-item time bound, crash isolation, dedupe, thread safety, verdict mapping."""

import threading
import time

import pytest

from benchctl.errors import BenchctlError
from benchctl.grading.math import _job, _keyed, _schedule, _verdict, grade_math
from benchctl.grading.math_pool import MAX_CHUNK, BoundedPool, chunk_size
from benchctl.grading.verdict import Verdict

PATHOLOGICAL = "\\boxed{9^{9^{9^{9}}}}"  # 9^(9^387420489): C-level big-int arithmetic, no signal can stop it


def test_pathological_answer_times_out_within_the_bound_and_others_still_grade():
    start = time.monotonic()
    verdicts = grade_math([("3", PATHOLOGICAL), ("\\frac{1}{2}", "\\boxed{0.5}"), ("2", "\\boxed{3}")], timeout=2.0)
    elapsed = time.monotonic() - start
    assert [v.reason for v in verdicts] == ["timeout", "correct", "wrong"]
    assert verdicts[0].timed_out and verdicts[0].extracted == "9^{9^{9^{9}}}"
    assert elapsed < 2.0 + 4.0  # bound + worker replacement + slack on a loaded 2-core machine


def test_identical_pairs_are_graded_once_so_repeats_cost_one_bound():
    start = time.monotonic()
    verdicts = grade_math([("3", f"so {PATHOLOGICAL}")] * 40 + [("3", PATHOLOGICAL)] * 40, timeout=1.5)
    assert {v.reason for v in verdicts} == {"timeout"}
    assert time.monotonic() - start < 1.5 + 4.0  # 80 items, one unique job: not 80 x 1.5 s


def test_whitespace_variants_of_one_answer_share_a_job_but_keep_their_own_extracted_text():
    verdicts = grade_math([("\\frac{1}{2}", "\\boxed{\\frac{1}{2}}"), ("\\frac{1}{2}", "\\boxed{ \\frac{1}{2}  }")])
    assert [v.reason for v in verdicts] == ["correct", "correct"]
    assert [v.extracted for v in verdicts] == ["\\frac{1}{2}", "\\frac{1}{2}"]


def test_batched_verdicts_equal_one_at_a_time_verdicts_in_order():
    pairs = [("\\frac{14}{3}", "\\boxed{14/3}"), ("5", "\\boxed{6}"), ("5", "none"), ("5", "\\boxed{5}")] * 3
    assert grade_math(pairs) == [grade_math([pair])[0] for pair in pairs]


def test_in_process_mode_gives_the_same_verdicts_as_the_pool():
    pairs = [("\\frac{14}{3}", "\\boxed{4.6667}"), ("x^2+7x+10", "\\boxed{(x+2)(x+5)}"), ("5", "no idea")]
    assert grade_math(pairs, workers=0) == grade_math(pairs, workers=2)


def test_grading_from_a_non_main_thread_works():
    out = []
    thread = threading.Thread(
        target=lambda: out.extend(grade_math([("2", "\\boxed{2}"), ("2", PATHOLOGICAL)], timeout=1.0))
    )
    thread.start()
    thread.join(30)
    assert [v.reason for v in out] == ["correct", "timeout"]


def test_pool_isolates_crashes_timeouts_and_exceptions_per_item():
    pool = BoundedPool("builtins:eval", 2)
    try:
        jobs = [("1+1",), ("__import__('os')._exit(3)",), ("2*3",), ("__import__('time').sleep(60)",), ("1/0",), ("7",)]
        out = pool.map(jobs, timeout=1.0)
        assert out[0] == ("ok", 2) and out[2] == ("ok", 6) and out[5] == ("ok", 7)
        assert out[1][0] == "crash" and "exit code 3" in out[1][1]
        assert out[3] == ("timeout", None)
        assert out[4][0] == "error" and out[4][1].startswith("ZeroDivisionError")
        assert pool.replaced == 2 and pool.map([("40+2",)], timeout=1.0) == [("ok", 42)]
    finally:
        pool.close()


def test_crashed_worker_becomes_an_error_verdict_not_an_exception():
    verdict = _verdict(("crash", "worker died (exit code -11)"), "x", 5.0)
    assert (verdict.reason, verdict.extracted, verdict.correct) == ("error", "x", False)


@pytest.mark.parametrize("kwargs", [{"profile": "nope"}, {"timeout": 0}, {"tolerances": [None, None]}])
def test_bad_arguments_raise_benchctl_error(kwargs):
    with pytest.raises(BenchctlError):
        grade_math([("1", "\\boxed{1}")], **kwargs)


def test_verdict_reason_and_correct_must_agree():
    with pytest.raises(ValueError):
        Verdict(True, "wrong", "1")
    with pytest.raises(ValueError):
        Verdict(False, "maybe", "1")
    assert Verdict.of("correct", "1").correct


def test_chunks_shrink_to_single_jobs_as_the_queue_empties_and_never_exceed_a_fair_share():
    for workers in (1, 2, 8):
        for pending in range(1, 600):
            size = chunk_size(pending, workers)
            assert 1 <= size <= min(MAX_CHUNK, pending)
            assert size == 1 or size <= -(-pending // (2 * workers))
    assert chunk_size(1000, 2) == MAX_CHUNK and chunk_size(4, 2) == 1


def test_extracting_each_distinct_completion_once_gives_the_per_item_keys():
    pairs = [("5", "so \\boxed{ 5 }"), ("5", "so \\boxed{ 5 }"), ("6", "so \\boxed{ 5 }"), ("5", "no box 5")] * 2
    tols = [None, 0.1, None, None] * 2
    assert _keyed("default", pairs, tols) == [_job("default", g, c, t) for (g, c), t in zip(pairs, tols)]


def test_schedule_is_a_permutation_with_each_gold_contiguous_and_bigger_groups_first():
    jobs = [("default", g, a, True, None) for g in ("1", "x=2", "\\frac{1}{3}") for a in ("7", "y = 2x + 3", "1, 2")]
    jobs += [("default", "9", "9.5", True, None)]
    order = _schedule(jobs[::-1])
    assert sorted(order) == sorted(jobs)
    golds = [job[1] for job in order]
    assert len([g for i, g in enumerate(golds) if i == 0 or golds[i - 1] != g]) == 4  # each gold one run
    assert golds[-1] == "9"  # the group with the least answer text goes last
