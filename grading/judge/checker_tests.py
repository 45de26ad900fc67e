"""A case's tests: every output a run checks (one row of the driver: a size, an input, a named
case) is a test of its own, with its own weight in the version's correctness points, so one edge
case costs that case only. A run that ends before it has checked every size (a crash, a timeout, a
sticky CUDA error that leaves the device unusable for the rest) is charged to the size it was on,
and the sizes after it run again in a fresh process (runner: student.run_case).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import course_csv
from course_csv import Status as RowStatus

from .model import Status, TestResult

if TYPE_CHECKING:
    from judge.rubric import Rubric

_SIZE = re.compile(r"^\s*(?:(\d+)|2\^(\d+)\s*([+-]\s*\d+)?|1\s*<<\s*(\d+))\s*$")
SIZE_FLAGS = ("--n", "--sizes")
# the driver's skip reason for the rows after a sticky CUDA error (common/src/results.cpp)
UNUSABLE = "device unusable after an earlier error"


def size_value(text: str) -> int | None:
    """A driver's size syntax (common::parse_size): 1000, 2^20, 2^20-3, 2^20+7, 1<<20."""
    m = _SIZE.match(text)
    if not m:
        return None
    if m.group(1):
        return int(m.group(1))
    if m.group(2):
        return 2 ** int(m.group(2)) + int((m.group(3) or "0").replace(" ", ""))
    return 1 << int(m.group(4))


def size_list(args: list[str]) -> tuple[int, list[str]] | None:
    """(index of the value, the sizes as written) of the arguments' size list, or None."""
    for i, a in enumerate(args):
        for flag in SIZE_FLAGS:
            if a == flag and i + 1 < len(args):
                return i + 1, [s for s in args[i + 1].split(",") if s]
            if a.startswith(flag + "="):
                return i, [s for s in a.split("=", 1)[1].split(",") if s]
    return None


def with_sizes(args: list[str], sizes: list[str]) -> list[str]:
    """The arguments with their size list replaced by `sizes`."""
    found = size_list(args)
    if found is None:
        return list(args)
    i, _ = found
    out = list(args)
    if args[i].startswith(tuple(f + "=" for f in SIZE_FLAGS)):
        out[i] = args[i].split("=", 1)[0] + "=" + ",".join(sizes)
    else:
        out[i] = ",".join(sizes)
    return out


def label(row: dict[str, str]) -> str:
    """A test's name: the row's size and parameters (rows of one size and parameters are one test:
    a version's timing from the caller's vector is the same output as its headline row)."""
    parts = [f"n={row['n']}"] if row.get("n") not in (None, "") else []
    if row.get("params"):
        parts.append(row["params"])
    return " ".join(parts) or "the run"


def row_n(name: str) -> int | None:
    m = re.match(r"^n=(\d+)\b", name)
    return int(m.group(1)) if m else None


def what(name: str) -> str:
    """What a test checks, from its size and input: the edge cases a careful TA looks at first."""
    n = row_n(name)
    if n is None:
        return ""
    tokens = name.split()
    fill = {
        "fill=zeros": "every element 0: a compaction keeps none, a sort's keys are all equal",
        "fill=nonzero": "no element 0: a compaction keeps every element",
    }
    for tok, text in fill.items():
        if tok in tokens:
            return text
    if n == 0:
        return "an empty input"
    if n == 1:
        return "one element"
    if n == 2:
        return "two elements"
    if n & (n - 1) == 0:
        return f"a power of two (2^{n.bit_length() - 1})"
    for unit, word in ((1024, "a block of 1024"), (32, "a warp")):
        if n < unit * 4 and abs(n - round(n / unit) * unit) <= 3:
            return f"not a power of two, around {word}"
    return "not a power of two"


def weight(name: str, rubric: Rubric | None) -> float:
    """The rubric's weight of a test ([grading.case_weights]: a size or parameter token -> weight;
    the largest that matches), 1 for every other test."""
    weights = getattr(rubric, "case_weights", None) or {}
    tokens = set(name.split())
    found = [w for tok, w in weights.items() if tok in tokens]
    return max(found) if found else 1.0


def row_status(row: dict[str, str]) -> tuple[Status | None, str]:
    """A row's test status; None for a row that was not run (skipped)."""
    try:
        st = course_csv.status_of(row)
    except course_csv.CsvError as e:
        return Status.INCORRECT, f"unreadable row: {e}"
    detail = row.get("detail") or ""
    if st is RowStatus.PASS:
        return Status.CORRECT, ""
    if st is RowStatus.FAIL:
        return Status.INCORRECT, detail
    if st is RowStatus.NOT_IMPLEMENTED:
        return Status.UNWRITTEN, detail
    return None, detail


# The rows that are a check of an output (the headline row, the batch pipeline's, the streamed
# frames', the hypotheses'): the others (stages, phases, per-file times, kernels, from_vector) time
# what a headline row already checked, and some pass unconditionally.
CHECKED_KINDS = ("version", "batch", "streams", "hypotheses", "end_to_end")


def tests_of(rows: list[dict[str, str]], version: str, rubric: Rubric | None) -> dict[str, TestResult]:
    """The tests a run's rows decide, in row order: a test fails when any of its rows fails (a
    failed row of another kind fails the test of its size)."""
    out: dict[str, TestResult] = {}
    for r in rows:
        if r.get("version") != version or r.get("kind") not in CHECKED_KINDS:
            continue
        st, detail = row_status(r)
        if st is None:
            continue
        name = label(r)
        t = out.get(name)
        if t is None:
            out[name] = TestResult(name=name, status=st, detail=detail, what=what(name), weight=weight(name, rubric))
        elif t.status is Status.CORRECT and st is not Status.CORRECT:
            t.status, t.detail = st, detail
    for r in rows:  # a failed row of another kind (a stage, a phase) fails the test of its size
        if r.get("version") != version or r.get("kind") in CHECKED_KINDS or r.get("kind") == "meta":
            continue
        st, detail = row_status(r)
        n = r.get("n") or ""
        for t in out.values():
            if st is Status.INCORRECT and t.status is Status.CORRECT and n.isdigit() and row_n(t.name) == int(n):
                t.status, t.detail = st, f"{r.get('kind')} row: {detail}"
    return out


def not_run(rows: list[dict[str, str]], version: str) -> set[int]:
    """The sizes whose rows were skipped because an earlier error left the device unusable."""
    return {
        int(r["n"])
        for r in rows
        if r.get("version") == version and UNUSABLE in (r.get("detail") or "") and (r.get("n") or "").isdigit()
    }


def matches(key: str, name: str) -> bool:
    """Whether an evidence record's key (checker_evidence) is about the test `name`: every
    name=value token of the key is one of the test's."""
    want = {t for t in key.split() if "=" in t}
    return bool(want) and want <= set(name.split())


def is_edge(name: str) -> bool:
    """An empty input, one element or an input of zeros: a test of a guard, not of the algorithm
    (a body that writes zeros passes them all)."""
    return row_n(name) in (0, 1) or "fill=zeros" in name.split()


def fraction(tests: list[TestResult]) -> float:
    """The share of a version's correctness points its tests earn: the weight of those passed over
    the weight of all. The edge cases earn their share only beside a passed test of the algorithm
    (a body that returns 0 passes the empty input and has done none of the work)."""
    total = sum(t.weight for t in tests)
    passed = [t for t in tests if t.status is Status.CORRECT]
    if not total or not any(not is_edge(t.name) for t in passed):
        return 0.0
    return sum(t.weight for t in passed) / total
