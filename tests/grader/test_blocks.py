"""A STUDENT block may not change what follows it (grading/judge/checker_blocks.py): one test per
rule with hostile blocks, the blocks real students write (which must pass), the splice's scoping
compiled with g++ and nvcc, and the refusal carried to the version's status."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import exercise_markers as em
from conftest import ROOT
from judge import checker_blocks as cb
from judge import checker_score as score
from judge import checker_splice as assemble
from judge.model import Status

BODY = ["namespace StreamCompaction", "namespace Host", "{"]  # a function body's harness context
FILE = ["namespace StreamCompaction", "namespace Device", "namespace"]  # a file-scope region's


def refusal(lines, body=True, context=None, defined=(), harness=None):
    """The refusal of a block (its text), or None when it passes."""
    if isinstance(lines, str):
        lines = textwrap.dedent(lines).strip("\n").split("\n")
    ctx = (BODY if body else FILE) if context is None else context
    checker = cb.BlockChecker(body, ctx, defined, harness, cb.include_checker(ROOT))
    try:
        cb.check_lines(lines, checker)
    except cb.Refused as e:
        return f"{e.line + 1}: {e.what}"
    return None


def refused(lines, match, **kw):
    why = refusal(lines, **kw)
    assert why is not None, f"not refused: {lines!r}"
    assert match in why, why
    return why


# -- lexing: what the block ends inside ------------------------------------------------------------


def test_a_block_that_ends_inside_a_comment_is_refused():
    refused("int k = 0;  /* the harness's next lines are a comment now", "ends inside a /* comment")
    refused(["int k = 0;", "/* open", "still open"], "ends inside a /* comment")
    assert refusal(["int k = 0;  /* closed */", "// a line comment"]) is None


def test_a_block_that_ends_inside_a_raw_string_is_refused():
    refused(['const char* s = R"x(', ')";'], "ends inside a raw string literal")
    refused(['const char* s = R"(', "}", ""], "ends inside a raw string literal")
    refused(['const char* s = R"a b(x)a b";'], "delimiter is malformed")


@pytest.mark.parametrize(
    "last", ["int k = 0; \\", "int k = 0;  // note \\", "int k = 0; \\   ", "int k = 0; \\\t", "x; \\\r"]
)
def test_a_block_whose_last_line_continues_into_the_harness_is_refused(last):
    refused(["int j = 1;", last], "line continuation")


def test_line_splices_inside_the_block_are_fine_and_hide_nothing():
    assert refusal(["#define SUM(a, b) \\", "  ((a) + (b))", "int k = SUM(1, 2);"]) is None
    # a // comment continued by a splice swallows the next line, as the compiler's does
    assert refusal(["int k = 0;  // \\", "#undef CUDA_CHECK", "(void)k;"]) is None


def test_unbalanced_brackets_are_refused():
    refused("if (n > 0) {", "never closed")
    refused("int k = f(1;", "never closed")
    refused("int a[2) = 0;", "closes the `[`")
    refused(["int k = 0;", "}"], "closes the function")  # the body's function
    refused(["}  // the function ends here", "static int evil = 1;", "void again() {"], "closes the function")


def test_digraphs_are_lexed_as_their_brackets():
    refused("int k = 0; %>", "closes the function")
    refused("int k = 0; <%", "never closed")
    refused("%:undef CUDA_CHECK", "#undefs CUDA_CHECK")
    assert refusal(["int a<:2:> = <%1, 2%>;", "(void)a;"]) is None
    assert refusal("std::vector<::std::size_t> v;") is None  # <:: is < ::, not a digraph


def test_a_file_scope_block_may_not_close_a_namespace_it_does_not_reopen():
    refused(["}  // namespace", "int escaped = 0;"], "does not reopen", body=False)
    refused(["}", "}", "}", "static int x = 1;", "namespace StreamCompaction {", "namespace Device {"], "", body=False)
    refused(["}", "namespace Elsewhere {"], "never closed", body=False)
    # what a student does to include a library header at file scope: close, include, reopen the same
    ok = [
        "}  // namespace",
        "}",
        "}",
        "#include <cstdio>",
        "namespace StreamCompaction {",
        "namespace Device {",
        "namespace {",
    ]
    assert refusal(ok, body=False) is None


def test_brackets_must_balance_in_every_group_of_an_if():
    refused(["#ifdef NEVER", "{", "#else", "}", "#endif"], "unbalanced at this #else")
    refused(["#if 1", "}", "#endif", "{"], "closes the function")
    assert refusal(["#ifdef __CUDA_ARCH__", "int k = 1;", "#else", "int k = 2;", "#endif", "(void)k;"]) is None


def test_an_unbalanced_if_is_refused():
    refused(["#if 0", "int k;"], "#if without its #endif")
    refused(["int k;", "#endif"], "#endif without its #if")
    refused(["#else", "int k;"], "#else without its #if")
    refused(["#elif 1", "int k;"], "#elif without its #if")


def test_a_last_word_that_would_join_the_harness_is_refused():
    refused("static", "last word `static`", body=False)
    refused('extern "C"', 'last word `"C"`', body=False)
    refused("[[gnu::used]]", "last word `]`", body=False)
    refused("if (n > 0)", "last word `)`")
    refused(["for (int i = 0; i < 4; ++i) {}", "#pragma unroll"], "#pragma after its last statement")
    refused(["static", "#if 0", "int hidden;", "#endif"], "last word `static`", body=False)
    assert refusal(["int k = 0;", "#if 0", "int hidden", "#endif"]) is not None  # the #if 0 group's word counts too
    assert refusal(["int k = 0;", "#ifdef X", "(void)k;", "#endif"]) is None


# -- macros --------------------------------------------------------------------------------------


def test_undef_of_a_macro_the_block_did_not_define_is_refused():
    why = refused("#undef CUDA_CHECK", "the block #undefs CUDA_CHECK, which it did not define")
    assert why.startswith("1: ")
    assert refusal(["#define blockSize 128", "int k = blockSize;", "#undef blockSize"]) is None
    assert refusal("#undef blockSize", defined={"blockSize"}) is None  # an earlier block of the exercise's


@pytest.mark.parametrize("name", ["__CUDA_ARCH__", "_GNU_SOURCE", "NDEBUG", "__FILE__", "defined"])
def test_reserved_macro_names_are_refused(name):
    refused(f"#define {name} 1", "reserved name")


@pytest.mark.parametrize("define", ["#define CAT(a, b) a##b", "#define CAT(a, b) a %:%: b", "#define S(a) x ## a"])
def test_token_pasting_is_refused(define):
    refused(define, "token pasting")


@pytest.mark.parametrize("define", ["#define END }", "#define OPEN {", "#define CALL f(", "#define E ]"])
def test_a_macro_with_unbalanced_brackets_is_refused(define):
    refused(define, "opens or closes a bracket")


def test_a_macro_over_the_harness_is_scoped_not_refused():
    # the attack: #define over Host::reference_radix_sort, which follows the block
    lines = ["#define reference_radix_sort(n, out, in) std::copy(in, in + n, out)", "return 0;"]
    scope = cb.check_lines(lines, cb.BlockChecker(True, BODY))
    assert scope.names == ["reference_radix_sort"]
    out = cb.scope_lines(lines, 41, scope)
    assert out[0] == '#pragma push_macro("reference_radix_sort")'
    assert out[-3:-1] == ["#undef reference_radix_sort", '#pragma pop_macro("reference_radix_sort")']


# -- includes and directives ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, match",
    [
        ('#include "../src/v1_naive.cu"', "quoted #include"),
        ('#include "/work/main/stream_compaction/src/cpu.cpp"', "quoted #include"),
        ("#include </work/main/stream_compaction/src/cpu.cpp>", "not a plain header name"),
        ("#include <../../students/bob/stream_compaction/src/cpu.cpp>", "not a plain header name"),
        ("#include </dev/zero>", "not a plain header name"),
        ("#include <stream_compaction/host.hpp>", "a file of the course tree"),
        ("#include <common/cuda_check.hpp>", "a file of the course tree"),
        ("#include <cpu.cpp>", "a file of the course tree"),
        ("#include <no_such_header_anywhere.h>", "not a header of the system"),
        ("#include_next <cstdio>", "#include_next"),
        ("#import <cstdio>", "#import"),
        ('%:include "x.h"', "quoted #include"),
        ("#include <cstdio> junk", "tokens after"),
    ],
)
def test_includes_other_than_system_headers_are_refused(line, match):
    refused([line, "int k;"], match, body=False)


def test_a_computed_include_is_refused():
    refused(["#define H <cstdio>", "#include H"], "computed #include", body=False)
    refused(["#define H </dev/zero>", "#include H"], "computed #include", body=False)


def test_system_and_toolkit_headers_may_be_included():
    assert refusal(["#include <cstdio>", "#include <vector>", "int k;"], body=False) is None
    if any(os.path.exists(os.path.join(d, "cub", "block", "block_scan.cuh")) for d in cb.system_include_dirs()):
        assert refusal(["#include <cub/block/block_scan.cuh>", "int k;"], body=False) is None


@pytest.mark.parametrize(
    "line, match",
    [
        ('#line 1 "check.cpp"', "#line"),
        ('# 33 "/usr/include/stdio.h" 3', "line marker"),
        ('#ident "x"', "#ident"),
        ("#assert machine(x86)", "#assert"),
        ("#unassert machine", "#unassert"),
        ('#sccs "x"', "#sccs"),
    ],
)
def test_directives_that_reach_past_the_block_are_refused(line, match):
    refused([line, "int k;"], match, body=False)


@pytest.mark.parametrize(
    "line",
    [
        "#pragma GCC poison reference_radix_sort",
        '#pragma push_macro("CUDA_CHECK")',
        '#pragma pop_macro("CUDA_CHECK")',
        "#pragma GCC system_header",
        "#pragma GCC optimize(0)",
        "#pragma clang diagnostic ignored",
        "#pragma once",
        "#pragma pack(1)",
        "#pragma weak reference_radix_sort",
        "#pragma STDC FP_CONTRACT OFF",
        "#pragma omp declare target",
        "#pragma omp requires unified_shared_memory",
        "#pragma",
    ],
)
def test_pragmas_outside_the_allow_list_are_refused(line):
    refused([line, "int k;"], "#pragma", body=False)


@pytest.mark.parametrize(
    "code, match",
    [
        ('_Pragma("push_macro(\\"CUDA_CHECK\\")") int k;', "_Pragma"),
        ("__pragma(once) int k;", "__pragma"),
        ('#if __has_include("/etc/passwd")\n#endif\nint k;', "__has_include"),
        ("#if __has_include_next(<cstdio>)\n#endif\nint k;", "__has_include"),
    ],
)
def test_pragma_operators_and_has_include_are_refused(code, match):
    refused(code.split("\n"), match, body=False)


# -- asm, attributes, characters -----------------------------------------------------------------


@pytest.mark.parametrize(
    "code",
    [
        'asm("nop");',
        '__asm__ volatile("" ::: "memory");',
        '__asm ("nop");',
        '#define A asm("nop")\nint k;',
        'int k; \\u0061sm("nop");',
    ],
)
def test_asm_in_any_spelling_is_refused(code):
    why = refusal(code.split("\n"))
    assert why is not None and ("asm" in why or "backslash" in why), why


@pytest.mark.parametrize(
    "code",
    [
        "__attribute__((constructor)) static void f() {}",
        "__attribute__((__constructor__(101))) static void f() {}",
        "__attribute__((destructor)) static void f() {}",
        "[[gnu::constructor]] static void f() {}",
        "struct S { S() {} }; S s __attribute__((init_priority(101)));",
        'static void (*p)() __attribute__((used, section(".init_array"))) = nullptr;',
        'static const char* s = ".init_array";',
        "void f() __attribute__((weak));",
        'void g() __attribute__((alias("reference_radix_sort")));',
        "#define CTOR __attribute__((constructor))\nCTOR static void f() {}",
        "#define C constructor\n__attribute__((C)) static void f() {}",
        "#define ATTR(x) __attribute__((x))\nATTR(constructor) static void f() {}",
    ],
)
def test_static_constructors_sections_and_aliases_are_refused(code):
    why = refusal(code.split("\n"), body=False)
    assert why is not None and any(w in why for w in ("attribute", "section", "init_array")), why


def test_trigraphs_and_control_characters_are_refused():
    refused(["int k = 0; // ??/", "(void)k;"], "trigraph")
    refused(["??=define X 1", "int k;"], "trigraph")
    refused(["// a comment\r#undef CUDA_CHECK", "int k;"], "control character")
    refused(["int k = 0;\x00", "(void)k;"], "control character")
    assert refusal(["int k = 0;\r", "(void)k;\r"]) is None  # CRLF line ends are fine


def test_using_namespace_at_file_scope_is_refused_inside_a_function_fine():
    refused(["using namespace std;", "int k;"], "using namespace", body=False)
    assert refusal(["using namespace std;", "int k = 0;"]) is None  # a body: its function's scope
    assert (
        refusal(["namespace cg = cooperative_groups;", "__device__ void f() { using namespace std; }"], body=False)
        is None
    )


# -- harness macros a block could borrow ---------------------------------------------------------

HARNESS = """
#define __CONCAT(x,y) x ## y
#define CTOR_ATTR __attribute__((constructor))
#define __annotate__(a) __attribute__((a))
#define __location__(a) __annotate__(a)
#define __device__ __location__(device)
#define __launch_bounds__(...) __annotate__(launch_bounds(__VA_ARGS__))
#define BEGIN_NS namespace harness {
#define END_NS }
#define INT64_C(c) c ## L
#define INT64_MAX (INT64_C(9223372036854775807))
#define PRAGMA(x) _Pragma(#x)
#define REDIRECT(name, alias) name __asm__ (#alias)
#define CAT_AGAIN(a, b) __CONCAT(a, b)
"""


@pytest.fixture(scope="module")
def harness():
    return cb.MacroIndex.from_text(HARNESS)


@pytest.mark.parametrize(
    "code, match",
    [
        ('__CONCAT(as, m)("nop");', "pastes together asm"),
        ('__CONCAT(_Pra, gma)("push_macro(\\"X\\")") int k;', "pastes together _Pragma"),
        ("__CONCAT(__attri, bute__)((constructor)) void f() {}", "pastes together __attribute__"),
        ("CAT_AGAIN(as, m)", "CAT_AGAIN"),
        ("CTOR_ATTR void f() {}", "CTOR_ATTR"),
        ("__location__(constructor) void f() {}", "makes constructor an attribute"),
        ("END_NS static int x = 1; BEGIN_NS", "opens or closes a bracket"),
        ('PRAGMA(push_macro("X")) int k;', "PRAGMA"),
        ("void REDIRECT(f, reference_radix_sort)();", "REDIRECT"),
        ("#define P(a, b) __CONCAT(a, b)\nint k;", "passes its arguments to __CONCAT"),
        ("#define Q __CONCAT\nint k;", "without its arguments"),
        ("#define L(a) __location__(a)\nint k;", "passes its arguments to __location__"),
        ("#pragma omp parallel num_threads(__CONCAT(as, m))\nfor (;;) {}", "pastes together asm"),
    ],
)
def test_harness_macros_that_would_do_it_for_the_block_are_refused(harness, code, match):
    refused(code.split("\n"), match, body=False, harness=harness)


def test_harness_macros_used_plainly_pass(harness):
    ok = [
        "__device__ int twice(int x) { return 2 * x; }",
        "__launch_bounds__(256, 2) __global__ void k(long long* p) { *p = INT64_C(5) + INT64_MAX; }",
        "int ab = __CONCAT(a, b);",
    ]
    assert refusal(ok, body=False, harness=harness) is None


def test_the_real_toolkit_and_system_macros_are_judged(tmp_path):
    build = os.environ.get("COURSE_BUILD_DIR", os.path.join(ROOT, "build", "ci"))
    if not os.path.exists(os.path.join(build, "compile_commands.json")):
        pytest.skip(f"no instructor build in {build}")
    from judge import runner_build

    plan = runner_build.load_plan(ROOT, build, [])
    macros = cb.harness_macros(plan, ["stream_compaction/src/v1_naive.cu", "stream_compaction/src/cpu.cpp"])
    idx = macros.for_file("stream_compaction/src/v1_naive.cu")
    refused(['__CONCAT(as, m)("nop");'], "pastes together asm", harness=idx)
    refused(["__END_DECLS static int x = 1; __BEGIN_DECLS"], "bracket", body=False, harness=idx)
    ok = [
        "__device__ __forceinline__ int twice(int x) { return 2 * x; }",
        "__global__ void __launch_bounds__(256) k(long long* p) { *p = INT64_MAX + INT64_C(1) + UINT32_MAX; }",
        "__device__ int m() { return max(INT_MAX, 0); }",
    ]
    assert refusal(ok, body=False, harness=idx) is None


def test_the_macros_of_a_header_the_block_includes_are_judged_too(tmp_path):
    from types import SimpleNamespace

    class Headers(cb.HarnessMacros):  # the TU's macros: none; the header's: one that pastes
        def base(self):
            return cb.MacroIndex()

        def headers_index(self, path, headers):
            assert headers == ("cstdio",)
            return cb.MacroIndex.from_text("#define PASTE2(a, b) a ## b")

    g = cb.Guard(ROOT, Headers({"stream_compaction/src/cpu.cpp": (["g++"], str(tmp_path), "cpu.cpp")}))
    block = SimpleNamespace(first=10, lines=["#include <cstdio>", 'PASTE2(as, m)("nop");'])
    g.check("stream_compaction/src/cpu.cpp", "stream_compaction/v9_x", block, True, BODY)
    assert g.refused["stream_compaction/v9_x"].startswith("stream_compaction/src/cpu.cpp:13: it pastes together asm")


# -- what real students write --------------------------------------------------------------------

LEGIT_FILE_SCOPE = r"""
#include <cstdio>
#define blockSize 128
#define IDX(b, t) ((b) * blockSize + (t))
#define CHECKED(x) \
  do { \
    if (!(x)) printf("failed: %s\n", #x); \
  } while (0)

__device__ int twice(int x) { return 2 * x; }  // a helper }

template <int B>
__global__ void __launch_bounds__(256) scan_kernel(long n, int* __restrict__ out, const int* in) {
  extern __shared__ int s[];
  const long i = IDX(blockIdx.x, threadIdx.x);
#pragma unroll
  for (int d = 1; d < B; d <<= 1) {
    s[threadIdx.x] = i < n ? in[i] : 0;
  }
  auto add = [&](int a, int b) { return a + b; };
  const char* raw = R"(} { ) ]")";
  const char* tricky = R"delim(a )" b)delim";
  const char brace = '}', open = '{';
  const char* str = "}{";
  long big = 1'000'000;
  if (i < n) out[i] = add(twice(s[threadIdx.x]), brace + open + raw[0] + tricky[0] + str[0]) + int(big);
}

#if 0
this isn't compiled: it's a note with an apostrophe and a { brace }
#endif
#ifdef __CUDA_ARCH__
__device__ int arch() { return __CUDA_ARCH__; }
#else
inline int arch() { return 0; }
#endif
[[maybe_unused]] static int unused_helper() { return 0; }
struct Pair {
  int a, b;
};
#undef IDX
"""

LEGIT_BODY = r"""
if (n == 0) return;
std::vector<int> flags(n), index(n);
for (std::int64_t i = 0; i < n; ++i) flags[i] = in[i] != 0;  // { in a comment
auto keep = [&](std::int64_t i) -> bool { return flags[i] != 0; };
/* a block comment
   over lines } */
#pragma omp parallel for
for (std::int64_t i = 0; i < n; ++i) {
  if (keep(i)) out[index[i]] = in[i];
}
return static_cast<std::int64_t>(index[n - 1]) + flags[n - 1];
"""


def test_blocks_real_students_write_pass():
    assert refusal(LEGIT_FILE_SCOPE, body=False) is None
    assert refusal(LEGIT_BODY) is None


def test_every_solution_region_and_starter_body_passes():
    import subprocess as sp

    files = sp.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True).stdout.split()
    if not files:
        pytest.skip("not a git checkout")
    n = 0
    for f in files:
        if not f.endswith(em.SOURCE_EXT) or f.startswith("tests/"):
            continue
        text = Path(ROOT, f).read_text(encoding="utf-8")
        if "// EXERCISE BEGIN" not in text:
            continue
        lines = text.split("\n")
        for r in em.parse(f, text):
            ctx = cb.harness_context(lines[: r.first])
            for block in (r.lines, em.starter_body(r)):
                checker = cb.BlockChecker(r.body, ctx, include_check=cb.include_checker(ROOT))
                try:
                    cb.check_lines(block, checker)
                except cb.Refused as e:
                    pytest.fail(f"{f}:{r.first + 2 + e.line}: {e.what}")
                n += 1
    assert n > 20


# -- scoping, compiled ---------------------------------------------------------------------------

HARNESS_BEFORE = ["#include <cstdio>", "#define HARNESS_LIMIT 7", "namespace h {", "int body(int n) {"]
HARNESS_AFTER = [
    "}",
    "int after() { return HARNESS_LIMIT; }",
    "}  // namespace h",
    'static_assert(HARNESS_LIMIT == 7, "the harness\'s macro is back");',
    "#ifdef blockSize",
    '#error "the block\'s macro survived it"',
    "#endif",
    "#ifdef HALF",
    '#error "the block\'s function-like macro survived it"',
    "#endif",
    "int main() { return h::body(3) + h::after(); }",
]
BLOCK = [
    "#undef HARNESS_LIMIT",  # refused in a real block (not defined in it); the scoping must still restore it
    "#define HARNESS_LIMIT 1",
    "#define blockSize 128",
    "#define HALF(x) ((x) / 2)",
    "int k = HALF(blockSize) + HARNESS_LIMIT;",
    "return n + k;",
]


def spliced_program(block=BLOCK, student_line=41):
    scope = cb.check_lines(block[1:], cb.BlockChecker(True, ["namespace h", "{"]))
    scope.names.insert(0, "HARNESS_LIMIT")  # what the first line's #undef adds to the scope
    text = "\n".join(HARNESS_BEFORE + cb.scope_lines(block, student_line, scope) + HARNESS_AFTER)
    return cb.fix_lines(text)


def compile_with(cmd, text, tmp_path, name):
    src = tmp_path / name
    src.write_text(text)
    return subprocess.run(cmd + [str(src)], capture_output=True, text=True, cwd=tmp_path)


def test_a_blocks_macros_end_with_it_gpp(tmp_path):
    gpp = shutil.which("g++") or pytest.skip("no g++")
    p = compile_with([gpp, "-std=c++17", "-Wall", "-fsyntax-only"], spliced_program(), tmp_path, "prog.cpp")
    assert p.returncode == 0, p.stderr
    # without the scoping, the macros leak into the harness: the same program fails
    leaked = "\n".join(HARNESS_BEFORE + BLOCK + HARNESS_AFTER)
    assert compile_with([gpp, "-std=c++17", "-fsyntax-only"], leaked, tmp_path, "leak.cpp").returncode != 0


def test_a_blocks_macros_end_with_it_nvcc(tmp_path):
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
    if not nvcc:
        pytest.skip("no nvcc")
    text = spliced_program().replace("int after()", "__global__ void k(int* p) { *p = blockDim.x; }\nint after()")
    p = compile_with([nvcc, "-std=c++17", "-c", "-o", str(tmp_path / "prog.o")], text, tmp_path, "prog.cu")
    assert p.returncode == 0, p.stderr


def test_compiler_errors_name_the_students_own_line(tmp_path):
    gpp = shutil.which("g++") or pytest.skip("no g++")
    block = ["#define blockSize 128", "int k = blockSize;", "this is not C++;", "return k;"]
    scope = cb.check_lines(block, cb.BlockChecker(True, ["namespace h", "{"]))
    text = cb.fix_lines(
        "\n".join(HARNESS_BEFORE + cb.scope_lines(block, 41, scope) + ["}", "}", "int after = undefined_name;"])
    )
    p = compile_with([gpp, "-std=c++17", "-fsyntax-only"], text, tmp_path, "err.cpp")
    assert "err.cpp:43:" in p.stderr  # the block's third line is the student's line 43
    spliced_line = text.split("\n").index("int after = undefined_name;") + 1
    assert f"err.cpp:{spliced_line}:" in p.stderr  # the harness after it keeps its own numbering


# -- the splice and the grade --------------------------------------------------------------------

SOLUTION = textwrap.dedent("""\
    #include "x.hpp"
    #define CUDA_CHECK(x) (x)
    namespace StreamCompaction {
    namespace Host {
    namespace {
    // EXERCISE BEGIN exercise=v9_x
    int helper(int a) { return a; }
    // EXERCISE END
    }  // namespace

    int compact(int n) {
      // EXERCISE BEGIN body unused(n) exercise=v9_x
      return helper(n);
      // EXERCISE END
    }

    int reference_radix_sort(int n) { return CUDA_CHECK(n); }

    int other(int n) {
      // EXERCISE BEGIN body unused(n) exercise=v9_y
      return n;
      // EXERCISE END
    }
    }  // namespace Host
    }  // namespace StreamCompaction
    """)


def make_assignment(tmp_path):
    inst = tmp_path / "inst"
    (inst / "stream_compaction" / "src").mkdir(parents=True)
    (inst / "stream_compaction" / "src" / "cpu.cpp").write_text(SOLUTION)
    a = assemble.load_assignment(str(inst), ["stream_compaction"])
    handout = a.handout_text("stream_compaction/src/cpu.cpp")
    return a, handout


def submit(tmp_path, handout, first_body=None, file_scope=None, other=None):
    sub = tmp_path / "student"
    (sub / "stream_compaction" / "src").mkdir(parents=True, exist_ok=True)
    lines, out, seen = handout.split("\n"), [], 0
    skip = False
    for line in lines:
        if em.STUDENT_BEGIN in line:
            out.append(line)
            fill = [file_scope, first_body, other][seen]
            seen += 1
            if fill is not None:
                out += fill
                skip = True
            continue
        if em.STUDENT_END in line:
            skip = False
        if not skip:
            out.append(line)
    (sub / "stream_compaction" / "src" / "cpu.cpp").write_text("\n".join(out))
    return str(sub)


def test_a_refusal_names_the_file_and_the_students_line_and_stubs_the_exercise(tmp_path):
    a, handout = make_assignment(tmp_path)
    sub = submit(
        tmp_path,
        handout,
        file_scope=["int mine(int a) { return a; }"],
        first_body=["#undef CUDA_CHECK", "return 0;"],
        other=["return 2 * n;"],
    )
    text = Path(sub, "stream_compaction/src/cpu.cpp").read_text().split("\n")
    line = text.index("#undef CUDA_CHECK") + 1
    sp = assemble.splice(a, sub)
    assert sp.refused == {
        "stream_compaction/v9_x": f"stream_compaction/src/cpu.cpp:{line}: the block #undefs CUDA_CHECK, which it "
        "did not define (a block may not change what follows it)"
    }
    spliced = sp.files["stream_compaction/src/cpu.cpp"]
    assert "int mine(" not in spliced and "#undef CUDA_CHECK" not in spliced  # every block of v9_x: the starter
    assert "COURSE_NOT_IMPLEMENTED();" in spliced and "return 2 * n;" in spliced  # v9_y is the student's


def test_a_macro_of_the_kernels_block_reaches_the_launchers_block_not_the_harness(tmp_path):
    a, handout = make_assignment(tmp_path)
    sub = submit(
        tmp_path,
        handout,
        file_scope=["#define blockSize 128", "int helper2(int a) { return a + blockSize; }"],
        first_body=["return helper2(n) + blockSize;"],
        other=["return n;"],
    )
    sp = assemble.splice(a, sub)
    assert not sp.refused
    text = sp.files["stream_compaction/src/cpu.cpp"].replace('#include "x.hpp"', "")
    p = subprocess.run(
        [shutil.which("g++") or "g++", "-std=c++17", "-fsyntax-only", "-x", "c++", "-"],
        input=text + "\n#ifdef blockSize\n#error leaked\n#endif\n",
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr + text


def test_a_refused_version_earns_nothing_and_says_why():
    from types import SimpleNamespace

    rule = SimpleNamespace(subproject="stream_compaction", version="compact_cpu_scan", correct=3, speed=1)
    why = (
        "stream_compaction/src/cpu.cpp:41: the block #undefs CUDA_CHECK, which it did not define "
        "(a block may not change what follows it)"
    )
    g = score.grade_version(rule, [], SimpleNamespace(), None, refused=why)
    assert g.status is Status.REFUSED and g.detail == why and g.points == 0
    assert not Status.REFUSED.earns_points and Status("refused") is Status.REFUSED


def test_the_attack_students_of_classgen_are_refused_or_scoped_at_the_splice(tmp_path):
    """The class generator's block attacks against the real handout (test_class grades them)."""
    if not os.path.exists(os.path.join(ROOT, "scripts", "make_handout.py")):
        pytest.skip("a handout: no make_handout.py")
    from judge import classgen

    handout = tmp_path / "handout"
    subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "scripts", "make_handout.py"),
            str(handout),
            "--subproject",
            "stream_compaction",
        ],
        check=True,
        capture_output=True,
    )
    a = assemble.load_assignment(ROOT, ["stream_compaction"], handout_manifest=str(handout / "HANDOUT.json"))
    expect = {
        "solution": {},
        "line_continuation": {"stream_compaction/cpu_compact_with_scan": "line continuation"},
        "closes_function": {"stream_compaction/cpu_compact_with_scan": "closes the function"},
        "include_solution": {"stream_compaction/v1_naive": "a quoted #include"},
        "macro_over_harness": {},
        "cub_call": {},  # closes the namespaces around its block, includes CUB, reopens them: allowed
        "nvtx_hide": {},  # the same, with NVTX's header: its ranges are the grouped runs' business
        "record_rewrite": {},  # the same, with a static object at file scope
    }
    for kind, refusals in expect.items():
        sub = classgen.make_student(str(handout), ROOT, str(tmp_path / kind), kind)
        sp = assemble.splice(a, sub)
        assert set(sp.refused) == set(refusals), (kind, sp.refused)
        for ex, what in refusals.items():
            assert what in sp.refused[ex] and sp.refused[ex].endswith("(a block may not change what follows it)")
    text = assemble.splice(a, str(tmp_path / "macro_over_harness")).files["stream_compaction/src/v1_naive.cu"]
    after = text[text.index("#define check_n") :]
    pop = after.index('#pragma pop_macro("check_n")')
    assert after.index("#undef check_n") < pop < after.index('check_n(n, "scan_naive");')


def test_a_refused_version_in_every_report_format(tmp_path):
    import dataclasses
    import json
    import xml.etree.ElementTree as ET
    from types import SimpleNamespace

    from judge import formats
    from judge.model import Provenance, StudentReport, report_from_json

    why = "stream_compaction/src/cpu.cpp:41: the block #undefs CUDA_CHECK, which it did not define (...)"
    rule = SimpleNamespace(subproject="stream_compaction", version="compact_cpu_scan", correct=3, speed=1)
    g = score.grade_version(rule, [], SimpleNamespace(), None, refused=why)
    rep = StudentReport("alice", Provenance(**{f.name: "x" for f in dataclasses.fields(Provenance)}), [g])
    formats.write_all(rep, str(tmp_path / "alice"))
    assert ET.parse(tmp_path / "alice" / "junit.xml").getroot().get("failures") == "1"
    md = (tmp_path / "alice" / "report.md").read_text()
    assert "| refused |" in md and "undefs" in md
    gs = json.loads((tmp_path / "alice" / "results.json").read_text())
    assert gs["score"] == 0 and gs["tests"][0]["status"] == "failed" and "refused" in gs["tests"][0]["output"]
    back = report_from_json(json.loads((tmp_path / "alice" / "report.json").read_text()))
    assert back.grades[0].status is Status.REFUSED and back.points == 0
