"""Read-only descriptions of the registered estimators, built from their docstrings and parameter dataclasses.

Docstring layout every estimator follows (checked by tests/estimators/test_docs.py):
first line = description; then `Reference:`, `Formula:`, `Shapes:`, `Deviations:` fields.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
from dataclasses import dataclass
from typing import Any

from benchctl.estimators.registry import get_spec, registered_names

ARXIV = re.compile(r"arXiv:\d{4}\.\d{4,5}")
_FIELD = re.compile(r"^([A-Z][A-Za-z]+):\s*(.*)$")


@dataclass(frozen=True)
class HyperParam:
    name: str
    default: Any
    help: str


@dataclass(frozen=True)
class EstimatorInfo:
    name: str
    kind: str  # "base" | "modifier"
    description: str  # first docstring line
    reference: str  # first arXiv id of the docstring
    hyperparameters: tuple[HyperParam, ...]  # modifiers list `base` first
    loss_agg: str | None  # contract.md §6 default; None = same as the base (modifiers)
    formula: str
    source: str  # the full Reference field
    notes: tuple[str, ...]  # deviations and [our choice] decisions
    choices: tuple[str, ...]  # only the [our choice] decisions, compact (for `benchctl estimators --help`)
    token_scores: str | None  # importance scores a token-level estimator needs
    mechanism: str | None  # the per-step evidence that its mechanism acted (`mechanism/<name>/acted`), or None


def doc_fields(doc: str) -> dict[str, str]:
    """`Name: text` fields of a docstring (continuation lines joined), plus "description" = the first line."""
    lines = inspect.cleandoc(doc or "").splitlines()
    fields = {"description": lines[0].strip() if lines else ""}
    current = None
    for line in lines[1:]:
        match = _FIELD.match(line.strip())
        if match:
            current = match.group(1)
            fields[current] = match.group(2)
        elif current and line.strip():
            fields[current] += " " + line.strip()
        else:
            current = None
    return fields


def _notes(fn, fields: dict[str, str], params: tuple[HyperParam, ...]) -> tuple[str, ...]:
    module_doc = inspect.cleandoc(getattr(sys.modules.get(fn.__module__), "__doc__", None) or "")
    paragraphs = [" ".join(p.split()) for p in module_doc.split("\n\n")]
    notes = [p for p in paragraphs if "Deviation" in p or "[our choice]" in p]
    if fields.get("Deviations"):
        notes.append("Deviations: " + fields["Deviations"])
    notes += [f"{hp.name}: {hp.help}" for hp in params if "[our choice]" in hp.help]
    return tuple(dict.fromkeys(notes))


def _choices(notes: tuple[str, ...], params: tuple[HyperParam, ...]) -> tuple[str, ...]:
    picked = [n for n in notes if "[our choice]" in n and not any(n.startswith(f"{hp.name}:") for hp in params)]
    defaults = [f"{hp.name}={hp.default}" for hp in params if "[our choice]" in hp.help]
    if defaults:
        picked.append("[our choice] defaults " + ", ".join(defaults))
    return tuple(picked)


def estimator_info(name: str) -> EstimatorInfo:
    """Everything `benchctl estimators show NAME` prints; UnknownNameError for an unknown name."""
    spec = get_spec(name)
    doc = inspect.getdoc(spec.fn) or ""
    fields = doc_fields(doc)
    params = tuple(HyperParam(f.name, f.default, f.metadata.get("help", "")) for f in dataclasses.fields(spec.params))
    if spec.kind == "modifier":
        params = (HyperParam("base", "grpo", "base estimator whose advantage this modifies"),) + params
    notes = _notes(spec.fn, fields, params)
    found = ARXIV.search(fields.get("Reference", doc))
    return EstimatorInfo(
        name=spec.name,
        kind=spec.kind,
        description=fields["description"],
        reference=found.group(0) if found else "",
        hyperparameters=params,
        loss_agg=spec.loss_agg,
        formula=fields.get("Formula", ""),
        source=fields.get("Reference", ""),
        notes=notes,
        choices=_choices(notes, params),
        token_scores=spec.token_scores,
        mechanism=spec.mechanism or ("it changed its base's advantages" if spec.kind == "modifier" else None),
    )


def list_estimators() -> list[EstimatorInfo]:
    """Every registered estimator (built-ins first, then plug-ins in registration order)."""
    return [estimator_info(name) for name in registered_names()]
