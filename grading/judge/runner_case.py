"""One case of a version, however many processes it takes. The driver runs the case's sizes in one
process; when the process ends before it has checked them all (a crash, a timeout, the memory
limit, or a sticky CUDA error after which the driver skips the rest), the size it was on is charged
with what happened and the sizes after it run again in a fresh process, so one edge case costs
that case only (checker_tests). At most MAX_TIMEOUTS of a case's processes may time out."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import checker_evidence as evidence
from . import checker_kernels as kernels
from . import checker_tests as tests
from . import runner_run as run
from .model import CaseResult, Status, TestResult

if TYPE_CHECKING:
    from judge.rubric import Case, Rubric

MAX_TIMEOUTS = 2


@dataclass
class CaseRun:
    result: CaseResult
    rows: list = field(default_factory=list)  # every process's rows, in order
    evidence: list = field(default_factory=list)  # [(text, overflow)] per process
    kernel_logs: list = field(default_factory=list)  # per process


NO_ROW = "not run: the driver wrote no row for it"


def run_case(spec: run.RunSpec, case: Case, rubric: Rubric | None, expected: list[str] | None = None) -> CaseRun:
    """The case's processes and its tests. `expected`: the tests the reference's run of this case
    passed (a test of them with no row is failed, as not run); None for the reference's own run."""
    found = tests.size_list(case.args)
    pending = found[1] if found else None
    out = CaseRun(
        result=CaseResult(name=case.name, hidden=case.hidden, visibility=case.visibility, status=Status.HARNESS_ERROR)
    )
    done: dict[str, TestResult] = {}
    charged: dict[str, TestResult] = {}
    timeouts, first, last, seconds, ended = 0, None, None, 0.0, None
    unrecorded: list[str] = []  # tests passed in a process that ended before its kernel record was written
    procs: list[run.RawRun] = []  # every process, in order
    args = list(case.args)
    while True:
        step = dataclasses.replace(spec, args=args, name=spec.name + (f".{len(procs)}" if procs else ""))
        raw = last_raw = run.execute(step)
        procs.append(raw)
        last = run.judge(raw, spec.version, case, step)
        first, seconds = first or last, seconds + last.seconds
        recorded = not spec.recorder or kernels.read_log(raw.kernel_log) is not None
        for name, t in tests.tests_of(raw.rows, spec.version, rubric).items():
            if name in done:
                continue
            done[name] = t
            if not recorded and t.status is Status.CORRECT:
                unrecorded.append(name)
        if pending is None:
            break
        have = {tests.row_n(n) for n in list(done) + list(charged)}
        remaining = [s for s in pending if tests.size_value(s) not in have]
        ended = ended_early(raw, step)  # the last process's, for the tests it never reached too
        st = _charge(ended, charged, remaining, expected, rubric)
        timeouts += st is Status.TIMEOUT
        if ended is None and not tests.not_run(raw.rows, spec.version):
            break  # the process checked every size it was given
        if not remaining or timeouts >= MAX_TIMEOUTS or len(procs) > len(found[1]):
            break
        pending, args = remaining, tests.with_sizes(case.args, remaining)
    executed = len(procs)
    rerun = _record_passed(spec, case, rubric, unrecorded, done, procs)
    if rerun is not None:
        executed, seconds = executed + 1, seconds + rerun.seconds
    for raw in procs:  # what is graded further (the timed row, the evidence, the kernel record)
        out.rows += raw.rows
        out.evidence.append((raw.evidence, raw.evidence_overflow))
        out.kernel_logs.append(raw.kernel_log)
    cr = out.result
    cr.runs, cr.seconds = executed, round(seconds, 2)
    cr.command, cr.log = first.command, first.log
    harness = last.detail if last is not first and run.refused_arguments(last_raw, spec.version) else None
    cr.tests = _assemble(done, charged, expected, ended, rubric, harness)
    _case_status(cr, first, last)
    return out


def _charge(
    ended: tuple[Status, str] | None,
    charged: dict[str, TestResult],
    remaining: list[str],
    expected: list[str] | None,
    rubric: Rubric | None,
) -> Status | None:
    """Charges a process's early end to the size it was on: the first size it never reached (taken
    off `remaining`; the drivers write a size's timing rows before its checked row, so a size with
    a checked row was finished). Returns the status charged, None when nothing was."""
    if ended is None:
        return None
    st, detail = ended
    if not remaining:
        return None
    name = _name_of(tests.size_value(remaining.pop(0)), expected)  # the test's name says the size
    charged[name] = TestResult(name, st, detail, tests.what(name), tests.weight(name, rubric))
    return st


def _record_passed(
    spec: run.RunSpec,
    case: Case,
    rubric: Rubric | None,
    names: list[str],
    done: dict[str, TestResult],
    procs: list[run.RawRun],
) -> run.RawRun | None:
    """Tests that passed in a process which then died before the kernel recorder wrote what ran
    (it writes at exit): what earns points must show its own work, so their sizes run once more in
    a fresh process (named as any resumed one) and that process is graded for them in place of the
    one that died: its verdicts, its rows (the timed one), its evidence and its kernel record. A test
    it does not pass fails with its reason; all of them fail when it leaves no record. Returns that
    process, None where none ran."""
    names = [n for n in names if n in done and done[n].status is Status.CORRECT]  # not charged since
    if not names:
        return None
    found = [tests.row_n(name) for name in names]
    whole = tests.size_list(case.args) is None  # a named case: the whole of it again
    if not whole and None in found:
        _unrecorded(names, done, "a test without a size cannot be rerun alone")
        return None
    sizes = sorted({n for n in found if n is not None})
    args = list(case.args) if whole else tests.with_sizes(case.args, [str(n) for n in sizes])
    step = dataclasses.replace(spec, args=args, name=spec.name + f".{len(procs)}")
    raw = run.execute(step)
    if kernels.read_log(raw.kernel_log) is None:
        ended = ended_early(raw, step)
        how = f"{ended[0].value}: {ended[1]}" if ended else "it ended without one"
        _unrecorded(names, done, f"a rerun of the passed sizes left no record either ({how})")
        return raw
    again = tests.tests_of(raw.rows, spec.version, rubric)
    for name in names:
        t = again.get(name)
        done[name] = (
            t
            if t is not None
            else TestResult(
                name,
                Status.INCORRECT,
                "not run again: the rerun that records what ran wrote no row for it",
                done[name].what,
                done[name].weight,
            )
        )
    unrecorded_runs = {id(p) for p in procs if kernels.read_log(p.kernel_log) is None}
    procs[:] = [p for p in procs if id(p) not in unrecorded_runs] + [raw]  # the recorded run stands for them
    return raw


def _unrecorded(names: list[str], done: dict[str, TestResult], why: str) -> None:
    for name in names:
        t = done[name]
        done[name] = TestResult(
            name,
            Status.CRASH,
            "passed, but its process ended before the kernel recorder wrote what ran, and " + why,
            t.what,
            t.weight,
        )


def ended_early(raw: run.RawRun, step: run.RunSpec) -> tuple[Status, str] | None:
    """How a process ended before its driver finished, whatever rows it had failed before: killed
    by the grader (time, memory, processes), by a signal, or an exit that is neither the driver's
    0 nor its 1 (nor a refusal of its arguments, which is not a size's fault); None otherwise."""
    killed = run._killed(raw, step, 0)
    if killed is not None:
        return killed
    if raw.rc not in (0, 1) and not run.refused_arguments(raw, step.version):
        return Status.CRASH, run.exit_text(raw.rc)
    return None


def _name_of(n: int | None, expected: list[str] | None) -> str:
    """The test name of size n: the reference's test of that size where there is one."""
    for name in expected or []:
        if tests.row_n(name) == n:
            return name
    return f"n={n}"


def _assemble(
    done: dict[str, TestResult],
    charged: dict[str, TestResult],
    expected: list[str] | None,
    ended: tuple[Status, str] | None,
    rubric: Rubric | None,
    harness: str | None = None,
) -> list[TestResult]:
    """The case's tests in the reference's order: what the rows said, what a process that ended on
    a size was charged, and an expected test neither has as failed (not run), or as the grader's
    own error where a resumed process failed on the grader's side (`harness`: a regrade, not the
    student's fault)."""
    got = {**done, **charged}
    if expected is None:
        return list(got.values())
    out = []
    for name in expected:
        t = got.get(name)
        if t is None:
            st, why = (
                (Status.HARNESS_ERROR, f"not run: the grader's resumed run failed ({harness})")
                if harness
                else (ended[0], f"not run: the process ended ({ended[0].value}: {ended[1]})")
                if ended
                else (Status.INCORRECT, NO_ROW)
            )
            t = TestResult(name, st, why, tests.what(name), tests.weight(name, rubric))
        out.append(t)
    return out


def _case_status(cr: CaseResult, first: CaseResult, last: CaseResult) -> None:
    """The case's status: a process-level verdict that is about the run, not a size (the driver
    refused the arguments, nothing was gradable, a harness error), else its tests'."""
    process = next((c for c in (first, last) if c.status in (Status.HARNESS_ERROR, Status.NOT_GRADABLE)), None)
    if not cr.tests:
        process = process or last
    if process is not None and not any(t.status is Status.CORRECT for t in cr.tests):
        cr.status, cr.detail, cr.rows_passed = process.status, process.detail, 0
        for t in cr.tests:  # a test without a row says why the run has none (not a second reason)
            if t.detail == NO_ROW:
                t.detail = f"not run: {process.detail}"
        return
    summarize(cr)
    lost = next((t for t in cr.tests if t.status is Status.HARNESS_ERROR), None)
    if lost is not None:  # the grader failed a resumed run: the case is regraded, never paid in part
        cr.status, cr.detail = Status.HARNESS_ERROR, f"{lost.name}: {lost.detail}"


def summarize(cr: CaseResult) -> None:
    """A case's status and detail from its tests (again after the out-of-process check)."""
    ts = cr.tests
    cr.rows_passed = sum(t.status is Status.CORRECT for t in ts)
    if not ts:
        cr.status, cr.detail = Status.NOT_GRADABLE, "no rows for this version"
        return
    bad = [t for t in ts if t.status is not Status.CORRECT]
    if not bad:
        cr.status, cr.detail = Status.CORRECT, run.tests_passed(len(ts))
        return
    if all(t.status is Status.UNWRITTEN for t in ts):
        cr.status, cr.detail = Status.UNWRITTEN, bad[0].detail
        return
    t = bad[0]
    cr.status = t.status if t.status is not Status.UNWRITTEN else Status.INCORRECT
    about = f" ({t.what})" if t.what else ""
    word = "" if t.status is Status.INCORRECT else f"{t.status.value}: "  # a row's detail says what differs
    cr.detail = f"{len(bad)} of {len(ts)} tests failed; {t.name}{about}: {word}{t.detail}"


@dataclass
class GroupRun:
    """What one process of several versions gave: the cases of the versions whose share of it
    stands, the record of its ranges (for a reference's record: what a student's must equal) and,
    where nothing of it stands, why."""

    cases: dict[str, CaseRun] = field(default_factory=dict)
    pushes: list = field(default_factory=list)
    outside: list = field(default_factory=list)
    problem: str = ""
    seconds: float = 0.0
    own: dict = field(default_factory=dict)  # version -> the wall seconds of its ranges
    between: float = 0.0  # the process's seconds outside every version's range (start-up, inputs)


def run_group(
    specs: dict[str, run.RunSpec],
    case: Case,
    rubric: Rubric | None,
    expected: dict[str, list[str] | None],
    name: str,
    ref_group: dict | None = None,
    time_limit_s: float | None = None,
) -> GroupRun:
    """The same case of several versions in one process (their specs differ in the version only),
    each kernel attributed to the version whose NVTX range held it (checker_kernels.split_by_version).
    A version's share stands only where the process ended by itself, its record is whole, its ranges
    are the reference's (`ref_group`: the reference's own group record; None when this is the
    reference's run) and every test of the version passed: a failing, crashed or doubtful version
    runs alone again (run_case), so a grade that costs points always comes from a process of its own.
    `time_limit_s`: the process's limit (the reference's group time times the rubric's factor),
    at most the sum of its versions' limits (the default)."""
    versions = list(specs)
    base = specs[versions[0]]
    out = GroupRun()
    if not base.recorder or len(versions) < 2:
        out.problem = "no kernel recorder" if not base.recorder else "one version"
        return out
    step = dataclasses.replace(
        base,
        version=",".join(versions),
        name=name,
        time_limit_s=min(sum(s.time_limit_s for s in specs.values()), time_limit_s or float("inf")),
        ranges=True,
    )
    raw = run.execute(step)
    out.seconds = raw.seconds
    ended = ended_early(raw, step)
    if ended is not None or raw.rc not in (0, 1):  # an exit 2 too: no version's refusal of arguments
        out.problem = f"the process ended early ({ended[0].value}: {ended[1]})" if ended else run.exit_text(raw.rc)
        return out
    if kernels.read_log(raw.kernel_log) is None:
        out.problem = "no kernel record"
        return out
    rec = kernels.split_by_version(raw.kernel_log, versions)
    out.pushes = [list(p) for p in rec.pushes]
    out.outside = sorted({kernels.stable_name(k) for k, _, _ in rec.outside})
    out.problem = rec.problem or _against_reference(out, ref_group, specs) or _evidence_problem(raw)
    if out.problem:
        return out
    out.own = {v: round(t, 3) for v, t in rec.seconds.items()}
    out.between = round(max(0.0, raw.seconds - sum(rec.seconds.values())), 3)
    for v in versions:
        if rec.seconds.get(v, 0.0) > specs[v].time_limit_s:
            continue  # over its own limit, whatever the others left of the process's: it runs alone
        share = round(rec.seconds.get(v, 0.0) + out.between / len(versions), 2)
        got = _share(raw, step, v, case, rubric, expected.get(v), rec.per_version[v], share)
        if got is not None:
            out.cases[v] = got
    return out


def _against_reference(out: GroupRun, ref_group: dict | None, specs: dict[str, run.RunSpec]) -> str:
    """Why a student's group differs from the reference's ("" where it does not, or for the
    reference's own run): its version ranges, in order, depth and thread, and its kernels between
    versions, which must be kernels the reference ran there too."""
    if ref_group is None:
        return ""
    theirs = [tuple(p) for p in ref_group.get("pushes", []) if p[2] in specs]
    if theirs != [tuple(p) for p in out.pushes]:
        return "its version ranges are not the reference's"
    extra = sorted(set(out.outside) - set(ref_group.get("outside", [])))
    if extra:
        return f"kernels between versions the reference did not run there: {', '.join(extra[:3])}"
    return ""


def _evidence_problem(raw: run.RawRun) -> str:
    """Why a process's evidence cannot be split by version ("" when it can): the whole pipe must be
    well-formed, so a record the split would drop cannot hide a malformed one."""
    try:
        evidence.parse(raw.evidence)
    except evidence.EvidenceError as e:
        return f"its evidence is not well-formed ({e})"
    return ""


def _share(
    raw: run.RawRun,
    step: run.RunSpec,
    v: str,
    case: Case,
    rubric: Rubric | None,
    want: list[str] | None,
    entries: list[tuple[str, int, int]],
    share: float,
) -> CaseRun | None:
    """Version v's case from a process of several (run_group): None unless every test of it passed,
    the reference's tests among them. Its kernel record is its share of the process's."""
    got = tests.tests_of(raw.rows, v, rubric)
    if not got or any(t.status is not Status.CORRECT for t in got.values()) or tests.not_run(raw.rows, v):
        return None
    if want is not None and not set(want) <= set(got):
        return None
    klog = os.path.join(run.records_dir(step.workdir), f"{step.name}.{v}.kernels.tsv")
    try:
        kernels.write_log(klog, entries, f"version {v} of a process of {step.version.count(',') + 1}")
    except OSError:
        return None
    res = run.judge(raw, v, case, dataclasses.replace(step, version=v))
    res.command = " ".join(
        [os.path.basename(step.driver), "--version", step.version] + list(step.args) + run.GRADED_RUN_FLAGS
    )
    res.runs, res.seconds = 1, share
    res.tests = _assemble(dict(got), {}, want, None, rubric)
    _case_status(res, res, res)
    mine = "".join(line + "\n" for line in raw.evidence.split("\n") if line.split("\t")[2:3] == [v])
    return CaseRun(
        result=res,
        rows=[r for r in raw.rows if r.get("version") == v or r.get("kind") == "meta"],
        evidence=[(mine, raw.evidence_overflow)],
        kernel_logs=[klog],
    )
