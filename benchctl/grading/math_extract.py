"""Final-answer extraction without sympy: the last `\\boxed{...}` of a completion (pure Python, cheap).

The box rule is Hendrycks' `last_boxed_only_string` + `remove_boxed` (the rule `shared/benchmarks/SOURCES.md` used
to build the gold answers, and Qwen2.5-Math's `extract_answer` for boxed outputs):
1. take the last `\\boxed` (`\\boxed*` too); if there is none, the last `\\fbox`;
2. followed by `{`: the text up to the matching `}` (nested braces balanced);
3. followed by a space (`\\boxed 5`): the text up to the next `$`, newline or end;
4. strip; an empty or unbalanced box counts as no box.

`final_boxed_answer` adds math-verify's multi-answer rule (`parser.py: lazy_latex_regex`, up to 1 + 5 boxes joined
by `,` / `and` / `or`): "$\\boxed{2}$ and $\\boxed{3}$" gives "2, 3", which math-verify then reads as the set {2, 3}.
"""

from __future__ import annotations

import re

_LEADING_INT = re.compile(r"\s*([-+]?\d+)")
_JOINER = re.compile(r"\s*\$*\s*(?:,?\s*and|,?\s*or|,)\s*\$*\s*", re.DOTALL)
MAX_JOINED_BOXES = 6  # math-verify: first_ + next1_..next5_ groups


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


def final_boxed_answer(text: str) -> str | None:
    """The last box, joined with the boxes right before it when only `,`/`and`/`or` separate them."""
    parts: list[tuple[int, int, str]] = []
    for box in _boxes_from_end(text):
        if parts and (len(parts) == MAX_JOINED_BOXES or not _JOINER.fullmatch(text[box[1] : parts[-1][0]])):
            break
        parts.append(box)
    return ", ".join(content for _, _, content in reversed(parts)) if parts else None


def leading_integer(text: str) -> str | None:
    """The integer at the very start of `text` (after whitespace), e.g. "10" for "10\\n3+4=7"; None if absent."""
    match = _LEADING_INT.match(text)
    return match.group(1) if match else None
