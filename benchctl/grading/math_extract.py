"""Final-answer extraction without sympy: the last `\\boxed{...}` of a completion (pure Python, cheap).

The rule is Hendrycks' `last_boxed_only_string` + `remove_boxed` (the rule `shared/benchmarks/SOURCES.md` used to
build the gold answers, and Qwen2.5-Math's `extract_answer` for boxed outputs):
1. take the last `\\boxed` (`\\boxed*` too); if there is none, the last `\\fbox`;
2. followed by `{`: the text up to the matching `}` (nested braces balanced);
3. followed by a space (`\\boxed 5`): the text up to the next `$`, newline or end;
4. strip; an empty or unbalanced box counts as no box (None).
"""

from __future__ import annotations

import re

_BOX = re.compile(r"\\(?:boxed\*?|fbox)")
_LEADING_INT = re.compile(r"\s*([-+]?\d+)")


def last_boxed(text: str) -> str | None:
    """Content of the last `\\boxed{...}` (or `\\fbox{...}`) in `text`, None if there is none."""
    starts = [m for m in _BOX.finditer(text) if m.group(0) != "\\fbox"]
    if not starts:
        starts = list(_BOX.finditer(text))
    for match in reversed(starts):
        content = _box_content(text, match.end())
        if content:
            return content
    return None


def _box_content(text: str, pos: int) -> str | None:
    """Content of the box whose macro ends at `pos` (see the module rule), None if empty or unbalanced."""
    if pos < len(text) and text[pos] == "{":
        depth = 0
        for i in range(pos, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    return text[pos + 1 : i].strip() or None
        return None  # unbalanced (truncated completion)
    if pos < len(text) and text[pos] == " ":
        rest = text[pos + 1 :]
        end = min((j for j in (rest.find("$"), rest.find("\n")) if j >= 0), default=len(rest))
        return rest[:end].strip() or None
    return None


def leading_integer(text: str) -> str | None:
    """The integer at the very start of `text` (after whitespace), e.g. "10" for "10\\n3+4=7"; None if absent."""
    match = _LEADING_INT.match(text)
    return match.group(1) if match else None
