"""A process that built a report can still start vLLM: the report's statistics stack must not load numba /
llvmlite (vLLM's CPU platform scans every loaded module and crashes on llvmlite's ctypes wrappers)."""

import subprocess
import sys


def test_report_statistics_do_not_load_numba_or_llvmlite():
    code = (
        "import sys, numpy as np; from benchctl.report import rl, stats; "
        "from rliable import library, metrics; "
        "library.get_interval_estimates({'a': np.ones((2, 1))}, lambda x: np.array([metrics.aggregate_iqm(x)]), "
        "reps=10); print(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'llvmlite')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"
