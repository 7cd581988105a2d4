"""Loading the real benchmark files, hub row mapping (in-memory rows), prompts and hub-unreachable errors."""

import json

import pytest

from benchctl.errors import BenchctlError
from benchctl.tasks import get_task, sources

COUNTS = {
    "math500": 500,
    "aime24": 30,
    "aime25": 30,
    "amc23": 40,
    "minerva": 272,
    "olympiadbench": 675,
    "gsm8k": 1319,
    "math_train": 7500,
    "mbpp": 500,
}


@pytest.mark.parametrize("name, count", sorted(COUNTS.items()))
def test_benchmark_file_loads_with_the_documented_count(benchmarks_dir, name, count):
    task = get_task(name)
    problems = task.load(benchmarks_dir)
    assert len(problems) == count == task.size(benchmarks_dir) == task.known_size
    assert len({p.id for p in problems}) == count
    assert all(p.question.strip() for p in problems)


@pytest.mark.parametrize(
    "split, count", [("test", 500), ("all", 974), ("train", 374), ("validation", 90), ("prompt", 10)]
)
def test_mbpp_splits_follow_the_google_research_ranges(benchmarks_dir, split, count):
    problems = get_task("mbpp", split=split).load(benchmarks_dir)
    assert len(problems) == count
    assert all(p.gold == "" and p.meta["test_list"] for p in problems)
    if split == "test":
        assert [int(p.id) for p in problems] == list(range(11, 511))


def test_math_golds_are_non_empty_except_the_two_documented_math_train_rows(benchmarks_dir):
    for name in COUNTS:
        if name != "mbpp":
            empty = [p.id for p in get_task(name).load(benchmarks_dir) if not p.gold]
            expected = ["train/number_theory/7115.json", "train/number_theory/7117.json"]
            assert empty == (expected if name == "math_train" else [])


def test_limit_returns_a_prefix(fixture_data_dir):
    task = get_task("math500")
    assert task.load(fixture_data_dir, limit=7) == task.load(fixture_data_dir)[:7]


def test_env_var_data_dir_is_used_when_no_argument(fixture_data_dir, monkeypatch):
    monkeypatch.setenv("BENCHCTL_DATA_DIR", str(fixture_data_dir))
    assert get_task("math500").load() == get_task("math500").load(fixture_data_dir)
    assert len(get_task("math500").load()) == 50


def test_missing_file_in_a_given_data_dir_is_a_one_line_error(tmp_path):
    with pytest.raises(BenchctlError, match="math500.jsonl not found") as err:
        get_task("math500").load(tmp_path)
    assert "\n" not in str(err.value)


def test_unreachable_hub_says_to_pass_data_dir(monkeypatch):
    monkeypatch.delenv("BENCHCTL_DATA_DIR", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "https://hub.invalid")  # .invalid never resolves (RFC 2606)
    for name in ("math500", "mbpp"):
        with pytest.raises(BenchctlError, match="pass --data-dir") as err:
            get_task(name).load()
        assert "\n" not in str(err.value)


def test_bad_json_line_is_reported_with_its_line_number(tmp_path):
    (tmp_path / "aime24.jsonl").write_text('{"id": "a", "problem": "p", "answer": "1"}\n{oops\n')
    with pytest.raises(BenchctlError, match="aime24.jsonl:2"):
        get_task("aime24").load(tmp_path)


# ---- hub row mapping: same golds as the SOURCES.md derivation of the local files ---------------------------------


def test_math500_hub_row_maps_to_the_local_schema(fixture_data_dir):
    local = json.loads((fixture_data_dir / "math500.jsonl").open().readline())
    hub = {
        "problem": local["problem"],
        "solution": local["solution"],
        "answer": local["answer"],
        "subject": local["subject"],
        "level": local["level"],
        "unique_id": local["id"],
    }
    mapped = sources.map_math500(hub, 0)
    assert {k: mapped[k] for k in ("id", "problem", "answer")} == {k: local[k] for k in ("id", "problem", "answer")}


def test_aime_hub_row_strips_leading_zeros_and_parses_the_url():
    row = {
        "id": 60,
        "problem": "P",
        "solution": "S",
        "answer": "025",
        "url": "https://artofproblemsolving.com/wiki/index.php/2024_AIME_II_Problems/Problem_4",
        "year": 2024,
    }
    mapped = sources.map_aime(row, 0)
    assert (mapped["id"], mapped["answer"]) == ("2024-AIME-II-4", "25")


def test_amc_hub_row_turns_float_answers_into_integers():
    row = {
        "id": 0,
        "question": "Q",
        "answer": 27.0,
        "url": "https://artofproblemsolving.com/wiki/index.php/2023_AMC_12A_Problems/Problem_2",
    }
    assert sources.map_amc(row, 0) == {"id": "2023-AMC12A-2", "problem": "Q", "answer": "27", "source": row["url"]}
    assert sources.map_amc({**row, "answer": -1.0}, 0)["answer"] == "-1"


def test_minerva_hub_row_without_answer_takes_the_last_box():
    mapped = sources.map_minerva({"question": "Q", "solution": "so $\\boxed{1}$ then \\boxed{4.5e33}"}, 3)
    assert (mapped["id"], mapped["answer"]) == ("minerva-3", "4.5e33")


def test_olympiad_hub_row_uses_qwen_gold_rule_and_joins_multi_answers():
    row = {
        "id": 2349,
        "question": "Q",
        "final_answer": ["$221,$8$"],
        "solution": ["a", "b"],
        "subfield": "Algebra",
        "answer_type": "Numerical",
        "is_multiple_answer": True,
        "unit": None,
        "error": None,
    }
    mapped = sources.map_olympiad(row, 0)
    assert (mapped["id"], mapped["answer"], mapped["solution"]) == ("olympiadbench-2349", "221,$8", "a\n\nb")
    assert sources.map_olympiad({**row, "final_answer": ["$69$,$84$"]}, 0)["answer"] == "69, 84"


def test_gsm8k_hub_row_takes_the_number_after_hashes_without_commas(fixture_data_dir):
    local = [json.loads(line) for line in (fixture_data_dir / "gsm8k_test.jsonl").open()]  # lines 140-149
    rows = [{"question": r["problem"], "answer": r["solution"]} for r in local]
    mapped = sources.map_rows(sources.map_gsm8k, rows)
    assert [m["answer"] for m in mapped] == [r["answer"] for r in local]
    assert any("," in r["solution"].split("####")[-1] for r in local)  # gsm8k-test-146 has a thousands separator


def test_hendrycks_hub_row_gold_is_the_last_box(fixture_data_dir):
    local = json.loads((fixture_data_dir / "math_train.jsonl").open().readline())
    hub = {
        "problem": local["problem"],
        "solution": local["solution"],
        "type": local["subject"],
        "level": f"Level {local['level']}",
    }
    mapped = sources.map_hendrycks(hub, 0)
    assert (mapped["answer"], mapped["level"]) == (local["answer"], local["level"])


def test_mbpp_hub_row_maps_to_the_local_schema(fixture_data_dir):
    local = json.loads((fixture_data_dir / "mbpp.jsonl").open().readline())
    hub = {
        "task_id": int(local["id"]),
        "text": local["prompt"],
        "code": local["code"],
        "test_list": local["test_list"],
        "test_setup_code": "",
        "challenge_test_list": [],
    }
    mapped = sources.map_mbpp(hub, 0)
    assert mapped == {k: local[k] for k in mapped}


# ---- prompts ------------------------------------------------------------------------------------------------------


def test_math_prompt_asks_for_step_by_step_and_a_box(fixture_data_dir):
    task = get_task("math500")
    problem = task.load(fixture_data_dir, limit=1)[0]
    (message,) = task.messages(problem)
    assert message["role"] == "user" and problem.question.strip() in message["content"]
    assert message["content"].endswith("Please reason step by step, and put your final answer within \\boxed{}.")
    assert task.prompt_text(problem).startswith(message["content"])


def test_mbpp_prompt_shows_every_test_and_asks_for_a_python_block(fixture_data_dir):
    task = get_task("mbpp")
    problem = task.load(fixture_data_dir, limit=1)[0]
    text = task.messages(problem)[0]["content"]
    assert text.startswith("You are an expert Python programmer, and here is your task: ")
    assert all(test in text for test in problem.meta["test_list"]) and "```python" in text


def test_mbpp_grade_runs_the_reference_solution_as_correct(fixture_data_dir):
    task = get_task("mbpp")
    problems = task.load(fixture_data_dir, limit=2)
    verdicts = task.grade([(p, f"```python\n{p.meta['code']}\n```") for p in problems] + [(problems[0], "no code")])
    assert [v.reason for v in verdicts[:2]] == ["correct", "correct"] and not verdicts[2].correct
