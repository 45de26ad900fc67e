#!/usr/bin/env python3
"""The last word of a test run: how many tests passed, failed, are not implemented yet (a handout's
stubs) and were skipped for another reason (no GPU, a GPU without a feature), read from CTest's
JUnit report. CTest counts a skipped test as passed ("100% tests passed"); a student whose
exercises are all stubs must not read that as done.

    scripts/test_summary.py build/release/junit.xml     # prints the summary; exit 1 if any failed
"""

from __future__ import annotations

import collections
import re
import sys
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

_NOT_IMPLEMENTED = re.compile(r"not implemented|NOT IMPLEMENTED")
_REASON = re.compile(r"(?:Skipped\s*\n|skipped: |SKIP\S*\s+)(.+)")


def classify(case: Element) -> tuple[str, str]:
    """(status, reason) of one <testcase>: passed, failed, not implemented or skipped."""
    out = (case.findtext("system-out") or "") + "\n" + (case.findtext("system-err") or "")
    if case.find("failure") is not None or case.find("error") is not None or case.get("status") == "fail":
        return "failed", ""
    skipped = case.find("skipped") is not None or case.get("status") in ("notrun", "disabled")
    if not skipped:
        return "passed", ""
    if _NOT_IMPLEMENTED.search(out):
        return "not implemented", ""
    m = _REASON.search(out)
    reason = (
        m.group(1).strip()
        if m
        else (case.find("skipped").get("message", "") if case.find("skipped") is not None else "")
    )
    return "skipped", reason[:100]


def summarize(path: str) -> tuple[collections.Counter, collections.Counter, list[str]]:
    root = ET.parse(path).getroot()
    counts, reasons, failed = collections.Counter(), collections.Counter(), []
    for case in root.iter("testcase"):
        status, reason = classify(case)
        counts[status] += 1
        if status == "skipped":
            reasons[reason or "no reason given"] += 1
        if status == "failed":
            failed.append(case.get("name", "?"))
    return counts, reasons, failed


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    try:
        counts, reasons, failed = summarize(sys.argv[1])
    except (OSError, ET.ParseError) as e:
        sys.exit(f"test_summary: {sys.argv[1]}: {e}")
    for name in failed:
        print(f"  failed: {name}")
    for reason, n in reasons.most_common(5):
        print(f"  skipped ({n}): {reason}")
    line = (
        f"{counts['passed']} passed, {counts['failed']} failed, {counts['not implemented']} not implemented, "
        f"{counts['skipped']} skipped"
    )
    if counts["not implemented"]:
        line += " (not implemented: exercises still to write; they earn nothing yet)"
    print(f"tests: {line}")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
