"""Task base class, the `Problem` record and the task registry.

A task knows where its data lives (a canonical hub dataset id, or a local JSON Lines file in the schema of
`shared/benchmarks/SOURCES.md`), how to prompt a model (`messages` for chat models, `prompt_text` for plain
tokenizers), how to extract an answer from a completion and how to grade a batch of completions.

Registry (style.md item 4): `@register_task("name")` on a `Task` subclass; registering the same name twice with a
different class is an error; `get_task(unknown)` raises `UnknownNameError` listing the known names.
"""

from __future__ import annotations

import abc
import inspect
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from benchctl.errors import BenchctlError, UnknownNameError
from benchctl.grading.verdict import Verdict

DATA_DIR_ENV = "BENCHCTL_DATA_DIR"
DEFAULT_TIMEOUT = 5.0  # seconds per graded item [our choice]: math-verify's own default bound


@dataclass(frozen=True)
class Problem:
    """One benchmark item in the common schema."""

    id: str
    question: str  # problem text (math) or the MBPP prompt text
    gold: str  # gold final answer (math) or "" (code)
    meta: Mapping[str, Any] = field(default_factory=dict)  # level/subject/...; mbpp: test_list, code, ...


class Task(abc.ABC):
    """A benchmark: data source, prompt format, answer extraction and batched grading."""

    name: ClassVar[str] = ""  # set by @register_task
    kind: ClassVar[str] = "math"  # "math" | "code"
    hub_id: ClassVar[str | None] = None  # canonical hub dataset id ("id" or "id:config"), None if synthetic
    local_file: ClassVar[str | None] = None  # file name inside a data dir (shared/benchmarks schema)
    description: ClassVar[str] = ""
    known_size: ClassVar[int] = 0  # rows of the default split, for `benchctl tasks` without local data
    # The default evaluation task when this one is trained on (`benchctl train`); None: --eval-task is required.
    held_out_task: ClassVar[str | None] = None
    # Whether completions reason before their final answer (a reasoning span OAR can reshape); False: the
    # completion is the answer, so token-level estimators reduce to their base and are refused.
    shows_work: ClassVar[bool] = True
    # New tokens a complete answer needs at most (EOS included), for samplers that size generation by the task;
    # None: unknown (the trainer's own default applies).
    max_new_tokens: ClassVar[int | None] = None

    @abc.abstractmethod
    def load(self, data_dir: Path | str | None = None, limit: int | None = None) -> list[Problem]:
        """Problems of this task: from `data_dir` (or $BENCHCTL_DATA_DIR) if given, else from the hub."""

    @abc.abstractmethod
    def prompt_text(self, problem: Problem) -> str:
        """Plain prompt for tokenizers without a chat template."""

    def messages(self, problem: Problem) -> list[dict]:
        """Chat messages for chat models (one user turn)."""
        return [{"role": "user", "content": self.prompt_text(problem)}]

    @abc.abstractmethod
    def extract(self, completion: str) -> str | None:
        """The final answer (math) or code block (code) in `completion`; None when there is none."""

    @abc.abstractmethod
    def grade(
        self, items: Sequence[tuple[Problem, str]], *, workers: int | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> list[Verdict]:
        """One verdict per (problem, completion), in order; never raises for a bad completion."""

    def answer_span(self, completion: str) -> tuple[int, int] | None:
        """Character range [start, end) of the final answer `extract` reads in `completion`, None without one.

        Default: the last `\\boxed{}`'s contents when there is a box (what the math extraction reads first); else
        the last occurrence of the extracted text [our choice: math-verify's box-free extraction gives no offsets].
        """
        box = last_box_span(completion)
        if box is not None:
            return box
        extracted = self.extract(completion)
        start = completion.rfind(extracted) if extracted else -1
        return (start, start + len(extracted)) if start >= 0 else None

    def size(self, data_dir: Path | str | None = None) -> int:
        """Rows in the local file when one is found, else the known size of the default split."""
        path = local_path(self.local_file, data_dir)
        if path is None:
            return self.known_size
        with open(path, "rb") as fh:
            return sum(1 for line in fh if line.strip())


def render_prompt(tokenizer, task: Task, problem: Problem) -> str:
    """The prompt a model is given for `problem`: the tokenizer's chat template applied to `task.messages` (with the
    assistant turn opened) when the tokenizer has one, else `task.prompt_text`. Every sampler uses it (the engine,
    `benchctl tasks difficulty`), so a chat model is measured on the prompt it is trained and evaluated on."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(task.messages(problem), tokenize=False, add_generation_prompt=True)
    return task.prompt_text(problem)


def normalise_question(text: str) -> str:
    """Whitespace-normalised question text: a question's identity for splits and overlap checks."""
    return " ".join(text.split())


def last_box_span(text: str) -> tuple[int, int] | None:
    """Character range of the (stripped) contents of the last valid `\\boxed{}` (or `\\fbox{}`), as `last_boxed`
    reads them; None when there is no valid box."""
    from benchctl.grading.math_extract import _boxes_from_end

    for start, _end, content in _boxes_from_end(text):
        macro = "\\boxed" if text.startswith("\\boxed", start) else "\\fbox"
        pos = start + len(macro) + (1 if text.startswith("*", start + len(macro)) and macro == "\\boxed" else 0)
        inner = pos + 1  # after "{" or the space of `\\boxed 5`
        first = text.index(content, inner)  # the stripped contents begin at the first non-space character
        return first, first + len(content)
    return None


def resolve_data_dir(data_dir: Path | str | None) -> Path | None:
    """`data_dir` if given, else $BENCHCTL_DATA_DIR, else None (meaning: the hub)."""
    if data_dir is None or str(data_dir) == "":
        env = os.environ.get(DATA_DIR_ENV, "")
        return Path(env) if env else None
    return Path(data_dir)


def local_path(file_name: str | None, data_dir: Path | str | None) -> Path | None:
    """Path of `file_name` in the resolved data dir if that file exists, else None."""
    root = resolve_data_dir(data_dir)
    if root is None or file_name is None:
        return None
    path = root / file_name
    return path if path.is_file() else None


_REGISTRY: dict[str, type[Task]] = {}


def register_task(name: str):
    """Class decorator: register a `Task` subclass under `name` (error on a clash with a different class)."""

    def wrap(cls: type[Task]) -> type[Task]:
        if not (inspect.isclass(cls) and issubclass(cls, Task)):
            raise BenchctlError(f"register_task({name!r}) needs a Task subclass, got {cls!r}")
        old = _REGISTRY.get(name)
        if old is not None and old is not cls:
            raise BenchctlError(f"task {name!r} is already registered to {old.__qualname__}")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return wrap


def get_task(name: str, **options: Any) -> Task:
    """An instance of the task registered as `name`; `options` go to its constructor (e.g. split, seed)."""
    cls = _REGISTRY.get(name)
    if cls is None:
        raise UnknownNameError("task", name, _REGISTRY)
    params = inspect.signature(cls.__init__).parameters.values() if cls.__init__ is not object.__init__ else []
    valid = [p.name for p in params if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    bad = sorted(set(options) - set(valid))
    if bad:
        raise BenchctlError(
            f"task {name!r} has no option(s) {', '.join(bad)}; valid options: {', '.join(valid) or 'none'}"
        )
    return cls(**options)


def task_class(name: str) -> type[Task] | None:
    """The class registered as `name`, or None (class attributes such as `max_new_tokens`, without building it)."""
    return _REGISTRY.get(name)


def list_tasks() -> list[Task]:
    """Default instances of every registered task, sorted by name."""
    return [_REGISTRY[name]() for name in sorted(_REGISTRY)]
