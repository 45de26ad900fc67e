"""One case of one version in its own process: the instructor's driver (relinked with the student's
objects), under a time limit, a memory limit on the process group and a cap on what is kept of
its output, with the kernel recorder injected when a GPU is used."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import stat
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import course_csv
from course_csv import Status as RowStatus

from . import checker_evidence
from .model import CaseResult, Status
from .runner_sandbox import Limits, Sandbox, open_for_step, tree_usage

if TYPE_CHECKING:
    from io import BufferedReader

    from judge.rubric import Case, VersionRule


@dataclass
class RunSpec:
    driver: str  # the executable
    version: str
    args: list
    workdir: str
    name: str  # file-name stem of this run's outputs
    time_limit_s: float
    memory_limit_gb: float
    output_limit_kb: int
    env: dict
    recorder: str = ""  # libcourse_kernel_recorder.so, "" for none
    sandbox: Sandbox | None = None  # None: the caller's choice of no sandbox (unit tests)
    gpu: bool = False  # the step sees the GPU's device nodes
    read_only: list = field(default_factory=list)  # what else the run reads (a data folder)
    wrapper: list = field(default_factory=list)  # a tool the driver runs under (compute-sanitizer)
    # a graded run: --fresh-inputs, the evidence pipe, its rows read. False: a run for information
    # only (--profile), whose CSV its caller reads with its own limits (checker_profile)
    graded: bool = True
    # a process that runs several versions (runner_case.run_group): the recorder also lists the NVTX
    # ranges and every kernel's interval, so each kernel goes to the version whose range held it
    ranges: bool = False


@dataclass
class RawRun:
    rc: int
    timed_out: bool
    memory_exceeded: bool
    processes_exceeded: bool
    seconds: float
    rows: list
    from_journal: bool
    log: str
    kernel_log: str
    output_bytes: int
    peak_rss_gb: float
    evidence: str = ""  # the records the run wrote to the grader's pipe (checker_evidence)
    evidence_overflow: bool = False


class EvidencePipe:
    """The pipe a run writes its evidence records to (`--evidence-fd`): the grader keeps the read
    end, the run inherits the write end. What is read past the cap is drained and dropped."""

    def __init__(self, limit: int = checker_evidence.MAX_BYTES) -> None:
        self.read_fd, self.write_fd = os.pipe()
        self.limit, self.data, self.overflow = limit, bytearray(), False
        self.thread = threading.Thread(target=self._pump, daemon=True)

    def start(self) -> None:
        """After the run started: the grader's copy of the write end closes, so the pipe ends with
        the run's last process."""
        os.close(self.write_fd)
        self.thread.start()

    def _pump(self) -> None:
        with os.fdopen(self.read_fd, "rb") as fh:
            while chunk := fh.read(65536):
                room = self.limit - len(self.data)
                if len(chunk) > room:
                    self.overflow = True
                self.data += chunk[: max(room, 0)]

    def text(self) -> str:
        self.thread.join(timeout=5)
        return self.data.decode("utf-8", errors="replace")


class CappedLog:
    """Keeps the first and the last `limit` bytes of a stream and counts the rest."""

    def __init__(self, stream: BufferedReader, path: str, limit: int) -> None:
        self.stream, self.path, self.limit = stream, path, limit
        self.head, self.tail, self.total = bytearray(), bytearray(), 0
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        while True:
            chunk = self.stream.read(65536)
            if not chunk:
                break
            self.total += len(chunk)
            room = self.limit - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail = (self.tail + chunk)[-self.limit :]

    def finish(self, header: str) -> None:
        self.thread.join(timeout=5)
        with open_fresh(self.path) as fh:
            fh.write(header.encode())
            fh.write(bytes(self.head))
            dropped = self.total - len(self.head) - len(self.tail)
            if dropped > 0:
                fh.write(f"\n[... {dropped} bytes of output left out ...]\n".encode())
            fh.write(bytes(self.tail))


def sandboxed(spec: RunSpec, driver_cmd: list[str], kfd: int, nonce: str = "") -> tuple[list[str], dict[str, str]]:
    """The run's command and environment: in the sandbox, the driver, the recorder and the data
    folder read-only, the run's folder writable, the GPU's nodes when it uses one, and only the
    allow-listed environment (never the grader's secret)."""
    extra = {}
    if spec.recorder:
        extra.update(CUDA_INJECTION64_PATH=spec.recorder, COURSE_KERNEL_FD=str(kfd), COURSE_KERNEL_NONCE=nonce)
        if spec.ranges:  # NVTX's calls reach CUPTI through the recorder (kernel_recorder.cpp)
            extra.update(COURSE_KERNEL_RANGES="1", NVTX_INJECTION64_PATH=spec.recorder)
    data = spec.env.get("COURSE_DATA_DIR", "")
    ro = [spec.driver] + ([spec.recorder] if spec.recorder else []) + list(spec.read_only) + spec.wrapper[:1]
    if data and os.path.isdir(data):
        extra["COURSE_DATA_DIR"] = data = os.path.abspath(data)
        ro.append(data)
    extra["CUDA_CACHE_PATH"] = os.path.join(spec.workdir, ".nv-compute-cache")  # the run's own JIT cache
    box = spec.sandbox
    if box is None:  # no sandbox object: the unit tests' direct runs
        env = {k: v for k, v in spec.env.items() if k not in DRIVER_CONTROL and k != "COURSE_GRADING_SECRET"}
        env.update(extra)
        return driver_cmd, env
    open_for_step(spec.workdir)
    # CPU time is every thread's: a backstop at the wall limit on every core (the poll kills first)
    cpu = int(spec.time_limit_s * (os.cpu_count() or 1)) + 10
    limits = Limits(cpu_s=cpu, file_mb=RUN_FILE_MB, processes=PROCESS_LIMIT * 4)
    env = box.step_env(spec.env, extra)
    cpus = spec.env.get("COURSE_GRADER_CPUS", "")
    if cpus:  # the OpenMP versions use the slot's cores, no more
        env.setdefault("OMP_NUM_THREADS", str(len(cpus.split(","))))
    cmd = box.command(
        driver_cmd, ro=ro, rw=[spec.workdir], cwd=spec.workdir, env=env, gpu=spec.gpu, limits=limits, cpus=cpus
    )
    return cmd, env


# More processes than this in one run's tree is a fork bomb: killed like a run over its memory.
PROCESS_LIMIT = 256
RUN_FILE_MB = 256  # the largest file a run may write (its CSV and kernel record are kilobytes)

# Every graded run (the reference's too): each timed repetition on an input the version has not seen,
# drawn outside the timed region, and its output checked, so a version that remembers its last input
# cannot be timed replaying its output (common/include/common/bench.hpp, FreshInputs).
GRADED_RUN_FLAGS = ["--fresh-inputs"]

# Variables that steer the drivers' own test hooks or inject code: never from the grader's environment.
DRIVER_CONTROL = (
    "COURSE_SKIP_EXIT",
    "COURSE_FAIL_VERSION",
    "CUDA_INJECTION64_PATH",
    "COURSE_KERNEL_LOG",
    "COURSE_KERNEL_FD",
    "COURSE_KERNEL_NONCE",
    "COURSE_KERNEL_RANGES",
    "NVTX_INJECTION64_PATH",
    "LD_PRELOAD",
)


def execute(spec: RunSpec) -> RawRun:
    os.makedirs(spec.workdir, exist_ok=True)
    out_csv = os.path.join(spec.workdir, spec.name + ".csv")
    log = os.path.join(spec.workdir, spec.name + ".log")
    klog = os.path.join(records_dir(spec.workdir), spec.name + ".kernels.tsv")
    for p in (out_csv, out_csv + ".partial", klog, klog + ".tmp"):
        remove_any(p)
    evidence = EvidencePipe()
    record = EvidencePipe(RUN_FILE_MB * 2**20) if spec.recorder else None  # the recorder's (COURSE_KERNEL_FD)
    flags = GRADED_RUN_FLAGS if spec.graded else []
    cmd = [spec.driver, "--version", spec.version] + list(spec.args) + flags + ["--csv", out_csv]
    nonce = secrets.token_hex(16)  # the recorder's header proves its log is the recorder's (kernel_record_is_genuine)
    pipe = ["--evidence-fd", str(evidence.write_fd)] if spec.graded else []
    wrapped, env = sandboxed(spec, spec.wrapper + cmd + pipe, record.write_fd if record else -1, nonce)
    fds = ((evidence.write_fd,) if spec.graded else ()) + ((record.write_fd,) if record else ())
    t0 = time.time()
    try:
        proc = subprocess.Popen(
            wrapped,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
            cwd=spec.workdir,
            pass_fds=fds,
        )
    finally:
        evidence.start()
        if record:
            record.start()
    capped = CappedLog(proc.stdout, log, spec.output_limit_kb * 1024)
    rc, timed_out, mem, forks, peak = _watch(proc, spec, t0)
    seconds = time.time() - t0
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # leftovers of a driver that exited
    capped.finish("$ " + " ".join(cmd) + "\n")
    if record:
        keep_record(record, klog, nonce)
    rows, journal = [], False
    try:
        if spec.graded:
            rows, journal = course_csv.read_journal(out_csv)
    except course_csv.CsvError as e:  # the driver's file, overwritten by what ran in its process
        rows, journal = [], True
        with os.fdopen(os.open(log, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW), "a", encoding="utf-8") as fh:
            fh.write(f"grade: {e}\n")  # the log open_fresh just wrote (nothing of the student's runs now)
    return RawRun(
        rc=rc,
        timed_out=timed_out,
        memory_exceeded=mem,
        processes_exceeded=forks,
        seconds=round(seconds, 2),
        rows=rows,
        from_journal=journal,
        log=log,
        kernel_log=klog,
        output_bytes=capped.total,
        peak_rss_gb=peak,
        evidence=evidence.text(),
        evidence_overflow=evidence.overflow,
    )


def _watch(proc: subprocess.Popen, spec: RunSpec, t0: float) -> tuple[int, bool, bool, bool, float]:
    """Waits for a run, killing its process group at its time, memory or process limit: (exit
    status, timed out, over memory, over processes, peak GB)."""
    timed_out = mem = forks = False
    peak = 0.0
    while True:
        try:
            return proc.wait(timeout=0.1), False, False, False, peak
        except subprocess.TimeoutExpired:
            pass
        rss, tasks = tree_usage(proc.pid)
        peak = max(peak, rss)
        if rss > spec.memory_limit_gb:
            mem = True
        elif tasks > PROCESS_LIMIT:
            forks = True
        elif time.time() - t0 > spec.time_limit_s:
            timed_out = True
        else:
            continue
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the driver and anything it started
        return proc.wait(), timed_out, mem, forks, peak


def case_label(row: dict[str, str]) -> str:
    parts = [f"n={row['n']}"] if row.get("n") not in (None, "", "0") or not row.get("params") else []
    if row.get("params"):
        parts.append(row["params"])
    if row.get("kind") not in ("version", None):
        parts.insert(0, row["kind"])
    return " ".join(parts) or "the run"


def row_verdict(row: dict) -> tuple[RowStatus, str]:
    """(status, detail) of a driver's row; a status word the driver cannot have written is a failure."""
    try:
        return course_csv.status_of(row), row.get("detail") or ""
    except course_csv.CsvError as e:
        return RowStatus.FAIL, f"unreadable row: {e}"


def exit_text(rc: int) -> str:
    """An exit status as a reader wants it: a shell (and bubblewrap) reports a process a signal
    killed as 128 + the signal, Python's subprocess (a run without the sandbox) as minus the signal."""
    if rc < 0:
        rc = 128 - rc
    if 128 < rc <= 128 + 64:
        try:
            return f"killed by signal {signal.Signals(rc - 128).name} (exit status {rc})"
        except ValueError:
            pass
    return f"exit status {rc}"


def _killed(raw: RawRun, spec: RunSpec, passed: int) -> tuple[Status, str] | None:
    """The run's status when the harness or a signal ended it, else None."""
    if raw.memory_exceeded:
        return Status.MEMORY_LIMIT, f"the process used more than {spec.memory_limit_gb:g} GB of host memory (killed)"
    if raw.processes_exceeded:
        return Status.CRASH, f"the run started more than {PROCESS_LIMIT} processes (killed)"
    if raw.timed_out:
        return Status.TIMEOUT, f"still running after {spec.time_limit_s:.0f} s (killed); {passed} rows had passed"
    if raw.rc < 0:
        return Status.CRASH, f"killed by signal {signal.Signals(-raw.rc).name}"
    return None


def kernel_record_is_genuine(path: str, nonce: str) -> bool:
    """Whether the kernel record at `path` is the injected recorder's: its first line carries the
    run's nonce, which the recorder read and wiped from the process's environment before any of the
    run's code ran. A record the run wrote itself (and kept the recorder from replacing) is not."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):  # a FIFO, a link or a folder is never read
            return False
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = fh.readline(4096)
    except OSError:
        return False
    return bool(nonce) and f"(run {nonce})" in head


def records_dir(workdir: str) -> str:
    """Where the grader keeps the kernel records of the runs in `workdir`: beside it, in no
    sandbox (a step binds its own run folder only), so no later run of the student can rewrite a
    record the grader wrote and reads after it."""
    d = workdir.rstrip(os.sep) + ".records"
    os.makedirs(d, exist_ok=True)
    return d


def keep_record(record: EvidencePipe, path: str, nonce: str) -> None:
    """The recorder's record as it came through the grader's pipe, written where the case's code
    reads it, by the grader, after the run's processes are gone: only a record that is one whole
    record of this run (its first line the recorder's header with the run's nonce, no second header,
    not over the cap); whatever the run left at that path is removed either way."""
    record.thread.join(timeout=5)
    data = b"" if record.thread.is_alive() else bytes(record.data)  # still being written: not whole
    remove_any(path)
    lines = data.decode("utf-8", errors="replace").split("\n")
    headers = [line for line in lines if line.startswith("# course kernel record")]
    if record.overflow or not data or len(headers) != 1 or not lines[0].startswith("# course kernel record"):
        return
    with open_fresh(path) as fh:
        fh.write(data)
    drop_forged_record(path, nonce)


def drop_forged_record(path: str, nonce: str) -> None:
    """Removes whatever the run left at its kernel record's path unless it is the recorder's (a
    file, a folder or a link the run made itself): the case then has no record of what ran."""
    if not kernel_record_is_genuine(path, nonce):
        remove_any(path)


def open_fresh(path: str) -> BinaryIO:
    """A new file at `path` for the grader to write, after the step's processes are gone: whatever
    the step left there (a file, or a link a student planted to have the grader, maybe root, write
    the log elsewhere) is removed first, and the open neither follows a link nor reuses a file."""
    remove_any(path)
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644), "wb")


def remove_any(path: str) -> None:
    """Removes what is at `path`, a file, a link or a folder, if anything."""
    with contextlib.suppress(OSError):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.remove(path)


def refused_arguments(raw: RawRun, version: str) -> bool:
    """Whether the driver refused a run's arguments (exit 2 with its usage text, before any row of
    the version): the grader's failure, not the student's. An exit 2 after rows is a crash."""
    if raw.rc != 2 or any(r.get("version") == version for r in raw.rows):
        return False
    try:
        return "usage:" in Path(raw.log).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def _verdict(
    raw: RawRun,
    status: list[tuple[tuple[RowStatus, str], dict[str, str]]],
    passes: list[dict[str, str]],
    version: str,
) -> tuple[Status, str]:
    """The status of a run that ended by itself: its rows' verdicts, its exit status, its CSV."""
    fails = [(reason, r) for (st, reason), r in status if st is RowStatus.FAIL]
    unwritten = [reason for (st, reason), _ in status if st is RowStatus.NOT_IMPLEMENTED]
    if fails:
        reason, row = fails[0]
        return Status.INCORRECT, f"{case_label(row)}: {reason}"
    if refused_arguments(raw, version):
        return Status.HARNESS_ERROR, "the driver refused the rubric's arguments: " + log_line(raw.log, 1)
    if raw.rc not in (0, 1):
        last = log_line(raw.log, -1)
        return Status.CRASH, exit_text(raw.rc) + (f": {last}" if last else "")
    if raw.from_journal:
        return Status.CRASH, "the run ended before writing its CSV (rows from its journal)"
    if unwritten:
        return Status.UNWRITTEN, unwritten[0]
    if passes:
        return Status.CORRECT, tests_passed(len(passes))
    reasons = sorted({f"{st.value}: {reason}" for (st, reason), _ in status})
    # the driver writes the version rows (role "version": not the reference's or the library's, which
    # it writes beside any version) of the version it runs only, whatever they say
    others = sorted({r.get("version") or "" for r in raw.rows if r.get("role") == "version"} - {version, ""})
    if not reasons and others:
        reasons = [
            f"the run ended normally, but its CSV has no row of {version}, only rows of "
            f"{', '.join(others)}: something in the process wrote over the CSV the driver wrote"
        ]
    return Status.NOT_GRADABLE, "; ".join(reasons or ["no rows for this version"])[:300]


def tests_passed(n: int) -> str:
    """A passed case's detail: its rows are its tests."""
    return f"{n} test{'' if n == 1 else 's'} passed"


def judge(raw: RawRun, version: str, case: Case, spec: RunSpec) -> CaseResult:
    """The case's status from the driver's rows and exit."""
    mine = [r for r in raw.rows if r.get("version") == version and r.get("kind") != "meta"]
    status = [(row_verdict(r), r) for r in mine]
    passes = [r for (st, _), r in status if st is RowStatus.PASS]
    res = CaseResult(
        name=case.name,
        hidden=case.hidden,
        visibility=case.visibility,
        status=Status.HARNESS_ERROR,
        command=" ".join([os.path.basename(spec.driver), "--version", version] + list(spec.args) + GRADED_RUN_FLAGS),
        seconds=raw.seconds,
        rows_passed=len(passes),
        log=os.path.basename(raw.log),
    )
    res.status, res.detail = _killed(raw, spec, len(passes)) or _verdict(raw, status, passes, version)
    if raw.output_bytes > spec.output_limit_kb * 1024:
        res.detail += f" (printed {raw.output_bytes / 2**20:.1f} MiB; the log keeps its head and tail)"
    return res


def log_line(path: str, index: int) -> str:
    try:
        lines = [
            line
            for line in Path(path).read_text(encoding="utf-8", errors="replace").split("\n")
            if line.strip() and not line.startswith("$ ")
        ]
        return lines[index][:200] if lines else ""
    except (OSError, IndexError):
        return ""


def timed_row(rows: list[dict[str, str]], version: str, rule: VersionRule) -> dict[str, str] | None:
    """The row whose time is compared with the reference: passed, timed, of the rule's timed kind,
    matching timed_params, the largest n."""
    cands = [
        r
        for r in rows
        if r.get("version") == version and row_verdict(r)[0] is RowStatus.PASS and r.get("median_ms") not in ("", None)
    ]
    pref = [r for r in cands if r.get("kind") == rule.timed_kind] or cands
    matched = [r for r in pref if rule.timed_params and rule.timed_params in r.get("params", "")] or pref
    if not matched:
        return None
    return max(matched, key=lambda r: (int(r["n"] or 0), r.get("params", "")))
