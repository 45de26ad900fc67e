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
  nvtx_hide        cub_call's body, its CUB kernels inside an NVTX range named after scan_work_efficient and
                   out of scan_naive's own range (popped, pushed again): a process of several versions
                   attributes kernels by range, so its ranges must be the reference's or each runs alone
  record_rewrite   cub_call's body, plus a static object that keeps a copy of the recorder's descriptor and,
                   after the recorder wrote, writes a record of no library kernel into it and over the
                   kernel record files of its folder (the nonce copied from their first line). On an
                   H200 the object rules refuse it first (a static destructor, getenv); the record's
                   pipe is the layer behind them (test_cases: one whole record of the run or none)
  thrust_call      solution, but scan_work_efficient's body calls thrust::exclusive_scan
  other_exercise   solution, but scan_shared_mem's body calls the student's own scan_lookback
  library_version  solution, but scan_warp_shuffle's body calls the instructor's scan_cub
  hang             solution, but compact_with_scan spins forever
  crash            solution, but compact_with_scan dereferences a null pointer
  printf_flood     solution, but compact_with_scan prints 64 MiB first
  huge_alloc       solution, but compact_with_scan touches 3 GiB of host memory first
  no_build         solution with a syntax error in v1_naive.cu's block
  broken_markers   solution with one STUDENT END marker deleted
  symlink_exercise solution, but cpu.cpp is a symlink to the classmate "solution"'s file (beside OUT)
  fifo_exercise    solution, but cpu.cpp is a FIFO (a reader that opens it blocks forever)
  huge_exercise    solution, but cpu.cpp is a 1 GiB (sparse) file
  git_config       solution as a git checkout whose HEAD is a signed commit and whose .git/config makes
                   any git that reads it run the student's script (gpg.program with log.showSignature,
                   core.fsmonitor, core.pager, diff.external): the script writes .git/PWNED
  calls_reference  solution, but compact_with_scan returns the checker's own Host::compact_without_scan
  static_ctor      solution, plus a global object in v1_naive.cu's file-scope block whose constructor
                   runs before main
  interpose        solution, plus a definition of clock_gettime (the C library's, every timer's) in
                   v1_naive.cu's file-scope block: CPU versions time as 0 ms
  host_work        solution, but scan_naive copies its input to the host, scans there and copies back
                   (no kernel of its own: only the GPU run's kernel record shows it)
  replay_cache     solution, but scan_naive remembers its last input (address, size and 16 elements
                   of it from n = 16 on) and replays the scan it computed then: checked once, then
                   timed doing a copy; the drivers' --fresh-inputs (every timed run on a new input,
                   its output checked) makes it fail at n = 2 and never hit from n = 16 on
  macro_over_harness solution, plus a #define at the end of v1_naive.cu's file-scope block over check_n,
                   which scan_naive's harness calls after it: were the macro not scoped to its block,
                   the harness would zero n and the version scan nothing (correct: it ends with the block)
  line_continuation solution, but compact_with_scan's block ends in a line splice that would make the harness's
                   next line part of its last comment (refused)
  closes_function  solution, but compact_with_scan's block closes its function, adds a static
                   constructor at namespace scope and opens another function for the harness's `}` (refused)
  escape           solution, but scan_naive reads the grader's environment and the instructor's rubric,
                   writes into the instructor's tree, the class files and a classmate's report, and
                   throws what it read (the sandbox: nothing of it may be found anywhere)
  forged_verdict   solution, but scan_naive launches one kernel of its own (so the kernel record shows
                   GPU work) and computes nothing; at exit, after the driver wrote its CSV of failed
                   sizes, that CSV rewritten: every size passed in 1 us (no exit call, nothing a
                   symbol rule names): only the out-of-process check (checker_evidence) sees the
                   wrong output. (Its first form lowered the open-file limit to keep the driver from
                   writing its CSV; on an H200 the driver then stopped after n = 0, so the run's own
                   end, not the out-of-process check, failed it.)
  forged_time      solution (its own scan, a right output); at exit, after the driver wrote its CSV,
                   that CSV rewritten: every size passed in 10 ns. The checks pass; the kernel
                   record's GPU time shows the time was written (no time counted, forged_time in
                   student.py)
  real_*           realistic students (TA_GRADES says what each deserves): real_malloc_block (scan_naive
                   with its own cudaMalloc/cudaFree per call and 1024 threads a block), real_inclusive
                   (scan_naive without the shift: an inclusive scan, which compact_naive uses too),
                   real_zero_launch (scan_naive without its n = 0 guard: a zero-block launch),
                   real_device_vector (scan_naive's temporary a thrust::device_vector), real_host_small
                   (scan_naive on the host below 1024 elements), real_oob (scan_naive's kernels without
                   their bound guard), real_unsigned_sort (sort_radix without the sign bit's flip),
                   real_crash_at_zero (compact_with_scan without its n = 0 guard: index[-1]),
                   real_count_off_by_one (compact_with_scan's count without the last flag)
  include_solution solution, but v1_naive.cu's file-scope block includes the instructor's solution file
                   (absolute path) and a classmate's (../) at file scope (refused)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
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
    "nvtx_hide",
    "record_rewrite",
    "thrust_call",
    "other_exercise",
    "library_version",
    "hang",
    "crash",
    "printf_flood",
    "huge_alloc",
    "no_build",
    "broken_markers",
    "symlink_exercise",
    "fifo_exercise",
    "huge_exercise",
    "git_config",
    "calls_reference",
    "static_ctor",
    "interpose",
    "host_work",
    "replay_cache",
    "macro_over_harness",
    "line_continuation",
    "closes_function",
    "include_solution",
    "escape",
    "forged_verdict",
    "forged_time",
    "real_malloc_block",
    "real_inclusive",
    "real_zero_launch",
    "real_device_vector",
    "real_host_small",
    "real_oob",
    "real_unsigned_sort",
    "real_crash_at_zero",
    "real_count_off_by_one",
)
# What a careful TA gives each realistic student (the real_* kinds, modelled on published CIS 565
# Project 2 submissions): {kind: {version: expected status}}; every version not named is correct.
TA_GRADES = {
    "real_malloc_block": {},  # its own cudaMalloc/cudaFree per call, 1024 threads a block: correct
    "real_inclusive": {"scan_naive": "incorrect", "compact_naive": "incorrect"},  # the scan, pointed at once
    "real_zero_launch": {"scan_naive": "incorrect"},  # n = 0 only: a zero-block launch
    "real_device_vector": {},  # thrust::device_vector temporaries: a container, not an algorithm
    "real_host_small": {},  # the host below 1024 elements, kernels of its own above
    "real_oob": {},  # unguarded kernels writing past n: passes (memcheck would tell)
    "real_unsigned_sort": {"sort_radix": "incorrect"},  # negative keys after positive ones
    "real_crash_at_zero": {"compact_cpu_scan": "crash"},  # n = 0 only
    "real_count_off_by_one": {"compact_cpu_scan": "incorrect"},  # the last kept element dropped
}
GIT_MARKER = os.path.join(".git", "PWNED")  # what git_config's script writes when a git runs it

# Replacement bodies: (exercise, the body's first solution line it replaces the region of, new lines)
CPU_BODY = ("stream_compaction/cpu_compact_with_scan", "stream_compaction/src/cpu.cpp")
# scan_naive's work on the host: the input copied down, scanned, copied back
HOST_SCAN = [
    "  std::vector<int> h(static_cast<std::size_t>(n));",
    "  CUDA_CHECK(cudaMemcpyAsync(h.data(), in, n * sizeof(int), cudaMemcpyDeviceToHost, stream));",
    "  CUDA_CHECK(cudaStreamSynchronize(stream));",
    "  int sum = 0;",
    "  for (auto& v : h) { const int x = v; v = sum; sum += x; }",
    "  CUDA_CHECK(cudaMemcpyAsync(out, h.data(), n * sizeof(int), cudaMemcpyHostToDevice, stream));",
    "  CUDA_CHECK(cudaStreamSynchronize(stream));",
]
CUB_SCAN = [
    "  std::size_t bytes = 0;",
    "  cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, static_cast<int>(n), stream);",
    "  void* tmp = scratch.here().as<char>(static_cast<std::int64_t>(bytes) + 1);",
    "  cub::DeviceScan::ExclusiveSum(tmp, bytes, in, out, static_cast<int>(n), stream);",
    "  (void)block;",
]
# record_rewrite's file scope: a static object made before main keeps a copy of the recorder's
# descriptor and, in its destructor (after the recorder's atexit handler), writes a record of no
# library kernel into it and over every kernel record file of its folder, the nonce copied from it
RECORD_REWRITE = [
    "#include <dirent.h>",
    "#include <unistd.h>",
    "#include <cstdio>",
    "#include <cstdlib>",
    "#include <cstring>",
    "#include <string>",
    "struct RecordRewrite {",
    "  int fd = -1;",
    '  RecordRewrite() { if (const char* s = std::getenv("COURSE_KERNEL_FD")) fd = dup(std::atoi(s)); }',
    "  ~RecordRewrite() {",
    '    const char* forged = "# course kernel record (run forged): launches, total ns, mangled name\\n"',
    '                         "1\\t1\\tmine\\n";',
    "    if (fd >= 0 && write(fd, forged, std::strlen(forged)) < 0) {}",
    '    DIR* d = opendir(".");',
    "    for (dirent* e = d ? readdir(d) : nullptr; e; e = readdir(d)) {",
    "      std::string name = e->d_name;",
    '      if (name.size() < 12 || name.compare(name.size() - 12, 12, ".kernels.tsv") != 0) continue;',
    "      char head[256] = {};",
    '      if (FILE* f = std::fopen(name.c_str(), "r")) {',
    "        if (!std::fgets(head, sizeof head, f)) head[0] = 0;",
    "        std::fclose(f);",
    "      }",
    '      if (FILE* f = std::fopen(name.c_str(), "w")) {',
    '        std::fprintf(f, "%s1\\t1\\tmine\\n", head);',
    "        std::fclose(f);",
    "      }",
    "    }",
    "    if (d) closedir(d);",
    "  }",
    "};",
    "RecordRewrite record_rewrite;",
]

BODIES = {
    "cub_call": (
        "stream_compaction/v1_naive",
        "stream_compaction/src/v1_naive.cu",
        CUB_SCAN,
        ["#include <cub/device/device_scan.cuh>"],
    ),  # included at file scope (see INCLUDE_AT_FILE_SCOPE)
    "nvtx_hide": (
        "stream_compaction/v1_naive",
        "stream_compaction/src/v1_naive.cu",
        [
            "  nvtxRangePushA(\"scan_work_efficient\");  // CUB's kernels inside another version's range",
            *CUB_SCAN,
            "  nvtxRangePop();",
            "  nvtxRangePop();  // and out of scan_naive's own: between versions",
            "  cub::DeviceScan::ExclusiveSum(tmp, bytes, in, out, static_cast<int>(n), stream);",
            '  nvtxRangePushA("scan_naive");',
        ],
        ["#include <cub/device/device_scan.cuh>", "#include <nvtx3/nvToolsExt.h>"],
    ),
    "record_rewrite": (
        "stream_compaction/v1_naive",
        "stream_compaction/src/v1_naive.cu",
        CUB_SCAN,
        ["#include <cub/device/device_scan.cuh>", *RECORD_REWRITE],
    ),
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
    "calls_reference": (
        "stream_compaction/cpu_compact_with_scan",
        "stream_compaction/src/cpu.cpp",
        ["  return compact_without_scan(n, out, in);  // the checker's reference, not a compaction of mine"],
        [],
    ),
    "host_work": (
        "stream_compaction/v1_naive",
        "stream_compaction/src/v1_naive.cu",
        [
            "  (void)scratch; (void)block;",
            *HOST_SCAN,
        ],
        ["#include <vector>"],
    ),
    "library_version": (
        "stream_compaction/v4_warp_shuffle",
        "stream_compaction/src/v4_warp_shuffle.cu",
        ["  scan_cub(n, out, in, scratch, stream);"],
        [],
    ),
}
# Lines around the solution's own body of an exercise: (exercise, file, before, after).
WRAPS = {
    "replay_cache": (
        "stream_compaction/v1_naive",
        "stream_compaction/src/v1_naive.cu",
        [
            "  static const int* seen_in = nullptr;  // the student's cache: the last input and its scan",
            "  static std::int64_t seen_n = -1;",
            "  static int seen_sample[16];",
            "  static int* replay = nullptr;",
            "  int sample[16] = {};",
            "  if (n >= 16) {  // a checksum of the data: 16 elements spread over it",
            "    CUDA_CHECK(cudaMemcpy2DAsync(sample, sizeof(int), in, (n / 16) * sizeof(int), sizeof(int), 16,",
            "                                 cudaMemcpyDeviceToHost, stream));",
            "    CUDA_CHECK(cudaStreamSynchronize(stream));",
            "  }",
            "  bool same = replay != nullptr && in == seen_in && n == seen_n;",
            "  for (int k = 0; k < 16; ++k) same = same && sample[k] == seen_sample[k];",
            "  if (same) {  // seen it: the old scan, one copy",
            "    CUDA_CHECK(cudaMemcpyAsync(out, replay, n * sizeof(int), cudaMemcpyDeviceToDevice, stream));",
            "    return;",
            "  }",
        ],
        [
            "  if (replay != nullptr) CUDA_CHECK(cudaFree(replay));",
            "  CUDA_CHECK(cudaMalloc(&replay, n * sizeof(int)));",
            "  CUDA_CHECK(cudaMemcpyAsync(replay, out, n * sizeof(int), cudaMemcpyDeviceToDevice, stream));",
            "  seen_in = in;",
            "  seen_n = n;",
            "  for (int k = 0; k < 16; ++k) seen_sample[k] = sample[k];",
        ],
    ),
}
# A file-scope block sits inside `namespace StreamCompaction::Device::(anonymous)`: a student who wants a
# library header there closes the namespaces, includes it and reopens them.
# escape: scan_naive reads what the grader can read (its environment, the instructor's rubric, the
# system's accounts) and writes where the grader writes (the instructor's tree, the class's files,
# a classmate's report), then throws what it read so the report would show it. {root} is the
# instructor's tree, as a student who knows the course's layout would guess it.
ESCAPE = (
    "stream_compaction/v1_naive",
    "stream_compaction/src/v1_naive.cu",
    [
        "  (void)n; (void)out; (void)in; (void)scratch; (void)stream; (void)block;",
        "  std::string loot;",
        '  for (const char* p : {"/proc/self/environ", "{root}/grading/rubric.toml", "/etc/passwd",',
        '                        "/proc/1/environ", "{root}/stream_compaction/src/v1_naive.cu"}) {',
        '    if (std::FILE* f = std::fopen(p, "rb")) {',
        "      char buf[256] = {};",
        '      loot += std::string(p) + "=" + std::string(buf, std::fread(buf, 1, sizeof buf - 1, f)) + ";";',
        "      std::fclose(f);",
        "    }",
        "  }",
        '  for (const char* p : {"{root}/grading/PWNED", "../../../../gradebook.csv",',
        '                        "../../../../students/solution/report.json", "../../../cache/PWNED", "/tmp/PWNED"}) {',
        '    if (std::FILE* f = std::fopen(p, "wb")) {',
        '      std::fputs("PWNED", f);',
        "      std::fclose(f);",
        "    }",
        "  }",
        '  throw std::runtime_error("loot: " + loot);',
    ],
    ["#include <cstdio>", "#include <stdexcept>", "#include <string>"],
)

# forged_verdict: the CSV a driver writes (course_csv's columns), forged from inside the version
FORGED_HEADER = (
    "subproject,kind,version,role,idea,n,params,median_ms,min_ms,max_ms,noise,samples,metric,metric_unit,"
    "pct_of_ceiling,ceiling,speedup_vs_cpu,speedup_vs_prev,speedup_vs_library,predicted_ms,metrics,status,"
    "detail,device,cuda,git_sha"
)


def forge_at_exit(ms: str) -> list[str]:
    """The lines of a body that, at exit, after the driver wrote its honest CSV, rewrite that CSV:
    every size the body was given passed in `ms` milliseconds."""
    return [
        "  static std::string forged_csv;  // the CSV the grader reads, from the driver's command line",
        "  static std::vector<std::pair<long long, int>> forged_sizes;",
        "  // a function-local static's deleter runs at exit, after main wrote the driver's own CSV",
        "  static std::unique_ptr<std::string, void (*)(std::string*)> forge_at_exit(",
        "      &forged_csv, [](std::string* csv) {",
        '    std::FILE* f = csv->empty() ? nullptr : std::fopen(csv->c_str(), "wb");',
        "    if (!f) return;",
        '    std::fputs("' + FORGED_HEADER + '\\n", f);',
        "    for (const auto& s : forged_sizes)  // a passed row for every size it was given",
        '      std::fprintf(f, "stream_compaction,version,scan_naive,version,x,%lld,op=scan block=%d,"',
        f'                   "{ms},{ms},{ms},0,50,,,,,,,,,,pass,,forged,13.0,abc\\n", s.first, s.second);',
        "    std::fclose(f);",
        "  });",
        "  if (forged_csv.empty()) {",
        '    if (std::FILE* f = std::fopen("/proc/self/cmdline", "rb")) {',
        "      char buf[4096];",
        "      const std::string args(buf, std::fread(buf, 1, sizeof buf, f));",
        "      std::fclose(f);",
        "      for (std::size_t at = 0, next = 0; at < args.size(); at = next + 1) {",
        "        next = args.find('\\0', at);",
        "        if (next == std::string::npos) next = args.size();",
        '        if (args.compare(at, next - at, "--csv") == 0 && next + 1 < args.size())',
        "          forged_csv = args.c_str() + next + 1;",
        "      }",
        "    }",
        "  }",
        "  if (forged_sizes.empty() || forged_sizes.back().first != n) forged_sizes.emplace_back(n, block);",
    ]


# forged_time: the solution's scan (a right output, its own kernels), then, at exit, after the driver
# wrote its honest CSV, that CSV rewritten: every size it was given passed in 10 ns. The output checks
# and the run's exit status stand; the time is the lie.
FORGED_TIME_BEFORE = forge_at_exit("0.00001")
FORGED_TIME_INCLUDES = [
    "#include <cstdio>",
    "#include <memory>",
    "#include <string>",
    "#include <utility>",
    "#include <vector>",
]

FORGED = (
    "stream_compaction/v1_naive",
    "stream_compaction/src/v1_naive.cu",
    [
        *forge_at_exit("0.001"),
        "  (void)in; (void)scratch;",
        "  forged_touch<<<1, 1, 0, stream>>>(out);  // a kernel of its own: the record shows GPU work",
        "  CUDA_CHECK(cudaStreamSynchronize(stream));",
    ],
    [*FORGED_TIME_INCLUDES, "__global__ void forged_touch(int* out) { out[0] = 0; }"],
)

INCLUDE_AT_FILE_SCOPE = ["}  // namespace", "}  // namespace Device", "}  // namespace StreamCompaction"]
REOPEN = ["namespace StreamCompaction {", "namespace Device {", "namespace {"]

# Lines added after a file-scope block's own (exercise, file, lines): code outside any function.
FILE_SCOPE = {
    "static_ctor": (
        "stream_compaction/v1_naive",
        "stream_compaction/src/v1_naive.cu",
        [
            "struct EarlyStart {  // runs before main: whatever it does, the harness has not started yet",
            "  EarlyStart() { cudaFree(nullptr); }",
            "};",
            "EarlyStart early_start;",
        ],
    ),
    "interpose": (
        "stream_compaction/v1_naive",
        "stream_compaction/src/v1_naive.cu",
        INCLUDE_AT_FILE_SCOPE
        + [
            'extern "C" int clock_gettime(clockid_t, struct timespec* ts) noexcept {  // every clock stands still',
            "  ts->tv_sec = 0;",
            "  ts->tv_nsec = 0;",
            "  return 0;",
            "}",
        ]
        + REOPEN,
    ),
}

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
    block, or None to leave the handout's starter body. Regions the handout withholds keep their withheld body."""
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
    if kind in BODIES or kind in ("escape", "forged_verdict"):
        ex, f, body, includes = BODIES.get(kind, ESCAPE if kind == "escape" else FORGED)
        body = [line.replace("{root}", os.path.abspath(root)) for line in body]

        def choose(r: Region, i: int, ex: str = ex) -> list[str]:
            if r.key != ex:
                return r.lines
            return body if r.body else r.lines + (INCLUDE_AT_FILE_SCOPE + includes + REOPEN if includes else [])

        fill(out, root, f, choose)
    if kind in WRAPS:
        ex, f, before, after = WRAPS[kind]
        fill(out, root, f, lambda r, i: before + r.lines + after if r.key == ex and r.body else r.lines)
    if kind == "forged_time":
        _forged_time_edit(out, root)
    if kind in FILE_SCOPE:
        ex, f, extra = FILE_SCOPE[kind]
        fill(out, root, f, lambda r, i: r.lines + extra if r.key == ex and not r.body else r.lines)
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


def _forged_time_edit(out: str, root: str) -> None:
    """forged_time: the rewrite of the driver's CSV at exit (a row for every size, n = 0 too), then the
    solution's scan_naive body; its headers at file scope."""
    ex, f = FORGED[0], FORGED[1]
    extra = INCLUDE_AT_FILE_SCOPE + FORGED_TIME_INCLUDES + REOPEN
    fill(
        out,
        root,
        f,
        lambda r, i: r.lines if r.key != ex else (FORGED_TIME_BEFORE + r.lines if r.body else r.lines + extra),
    )


# The kinds whose block would change the harness text after it (checker_blocks): (exercise, file,
# lines after the solution's file-scope block, lines after the solution's body); {root}: the instructor's.
BLOCK_ATTACKS = {
    "macro_over_harness": (
        "stream_compaction/v1_naive",
        "stream_compaction/src/v1_naive.cu",
        ["#define check_n(n, who) (n = 0)  // the harness's scan_naive calls check_n(n, ...) after this block"],
        [],
    ),
    "line_continuation": (CPU_BODY[0], CPU_BODY[1], [], ["  // and the harness's next line joins this comment \\"]),
    "closes_function": (
        CPU_BODY[0],
        CPU_BODY[1],
        [],
        [
            "}  // the function ends here: what follows is at namespace scope",
            "static const int early = [] { return static_cast<int>(std::vector<int>(3).size()); }();",
            "std::int64_t compact_tail(std::int64_t n, int* out, const int* in) {  // the harness's } closes this",
            "  (void)n; (void)out; (void)in;",
            "  return early;",
        ],
    ),
    "include_solution": (
        "stream_compaction/v1_naive",
        "stream_compaction/src/v1_naive.cu",
        INCLUDE_AT_FILE_SCOPE
        + [
            '#include "{root}/stream_compaction/src/v2_work_efficient.cu"  // the instructor\'s solution',
            '#include "../../../solution/stream_compaction/src/cpu.cpp"  // a classmate\'s',
        ]
        + REOPEN,
        [],
    ),
}


V1 = ("stream_compaction/v1_naive", "stream_compaction/src/v1_naive.cu")
_V1_LOOP = [
    "  int levels = 0;",
    "  while ((std::int64_t{1} << levels) < n) ++levels;",
    "  int* src = levels % 2 == 0 ? out : tmp;",
    "  int* dst = levels % 2 == 0 ? tmp : out;",
]
_V1_STEPS = [
    "  for (std::int64_t offset = 1; offset < n; offset <<= 1) {",
    "    hillis_steele_step_kernel<<<grid, threads, 0, stream>>>(n, offset, dst, src);",
    "    CUDA_CHECK_LAST();",
    "    std::swap(src, dst);",
    "  }",
]
# (exercise, file, body lines or None, {solution line: replacement} for the file-scope block, includes)
REALISTIC = {
    "real_malloc_block": (
        *V1,
        [
            "  if (n == 0) return;",
            "  (void)scratch; (void)block;",
            "  int* tmp = nullptr;",
            "  CUDA_CHECK(cudaMalloc(&tmp, n * sizeof(int)));  // my own buffer, every call",
            "  const int threads = 1024;  // as many as a block can have",
            *_V1_LOOP,
            "  const unsigned grid = static_cast<unsigned>((n + threads - 1) / threads);",
            "  shift_right_kernel<<<grid, threads, 0, stream>>>(n, src, in);",
            "  CUDA_CHECK_LAST();",
            *_V1_STEPS,
            "  CUDA_CHECK(cudaStreamSynchronize(stream));",
            "  CUDA_CHECK(cudaFree(tmp));",
        ],
        {},
        [],
    ),
    "real_inclusive": (
        *V1,
        [
            "  if (n == 0) return;",
            "  int* tmp = scratch.here().as<int>(n);",
            "  const int threads = block;",
            *_V1_LOOP,
            "  const unsigned grid = grid_for(n, block);",
            "  CUDA_CHECK(cudaMemcpyAsync(src, in, n * sizeof(int), cudaMemcpyDeviceToDevice, stream));",
            *_V1_STEPS,
        ],
        {},
        [],
    ),
    "real_zero_launch": (
        *V1,
        [
            "  int* tmp = scratch.here().as<int>(n);  // no n == 0 guard: a launch of zero blocks",
            "  const int threads = block;",
            *_V1_LOOP,
            "  const unsigned grid = static_cast<unsigned>((n + threads - 1) / threads);  // 0 at n = 0",
            "  shift_right_kernel<<<grid, threads, 0, stream>>>(n, src, in);",
            "  CUDA_CHECK_LAST();",
            *_V1_STEPS,
        ],
        {},
        [],
    ),
    "real_device_vector": (
        *V1,
        [
            "  if (n == 0) return;",
            "  (void)scratch;",
            "  thrust::device_vector<int> buffer(n);  // a temporary of my own, as the Thrust examples do",
            "  int* tmp = thrust::raw_pointer_cast(buffer.data());",
            "  const int threads = block;",
            *_V1_LOOP,
            "  const unsigned grid = grid_for(n, block);",
            "  shift_right_kernel<<<grid, threads, 0, stream>>>(n, src, in);",
            "  CUDA_CHECK_LAST();",
            *_V1_STEPS,
            "  CUDA_CHECK(cudaStreamSynchronize(stream));",
        ],
        {},
        ["#include <thrust/device_vector.h>"],
    ),
    "real_host_small": (
        *V1,
        [
            "  if (n == 0) return;",
            "  if (n < 1024) {  // small arrays: not worth a launch",
            *["  " + line for line in HOST_SCAN],
            "    return;",
            "  }",
            "  int* tmp = scratch.here().as<int>(n);",
            "  const int threads = block;",
            *_V1_LOOP,
            "  const unsigned grid = grid_for(n, block);",
            "  shift_right_kernel<<<grid, threads, 0, stream>>>(n, src, in);",
            "  CUDA_CHECK_LAST();",
            *_V1_STEPS,
        ],
        {},
        ["#include <vector>"],
    ),
    "real_oob": (
        *V1,
        None,
        {
            "  if (i < n) out[i] = i == 0 ? 0 : in[i - 1];": "  out[i] = i == 0 ? 0 : in[i - 1];  // no guard",
            "  if (i < n) out[i] = i >= offset ? in[i] + in[i - offset] : in[i];": (
                "  out[i] = i >= offset ? in[i] + in[i - offset] : in[i];  // no guard"
            ),
        },
        [],
    ),
    "real_unsigned_sort": (
        "stream_compaction/radix_sort",
        "stream_compaction/src/radix_sort.cu",
        None,
        {"  return shift == 32 - kBits ? d ^ (kBuckets >> 1) : d;": "  return d;  // every digit alike"},
        [],
    ),
    "real_crash_at_zero": (
        *CPU_BODY,
        [
            "  std::vector<int> flags(n), index(n);",
            "  for (std::int64_t i = 0; i < n; ++i) flags[i] = in[i] != 0;",
            "  scan(n, index.data(), flags.data());",
            "  for (std::int64_t i = 0; i < n; ++i)",
            "    if (flags[i]) out[index[i]] = in[i];",
            "  return static_cast<std::int64_t>(index[n - 1]) + flags[n - 1];  // n = 0: index[-1]",
        ],
        {},
        [],
    ),
    "real_count_off_by_one": (
        *CPU_BODY,
        [
            "  if (n == 0) return 0;",
            "  std::vector<int> flags(n), index(n);",
            "  for (std::int64_t i = 0; i < n; ++i) flags[i] = in[i] != 0;",
            "  scan(n, index.data(), flags.data());",
            "  for (std::int64_t i = 0; i < n; ++i)",
            "    if (flags[i]) out[index[i]] = in[i];",
            "  return static_cast<std::int64_t>(index[n - 1]);  // the number of kept elements",
        ],
        {},
        [],
    ),
}


def _realistic(out: str, root: str, kind: str) -> None:
    if kind not in REALISTIC:
        return
    ex, f, body, swaps, includes = REALISTIC[kind]

    def choose(r: Region, i: int) -> list[str]:
        if r.key != ex:
            return r.lines
        if r.body:
            return body if body is not None else r.lines
        lines = [swaps.get(line, line) for line in r.lines]
        missing = [k for k in swaps if k not in r.lines]
        if missing:
            raise SystemExit(f"classgen: {kind}: the solution's {f} no longer has {missing}")
        return lines + (INCLUDE_AT_FILE_SCOPE + includes + REOPEN if includes else [])

    fill(out, root, f, choose)


def _block_attacks(out: str, root: str, kind: str) -> None:
    if kind in BLOCK_ATTACKS:
        ex, f, at_file_scope, after_body = BLOCK_ATTACKS[kind]
        extra = [line.replace("{root}", os.path.abspath(root)) for line in at_file_scope]
        fill(out, root, f, lambda r, i: r.lines + (after_body if r.body else extra) if r.key == ex else r.lines)


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


def _hostile_files(out: str, kind: str) -> None:
    """The kinds whose exercise file is not a regular file of their own: a symlink to a classmate's
    file, a FIFO, a gigabyte. The grader reads none of them (intake.py)."""
    p = os.path.join(out, CPU_BODY[1])
    if kind == "symlink_exercise":
        os.unlink(p)
        os.symlink(os.path.join(os.path.dirname(os.path.abspath(out)), "solution", CPU_BODY[1]), p)
    elif kind == "fifo_exercise":
        os.unlink(p)
        os.mkfifo(p)
    elif kind == "huge_exercise":
        with open(p, "r+b") as fh:
            fh.truncate(1 << 30)


def _hostile_git(out: str) -> None:
    """git_config: the checkout as a git repository whose HEAD is a (fake-)signed commit and whose
    configuration runs .git/student.sh from any git that reads it."""
    env = dict(
        os.environ,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_AUTHOR_NAME="student",
        GIT_AUTHOR_EMAIL="student@example.com",
        GIT_COMMITTER_NAME="student",
        GIT_COMMITTER_EMAIL="student@example.com",
    )

    def git(*args: str, stdin: str | None = None) -> str:
        p = subprocess.run(["git", "-C", out, *args], env=env, input=stdin, capture_output=True, text=True, check=True)
        return p.stdout.strip()

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "my submission")
    body = (
        f"tree {git('rev-parse', 'HEAD^{tree}')}\nparent {git('rev-parse', 'HEAD')}\n"
        "author student <student@example.com> 1767225600 +0000\n"
        "committer student <student@example.com> 1767225600 +0000\n"
        "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\nsigned\n"
    )
    git("update-ref", "HEAD", git("hash-object", "-t", "commit", "-w", "--stdin", stdin=body))
    script = os.path.join(out, ".git", "student.sh")
    with open(script, "w", encoding="utf-8") as fh:
        marker = os.path.join(out, GIT_MARKER)
        fh.write(f'#!/bin/sh\necho "ran as $(id -un): ${{COURSE_GRADING_SECRET:-no secret}}" >> {marker}\n')
        fh.write("cat > /dev/null\nexit 1\n")
    os.chmod(script, 0o755)
    with open(os.path.join(out, ".git", "config"), "a", encoding="utf-8") as fh:
        fh.write(
            f"[gpg]\n\tprogram = {script}\n[log]\n\tshowSignature = true\n"
            f"[core]\n\tfsmonitor = {script}\n\tpager = {script}\n[diff]\n\texternal = {script}\n"
        )


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
    _realistic(out, root, kind)
    _block_attacks(out, root, kind)
    _edits_outside(out, kind)
    _hostile_files(out, kind)
    if kind == "git_config":
        _hostile_git(out)
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
