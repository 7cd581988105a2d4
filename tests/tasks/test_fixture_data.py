"""The tests/data fixture: real rows copied verbatim from the complete files, loadable by every task that has one."""

import json

from benchctl.tasks import get_task

FIXTURE_ROWS = {"math500": 50, "gsm8k": 10, "math_train": 13}


def test_fixture_files_load_through_the_tasks_with_their_edge_cases(fixture_data_dir):
    loaded = {name: get_task(name).load(fixture_data_dir) for name in FIXTURE_ROWS}
    assert {name: len(problems) for name, problems in loaded.items()} == FIXTURE_ROWS
    assert [p.id for p in loaded["math_train"] if not p.gold] == [
        "train/number_theory/7115.json",
        "train/number_theory/7117.json",
    ]
    mbpp = {split: get_task("mbpp", split=split).load(fixture_data_dir) for split in ("test", "all")}
    assert [p.id for p in mbpp["test"]] == [str(i) for i in range(11, 41)] + ["367"]
    assert len(mbpp["all"]) == 34 and sum(bool(p.meta["challenge_test_list"]) for p in mbpp["all"]) == 7
    assert {p.id for p in mbpp["all"] if p.meta["test_setup_code"]} == {"367", "927"}


def test_fixture_rows_are_verbatim_lines_of_the_complete_files(fixture_data_dir, benchmarks_dir):
    for path in sorted(fixture_data_dir.glob("*.jsonl")):
        complete = (benchmarks_dir / path.name).read_text(encoding="utf-8").splitlines()
        fixture = path.read_text(encoding="utf-8").splitlines()
        positions = [complete.index(line) for line in fixture]
        assert positions == sorted(positions), path.name  # same lines, original order
        assert all(json.loads(line)["id"] for line in fixture)


def test_fixture_is_what_make_fixture_builds_from_the_complete_files(fixture_data_dir, benchmarks_dir, tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_fixture", fixture_data_dir.parent / "make_fixture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build(benchmarks_dir, tmp_path)
    for path in sorted(fixture_data_dir.glob("*.jsonl")):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name
