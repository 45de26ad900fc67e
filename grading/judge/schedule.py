"""Many students: on the GPUs of one machine (one student per GPU at a time, builds overlapping the
runs), or across a Slurm cluster (a job array of shards and a merge step)."""

from __future__ import annotations

import json
import os
import queue
import shlex
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from . import formats, integrity, student
from .model import Status, report_from_json
from .runner_sandbox import core_plan

if TYPE_CHECKING:
    from types import SimpleNamespace

    from judge.model import StudentReport
    from judge.student import Job


def console(progress: Callable[[str], None]) -> Callable[[str], None]:
    """progress, with what came from a student (a detail, a compiler error, a name) made harmless for
    the instructor's terminal: no escape sequence or control character (formats.clean)."""
    return lambda msg: progress(formats.clean(msg))


def visible_gpus() -> list[str]:
    """The GPU indices this process may use (CUDA_VISIBLE_DEVICES, else nvidia-smi's list)."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g for g in env.split(",") if g.strip() and g.strip() != "-1"]
    try:
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
        return (
            [str(i) for i, line in enumerate(p.stdout.split("\n")) if line.startswith("GPU ")]
            if p.returncode == 0
            else []
        )
    except (OSError, subprocess.TimeoutExpired):
        return []


def device_envs(gpus: list[str]) -> list[dict[str, str]]:
    """One environment per device slot: a GPU each (CUDA_VISIBLE_DEVICES), or the CPU alone, and
    the CPU cores its runs are pinned to (COURSE_GRADER_CPUS; runner_sandbox.core_plan)."""
    base = dict(os.environ)
    slots = core_plan(max(1, len(gpus)))
    if not gpus:
        env = dict(base, CUDA_VISIBLE_DEVICES="-1", COURSE_GRADER_GPU="0", COURSE_GRADER_CPUS=slots[0])
        return [env]
    return [
        dict(base, CUDA_VISIBLE_DEVICES=g, COURSE_GRADER_GPU="1", COURSE_GRADER_CPUS=slots[i])
        for i, g in enumerate(gpus)
    ]


def references(
    job: Job, envs: list[dict[str, str]], progress: Callable[[str], None] = print
) -> tuple[list[dict[str, Any]], list[tuple[str, str, str]]]:
    """The reference record of every device slot (computed in parallel, once per device and commit;
    slots that share a GPU share its record)."""
    recs = [None] * len(envs)
    ids = [student.device_identity(e) for e in envs]
    first = {}  # device identity -> the first slot on it
    for i, d in enumerate(ids):
        first.setdefault(d[1], i)

    def one(i: int) -> None:
        recs[i] = student.reference_record(job, envs[i], ids[i][1], progress)

    threads = [threading.Thread(target=one, args=(i,)) for i in sorted(set(first.values()))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, d in enumerate(ids):
        recs[i] = recs[first[d[1]]]
    return recs, ids


def gradable(records: list[dict[str, Any]]) -> tuple[set[str], dict[str, str]]:
    """The versions the reference grades on every device of the job (correct there; or not
    implemented, where a handout grades itself), and why the others not."""
    keys = None
    why = {}
    for rec in records:
        ok = {k for k, v in rec["versions"].items() if v["status"] in (Status.CORRECT.value, Status.UNWRITTEN.value)}
        for k, v in rec["versions"].items():
            if v["status"] not in (Status.CORRECT.value, Status.UNWRITTEN.value):
                why.setdefault(k, f"{v['status']}: {v['detail']}"[:200])
        keys = ok if keys is None else keys & ok
    return keys or set(), why


def grade_item(
    job: Job,
    item: student.Prepared | tuple[str, str, str, str],
    env: dict[str, str],
    rec: dict[str, Any],
    dev: tuple[str, str, str],
    keep: bool,
    progress: Callable[[str], None],
) -> tuple[str, StudentReport]:
    """(name, report) of one prepared student on one device slot; a builder's error tuple, or an
    exception while grading, becomes a harness-error report (the class goes on)."""
    if isinstance(item, tuple):
        _, name, path, err = item
        rep = student.harness_error_report(job, name, path, err, dev)
    else:
        name = item.name
        try:
            rep = student.grade_prepared(job, item, env, rec, dev, progress)
        except Exception as e:  # as in the builder: this student is reported, the class goes on
            rep = student.harness_error_report(job, name, item.path, f"{type(e).__name__}: {e}", dev)
        student.cleanup(job, item, keep)
    if rep.grades and all(g.status is Status.HARNESS_ERROR for g in rep.grades):
        progress(f"[grade] {name}: harness error: {rep.grades[0].detail}")
    return name, rep


@dataclass
class _Pipeline:
    """The class in flight: builder threads prepare students (splice, static checks, build) into
    `ready`; one runner thread per device slot grades them as they come."""

    job: Job
    keep: bool
    keep_keys: set[str]
    progress: Callable[[str], None]
    todo: queue.Queue = field(default_factory=queue.Queue)
    ready: queue.Queue = field(default_factory=queue.Queue)
    reports: list[StudentReport] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def builder(self) -> None:
        while True:
            try:
                name, path = self.todo.get_nowait()
            except queue.Empty:
                return
            try:
                self.ready.put(student.prepare_student(self.job, name, path, self.progress))
            except Exception as e:  # a harness problem with this student: reported, the class goes on
                self.ready.put(("error", name, path, f"{type(e).__name__}: {e}"))

    def runner(self, env: dict[str, str], rec: dict[str, Any], dev: tuple[str, str, str]) -> None:
        while True:
            item = self.ready.get()
            if item is None:
                return
            name, rep = grade_item(self.job, item, env, rec, dev, self.keep, self.progress)
            rep = student.finalize(rep, self.keep_keys, self.job.rules)
            write_report(self.job, rep)
            with self.lock:
                self.reports.append(rep)
            self.progress(
                f"[grade] {name}: {rep.points:g} / {rep.points_max:g} "
                f"(build {rep.build_seconds:g} s, runs {rep.run_seconds:g} s)"
            )


def grade_class(
    job: Job,
    students: list[tuple[str, str]],
    gpus: list[str],
    build_workers: int = 2,
    keep: bool = False,
    progress: Callable[[str], None] = print,
) -> tuple[list[StudentReport], float, set[str]]:
    """Grades [(name, path)] on the device slots of `gpus`; writes each student's files as they finish
    and the class files at the end, with the reference records it used (references.json, which the
    Slurm merge step reads). Returns (reports, seconds, gradable set)."""
    t0 = time.time()
    progress = console(progress)
    envs = device_envs(gpus)
    if job.sandbox is not None:  # builds overlap the runs: never on a core a run is timed on
        job.sandbox.build_cpus = core_plan(max(1, len(gpus)))[-1]
    recs, ids = references(job, envs, progress)
    keep_keys, why = gradable(recs)
    for k, w in sorted(why.items()):
        progress(f"[grade] not graded in this job: {k} (reference: {w})")
    t_ref = time.time() - t0
    pipe = _Pipeline(job, keep, keep_keys, progress, ready=queue.Queue(maxsize=max(2, 2 * len(envs))))
    for s in students:
        pipe.todo.put(s)
    builders = [threading.Thread(target=pipe.builder) for _ in range(max(1, build_workers))]
    runners = [threading.Thread(target=pipe.runner, args=(envs[i], recs[i], ids[i])) for i in range(len(envs))]
    for t in builders + runners:
        t.start()
    for t in builders:
        t.join()
    for _ in runners:
        pipe.ready.put(None)
    for t in runners:
        t.join()
    seconds = time.time() - t0
    reports = pipe.reports
    if students:
        formats.class_files(reports, job.out, [r for r in job.rules if r.key in keep_keys])
    write_timing(job.out, len(reports), len(set(gpus)), seconds, t_ref, reports, getattr(job, "runs_per_gpu", 1))
    write_references(job, recs)
    return reports, seconds, keep_keys


# ---- what the shards hand the merge: signed, verified before it is used ---------------------------
def report_label(job: Job | SimpleNamespace, student_id: str) -> str:
    """What a report's signature stands for: this student, in a job of this instructor commit and rubric."""
    return f"report:{job.instructor_commit}:{job.rubric.sha256}:{student_id}"


def references_label(job: Job | SimpleNamespace) -> str:
    return f"references:{job.instructor_commit}:{job.rubric.sha256}"


def write_report(job: Job | SimpleNamespace, rep: StudentReport, out: str | None = None) -> str:
    """A student's reports in OUT/students/<id>/ (out: OUT, default the job's), report.json signed
    (report.json.hmac) for the merge step. Returns the folder."""
    d = formats.student_dir(out or job.out, rep.student)
    formats.write_all(rep, d)
    integrity.sign_sidecar(integrity.key_for(job.cache), report_label(job, rep.student), os.path.join(d, "report.json"))
    return d


def write_references(job: Job | SimpleNamespace, recs: list[dict[str, Any]], out: str | None = None) -> None:
    """references.json (the reference records the job used, which the merge step reads), signed."""
    path = os.path.join(out or job.out, "references.json")
    formats.atomic_write(path, json.dumps(recs, indent=1) + "\n")
    integrity.sign_sidecar(integrity.key_for(job.cache), references_label(job), path)


def write_timing(
    out: str, n: int, gpus: int, seconds: float, t_ref: float, reports: list[StudentReport], runs_per_gpu: int = 1
) -> dict[str, float | None]:
    rec = {
        "students": n,
        "gpus": gpus,
        "runs_per_gpu": runs_per_gpu,
        "seconds": round(seconds, 1),
        "reference_seconds": round(t_ref, 1),
        "students_per_hour": round(3600 * n / (seconds - t_ref), 1) if n and seconds > t_ref else None,
        "seconds_per_student_per_gpu": round((seconds - t_ref) * max(gpus, 1) / n, 1) if n else None,
        "build_seconds_mean": round(sum(r.build_seconds for r in reports) / n, 1) if n else None,
        "run_seconds_mean": round(sum(r.run_seconds for r in reports) / n, 1) if n else None,
        # where a student's run time goes: per sub-project, the mean seconds and processes (cases run)
        "runs_by_subproject": runs_by_subproject(reports),
    }
    formats.atomic_write(os.path.join(out, "timing.json"), json.dumps(rec, indent=1) + "\n")
    return rec


def runs_by_subproject(reports: list[StudentReport]) -> dict[str, dict[str, float]]:
    """Per sub-project, a student's mean seconds of graded runs and mean number of cases run (each
    its own process, a resumed one aside)."""
    sums: dict[str, list[float]] = {}
    for r in reports:
        for g in r.grades:
            s = sums.setdefault(g.subproject, [0.0, 0.0])
            s[0] += sum(c.seconds for c in g.cases)
            s[1] += sum(1 for c in g.cases if c.seconds)
    n = max(len(reports), 1)
    return {sp: {"seconds_mean": round(t / n, 1), "cases_mean": round(k / n, 1)} for sp, (t, k) in sorted(sums.items())}


def shard(students: list[tuple[str, str]], index: int, count: int) -> list[tuple[str, str]]:
    return [s for i, s in enumerate(sorted(students)) if i % count == index]


# ---- Slurm ------------------------------------------------------------------------------------
def slurm_scripts(
    out: str, grade_cmd: list[str], shards: int, sbatch_opts: list[str], gpus_per_task: int
) -> dict[str, str]:
    """Writes the prepare, array and merge batch scripts under OUT/slurm/."""
    d = os.path.join(out, "slurm")
    os.makedirs(d, exist_ok=True)
    head = "#!/bin/bash\n" + "".join(f"#SBATCH {o}\n" for o in sbatch_opts)
    gres = f"#SBATCH --gres=gpu:{gpus_per_task}\n" if gpus_per_task else ""
    cmd = " ".join(shlex.quote(c) for c in grade_cmd)
    files = {
        "prepare.sbatch": head + f"#SBATCH --job-name=grade-prepare\n#SBATCH --output={d}/prepare-%j.log\n{gres}"
        f"set -euo pipefail\nexec {cmd} --prepare-only\n",
        "array.sbatch": head + f"#SBATCH --job-name=grade-shard\n#SBATCH --array=0-{shards - 1}\n"
        f"#SBATCH --output={d}/shard-%a.log\n{gres}set -euo pipefail\n"
        f'exec {cmd} --shard "$SLURM_ARRAY_TASK_ID" --of {shards}\n',
        "merge.sbatch": head + f"#SBATCH --job-name=grade-merge\n#SBATCH --output={d}/merge-%j.log\n"
        f"set -euo pipefail\nexec {cmd} --merge {shards}\n",
    }
    for name, text in files.items():
        formats.atomic_write(os.path.join(d, name), text)
    return {k: os.path.join(d, k) for k in files}


def slurm_submit(scripts: dict[str, str], progress: Callable[[str], None] = print) -> tuple[str, str, str]:
    """prepare -> array (afterok) -> merge (afterany: a failed shard still leaves the others' grades)."""

    def sbatch(*args: str) -> str:
        p = subprocess.run(["sbatch", "--parsable"] + list(args), capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"sbatch {' '.join(args)}: {p.stderr.strip()}")
        return p.stdout.strip().split(";")[0]

    prep = sbatch(scripts["prepare.sbatch"])
    arr = sbatch(f"--dependency=afterok:{prep}", scripts["array.sbatch"])
    merge = sbatch(f"--dependency=afterany:{arr}", scripts["merge.sbatch"])
    progress(f"[grade] Slurm: prepare {prep}, array {arr}, merge {merge}")
    return prep, arr, merge


def shard_reports(job: Job | SimpleNamespace, key: bytes, d: str, refused: dict[str, str]) -> list[StudentReport]:
    """The verified reports of the shard folder d (d/students/<id>/report.json and its signature);
    one that does not verify, cannot be read or names another student is refused (refused[id]: why)."""
    reports = []
    sd = os.path.join(d, formats.STUDENTS_DIR)
    for sid in sorted(os.listdir(sd)) if os.path.isdir(sd) else []:
        p = os.path.join(sd, sid, "report.json")
        if not os.path.lexists(p):
            continue  # no report: the student is listed as lost, with the shard's log
        try:
            rep = report_from_json(json.loads(integrity.verified_sidecar(key, report_label(job, sid), p)))
        except integrity.Tampered as e:
            refused[sid] = f"its report failed verification ({e}): forged or edited after grading"
            continue
        except (ValueError, KeyError, TypeError) as e:
            refused[sid] = f"its report cannot be read ({type(e).__name__})"
            continue
        if rep.student != sid:
            refused[sid] = f"its report names another student ({rep.student!r})"
            continue
        reports.append(rep)
    return reports


def read_shards(
    job: Job | SimpleNamespace, shards: int, progress: Callable[[str], None] = print
) -> tuple[list[dict[str, Any]], list[StudentReport], list[int], dict[str, str]]:
    """(reference records, students' reports, shards that left no results, {student id: why its
    report was refused}) from OUT/shards/<i>/. Nothing is used before its signature verifies
    (integrity.py): a shard whose references.json does not is left out like a shard that died."""
    key = integrity.key_for(job.cache)
    recs, reports, missing, refused = [], [], [], {}
    for i in range(shards):
        d = os.path.join(job.out, "shards", str(i))
        refs = os.path.join(d, "references.json")
        try:
            recs += json.loads(integrity.verified_sidecar(key, references_label(job), refs))
        except (integrity.Tampered, ValueError) as e:
            if os.path.lexists(refs):
                progress(f"[grade] merge: shard {i}: references.json refused ({e})")
            missing.append(i)
            continue
        reports += shard_reports(job, key, d, refused)
    return recs, reports, missing, refused


def merge(
    job: Job | SimpleNamespace,
    shards: int,
    students: Sequence[tuple[str, str]] = (),
    progress: Callable[[str], None] = print,
) -> tuple[list[StudentReport], list[int], list[str]]:
    """The class files from the shards' reports (OUT/shards/<i>/): the versions graded are those the
    reference graded correct on every shard's GPU, the same maximum for all. A student of the class
    (`students`, [(name, path)]) whose shard left no report gets a harness-error report naming the
    shard's log: listed in the class files with empty gradebook cells, never dropped."""
    progress = console(progress)
    recs, reports, missing, refused = read_shards(job, shards, progress)
    keep_keys, _ = gradable(recs)
    have = {r.student for r in reports}
    lost = []
    for i in range(shards):
        for name, path in shard(list(students), i, shards):
            if name not in have:
                lost.append(name)
                log = os.path.join(job.out, "slurm", f"shard-{i}.log")
                why = (
                    f"shard {i} of {shards}: {refused[name]} (see {log})"
                    if name in refused
                    else f"shard {i} of {shards} left no report for this student (see {log})"
                )
                reports.append(student.harness_error_report(job, name, path, why, ("not graded", "", "")))
    if lost:
        progress(
            f"[grade] merge: no report for {len(lost)} students ({', '.join(lost[:10])}"
            f"{', ...' if len(lost) > 10 else ''}): empty in the gradebook, regrade them"
        )
    for rep in reports:
        student.finalize(rep, keep_keys, job.rules)
        write_report(job, rep)
    formats.class_files(reports, job.out, [r for r in job.rules if r.key in keep_keys])
    if missing:
        progress(f"[grade] merge: shards {missing} left no results (see slurm/shard-*.log)")
    progress(
        f"[grade] merge: {len(reports)} students from {shards - len(missing)} shards -> "
        f"{os.path.join(job.out, 'gradebook.csv')}"
    )
    return reports, missing, lost
