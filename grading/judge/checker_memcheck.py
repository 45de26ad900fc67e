"""Memory errors: each GPU version also runs one small case under compute-sanitizer's memcheck
(an unguarded kernel that writes past its buffer, or reads index -1, can pass every check by
luck); the errors are reported with the kernel, the file and the line, and cost what the rubric's
`[grading] memcheck` says: "off", "warning" (reported, no points) or "points" (the version loses
`memcheck_cost` of its correctness points)."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass

from . import checker_tests as tests

MODES = ("off", "warning", "points")
_ERROR = re.compile(r"^=+ (Invalid .+|Out-of-range .+|Misaligned .+|Program hit .+|Malloc/Free error.+)$")
_TREE = re.compile(r"(?:^|/)((?:stream_compaction|nbody|ground_seg|ndt_graph|common)/.+)$")
_AT = re.compile(r"^=+\s+at (.+?)(?:\+0x[0-9a-f]+)? in (.+)$")
_OFFSET = re.compile(r"^0x[0-9a-fA-F]+$")
_OFFSET_SUFFIX = re.compile(r"[:+]0x[0-9a-fA-F]+$")
_OLD_WHERE = re.compile(r"^(.+?:\d+):(.+)$")


def tool() -> str:
    """compute-sanitizer beside the toolkit's nvcc, or on PATH ("" when there is none)."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    near = os.path.join(os.path.dirname(nvcc), "compute-sanitizer")
    return near if os.path.exists(near) else (shutil.which("compute-sanitizer") or "")


def wrapper(path: str) -> list[str]:
    return [path, "--tool", "memcheck", "--print-limit", "10", "--error-exitcode", "0"]


def small_args(args: list[str]) -> list[str] | None:
    """The case's arguments at its smallest size that is not a power of two (a partial block shows
    a kernel without its bound guard; else its smallest of at least 2 elements) and one timed
    repetition: what memcheck runs (its instrumented kernels are 10-100x slower). None where the
    case has no size list."""
    found = tests.size_list(args)
    if not found:
        return None
    sizes = sorted((v, s) for s in found[1] if (v := tests.size_value(s)) is not None and v >= 2)
    odd = [(v, s) for v, s in sizes if v > 2 and v & (v - 1)]  # a partial block shows a missing guard
    if not sizes:
        return None
    out = tests.with_sizes(args, [(odd or sizes)[0][1]])
    for i, a in enumerate(out):
        if a == "--reps" and i + 1 < len(out):
            out[i + 1] = "1"
    return out


@dataclass
class MemError:
    what: str  # "Invalid __global__ write of size 4 bytes"
    kernel: str
    source: str  # "stream_compaction/src/v1_naive.cu:22", relative to the tree

    def __str__(self) -> str:
        return f"{self.what} at {self.kernel} in {self.source}"


def finished(log: str) -> bool:
    """Whether compute-sanitizer ran the program to its end: it prints its error summary last."""
    return "ERROR SUMMARY:" in log


def unreached(rows: list[dict[str, str]], version: str) -> bool:
    """Whether an instrumented run never ran `version`: no row of it, or only rows the driver
    skipped after an earlier version's error left the device unusable."""
    mine = [r for r in rows if r.get("version") == version and r.get("kind") != "meta"]
    return not mine or all((r.get("detail") or "").startswith("device unusable after an earlier error") for r in mine)


def errors(log: str) -> list[MemError]:
    """Every error memcheck printed (its first frame: the kernel and the source line)."""
    out, what = [], ""
    for line in log.split("\n"):
        line = line.strip()
        e = _ERROR.match(line)
        if e:
            what = e.group(1).strip()
            continue
        a = _AT.match(line)
        if what and a:
            kernel, where = a.group(1).strip(), a.group(2).strip()
            old = _OLD_WHERE.match(where) if _OFFSET.match(kernel) else None
            if old:  # the older form: "at 0x160 in file.cu:6:kernel()"
                kernel, where = old.group(2), old.group(1)
            kernel = _OFFSET_SUFFIX.sub("", kernel)  # "kernel():0x160" (the newer form has +0x160)
            m2 = _TREE.search(where)
            out.append(MemError(what, kernel, m2.group(1) if m2 else where))  # a library's path stays whole
            what = ""
    return out


def in_files(e: MemError, files: set[str]) -> bool:
    """Whether the error's source line is in one of `files` (tree-relative paths). compute-sanitizer
    13 names the file as its basename only ("v1_naive.cu:16"): that matches the one file of `files`
    with that name (a run is one sub-project's driver; two of its files of one name match neither)."""
    where = e.source.rsplit(":", 1)[0]
    if "/" in where:
        return where in files
    return [os.path.basename(f) for f in files].count(where) == 1


def summary(found: list[MemError], size: str) -> str:
    """A version's memcheck line: how many errors at which size, and the first."""
    return f"{len(found)} memory errors at n={size}: {found[0]}" if found else ""
