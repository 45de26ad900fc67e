"""Grading one checkout on one device: the reference solution's record (timed once per device and
instructor commit, then cached), and a student's splice, build, static check, runs and score."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import course_csv

from . import checker_blocks as blocks
from . import checker_evidence as evidence
from . import checker_kernels as kernels
from . import checker_memcheck as memcheck
from . import checker_profile as profiles
from . import checker_score as score
from . import checker_splice as assemble
from . import checker_symbols as symbols
from . import checker_tests as checks
from . import intake, integrity, runner_case
from . import rubric as rubric_mod
from . import runner_build as build
from . import runner_run as run
from .checker_splice import em
from .model import CaseResult, Provenance, Status, StudentReport, VersionGrade
from .runner_sandbox import Sandbox

if TYPE_CHECKING:
    from types import SimpleNamespace

    from judge.checker_splice import Assignment
    from judge.rubric import Case, Rubric, VersionRule
    from judge.runner_build import Plan


@dataclass
class Job:
    """What every student of one grading job shares."""

    rubric: object
    rules: list
    assignment: object
    plan: object
    handout: tuple  # (handout root, [relative files])
    out: str
    cache: str
    recorder: str = ""
    exercise_files: dict = field(default_factory=dict)  # rel file -> "sub/exercise"
    exercise_of: dict = field(default_factory=dict)  # "sub/exercise" -> [rel files]
    symbol_owner: dict = field(default_factory=dict)
    harness_symbols: set = field(default_factory=set)  # defined by exercise files outside their regions
    symbols: object = None  # checker_symbols.Harness: what a student's objects are compared with
    region_kernels: dict = field(default_factory=dict)  # kernel -> files: defined in the solution's exercise regions
    entry_points: dict = field(default_factory=dict)  # rel file -> names of functions whose body is an exercise
    instructor_commit: str = ""
    build_jobs: int = 0
    sandbox: Sandbox | None = None  # every student build and run goes through it (runner_sandbox.probe)
    macros: object = None  # checker_blocks.HarnessMacros: the harness macros a block could use
    runs_per_gpu: int = 1  # students run at once on one GPU (more: a correctness pass, timings shared)

    def drivers(self) -> list[str]:
        return sorted({r.driver for r in self.rules})

    def own_files(self, rule: VersionRule, first_only: bool = False) -> set[str]:
        """The files of the exercises the version requires; first_only: of its own exercise (the
        first it requires) alone, not of those it builds on."""
        files = set()
        for req in rule.requires[:1] if first_only else rule.requires:
            key = req if "/" in req else f"{rule.subproject}/{req}"
            files.update(self.exercise_of.get(key, []))
        return files


def make_job(
    rubric: Rubric,
    rules: list[VersionRule],
    assignment: Assignment,
    plan: Plan,
    handout: tuple[str, list[str]],
    out: str,
    cache: str,
    build_jobs: int = 0,
    sandbox: Sandbox | None = None,
) -> Job:
    job = Job(
        sandbox=sandbox,
        rubric=rubric,
        rules=rules,
        assignment=assignment,
        plan=plan,
        handout=handout,
        out=out,
        cache=cache,
        build_jobs=build_jobs,
    )
    rec = os.path.join(plan.build, build.RECORDER)
    job.recorder = rec if os.path.isfile(rec) else ""
    for f in assemble.tracked_files(assignment.root):
        if f.endswith(em.SOURCE_EXT) and not f.startswith("tests/"):
            text = Path(os.path.join(assignment.root, f)).read_text(encoding="utf-8")
            if "// EXERCISE BEGIN" not in text:
                continue
            lines = text.split("\n")
            for r in assignment.regions(f, text):
                key = r.key  # a region of common/: its owner in this assignment's handout
                if not key or not r.in_handout:
                    continue
                if r.body:
                    name = enclosing_function(lines, r.first)
                    if name:
                        job.entry_points.setdefault(f, set()).add(name)
                job.exercise_files.setdefault(f, key)
                if f not in job.exercise_of.setdefault(key, []):
                    job.exercise_of[key].append(f)
    # the graded exercises' files are inputs of the objects a student's build recompiles (else the
    # instructor's objects would be graded in the student's place): refused here, before anyone
    needed = {req if "/" in req else f"{r.subproject}/{req}" for r in rules for req in r.requires}
    build.check_sources(plan, {k: job.exercise_of[k] for k in needed if k in job.exercise_of})
    job.symbol_owner = kernels.symbol_owners(plan, rubric.libraries)
    job.symbols = symbols.build_harness(plan, getattr(rubric, "checker_files", ()), rubric.libraries)
    # the kernels of the handed-out exercises' regions (a withheld region's stays the instructor's code
    # in every student's tree: the harness's where the reference's run has it)
    regions = kernels.region_kernels(assignment.root, source_files(assignment.root))
    handed = job.exercise_files.keys()
    job.region_kernels = {k: fs & handed for k, fs in regions.items() if fs & handed}
    job.harness_symbols = handout_symbols(job)
    job.macros = blocks.harness_macros(plan, assignment.exercise_files(), workers=build_jobs or os.cpu_count() or 2)
    job.instructor_commit = instructor_commit(assignment.root)
    return job


def instructor_commit(root: str) -> str:
    """The instructor tree's commit, and whether its tracked files differ from it (a grade from an
    edited tree is not that commit's)."""
    commit = git(root, "rev-parse", "HEAD")
    if not commit:
        return "unknown"
    # results/ is what the runs write (grade_solution.sh's grade among them), not the tree graded
    edited = git(root, "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results")
    return commit + (" with uncommitted changes" if edited else "")


def enclosing_function(lines: list[str], at: int) -> str:
    """The name of the function a body region at line `at` sits in: the nearest definition above it
    that starts at column 0 ("void scan_naive(std::int64_t n, ...) {")."""
    for i in range(at - 1, -1, -1):
        line = lines[i]
        if line and not line[0].isspace() and "(" in line and not line.startswith(("//", "#", "}")):
            m = re.search(r"([A-Za-z_]\w*)\s*\(", line)
            return m.group(1) if m else ""
    return ""


def handout_symbols(job: Job) -> set[str]:
    """The functions the exercise files define outside their exercise regions (Params::nx() in a
    file that also holds an exercise is harness code, not the exercise's): the strong symbols of the
    handout's own (stubbed) objects, compiled once per job."""
    # A folder of this process's own: the shards of a Slurm array share the cache and run at once,
    # and one shard's clean_tree must not delete the files another is compiling (the compiled
    # objects are shared through the object cache, whose entries are written atomically).
    root = os.path.join(job.cache, f"handout-{socket.gethostname()}-{os.getpid()}")
    try:
        sp = assemble.splice(job.assignment, job.handout[0])
        assemble.clean_tree(job.assignment, sp.files, os.path.join(root, "tree"))
        b = build.build_student(
            job.plan,
            os.path.join(root, "tree"),
            list(sp.files),
            os.path.join(root, "build"),
            os.path.join(job.cache, "objects"),
            jobs=job.build_jobs or None,
            drivers=[],
            sandbox=job.sandbox,
        )
        if job.symbols is not None:  # the stubbed objects: the object rules' baseline beside the solution's
            job.symbols.handout = {rel: symbols.read_object(obj) for rel, obj in b.objects.items()}
        out = set()
        for obj in b.objects.values():
            defined, _ = kernels.object_symbols(obj)
            out.update(s for s, kind in defined.items() if kind == "T")
        return out
    finally:
        shutil.rmtree(root, ignore_errors=True)


def git(path: str, *args: str) -> str:
    try:
        p = subprocess.run(["git", "-C", path] + list(args), capture_output=True, text=True, timeout=30)
        return p.stdout.strip() if p.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def device_identity(env: dict[str, str]) -> tuple[str, str, str]:
    """(device name, identity key, driver version) of the GPU this environment's process sees."""
    visible = env.get("CUDA_VISIBLE_DEVICES", "")
    cmd = ["nvidia-smi", "--query-gpu=name,uuid,driver_version", "--format=csv,noheader"]
    if visible and visible.split(",")[0] not in ("", "-1"):
        cmd += ["-i", visible.split(",")[0]]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        if p.returncode == 0 and p.stdout.strip() and visible != "-1":
            name, uuid, drv = [x.strip() for x in p.stdout.strip().split("\n")[0].split(",")]
            return name, uuid, drv
    except (OSError, subprocess.TimeoutExpired, ValueError):
        pass
    return "none (CPU only)", "cpu-" + socket.gethostname(), ""


def toolkit_version() -> str:
    try:
        p = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, timeout=30)
        return next((line.split("release")[-1].strip() for line in p.stdout.split("\n") if "release" in line), "")
    except (OSError, subprocess.TimeoutExpired):
        return ""


def run_version(
    job: Job,
    rule: VersionRule,
    drivers: dict[str, str],
    index: dict[str, set[str]],
    workdir: str,
    env: dict[str, str],
    reference: dict[str, Any] | None = None,
    own_files: set[str] | None = None,
    evidence_out: dict[str, dict[str, list[str]]] | None = None,
    meta_out: dict[str, str] | None = None,
    only: list[int] | None = None,
    prior: list[CaseResult] | None = None,
    sharing: int = 1,
    premade: dict[int, runner_case.CaseRun] | None = None,
) -> list[CaseResult]:
    """The cases of one version (visible first; a hidden case once some visible test passed), each
    a list of tests (runner_case). With a `reference`, a test its run calls correct is correct only
    when the run's evidence of it matches the reference's (checker_evidence); `evidence_out`
    collects the reference's own. `only`: the indices of the cases to run now (all by default);
    `prior`: what the version's other cases gave (a hidden case needs a passed visible test).
    `premade`: cases already run in a process of several versions (runner_case.run_group); such a
    case stands only where it is wholly clean (every test correct, every kernel allowed, its time
    its own), else it runs again in a process of its own and that run is graded."""
    ref_cases = (reference or {}).get("cases", {})
    results: list[CaseResult] = []
    for i, case in enumerate(rule.cases):
        if only is not None and i not in only:
            continue
        seen = (prior or []) + results
        if i > 0 and case.hidden and not any(t.status is Status.CORRECT for c in seen for t in c.tests):
            break
        ref = ref_cases.get(case.name)
        spec = case_spec(job, rule, drivers, workdir, env, i, ref, sharing)
        pre, recorded = (premade or {}).get(i), bool(spec.recorder)
        if pre is not None:
            kept: dict[str, dict[str, list[str]]] = {}
            cr = _graded_case(job, rule, pre, case, ref, reference, own_files, index, kept, meta_out, recorded)
            if _clean(cr):
                if evidence_out is not None:
                    evidence_out.update(kept)
                results.append(cr)
                continue
        done = runner_case.run_case(spec, case, job.rubric, ref.get("tests") if ref else None)
        results.append(
            _graded_case(job, rule, done, case, ref, reference, own_files, index, evidence_out, meta_out, recorded)
        )
    return results


def _clean(cr: CaseResult) -> bool:
    """Whether a case run beside other versions stands as it is: nothing in it costs a point."""
    return (
        cr.status is Status.CORRECT
        and all(t.status is Status.CORRECT for t in cr.tests)
        and all(k.allowed for k in cr.kernels)
        and not cr.untimed
    )


def _graded_case(
    job: Job,
    rule: VersionRule,
    done: runner_case.CaseRun,
    case: Case,
    ref: dict[str, Any] | None,
    reference: dict[str, Any] | None,
    own_files: set[str] | None,
    index: dict[str, set[str]],
    evidence_out: dict[str, dict[str, list[str]]] | None,
    meta_out: dict[str, str] | None,
    recorded: bool,
) -> CaseResult:
    """A case's result from its processes: the evidence checked outside the run, its timed row, and
    what ran (checker_kernels) wherever some test earns points."""
    harness = set((reference or {}).get("kernels", [])) if reference else None
    cr = done.result
    if meta_out is not None and not meta_out:
        meta_out.update(measured_ceilings(done.rows))
    out_of_process_check(cr, done.evidence, rule.version, ref, evidence_out)
    timed = run.timed_row(done.rows, rule.version, rule) if not case.hidden else None  # a hidden size stays hidden
    sizes = checks.size_list(case.args)
    largest = max((v for v in map(checks.size_value, sizes[1]) if v is not None), default=None) if sizes else None
    if timed is not None and largest is not None and checks.row_n(checks.label(timed)) != largest:
        timed = None  # a time only at the case's timed (largest) size: a smaller one compares with nothing
    if timed is not None and any(t.name == checks.label(timed) and t.status is Status.CORRECT for t in cr.tests):
        cr.timed_ms, cr.timed_case = float(timed["median_ms"]), run.case_label(timed)
    passed = cr.status is Status.CORRECT or any(t.status is Status.CORRECT for t in cr.tests)
    if recorded and passed:  # what ran, wherever some test earns points
        log = merged_kernel_log(done.kernel_logs)
        if log is None and gpu_rows(done.rows, rule.version):
            cr.status, cr.detail = Status.HARNESS_ERROR, "the kernel recorder left no record of this run"
        elif log is not None:  # an empty record too: a GPU version that ran no kernel did its work on the host
            cr.recorded = True
            cr.kernels = kernels.classify(
                log,
                rule,
                own_files if own_files is not None else job.own_files(rule),
                job.exercise_files,
                index,
                job.rubric.libraries,
                harness,
                job.region_kernels,
            )
            cr.kernel_symbols = [k for k, _ in log]
            host_work(cr, ref, done.rows, rule.version)
            forged_time(cr, done.kernel_logs, case, sizes)
    return cr


Member = tuple["VersionRule", int]  # a rule and the index of one of its cases


def run_all_versions(
    job: Job,
    rules: list[VersionRule],
    env: dict[str, str],
    run_one: Callable[..., list[CaseResult]],
    run_group: Callable[[list[Member], int], dict[str, runner_case.CaseRun]] | None = None,
    solo: Callable[[VersionRule, int], bool] | None = None,
    clock: dict[str, float] | None = None,
) -> dict[str, list[CaseResult]]:
    """Every rule's cases, in two stages: first each speed version's timed case (rubric.timed_for_points),
    alone on the slot's GPU and one after another, as the reference's were timed; then every other
    case (the checks: edge inputs, hidden cases, the versions without speed points), up to
    `parallel_runs` at once, since nothing is timed in them; a check that fails there runs again
    alone, and that run stands. `run_one(rule, indices, prior, sharing)` runs those cases of a rule,
    `sharing` runs at once (1: alone). `run_group(members, sharing)`, where given, first runs each
    case that several rules share (the same driver, case and arguments: case_groups) in one process
    of all of them (runner_case.run_group), the timed ones alone, the checks beside each other; what
    of it stands is handed to `run_one` as `premade`; `solo(rule, i)` keeps a check out of the groups
    (a CPU version's: beside the groups, not in series with their GPU versions). Returns each rule's
    cases in the rubric's order; `clock` gets each stage's wall seconds ("timed", "checks")."""
    t0 = time.time()
    first: dict[str, list[CaseResult]] = {}
    rest: dict[str, list[int]] = {}
    timed_of: dict[str, list[int]] = {}
    for rule in rules:
        timed_of[rule.key] = [i for i, c in enumerate(rule.cases) if rubric_mod.timed_for_points(rule, c)]
        rest[rule.key] = [i for i in range(len(rule.cases)) if i not in timed_of[rule.key]]
    premade: dict[str, dict[int, runner_case.CaseRun]] = {}
    for group in case_groups(rules, timed_of) if run_group is not None else []:
        _keep(premade, group, run_group(group, 1))
    for rule in rules:
        timed = timed_of[rule.key]
        given = {"premade": premade[rule.key]} if rule.key in premade else {}  # run_one's default otherwise
        first[rule.key] = run_one(rule, timed, [], 1, **given) if timed else []
    grouped_rest = {r.key: [i for i in rest[r.key] if not (solo and solo(r, i))] for r in rules}
    t1 = time.time()
    later = _run_checks(rules, rest, grouped_rest, first, run_one, run_group, parallel_runs(job, env))
    if clock is not None:
        clock.update(timed=t1 - t0, checks=time.time() - t1)
    out = {}
    for rule in rules:
        order = {c.name: i for i, c in enumerate(rule.cases)}
        out[rule.key] = sorted(first[rule.key] + later.get(rule.key, []), key=lambda c: order.get(c.name, 0))
    return out


def _run_checks(
    rules: list[VersionRule],
    rest: dict[str, list[int]],
    grouped_rest: dict[str, list[int]],
    first: dict[str, list[CaseResult]],
    run_one: Callable[..., list[CaseResult]],
    run_group: Callable[[list[Member], int], dict[str, runner_case.CaseRun]] | None,
    width: int,
) -> dict[str, list[CaseResult]]:
    """run_all_versions's second stage: the checks, `width` processes at once: first the versions
    none of whose checks is in a group (`grouped_rest`: the checks that may be), then the groups,
    then the grouped versions' own runs of what did not stand."""
    later: dict[str, list[CaseResult]] = {}
    todo = [r for r in rules if rest[r.key]]
    checks_run: dict[str, dict[int, runner_case.CaseRun]] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=width) as pool:
        groups = case_groups(rules, grouped_rest) if run_group is not None else []
        in_group = {r.key for g in groups for r, _ in g}
        futures = {
            r.key: pool.submit(run_one, r, rest[r.key], first[r.key], width) for r in todo if r.key not in in_group
        }
        for group, f in [(g, pool.submit(run_group, g, width)) for g in groups]:
            _keep(checks_run, group, f.result())
        for r in todo:
            if r.key in in_group:
                given = {"premade": checks_run[r.key]} if r.key in checks_run else {}
                futures[r.key] = pool.submit(run_one, r, rest[r.key], first[r.key], width, **given)
        for r in todo:
            later[r.key] = futures[r.key].result()
    if width > 1:
        # a check that failed beside others runs again alone before it is charged: a sibling that
        # filled the GPU's or the host's memory, or the shared memory limit, must not fail it
        for rule in todo:
            if any(_failed(c) for c in later[rule.key]):
                later[rule.key] = run_one(rule, rest[rule.key], first[rule.key], 1)
    return later


def _keep(
    premade: dict[str, dict[int, runner_case.CaseRun]], group: list[Member], got: dict[str, runner_case.CaseRun]
) -> None:
    for rule, i in group:
        if rule.key in got:
            premade.setdefault(rule.key, {})[i] = got[rule.key]


def case_groups(rules: list[VersionRule], indices_of: dict[str, list[int]]) -> list[list[Member]]:
    """The cases (of `indices_of`, by rule) that can run in one process: the same driver, case name
    and arguments in at least two versions, in the rubric's order."""
    groups: dict[tuple, list[Member]] = {}
    for rule in rules:
        for i in indices_of.get(rule.key, []):
            case = rule.cases[i]
            groups.setdefault((rule.driver, case.name, tuple(case.args)), []).append((rule, i))
    return [g for g in groups.values() if len(g) >= 2]


def group_key(group: list[Member]) -> str:
    """The reference record's name for a group: its stage (timed or a check), driver, case and
    arguments (not its versions: a student's group is the reference's less the versions that do
    not run)."""
    rule, i = group[0]
    stage = "timed" if rubric_mod.timed_for_points(rule, rule.cases[i]) else "check"
    return "\t".join([stage, rule.driver, rule.cases[i].name] + list(rule.cases[i].args))


def group_runner(
    job: Job,
    drivers: dict[str, str],
    workdir: str,
    env: Callable[[], dict[str, str]],
    reference: dict[str, Any] | None,
    record: dict[str, Any] | None = None,
    progress: Callable[[str], None] = print,
) -> Callable[[list[Member], int], dict[str, runner_case.CaseRun]]:
    """run_all_versions's `run_group`: for the reference (`reference` None) its groups' ranges go to
    `record` (what a student's must equal); for a student, the reference's record is the check.
    `env()`: the runs' environment at the time of the group's run."""

    def run_group(group: list[Member], sharing: int, attempt: int = 0) -> dict[str, runner_case.CaseRun]:
        key = group_key(group)
        ref_group = None
        if reference is not None:
            ref_group = reference.get("groups", {}).get(key)
            if ref_group is None:
                return {}  # the reference's versions ran one process each: so do the student's
        specs, expected = {}, {}
        for rule, i in group:
            ref = (reference or {}).get("versions", {}).get(rule.key, {}).get("cases", {}).get(rule.cases[i].name)
            specs[rule.version] = case_spec(job, rule, drivers, workdir, env(), i, ref, sharing)
            expected[rule.version] = ref.get("tests") if ref else None
        rule0, i0 = group[0]
        name = f"{rule0.subproject}.group.{hashlib.sha256(key.encode()).hexdigest()[:10]}"
        name += f".again{attempt}" if attempt else ""
        limit = None  # a hang costs the reference's group time times the factor, not every version's limit
        if ref_group and ref_group.get("seconds"):
            limit = job.rubric.limits.time_limit(ref_group["seconds"]) * max(1, job.runs_per_gpu)
        got = runner_case.run_group(specs, rule0.cases[i0], job.rubric, expected, name, ref_group, limit)
        if record is not None and not got.problem and got.cases:
            record[key] = {
                "pushes": got.pushes,
                "outside": got.outside,
                "seconds": got.seconds,
                "own": got.own,
                "between": got.between,
                "stood": sorted(got.cases),  # the versions whose share of it stood
            }
        how = f"not used: {got.problem}" if got.problem else f"({got.seconds:.1f} s): {len(got.cases)} stand"
        if got.problem not in ("no kernel recorder", "one version"):  # a run without CUPTI groups nothing
            what = f"{rule0.cases[i0].name} of {len(group)} versions" + (" again" if attempt else "")
            progress(f"[grade] {rule0.subproject}: {what} in one process {how}")
        return {r.key: got.cases[r.version] for r, _ in group if r.version in got.cases}

    return run_group


def _failed(c: CaseResult) -> bool:
    """Whether a case lost anything a rerun alone could give back (a handout starter body's NOT IMPLEMENTED is not)."""
    return any(t.status not in (Status.CORRECT, Status.UNWRITTEN) for t in c.tests) or (
        not c.tests and c.status not in (Status.CORRECT, Status.UNWRITTEN)
    )


def parallel_runs(job: Job, env: dict[str, str]) -> int:
    """How many of a student's untimed cases run at once: the rubric's untimed_parallel, at most one
    per two of the slot's cores, shared by the students that run on one GPU together."""
    cpus = [c for c in env.get("COURSE_GRADER_CPUS", "").split(",") if c.strip()]
    cores = len(cpus) or os.cpu_count() or 1
    return max(
        1, min(getattr(job.rubric, "untimed_parallel", 1), cores // 2) // max(1, getattr(job, "runs_per_gpu", 1))
    )


def ran_own_kernels(cases: list) -> bool:
    """Whether any of these graded cases launched a kernel of the student's own (the kernel record):
    what memcheck and the profile look at; a version of library calls only has nothing of theirs."""
    return any(k.owner == "own" for c in cases for k in c.kernels)


def memcheck_versions(
    job: Job,
    prep: Prepared,
    work: str,
    env: dict[str, str],
    grades: list[VersionGrade],
    progress: Callable[[str], None] = print,
) -> list[str]:
    """The GPU versions that ran kernels of their own, under compute-sanitizer's memcheck at one
    small size, in the sandbox: one run per driver and arguments (--version a,b,...: a student pays
    one instrumented start a sub-project, not one a version). Each error goes to the versions whose
    own files hold its kernel's source line (checker_memcheck); the rubric says what it costs.
    Returns the report's notes: a memcheck run that did not finish is said, never taken as clean."""
    tool = memcheck.tool()
    if not tool or job.rubric.memcheck == "off" or env.get("COURSE_GRADER_GPU") != "1":
        return []
    notes = []
    by_key = {g.key: g for g in grades}
    groups: dict[tuple[str, tuple[str, ...]], list[VersionRule]] = {}
    for rule in job.rules:
        g = by_key.get(rule.key)
        small = memcheck.small_args(rule.cases[0].args)
        if g is None or small is None or not ran_own_kernels(g.cases[:1]):
            continue
        groups.setdefault((rule.driver, tuple(small)), []).append(rule)

    def one_group(index: int, driver: str, small: tuple[str, ...], group: list[VersionRule]) -> list[str]:
        mine: list[str] = []
        pending, attempt = group, 0
        while pending:  # a kernel that poisons the context makes the driver skip the versions after it
            attempt += 1  # each instrumented run's own name
            pending = _memcheck_run(
                job, prep, work, env, by_key, driver, small, pending, f"{index}.{attempt}", mine, progress
            )
        return mine

    # the groups at once, as many as the untimed cases (each its own versions' grades; 2.2 s one after
    # another for the solution's three on an H100, 2026-11-26); the notes in the groups' order
    with concurrent.futures.ThreadPoolExecutor(max_workers=parallel_runs(job, env)) as pool:
        futures = [pool.submit(one_group, i, d, sm, g) for i, ((d, sm), g) in enumerate(groups.items(), 1)]
        for f in futures:
            notes += f.result()
    return notes


def _memcheck_run(
    job: Job,
    prep: Prepared,
    work: str,
    env: dict[str, str],
    by_key: dict[str, VersionGrade],
    driver: str,
    small: tuple[str, ...],
    rules: list[VersionRule],
    attempt: str,
    notes: list[str],
    progress: Callable[[str], None],
) -> list[VersionRule]:
    """One instrumented run of `rules`' versions; their errors go to their grades. Returns the
    versions the run never reached (the driver skipped them after an earlier version's sticky CUDA
    error): the next run's, unless no version was reached at all."""
    spec = run.RunSpec(
        driver=prep.build.drivers[driver],
        version=",".join(r.version for r in rules),
        args=list(small),
        workdir=work,
        name=f"{rules[0].subproject}.memcheck.{attempt}",
        env=env,
        time_limit_s=max(300.0, job.rubric.limits.timeout_min_s),
        memory_limit_gb=job.rubric.limits.memory_limit_gb,
        output_limit_kb=job.rubric.limits.output_limit_kb,
        sandbox=job.sandbox,
        gpu=True,
        wrapper=memcheck.wrapper(memcheck.tool()),
    )
    raw = run.execute(spec)
    names = ", ".join(r.version for r in rules)
    size = ((checks.size_list(list(small)) or (0, ["?"]))[1] or ["?"])[0]
    try:
        text = Path(raw.log).read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    found = memcheck.errors(text)  # what it printed, also when it did not finish
    if not memcheck.finished(text) or raw.timed_out:
        why = (run._killed(raw, spec, 0) or (None, ""))[1] or run.log_line(raw.log, -1) or run.exit_text(raw.rc)
        notes.append(
            f"memcheck of {names} at n={size} did not finish ({why}): "
            + (
                f"{len(found)} errors before it stopped, the rest of their memory not checked"
                if found
                else "their memory was not checked"
            )
        )
        progress(f"[grade] {prep.name}: {notes[-1]}")
        _apply_memcheck(job, by_key, rules, found, size)
        return []
    owned = set().union(*(job.own_files(r) for r in rules))
    other = [e for e in found if not memcheck.in_files(e, owned)]  # the harness's or a library's
    progress(
        f"[grade] {prep.name}: memcheck of {names} at n={size}: {len(found)} errors ({raw.seconds:.1f} s)"
        + (f"; {len(other)} in no graded file, the first: {other[0]}" if other else "")
    )
    unreached = [r for r in rules if memcheck.unreached(raw.rows, r.version)]
    _apply_memcheck(job, by_key, [r for r in rules if r not in unreached], found, size)
    if len(unreached) == len(rules):  # nothing ran: another run would skip them too
        if unreached:
            notes.append(f"memcheck of {names} at n={size}: the driver ran none of them, their memory was not checked")
        return []
    return unreached


def _apply_memcheck(
    job: Job, by_key: dict[str, VersionGrade], rules: list[VersionRule], found: list[memcheck.MemError], size: str
) -> None:
    """Each error to the versions whose own files hold its kernel's source line."""
    for rule in rules:
        own = job.own_files(rule)
        mine = [e for e in found if memcheck.in_files(e, set(own))]
        if mine:
            score.apply_memcheck(by_key[rule.key], memcheck.summary(mine, size), job.rubric)


def profile_versions(
    job: Job,
    prep: Prepared,
    work: str,
    env: dict[str, str],
    grades: list[VersionGrade],
    progress: Callable[[str], None] = print,
) -> list[str]:
    """Nsight Compute's view of each graded GPU version that ran kernels of its own, on the grading
    GPU, after everything graded: one `--profile` run per driver (--version a,b,...) in the same
    sandbox as the graded runs, bounded by the rubric's profile_timeout_s a version. Each profile is
    attached to its version (VersionGrade.profile), for information only: nothing here moves a point.
    Returns the report's notes: the one reason when no version could be profiled (ncu missing, the
    counters not readable by the sandbox's uid), said once instead of under every version."""
    if not getattr(job.rubric, "profile", False) or env.get("COURSE_GRADER_GPU") != "1":
        return []
    by_key = {g.key: g for g in grades}
    groups: dict[str, list[VersionRule]] = {}
    for rule in job.rules:
        g = by_key.get(rule.key)
        if g is not None and ran_own_kernels(g.cases):
            groups.setdefault(rule.driver, []).append(rule)
    if not groups:
        return []
    if getattr(job, "runs_per_gpu", 1) > 1:  # ncu replays each kernel with the GPU's counters to itself
        return [
            f"profile (Nsight Compute, for information): skipped: {job.runs_per_gpu} students' runs share each GPU "
            "in this job, and a profile needs the GPU to itself"
        ]
    ncu = profiles.ncu_path(env)
    if not ncu:
        return ["profile (Nsight Compute, for information): skipped: ncu not found on the grading machine's PATH"]
    for driver, rules in groups.items():
        _profile_run(job, prep.build.drivers[driver], work, dict(env, COURSE_NCU=ncu), rules, by_key)
        progress(f"[grade] {prep.name}: profile of {', '.join(r.version for r in rules)}")
    profiled = [by_key[r.key] for rules in groups.values() for r in rules]
    shared = profiles.shared_reason([g.profile for g in profiled])
    if not shared:
        return []
    for g in profiled:
        g.profile = {}
    return [f"profile (Nsight Compute, for information): {shared}"]


def _profile_run(
    job: Job, driver: str, work: str, env: dict[str, str], rules: list[VersionRule], by_key: dict[str, VersionGrade]
) -> None:
    """One driver's --profile of `rules`' versions in the sandbox; each version's profile (or why
    there is none) into its grade. For information only, so nothing here may fail a grade: an
    error the reading did not foresee becomes each version's reason."""
    try:
        _profile_driver(job, driver, work, env, rules, by_key)
    except Exception as e:  # noqa: BLE001
        why = f"the grader could not read it ({type(e).__name__})"
        for r in rules:
            by_key[r.key].profile = {"status": "skipped", "detail": why}


def _profile_driver(
    job: Job, driver: str, work: str, env: dict[str, str], rules: list[VersionRule], by_key: dict[str, VersionGrade]
) -> None:
    versions = [r.version for r in rules]
    limit = job.rubric.profile_timeout_s * len(versions)
    # a folder of its own, empty: the graded runs' logs and CSVs (the hidden cases' arguments among
    # them) stay out of what the profiled process, the student's code, can read
    folder = os.path.join(work, "profile", rules[0].subproject)
    run.remove_any(folder)
    spec = run.RunSpec(
        driver=driver,
        version=",".join(versions),
        args=["--profile"],
        workdir=folder,
        name=f"{rules[0].subproject}.profile",
        env=env,
        time_limit_s=limit,
        memory_limit_gb=job.rubric.limits.memory_limit_gb,
        output_limit_kb=job.rubric.limits.output_limit_kb,
        sandbox=job.sandbox,
        gpu=True,
        read_only=profiles.ncu_folders(env["COURSE_NCU"]),  # COURSE_NCU: the real program (ncu_path)
        graded=False,
    )
    raw = run.execute(spec)
    got, why = profiles.read(os.path.join(folder, spec.name + ".csv"), versions)
    if raw.timed_out:
        why = f"the profile did not finish in {limit:.0f} s (killed)"
    elif not got and raw.rc not in (0, 1):
        why = f"{why}: {run.exit_text(raw.rc)}: {run.log_line(raw.log, -1)}"
    for r in rules:
        by_key[r.key].profile = got.get(r.version) or {"status": "skipped", "detail": why or "no row of it"}


CEILINGS = ("copy_bandwidth", "fp32_fma_peak", "launch_latency")


def measured_ceilings(rows: list[dict[str, str]]) -> dict[str, str]:
    """The GPU's ceilings a run measured (its meta row), as $COURSE_CEILINGS hands them to the
    job's later runs (common/environment.hpp): {} where the run measured none."""
    for r in rows:
        if r.get("kind") == "meta":
            m = course_csv.parse_metrics(r.get("metrics"))
            if all(m.get(k, 0) > 0 for k in CEILINGS):
                return {"COURSE_CEILINGS": ";".join(f"{k}={m[k]:.6g}" for k in CEILINGS)}
    return {}


def case_spec(
    job: Job,
    rule: VersionRule,
    drivers: dict[str, str],
    workdir: str,
    env: dict[str, str],
    i: int,
    ref: dict[str, Any] | None,
    sharing: int = 1,
) -> run.RunSpec:
    """The run of case i of a version: its driver, arguments, limits and sandbox. `sharing` runs of
    the student at once share the slot's host memory limit (a check that passes the limit runs
    again alone, with all of it: run_all_versions)."""
    lim = job.rubric.limits
    return run.RunSpec(
        driver=drivers[rule.driver],
        version=rule.version,
        args=rule.cases[i].args,
        workdir=workdir,
        name=f"{rule.subproject}.{rule.version}.{i}",
        env=env,
        # the reference was timed alone on its GPU: a GPU shared by K runs gives each K times the time
        time_limit_s=lim.time_limit(ref.get("seconds") if ref else None) * max(1, job.runs_per_gpu),
        memory_limit_gb=lim.memory_limit_gb / max(1, sharing),
        output_limit_kb=lim.output_limit_kb,
        recorder=job.recorder if env.get("COURSE_GRADER_GPU") == "1" else "",
        sandbox=job.sandbox,
        gpu=env.get("COURSE_GRADER_GPU") == "1",
    )


def retime(
    job: Job,
    rule: VersionRule,
    drivers: dict[str, str],
    workdir: str,
    env: dict[str, str],
    ref_cases: dict,
    kernels_seen: list[str] | None = None,
    own_symbols: list[str] | None = None,
) -> tuple[float, str] | None:
    """The timed case of a version run once more, its largest size alone where it has a size list,
    as every graded run is (the recorder injected and the process named as a resumed one: a run
    cannot tell it is a re-timing): its timed row's median and label where that row passed and,
    against a reference record, where the run's evidence of that row matches the reference's
    (checker_evidence) and, given `kernels_seen` (what the graded case ran), where it ran no kernel
    the graded case did not; None otherwise."""
    i = next((k for k, c in enumerate(rule.cases) if c.timed), None)
    if i is None:
        return None
    spec = case_spec(job, rule, drivers, workdir, env, i, ref_cases.get(rule.cases[i].name))
    sizes = checks.size_list(spec.args)
    largest = max(sizes[1], key=lambda t: checks.size_value(t) or -1) if sizes and sizes[1] else None
    spec = dataclasses.replace(  # the timed row is the largest size's: that size alone
        spec,
        args=checks.with_sizes(spec.args, [largest]) if largest else spec.args,
        name=f"{rule.subproject}.{rule.version}.{i}.1",  # as a resumed run of the largest size alone is named
    )
    raw = run.execute(spec)
    t = run.timed_row(raw.rows, rule.version, rule)
    if t is None or raw.timed_out or raw.rc not in (0, 1):
        return None
    if kernels_seen is not None:  # the same work as the graded run: a library or the host would show here
        log = kernels.read_log(raw.kernel_log) if spec.recorder else []
        seen = {kernels.stable_name(k) for k in kernels_seen}
        if log is None or any(kernels.stable_name(k) not in seen for k, _ in log) or (kernels_seen and not log):
            return None
    if own_symbols and spec.recorder and sizes:  # a written time, not a measured one (forged_time)
        took = kernels.own_ns([raw.kernel_log], set(own_symbols))
        if kernels.time_below_own_work(float(t["median_ms"]), took, kernels.runs_at_most(list(spec.args), 1)):
            return None
    label = checks.label(t)
    ref = ref_cases.get(rule.cases[i].name) or {}
    mine = {k: v for k, v in ref.get("evidence", {}).items() if checks.matches(k.split("\t", 1)[1], label)}
    if evidence.mismatches([(raw.evidence, raw.evidence_overflow)], mine):
        return None  # its output was not the reference's: its time does not count
    return float(t["median_ms"]), run.case_label(t)


def forged_time(cr: CaseResult, paths: list[str], case: Case, sizes: tuple[int, list[str]] | None) -> None:
    """A timed case whose reported median is under what its own kernels took a run (CUPTI, outside
    the version's reach) keeps its tests but not its time: the time was not measured, it was
    written."""
    if cr.timed_ms is None or not sizes:  # a size list bounds how often the driver runs the version
        return
    runs = kernels.runs_at_most(list(case.args), len(sizes[1]))
    own = {m for m, k in zip(cr.kernel_symbols, cr.kernels) if k.owner == "own"}
    why = kernels.time_below_own_work(cr.timed_ms, kernels.own_ns(paths, own), runs)
    if why:
        cr.timed_ms, cr.timed_case, cr.untimed = None, "", why
        cr.detail = (cr.detail + "; " if cr.detail else "") + why


def merged_kernel_log(paths: list[str]) -> list[tuple[str, int]] | None:
    """The kernel records of a case's processes as one: launches summed by kernel, in first-seen
    order; None when no process left a record."""
    logs = [kernels.read_log(p) for p in paths]
    if all(log is None for log in logs):
        return None
    counts: dict[str, int] = {}
    for log in logs:
        for name, launches in log or []:
            counts[name] = counts.get(name, 0) + launches
    return list(counts.items())


def out_of_process_check(
    cr: CaseResult,
    runs: list[tuple[str, bool]],
    version: str,
    ref: dict[str, Any] | None,
    evidence_out: dict[str, dict[str, list[str]]] | None,
) -> None:
    """A student's test its run calls correct stays correct only when the evidence of it matches
    the reference's (a record about no test in particular, or evidence unusable as a whole, fails
    every test); a reference's correct case keeps its evidence for the students'."""
    if cr.status is not Status.CORRECT and not any(t.status is Status.CORRECT for t in cr.tests):
        return
    if ref is not None:
        wrong = evidence.mismatches(runs, ref.get("evidence", {}))
        for what, why in wrong.items():
            hit = [t for t in cr.tests if what and checks.matches(what, t.name)] or cr.tests
            for t in hit:
                if t.status is Status.CORRECT:
                    t.status, t.detail = Status.INCORRECT, f"checked outside the run: {what or 'its evidence'}: {why}"
        if cr.tests:
            runner_case.summarize(cr)
        elif wrong:  # a case without tests (no rows of its own): the case
            what, why = next(iter(wrong.items()))
            cr.status, cr.detail = Status.INCORRECT, f"checked outside the run: {what or 'its evidence'}: {why}"
    if evidence_out is not None and cr.status is Status.CORRECT:
        try:
            evidence_out[cr.name] = evidence.for_record_runs(runs, version)
        except evidence.EvidenceError as e:
            cr.status, cr.detail = Status.HARNESS_ERROR, f"the driver's evidence: {e}"


def host_work(cr: CaseResult, ref: dict[str, Any] | None, rows: list[dict[str, str]], version: str) -> None:
    """A case the reference solves with kernels of its own and the student's run solves with none
    (copied to the host, computed there, copied back): not the version's own GPU work."""
    if not ref or not ref.get("own_kernels"):
        return
    # What passed must be work a kernel would do: an empty input or one element has a right answer
    # without one (the harness answers n = 0 itself, and a guard may answer n = 1 on the host), so
    # an unwritten version that passed only those is "not written" or "incorrect", not host work.
    if cr.status is not Status.CORRECT and not any(
        t.status is Status.CORRECT and not _trivial_size(t.name) for t in cr.tests
    ):
        return
    if any(k.owner == "own" for k in cr.kernels):
        return
    sizes = sorted({r.get("n", "") for r in rows if r.get("version") == version and r.get("n")}, key=_as_int)
    at = ",".join(sizes if len(sizes) <= 5 else sizes[:4] + ["...", sizes[-1]])
    cr.status = Status.NOT_OWN_WORK
    cr.detail = f"no kernel of its own ran at n={at or '?'}: the work happened on the host"


def _trivial_size(test_name: str) -> bool:
    """A test of n = 0 or n = 1 (its label names the size first: "n=0 op=scan")."""
    m = re.match(r"n=(\d+)(?:\s|$)", test_name)
    return m is not None and int(m.group(1)) < 2


def _as_int(s: str) -> int:
    return int(s) if s.isdigit() else -1


def gpu_rows(rows: list[dict[str, str]], version: str) -> bool:
    return any(
        r.get("version") == version
        and run.row_verdict(r)[0] is run.RowStatus.PASS
        and not (r.get("device", "") or "").startswith("none")
        for r in rows
    )


def _group_retimes(
    job: Job,
    rule: VersionRule,
    groups: dict[str, Any],
    drivers: dict[str, str],
    workdir: str,
    env: dict[str, str],
    cache: dict[str, list[dict[str, float]]],
) -> list[float] | None:
    """The reference's timed case run twice more in its group's process (the versions of the group
    the reference's record keeps, `groups`), as a student's timed case runs: `rule`'s passed times
    of those runs, or None where its timed case ran alone (then retime). Each group runs twice once
    (`cache`, by group key)."""
    i = next((k for k, c in enumerate(rule.cases) if rubric_mod.timed_for_points(rule, c)), None)
    key = group_key([(rule, i)]) if i is not None else ""
    g = groups.get(key)
    if g is None or rule.version not in g.get("stood", []):
        return None  # timed alone, or its share of the group did not stand: re-timed alone
    if key not in cache:
        case = rule.cases[i]
        members = [
            (r, k)
            for r in job.rules
            if r.driver == rule.driver and r.version in g["stood"]
            for k, c in enumerate(r.cases)
            if c.name == case.name and c.args == case.args
        ]
        specs = {r.version: case_spec(job, r, drivers, workdir, env, k, None) for r, k in members}
        base = specs[members[0][0].version]
        cache[key] = []
        for n in range(2):
            step = dataclasses.replace(
                base,
                version=",".join(specs),
                name=f"{rule.subproject}.group.{hashlib.sha256(key.encode()).hexdigest()[:10]}.again{n}",
                time_limit_s=job.rubric.limits.time_limit(g.get("seconds")),
                ranges=True,
            )
            raw = run.execute(step)
            times = {}
            for r, _ in members:
                row = run.timed_row(raw.rows, r.version, r) if raw.rc in (0, 1) and not raw.timed_out else None
                if row is not None:
                    times[r.version] = float(row["median_ms"])
            cache[key].append(times)
    return [t[rule.version] for t in cache[key] if rule.version in t]


def _group_harness(job: Job, groups: dict[str, Any]) -> tuple[dict[str, set[str]], dict[tuple[str, str], float]]:
    """From the reference's groups: by version, the kernels its group ran between versions (the
    harness's: the solution's own left out), which its process of its own runs too; and by version
    and case, the seconds that process would take (its ranges' and the time between versions), from
    which the time limits of a student's run alone follow."""
    between: dict[str, set[str]] = {}
    alone: dict[tuple[str, str], float] = {}
    for key, g in groups.items():
        driver, case_name = key.split("\t")[1:3]
        names = sorted(g["outside"])
        dem = kernels.demangle(names)
        outside = {k for k, d in zip(names, dem) if kernels.qualified_name(d)[1] not in job.region_kernels}
        for rule in job.rules:
            if rule.driver == driver and rule.version in g.get("stood", []):
                between.setdefault(rule.key, set()).update(outside)
                alone[(rule.key, case_name)] = round(g["own"][rule.version] + g["between"], 2)
    return between, alone


def reference_record(
    job: Job, env: dict[str, str], device_key: str, progress: Callable[[str], None] = print
) -> dict[str, Any]:
    """The reference solution's record on this device, cached by device, instructor commit, rubric
    and assignment: per version its status, per case the time, the wall seconds (the students'
    time limits follow from them) and the kernels it ran (the harness's)."""
    # the drivers' and the recorder's bytes too: a tree edited (or rebuilt) since, committed or not,
    # is timed again rather than served another build's record
    built = hashlib.sha256()
    for path in sorted(os.path.join(job.plan.build, d) for d in job.drivers()) + [getattr(job, "recorder", "")]:
        built.update(path.encode() + b"\0" + build.file_digest(path))
    key = "-".join(
        [
            device_key.replace("/", "_"),
            job.instructor_commit[:12],
            job.rubric.sha256[:12],
            job.assignment.digest()[:12],
            built.hexdigest()[:12],
        ]
    )
    record = f"reference-{key}.json"  # signed (integrity.py): an edited record is timed again
    cached = integrity.cached_record(job.cache, record)
    if cached is not None:
        return json.loads(cached.decode("utf-8"))
    workdir = os.path.join(job.out, "reference", device_key.replace("/", "_"))
    drivers = {d: os.path.join(job.plan.build, d) for d in job.drivers()}
    index = kernels.kernel_definitions(job.assignment.root, source_files(job.assignment.root))
    rec = {
        "device_key": device_key,
        "instructor_commit": job.instructor_commit,
        "rubric_sha256": job.rubric.sha256,
        "versions": {},
    }
    meta: dict[str, str] = {}  # the GPU's ceilings, measured by the first timed run, handed to the students' runs
    evs: dict[str, dict[str, dict[str, list[str]]]] = {r.key: {} for r in job.rules}

    def one(
        rule: VersionRule, only: list[int], prior: list[CaseResult], sharing: int, premade: dict | None = None
    ) -> list[CaseResult]:
        # the ceilings, measured by the first run (alone on the GPU where any version is timed),
        # handed to every later run as to the students' (run_version fills `meta` once)
        return run_version(
            job,
            rule,
            drivers,
            index,
            workdir,
            dict(env, **meta),
            reference=None,
            own_files=job.own_files(rule),
            evidence_out=evs[rule.key],
            meta_out=meta,
            only=only,
            prior=prior,
            sharing=sharing,
            premade=premade,
        )

    groups: dict[str, Any] = {}
    grouped = group_runner(job, drivers, workdir, lambda: dict(env, **meta), None, groups, progress)

    def group(rules: list[VersionRule], i: int) -> dict[str, runner_case.CaseRun]:
        got = grouped(rules, i)
        if not meta:  # the ceilings the group's process measured, for every later run
            meta.update(next((c for c in (measured_ceilings(r.rows) for r in got.values()) if c), {}))
        return got

    ran = run_all_versions(job, job.rules, env, one, group if job.rubric.group_timed else None)  # as the students'
    between, alone = _group_harness(job, groups)
    regrouped: dict[str, list[dict[str, float]]] = {}  # a group's two more runs: each version's timed ms
    for rule in job.rules:
        cases, ev = ran[rule.key], evs[rule.key]
        status = (
            Status.CORRECT
            if all(c.status is Status.CORRECT for c in cases)
            else next(c.status for c in cases if c.status is not Status.CORRECT)
        )
        # the timed case twice more: the reference's time is the median of three, and its spread
        # (slowest over fastest) the band inside which no student wins or loses a speed point
        timed = next((c for c in cases if c.timed_ms is not None and c.name in score.timed_case_names(rule)), None)
        spread = {}
        if rule.speed and timed is not None and status is Status.CORRECT:
            # timed as the students' run is: in its group's process where it ran in one, else alone
            again = _group_retimes(job, rule, groups, drivers, workdir, dict(env, **meta), regrouped)
            if again is None:
                again = [a[0] for a in (retime(job, rule, drivers, workdir, env, {}) for _ in range(2)) if a]
            runs = [t for t in [timed.timed_ms] + again if t > 0]
            if runs:
                spread[timed.name] = (sorted(runs)[len(runs) // 2], round(max(runs) / min(runs) - 1, 3), runs)
        # the harness's kernels: what the reference ran, less the kernels of the solution's exercise
        # regions (its own; a student's run of them means it ran the instructor's code)
        mangled = sorted(
            {
                kernels.stable_name(m)
                for c in cases
                for m, k in zip(c.kernel_symbols, c.kernels)
                if k.owner != "own" and kernels.qualified_name(k.name)[1] not in job.region_kernels
            }
        )
        mangled = sorted(set(mangled) | between.get(rule.key, set()))
        rubric_problems = [
            f"{k.name}: {k.owner}"
            for c in cases
            for k in c.kernels
            if not k.allowed and not k.owner.startswith("not the version")
        ]
        rec["versions"][rule.key] = {
            "status": status.value,
            "detail": next((c.detail for c in cases if c.status is not Status.CORRECT), ""),
            "kernels": mangled,
            "rubric_problems": rubric_problems,
            "cases": {
                c.name: {
                    "ms": spread[c.name][0] if c.name in spread else c.timed_ms,
                    "spread": spread[c.name][1] if c.name in spread else 0.0,
                    "ms_runs": spread[c.name][2] if c.name in spread else [],
                    "timed_case": c.timed_case,
                    "seconds": alone.get((rule.key, c.name), c.seconds),  # the time limits follow from it
                    "own_kernels": sum(1 for k in c.kernels if k.owner == "own"),
                    "evidence": ev.get(c.name, {}),
                    "tests": [t.name for t in c.tests if t.status is Status.CORRECT],
                }
                for c in cases
            },
        }
        unchecked = [c.name for c in cases if c.status is Status.CORRECT and not ev.get(c.name)]
        note = f"; no evidence from {', '.join(unchecked)}: checked in the run only" if unchecked else ""
        took = sum(c.seconds or 0 for c in cases)
        progress(f"[grade] reference {rule.key}: {status.value} ({took:.1f} s of runs){note}")
    rec["groups"] = groups
    rec["ceilings"] = meta.get("COURSE_CEILINGS", "")
    integrity.cache_record(job.cache, record, json.dumps(rec, indent=1).encode("utf-8"))
    return rec


def source_files(tree: str) -> list[str]:
    out = []
    for d in assemble.SOURCE_DIRS:
        for base, _, names in os.walk(os.path.join(tree, d)):
            out += [
                os.path.relpath(os.path.join(base, n), tree)
                for n in names
                if n.endswith((".cu", ".cuh", ".cpp", ".hpp", ".h"))
            ]
    return out


@dataclass
class Prepared:
    """A student's checkout after splicing and building (the CPU part, before any GPU run)."""

    name: str
    path: str
    splice: object
    build: object
    tree: str
    index: dict
    static: dict  # version key -> findings
    provenance: dict
    # version key -> findings of kernels in the objects of exercises it builds on (not its own): they
    # stand only where its runs left no kernel record to say whether those kernels ran
    run_checked: dict = field(default_factory=dict)


def static_findings(
    job: Job, b: build.StudentBuild, index: dict[str, set[str]]
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """({version key: findings}, {version key: run-checked findings}) from the student's objects,
    without running them: the kernels and calls of each version's own objects (checker_kernels),
    and the object rules over every object built from a spliced file (checker_symbols: calls into
    the checker or out of the process, definitions of the harness's names, static constructors).
    A library kernel in an object of an exercise the version only builds on (scan_lookback on
    scan_warp_shuffle's file, whose scan calls CUB where scan_lookback uses only its block
    primitives) is run-checked: the version's kernel record says whether it ran in its runs."""
    found = symbols.check_student(job.symbols, b.objects) if job.symbols is not None else {}
    units = symbols.exercises_of_units(job.plan, job.exercise_files, found) if found else {}
    static, run_checked = {}, {}
    for rule in job.rules:
        own, first = job.own_files(rule), job.own_files(rule, first_only=True)
        context = (own, job.exercise_files, index, job.rubric.libraries, job.symbol_owner, job.harness_symbols)
        mine = [b.objects[f] for f in sorted(first) if f in b.objects]
        built_on = [b.objects[f] for f in sorted(own - first) if f in b.objects]
        later: list[str] = []
        static[rule.key] = kernels.static_check(rule, mine, *context, job.entry_points) + kernels.static_check(
            rule, built_on, *context, job.entry_points, seen_at_run=later
        )
        run_checked[rule.key] = later
        if found:
            exercises = {r if "/" in r else f"{rule.subproject}/{r}" for r in rule.requires}
            static[rule.key] = (
                symbols.version_findings(job.symbols, found, units, exercises, rule.driver) + static[rule.key]
            )
    return static, run_checked


def submission_provenance(job: Job | SimpleNamespace, path: str) -> dict[str, str]:
    """Where a submission came from: its path, commit and time (the commit's, else the newest
    exercise file's). git never runs with the submission's configuration (intake.py: HEAD parsed
    as data, the commit's time asked of a repository of the grader's)."""
    commit, why = intake.head_commit(path)
    when = intake.commit_time(path, commit) if commit else ""
    if not when:
        newest = intake.newest_mtime(path, job.assignment.exercise_files())
        when = datetime.datetime.fromtimestamp(newest, datetime.timezone.utc).isoformat() if newest else ""
    return {
        "submission": os.path.abspath(path),
        "submission_commit": commit or ("not a git checkout" + (f" ({why})" if why else "")),
        "submission_time": when,
    }


def work_dir(job: Job, student_id: str) -> str:
    """A student's work folder (clean tree, build, runs and their logs, hidden cases' arguments
    included): OUT/.grader/work/<id>, the grader's, apart from the reports in OUT/students/<id>."""
    return os.path.join(job.out, ".grader", "work", student_id)


def prepare_student(job: Job, name: str, path: str, progress: Callable[[str], None] = print) -> Prepared:
    t0 = time.time()
    work = work_dir(job, name)
    os.makedirs(work, exist_ok=True)
    tree = os.path.join(work, "tree")
    broken = {}  # exercise -> the first compiler error of a file holding its code
    cap = job.rubric.limits.file_limit_kb * 1024
    for _ in range(4):  # a file that does not compile: its exercises become stubs, the rest is graded
        sp = assemble.splice(
            job.assignment, path, job.handout, stubbed=frozenset(broken), file_cap=cap, macros=job.macros
        )
        assemble.clean_tree(job.assignment, sp.files, tree)
        b = build.build_student(
            job.plan,
            tree,
            list(sp.files),
            os.path.join(work, "build"),
            os.path.join(job.cache, "objects"),
            jobs=job.build_jobs or None,
            drivers=job.drivers(),
            sandbox=job.sandbox,
        )
        new = {
            job.exercise_files[f]: e
            for f, e in b.failed_sources.items()
            if f in job.exercise_files and job.exercise_files[f] not in broken
        }
        if b.ok or not new:
            break
        broken.update(new)
    b.broken = broken
    index = kernels.kernel_definitions(tree, source_files(tree)) if b.ok else {}
    static, run_checked = static_findings(job, b, index) if b.ok else ({}, {})
    prov = submission_provenance(job, path)
    progress(
        f"[grade] {name}: built in {time.time() - t0:.1f} s ({b.compiled} compiled, {b.cached} cached)"
        + ("" if b.ok else f": does not build: {b.error}")
        + "".join(f"\n[grade] {name}: {ex} does not build: {err}" for ex, err in sorted(broken.items()))
    )
    b.seconds = time.time() - t0
    for ex, why in sorted(sp.refused.items()):
        progress(f"[grade] {name}: {ex} refused (graded as the starter body): {why}")
    if b.ok and broken:
        progress(f"[grade] {name}: does not build: {', '.join(sorted(broken))} (stubbed; the rest is graded)")
    return Prepared(
        name=name,
        path=path,
        splice=sp,
        build=b,
        tree=tree,
        index=index,
        static=static,
        provenance=prov,
        run_checked=run_checked,
    )


def graded_version(job: Job, prep: Prepared, rule: VersionRule, cases: list[CaseResult], ref: dict) -> VersionGrade:
    """A version's grade from its cases and the static check of the student's objects."""
    return score.grade_version(
        rule,
        cases,
        job.rubric,
        ref,
        static_findings=prep.static.get(rule.key, []),
        run_checked=prep.run_checked.get(rule.key, []),
    )


def grade_prepared(
    job: Job,
    prep: Prepared,
    env: dict[str, str],
    reference: dict[str, Any],
    device: tuple[str, str, str],
    progress: Callable[[str], None] = print,
) -> StudentReport:
    """The runs and the score of a prepared student on the device of `env`."""
    t0 = time.time()
    name_, _, drv = device
    work = os.path.join(work_dir(job, prep.name), "runs")
    if reference.get("ceilings"):  # measured once for this GPU: about a second saved on every run
        env = dict(env, COURSE_CEILINGS=reference["ceilings"])
    graded, runnable = _runnable(job, prep, reference)

    def one(
        rule: VersionRule, only: list[int], prior: list[CaseResult], sharing: int, premade: dict | None = None
    ) -> list[CaseResult]:
        ref = reference["versions"][rule.key]
        return run_version(
            job,
            rule,
            prep.build.drivers,
            prep.index,
            work,
            env,
            reference=ref,
            only=only,
            prior=prior,
            sharing=sharing,
            premade=premade,
        )

    grouped = group_runner(job, prep.build.drivers, work, lambda: env, reference, None, _unused_groups(prep, progress))
    remembered, members = remembering(grouped)

    def solo(rule: VersionRule, i: int) -> bool:  # a check the reference solves with no kernel of its own
        case = reference["versions"][rule.key].get("cases", {}).get(rule.cases[i].name, {})
        return not case.get("own_kernels")

    clock: dict[str, float] = {}
    ran = run_all_versions(job, runnable, env, one, remembered if job.rubric.group_timed else None, solo, clock)
    for rule in runnable:  # a second try of a speed point runs alone again
        ref, cases = reference["versions"][rule.key], ran[rule.key]
        g = graded_version(job, prep, rule, cases, ref)
        g = second_try(job, rule, prep, work, env, ref, cases, g)
        unread_reason(job, rule, prep.splice, g)
        graded[rule.key] = g
        progress(
            f"[grade] {prep.name}: {rule.key}: {g.status.value}"
            + (f" {g.ms:.4g} ms" if g.ms else "")
            + (f" ({g.detail[:160]})" if g.status not in (Status.CORRECT, Status.UNWRITTEN) else "")
        )
    t_again = time.time()
    again = (grouped, one, lambda r: regrade(job, prep, reference, r, ran))
    group_second_tries(runnable, ran, graded, members, *again, progress, prep.name)
    clock["timed"] = clock.get("timed", 0) + time.time() - t_again
    grades = [graded[r.key] for r in job.rules if r.key in graded]  # the rubric's order
    t_mem = time.time()
    unchecked = memcheck_versions(job, prep, work, env, grades, progress)
    score.point_at_building_blocks(grades, job.rules)
    t_prof = time.time()
    notes = list(prep.splice.problems) + unchecked + profile_versions(job, prep, work, env, grades, progress)
    t_end = time.time()
    progress(  # where a student's run time went (the grader's log only)
        f"[grade] {prep.name}: runs {t_end - t0:.1f} s: timed cases {clock.get('timed', 0):.1f} s, checks "
        f"{clock.get('checks', 0):.1f} s, grading them {t_mem - t0 - sum(clock.values()):.1f} s, memcheck "
        f"{t_prof - t_mem:.1f} s, profile {t_end - t_prof:.1f} s"
    )
    if job.runs_per_gpu > 1 and env.get("COURSE_GRADER_GPU") == "1":
        notes.append(
            f"graded with {job.runs_per_gpu} students' runs sharing each GPU at once (a correctness pass): the "
            "times and speed points are not comparable with a grade of its own"
        )
    notes += [
        f"{ex}: refused, graded as the handout's starter body: {why}" for ex, why in sorted(prep.splice.refused.items())
    ]
    if prep.splice.added:
        notes.append("added files (ignored): " + ", ".join(prep.splice.added[:20]))
    if prep.splice.deleted:
        notes.append("deleted handout files (the instructor's are used): " + ", ".join(prep.splice.deleted[:20]))
    if job.sandbox is not None and not job.sandbox.safe:
        notes.insert(0, job.sandbox.describe())
    if job.recorder == "" and env.get("COURSE_GRADER_GPU") == "1":
        notes.append("no kernel recorder (CUPTI missing): only the static check looked at what versions call")
    prov = provenance(job, name_, drv, prep.provenance)
    rep = StudentReport(
        student=prep.name,
        display_name=intake.display_name(os.path.basename(os.path.normpath(prep.path))),
        provenance=prov,
        grades=grades,
        edited_outside=prep.splice.edited_outside,
        build_error=prep.build.error,
        notes=notes,
        build_seconds=round(prep.build.seconds, 1),
        run_seconds=round(time.time() - t0, 1),
    )
    return rep


def _unused_groups(prep: Prepared, progress: Callable[[str], None]) -> Callable[[str], None]:
    """The group runner's progress for a student: only a group its run could not use, and why (the
    instructor's log: a student's forged ranges show there)."""

    def note(line: str) -> None:
        if "not used" in line:
            progress(line.replace("[grade] ", f"[grade] {prep.name}: ", 1))

    return note


def _runnable(job: Job, prep: Prepared, reference: dict[str, Any]) -> tuple[dict[str, VersionGrade], list[VersionRule]]:
    """The grades of the versions that do not run (refused, not built: graded now), by key, and the
    versions that run, in the rubric's order."""
    graded: dict[str, VersionGrade] = {}
    runnable: list[VersionRule] = []
    for rule in job.rules:
        ref = reference["versions"].get(rule.key)
        if not ref or ref["status"] not in (Status.CORRECT.value, Status.UNWRITTEN.value):
            continue  # the reference cannot be graded here: left out of this job for everyone (finalize)
        broken = next(
            (
                f"{ex}: {err}"
                for ex, err in prep.build.broken.items()
                if any(f in job.exercise_of.get(ex, []) for f in job.own_files(rule))
            ),
            "",
        )
        refused = refusal_of(rule, prep.splice)
        if refused or not prep.build.ok or broken:
            err = broken or prep.build.error
            graded[rule.key] = score.grade_version(rule, [], job.rubric, ref, build_error=err, refused=refused)
        else:
            runnable.append(rule)
    return graded, runnable


def second_try(
    job: Job,
    rule: VersionRule,
    prep: Prepared,
    work: str,
    env: dict[str, str],
    ref: dict[str, Any],
    cases: list[CaseResult],
    g: VersionGrade,
) -> VersionGrade:
    """A speed point about to be lost: the timed case once more, and the faster of the two counts."""
    if g.ratio_to_reference is None or g.points_speed >= g.points_speed_max:
        return g
    timed = next((c for c in cases if c.timed_ms is not None and c.timed_case == g.timed_case), None)
    if timed is None or _grouped(timed):
        # a time from a process of several versions is compared with the reference's three runs of
        # its group (its band): an alone second try would set an alone time against group times
        return g
    own = [m for m, k in zip(timed.kernel_symbols, timed.kernels) if k.owner == "own"]
    # what the graded case ran, and the harness's kernels its process of its own runs too (a case
    # graded in a group has only its share: checker_kernels.split_by_version)
    seen = list(timed.kernel_symbols) + list(ref.get("kernels", []))
    again = retime(job, rule, prep.build.drivers, work, env, ref.get("cases", {}), seen, own)
    if again is None or again[1] != timed.timed_case:  # the same row and the same kernels, or no second try
        return g
    if again[0] < timed.timed_ms:
        timed.timed_ms = again[0]
        g = graded_version(job, prep, rule, cases, ref)
    g.speed_note = (g.speed_note + "; " if g.speed_note else "") + "timed twice, the faster counted"
    return g


def remembering(
    run_group: Callable[..., dict[str, runner_case.CaseRun]],
) -> tuple[Callable[[list[Member], int], dict[str, runner_case.CaseRun]], dict[str, list[Member]]]:
    """run_group, and where it keeps each group's versions as its process ran them (by group key)."""
    members: dict[str, list[Member]] = {}

    def remembered(group: list[Member], sharing: int) -> dict[str, runner_case.CaseRun]:
        members[group_key(group)] = list(group)
        return run_group(group, sharing)

    return remembered, members


def regrade(
    job: Job, prep: Prepared, reference: dict[str, Any], rule: VersionRule, ran: dict[str, list[CaseResult]]
) -> VersionGrade:
    """A version's grade from its cases as they are now (a faster second time in one of them)."""
    ref = reference["versions"][rule.key]
    return graded_version(job, prep, rule, ran[rule.key], ref)


def group_second_tries(
    rules: list[VersionRule],
    ran: dict[str, list[CaseResult]],
    graded: dict[str, VersionGrade],
    members: dict[str, list[Member]],
    run_group: Callable[..., dict[str, runner_case.CaseRun]],
    run_one: Callable[..., list[CaseResult]],
    regrade: Callable[[VersionRule], VersionGrade],
    progress: Callable[[str], None] = print,
    name: str = "",
) -> None:
    """Speed points about to be lost where the timed case ran in a group's process: that process
    once more (the same versions, as the reference's three runs of it were), and each such
    version's faster time counts (`graded` updated). A whole process can land in a slower mode than
    the next one (ground_seg's v3_grouped_stats took 1.45 ms a frame in most processes and 2.5-2.7 ms
    in some, the same build on one H100, 2026-11-26): one draw should not decide a point. The second
    process counts for a version only where its share of it stood (runner_case.run_group)."""
    lost: dict[str, list[tuple[VersionRule, int, CaseResult]]] = {}
    for rule in rules:
        g = graded.get(rule.key)
        if g is None or g.ratio_to_reference is None or g.points_speed >= g.points_speed_max:
            continue
        i = next((k for k, c in enumerate(rule.cases) if rubric_mod.timed_for_points(rule, c)), None)
        cases = ran.get(rule.key, [])
        timed = next((c for c in cases if c.timed_ms is not None and c.timed_case == g.timed_case), None)
        if i is None or timed is None or not _grouped(timed) or group_key([(rule, i)]) not in members:
            continue
        lost.setdefault(group_key([(rule, i)]), []).append((rule, i, timed))
    for key, items in lost.items():
        again = run_group(members[key], 1, 1)
        for rule, i, timed in items:
            first = timed.timed_ms
            redo = run_one(rule, [i], [], 1, premade={i: again[rule.key]}) if rule.key in again else []
            # a time only from a run that stands as the graded one did: correct, nothing but allowed
            # kernels (where a version's share of the group did not stand, its case ran alone, and
            # that run's kernels are its own record), no written time
            t = next(
                (c.timed_ms for c in redo if c.timed_ms is not None and c.timed_case == timed.timed_case and _clean(c)),
                None,
            )
            if t is None:  # its share of the second process did not stand: the first time stays
                continue
            g = graded[rule.key]
            if t < first:
                timed.timed_ms = t
                g = regrade(rule)
            g.speed_note = (g.speed_note + "; " if g.speed_note else "") + (
                f"its group's process run twice ({first:.4g} and {t:.4g} ms), the faster counted"
            )
            graded[rule.key] = g
            progress(f"[grade] {name}: {rule.key}: timed again in its group's process: {first:.4g} ms, then {t:.4g} ms")


def _grouped(c: CaseResult) -> bool:
    """Whether a case's result came from a process of several versions (runner_case._share)."""
    words = c.command.split(" ")
    return "--version" in words and "," in (words[words.index("--version") + 1 :] or [""])[0]


def refusal_of(rule: VersionRule, splice: assemble.Splice) -> str:
    """Why a block of an exercise the version requires was refused (checker_blocks), or ""."""
    need = {req if "/" in req else f"{rule.subproject}/{req}" for req in rule.requires}
    return next((why for ex, why in sorted(getattr(splice, "refused", {}).items()) if ex in need), "")


def unread_reason(job: Job, rule: VersionRule, splice: assemble.Splice, g: VersionGrade) -> None:
    """A version graded "not written" because the grader refused a file of its (a symlink, a FIFO,
    a file over the cap, changed markers): its detail names the file and why."""
    if g.status is Status.UNWRITTEN:
        why = next((w for f, w in sorted(getattr(splice, "unread", {}).items()) if f in job.own_files(rule)), "")
        if why:
            g.detail = f"{why}: graded as not written"


def provenance(job: SimpleNamespace, device_name: str, driver_version: str, submission: dict[str, str]) -> Provenance:
    """Where a report came from: the instructor's commit and rubric, this machine, now, and the
    submission's own record (path, commit, time)."""
    return Provenance(
        instructor_commit=job.instructor_commit,
        rubric_sha256=job.rubric.sha256,
        device=device_name,
        driver_version=driver_version,
        toolkit=toolkit_version(),
        graded_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        host=socket.gethostname(),
        sandbox=job.sandbox.describe() if getattr(job, "sandbox", None) else "",
        **submission,
    )


def harness_error_report(
    job: SimpleNamespace, name: str, path: str, error: str, device: tuple[str, str, str]
) -> StudentReport:
    """The report of a student the grader itself failed on (an exception while preparing or running
    it): every version 'harness error' with 0 points and the reason, so the student stands in the
    gradebook, marked for a regrade, instead of missing from it."""
    name_, _, drv = device
    try:
        sub = submission_provenance(job, path)
    except Exception:  # the submission itself may be what broke the grader
        sub = {"submission": os.path.abspath(path), "submission_commit": "unknown", "submission_time": ""}
    prov = provenance(job, name_, drv, sub)
    grades = [
        VersionGrade(
            subproject=r.subproject,
            version=r.version,
            status=Status.HARNESS_ERROR,
            detail=error[:300],
            points_correct=0.0,
            points_correct_max=r.correct,
            points_speed=0.0,
            points_speed_max=r.speed,
        )
        for r in job.rules
    ]
    return StudentReport(
        student=name,
        display_name=intake.display_name(os.path.basename(os.path.normpath(path))),
        provenance=prov,
        grades=grades,
        notes=[
            f"the grader failed on this submission ({error[:300]}); regrade it after the "
            "harness is fixed: these 0 points are not the student's"
        ],
    )


def finalize(report: StudentReport, reference_versions: set[str], rules: list[VersionRule]) -> StudentReport:
    """Drops the versions the reference could not grade on every GPU of the job (the same for every
    student, so the maximum is too) and says so."""
    dropped = [r.key for r in rules if r.key not in reference_versions]
    report.grades = [g for g in report.grades if g.key in reference_versions]
    if dropped:
        report.notes.append(
            f"{len(dropped)} versions are not graded in this job (the reference solution cannot be "
            f"graded on its devices), e.g. {', '.join(dropped[:3])}"
        )
    return report


def cleanup(job: Job, prep: Prepared, keep: bool = False) -> None:
    if not keep:
        shutil.rmtree(os.path.join(work_dir(job, prep.name), "tree"), ignore_errors=True)
        shutil.rmtree(os.path.join(work_dir(job, prep.name), "build", "obj"), ignore_errors=True)
