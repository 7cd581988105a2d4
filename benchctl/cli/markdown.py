"""Text helpers shared by the registries' listings (`benchctl estimators`, `benchctl losses`): a default's text and
a Markdown table cell or code span."""

from __future__ import annotations


def format_value(value) -> str:
    """A hyperparameter's value as the listings print it: none, true/false, else str()."""
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def cell(text) -> str:
    """`text` on one line with its pipes escaped: a Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def code(text: str) -> str:
    """`text` on one line as a Markdown code span (double backticks when it holds one)."""
    text = " ".join(text.split())
    return f"`` {text} ``" if "`" in text else f"`{text}`"
