"""The instructor's prebuilt tree, and a student's build against it.

The instructor's tree is configured and built once (per instructor commit and GPU architecture):
the graded drivers, their static libraries and the kernel recorder. For a student, only the
translation units that include a spliced exercise file are compiled (with the instructor's own
compile commands, from compile_commands.json, pointed at the student's clean tree), the static
libraries that hold them are re-archived, and the drivers relinked. Objects are cached by the hash
of their command and spliced inputs, so an unchanged starter body costs nothing twice; each entry is
signed (integrity.py), and one that does not verify is compiled again."""

from __future__ import annotations

import concurrent.futures as cf
import fcntl
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import checker_splice as assemble
from . import integrity
from .runner_sandbox import Limits, Sandbox, open_for_step

RECORDER = "grading/libcourse_kernel_recorder.so"
# A student's compile: the largest file it may write, and its address space (nvcc's front end on a
# template-heavy translation unit stays below 4 GB; an `#include "/dev/zero"` or a runaway
# constexpr stops here instead of at the machine's memory)
COMPILE_FILE_MB = 512
COMPILE_MEMORY_GB = 8
CHUNK = 1 << 20


class BuildError(Exception):
    pass


@dataclass
class ObjectRule:
    output: str  # absolute path of the instructor's object
    source: str  # absolute source path
    directory: str
    command: list
    deps: set  # absolute paths of its inputs (from the compiler's depfile)


@dataclass
class LinkRule:
    directory: str
    command: list
    output: str  # absolute


@dataclass
class Plan:
    """What the instructor's build knows of itself."""

    root: str
    build: str
    objects: dict = field(default_factory=dict)  # abs object -> ObjectRule
    archives: dict = field(default_factory=dict)  # abs archive -> [abs objects] (ar order)
    drivers: dict = field(default_factory=dict)  # driver rel path (rubric) -> LinkRule

    def object_of_source(self, rel_source: str) -> list[str]:
        src = os.path.join(self.root, rel_source)
        return [o for o, r in self.objects.items() if r.source == src]


def run_logged(
    cmd: list[str], cwd: str, log: str, timeout: float | None = None, env: dict[str, str] | None = None
) -> int:
    with open(log, "a", encoding="utf-8") as fh:
        fh.write("$ " + " ".join(cmd) + "\n")
        fh.flush()
        return subprocess.run(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout, env=env).returncode


def gpu_visible() -> bool:
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    except OSError:
        return False


def prepare(
    root: str,
    build: str,
    drivers: list[str],
    jobs: int | None = None,
    log: str | None = None,
    cuda_arch: str | None = None,
) -> Plan:
    """Configures (if needed) and builds the instructor's tree in `build`: the drivers named in the
    rubric and the kernel recorder. Returns its Plan. Two grading jobs on one tree (a class and its
    hanging student beside it, two TAs' jobs) take turns: the second waits for the first's build and
    then finds it done, instead of configuring the tree while the first one does."""
    root, build = os.path.abspath(root), os.path.abspath(build)
    os.makedirs(build, exist_ok=True)
    log = log or os.path.join(build, "grader_prepare.log")
    path = os.path.join(build, ".grader_prepare.lock")
    try:  # read-only and world-readable: another user's job (a second TA) can take it too
        fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        print(f"grade: {path}: {e.strerror}: preparing the tree without waiting for other jobs", file=sys.stderr)
        return _prepare_locked(root, build, drivers, jobs, log, cuda_arch)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"grade: waiting for another job preparing {build}", file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as e:  # a file system without locks (NFS without its lock daemon)
            print(f"grade: {path}: {e.strerror}: preparing the tree without waiting for other jobs", file=sys.stderr)
        return _prepare_locked(root, build, drivers, jobs, log, cuda_arch)
    finally:
        os.close(fd)  # the lock goes with it (and with the process, however it ends)


def _prepare_locked(
    root: str, build: str, drivers: list[str], jobs: int | None, log: str, cuda_arch: str | None
) -> Plan:
    if not os.path.exists(os.path.join(build, "compile_commands.json")):
        cmd = [
            "cmake",
            "-S",
            root,
            "-B",
            build,
            "-DCMAKE_BUILD_TYPE=Release",
            "-DCMAKE_CUDA_FLAGS=-lineinfo",
            "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
            "-DCOURSE_BUILD_TESTS=OFF",
        ]
        if not cuda_arch and not gpu_visible():
            # nothing runs on a GPU here: one architecture (as the ci preset) instead of the portable set
            cuda_arch = "90"
        if cuda_arch:
            cmd.append(f"-DCMAKE_CUDA_ARCHITECTURES={cuda_arch}")
        if run_logged(cmd, root, log) != 0:
            raise BuildError(f"configuring the instructor's tree failed (see {log})")
    targets = [os.path.basename(d) + "_driver" for d in drivers]
    targets = [t for t in targets if t != "_driver"]
    cmd = ["cmake", "--build", build, "-j", str(jobs or os.cpu_count() or 2), "--target"] + targets
    if run_logged(cmd, root, log) != 0:
        raise BuildError(f"building the instructor's drivers failed (see {log})")
    rec = ["cmake", "--build", build, "--target", "course_kernel_recorder"]
    run_logged(rec, root, log)  # absent without CUPTI: the grader then says so
    return load_plan(root, build, drivers)


def load_built(root: str, build: str, drivers: list[str]) -> Plan:
    """The Plan of a build that prepare() already made (a Slurm shard's view): nothing is rebuilt;
    a driver or the build itself missing is an error that names the step to run."""
    missing = [d for d in drivers if d and not os.path.isfile(os.path.join(os.path.abspath(build), d))]
    if not os.path.exists(os.path.join(build, "compile_commands.json")) or missing:
        raise BuildError(
            f"{build}: the instructor's build lacks {', '.join(missing) or 'compile_commands.json'} "
            "(the prepare step, grade.py --prepare-only, builds it)"
        )
    return load_plan(root, build, drivers)


def load_plan(root: str, build: str, drivers: list[str]) -> Plan:
    root, build = os.path.abspath(root), os.path.abspath(build)
    plan = Plan(root=root, build=build)
    cc_path = os.path.join(build, "compile_commands.json")
    try:
        entries = json.loads(Path(cc_path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise BuildError(f"{cc_path}: {e} (configure with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)") from None
    for e in entries:
        cmd = shlex.split(e["command"]) if "command" in e else list(e["arguments"])
        out = os.path.normpath(os.path.join(e["directory"], cmd[cmd.index("-o") + 1]))
        plan.objects[out] = ObjectRule(
            output=out,
            source=os.path.abspath(e["file"]),
            directory=e["directory"],
            command=cmd,
            deps=read_depfile(out + ".d", e["directory"]),
        )
    for d in drivers:
        plan.drivers[d] = find_link_rule(build, d)
        collect_archives(plan, plan.drivers[d])
    return plan


def read_depfile(path: str, directory: str) -> set[str]:
    """The inputs a make-style dependency file names, as absolute paths: a relative one is the
    compile's, relative to its working folder `directory` (ccache with a base folder, or a build
    configured with relative paths, writes them so). Escapes: `\\ ` a space, `$$` a dollar."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError:
        return set()
    text = text.replace("\\\n", " ")
    deps = set()
    for line in text.split("\n"):
        if ":" not in line:
            continue
        _, rest = line.split(":", 1)
        for tok in depfile_tokens(rest):
            deps.add(os.path.normpath(tok if os.path.isabs(tok) else os.path.join(directory, tok)))
    return deps


def depfile_tokens(rest: str) -> list[str]:
    toks, cur, i = [], [], 0
    while i < len(rest):
        ch = rest[i]
        if ch == "\\" and i + 1 < len(rest) and rest[i + 1] in " #":
            cur.append(rest[i + 1])
            i += 2
            continue
        if ch == "$" and rest[i + 1 : i + 2] == "$":
            cur.append("$")
            i += 2
            continue
        if ch.isspace():
            if cur:
                toks.append("".join(cur))
                cur = []
        else:
            cur.append(ch)
        i += 1
    if cur:
        toks.append("".join(cur))
    return toks


_digests: dict = {}
_digests_lock = threading.Lock()


def file_digest(path: str) -> bytes:
    """SHA-256 of a file's bytes, remembered by (path, size, mtime, inode) for the process: the
    toolkit's headers are read once per job, not once per compile."""
    try:
        st = os.stat(path)
    except OSError:
        return b"missing"
    key = (path, st.st_size, st.st_mtime_ns, st.st_ino)
    with _digests_lock:
        got = _digests.get(key)
    if got is None:
        h = hashlib.sha256()
        try:
            with open(path, "rb") as fh:
                for chunk in iter(lambda: fh.read(CHUNK), b""):
                    h.update(chunk)
        except OSError:
            return b"unreadable"
        got = h.digest()
        with _digests_lock:
            _digests[key] = got
    return got


def response_files(rule: ObjectRule) -> list[str]:
    """The option files a compile command reads (`@file`, nvcc's `--options-file x.rsp`)."""
    out = []
    for tok in rule.command:
        if tok.startswith("@") or tok.endswith(".rsp"):
            path = tok[1:] if tok.startswith("@") else tok
            out.append(os.path.normpath(os.path.join(rule.directory, path)))
    return out


def check_sources(plan: Plan, files: dict[str, list[str]]) -> None:
    """Every file a graded exercise is written in must be an input of an object the student's build
    recompiles (an object of the drivers' libraries, by its dependency file): otherwise a student's
    code would never be compiled and the instructor's objects graded in its place. `files`: the
    exercise (for the message) -> its files, relative to the instructor's tree."""
    used = set()
    for r in plan.objects.values():
        if in_archives(plan, r.output):
            used |= r.deps
    for exercise, rels in sorted(files.items()):
        for rel in rels:
            if os.path.join(plan.root, rel) not in used:
                raise BuildError(
                    f"{plan.build}: no object of the graded drivers' libraries lists {rel} (exercise {exercise}) "
                    "among its inputs: its dependency files (<object>.d) are missing or name other paths. "
                    "A student's file would not be compiled; build the instructor tree again"
                )


def find_link_rule(build: str, driver: str) -> LinkRule:
    """The link line that writes build/<driver> (CMake's link.txt of its target)."""
    want = os.path.normpath(os.path.join(build, driver))
    sub = os.path.join(build, os.path.dirname(driver), "CMakeFiles")
    for tdir in sorted(os.listdir(sub)) if os.path.isdir(sub) else []:
        lt = os.path.join(sub, tdir, "link.txt")
        if not os.path.isfile(lt):
            continue
        directory = os.path.join(build, os.path.dirname(driver))
        for line in Path(lt).read_text(encoding="utf-8").split("\n"):
            cmd = shlex.split(line)
            if "-o" in cmd and os.path.normpath(os.path.join(directory, cmd[cmd.index("-o") + 1])) == want:
                return LinkRule(directory=directory, command=cmd, output=want)
    raise BuildError(f"no link rule writes {want} (is it built with CMake's Makefile generator?)")


def collect_archives(plan: Plan, rule: LinkRule) -> None:
    for tok in rule.command:
        if not tok.endswith(".a"):
            continue
        path = os.path.normpath(os.path.join(rule.directory, tok))
        if path in plan.archives or not path.startswith(plan.build):
            continue
        tdir = os.path.dirname(path)
        for lt in (
            sorted(os.listdir(os.path.join(tdir, "CMakeFiles")))
            if os.path.isdir(os.path.join(tdir, "CMakeFiles"))
            else []
        ):
            f = os.path.join(tdir, "CMakeFiles", lt, "link.txt")
            if not os.path.isfile(f):
                continue
            for line in Path(f).read_text(encoding="utf-8").split("\n"):
                cmd = shlex.split(line)
                if (
                    len(cmd) > 3
                    and os.path.basename(cmd[0]).endswith("ar")
                    and os.path.normpath(os.path.join(tdir, cmd[2])) == path
                ):
                    plan.archives[path] = [os.path.normpath(os.path.join(tdir, o)) for o in cmd[3:]]


@dataclass
class StudentBuild:
    ok: bool
    error: str = ""  # the compiler's first error, when not ok
    failed_sources: dict = field(default_factory=dict)  # rel spliced file -> the first error of a TU it is in
    broken: dict = field(default_factory=dict)  # exercise -> its error (stubbed so the rest builds)
    drivers: dict = field(default_factory=dict)  # driver rel path -> abs executable
    objects: dict = field(default_factory=dict)  # rel source -> abs student object
    compiled: int = 0
    cached: int = 0
    seconds: float = 0.0
    log: str = ""


@dataclass
class _Compiler:
    """Compiles one translation unit of the plan against the student's clean tree, through a cache of
    objects keyed by the command and the spliced files it includes."""

    plan: Plan
    tree: str
    out_dir: str
    cache_dir: str
    spliced_abs: dict[str, str]  # instructor path -> the clean tree's copy
    log: str
    timeout: int
    sandbox: Sandbox | None = None

    def env(self) -> dict[str, str] | None:
        if self.sandbox is None:
            return None
        return self.sandbox.step_env(dict(os.environ), self.sandbox.compiler_env(dict(os.environ)))

    def confined(self, cmd: list[str], cwd: str, dst: str) -> list[str]:
        """The compile in the sandbox: the student's clean tree and the build paths the command
        names read-only, the student's object folder writable, nothing else of the grader's."""
        if self.sandbox is None:
            return cmd
        obj_root = os.path.join(self.out_dir, "obj")
        for d in (obj_root, cwd, os.path.dirname(dst)):
            open_for_step(d)
        for base, dirs, _ in os.walk(obj_root):
            for d in dirs:
                os.chmod(os.path.join(base, d), 0o777)
        if any("native" in tok for tok in cmd):
            cmd = resolve_native(cmd, gpu_capabilities())
        ro = [self.tree] + referenced_paths(cmd, self.plan.build)
        limits = Limits(cpu_s=self.timeout * 2, file_mb=COMPILE_FILE_MB, address_space_gb=COMPILE_MEMORY_GB)
        box = self.sandbox
        return box.command(cmd, ro=ro, rw=[obj_root], cwd=cwd, env=self.env(), limits=limits, cpus=box.build_cpus)

    def compile(self, rule: ObjectRule) -> tuple[ObjectRule, str, int, bool, str]:
        """(rule, object, return code, from the cache, first error)."""
        plan, tree, out_dir = self.plan, self.tree, self.out_dir
        dst = os.path.join(out_dir, "obj", os.path.relpath(rule.output, plan.build))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        cwd = os.path.join(out_dir, "obj", os.path.relpath(rule.directory, plan.build))
        os.makedirs(cwd, exist_ok=True)
        cmd = [retarget(tok, plan, tree, rule.directory, cwd) for tok in rule.command]
        cmd[cmd.index("-o") + 1] = dst
        h = hashlib.sha256("\0".join(cmd).replace(tree, "@TREE@").replace(out_dir, "@OUT@").encode())
        for dep in sorted(rule.deps & self.spliced_abs.keys()):
            h.update(Path(self.spliced_abs[dep]).read_bytes())
        # and every other input by content (the harness's headers, the toolkit's, the response files
        # the command names): a cache shared between jobs (--cache) never serves an object compiled
        # against an instructor tree or toolkit that has changed since
        for dep in sorted(rule.deps - self.spliced_abs.keys()) + response_files(rule):
            h.update(dep.encode() + b"\0" + file_digest(dep))
        cached = h.hexdigest() + ".obj"  # signed (integrity.py): an edited entry is compiled again
        if integrity.cached_object(self.cache_dir, cached, dst):
            return rule, dst, 0, True, ""
        p = subprocess.run(
            self.confined(cmd, cwd, dst),
            cwd=cwd,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=self.timeout,
            env=self.env(),
        )
        with open(self.log, "a", encoding="utf-8") as fh:
            fh.write("$ " + " ".join(cmd) + "\n" + p.stdout + p.stderr)
        if p.returncode == 0:
            integrity.cache_object(self.cache_dir, cached, dst)
        err = first_error(p.stdout + p.stderr, tree) if p.returncode else ""
        if p.returncode and not err:  # no compiler diagnostic: the sandbox's or a limit's own words
            err = next((x.strip()[:400] for x in reversed((p.stdout + p.stderr).split("\n")) if x.strip()), "")
        return rule, dst, p.returncode, False, err

    def blame(self, rule: ObjectRule, err: str, res: StudentBuild) -> None:
        """The spliced files a failed translation unit includes (the error's own file first)."""
        mine = sorted(os.path.relpath(d, self.plan.root) for d in rule.deps & self.spliced_abs.keys())
        first = [f for f in mine if err.startswith(f)]
        for f in first or mine:  # the file the error names, when it is the student's
            res.failed_sources.setdefault(f, err)


def _link_drivers(
    plan: Plan,
    names: list[str],
    out_dir: str,
    new_archives: dict[str, str],
    tree: str,
    res: StudentBuild,
    sandbox: Sandbox | None = None,
) -> bool:
    """Relinks the drivers against the re-archived libraries into out_dir/bin; False (res.error) on
    failure. The linker reads the student's objects: it runs confined too (the instructor's build
    and the student's libraries read-only, only out_dir/bin writable)."""
    for d in names:
        rule = plan.drivers[d]
        dst = os.path.join(out_dir, "bin", d)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        cmd, env = link_command(rule, dst, new_archives), None
        if sandbox is not None:
            bin_root = os.path.join(out_dir, "bin")
            for base, _, _ in os.walk(bin_root):
                open_for_step(base)
            env = sandbox.step_env(dict(os.environ), sandbox.compiler_env(dict(os.environ)))
            ro = [plan.build] + ([os.path.join(out_dir, "lib")] if os.path.isdir(os.path.join(out_dir, "lib")) else [])
            limits = Limits(cpu_s=600, file_mb=COMPILE_FILE_MB, address_space_gb=COMPILE_MEMORY_GB)
            cmd = sandbox.command(
                cmd, ro=ro, rw=[bin_root], cwd=rule.directory, env=env, limits=limits, cpus=sandbox.build_cpus
            )
        if run_logged(cmd, rule.directory, res.log, env=env) != 0:
            res.ok, res.error = (
                False,
                "linking failed: " + first_error(Path(res.log).read_text(encoding="utf-8"), tree, link=True),
            )
            return False
        res.drivers[d] = dst
    return True


def build_student(
    plan: Plan,
    tree: str,
    spliced_rel: list[str],
    out_dir: str,
    cache_dir: str,
    jobs: int | None = None,
    compile_timeout: int = 300,
    drivers: list[str] | None = None,
    sandbox: Sandbox | None = None,
) -> StudentBuild:
    """Compiles the translation units of `plan` that depend on a spliced file (the student's clean
    tree `tree`), re-archives the libraries that hold them and relinks `drivers` into out_dir/bin."""
    t0 = time.time()
    os.makedirs(out_dir, exist_ok=True)
    os.makedirs(cache_dir, exist_ok=True)
    log = os.path.join(out_dir, "build.log")
    open(log, "w").close()
    spliced_abs = {os.path.join(plan.root, f): os.path.join(tree, f) for f in spliced_rel}
    affected = [r for r in plan.objects.values() if r.deps & spliced_abs.keys() and in_archives(plan, r.output)]
    res = StudentBuild(ok=True, log=log)
    new_obj = {}
    compiler = _Compiler(plan, tree, out_dir, cache_dir, spliced_abs, log, compile_timeout, sandbox)
    with cf.ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 2) as pool:
        futs = [pool.submit(compiler.compile, r) for r in affected]
        errors = []
        for fut in futs:
            try:
                rule, dst, rc, hit, err = fut.result()
            except subprocess.TimeoutExpired:
                errors.append(f"the compiler ran past {compile_timeout} s")
                continue
            if rc != 0:
                errors.append(err or "the compiler failed")
                compiler.blame(rule, err or "the compiler failed", res)
                continue
            new_obj[rule.output] = dst
            res.objects[os.path.relpath(rule.source, plan.root)] = dst
            res.cached += hit
            res.compiled += not hit
    if errors:
        res.ok, res.error = False, errors[0]
        res.seconds = time.time() - t0
        return res
    new_archives = rearchive(plan, new_obj, out_dir, log)
    if new_archives is None:
        res.ok, res.error = False, "re-archiving the libraries failed (a harness problem; see build.log)"
        return res
    names = list(plan.drivers if drivers is None else drivers)
    if not _link_drivers(plan, names, out_dir, new_archives, tree, res, sandbox):
        return res
    res.seconds = time.time() - t0
    return res


def rearchive(plan: Plan, new_obj: dict[str, str], out_dir: str, log: str) -> dict[str, str]:
    """{instructor's archive: the student's copy} for every library holding a recompiled object, or
    None when ar or ranlib failed."""
    new_archives = {}
    for archive, members in plan.archives.items():
        if not any(m in new_obj for m in members):
            continue
        dst = os.path.join(out_dir, "lib", os.path.relpath(archive, plan.build))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.exists(dst):
            os.remove(dst)
        if (
            run_logged(["ar", "qc", dst] + [new_obj.get(m, m) for m in members], out_dir, log) != 0
            or run_logged(["ranlib", dst], out_dir, log) != 0
        ):
            return None
        new_archives[archive] = dst
    return new_archives


def link_command(rule: LinkRule, dst: str, new_archives: dict[str, str]) -> list[str]:
    """The driver's link command writing dst, with the student's archives in place of the instructor's.
    CMake 4's linker dependency file (-Wl,--dependency-file=..., relative to the instructor's build,
    read-only to the step) is written beside dst instead."""
    cmd = []
    for i, tok in enumerate(rule.command):
        if i > 0 and rule.command[i - 1] == "-o":
            cmd.append(dst)
            continue
        if "--dependency-file" in tok:
            parts = [
                p if not p.startswith("--dependency-file") else f"--dependency-file={dst}.link.d"
                for p in tok.split(",")
            ]
            cmd.append(",".join(parts))
            continue
        p = os.path.normpath(os.path.join(rule.directory, tok)) if not tok.startswith(("-", "/")) and i > 0 else tok
        cmd.append(new_archives.get(p, p))
    return cmd


TOOLCHAIN_VARS = (  # in the order their folders go on PATH (nvcc takes the first g++ there)
    "CMAKE_CUDA_HOST_COMPILER",
    "CMAKE_CXX_COMPILER",
    "CMAKE_C_COMPILER",
    "CMAKE_CUDA_COMPILER",
    "CMAKE_AR",
    "CMAKE_RANLIB",
    "CMAKE_LINKER",
)


def toolchain(build: str) -> tuple[list[str], list[str]]:
    """(install prefixes, bin folders) of the compilers the instructor's build uses, from its
    CMakeCache.txt: a compile in the sandbox must find the same compilers (a host compiler in
    /opt/gcc, a toolkit outside /usr), and nothing else of the grader's machine."""
    prefixes, bins = [], []
    try:
        text = Path(os.path.join(build, "CMakeCache.txt")).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return [], []
    found = {}
    for line in text.split("\n"):
        name = line.split(":", 1)[0]
        if name in TOOLCHAIN_VARS and "=" in line:
            found[name] = line.split("=", 1)[1].strip()
    for tool in (found[v] for v in TOOLCHAIN_VARS if v in found):
        for exe in {tool, os.path.realpath(tool)} if os.path.isabs(tool) and os.path.exists(tool) else ():
            b = os.path.dirname(exe)
            prefix = os.path.dirname(b) if os.path.basename(b) == "bin" else b
            if b not in bins:
                bins.append(b)
            if not prefix.startswith("/usr/") and prefix not in prefixes and prefix not in ("/", "/usr"):
                prefixes.append(prefix)
    return prefixes, bins


def gpu_capabilities() -> list[str]:
    """The compute capabilities of this machine's GPUs ("90", "86", ...), each once, in order."""
    try:
        p = subprocess.run(
            ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    caps = [c.strip().replace(".", "") for c in p.stdout.split("\n") if c.strip()] if p.returncode == 0 else []
    return list(dict.fromkeys(c for c in caps if c.isdigit()))


def resolve_native(cmd: list[str], caps: list[str]) -> list[str]:
    """An nvcc command with `-arch=native` (what CMake passes for CMAKE_CUDA_ARCHITECTURES=native)
    spelled out for this machine's GPUs. nvcc resolves `native` by asking the GPU, and a confined
    compile sees none: it would fall back to its default architecture and build other code than
    the instructor's (other CUB namespaces, no sm_90 code for the TMA versions)."""
    if not caps:
        return cmd
    out, skip = [], False
    for i, tok in enumerate(cmd):
        if skip:
            skip = False
            continue
        if tok in ("-arch=native", "--gpu-architecture=native"):
            out += [f"--generate-code=arch=compute_{c},code=[compute_{c},sm_{c}]" for c in caps]
        elif tok in ("-arch", "--gpu-architecture") and i + 1 < len(cmd) and cmd[i + 1] == "native":
            out += [f"--generate-code=arch=compute_{c},code=[compute_{c},sm_{c}]" for c in caps]
            skip = True
        else:
            out.append(tok)
    return out


def referenced_paths(cmd: list[str], prefix: str) -> list[str]:
    """The existing paths under `prefix` a command names (an -I folder or an option file in the
    instructor's build), each once: what a confined compile may read of the build."""
    out = set()
    for tok in cmd:
        i = tok.find(prefix)
        if i < 0:
            continue
        path = tok[i:].split("=")[-1] if "=" in tok[i:] else tok[i:]
        while path and not os.path.exists(path):
            path = os.path.dirname(path)
        if path.startswith(prefix):
            out.add(path)
    return sorted(out)


def in_archives(plan: Plan, obj: str) -> bool:
    return any(obj in members for members in plan.archives.values())


def retarget(tok: str, plan: Plan, tree: str, directory: str, cwd: str) -> str:
    """A compile-command token pointed at the student's tree: source paths of the instructor's tree
    become the clean tree's; option files are rewritten the same way; the build's paths stay."""
    if tok.startswith("@") or tok.endswith(".rsp"):
        at = tok.startswith("@")
        path = tok[1:] if at else tok
        src = os.path.normpath(os.path.join(directory, path))
        if os.path.isfile(src):
            dst = os.path.join(cwd, os.path.relpath(src, directory))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            text = retarget_text(Path(src).read_text(encoding="utf-8"), plan, tree)
            tmp = f"{dst}.{os.getpid()}.{threading.get_ident()}.tmp"  # the TUs of a target share it: atomic
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, dst)
            return ("@" if at else "") + dst
    return retarget_text(tok, plan, tree)


def retarget_text(text: str, plan: Plan, tree: str) -> str:
    for d in assemble.SOURCE_DIRS:
        text = text.replace(os.path.join(plan.root, d) + "/", os.path.join(tree, d) + "/")
        if text == os.path.join(plan.root, d):
            text = os.path.join(tree, d)
    return text


def first_error(text: str, tree: str, link: bool = False) -> str:
    """The compiler's (or linker's) first error, with the clean tree's paths made relative."""
    lines = [line.replace(tree + "/", "") for line in text.split("\n")]
    pat = re.compile(r"(\berror\b|undefined reference|multiple definition)", re.I)
    for line in lines:
        if pat.search(line) and not line.startswith("$ "):
            return line.strip()[:400]
    return "" if not link else (lines[-2].strip()[:400] if len(lines) > 1 else "")
