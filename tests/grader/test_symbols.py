"""The object rules (judge/checker_symbols.py) on small hand-compiled objects: a harness with a
reference file, a checker file and an exercise file, its solution and its handout starter body, and one student
object per rule broken (each test fails if its rule is removed); the instructor's own objects pass;
and the kernel rules of the runs: a kernel of the solution's exercise regions is never the harness's,
and a GPU version whose run launched no kernel of its own did its work on the host."""

import json
import os
import shutil
import subprocess
import textwrap

import pytest

from conftest import ROOT
from judge import checker_kernels, checker_score, checker_symbols, rubric, student
from judge.model import CaseResult, KernelUse, Status, TestResult

pytestmark = pytest.mark.skipif(not shutil.which("g++"), reason="no g++: the objects are compiled here")

HEADER = """
#include <cstdlib>
namespace H {
long reference_scan(long n);             // src/reference.cpp: the checker's reference
long reference_count(long n);            // src/reference.cpp
long table_entry(long n);                // src/harness.cpp: reaches reference_count
int helper(int x);                       // src/harness.cpp
long exercise(long n);                   // src/cpu.cpp: the exercise
template <class T> __attribute__((noinline)) int compare(const T* a) { return a[0] == 1; }
}
"""
HARNESS = {
    "src/reference.cpp": """
        namespace H {
        long reference_scan(long n) { return n * 2; }
        long reference_count(long n) { return n * 3; }
        }""",
    "src/check.cpp": """
        namespace H {
        int (*volatile compare_int)(const int*) = &compare<int>;  // emitted: the checker's copy
        int check(const int* a) { return compare_int(a); }
        }""",
    "src/harness.cpp": """
        namespace H {
        long table_entry(long n) { return reference_count(n) + 1; }
        int helper(int x) { return x + 1; }
        }""",
}
SOLUTION = """
    namespace H { long exercise(long n) { return reference_scan(n) + 1; } }"""
STARTER = """
    namespace H { long exercise(long n) { (void)n; return 0; } }"""
STUDENTS = {
    "own_work": """
        namespace H {
        namespace { long twice(long n) { return reference_scan(n); } }
        long my_new_helper(long n) { return n + 1; }
        long exercise(long n) { return twice(n) + my_new_helper(n); }
        }""",
    "std_template": """
        #include <vector>
        namespace H {
        long exercise(long n) { std::vector<long> v; for (long i = 0; i < n; ++i) v.push_back(i); return v.size(); }
        }""",
    "calls_reference": """
        namespace H { long exercise(long n) { return reference_count(n); } }""",
    "calls_reaching": """
        namespace H { long exercise(long n) { return table_entry(n) - 1; } }""",
    "getenv": """
        namespace H { long exercise(long n) { return n + (std::getenv("COURSE_GRADING_SECRET") != nullptr); } }""",
    "toolkit_inline": """
        extern "C" inline __attribute__((noinline)) const char* nvtxInitializeInjectionLibrary_v3() {
          return std::getenv("NVTX_INJECTION64_PATH");  // what NVTX's header does, through device_vector
        }
        namespace H { long exercise(long n) { return n + (nvtxInitializeInjectionLibrary_v3() != nullptr); } }""",
    "own_inline_getenv": """
        namespace H {
        inline __attribute__((noinline)) const char* peek() { return std::getenv("COURSE_GRADING_SECRET"); }
        long exercise(long n) { return n + (peek() != nullptr); }
        }""",
    "system": """
        namespace H { long exercise(long n) { return std::system("/bin/true") + n; } }""",
    "interpose": """
        namespace H {
        int helper(int x) { return x; }
        long exercise(long n) { return n; }
        }""",
    "interpose_library": """
        extern "C" int gettimeofday(void*, void*) { return 0; }
        namespace H { long exercise(long n) { return n; } }""",
    "specialize_checker": """
        namespace H {
        template <> __attribute__((noinline)) inline int compare<int>(const int*) { return 1; }
        int (*volatile keep)(const int*) = &compare<int>;
        long exercise(long n) { return n + keep(nullptr); }
        }""",
    "static_ctor": """
        namespace H {
        struct Early { Early() { helper(1); } };
        Early early;
        long exercise(long n) { return n; }
        }""",
    "constructor_attribute": """
        namespace H {
        __attribute__((constructor)) static void early() { helper(2); }
        long exercise(long n) { return n; }
        }""",
}


def compile_one(tmp, name, body, header=HEADER):
    src = tmp / f"{name}.cpp"
    src.write_text(header + textwrap.dedent(body) + "\n")
    obj = tmp / f"{name}.o"
    subprocess.run(["g++", "-std=c++17", "-O2", "-c", str(src), "-o", str(obj)], check=True)
    return str(obj)


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("objects")
    objs = {rel: (compile_one(tmp, rel.replace("/", "_")[:-4], body), {"drv"}) for rel, body in HARNESS.items()}
    objs["src/cpu.cpp"] = (compile_one(tmp, "solution", SOLUTION), {"drv"})
    h = checker_symbols.harness_of(
        objs,
        ["*/reference.cpp", "src/reference.cpp", "src/check.cpp"],
        ("cub::",),
        {"gettimeofday": "library libc.so.6"},
    )
    h.handout["src/cpu.cpp"] = checker_symbols.read_object(compile_one(tmp, "starter", STARTER))
    return h, tmp


def findings(harness, kind):
    h, tmp = harness
    info = checker_symbols.read_object(compile_one(tmp, kind, STUDENTS[kind]))
    return checker_symbols.check_object(h, "src/cpu.cpp", info)


def rules(found):
    return sorted({f.rule for f in found})


def test_the_solution_and_the_stub_pass(harness):
    h, _ = harness
    assert checker_symbols.check_object(h, "src/cpu.cpp", h.instructor["src/cpu.cpp"]) == []
    assert checker_symbols.check_object(h, "src/cpu.cpp", h.handout["src/cpu.cpp"]) == []


@pytest.mark.parametrize("kind", ["own_work", "std_template"])
def test_a_students_own_code_and_library_templates_pass(harness, kind):
    assert findings(harness, kind) == []


def test_a_call_of_the_checkers_reference_is_refused(harness):
    found = findings(harness, "calls_reference")
    assert rules(found) == ["checker"]
    assert "H::reference_count(long)" in str(found[0]) and "src/reference.cpp" in str(found[0])
    assert checker_symbols.is_refusal(str(found[0]))


def test_a_call_of_harness_code_that_reaches_the_checker_is_refused(harness):
    found = findings(harness, "calls_reaching")
    assert rules(found) == ["checker"]
    assert "H::table_entry(long)" in str(found[0]) and "H::reference_count(long)" in str(found[0])


@pytest.mark.parametrize("kind,call", [("getenv", "getenv"), ("system", "system")])
def test_process_and_environment_calls_are_refused(harness, kind, call):
    found = findings(harness, kind)
    assert rules(found) == ["process"] and f"calls {call}" in str(found[0])


def test_a_call_the_toolkits_inline_headers_make_is_theirs(harness):
    """thrust::device_vector instantiates NVTX's injection loader (getenv, dlopen): the header's
    inline function calls it, not the student's code; the same call from the student's own inline
    function is still refused."""
    assert findings(harness, "toolkit_inline") == []
    found = findings(harness, "own_inline_getenv")
    assert rules(found) == ["process"] and "calls getenv" in str(found[0])


def test_defining_a_harness_function_is_refused(harness):
    found = findings(harness, "interpose")
    assert rules(found) == ["interpose"]
    assert "H::helper(int)" in str(found[0]) and "src/harness.cpp" in str(found[0])


def test_defining_a_library_function_is_refused(harness):
    found = findings(harness, "interpose_library")
    assert rules(found) == ["interpose"] and "gettimeofday" in str(found[0]) and "libc" in str(found[0])


def test_specializing_a_template_only_the_checker_instantiates_is_refused(harness):
    found = findings(harness, "specialize_checker")
    assert "interpose" in rules(found)
    assert any("H::compare<int>" in str(f) for f in found)


@pytest.mark.parametrize("kind", ["static_ctor", "constructor_attribute"])
def test_a_static_constructor_is_refused(harness, kind):
    found = findings(harness, kind)
    assert rules(found) == ["init"] and "static constructor" in str(found[0])


def test_a_static_constructor_merged_into_the_harness_start_up_is_refused(tmp_path):
    """The TU already has a start-up function (<iostream>'s, GCC < 13): the student's global object
    adds its constructor to the same function; what that code reaches gives it away."""
    io = HEADER + "#include <iostream>\n"
    sol = compile_one(tmp_path, "sol", SOLUTION, io)
    stu = compile_one(tmp_path, "stu", STUDENTS["static_ctor"], io)
    ref = compile_one(tmp_path, "ref", HARNESS["src/reference.cpp"])
    har = compile_one(tmp_path, "har", HARNESS["src/harness.cpp"])
    objs = {"src/cpu.cpp": (sol, {"d"}), "src/reference.cpp": (ref, {"d"}), "src/harness.cpp": (har, {"d"})}
    h = checker_symbols.harness_of(objs, ["src/reference.cpp"], (), {})
    found = checker_symbols.check_object(h, "src/cpu.cpp", checker_symbols.read_object(stu))
    assert rules(found) == ["init"] and "static constructor" in str(found[0])
    assert checker_symbols.check_object(h, "src/cpu.cpp", h.instructor["src/cpu.cpp"]) == []


def test_including_iostream_is_not_a_static_constructor(harness):
    """<iostream> constructs std::ios_base::Init at start-up in every file that includes it (GCC < 13):
    the compiler's, not the student's."""
    h, tmp = harness
    info = checker_symbols.read_object(
        compile_one(tmp, "iostream", STUDENTS["own_work"], HEADER + "#include <iostream>\n")
    )
    assert checker_symbols.check_object(h, "src/cpu.cpp", info) == []


def test_findings_refuse_the_versions_they_touch(harness):
    h, _ = harness
    found = {"src/cpu.cpp": findings(harness, "calls_reference") + findings(harness, "static_ctor")}
    units = {"src/cpu.cpp": {"sub/cpu_exercise"}}
    mine = checker_symbols.version_findings(h, found, units, {"sub/cpu_exercise"}, "drv")
    other = checker_symbols.version_findings(h, found, units, {"sub/gpu_exercise"}, "drv")
    elsewhere = checker_symbols.version_findings(h, found, units, {"sub/gpu_exercise"}, "another driver")
    assert len(mine) == 2 and len(other) == 1 and "static constructor" in other[0] and elsewhere == []


def test_a_refusal_is_graded_refused_or_not_its_own_work():
    rub = rubric.load(os.path.join(ROOT, "grading", "rubric.toml"))
    rule = rub.rule("stream_compaction/compact_cpu_scan")
    case = CaseResult(name="visible", hidden=False, status=Status.CORRECT)
    finding = "cpu.cpp.o calls StreamCompaction::Host::compact_without_scan(long, int*, int const*) (rule 'checker')"
    g = checker_score.grade_version(rule, [case], rub, None, static_findings=[finding])
    assert g.status in (getattr(Status, "REFUSED", Status.NOT_OWN_WORK), Status.NOT_OWN_WORK)
    assert g.status.value in ("refused", "not its own work") and g.points == 0 and "rule 'checker'" in g.detail


# ---- the instructor's own build --------------------------------------------------------------------
BUILD = os.environ.get("COURSE_BUILD_DIR", os.path.join(ROOT, "build", "release"))


@pytest.mark.skipif(
    not os.path.exists(os.path.join(BUILD, "stream_compaction", "stream_compaction")),
    reason=f"no instructor build in {BUILD}",
)
def test_the_instructors_objects_pass_and_the_references_are_the_checkers():
    from judge import runner_build

    plan = runner_build.load_plan(ROOT, BUILD, ["stream_compaction/stream_compaction"])
    rub = rubric.load(os.path.join(ROOT, "grading", "rubric.toml"))
    h = checker_symbols.build_harness(plan, rub.checker_files, rub.libraries)
    for rel, info in h.instructor.items():
        assert checker_symbols.check_object(h, rel, info) == [], rel
    # c++filt writes "int const*", CUDA's cu++filt (used where it is on PATH) "const int *"
    names = {n.replace(" ", "").replace("intconst*", "constint*") for n in checker_kernels.demangle(sorted(h.checker))}
    assert "StreamCompaction::Host::compact_without_scan(long,int*,constint*)" in names
    exercise = (
        "StreamCompaction::Host::compact_with_scan(long,int*,constint*,StreamCompaction::Host::CompactStageClock*)"
    )
    assert exercise not in names  # the exercise
    reach = set(checker_kernels.demangle(sorted(h.reaches)))
    assert "StreamCompaction::versions()" in reach  # its table runs the CPU references
    assert "cudaEventElapsedTime" in h.strong  # CUDA's runtime: a student may not define it


# ---- the kernels of a run ---------------------------------------------------------------------------
def test_a_kernel_of_the_solutions_regions_is_never_the_harnesss():
    regions = checker_kernels.region_kernels(ROOT, ["stream_compaction/src/v1_naive.cu"])
    assert "hillis_steele_step_kernel" in regions
    rub = rubric.load(os.path.join(ROOT, "grading", "rubric.toml"))
    rule = rub.rule("stream_compaction/scan_naive")
    mangled = (
        "_ZN16StreamCompaction6Device44_GLOBAL__N__0123abcd_11_v1_naive_cu_0123abcd25hillis_steele_step_kernelEllPiPKi"
    )
    harness = {checker_kernels.stable_name(mangled)}
    args = ([(mangled, 3)], rule, {"stream_compaction/src/v1_naive.cu"}, {}, {}, rub.libraries, harness)
    assert checker_kernels.classify(*args)[0].owner == "harness"  # without the regions: counted as the harness's
    use = checker_kernels.classify(*args, regions)[0]
    assert not use.allowed and "the solution's kernel" in use.owner


def test_a_gpu_version_that_launched_no_kernel_of_its_own_worked_on_the_host():
    ref = {"own_kernels": 2}
    rows = [{"version": "scan_naive", "n": str(n)} for n in (1, 2, 31, 33, 1000, 2**26)]
    host = CaseResult(name="visible", hidden=False, status=Status.CORRECT)
    host.kernels = [KernelUse(name="poison", launches=1, owner="harness")]
    student.host_work(host, ref, rows, "scan_naive")
    assert host.status is Status.NOT_OWN_WORK
    assert host.detail == "no kernel of its own ran at n=1,2,31,33,...,67108864: the work happened on the host"
    gpu = CaseResult(name="visible", hidden=False, status=Status.CORRECT)
    gpu.kernels = [KernelUse(name="scan", launches=1, owner="own")]
    student.host_work(gpu, ref, rows, "scan_naive")
    cpu = CaseResult(name="visible", hidden=False, status=Status.CORRECT)
    student.host_work(cpu, {"own_kernels": 0}, rows, "scan_naive")
    assert gpu.status is Status.CORRECT and cpu.status is Status.CORRECT
    assert json.dumps(ref)


def test_an_unwritten_version_that_passed_only_the_empty_input_is_not_called_host_work():
    # The harness answers n = 0 itself: a version left as the handout has it passes that test and
    # no other, with no kernel of its own. It is incorrect, not a version that did its work on the host.
    ref = {"own_kernels": 2}
    rows = [{"version": "compact_naive", "n": str(n)} for n in (0, 1, 1000)]

    def case(passed: tuple[str, ...]) -> CaseResult:
        cr = CaseResult(name="visible", hidden=False, status=Status.INCORRECT)
        cr.tests = [
            TestResult(name=f"{t} op=compact", status=Status.CORRECT if t in passed else Status.INCORRECT)
            for t in ("n=0", "n=1", "n=1000")
        ]
        return cr

    unwritten = case(("n=0", "n=1"))
    student.host_work(unwritten, ref, rows, "compact_naive")
    assert unwritten.status is Status.INCORRECT
    host = case(("n=0", "n=1000"))  # a real size passed without a kernel of its own
    student.host_work(host, ref, rows, "compact_naive")
    assert host.status is Status.NOT_OWN_WORK
