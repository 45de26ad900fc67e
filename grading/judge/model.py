"""The grader's typed results: a status enum and dataclasses, serialized to JSON in one place."""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any


class Status(enum.Enum):
    CORRECT = "correct"
    INCORRECT = "incorrect"
    HIDDEN_FAILED = "hidden case failed"
    UNWRITTEN = "not written"  # the exercise still holds the handout's starter body
    NOT_OWN_WORK = "not its own work"
    TIMEOUT = "timeout"
    CRASH = "crash"
    MEMORY_LIMIT = "memory limit"
    DOES_NOT_BUILD = "does not build"
    REFUSED = "refused"  # a block or an object broke a rule of the judge (checker_blocks, checker_symbols)
    NOT_GRADABLE = "not gradable"
    HARNESS_ERROR = "harness error"

    @property
    def earns_points(self) -> bool:
        return self is Status.CORRECT


@dataclass
class KernelUse:
    name: str  # demangled
    launches: int
    owner: str  # "own", "allowed", "harness", or why it is not allowed
    defined_in: str = ""  # source file(s) or library
    allowed: bool = True


@dataclass
class TestResult:
    """One checked output of a case: a size, an input or a named case of the driver's rows, with its
    own weight in the version's correctness points (checker_tests)."""

    __test__ = False  # not a pytest class
    name: str  # the row's label: "n=0 op=scan", "n=12433 case=room_tutorial search=radius"
    status: Status
    detail: str = ""
    what: str = ""  # what it tests: "an empty input", "not a power of two", ...
    weight: float = 1.0


@dataclass
class CaseResult:
    """One invocation of the driver for a version (the visible arguments, or a hidden case)."""

    name: str
    hidden: bool
    status: Status
    visibility: str = "visible"
    detail: str = ""
    command: str = ""
    seconds: float = 0.0
    rows_passed: int = 0
    timed_ms: float | None = None
    timed_case: str = ""
    untimed: str = ""  # why a timed run's time does not count (a written time: forged_time)
    log: str = ""
    kernels: list = field(default_factory=list)  # [KernelUse]
    kernel_symbols: list = field(default_factory=list)  # the mangled names the run ran
    recorded: bool = False  # the kernel recorder's record of the run was read (kernels: all it ran)
    tests: list = field(default_factory=list)  # [TestResult]: the case's outputs, each checked
    runs: int = 1  # processes the case took (a crash or a sticky error: the rest in a fresh one)
    memcheck: str = ""  # compute-sanitizer memcheck of one small size: "" clean or not run, else the errors


@dataclass
class VersionGrade:
    subproject: str
    version: str
    status: Status
    detail: str
    points_correct: float
    points_correct_max: float
    points_speed: float
    points_speed_max: float
    ms: float | None = None
    reference_ms: float | None = None
    ratio_to_reference: float | None = None
    timed_case: str = ""
    speed_note: str = ""
    visibility: str = "visible"
    cases: list = field(default_factory=list)  # [CaseResult]
    static_findings: list = field(default_factory=list)
    memcheck: str = ""  # the memory errors of its memcheck run, "" where clean or not run
    # Nsight Compute's view of its kernels on the grading GPU (checker_profile; informational, no
    # points): {} where it was not profiled or the reason is the student's note, said once
    profile: dict = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.subproject}/{self.version}"

    @property
    def points(self) -> float:
        return round(self.points_correct + self.points_speed, 2)

    @property
    def points_max(self) -> float:
        return self.points_correct_max + self.points_speed_max


@dataclass
class Provenance:
    """What a regrade needs to reproduce and compare a report."""

    submission: str
    submission_commit: str
    submission_time: str
    instructor_commit: str
    rubric_sha256: str
    device: str
    driver_version: str
    toolkit: str
    graded_at: str
    host: str
    sandbox: str = ""  # how the student's code was confined (runner_sandbox.Sandbox.describe)


@dataclass
class StudentReport:
    student: str
    provenance: Provenance
    grades: list  # [VersionGrade]
    edited_outside: list = field(default_factory=list)
    build_error: str = ""
    notes: list = field(default_factory=list)
    build_seconds: float = 0.0
    run_seconds: float = 0.0
    display_name: str = ""  # the student's folder name as given (student: its safe id, intake.safe_id)

    @property
    def points(self) -> float:
        return round(sum(g.points for g in self.grades), 2)

    @property
    def points_max(self) -> float:
        return round(sum(g.points_max for g in self.grades), 2)

    def by_subproject(self) -> dict[str, tuple[float, float]]:
        out: dict = {}
        for g in self.grades:
            p, m = out.get(g.subproject, (0.0, 0.0))
            out[g.subproject] = (round(p + g.points, 2), round(m + g.points_max, 2))
        return out


def to_json(obj: Any) -> Any:
    """Dataclasses and enums as plain JSON values (statuses by their text)."""
    if isinstance(obj, enum.Enum):
        return obj.value
    if dataclasses.is_dataclass(obj):
        out = {f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        for prop in ("key", "points", "points_max"):
            if hasattr(type(obj), prop) and isinstance(getattr(type(obj), prop), property):
                out[prop] = getattr(obj, prop)
        return out
    if isinstance(obj, (list, tuple)):
        return [to_json(x) for x in obj]
    if isinstance(obj, dict):
        return {k: to_json(v) for k, v in obj.items()}
    return obj


def report_from_json(d: dict) -> StudentReport:
    """The inverse of to_json for a StudentReport (the Slurm merge step reads the shards' reports)."""

    def case(c: dict[str, Any]) -> CaseResult:
        c = dict(c)
        c["status"] = Status(c["status"])
        c["kernels"] = [KernelUse(**k) for k in c.get("kernels", [])]
        c["tests"] = [TestResult(**{**t, "status": Status(t["status"])}) for t in c.get("tests", [])]
        return CaseResult(**c)

    grades = []
    for g in d["grades"]:
        g = {k: v for k, v in g.items() if k not in ("key", "points", "points_max")}
        g["status"] = Status(g["status"])
        g["cases"] = [case(c) for c in g.get("cases", [])]
        grades.append(VersionGrade(**g))
    rest = {k: v for k, v in d.items() if k not in ("points", "points_max", "grades", "provenance")}
    return StudentReport(provenance=Provenance(**d["provenance"]), grades=grades, **rest)
