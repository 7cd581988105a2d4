"""Parse `--k` values: `1..256` (every power of two from 1 to 256), `1,5,10`, or a mix `1,3,8..64`."""

from __future__ import annotations

import re

from benchctl.errors import BenchctlError

_INT = re.compile(r"\d+")
_RANGE = re.compile(r"(\d+)\.\.(\d+)")
_HINT = "use e.g. --k 1..256 (powers of two) or --k 1,5,10"


def _is_pow2(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _item(text: str) -> list[int]:
    if _INT.fullmatch(text):
        value = int(text)
        if value < 1:
            raise BenchctlError(f"--k {text!r}: k must be >= 1; {_HINT}")
        return [value]
    match = _RANGE.fullmatch(text)
    if not match:
        raise BenchctlError(f"--k item {text!r} is neither an integer nor a range a..b; {_HINT}")
    low, high = int(match.group(1)), int(match.group(2))
    if not (_is_pow2(low) and _is_pow2(high)) or low > high:
        raise BenchctlError(
            f"--k range {text!r} needs powers of two a <= b (it lists the powers of two from a to b); {_HINT}"
        )
    return [1 << e for e in range(low.bit_length() - 1, high.bit_length())]


def parse_ks(text: str) -> tuple[int, ...]:
    """Sorted, de-duplicated k values; BenchctlError (-> one CLI line, exit 2) on any bad form."""
    items = [part.strip() for part in str(text).split(",")]
    if not text or not all(items):
        raise BenchctlError(f"--k {text!r} has an empty item; {_HINT}")
    return tuple(sorted({k for item in items for k in _item(item)}))
