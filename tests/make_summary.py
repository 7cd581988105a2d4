"""The last lines of `make test`: which parts ran (lint, main suite, veRL suite), how each ended, and the totals.

    python tests/make_summary.py DIR

DIR holds what the Makefile's `test` recipe left there: `<part>.rc` (the part's exit status) for each part that
ran, `<part>.xml` (pytest's JUnit report) for the two suites, `<part>.skipped` (why a part did not run). Exits 1
when a part that ran failed or the main suite did not run, else 0. Standard library only: it runs before anything
is known to work.
"""

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

PARTS = (("lint", "lint (ruff check, ruff format --check)"), ("main", "main suite"), ("verl", "veRL suite"))
REQUIRED = {"lint", "main"}  # the veRL suite may be skipped where verl==0.9.1 cannot be installed


def counts(xml: Path) -> dict[str, int]:
    """passed / failed / errors / skipped from a pytest JUnit report (one <testsuite>, or several in <testsuites>)."""
    root = ET.parse(xml).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = {key: sum(int(s.get(key, 0)) for s in suites) for key in ("tests", "failures", "errors", "skipped")}
    passed = total["tests"] - total["failures"] - total["errors"] - total["skipped"]
    return {"passed": passed, "failed": total["failures"], "errors": total["errors"], "skipped": total["skipped"]}


def part_line(folder: Path, part: str) -> tuple[str, bool, dict[str, int] | None]:
    """One part's line, whether it failed (or, for a required part, did not run), and its test counts."""
    rc_file, xml, skipped = folder / f"{part}.rc", folder / f"{part}.xml", folder / f"{part}.skipped"
    if not rc_file.exists():
        why = skipped.read_text().strip() if skipped.exists() else "did not run"
        return f"NOT RUN ({why})", part in REQUIRED, None
    rc = int(rc_file.read_text().strip() or 1)
    found = counts(xml) if xml.exists() else None
    tally = "" if found is None else ", ".join(f"{v} {k}" for k, v in found.items() if v or k in ("passed", "failed"))
    state = "passed" if rc == 0 else f"FAILED (exit {rc})"
    return f"{state}{': ' + tally if tally else ''}", rc != 0, found


def main(folder: Path) -> int:
    print("\n==== make test ====")
    failed, totals = False, {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    for part, title in PARTS:
        line, bad, found = part_line(folder, part)
        failed |= bad
        for key, value in (found or {}).items():
            totals[key] += value
        print(f"{title:42s} {line}")
    print(f"make test: {'FAILED' if failed else 'passed'}")
    print(
        f"total: {totals['passed']} passed, {totals['failed'] + totals['errors']} failed, {totals['skipped']} skipped"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
