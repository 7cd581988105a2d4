"""Math answer grading: math-verify 0.9.0 in a process pool with a per-item time bound, deduplicated.

Fidelity: the verdict is `verify(parse("\\boxed{gold}"), parse(completion))` of math-verify 0.9.0 with the extraction
config `math_worker.EXTRACTION_CONFIG` (boxed answers first), gold first, except where written below ("Known issues",
profiles). `tests/grading/test_math_differential.py` checks it on thousands of hypothesis completions.

Pipeline for a batch of (gold, completion) pairs:
1. In the parent (while the pool already grades the first quarter's jobs: `_outcomes`), once per distinct
   completion string, pure Python: `math_extract.math_verify_box`, the content of the only box when math-verify is
   certain to read exactly that box (one `\\boxed{}`, no "I hope" final-answer sentence, no percent word after it,
   ...). Any other completion (several boxes, `\\fbox`, few-shot endings, no box, truncated) goes WHOLE to the
   worker, where math-verify's own extraction runs.
2. Deduplicate: identical (profile, gold, answer, tolerance) jobs are graded once and the verdict fanned back to
   every item (RL evaluation repeats the same few answers hundreds of times).
3. Plain rational literals on both sides (`204`, `-7/12`, `\\frac{14}{3}`) are decided exactly in the parent
   (`math_fast`: math-verify's verdict is certain there). Every other unique job is graded in a
   `math_pool.BoundedPool` worker (`_schedule`: grouped by gold, biggest groups first): `verify(gold, pred)` with the
   GOLD FIRST (math-verify is not symmetric; landscape.md section 5, Math-Verify issues #25/#10), math-verify's signal
   timeouts off (inside, numeric literals and tuples / intervals / lists are built without the whole-string ANTLR
   parse, srepr-identical to latex2sympy: `math_worker.parse_latex_fast`), the bound enforced by the parent (the
   overrunning worker is killed: reason "timeout"; a worker that dies: reason "error"). `workers=0` grades
   in-process with NO time bound (debugging only).
4. A box that math-verify cannot parse (`math_extract.BOX_UNPARSED`): math-verify would read on past it, so those
   items are graded again from their whole completion (`_unparsed_boxes`).
Reasons: correct, wrong, no_answer (nothing extractable), parse_error (answer or gold found but not parseable
and not string-equal), timeout, error. `Verdict.extracted` is the box content, or math-verify's matched string.

Profiles per benchmark (`math_worker.PROFILES`; rewrites applied to gold and answer alike, `olympiad`'s not to whole
completions): `default` (MATH-500,
AIME, AMC, GSM8K, MATH train: plain math-verify), `minerva` (`4.5e33`, `-3./2`, `np.arcsin` golds), `olympiad`
(stray `$` in 3 golds, absolute tolerance from the `error` field).

Known issues (each pinned by a row of tests/grading/test_math_regressions.py):
- `\\text{0.5}` (a decimal inside `\\text`) does not parse to a number in math-verify 0.9.0, so it is graded
  wrong against 1/2 (`\\text{13}` vs 13 is fine).
- Minerva plain numbers are compared with relative tolerance 1e-6 (math-verify's absolute 6-decimal rounding
  would make 2.88e-19 == 2.88e-20): `4.49e33` is wrong against `4.5e33`; Qwen2.5-Math uses rel 1e-4, which we
  do not apply [our choice: no tolerance that the benchmark file does not state].
- Number-base subscripts are dropped by math-verify (`52_8` == `52_9`), and units lose their exponent
  (`864 \\mbox{ inches}^2` == `... inches}^3`); symbols are case-folded (`N=n` collapses).
- Ordered tuples such as `(1,2)` are read as open intervals on both sides (math-verify), so `(1,2)` vs `(2,1)` is
  wrong as it should be, but the gold/answer type is interval, not tuple.
- Completions without a box are graded by math-verify's fallback extraction, which may pick an intermediate
  number from the prose (correct-by-accident is possible; nothing to do short of requiring a box). Likewise a
  MATH few-shot "The final answer is X. I hope it is correct." beats an earlier box, `\\fbox{}` alone is not read
  as an answer, and `\\boxed{a} \\quad \\text{and} \\quad \\boxed{b}` is the set {a, b}: math-verify's choices, kept.
- Prose golds (`olympiadbench-1965`) can only match themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from benchctl.errors import BenchctlError
from benchctl.grading.math_extract import BOX_UNPARSED, math_verify_box
from benchctl.grading.math_fast import fast_reason
from benchctl.grading.math_pool import default_workers, shared_pool
from benchctl.grading.verdict import Verdict

DEFAULT_TIMEOUT = 5.0  # seconds per unique item [our choice]: math-verify's own default bound
WORKER_FUNC = "benchctl.grading.math_worker:grade_job"  # imported by the workers only (sympy stays out of here)
WARM_UP = ("benchctl.grading.math_warm",)  # preloaded into the forkserver: workers fork with a warm parser
PROFILES = ("default", "minerva", "olympiad")  # == math_worker.PROFILES (a test checks)
HEAD_SPLIT = 4  # the pool starts on the first 1/4 of the items while the parent extracts the rest [our choice]


def _job(profile: str, gold: str | None, completion: str, tol: float | None) -> tuple[tuple, str | None]:
    """(dedupe key == worker args, extracted box content or None)."""
    answer, boxed_flag, boxed = _extract(completion)
    return (profile, gold, answer, boxed_flag, tol), boxed


def _extract(completion: str) -> tuple[str, bool, str | None]:
    """(worker answer text, is a box, box content or None): the box math-verify certainly reads, else the whole
    completion (math-verify's own extraction runs in the worker)."""
    boxed = math_verify_box(completion)
    return (completion, False, None) if boxed is None else (boxed, True, boxed)


def _keyed(
    profile: str, pairs: Sequence[tuple[str, str]], tols: Sequence[float | None], seen: dict | None = None
) -> list[tuple[tuple, str | None]]:
    """`_job` per pair, extracting each distinct completion string once (samples repeat verbatim: 128k MATH-500
    benchmark completions are ~9k strings; a dict lookup costs a hash, the box scan ~5 us). `seen` carries the
    extractions over between calls."""
    seen = {} if seen is None else seen
    out = []
    for (gold, completion), tol in zip(pairs, tols):
        hit = seen.get(completion)
        if hit is None:
            hit = seen[completion] = _extract(completion)
        out.append(((profile, gold, hit[0], hit[1], tol), hit[2]))
    return out


def _schedule(jobs: list[tuple]) -> list[tuple]:
    """Pool order: jobs grouped by gold (a worker parses each gold once per group it gets), the groups with the
    most answer text first and gold-sorted within ties, answers sorted inside a group. Answer text is a weak
    proxy of cost (ANTLR prediction dominates; [our choice]); the pool's shrinking chunks bound the tail."""
    groups: dict[tuple, list[tuple]] = {}
    for job in jobs:
        groups.setdefault((job[0], job[1] or "", job[4] or 0.0), []).append(job)
    order = sorted(groups.items(), key=lambda kv: (-sum(len(job[2]) for job in kv[1]), kv[0]))
    return [job for _, group in order for job in sorted(group, key=lambda job: (job[2], job[3]))]


def _run(jobs: list[tuple], workers: int | None, timeout: float) -> list[tuple[str, object]]:
    """(status, value) per job from the pool, or in-process when workers == 0."""
    if workers == 0:
        from benchctl.grading.math_worker import grade_job

        out = []
        for job in jobs:
            try:
                out.append(("ok", grade_job(*job)))
            except Exception as exc:  # noqa: BLE001 - same contract as the pool workers
                out.append(("error", f"{type(exc).__name__}: {str(exc)[:200]}"))
        return out
    return shared_pool(WORKER_FUNC, workers or default_workers(), WARM_UP).map(jobs, timeout)


def _verdict(outcome: tuple[str, object], boxed: str | None, timeout: float) -> Verdict:
    status, value = outcome
    if status == "ok":
        reason, extracted, detail = value  # type: ignore[misc]
        return Verdict.of(reason, boxed if boxed is not None else extracted, detail)
    if status == "timeout":
        return Verdict.of("timeout", boxed, f"grading exceeded {timeout:g} s")
    return Verdict.of("error", boxed, str(value))


def grade_math(
    pairs: Sequence[tuple[str, str]],
    *,
    profile: str = "default",
    tolerances: Sequence[float | None] | None = None,
    workers: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[Verdict]:
    """One `Verdict` per (gold, completion) pair, in order; never raises for a bad completion.

    Args:
        pairs: (gold final answer without `\\boxed`, model completion).
        profile: per-benchmark rewrite profile, one of `math_worker.PROFILES`.
        tolerances: optional absolute numeric tolerance per pair (OlympiadBench `error`), None = exact.
        workers: worker processes (None = CPUs available, at most 8; 0 = in-process, no time bound).
        timeout: seconds allowed per unique (gold, answer) item; past it the item is "timeout".
    """
    if profile not in PROFILES:
        raise BenchctlError(f"unknown grading profile {profile!r}; choose one of: {', '.join(PROFILES)}")
    if tolerances is not None and len(tolerances) != len(pairs):
        raise BenchctlError(f"tolerances has {len(tolerances)} entries for {len(pairs)} pairs")
    if timeout <= 0:
        raise BenchctlError(f"timeout={timeout!r} must be > 0 seconds")
    tols = tolerances if tolerances is not None else [None] * len(pairs)
    keyed, outcome = _outcomes(profile, pairs, tols, workers, timeout)
    keyed = _unparsed_boxes(keyed, outcome, pairs, workers, timeout)
    shared: dict[tuple, Verdict] = {}  # frozen verdicts are shared between identical items
    return [_shared(shared, outcome[key], boxed, timeout) for key, boxed in keyed]


def _outcomes(profile: str, pairs: Sequence, tols: Sequence, workers: int | None, timeout: float) -> tuple[list, dict]:
    """(keyed items, outcome per distinct key). With a pool, the slow jobs of the first 1/`HEAD_SPLIT` of the
    items are graded (a thread waits on the pool) while the parent extracts the rest, so the workers do not idle
    through the extraction pass; the remaining jobs follow as a second `map` (its own biggest-first order)."""
    seen: dict = {}
    split = len(pairs) // HEAD_SPLIT if workers != 0 else 0
    keyed = _keyed(profile, pairs[:split], tols[:split], seen)
    outcome = {key: _fast(key) for key in dict.fromkeys(key for key, _ in keyed)}
    head = _schedule([k for k, v in outcome.items() if v is None])
    with ThreadPoolExecutor(1) as executor:
        future = executor.submit(_run, head, workers, timeout) if head else None
        keyed += _keyed(profile, pairs[split:], tols[split:], seen)
        for key, _ in keyed[split:]:
            if key not in outcome:
                outcome[key] = _fast(key)
        if future is not None:
            outcome.update(zip(head, future.result()))
    tail = _schedule([k for k, v in outcome.items() if v is None])
    outcome.update(zip(tail, _run(tail, workers, timeout)))
    return keyed, outcome


def _unparsed_boxes(keyed: list, outcome: dict, pairs: Sequence, workers: int | None, timeout: float) -> list:
    """`keyed` with every item whose box math-verify could not parse re-keyed to its whole completion, graded now
    (math-verify's extraction reads on to the other candidates of the text). Adds the new outcomes to `outcome`."""
    redo = {
        i: (key[0], key[1], pairs[i][1], False, key[4])
        for i, (key, _) in enumerate(keyed)
        if key[3] and outcome[key][0] == "ok" and outcome[key][1][2] == BOX_UNPARSED
    }  # type: ignore[index]
    if not redo:
        return keyed
    jobs = _schedule(list(dict.fromkeys(redo.values())))
    outcome.update(zip(jobs, _run(jobs, workers, timeout)))
    return [(redo[i], None) if i in redo else item for i, item in enumerate(keyed)]


def _fast(key: tuple) -> tuple[str, object] | None:
    """A pool-free outcome for rational-literal pairs under the default profile (math_fast), else None."""
    profile, gold, answer, boxed, tol = key
    if profile != "default" or not boxed or tol is not None or gold is None:
        return None
    reason = fast_reason(gold, answer)
    return None if reason is None else ("ok", (reason, answer, ""))


def _shared(cache: dict, outcome: tuple[str, object], boxed: str | None, timeout: float) -> Verdict:
    key = (id(outcome), boxed)
    if key not in cache:
        cache[key] = _verdict(outcome, boxed, timeout)
    return cache[key]


def extract_math_answer(completion: str, *, workers: int | None = None, timeout: float = DEFAULT_TIMEOUT) -> str | None:
    """The final answer grading would use: the box math-verify certainly reads (without the pool; also when that
    box does not parse, where grading reads on), else math-verify's extraction (run in the pool)."""
    job, boxed = _job("default", None, completion, None)
    if boxed is not None:
        return boxed
    status, value = _run([job], workers, timeout)[0]
    return value[1] if status == "ok" else None  # type: ignore[index]
