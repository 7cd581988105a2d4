"""Parent side of the sandbox result channel: strict parsing of the harness records (`sandbox_harness.py`).

The channel carries one Python literal per line (read with `ast.literal_eval`) in a fixed order: one `hello`
(written before the candidate runs, so its isolation flags are trustworthy), then either one terminal `stage`
failure record (compile / exec / setup), or one record per expression with `i` = 0, 1, 2, ... and a final `done`.
Anything else (a record out of order, a
duplicate, a value in an unknown encoding) is a protocol error, which graders count as a failure: a candidate
writing to the channel itself can only break its own run.  Values are rebuilt from the tagged encoding into fresh
builtin objects, so no candidate object ever reaches the grading process.
"""

from __future__ import annotations

import ast
import collections
from dataclasses import dataclass, field
from typing import Any

MAX_DEPTH = 110  # a little above the harness' own limit


class ProtocolError(ValueError):
    """The channel content does not follow the record order or the value encoding."""


@dataclass(frozen=True)
class Outcome:
    """What evaluating one expression in the child gave."""

    kind: str  # "value" | "exception" | "unverifiable"
    value: Any = None  # the decoded value (kind == "value")
    exc: str = ""  # exception type name (kind == "exception")
    message: str = ""  # exception text, or why the value is unverifiable


@dataclass(frozen=True)
class StageError:
    """The candidate (or the setup code) failed before any expression ran."""

    stage: str  # "compile" | "exec" | "setup"
    exc: str
    message: str


@dataclass(frozen=True)
class ChannelReport:
    """Parsed channel content."""

    hello: dict = field(default_factory=dict)  # isolation flags: net, fs, dropped, notes
    stage_error: StageError | None = None
    outcomes: tuple[Outcome, ...] = ()
    done: bool = False  # the harness reached its final record
    protocol_error: str = ""  # non-empty when the records broke the protocol


_SEQ = {"l": list, "t": tuple, "S": set, "F": frozenset, "dq": collections.deque}
_MAP = {"d": dict, "od": collections.OrderedDict, "dd": None, "ct": collections.Counter}


def decode(node: Any, depth: int = 0) -> Any:
    """Inverse of the harness' `encode`; raises ProtocolError on anything it would never produce."""
    if depth > MAX_DEPTH:
        raise ProtocolError("value nested too deeply")
    if node is None or type(node) in (bool, str):
        return node
    if type(node) is not list or not node or type(node[0]) is not str:
        raise ProtocolError(f"bad value node {str(node)[:60]!r}")
    tag, rest = node[0], node[1:]
    try:
        if tag == "i" and len(rest) == 1:
            return int(rest[0], 16)
        if tag == "f" and len(rest) == 1:
            return float.fromhex(rest[0])
        if tag == "c" and len(rest) == 2:
            return complex(float.fromhex(rest[0]), float.fromhex(rest[1]))
        if tag in ("b", "B") and len(rest) == 1:
            return (bytes if tag == "b" else bytearray)(bytes.fromhex(rest[0]))
        if tag in _SEQ:
            return _SEQ[tag](decode(x, depth + 1) for x in rest)
        if tag in _MAP:
            pairs = [(decode(k, depth + 1), decode(v, depth + 1)) for k, v in rest]
            if tag == "dd":
                return collections.defaultdict(None, pairs)
            return _MAP[tag](dict(pairs)) if tag == "ct" else _MAP[tag](pairs)
    except (TypeError, ValueError) as exc:  # unhashable set member, bad hex, bad pair, ...
        raise ProtocolError(f"bad {tag!r} value: {exc}") from None
    raise ProtocolError(f"unknown value tag {tag!r}")


def _outcome(rec: dict) -> Outcome:
    if "v" in rec:
        return Outcome("value", value=decode(rec["v"]))
    if "unverifiable" in rec:
        return Outcome("unverifiable", message=str(rec["unverifiable"]))
    if "exc" in rec:
        return Outcome("exception", exc=str(rec["exc"]), message=str(rec.get("msg", "")))
    raise ProtocolError(f"bad expression record {str(rec)[:80]!r}")


def parse_channel(data: bytes, n_expressions: int) -> ChannelReport:
    """Check the record order and decode the values.  A final line without its newline (the child was killed
    while writing) is dropped, not an error."""
    lines = data.split(b"\n")[:-1]
    hello: dict = {}
    outcomes: list[Outcome] = []
    try:
        for idx, line in enumerate(lines):
            rec = ast.literal_eval(line.decode("ascii"))
            if type(rec) is not dict:
                raise ProtocolError("record is not an object")
            if idx == 0:
                if type(rec.get("hello")) is not dict:
                    raise ProtocolError("first record is not hello")
                hello = rec["hello"]
            elif "stage" in rec and not outcomes and idx == len(lines) - 1:
                err = StageError(str(rec["stage"]), str(rec.get("exc", "")), str(rec.get("msg", "")))
                return ChannelReport(hello, stage_error=err)
            elif rec.get("i") == len(outcomes) and len(outcomes) < n_expressions and type(rec["i"]) is int:
                outcomes.append(_outcome(rec))
            elif rec.get("done") == n_expressions == len(outcomes) and idx == len(lines) - 1:
                return ChannelReport(hello, outcomes=tuple(outcomes), done=True)
            else:
                raise ProtocolError(f"unexpected record #{idx}: {line[:80]!r}")
    except (ProtocolError, ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        return ChannelReport(hello, outcomes=tuple(outcomes), protocol_error=str(exc)[:200])
    return ChannelReport(hello, outcomes=tuple(outcomes))
