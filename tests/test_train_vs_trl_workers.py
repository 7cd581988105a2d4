"""benchmarks/train_vs_trl.py reports a side whose process dies (the OOM killer's SIGKILL) instead of waiting on
its pipe for ever."""

import importlib.util
import multiprocessing as mp
import os
import signal
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "train_vs_trl.py"


def _script():
    spec = importlib.util.spec_from_file_location("train_vs_trl", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _killed_before_answering(conn) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_worker_killed_mid_run_is_reported_not_waited_for():
    bench = _script()
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_killed_before_answering, args=(child,), daemon=True)
    proc.start()
    child.close()  # as run_pair does: only the worker holds its end
    start = time.perf_counter()
    with pytest.raises(bench.WorkerDied, match="TRL worker died .*SIGKILL"):
        bench._receive("TRL", proc, parent)
    assert time.perf_counter() - start < 30
