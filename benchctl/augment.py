"""MQR — MathForge's Multi-Aspect Question Reformulation (arXiv:2601.20614 §MQR; spec estimators-sources §5.5).

Each training question is rewritten by an instruction model along three aspects while the gold answer is kept:
background (an unrelated but plausible story), term (a new abstract term for a central concept), sub-problem
(a key numeric condition becomes an independent sub-problem whose answer supplies it).  The three instruction
texts below are quoted verbatim from the MathForge README (AMAP-ML/MathForge, "The core instructions for these
strategies"); the full prompt around them and any filtering the authors applied are not published [UNVERIFIED],
so `PROMPT_TEMPLATE` and the filters in `parse_reformulation` are [our choice].  The released MathForge set is
the originals plus the three reformulations (4x), hence `keep_original=True` by default.

Output: a task file in the shared/benchmarks math schema (`id`, `problem`, `answer`, + `source`, `subject`,
`level`, `original_id`), reformulations with `id = <original id>#mqr-<aspect>` and `source = mqr:<aspect>`;
name it `<dir>/math_train.jsonl` and train with `--data-dir <dir>`.  Counts of kept/rejected outputs per aspect
go to `<out>.stats.json` and the returned `MQRResult`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from benchctl.errors import BenchctlError, check_range

MQR_INSTRUCTIONS = {
    "background": (
        "Add a story background that is not related to the core mathematical content of the given question, "
        "but seems to be related to the question. If the given question already has such a background, change "
        "it to a new, complexer background."
    ),
    "term": (
        "Invent a new, abstract mathematical term to define a concept that is central to the given question, "
        "and restate the entire question using this term."
    ),
    "subproblem": (
        "Convert a key numerical condition of the given question which have a definite value into an independent "
        "sub-problem. The sub-problem may belong to any branch of mathematics (e.g., algebra, geometry, number "
        "theory, combinatorics)."
    ),
}
"""Verbatim from the MathForge README (AMAP-ML/MathForge, section "Multi-Aspect Question Reformulation")."""

ASPECTS = tuple(MQR_INSTRUCTIONS)

PROMPT_TEMPLATE = (
    "You will reformulate a math question to make it harder while keeping its final answer unchanged.\n\n"
    "Instruction: {instruction}\n\n"
    "Requirements:\n"
    "- The reformulated question must have exactly the same final answer as the given question ({answer}).\n"
    "- Do not solve the question and do not state its answer.\n"
    "- Output only the reformulated question, between <question> and </question>.\n\n"
    "Given question:\n{question}\n"
)
"""[our choice] wrapper around the verbatim instruction: the paper's full prompt is not published."""

REJECT_REASONS = ("empty", "unchanged", "truncated", "too_short", "leaks_answer")
MIN_LENGTH_RATIO = 0.5  # [our choice] a reformulation shorter than half the original lost content
_OPEN, _CLOSE = "<question>", "</question>"
_LABEL = re.compile(r"^\s*(?:\*\*)?(?:reformulated|new|rewritten)\s+question\s*:?\s*(?:\*\*)?\s*:?\s*", re.I)


def build_prompt(question: str, answer: str, aspect: str) -> str:
    """The MQR prompt for one (question, aspect)."""
    if aspect not in MQR_INSTRUCTIONS:
        raise BenchctlError(f"unknown MQR aspect {aspect!r}; choose one of: {', '.join(ASPECTS)}")
    return PROMPT_TEMPLATE.format(instruction=MQR_INSTRUCTIONS[aspect], answer=answer, question=question)


def _normalise(text: str) -> str:
    return " ".join(text.lower().split())


def parse_reformulation(output: str, original: str, finish_reason: str = "stop") -> tuple[str | None, str]:
    """(reformulated question, "kept") or (None, reject reason in REJECT_REASONS).

    Takes the text between the last `<question>` and the next `</question>`; an unclosed tag takes the rest
    (rejected as "truncated" when the engine stopped on length); no tag: the whole output minus a leading
    "Reformulated/New question:" label.  Rejects empty, unchanged (case/space-insensitive), too short
    (< MIN_LENGTH_RATIO x original), and outputs that contain a `\\boxed{}` answer.
    """
    text = output
    if _OPEN in text:
        body = text[text.rindex(_OPEN) + len(_OPEN) :]
        if _CLOSE not in body and finish_reason == "length":
            return None, "truncated"
        text = body.split(_CLOSE, 1)[0]
    elif finish_reason == "length":
        return None, "truncated"
    text = _LABEL.sub("", text.replace(_CLOSE, "")).strip()
    if not text:
        return None, "empty"
    if _normalise(text) == _normalise(original):
        return None, "unchanged"
    if len(text) < MIN_LENGTH_RATIO * len(original.strip()):
        return None, "too_short"
    if "\\boxed" in text:
        return None, "leaks_answer"
    return text, "kept"


@dataclass(frozen=True)
class MQRConfig:
    """Options of `benchctl augment mqr`."""

    model: str = field(default="", metadata={"help": "instruction model: HF folder, hub id or benchctl run folder"})
    out: str = field(default="", metadata={"help": "output JSON Lines task file"})
    task: str = field(default="math_train", metadata={"help": "math task whose problems are reformulated"})
    aspects: tuple[str, ...] = field(default=ASPECTS, metadata={"help": "subset of background, term, subproblem"})
    limit: int | None = field(default=None, metadata={"help": "reformulate only the first N problems"})
    data_dir: str | None = field(default=None, metadata={"help": "local benchmark folder; None -> env / hub"})
    keep_original: bool = field(default=True, metadata={"help": "also write the original rows (MathForge: 4x set)"})
    temperature: float = field(default=0.7, metadata={"help": "sampling temperature [our choice]"})
    top_p: float = field(default=0.95, metadata={"help": "nucleus top-p"})
    max_tokens: int = field(default=1024, metadata={"help": "max new tokens per reformulation"})
    seed: int = field(default=0, metadata={"help": "sampling seed"})
    max_model_len: int | None = field(default=None, metadata={"help": "engine context length; None -> model's"})
    chunk_prompts: int = field(default=512, metadata={"help": "prompts per generation chunk"})
    sources: Mapping[str, str] = field(default_factory=dict, metadata={"help": "key -> flag|env|default"})

    def __post_init__(self) -> None:
        bad = [a for a in self.aspects if a not in MQR_INSTRUCTIONS]
        if bad or not self.aspects:
            raise BenchctlError(f"unknown MQR aspect(s) {bad or '(none)'}; choose from: {', '.join(ASPECTS)}")
        if self.limit is not None:
            check_range("limit", self.limit, 1)


@dataclass(frozen=True)
class MQRResult:
    """Where the file went and what was kept: counts[aspect][reason] (reason 'kept' or a REJECT_REASONS entry)."""

    out: Path
    problems: int
    rows: int
    counts: dict

    def rich_table(self):
        """Kept / rejected per aspect (rich)."""
        from rich.table import Table

        table = Table(title=f"MQR -> {self.out} ({self.rows} rows from {self.problems} problems)")
        for name in ("aspect", "kept", *REJECT_REASONS):
            table.add_column(name, justify="left" if name == "aspect" else "right")
        for aspect, c in self.counts.items():
            table.add_row(aspect, *(str(c.get(r, 0)) for r in ("kept", *REJECT_REASONS)))
        return table


def original_row(problem) -> dict:
    """A problem as a task-file row (shared/benchmarks math schema)."""
    meta = {k: v for k, v in dict(problem.meta).items() if isinstance(v, (str, int, float, bool)) or v is None}
    return {**meta, "id": problem.id, "problem": problem.question, "answer": problem.gold}


def reformulated_row(problem, aspect: str, question: str) -> dict:
    """A kept reformulation as a task-file row; the original's solution is dropped (it no longer matches)."""
    row = {k: v for k, v in original_row(problem).items() if k not in ("solution", "source")}
    row.update(id=f"{problem.id}#mqr-{aspect}", problem=question, source=f"mqr:{aspect}", original_id=problem.id)
    return row


class _PromptOnly:
    """Adapter for `Engine.render(task, problem)`: the problem's text *is* the prompt (one user turn)."""

    name = "mqr"

    def messages(self, problem) -> list[dict]:
        return [{"role": "user", "content": problem.question}]

    def prompt_text(self, problem) -> str:
        return problem.question


def run_mqr(config: MQRConfig) -> MQRResult:
    """Reformulate every problem along every aspect with `config.model`; write the task file + stats atomically."""
    from benchctl.engine import Engine, SamplingConfig
    from benchctl.evaluation import config_record
    from benchctl.results.runs import resolve_model
    from benchctl.results.store import write_atomic, write_json
    from benchctl.tasks import Problem, get_task

    task = get_task(config.task)
    if task.kind != "math":
        raise BenchctlError(f"MQR reformulates math questions; task {task.name!r} is {task.kind}")
    problems = task.load(config.data_dir, config.limit)
    jobs = [(p, a) for p in problems for a in config.aspects]  # (problem, aspect) per prompt
    engine = Engine(resolve_model(config.model).path, seed=config.seed, max_model_len=config.max_model_len)
    adapter = _PromptOnly()
    prompts = [
        engine.render(adapter, Problem(f"{p.id}#{a}", build_prompt(p.question, p.gold, a), "", {})) for p, a in jobs
    ]
    sampling = SamplingConfig(
        n=1, temperature=config.temperature, top_p=config.top_p, max_tokens=config.max_tokens, seed=config.seed
    )
    counts = {a: dict.fromkeys(("kept", *REJECT_REASONS), 0) for a in config.aspects}
    kept: dict[int, dict] = {}
    for index, samples in engine.generate_iter(prompts, sampling, chunk_prompts=config.chunk_prompts):
        problem, aspect = jobs[index]
        question, reason = parse_reformulation(samples[0].text, problem.question, samples[0].finish_reason)
        counts[aspect][reason] += 1
        if question is not None:
            kept[index] = reformulated_row(problem, aspect, question)
    rows = [original_row(p) for p in problems] if config.keep_original else []
    rows += [kept[i] for i in sorted(kept)]
    out = Path(config.out)
    write_atomic(
        out,
        lambda tmp: tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"),
    )
    write_json(
        out.with_name(out.name + ".stats.json"),
        {"counts": counts, "problems": len(problems), "rows": len(rows), "config": config_record(config)},
    )
    return MQRResult(out, len(problems), len(rows), counts)
