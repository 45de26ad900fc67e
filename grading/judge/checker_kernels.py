"""Which kernels a version ran, and whose they are.

At run time the CUPTI recorder (grading/cupti/kernel_recorder.cpp) lists every kernel a driver
process ran; statically (no GPU needed) the student's exercise objects list the kernels they
instantiate and the functions they call. Each kernel is attributed to the source file that defines
it (`__global__` definitions in the clean tree; anonymous namespaces carry their file's name in the
mangled name) or to a library namespace (cub::, thrust::, ...). A graded version may run only:
  own      kernels defined in the files of the exercises its rubric entry `requires`
  allowed  kernels matching its rubric entry's `allow` patterns
  harness  kernels the reference solution's run of the same version also ran that are neither a
           library's nor another exercise's (the driver's ceilings, checks, poisoning)
Anything else (a library kernel, another exercise's kernel, a version's of the instructor) makes
the version "not its own work"."""

from __future__ import annotations

import bisect
import dataclasses
import os
import re
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Collection, Sequence

from .model import KernelUse

if TYPE_CHECKING:
    from judge.rubric import VersionRule
    from judge.runner_build import Plan
_PARENS = r"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"  # up to two levels of nesting
_GLOBAL_DEF = re.compile(
    r"__global__\s+(?:__launch_bounds__\s*"
    + _PARENS
    + r"\s*)?(?:static\s+|inline\s+|__noinline__\s+|__forceinline__\s+)*"
    r"void\s+(?:__launch_bounds__\s*" + _PARENS + r"\s*)?([A-Za-z_]\w*)\s*\("
)
_ANON_HASHES = re.compile(r"_GLOBAL__N__[0-9a-f]+_(\d+_\w+?)_[0-9a-f]{8}")


def stable_name(mangled: str) -> str:
    """A mangled name without the per-build hashes of anonymous namespaces (they depend on the path
    the file was compiled from: the student's clean tree is not the instructor's)."""
    return _ANON_HASHES.sub(r"_GLOBAL__N__H_\1_H", mangled)


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_ANON = re.compile(r"_GLOBAL__N__[0-9a-f]+_\d+_(\w+?)_[0-9a-f]{8}")
_STUB = re.compile(r"(\d+)__device_stub__")


def kernel_definitions(tree: str, files: list[str]) -> dict[str, set[str]]:
    """{kernel base name: {relative files that define a __global__ of that name}}."""
    index = {}
    for f in files:
        try:
            text = _COMMENT.sub("", Path(os.path.join(tree, f)).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        for m in _GLOBAL_DEF.finditer(text):
            index.setdefault(m.group(1), set()).add(f)
    return index


def region_kernels(tree: str, files: list[str]) -> dict[str, set[str]]:
    """{kernel base name: {relative files}} of the __global__ functions the solution defines inside
    its exercise regions and nowhere outside one: the solution's own kernels, never the harness's."""
    from .checker_splice import em  # the markers' parser (scripts/exercise_markers.py)

    inside, outside = {}, set()
    for f in files:
        try:
            text = Path(os.path.join(tree, f)).read_text(encoding="utf-8", errors="replace")
            regions = em.parse(f, text) if "// EXERCISE BEGIN" in text else []
        except (OSError, em.MarkerError):
            continue
        lines = text.split("\n")
        for r in regions:
            for m in _GLOBAL_DEF.finditer(_COMMENT.sub("", "\n".join(r.lines))):
                inside.setdefault(m.group(1), set()).add(f)
            lines[r.first : r.last + 1] = [""] * (r.last + 1 - r.first)
        outside.update(m.group(1) for m in _GLOBAL_DEF.finditer(_COMMENT.sub("", "\n".join(lines))))
    return {k: v for k, v in inside.items() if k not in outside}


_DEMANGLED: dict[str, str] = {}  # what c++filt said of a name: the same every time it is asked
_DEMANGLED_LOCK = threading.Lock()


def demangle(names: list[str]) -> list[str]:
    """Demangled names, in order (c++filt, once per name in a grader's process; a name it cannot
    read stays as it is)."""
    names = list(names)
    with _DEMANGLED_LOCK:
        new = sorted({n for n in names if n not in _DEMANGLED})
    if new:
        got = _cxxfilt(new)
        with _DEMANGLED_LOCK:
            if got is not None:
                _DEMANGLED.update(zip(new, got))
    with _DEMANGLED_LOCK:
        return [_DEMANGLED.get(n, n) for n in names]


def _cxxfilt(names: list[str]) -> list[str] | None:
    tool = "cu++filt" if _which("cu++filt") else "c++filt"
    try:
        p = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=60)
        out = p.stdout.split("\n")[: len(names)]
        if len(out) == len(names):
            return out
    except (OSError, subprocess.TimeoutExpired):
        pass
    return None


def _which(tool: str) -> bool:
    return any(os.access(os.path.join(d, tool), os.X_OK) for d in os.environ.get("PATH", "").split(os.pathsep))


def qualified_name(demangled: str) -> tuple[str, str]:
    """ "void ns::(anonymous namespace)::k<int, 4>(int*, long)" -> ("ns::(anonymous namespace)", "k")."""
    s = demangled.strip()
    depth, cut = 0, len(s)
    for i, ch in enumerate(s):  # the parameter list: the first '(' at template depth 0 after a name
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0 and (s[i - 1].isalnum() or s[i - 1] in "_>"):
            cut = i
            break
    s = s[:cut]
    if s.endswith(">"):  # template arguments
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            depth += {">": 1, "<": -1}.get(s[i], 0)
            if depth == 0:
                s = s[:i]
                break
    depth, start = 0, 0
    for i, ch in enumerate(s):  # drop a return type: the last space at depth 0
        depth += {"<": 1, ">": -1, "(": 1, ")": -1}.get(ch, 0)
        if ch == " " and depth == 0:
            start = i + 1
    s = s[start:]
    ns, _, base = s.rpartition("::")
    return ns, base


@dataclass
class Attribution:
    files: set
    library: str = ""


def library_of(demangled: str, libraries: Sequence[str]) -> str:
    """The library namespace a kernel's qualified name lies in ("" for none)."""
    ns, base = qualified_name(demangled)
    full = f"{ns}::{base}" if ns else base
    return next((lib.rstrip(":") for lib in libraries if full.startswith(lib)), "")


def attribute(
    mangled: str,
    demangled: str,
    index: dict[str, set[str]],
    libraries: Sequence[str],
) -> Attribution:
    lib = library_of(demangled, libraries)
    if lib:
        return Attribution(set(), lib)
    _, base = qualified_name(demangled)
    files = set(index.get(base, set()))
    m = _ANON.search(mangled)
    if m and len(files) > 1:  # an anonymous namespace names its file: v1_naive_cu -> v1_naive.cu
        stem = m.group(1)
        narrowed = {f for f in files if os.path.basename(f).replace(".", "_") == stem}
        files = narrowed or files
    return Attribution(files)


def classify(
    kernels: list[tuple[str, int]],
    rule: VersionRule,
    own_files: set[str],
    exercise_files: dict[str, str],
    index: dict[str, set[str]],
    libraries: Sequence[str],
    harness: set[str] | None = None,
    regions: dict[str, set[str]] | None = None,
) -> list[KernelUse]:
    """[(mangled, launches)] -> [KernelUse] for the version of `rule`. exercise_files maps every
    exercise file of the project to its exercise; harness is the set of mangled names the reference
    run of this version ran (None: no reference record, only own/allowed kernels are known); regions
    (region_kernels) names the kernels of the solution's exercise regions: one the student's tree
    does not define ran from the instructor's code, and is never the harness's."""
    names = [k for k, _ in kernels]
    out = []
    for (mangled, launches), dem in zip(kernels, demangle(names)):
        att = attribute(mangled, dem, index, libraries)
        where = att.library and f"library {att.library}" or ", ".join(sorted(att.files)) or "no course source"
        use = KernelUse(name=dem, launches=launches, owner="", defined_in=where)
        pattern = next((p for p in rule.allow if p in dem), None)
        setup = next((p for p in getattr(rule, "containers", ()) if p in dem), None) if att.library else None
        if pattern:
            use.owner = f"allowed by the rubric ('{pattern}')"
        elif setup:
            use.owner = f"container or memory set-up, allowed (rule containers: '{setup}')"
        elif att.library:
            use.owner, use.allowed = f"library call ({att.library})", False
        elif att.files & own_files:
            use.owner = "own"
        elif att.files & exercise_files.keys():
            other = sorted({exercise_files[f] for f in att.files & exercise_files.keys()})
            use.owner, use.allowed = f"another exercise's kernel ({', '.join(other)})", False
        elif not att.files and qualified_name(dem)[1] in (regions or {}):
            files = ", ".join(sorted(regions[qualified_name(dem)[1]]))
            use.owner, use.allowed = f"the solution's kernel ({files}), not built from the student's code", False
        elif harness is not None and stable_name(mangled) in harness:
            use.owner = "harness"
        else:
            use.owner, use.allowed = "not the version's own kernel", False
        out.append(use)
    return out


def read_log_entries(path: str) -> list[tuple[str, int, int]] | None:
    """The recorder's log: [(mangled name, launches, total GPU ns)], or None when the process left
    none."""
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").split("\n")
    except OSError:
        return None
    out = []
    for line in lines:
        if not line or line.startswith("#"):
            continue
        parts = line.split("\t", 2)
        if len(parts) == 3 and parts[0].isdigit():
            out.append((parts[2], int(parts[0]), int(parts[1]) if parts[1].isdigit() else 0))
    return out


def read_log(path: str) -> list[tuple[str, int]] | None:
    """The recorder's log: [(mangled name, launches)], or None when the process left none."""
    entries = read_log_entries(path)
    return None if entries is None else [(name, launches) for name, launches, _ in entries]


def own_ns(paths: list[str], own: set[str]) -> int:
    """The GPU ns the kernels named in `own` took over these processes' logs."""
    return sum(ns for p in paths for name, _, ns in read_log_entries(p) or [] if name in own)


def runs_at_most(args: list[str], sizes: int, warmup: int = 2, default_samples: int = 200) -> int:
    """The most times a driver runs a version in one process of these arguments: per size and input
    fill (--fill a,b) one checked run, then the timed loop and at most two more timed loops (a
    compaction's stages, the end-to-end rows), each a warm-up and its samples (--reps N fixes them;
    else the bench's cap), and a block sweep's 7 loops where one is asked for."""
    reps, fills, sweep = default_samples, 1, False
    for i, a in enumerate(args):
        value = args[i + 1] if i + 1 < len(args) else ""
        if a == "--reps" and value.isdigit():
            reps = int(value)
        elif a.startswith("--reps=") and a[7:].isdigit():
            reps = int(a[7:])
        elif a == "--fill" and value:
            fills = len([f for f in value.split(",") if f])
        sweep = sweep or a == "--block-sweep"
    return max(1, sizes) * max(1, fills) * (1 + 3 * (warmup + reps)) + (7 * (warmup + reps) if sweep else 0)


# How far under its own kernels' GPU time a reported median may be before it is taken as written,
# not measured: generous (overlapping streams, a run count that is only bounded), so an honest run
# never meets it; a time written grossly (microseconds for milliseconds of kernels) does.
FORGED_TIME_SLACK = 100.0


def time_below_own_work(median_ms: float, own_ns: int, runs: int) -> str:
    """Why a reported time cannot be the run's own: its median is under 1/FORGED_TIME_SLACK of
    what its own kernels took a run on the GPU (CUPTI's total over the process, shared among at
    most `runs` runs); "" where it can be."""
    floor_ms = own_ns / 1e6 / max(1, runs)
    if own_ns > 0 and median_ms * FORGED_TIME_SLACK < floor_ms:
        return (
            f"its reported time ({median_ms:.4g} ms) is under the GPU time its own kernels took "
            f"(at least {floor_ms:.4g} ms a run, by the kernel recorder): no time counted"
        )
    return ""


# ---- the static check: what a version's objects instantiate and call ----------------------------
def object_symbols(path: str) -> tuple[dict[str, str], set[str]]:
    """({defined mangled symbol: nm type}, {undefined symbols}) of an object file (nm)."""
    p = subprocess.run(["nm", "-P", path], capture_output=True, text=True, errors="replace")
    defined, undefined = {}, set()
    for line in p.stdout.split("\n"):
        parts = line.split()
        if len(parts) >= 2:
            if parts[1] in ("U", "w", "v"):
                undefined.add(parts[0])
            else:
                defined[parts[0]] = parts[1]
    return defined, undefined


def stub_kernels(symbols: dict[str, str]) -> set[str]:
    """The kernels an object instantiates: the names behind its __device_stub__ functions."""
    out = set()
    for s in symbols:
        m = _STUB.search(s)  # _Z<len>__device_stub__<kernel without _>, also in guard variables (_ZGVZL...)
        if m:
            ident = s[m.end(1) : m.end(1) + int(m.group(1))]
            out.add("_" + ident[len("__device_stub__") :])
    return out


def static_check(
    rule: VersionRule,
    objects: list[str],
    own_files: set[str],
    exercise_files: dict[str, str],
    index: dict[str, set[str]],
    libraries: Sequence[str],
    symbol_owner: dict[str, tuple[str, bool]],
    harness_symbols: Collection[str] = (),
    entry_points: dict[str, set[str]] | None = None,
    seen_at_run: list[str] | None = None,
) -> list[str]:
    """Findings for one version from its own objects: library or other exercises' kernels it
    instantiates, and calls into other exercises (a function whose body is an exercise, or one
    defined inside an exercise region) or into code that launches library kernels.
    symbol_owner maps a defined symbol of the instructor's objects to (source file, launches a
    library kernel: bool). seen_at_run, where given, takes the findings whose evidence is a kernel
    (one it instantiates, or a call into code that launches library kernels) instead of the returned
    list: for the objects of an exercise the version builds on, which may hold such a call on a path
    the version never takes, the kernel record of its runs says whether the kernel ran."""
    findings = []
    kernel_findings = findings if seen_at_run is None else seen_at_run
    for obj in objects:
        defined, undefined = object_symbols(obj)
        kernels = sorted(stub_kernels(defined))
        for use in classify([(k, 0) for k in kernels], rule, own_files, exercise_files, index, libraries, harness=None):
            if not use.allowed and not use.owner.startswith("not the version"):
                kernel_findings.append(f"{os.path.basename(obj)} instantiates {short(use.name)}: {use.owner}")
        calls = sorted(undefined & symbol_owner.keys())
        for sym, dem in zip(calls, demangle(calls)):
            src, launches_library = symbol_owner[sym]
            entry = qualified_name(dem)[1] in (entry_points or {}).get(src, ())
            if src in own_files or (sym in harness_symbols and not entry):
                continue
            if src in exercise_files:
                findings.append(
                    f"{os.path.basename(obj)} calls {short(dem)}: another exercise's code "
                    f"({exercise_files[src]}, {src})"
                )
            elif launches_library and not any(p in lib for p in rule.allow for lib in libraries):
                kernel_findings.append(
                    f"{os.path.basename(obj)} calls {short(dem)} ({src}), which launches library kernels"
                )
    return findings


def short(name: str, n: int = 140) -> str:
    return name if len(name) <= n else name[: n - 3] + "..."


def symbol_owners(plan: Plan, libraries: Sequence[str]) -> dict[str, tuple[str, bool]]:
    """{defined function symbol: (relative source, its object instantiates library kernels)} over
    the instructor's archived objects."""
    out = {}
    for obj, rule in plan.objects.items():
        if not any(obj in m for m in plan.archives.values()) or not os.path.exists(obj):
            continue
        defined, _ = object_symbols(obj)
        kernels = stub_kernels(defined)
        dem = demangle(sorted(kernels))
        lib = any(library_of(d, libraries) for d in dem)
        src = os.path.relpath(rule.source, plan.root)
        for s, kind in defined.items():  # strong definitions only: an inline function is everyone's
            if kind == "T" and s.startswith("_Z") and "__device_stub__" not in s:
                out.setdefault(s, (src, lib))
    return out


# A process that runs several versions (runner_case.run_group): the recorder, given
# COURSE_KERNEL_RANGES=1, also lists the NVTX ranges the process pushed and every kernel's GPU
# interval. Each kernel belongs to the version whose range (on the one thread that pushes version
# ranges) holds its start; a kernel in none is the harness's between versions. The grader trusts
# that split only where the process's ranges are exactly the reference's (the same version ranges,
# in the same order, at the same depth, on one thread) and its kernels between versions are kernels
# the reference also ran there; anything else, and the versions run one process each again.
@dataclass
class RangeRecord:
    pushes: list[tuple[int, int, str]]  # (thread, depth, name) of every version range, in push order
    per_version: dict[str, list[tuple[str, int, int]]]  # version -> [(mangled, launches, ns)]
    outside: list[tuple[str, int, int]]  # kernels in no version's range
    problem: str  # "" when the split can be trusted as far as the record alone tells
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)  # version -> its ranges' wall seconds


def _parse_ranges(lines: list[str]) -> tuple[list, dict[int, str], list, str]:
    """The R, N and K lines of a record: (ranges, kernel names by index, intervals, problem)."""
    ranges, names, intervals = [], {}, []
    for line in lines:
        if line.startswith("# over the cap"):
            return [], {}, [], "the record is over the recorder's cap"
        parts = line.split("\t")
        try:
            if parts[0] == "R" and len(parts) >= 6:
                ranges.append((int(parts[1]), int(parts[2]), int(parts[3]), int(parts[4]), "\t".join(parts[5:])))
            elif parts[0] == "N" and len(parts) >= 3:
                if int(parts[1]) in names:
                    return [], {}, [], "a kernel index named twice"
                names[int(parts[1])] = "\t".join(parts[2:])
            elif parts[0] == "K" and len(parts) == 4:
                intervals.append((int(parts[1]), int(parts[2]), int(parts[3])))
        except ValueError:
            return [], {}, [], "a malformed line in the record"
    if any(idx not in names for _, _, idx in intervals):
        return [], {}, [], "a kernel interval names no kernel"
    return ranges, names, intervals, ""


def _range_problem(mine: list[tuple[int, int, int, int, str]]) -> str:
    """What makes a process's version ranges unusable for attribution ("" when nothing does)."""
    if not mine:
        return "no version ranges in the record (was it made with COURSE_KERNEL_RANGES?)"
    if len({r[0] for r in mine}) != 1:
        return "version ranges on more than one thread"
    if any(pop == 0 or pop < push for _, _, push, pop, _ in mine):
        return "a version range never closed"
    spans = sorted((push, pop) for _, _, push, pop, _ in mine)
    if any(spans[i + 1][0] < spans[i][1] for i in range(len(spans) - 1)):
        return "a version range inside another"
    return ""


def split_by_version(path: str, versions: Collection[str]) -> RangeRecord:
    """The recorder's ranges and intervals of a process that ran `versions`, split by version."""
    empty = RangeRecord([], {v: [] for v in versions}, [], "")
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").split("\n")
    except OSError:
        return dataclasses.replace(empty, problem="no kernel record")
    ranges, names, intervals, problem = _parse_ranges(lines)
    if problem:
        return dataclasses.replace(empty, problem=problem)
    counted: dict[str, int] = {}
    for _, _, idx in intervals:
        counted[names[idx]] = counted.get(names[idx], 0) + 1
    if counted != {name: launches for name, launches, _ in read_log_entries(path) or []}:
        return dataclasses.replace(empty, problem="the record's intervals are not its totals")
    mine = [r for r in ranges if r[4] in set(versions)]
    spans = sorted((push, pop, name) for _, _, push, pop, name in mine)
    starts = [sp[0] for sp in spans]
    per: dict[str, dict[str, list[int]]] = {v: {} for v in versions}
    out: dict[str, list[int]] = {}
    for start, end, idx in intervals:
        i = bisect.bisect_right(starts, start) - 1
        into = per[spans[i][2]] if i >= 0 and start <= spans[i][1] else out
        tot = into.setdefault(names[idx], [0, 0])
        tot[0] += 1
        tot[1] += max(0, end - start)

    def entries(d: dict[str, list[int]]) -> list[tuple[str, int, int]]:
        return [(n, c, ns) for n, (c, ns) in sorted(d.items())]

    pushes = [(t, d, name) for t, d, _, _, name in mine]
    seconds = {v: 0.0 for v in versions}
    for _, _, push, pop, name in mine:
        seconds[name] += max(0, pop - push) / 1e9
    problem = _range_problem(mine)
    return RangeRecord(pushes, {v: entries(d) for v, d in per.items()}, entries(out), problem, seconds)


def write_log(path: str, entries: list[tuple[str, int, int]], origin: str) -> None:
    """A kernel record in the recorder's format (read_log_entries) for one version's share of a
    process that ran several, written by the grader after the process is gone (never following a
    link the run left there)."""
    from .runner_run import open_fresh

    with open_fresh(path) as fh:
        fh.write(f"# course kernel record ({origin}): launches, total ns, mangled name\n".encode())
        for name, launches, ns in entries:
            fh.write(f"{launches}\t{ns}\t{name}\n".encode())
