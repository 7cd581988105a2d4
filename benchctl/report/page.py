"""The report as pages: markdown (figures linked as plots/<name>.png) and one self-contained HTML page (figures
inline as base64 PNG), both from the same list of `Section`s (`benchctl.report.sections` builds it)."""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass

import pandas as pd

from benchctl.report.render import Kind, cell_text, kind_of


@dataclass(frozen=True)
class Section:
    """A heading (level 2, or 3 inside "details"), a text ('* ' lines become a list), figures, then a table."""

    heading: str
    text: str = ""
    table: pd.DataFrame | None = None
    figures: tuple[str, ...] = ()
    level: int = 2
    anchor: str = ""


def markdown_table(frame: pd.DataFrame) -> str:
    """GitHub markdown table (pipes in cells escaped)."""
    if frame.empty:
        return "_(empty)_\n"
    head = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = [
        "| " + " | ".join(cell_text(v).replace("|", "\\|") for v in row) + " |" for row in frame.itertuples(index=False)
    ]
    return "\n".join([head, rule, *body]) + "\n"


def markdown_page(title: str, lead: str, sections: list[Section], figures: dict[str, bytes]) -> str:
    """The page in markdown; a section's figures that were not drawn are left out."""
    parts = [f"# {title}\n\n{lead}\n"]
    for s in sections:
        parts.append(f"{'#' * s.level} {s.heading}\n" + (f"\n{s.text}\n" if s.text else ""))
        parts += [f"![{name}](plots/{name}.png)\n" for name in s.figures if name in figures]
        if s.table is not None:
            parts.append(markdown_table(s.table))
    return "\n".join(parts)


_CLASSES = {  # a cell's kind (`render.Kind`) -> its CSS classes; numbers right-aligned ('n')
    Kind.NUMBER: "n",
    Kind.SIGNIFICANT: "sig n",
    Kind.UP: "sig up n",
    Kind.DOWN: "sig down n",
    Kind.BASELINE: "base n",
    Kind.FEW: "few",
    Kind.WARN: "warn",
    Kind.TEXT: "",
}


def _td(value) -> str:
    """One cell, styled by its kind; long prose may wrap ('text'); a difference's mde goes on a line of its own, so
    a verdict's five k fit a 1280-px screen."""
    text, kind = cell_text(value), kind_of(value)
    wrap = "text" if len(text) > 40 and kind in (Kind.TEXT, Kind.FEW, Kind.WARN) else ""
    css = " ".join(c for c in (_CLASSES[kind], wrap) if c)
    shown = html.escape(text).replace(" (mde ", "<br>(mde ")
    return f"<td class='{css}'>{shown}</td>" if css else f"<td>{shown}</td>"


def _html_table(frame: pd.DataFrame, css: str = "") -> str:
    """A table; in the verdict (`css` 'verdict') a row holding the baseline's cells is greyed whole, elsewhere
    (the estimator x loss grid) only the baseline's cell."""
    if frame.empty:
        return "<p><em>(empty)</em></p>"
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "".join(
        ("<tr class='base'>" if css == "verdict" and any(kind_of(v) == Kind.BASELINE for v in row) else "<tr>")
        + "".join(_td(v) for v in row)
        + "</tr>"
        for row in frame.itertuples(index=False)
    )
    table = f"<table class='{css}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f"<div class='scroll'>{table}</div>"  # a table wider than the page scrolls inside it


_CSS = (
    "body{font-family:system-ui,sans-serif;margin:1.5em 2em;max-width:1400px}h1{margin:0 0 .2em}"
    "h2{margin:1.4em 0 .3em;border-bottom:1px solid #ddd}h3{margin:1.2em 0 .3em}p.lead{margin:0 0 .4em;color:#333}"
    "nav{font-size:13px;margin-bottom:.5em}nav a{margin-right:1em}table{border-collapse:collapse;font-size:13px;"
    "margin:.6em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}th{background:#f3f3f3}"
    "td.n{text-align:right;white-space:nowrap}table.verdict{font-size:14px}"
    "img{max-width:100%;display:block;margin:.6em 0}p.note,ul.note{color:#555;font-size:13px;"
    "margin:.3em 0}td.warn{background:#fff3cd}td.few{color:#777;font-style:italic}td.sig{font-weight:bold}"
    "td.up{background:#e3f4e6}td.down{background:#fbe4e2}tr.base td,td.base{background:#f7f7f7;color:#444}"
    "td.text{min-width:12em;max-width:36em;overflow-wrap:anywhere}th{overflow-wrap:break-word}"
    "div.scroll{overflow-x:auto;max-width:100%}"
)


def _html_text(text: str) -> str:
    """A section's text: a paragraph, then its '* ' lines (if any) as a list; `code` spans as <code>."""
    head, *items = [re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(t)) for t in text.split("\n* ")]
    out = f"<p class='note'>{head}</p>" if head.strip() else ""
    if items:
        out += "<ul class='note'>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"
    return out


def _html_section(s: Section, figures: dict[str, bytes]) -> str:
    tag = f"h{s.level}"
    parts = [
        f"<{tag} id='{s.anchor}'>{html.escape(s.heading)}</{tag}>"
        if s.anchor
        else f"<{tag}>{html.escape(s.heading)}</{tag}>"
    ]
    parts.append(_html_text(s.text) if s.text else "")
    for name in s.figures:
        if name in figures:
            data = base64.b64encode(figures[name]).decode("ascii")
            parts.append(f"<img alt='{html.escape(name)}' src='data:image/png;base64,{data}'>")
    if s.table is not None:
        parts.append(_html_table(s.table, "verdict" if s.anchor == "verdict" else ""))
    return "".join(parts)


def html_page(title: str, lead: str, sections: list[Section], figures: dict[str, bytes]) -> str:
    """One self-contained page: a lead line, links to the sections, then every section (no external file)."""
    links = " ".join(
        f"<a href='#{s.anchor}'>{html.escape(s.heading)}</a>" for s in sections if s.anchor and s.level == 2
    )
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1><p class='lead'>{html.escape(lead)}</p>"
        f"<nav>{links}</nav>"
    ]
    parts += [_html_section(s, figures) for s in sections]
    parts.append("</body></html>")
    return "\n".join(parts)
