"""scripts/grade.py: grade a checkout, a folder of students on this machine's GPUs, or a class on
Slurm. See the top README's "Teaching and grading" for the instructor's workflow."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from typing import TYPE_CHECKING

from . import checker_splice as assemble
from . import formats, intake, runner_sandbox, schedule, student
from . import rubric as rubric_mod
from . import runner_build as build

if TYPE_CHECKING:
    from judge.student import Job

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="grade.py",
        description=(
            "Grades student checkouts against the instructor's tree: only the STUDENT blocks of the "
            "assignment's exercise files are taken, spliced into a clean copy of the instructor's tree, built "
            "against its prebuilt objects and run version by version (time, memory and output limits; the "
            "kernels each version runs are recorded). Speed is scored against the reference solution timed "
            "on the same GPU in the same job."
        ),
    )
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--checkout", help="one checkout to grade (default: the instructor's tree itself)")
    src.add_argument("--students", help="a folder with one checkout per student")
    ap.add_argument(
        "--instructor", default=ROOT, help="the instructor's tree: the harness and the reference (default: this one)"
    )
    ap.add_argument("--instructor-build", help="its build folder (default: INSTRUCTOR/build/release)")
    ap.add_argument(
        "--handout",
        help="the handout as given to the students (make_handout.py's output): its "
        "HANDOUT.json is the assignment; default: generated for --subproject",
    )
    ap.add_argument("--rubric", help="default: INSTRUCTOR/grading/rubric.toml")
    ap.add_argument("--subproject", default=",".join(rubric_mod.SUBPROJECTS))
    ap.add_argument("--versions", default="", help="grade only these (NAME or sub-project/NAME)")
    ap.add_argument("--gpus", default="all", help="'all' visible GPUs, a count N, or 0 for the CPU alone")
    ap.add_argument(
        "--runs-per-gpu",
        type=int,
        default=1,
        help="students run at once on each GPU (default 1). More is a correctness pass: the timings share the "
        "GPU, so the speed points are not comparable, and every report says so",
    )
    ap.add_argument("--build-workers", type=int, default=2, help="students built at once (default 2)")
    ap.add_argument("--out", default="grade", help="where reports go (default grade/)")
    ap.add_argument(
        "--cache",
        help="the grader's cache: compiled objects, the reference's records, the signing key (default "
        "OUT/.grader/cache). Give jobs of one instructor tree the same folder (a regrade, late submissions "
        "into another --out) and an unchanged file is compiled and the reference run once",
    )
    ap.add_argument("--keep", action="store_true", help="keep each student's clean tree and objects")
    ap.add_argument("--shard", type=int, help="grade only shard I of --of K of --students (a Slurm array task)")
    ap.add_argument("--of", type=int, help="the number of shards")
    ap.add_argument("--merge", type=int, metavar="K", help="write the class files from K shards' results")
    ap.add_argument(
        "--slurm", type=int, metavar="K", help="submit the class to Slurm as K shards (a job array) plus a merge step"
    )
    ap.add_argument(
        "--sbatch",
        action="append",
        default=[],
        help="an #SBATCH option for every job (repeatable), e.g. --sbatch=--partition=gpu --sbatch=--time=01:00:00",
    )
    ap.add_argument("--slurm-gpus", type=int, default=1, help="GPUs per Slurm task (0: CPU versions only)")
    ap.add_argument(
        "--prepare-only", action="store_true", help="build the instructor's tree and the handout, then stop"
    )
    ap.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="build and run the students' code without bubblewrap, as the grader (every report says so)",
    )
    a = ap.parse_args(argv)
    if (a.shard is None) != (a.of is None) or (a.of is not None and not 0 <= a.shard < a.of):
        ap.error("--shard I needs --of K with 0 <= I < K")
    if (a.shard is not None or a.merge or a.slurm) and not a.students:
        ap.error("--shard, --merge and --slurm grade a class: give --students DIR")
    return a


def select_gpus(spec: str) -> list[str]:
    gpus = schedule.visible_gpus()
    if spec == "all":
        return gpus
    try:
        n = int(spec)
    except ValueError:
        raise SystemExit(f"grade: --gpus {spec}: 'all' or a count") from None
    if n > len(gpus):
        raise SystemExit(f"grade: --gpus {n}: only {len(gpus)} GPUs are visible")
    return gpus[:n]


def students_in(folder: str, out: str = "") -> tuple[list[tuple[str, str]], list[intake.Skipped]]:
    """([(id, path)], [skipped]) of a class folder (intake.list_students): a plain folder per student,
    each under a safe id; every entry that is not one (a symlink, a file, a dot-entry, the grader's
    own output folder) skipped with the reason."""
    try:
        return intake.list_students(folder, exclude=[out] if out else [])
    except OSError as e:
        raise SystemExit(f"grade: --students {folder}: {e.strerror}") from None


def load_job(a: argparse.Namespace, out: str, build_tree: bool = True) -> Job:
    """The grading job of the arguments. build_tree=False (a Slurm shard or the merge step) uses the
    instructor's build as the prepare step left it: shards run at once, and two builds of one
    folder race on CMake's dependency files."""
    rub = rubric_mod.load(a.rubric or os.path.join(a.instructor, "grading", "rubric.toml"))
    subs = [s for s in a.subproject.split(",") if s]
    bad = [s for s in subs if s not in rubric_mod.SUBPROJECTS]
    if bad:
        raise SystemExit(f"grade: --subproject: unknown {bad} (known: {', '.join(rubric_mod.SUBPROJECTS)})")
    versions = [v for v in a.versions.split(",") if v]
    if not a.handout and os.path.exists(os.path.join(a.instructor, "HANDOUT.json")):
        a.handout = a.instructor  # a handout grading itself (a student's self-check): its blocks are the reference
    handout = os.path.abspath(a.handout) if a.handout else os.path.join(os.path.abspath(a.out), ".grader", "handout")
    manifest = os.path.join(handout, "HANDOUT.json")
    if not a.handout and not os.path.exists(manifest):
        cmd = [
            sys.executable,
            os.path.join(a.instructor, "scripts", "make_handout.py"),
            handout,
            "--force",
            "--subproject",
            ",".join(subs),
        ]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"grade: writing the handout to compare submissions with failed: {p.stderr.strip()}")
    if not os.path.exists(manifest):
        raise SystemExit(f"grade: --handout {a.handout}: no HANDOUT.json (write it with scripts/make_handout.py)")
    assignment = assemble.load_assignment(a.instructor, subs, handout_manifest=manifest)
    subs = [s for s in subs if s in assignment.subprojects]
    rules = rub.select(subs, versions)
    if versions:
        known = {r.key for r in rub.versions} | {r.version for r in rub.versions}
        bad = [v for v in versions if v not in known]
        if bad:
            raise SystemExit(f"grade: --versions: not in the rubric: {bad}")
    if not rules:
        raise SystemExit("grade: nothing to grade (no rubric entry in the selection)")
    box = sandbox_for(a, self_check=handout == os.path.abspath(a.instructor))
    bdir = a.instructor_build or os.path.join(a.instructor, "build", "release")
    drivers = sorted({r.driver for r in rules})
    plan = build.prepare(a.instructor, bdir, drivers) if build_tree else build.load_built(a.instructor, bdir, drivers)
    box.extra_ro, box.extra_bin = build.toolchain(plan.build)
    files = assemble.tracked_files(handout)
    job = student.make_job(
        rub,
        rules,
        assignment,
        plan,
        (handout, files),
        out,
        cache_dir(a, plan.build),
        build_jobs=max(1, (os.cpu_count() or 2) // max(1, a.build_workers)),
        sandbox=box,
    )
    return job


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def cache_dir(a: argparse.Namespace, build_dir: str = "") -> str:
    """--cache, or the job's own under --out. Never in a place a student's code reads or writes: the
    students' folder (unless under --out there, which the grader skips as it skips its own output),
    or the instructor build, which the sandbox shows a compile and a link read-only."""
    cache = os.path.abspath(a.cache) if a.cache else os.path.join(os.path.abspath(a.out), ".grader", "cache")
    what = f"--cache {a.cache}" if a.cache else f"the cache {cache} (under --out; --cache puts it elsewhere)"
    if a.students and _inside(cache, a.students) and not _inside(cache, a.out):
        raise SystemExit(f"grade: {what}: inside --students {a.students} (the students' checkouts)")
    if build_dir and _inside(cache, build_dir):
        raise SystemExit(f"grade: {what}: inside the instructor build {build_dir}, which every compile reads")
    return cache


def sandbox_for(a: argparse.Namespace, self_check: bool) -> runner_sandbox.Sandbox:
    """bubblewrap, or no sandbox where the instructor says so; a student's self-check (the handout
    grading itself, on the student's own machine) goes on without one, and says so."""
    try:
        return runner_sandbox.probe(unsafe=a.unsafe_no_sandbox)
    except runner_sandbox.SandboxError as e:
        if not self_check:
            raise SystemExit(f"grade: {e}") from None
        print(f"grade: self-check without a sandbox ({e})", file=sys.stderr)
        return runner_sandbox.probe(unsafe=True)


def submit_slurm(a: argparse.Namespace) -> int:
    """--slurm: the prepare / array / merge jobs that grade the class on the cluster, submitted."""
    cmd = [
        sys.executable,
        os.path.abspath(os.path.join(a.instructor, "scripts", "grade.py")),
        "--students",
        os.path.abspath(a.students),
        "--instructor",
        a.instructor,
        "--subproject",
        a.subproject,
        "--out",
        os.path.abspath(a.out),
        "--gpus",
        "all" if a.slurm_gpus else "0",
    ]
    if a.unsafe_no_sandbox:
        cmd.append("--unsafe-no-sandbox")
    if a.runs_per_gpu != 1:
        cmd += ["--runs-per-gpu", str(a.runs_per_gpu)]
    for flag, val in (
        ("--versions", a.versions),
        ("--handout", a.handout),
        ("--rubric", a.rubric),
        ("--instructor-build", a.instructor_build),
        ("--cache", a.cache),
    ):
        if val:
            cmd += [flag, os.path.abspath(val) if flag != "--versions" else val]
    scripts = schedule.slurm_scripts(os.path.abspath(a.out), cmd, a.slurm, a.sbatch, a.slurm_gpus)
    try:
        schedule.slurm_submit(scripts)
    except (OSError, RuntimeError) as e:
        print(f"grade: Slurm: {e}", file=sys.stderr)
        return 2
    return 0


def grade_here(a: argparse.Namespace, job: Job, out: str) -> int:
    """A checkout, a folder of students or one shard of it, on this machine's GPUs."""
    if a.runs_per_gpu < 1:
        raise SystemExit(f"grade: --runs-per-gpu {a.runs_per_gpu}: at least 1")
    gpus = [g for _ in range(a.runs_per_gpu) for g in select_gpus(a.gpus)]  # a slot each
    job.runs_per_gpu = a.runs_per_gpu
    if a.students:
        studs, skipped = students_in(a.students, a.out)
        if a.shard is not None:
            studs = schedule.shard(studs, a.shard, a.of)
            for s in skipped:  # the merge step writes the class's skipped.csv
                print(f"[grade] skipped {s.name!r}: {s.why}")
        else:
            formats.skipped_file(out, skipped)
    else:
        path = os.path.abspath(a.checkout or a.instructor)
        if not os.path.isdir(path):
            raise SystemExit(f"grade: --checkout {path}: not a folder")
        studs = [(intake.safe_id(os.path.basename(path) or "checkout"), path)]
    reports, seconds, keep = schedule.grade_class(job, studs, gpus, a.build_workers, a.keep)
    if not a.students and reports:
        r = reports[0]
        report = os.path.join(formats.student_dir(out, r.student), "report.md")
        print(f"[grade] {r.points:g} / {r.points_max:g} points -> {report}")
    else:
        print(f"[grade] {len(reports)} students in {seconds:.0f} s -> {os.path.join(out, 'gradebook.csv')}")
    return 0


def main(argv: list[str] | None = None) -> int:
    a = parse_args(sys.argv[1:] if argv is None else argv)
    a.instructor = os.path.abspath(a.instructor)
    out = os.path.abspath(a.out)
    if a.shard is not None:
        out = os.path.join(out, "shards", str(a.shard))
    try:
        job = load_job(a, out, build_tree=a.shard is None and not a.merge)
    except (rubric_mod.RubricError, build.BuildError) as e:
        print(f"grade: {e}", file=sys.stderr)
        return 2
    if a.prepare_only:
        print(f"[grade] instructor tree built in {job.plan.build}; handout {job.handout[0]}")
        return 0
    if a.slurm:
        return submit_slurm(a)
    if a.merge:
        studs, skipped = students_in(a.students, a.out)
        formats.skipped_file(out, skipped)
        _, missing_shards, lost = schedule.merge(job, a.merge, studs)
        return 1 if missing_shards or lost else 0
    return grade_here(a, job, out)
