"""Final-answer extraction without sympy: the last `\\boxed{...}` of a completion (pure Python, cheap).

The box rule is Hendrycks' `last_boxed_only_string` + `remove_boxed` (the rule `shared/benchmarks/SOURCES.md` used
to build the gold answers, and Qwen2.5-Math's `extract_answer` for boxed outputs):
1. take the last `\\boxed` (`\\boxed*` too); if there is none, the last `\\fbox`;
2. followed by `{`: the text up to the matching `}` (nested braces balanced);
3. followed by a space (`\\boxed 5`): the text up to the next `$`, newline or end;
4. strip; an empty or unbalanced box counts as no box.

`math_verify_box` is the parent-side shortcut of `benchctl.grading.math`: the box content that math-verify's own
extraction is CERTAIN to read from a completion, or None when math-verify may read something else (the whole
completion then goes to math-verify). Why its conditions suffice is in its docstring.
"""

from __future__ import annotations

import re

BOX_UNPARSED = "box not parsed: grade the whole completion"  # worker -> parent: math-verify reads on past the box
_LEADING_INT = re.compile(r"\s*([-+]?\d+)")
_ENV_DELIMITER = re.compile(r"(?<!\\)\$|(?<!\\)\\[\])]|^[^\[]*\](?=\s)")  # closers: `$`, `\]`, `\)`, ` [..] `
_PERCENT = re.compile(r"%|[Pp]ercent|[Pp]ct")  # math-verify's percent suffix after a LaTeX environment


def _boxes_from_end(text: str):
    """(start, end, content) of the valid (non-empty, balanced) boxes, last first; `\\fbox` only if no `\\boxed`.

    Scans backwards with `str.rfind`, so the cost is the tail of the text, not its length.
    """
    found_boxed = False
    for macro in ("\\boxed", "\\fbox"):
        if macro == "\\fbox" and found_boxed:
            return
        pos = len(text)
        while (i := text.rfind(macro, 0, pos)) >= 0:
            pos = i
            j = i + len(macro) + (1 if text.startswith("*", i + len(macro)) and macro == "\\boxed" else 0)
            span = _box_content(text, j)
            if span is not None:
                found_boxed = True
                yield i, span[1], span[0]


def _box_content(text: str, pos: int) -> tuple[str, int] | None:
    """(content, end index) of the box whose macro ends at `pos` (module rule), None if empty or unbalanced."""
    if pos < len(text) and text[pos] == "{":
        depth = 0
        for i in range(pos, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    content = text[pos + 1 : i].strip()
                    return (content, i + 1) if content else None
        return None  # unbalanced (e.g. a truncated completion)
    if pos < len(text) and text[pos] == " ":
        rest = text[pos + 1 :]
        end = min((j for j in (rest.find("$"), rest.find("\n")) if j >= 0), default=len(rest))
        content = rest[:end].strip()
        return (content, pos + 1 + end) if content else None
    return None


def last_boxed(text: str) -> str | None:
    """Content of the last `\\boxed{...}` (or `\\fbox{...}`) in `text`, None if there is none."""
    return next((content for _, _, content in _boxes_from_end(text)), None)


def math_verify_box(text: str) -> str | None:
    """The content of the only `\\boxed{...}` of `text` when math-verify 0.9.0 certainly grades exactly that, else None.

    math-verify (`parser.py`, boxed priority 0 as benchctl configures it) tries, rightmost end first: the plain box
    (`\\boxed{.+}` read by latex2sympy2_extended `extract_boxed_content(mode="last")`, which JOINS earlier boxes
    separated by < 10 characters or by `and`/`or`/`,`/`;` within 70), LaTeX environments holding boxes (all their
    boxes joined, chained by `,`/`and`/`or`, a percent word after them divides by 100) and "final answer is X.
    I hope" sentences (which beat an earlier box). With ONE box every box candidate reads the same content, so the
    answer is certain when: exactly one `\\boxed` and no `\\fbox` in the text; it is `\\boxed{` with balanced,
    non-empty content; no environment can close inside it (no unescaped `$`, `\\]`, `\\)`, nor `] ` without a `[`
    before it); no percent word after it; no "I hope" anywhere. A box that math-verify then fails to parse sends
    it on to other candidates: the caller must grade the whole text in that case (`benchctl.grading.math`).
    Several boxes, `\\fbox`, `\\boxed 5` and MATH few-shot endings return None.
    """
    start = text.find("\\boxed")
    if start < 0 or "I hope" in text or "\\fbox" in text or text.find("\\boxed", start + 1) >= 0:
        return None
    if not text.startswith("{", start + 6):
        return None
    depth = 0
    for end in range(start + 6, len(text)):
        if text[end] == "{":
            depth += 1
        elif text[end] == "}":
            depth -= 1
            if depth == 0:
                break
    else:
        return None  # unbalanced: a truncated completion
    raw = text[start + 7 : end]
    if not raw.strip() or _ENV_DELIMITER.search(raw) or _PERCENT.search(text, end):
        return None
    return raw.strip()


def leading_integer(text: str) -> str | None:
    """The integer at the very start of `text` (after whitespace), e.g. "10" for "10\\n3+4=7"; None if absent."""
    match = _LEADING_INT.match(text)
    return match.group(1) if match else None
