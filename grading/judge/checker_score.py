"""Statuses and points. The maximum of an assignment is fixed: every version of the rubric that the
reference solution grades correct on the job's GPUs counts its correctness and speed points for
every student, whatever the student's outcome. Speed points compare the student's time with the
reference solution's time for the same case on the same GPU in the same job."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from .checker_symbols import is_refusal
from .checker_tests import fraction
from .model import Status, VersionGrade

if TYPE_CHECKING:
    from judge.model import CaseResult
    from judge.rubric import Rubric, VersionRule


def speed_points(points: int, ratio: float, full: float, zero: float) -> float:
    """All points at >= full x the reference's speed, none at <= zero x, linear between."""
    if ratio >= full:
        return float(points)
    if ratio <= zero:
        return 0.0
    return round(points * (ratio - zero) / (full - zero), 2)


def grade_version(
    rule: VersionRule,
    cases: list[CaseResult],
    rubric: Rubric,
    reference: dict | None,
    static_findings: Sequence[str] = (),
    build_error: str = "",
    refused: str = "",
    run_checked: Sequence[str] = (),
) -> VersionGrade:
    """One version's grade from its cases (visible first). reference: the reference's record of this
    version on this GPU ({"cases": {name: {"ms", "timed_case"}}}), None when it has none.
    run_checked: static findings of kernels in the objects of exercises it builds on; they count
    where a case that earned points has no kernel record (one that has says what ran; one whose
    record the recorder failed to leave is the grader's error, regraded, not the student's)."""
    earning = [c for c in cases if c.status is Status.CORRECT or any(t.status is Status.CORRECT for t in c.tests)]
    if any(not c.recorded and c.status is not Status.HARNESS_ERROR for c in earning):
        static_findings = list(static_findings) + list(run_checked)
    g = VersionGrade(
        subproject=rule.subproject,
        version=rule.version,
        status=Status.HARNESS_ERROR,
        detail="",
        points_correct=0.0,
        points_correct_max=rule.correct,
        points_speed=0.0,
        points_speed_max=rule.speed,
        cases=list(cases),
        static_findings=list(static_findings),
    )
    if refused:  # a block of an exercise it needs was refused (checker_blocks): graded as the starter body
        g.status, g.detail = Status.REFUSED, refused
        return g
    if build_error:
        g.status, g.detail = Status.DOES_NOT_BUILD, build_error
        return g
    _status(g, cases, static_findings)
    if g.status is Status.CORRECT:
        g.points_correct = rule.correct
        _speed(g, rule, cases, rubric, reference)
    elif g.status in PARTIAL:  # per test: what passed earns its share, the timed size its speed
        tests = [t for c in cases for t in c.tests]
        g.points_correct = round(rule.correct * fraction(tests), 2)
        if g.points_correct > 0:
            _speed(g, rule, cases, rubric, reference)
    memory = next((c.memcheck for c in cases if c.memcheck), "")
    if memory:
        apply_memcheck(g, memory, rubric)
    return g


def apply_memcheck(g: VersionGrade, found: str, rubric: Rubric) -> None:
    """A version's memory errors (checker_memcheck): reported, and with `[grading] memcheck =
    "points"` they cost memcheck_cost of its correctness points."""
    g.memcheck = found
    if getattr(rubric, "memcheck", "warning") == "points" and g.points_correct > 0:
        g.points_correct = round(g.points_correct * (1 - rubric.memcheck_cost), 2)


# Statuses a version can have with some of its tests passed (each test its share of the points).
# Not its own work, refused, does not build: nothing of it is the student's to credit.
PARTIAL = (Status.INCORRECT, Status.CRASH, Status.TIMEOUT, Status.MEMORY_LIMIT, Status.HIDDEN_FAILED)


def _status(g: VersionGrade, cases: list[CaseResult], static_findings: Sequence[str]) -> None:
    """The version's status and detail: not its own work, its first visible case that is not correct,
    its first hidden case that is not, or correct."""
    visible = [c for c in cases if not c.hidden]
    hidden = [c for c in cases if c.hidden]
    bad_kernels = [k for c in cases for k in c.kernels if not k.allowed]
    first = next((c for c in visible if c.status is not Status.CORRECT), None)
    hfail = next((c for c in hidden if c.status is not Status.CORRECT), None)
    not_own = next((c for c in cases if c.status is Status.NOT_OWN_WORK), None)
    if not_own is not None and not static_findings and not bad_kernels:
        g.status, g.detail = Status.NOT_OWN_WORK, not_own.detail
    elif static_findings or bad_kernels:
        g.status = Status.NOT_OWN_WORK
        if bad_kernels:
            k = bad_kernels[0]
            g.detail = f"ran {k.name} ({k.owner}; {k.defined_in})"
        else:
            g.detail = static_findings[0]
            if is_refusal(g.detail) and hasattr(Status, "REFUSED"):  # an object rule broken (checker_symbols)
                g.status = Status.REFUSED
    elif first is not None:
        g.status, g.detail = first.status, (f"{first.name}: {first.detail}" if len(visible) > 1 else first.detail)
    elif hfail is not None and hfail.status in (Status.HARNESS_ERROR, Status.NOT_GRADABLE):
        g.status, g.detail = hfail.status, f"hidden case '{hfail.name}': {hfail.status.value}"
    elif hfail is not None:
        g.status = Status.HIDDEN_FAILED
        g.visibility = hfail.visibility
        shown = hfail.visibility == "visible"
        g.detail = f"hidden case '{hfail.name}': {hfail.status.value}" + (f": {hfail.detail}" if shown else "")
    else:
        g.status, g.detail = Status.CORRECT, "; ".join(c.detail for c in visible)


def _speed(g: VersionGrade, rule: VersionRule, cases: list[CaseResult], rubric: Rubric, reference: dict | None) -> None:
    """A correct version's time and speed points against the reference's time of the same case."""
    if not rule.speed:  # its time earns nothing, and its checks ran with --reps 1 beside others: not shown
        return
    timed = next(
        (c for c in cases if c.timed_ms is not None and not c.hidden and c.name in timed_case_names(rule)), None
    )
    if timed:
        g.ms, g.timed_case = timed.timed_ms, timed.timed_case
    ref = (reference or {}).get("cases", {}).get(timed.name) if timed else None
    if not timed:
        why = next((c.untimed for c in cases if c.untimed and not c.hidden and c.name in timed_case_names(rule)), "")
        g.speed_note = why or "no timed row (the run measured nothing)"
    elif not ref or ref.get("ms") is None:
        g.speed_note = "the reference has no time for this case on this GPU"
    elif ref.get("timed_case") != timed.timed_case:
        g.speed_note = f"timed {timed.timed_case}, the reference {ref.get('timed_case')}: not comparable"
    else:
        g.reference_ms = ref["ms"]
        g.ratio_to_reference = round(ref["ms"] / timed.timed_ms, 3) if timed.timed_ms > 0 else None
        # inside the reference's own spread (its slowest of three runs over its fastest) a student is
        # as fast as it: the ratio is credited with that spread, so noise neither wins nor loses a point
        spread = float(ref.get("spread") or 0.0)
        credited = (g.ratio_to_reference or 0.0) * (1 + spread)
        g.points_speed = speed_points(rule.speed, credited, rubric.speed_full, rubric.speed_zero)
        if spread:
            g.speed_note = f"the reference's spread over {len(ref.get('ms_runs') or [])} runs: {spread:.0%}"


def timed_case_names(rule: VersionRule) -> set[str]:
    return {c.name for c in rule.cases if c.timed}


FAILED = (Status.INCORRECT, Status.CRASH, Status.TIMEOUT, Status.MEMORY_LIMIT, Status.HIDDEN_FAILED, Status.UNWRITTEN)


def point_at_building_blocks(grades: list[VersionGrade], rules: list[VersionRule]) -> None:
    """A fault reported once, where it is: a failing version whose building block (an exercise it
    requires after its own, the first) is the own exercise of another version that fails too says
    so, naming that version, so that a compaction given an inclusive scan points at the scan. The
    version is still graded with the student's building block (its own code calls it)."""

    def exercise(rule: VersionRule, ex: str) -> str:  # "sub/ex", as the rubric's requires may write it
        return ex if "/" in ex else f"{rule.subproject}/{ex}"

    own = {exercise(r, r.requires[0]): r for r in rules if r.requires}
    by_key = {g.key: g for g in grades}
    for rule in rules:
        g = by_key.get(rule.key)
        if g is None or g.status not in FAILED:
            continue
        blocks = [own.get(exercise(rule, ex)) for ex in rule.requires[1:]]
        blamed = [
            f"{b.version} ({by_key[b.key].status.value})"
            for b in blocks
            if b is not None and b.key in by_key and by_key[b.key].status in FAILED
        ]
        if blamed:
            g.detail = f"builds on {', '.join(blamed)}, which fails too: look there first. {g.detail}"
