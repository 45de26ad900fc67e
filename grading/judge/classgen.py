"""A generated class: submissions built from the handout and the solution, for the grader's tests,
the GPU check and the students-per-hour benchmark.

    python3 -m judge.classgen HANDOUT_DIR OUT_DIR [--kinds solution,handout,...] [--copies N]

Kinds (each a full checkout of the handout with some STUDENT blocks written):
  solution         every exercise filled in from the solution
  handout          untouched: every exercise still the handout's starter body
  partial          the first half of the exercises (in HANDOUT.json order) filled in
  tamper_checker   compact_with_scan returns 0, and check.cpp's compare is edited to accept anything
  tamper_build     solution, plus a CMakeLists.txt and a driver edited to print PASS for everything
  cub_call         solution, but scan_naive's body calls CUB's DeviceScan
  thrust_call      solution, but scan_work_efficient's body calls thrust::exclusive_scan
  other_exercise   solution, but scan_shared_mem's body calls the student's own scan_lookback
  library_version  solution, but scan_warp_shuffle's body calls the instructor's scan_cub
  hang             solution, but compact_with_scan spins forever
  crash            solution, but compact_with_scan dereferences a null pointer
  printf_flood     solution, but compact_with_scan prints 64 MiB first
  huge_alloc       solution, but compact_with_scan touches 3 GiB of host memory first
  no_build         solution with a syntax error in v1_naive.cu's block
  broken_markers   solution with one STUDENT END marker deleted
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "scripts")  # exercise_markers.py
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import exercise_markers as em  # noqa: E402

if TYPE_CHECKING:
    from exercise_markers import Region

KINDS = (
    "solution",
    "handout",
    "partial",
    "tamper_checker",
    "tamper_build",
    "cub_call",
    "thrust_call",
    "other_exercise",
    "library_version",
    "hang",
    "crash",
    "printf_flood",
    "huge_alloc",
    "no_build",
    "broken_markers",
)

# Replacement bodies: (exercise, the body's first solution line it replaces the region of, new lines)
CPU_BODY = ("stream_compaction/cpu_compact_with_scan", "stream_compaction/src/cpu.cpp")
BODIES = {
    "cub_call": (
        "stream_compaction/v1_naive",
        "stream_compaction/src/v1_naive.cu",
        [
            "  std::size_t bytes = 0;",
            "  cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, static_cast<int>(n), stream);",
            "  void* tmp = scratch.here().as<char>(static_cast<std::int64_t>(bytes) + 1);",
            "  cub::DeviceScan::ExclusiveSum(tmp, bytes, in, out, static_cast<int>(n), stream);",
            "  (void)block;",
        ],
        ["#include <cub/device/device_scan.cuh>"],
    ),  # included at file scope (see INCLUDE_AT_FILE_SCOPE)
    "thrust_call": (
        "stream_compaction/v2_work_efficient",
        "stream_compaction/src/v2_work_efficient.cu",
        ["  (void)scratch; (void)block;", "  thrust::exclusive_scan(thrust::cuda::par.on(stream), in, in + n, out);"],
        ["#include <thrust/scan.h>", "#include <thrust/execution_policy.h>"],
    ),
    "other_exercise": (
        "stream_compaction/v3_shared_mem",
        "stream_compaction/src/v3_shared_mem.cu",
        ["  (void)block;", "  scan_lookback(n, out, in, scratch, stream);"],
        [],
    ),
    "library_version": (
        "stream_compaction/v4_warp_shuffle",
        "stream_compaction/src/v4_warp_shuffle.cu",
        ["  scan_cub(n, out, in, scratch, stream);"],
        [],
    ),
}
# A file-scope block sits inside `namespace StreamCompaction::Device::(anonymous)`: a student who wants a
# library header there closes the namespaces, includes it and reopens them.
INCLUDE_AT_FILE_SCOPE = ["}  // namespace", "}  // namespace Device", "}  // namespace StreamCompaction"]
REOPEN = ["namespace StreamCompaction {", "namespace Device {", "namespace {"]

CPU_PREFIX = {
    "hang": ["  for (volatile bool spin = true; spin;) {", "  }"],
    "crash": ["  if (n > 2) *static_cast<volatile int*>(nullptr) = 1;"],
    "printf_flood": [
        "  { char line[64] = {};",
        "    for (int i = 0; i < 63; ++i) line[i] = 'x';",
        "    for (int i = 0; i < (1 << 20); ++i) __builtin_puts(line); }",
    ],
    "huge_alloc": [
        "  { std::vector<char> hog(std::size_t{3} << 30);",
        "    for (std::size_t i = 0; i < hog.size(); i += 4096) hog[i] = 1;",
        "    out[0] = hog[4096]; }",
    ],
}


def included_of(
    man: dict[str, Any],
) -> list[str]:
    return man.get("included") or em.closure(man["subprojects"])


def solution_regions(root: str, f: str, included: list[str] | None = None) -> tuple[str, list[Region]]:
    text = Path(os.path.join(root, f)).read_text(encoding="utf-8")
    return text, em.parse(f, text, included)


def fill(handout: str, root: str, f: str, choose: Callable[[Region, int], list[str] | None]) -> None:
    """Rewrites handout file f from the solution: choose(region, index) -> lines for its STUDENT
    block, or None to leave the handout's starter body. Regions the handout withholds keep its stub."""
    man = json.loads(Path(os.path.join(handout, "HANDOUT.json")).read_text(encoding="utf-8"))
    included = included_of(man)
    text, regions = solution_regions(root, f, included)
    assigned = {r.key for r in regions if r.key in man["exercises"]}
    counter = {}

    def replace(r: Region) -> list[str] | None:
        r.resolve(included)
        if r.key not in assigned:
            if not r.in_handout:
                return em.withheld_lines(r)
            return None
        i = counter[r.exercise] = counter.get(r.exercise, -1) + 1
        lines = choose(r, i)
        if lines is None:
            return em.stub_lines(r)
        return em.student_block(r, lines)

    new, _ = em.rewrite(f, text, replace)
    with open(os.path.join(handout, f), "w", encoding="utf-8") as fh:
        fh.write(new)


def _body_edits(out: str, root: str, kind: str) -> None:
    """The kinds that put another body into one exercise (a library call, a hang, a crash, ...)."""
    if kind in BODIES:
        ex, f, body, includes = BODIES[kind]

        def choose(r: Region, i: int, ex: str = ex) -> list[str]:
            if r.key != ex:
                return r.lines
            return body if r.body else r.lines + (INCLUDE_AT_FILE_SCOPE + includes + REOPEN if includes else [])

        fill(out, root, f, choose)
    if kind in CPU_PREFIX or kind == "tamper_checker":
        ex, f = CPU_BODY
        prefix = CPU_PREFIX.get(kind, [])
        fill(
            out,
            root,
            f,
            lambda r, i: (
                ["  (void)in; (void)out;", "  return n >= 0 ? 0 : 1;"]
                if kind == "tamper_checker" and r.body
                else prefix + r.lines
            ),
        )
    if kind == "no_build":
        f = "stream_compaction/src/v1_naive.cu"
        fill(out, root, f, lambda r, i: r.lines + ["  this is not C++;"] if r.body else r.lines)


def _edits_outside(out: str, kind: str) -> None:
    """The kinds that edit outside the STUDENT blocks: the checker, the build, a marker."""
    if kind == "tamper_checker":
        p = os.path.join(out, "stream_compaction", "src", "check.cpp")
        text = Path(p).read_text(encoding="utf-8")
        text = text.replace(
            "common::CompareResult r;",
            "common::CompareResult r;\n    return r;  // the student's edit: accept everything",
            1,
        )
        Path(p).write_text(text, encoding="utf-8")
    if kind == "tamper_build":
        with open(os.path.join(out, "CMakeLists.txt"), "a", encoding="utf-8") as fh:
            fh.write("\n# the student's edit\nadd_compile_definitions(COURSE_ALWAYS_PASS=1)\n")
        with open(os.path.join(out, "stream_compaction", "app", "main.cpp"), "a", encoding="utf-8") as fh:
            fh.write("\n// the student's edit: a driver that prints PASS\n")
    if kind == "broken_markers":
        p = os.path.join(out, "stream_compaction", "src", "v2_work_efficient.cu")
        lines = Path(p).read_text(encoding="utf-8").split("\n")
        idx = next(i for i, line in enumerate(lines) if em.STUDENT_END in line)
        del lines[idx]
        Path(p).write_text("\n".join(lines), encoding="utf-8")


def make_student(handout: str, root: str, out: str, kind: str, tag: str = "") -> str:
    if os.path.exists(out):
        shutil.rmtree(out)
    shutil.copytree(handout, out, ignore=shutil.ignore_patterns("build", ".git"))
    man = json.loads(Path(os.path.join(handout, "HANDOUT.json")).read_text(encoding="utf-8"))
    exercises = sorted(man["exercises"])
    files = sorted({f for e in man["exercises"].values() for f in e["files"]})
    if kind == "handout":
        return out
    filled = set(exercises[: len(exercises) // 2]) if kind == "partial" else set(exercises)
    mark = [f"// {tag}"] if tag else []  # a class of distinct students: nothing is shared by the object cache
    for f in files:
        fill(out, root, f, lambda r, i: r.lines + mark if r.key in filled else None)
    _body_edits(out, root, kind)
    _edits_outside(out, kind)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("handout")
    ap.add_argument("out")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--copies", type=int, default=1, help="students per kind (a bigger class)")
    ap.add_argument("--instructor", default=ROOT)
    a = ap.parse_args(argv)
    kinds = [k for k in a.kinds.split(",") if k]
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        sys.exit(f"classgen: unknown kinds {bad} (known: {', '.join(KINDS)})")
    os.makedirs(a.out, exist_ok=True)
    for k in kinds:
        for c in range(a.copies):
            name = k if a.copies == 1 else f"{k}_{c:03d}"
            make_student(a.handout, a.instructor, os.path.join(a.out, name), k, tag=name if a.copies > 1 else "")
    print(f"classgen: {len(kinds) * a.copies} students in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
