"""The grader's modules one by one, without a build: the rubric, the markers and the splice, the
kernel attribution, the scoring, the process limits and the output formats."""

import json
import os
import subprocess
import textwrap
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import exercise_markers as em
from conftest import ROOT
from judge import checker_kernels as kernels
from judge import checker_score as score
from judge import checker_splice as assemble
from judge import formats, rubric, schedule
from judge import runner_run as run
from judge.model import CaseResult, KernelUse, Provenance, Status, StudentReport, report_from_json, to_json

RUBRIC = textwrap.dedent("""
    [grading]
    timeout_min_s = 2
    timeout_factor = 5
    speed_full = 0.8
    speed_zero = 0.25

    [stream_compaction]
    driver = "stream_compaction/stream_compaction"
    args = ["--n", "1,2^20"]

    [[stream_compaction.hidden]]
    name = "secret"
    args = ["--n", "7"]
    seed = 3
    visibility = "hidden"

    [stream_compaction.scan_naive]
    correct = 4
    speed = 2
    requires = ["v1_naive"]
    [stream_compaction.scan_batch]
    correct = 1
    args = ["--mode", "batch"]
    """)


@pytest.fixture
def rubric_file(tmp_path):
    p = tmp_path / "rubric.toml"
    p.write_text(RUBRIC)
    return str(p)


def test_rubric_hidden_cases_take_a_secret_seed_and_skip_versions_with_their_own_args(rubric_file):
    r1 = rubric.load(rubric_file, secret="one")
    r2 = rubric.load(rubric_file, secret="two")
    naive = r1.rule("stream_compaction/scan_naive")
    assert [c.name for c in naive.cases] == ["visible", "secret"]
    assert naive.cases[0].timed and naive.cases[1].hidden and naive.cases[1].visibility == "hidden"
    seed1 = naive.cases[1].args[naive.cases[1].args.index("--seed") + 1]
    seed2 = r2.rule("stream_compaction/scan_naive").cases[1].args[-1]
    assert seed1 != seed2 and "3" not in (seed1, seed2)
    assert [c.name for c in r1.rule("stream_compaction/scan_batch").cases] == ["visible"]
    assert r1.limits.time_limit(None) == 300 and r1.limits.time_limit(0.1) == 2 and r1.limits.time_limit(10) == 50


def test_only_a_speed_versions_timed_case_keeps_its_reps(tmp_path, rubric_file):
    text = Path(rubric_file).read_text().replace("[grading]", "[grading]\nuntimed_reps = 1\nuntimed_parallel = 3", 1)
    text = text.replace('args = ["--n", "7"]', 'args = ["--n", "7", "--reps", "3"]')
    p = tmp_path / "fast.toml"
    p.write_text(text)
    r = rubric.load(str(p), secret="s")
    naive, batch = r.rule("stream_compaction/scan_naive"), r.rule("stream_compaction/scan_batch")
    assert r.untimed_parallel == 3 and r.untimed_reps == 1
    plain = rubric.load(rubric_file, secret="s").rule("stream_compaction/scan_naive")
    assert naive.cases[0].args == plain.cases[0].args  # the timed case of a version with speed points
    hidden = naive.cases[1].args
    assert hidden[hidden.index("--reps") + 1] == "1" and hidden.count("--reps") == 1 and "--seed" in hidden
    assert batch.speed == 0 and batch.cases[0].args == ["--mode", "batch"]  # no --reps: its mode may read none
    assert rubric.with_reps(["--n", "5", "--reps=7", "--x"], 2) == ["--n", "5", "--reps=2", "--x"]
    assert rubric.with_reps(["--reps", "10", "--n", "5"], 1) == ["--reps", "1", "--n", "5"]
    assert rubric.with_reps(["--reps", "10", "--warmup", "3"], 1, warmup=0) == ["--reps", "1", "--warmup", "0"]
    assert rubric.with_reps(["--mode", "scaling"], 1, warmup=0) == ["--mode", "scaling"]
    assert hidden[-2:] == ["--warmup", "0"]  # a check's warm-up runs check nothing more
    for bad in ("0", "true", "1.5", "100"):
        p.write_text("[grading]\nuntimed_reps = " + bad + "\n")
        with pytest.raises(rubric.RubricError, match="untimed_reps"):
            rubric.load(str(p))


def test_timed_cases_run_alone_first_and_the_checks_beside_each_other(tmp_path):
    """run_all_versions: each speed version's timed case alone, one after another; then the other
    cases of every version at once (up to the width), each version's in its own order, a hidden case
    only once a visible test passed (also one from the timed stage); a check that failed beside
    others runs again alone and that run stands."""
    import threading
    import time as _time

    from judge import student

    def rule(name, speed, cases):
        return rubric.VersionRule("stream_compaction", name, "d", 1, speed, [], [], cases)

    def case(name, timed=False, hidden=False):
        return rubric.Case(name, [], hidden=hidden, timed=timed)

    fast = rule("a", 1, [case("visible", timed=True), case("edge"), case("secret", hidden=True)])
    slow = rule("b", 0, [case("visible", timed=True), case("secret", hidden=True)])
    failing = rule("c", 2, [case("visible", timed=True), case("secret", hidden=True)])
    crowded = rule("d", 0, [case("visible", timed=True)])  # fails only beside others (a sibling's memory)
    log, lock, running, most = [], threading.Lock(), [0], [0]

    def one(r, only, prior, sharing):
        out = []
        for i in only:
            c = r.cases[i]
            seen = prior + out
            if c.hidden and not any(t.status is Status.CORRECT for x in seen for t in x.tests):
                break
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
                log.append((r.version, c.name, sharing))
            _time.sleep(0.05)
            with lock:
                running[0] -= 1
            ok = r.version != "c" and not (r.version == "d" and sharing > 1)
            res = CaseResult(name=c.name, hidden=c.hidden, status=Status.CORRECT if ok else Status.INCORRECT)
            res.tests = [types.SimpleNamespace(status=res.status)]
            res.detail = f"sharing {sharing}"
            out.append(res)
        return out

    job = types.SimpleNamespace(rubric=types.SimpleNamespace(untimed_parallel=4), runs_per_gpu=1)
    rules = [fast, slow, failing, crowded]
    got = student.run_all_versions(job, rules, {"COURSE_GRADER_CPUS": "0,1,2,3,4,5,6,7"}, one)
    assert log[:2] == [("a", "visible", 1), ("c", "visible", 1)]  # alone, in the rubric's order
    assert most[0] >= 2  # the checks beside each other
    assert [c.name for c in got["stream_compaction/a"]] == ["visible", "edge", "secret"]
    assert [c.name for c in got["stream_compaction/b"]] == ["visible", "secret"]
    assert [c.name for c in got["stream_compaction/c"]] == ["visible"]  # its visible case failed: no hidden
    assert log[-1] == ("d", "visible", 1)  # failed beside others, so run again alone
    assert (
        got["stream_compaction/d"][0].status is Status.CORRECT and got["stream_compaction/d"][0].detail == "sharing 1"
    )
    job.rubric.untimed_parallel = 1
    log.clear()
    running[0] = most[0] = 0
    student.run_all_versions(job, [fast, slow], {}, one)
    assert most[0] == 1 and len(log) == 5 and all(s == 1 for _, _, s in log)
    assert (
        student.parallel_runs(types.SimpleNamespace(rubric=job.rubric, runs_per_gpu=1), {"COURSE_GRADER_CPUS": "0"})
        == 1
    )
    wide = types.SimpleNamespace(rubric=types.SimpleNamespace(untimed_parallel=4), runs_per_gpu=2)
    assert student.parallel_runs(wide, {"COURSE_GRADER_CPUS": ",".join(map(str, range(16)))}) == 2


def test_a_rubric_with_two_cases_of_one_name_is_refused(tmp_path, rubric_file):
    text = Path(rubric_file).read_text()
    p = tmp_path / "dup.toml"
    p.write_text(text.replace('name = "secret"', 'name = "visible"', 1))
    with pytest.raises(rubric.RubricError, match="two cases named 'visible'"):
        rubric.load(str(p), secret="s")


def test_the_handouts_rubric_has_no_hidden_case(rubric_file):
    public = rubric.public_text(Path(rubric_file).read_text())
    assert "hidden" not in public and "secret" not in public
    assert "[stream_compaction.scan_naive]" in public and "correct = 4" in public
    real = Path(os.path.join(ROOT, "grading", "rubric.toml")).read_text()
    assert ".hidden]]" not in rubric.public_text(real)
    if os.path.exists(os.path.join(ROOT, "scripts", "make_handout.py")):  # the instructor's tree has hidden cases
        assert ".hidden]]" in real


def test_named_visible_cases_run_for_the_versions_they_name(tmp_path):
    """[[sub.cases]]: a visible case of its own (an edge input), after the visible case, for the
    versions it names; a name that is no version of the sub-project is the rubric's error."""
    body = (
        '[stream_compaction]\ndriver = "d"\nargs = ["--n", "5"]\n'
        "[stream_compaction.compact_x]\ncorrect = 1\n[stream_compaction.scan_x]\ncorrect = 1\n"
        '[[stream_compaction.cases]]\nname = "edges"\nargs = ["--n", "9", "--fill", "zeros"]\n'
        'versions = ["compact_x"]\n'
    )
    p = tmp_path / "r.toml"
    p.write_text(body)
    r = rubric.load(str(p), secret="s")
    edges = r.rule("stream_compaction/compact_x").cases[1]
    assert (edges.name, edges.hidden, edges.timed) == ("edges", False, False)
    assert edges.args == ["--n", "9", "--fill", "zeros"]
    assert [c.name for c in r.rule("stream_compaction/scan_x").cases] == ["visible"]
    p.write_text(body.replace('versions = ["compact_x"]', 'versions = ["compact_y"]'))
    with pytest.raises(rubric.RubricError, match="r.toml.*'edges': no version compact_y"):
        rubric.load(str(p))
    p.write_text(body.replace('name = "edges"\n', ""))
    with pytest.raises(rubric.RubricError, match="no name"):
        rubric.load(str(p))
    # the course's rubric: the edge inputs for the compactions and sorts, not the scans
    real = rubric.load(os.path.join(ROOT, "grading", "rubric.toml"), secret="s")
    assert any("--fill" in c.args for c in real.rule("stream_compaction/compact_fused").cases)
    assert not any("--fill" in c.args for c in real.rule("stream_compaction/scan_naive").cases)


def test_slots_that_share_a_gpu_share_its_reference_record(monkeypatch):
    """--runs-per-gpu K: K slots on each GPU; the reference record is made once per GPU."""
    from judge import schedule

    calls = []
    monkeypatch.setattr(
        schedule.student, "device_identity", lambda e: ("GPU", "uuid-" + e["CUDA_VISIBLE_DEVICES"], "1")
    )
    monkeypatch.setattr(
        schedule.student, "reference_record", lambda job, env, key, progress: calls.append(key) or {"key": key}
    )
    envs = [{"CUDA_VISIBLE_DEVICES": g} for g in ("0", "1", "0", "1")]
    recs, ids = schedule.references(None, envs)
    assert sorted(calls) == ["uuid-0", "uuid-1"]
    assert [r["key"] for r in recs] == ["uuid-0", "uuid-1", "uuid-0", "uuid-1"]


def test_rubric_errors_name_the_file(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[nosuch]\ndriver='x'\n")
    with pytest.raises(rubric.RubricError, match="bad.toml.*not a sub-project"):
        rubric.load(str(p))
    p.write_text("[grading\n")
    with pytest.raises(rubric.RubricError, match="bad.toml"):
        rubric.load(str(p))


SOLUTION = textwrap.dedent("""\
    #include "x.hpp"
    namespace {
    // EXERCISE BEGIN
    __global__ void k(int* a) { a[0] = 1; }
    // EXERCISE END
    }  // namespace
    void f(int* a) {
      // EXERCISE BEGIN body unused(a)
      k<<<1, 1>>>(a);
      // EXERCISE END
    }
    """)


def test_handout_blocks_round_trip_and_the_splice_takes_only_the_blocks():
    path = "stream_compaction/src/v9_x.cu"
    handout, replaced = em.stub_text(path, SOLUTION)
    assert len(replaced) == 2 and "COURSE_NOT_IMPLEMENTED" in handout and '#include "common/exercise.hpp"' in handout
    blocks = em.parse_student(path, handout)
    assert [b.exercise for b in blocks] == ["v9_x", "v9_x"]
    student = handout.replace("  (void)a; COURSE_NOT_IMPLEMENTED();", "  mine(a);")
    new, _ = em.rewrite(path, SOLUTION, lambda r: em.parse_student(path, student)[1].lines if r.body else None)
    assert "mine(a);" in new and "k<<<1, 1>>>" not in new and "__global__ void k" in new


@pytest.mark.parametrize(
    "bad, msg",
    [
        ("// STUDENT BEGIN a\n// STUDENT BEGIN a\n", "inside"),
        ("// STUDENT END a\n", "without a BEGIN"),
        ("// STUDENT BEGIN a\n", "never closed"),
        ("// STUDENT BEGIN a\n// STUDENT END b\n", "closes"),
        ("x; // STUDENT BEGIN a\n", "line of its own"),
    ],
)
def test_broken_student_markers_are_named(bad, msg):
    with pytest.raises(em.MarkerError, match=msg):
        em.parse_student("f.cu", bad)


def make_tree(tmp_path):
    """A tiny instructor tree (git-less) with one exercise file and a harness file, and its handout."""
    inst = tmp_path / "inst"
    (inst / "stream_compaction" / "src").mkdir(parents=True)
    (inst / "stream_compaction" / "src" / "v9_x.cu").write_text(SOLUTION)
    (inst / "stream_compaction" / "src" / "check.cpp").write_text("int check() { return 1; }\n")
    (inst / "CMakeLists.txt").write_text("project(x)\n")
    a = assemble.load_assignment(str(inst), ["stream_compaction"])
    hand = tmp_path / "handout"
    (hand / "stream_compaction" / "src").mkdir(parents=True)
    (hand / "stream_compaction" / "src" / "v9_x.cu").write_text(a.handout_text("stream_compaction/src/v9_x.cu"))
    (hand / "stream_compaction" / "src" / "check.cpp").write_text("int check() { return 1; }\n")
    (hand / "CMakeLists.txt").write_text("project(x)\n")
    files = ["CMakeLists.txt", "stream_compaction/src/check.cpp", "stream_compaction/src/v9_x.cu"]
    return a, str(hand), files


def test_edits_outside_the_blocks_are_listed_and_ignored(tmp_path):
    a, hand, files = make_tree(tmp_path)
    sub = tmp_path / "student"
    import shutil

    shutil.copytree(hand, sub)
    f = sub / "stream_compaction" / "src" / "v9_x.cu"
    f.write_text(
        f.read_text()
        .replace("COURSE_NOT_IMPLEMENTED();", "mine(a);")
        .replace('#include "x.hpp"', '#include "evil.hpp"')
    )
    (sub / "stream_compaction" / "src" / "check.cpp").write_text("int check() { return 0; }\n")
    (sub / "CMakeLists.txt").write_text("project(evil)\n")
    (sub / "extra.cpp").write_text("int x;\n")
    sp = assemble.splice(a, str(sub), (hand, files))
    assert sp.edited_outside == ["CMakeLists.txt", "stream_compaction/src/check.cpp", "stream_compaction/src/v9_x.cu"]
    assert sp.added == ["extra.cpp"] and not sp.problems
    text = sp.files["stream_compaction/src/v9_x.cu"]
    assert '#include "x.hpp"' in text and "evil" not in text and "mine(a);" in text
    tree = tmp_path / "clean"
    assemble.clean_tree(a, sp.files, str(tree))
    assert (tree / "stream_compaction" / "src" / "check.cpp").read_text() == "int check() { return 1; }\n"
    assert (
        tmp_path / "inst" / "stream_compaction" / "src" / "v9_x.cu"
    ).read_text() == SOLUTION  # never written through


def test_a_file_whose_markers_were_changed_is_graded_as_not_written(tmp_path):
    a, hand, files = make_tree(tmp_path)
    sub = tmp_path / "student"
    import shutil

    shutil.copytree(hand, sub)
    f = sub / "stream_compaction" / "src" / "v9_x.cu"
    f.write_text("\n".join(line for line in f.read_text().split("\n") if "STUDENT END" not in line or "k" in line[:0]))
    sp = assemble.splice(a, str(sub), (hand, files))
    assert sp.problems and "graded as not written" in sp.problems[0]
    assert "COURSE_NOT_IMPLEMENTED" in sp.files["stream_compaction/src/v9_x.cu"]


DEM = {
    "own": "void StreamCompaction::Device::(anonymous namespace)::step_kernel<int>(long, int*)",
    "cub": "void cub::CUB_300001_SM_900::detail::scan::DeviceScanKernel<cub::P<(int)4>, int const*>(int const*, int*)",
    "thrust": "void thrust::THRUST_300001_SM_900_NS::cuda_cub::core::_kernel_agent<X>(int)",
    "other": "StreamCompaction::Device::(anonymous namespace)::lookback_kernel(long, int*)",
    "harness": "common::(anonymous namespace)::fma_peak_kernel(float*, int)",
    "common": "void common::onesweep::pass_kernel<4>(unsigned*, int)",
}


def test_kernel_names_parse_to_namespace_and_base():
    assert kernels.qualified_name(DEM["own"]) == ("StreamCompaction::Device::(anonymous namespace)", "step_kernel")
    assert kernels.qualified_name(DEM["cub"])[1] == "DeviceScanKernel"
    assert kernels.qualified_name("k(int (*)[4])") == ("", "k")
    assert kernels.library_of(DEM["thrust"], rubric.DEFAULT_LIBRARIES) == "thrust"
    assert kernels.library_of(DEM["own"], rubric.DEFAULT_LIBRARIES) == ""


def test_every_launched_kernel_is_attributed_and_only_own_allowed_or_harness_pass(monkeypatch):
    monkeypatch.setattr(kernels, "demangle", lambda names: [DEM[n] for n in names])
    index = {
        "step_kernel": {"stream_compaction/src/v1.cu"},
        "lookback_kernel": {"stream_compaction/src/v5.cu"},
        "fma_peak_kernel": {"common/src/ceilings.cu"},
        "pass_kernel": {"common/include/common/onesweep_sort.cuh"},
    }
    rule = rubric.VersionRule("stream_compaction", "scan_naive", "d", 1, 1, ["v1"], [], [])
    ex = {"stream_compaction/src/v1.cu": "stream_compaction/v1", "stream_compaction/src/v5.cu": "stream_compaction/v5"}
    uses = {
        k: u
        for k, u in zip(
            DEM,
            kernels.classify(
                [(k, 3) for k in DEM],
                rule,
                {"stream_compaction/src/v1.cu"},
                ex,
                index,
                rubric.DEFAULT_LIBRARIES,
                harness={"harness"},
            ),
        )
    }
    assert uses["own"].allowed and uses["own"].owner == "own"
    assert uses["harness"].allowed and uses["harness"].owner == "harness"
    for k, why in (
        ("cub", "library call (cub)"),
        ("thrust", "library call (thrust)"),
        ("other", "another exercise's kernel (stream_compaction/v5)"),
        ("common", "not the version's own kernel"),
    ):
        assert not uses[k].allowed and uses[k].owner == why, k
    rule.allow.append("DeviceScanKernel")
    use = kernels.classify([("cub", 1)], rule, set(), ex, index, rubric.DEFAULT_LIBRARIES)[0]
    assert use.allowed and "allowed by the rubric" in use.owner


def test_anonymous_namespace_names_are_compared_without_their_build_hashes():
    a = "_ZN16StreamCompaction6Device44_GLOBAL__N__9bddf3c3_11_v1_naive_cu_5bea52fe18shift_right_kernelElPiPKi"
    b = "_ZN16StreamCompaction6Device44_GLOBAL__N__01234567_11_v1_naive_cu_89abcdef18shift_right_kernelElPiPKi"
    assert a != b and kernels.stable_name(a) == kernels.stable_name(b)
    assert kernels.stub_kernels({"_Z20__device_stub__Z1kPi": "T", "_ZGVZL20__device_stub__Z1kPiE5__tmp": "b"}) == {
        "_Z1kPi"
    }


def test_kernel_definitions_are_found_in_source(tmp_path):
    (tmp_path / "a.cu").write_text(
        "template <int B>\n__global__ void __launch_bounds__((B + 1) * 32) tile_k(int* p) {}\n"
        "// __global__ void commented_k(int*)\n__global__ static void plain_k() {}\n"
    )
    assert kernels.kernel_definitions(str(tmp_path), ["a.cu"]) == {"tile_k": {"a.cu"}, "plain_k": {"a.cu"}}


def rule_for(correct=4, speed=2):
    return rubric.VersionRule(
        "stream_compaction",
        "scan_naive",
        "d",
        correct,
        speed,
        ["v1"],
        [],
        [rubric.Case("visible", [], timed=True), rubric.Case("secret", [], hidden=True, visibility="hidden")],
    )


def case(status, hidden=False, ms=None, kernels_=(), name=None):
    return CaseResult(
        name=name or ("secret" if hidden else "visible"),
        hidden=hidden,
        status=status,
        detail="why",
        visibility="hidden" if hidden else "visible",
        timed_ms=ms,
        timed_case="n=1048576" if ms else "",
        kernels=list(kernels_),
    )


RUB = rubric.Rubric("r", "0" * 64, rubric.Limits(), 0.8, 0.25, rubric.DEFAULT_LIBRARIES)
REF = {"status": "correct", "cases": {"visible": {"ms": 1.0, "timed_case": "n=1048576", "seconds": 1.0}}}


def test_speed_points_follow_the_ratio_to_the_reference_and_the_maximum_never_moves():
    assert score.speed_points(2, 1.0, 0.8, 0.25) == 2 and score.speed_points(2, 0.2, 0.8, 0.25) == 0
    assert score.speed_points(2, 0.525, 0.8, 0.25) == 1.0
    g = score.grade_version(rule_for(), [case(Status.CORRECT, ms=2.0), case(Status.CORRECT, True)], RUB, REF)
    assert (g.status, g.points_correct, g.ratio_to_reference, g.points_speed) == (Status.CORRECT, 4, 0.5, 0.91)
    for st in (Status.TIMEOUT, Status.CRASH, Status.INCORRECT, Status.UNWRITTEN):
        g = score.grade_version(rule_for(), [case(st)], RUB, REF)
        assert g.points == 0 and g.points_max == 6
    g = score.grade_version(rule_for(), [], RUB, None, build_error="x.cu(3): error")
    assert g.status is Status.DOES_NOT_BUILD and g.points_max == 6


def test_a_hidden_case_failure_shows_its_details_only_when_visible():
    g = score.grade_version(rule_for(), [case(Status.CORRECT, ms=1.0), case(Status.INCORRECT, True)], RUB, REF)
    assert g.status is Status.HIDDEN_FAILED and g.points == 0 and "why" not in g.detail and "secret" in g.detail
    r = rule_for()
    r.cases[1].visibility = "visible"
    cs = [case(Status.CORRECT, ms=1.0), case(Status.INCORRECT, True)]
    cs[1].visibility = "visible"  # as the rubric's case says
    assert "why" in score.grade_version(r, cs, RUB, REF).detail


def test_a_foreign_kernel_outranks_correctness():
    bad = KernelUse("void cub::X()", 1, "library call (cub)", "library cub", allowed=False)
    g = score.grade_version(rule_for(), [case(Status.CORRECT, ms=0.01, kernels_=[bad])], RUB, REF)
    assert g.status is Status.NOT_OWN_WORK and g.points == 0 and "cub::X" in g.detail
    g = score.grade_version(rule_for(), [case(Status.CORRECT, ms=1.0)], RUB, REF, static_findings=["calls scan_cub"])
    assert g.status is Status.NOT_OWN_WORK


FAKE_DRIVER = textwrap.dedent("""\
    #!/usr/bin/env python3
    import os, sys, time
    mode = os.environ["FAKE_MODE"]
    csv = sys.argv[sys.argv.index("--csv") + 1]
    head = "subproject,kind,version,n,params,median_ms,metrics,status,detail,device\\n"
    if mode == "hang":
        time.sleep(60)
    if mode == "flood":
        sys.stdout.write("x" * (8 << 20))
    if mode == "hog":
        hog = bytearray(600 << 20)
        for i in range(0, len(hog), 4096): hog[i] = 1
        time.sleep(30)
    if mode == "crash":
        open(csv + ".partial", "w").write(head + "s,version,v,1,,0.1,,pass,,gpu\\n")
        os.abort()
    rows = {"pass": "pass,", "flood": "pass,", "fail": 'fail,"element 3 is 7, expected 8"',
            "unwritten": "not_implemented,v1.cu:3", "skip": "skipped,no CUDA device", "garbled": "PASS,"}[mode]
    open(csv, "w").write(head + "s,meta,,0,,,,pass,,gpu\\n" + f"s,version,v,1024,op=scan,0.5,,{rows},gpu\\n")
    """)


@pytest.mark.parametrize(
    "mode, status",
    [
        ("pass", Status.CORRECT),
        ("fail", Status.INCORRECT),
        ("unwritten", Status.UNWRITTEN),
        ("skip", Status.NOT_GRADABLE),
        ("hang", Status.TIMEOUT),
        ("crash", Status.CRASH),
        ("flood", Status.CORRECT),
        ("hog", Status.MEMORY_LIMIT),
        ("garbled", Status.INCORRECT),
    ],
)
def test_a_run_is_judged_under_time_memory_and_output_limits(tmp_path, mode, status):
    drv = tmp_path / "driver"
    drv.write_text(FAKE_DRIVER)
    drv.chmod(0o755)
    spec = run.RunSpec(
        driver=str(drv),
        version="v",
        args=[],
        workdir=str(tmp_path / "w"),
        name="v",
        time_limit_s=3,
        memory_limit_gb=0.3,
        output_limit_kb=64,
        env=dict(os.environ, FAKE_MODE=mode),
    )
    raw = run.execute(spec)
    res = run.judge(raw, "v", rubric.Case("visible", []), spec)
    assert res.status is status, (res.status, res.detail)
    if mode == "fail":
        assert res.detail == "n=1024 op=scan: element 3 is 7, expected 8"
    if mode == "flood":
        assert os.path.getsize(raw.log) < 200 << 10 and "left out" in Path(raw.log).read_text() and "MiB" in res.detail
    if mode == "hang":
        assert raw.seconds < 10


def sample_report():
    prov = Provenance("s", "abc", "2026-11-01T00:00:00", "def", "0" * 64, "NVIDIA H100", "580", "13.0", "now", "h")
    g1 = score.grade_version(rule_for(), [case(Status.CORRECT, ms=1.25)], RUB, REF)
    g2 = score.grade_version(rule_for(), [case(Status.TIMEOUT)], RUB, REF)
    g2.version = "scan_other"
    return StudentReport("alice", prov, [g1, g2], edited_outside=["stream_compaction/src/check.cpp"])


def test_gradescope_results_follow_the_autograder_schema():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(Path(os.path.join(ROOT, "grading", "gradescope_results.schema.json")).read_text())
    res = formats.gradescope(sample_report())
    jsonschema.validate(res, schema)
    assert res["score"] == 4 + score.speed_points(2, 0.8, 0.8, 0.25) and len(res["tests"]) == 2
    assert res["tests"][1]["status"] == "failed" and "check.cpp" in res["output"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tests": [{"score": "x"}]}, schema)


def test_junit_gradebook_and_the_report_round_trip(tmp_path):
    rep = sample_report()
    formats.write_all(rep, str(tmp_path / "alice"))
    suite = ET.parse(tmp_path / "alice" / "junit.xml").getroot()
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    back = report_from_json(json.loads(Path(tmp_path / "alice" / "report.json").read_text()))
    assert to_json(back) == to_json(rep)
    formats.class_files(
        [rep], str(tmp_path), [rule_for(), rubric.VersionRule("stream_compaction", "scan_other", "d", 4, 2, [], [], [])]
    )
    book = (tmp_path / "gradebook.csv").read_text().split("\n")
    assert book[0] == "Student,stream_compaction,Total" and book[1] == "Points Possible,12,12"
    assert book[2].startswith("alice,") and "report" not in book[2]


def test_a_student_the_grader_failed_on_stands_ungraded_in_the_class_files(tmp_path):
    """A Slurm shard that died leaves its students without reports: the merge lists them with a
    harness-error report naming the shard's log and empty gradebook cells, and says it failed."""
    other = rubric.VersionRule("stream_compaction", "scan_other", "d", 4, 2, [], [], [])
    job = types.SimpleNamespace(
        out=str(tmp_path),
        rules=[rule_for(), other],
        instructor_commit="c" * 40,
        rubric=RUB,
        assignment=types.SimpleNamespace(exercise_files=lambda: []),
        cache=str(tmp_path / ".grader" / "cache"),
    )
    students = [("alice", str(tmp_path / "in" / "alice")), ("bob", str(tmp_path / "in" / "bob"))]
    assert [n for n, _ in schedule.shard(students, 0, 2)] == ["alice"]
    (tmp_path / "shards" / "0").mkdir(parents=True)
    ref = {"versions": {r.key: {"status": "correct", "detail": ""} for r in job.rules}}
    schedule.write_references(job, [ref], out=str(tmp_path / "shards" / "0"))
    schedule.write_report(job, sample_report(), out=str(tmp_path / "shards" / "0"))
    reports, missing, lost = schedule.merge(job, 2, students, progress=lambda *_: None)
    assert missing == [1] and lost == ["bob"] and len(reports) == 2
    bob = json.loads(Path(tmp_path / "students" / "bob" / "report.json").read_text())
    assert {g["status"] for g in bob["grades"]} == {"harness error"} and bob["points"] == 0
    assert "shard 1 of 2" in bob["grades"][0]["detail"] and "shard-1.log" in bob["grades"][0]["detail"]
    book = (tmp_path / "gradebook.csv").read_text().strip().split("\n")
    assert book[2].startswith("alice,") and book[2] != "alice,," and book[3] == "bob,,"
    grades = (tmp_path / "grades.csv").read_text()
    assert "harness error:0" in grades


def test_a_container_is_not_an_algorithm(monkeypatch):
    """device_vector's construction and fills launch library kernels: allowed in every version and
    named as container set-up; the library's scan is still not the version's own work."""
    fill = (
        "void cub::CUB_300001_SM_900::detail::for_each::static_kernel<cub::CUB_300001_SM_900::detail::for_each::"
        "policy_hub_t::policy_500_t, unsigned long, thrust::THRUST_300001_SM_900_NS::cuda_cub::__uninitialized_fill::"
        "functor<thrust::THRUST_300001_SM_900_NS::device_ptr<int>, int>>(T2, T3)"
    )
    scan = "void cub::CUB_300001_SM_900::detail::scan::DeviceScanKernel<int>(int)"
    monkeypatch.setattr(
        kernels,
        "demangle",
        lambda names: {"fill": fill, "scan": scan}[names[0]] and [{"fill": fill, "scan": scan}[n] for n in names],
    )
    rule = rubric.load(os.path.join(ROOT, "grading", "rubric.toml")).select(["stream_compaction"], ["scan_naive"])[0]
    uses = kernels.classify([("fill", 2), ("scan", 1)], rule, set(), {}, {}, rubric.DEFAULT_LIBRARIES)
    assert uses[0].allowed and uses[0].owner.startswith("container or memory set-up, allowed (rule containers:")
    assert not uses[1].allowed and uses[1].owner == "library call (cub)"


def test_the_instructor_commit_says_when_the_tree_is_edited(tmp_path):
    from judge import student

    assert student.instructor_commit(str(tmp_path)) == "unknown"  # not a git checkout
    run = lambda *a: subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    (tmp_path / "f").write_text("a\n")
    run("add", "f")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True)
    head = head.stdout.strip()
    assert student.instructor_commit(str(tmp_path)) == head
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "grade.md").write_text("1\n")
    run("add", "results/grade.md")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "two")
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True)
    head = head.stdout.strip()
    (tmp_path / "results" / "grade.md").write_text("2\n")  # what a run writes: not the tree graded
    assert student.instructor_commit(str(tmp_path)) == head
    (tmp_path / "f").write_text("b\n")
    assert student.instructor_commit(str(tmp_path)) == head + " with uncommitted changes"


def test_timing_says_where_a_students_run_time_goes_by_subproject(tmp_path):
    from judge.model import TestResult
    from judge.rubric import Case, Limits, Rubric, VersionRule

    rub = Rubric("r", "x", Limits(), 0.8, 0.25, ())

    def grade(sub, seconds):
        rule = VersionRule(sub, "v", "d", 4, 0, [], [], [Case(f"c{i}", []) for i in range(len(seconds))])
        crs = []
        for i, s in enumerate(seconds):
            cr = CaseResult(f"c{i}", False, Status.CORRECT, tests=[TestResult("n=1", Status.CORRECT)])
            cr.seconds = s
            crs.append(cr)
        return score.grade_version(rule, crs, rub, None)

    reps = [
        StudentReport("a", Provenance(*[""] * 10), [grade("sc", [2.0, 1.0]), grade("nbody", [0.5])]),
        StudentReport("b", Provenance(*[""] * 10), [grade("sc", [4.0, 0.0])]),  # a case not run: no process
    ]
    assert schedule.runs_by_subproject(reps) == {
        "nbody": {"seconds_mean": 0.2, "cases_mean": 0.5},
        "sc": {"seconds_mean": 3.5, "cases_mean": 1.5},
    }
    rec = schedule.write_timing(str(tmp_path), 2, 1, 100.0, 10.0, reps)
    assert json.loads((tmp_path / "timing.json").read_text())["runs_by_subproject"] == rec["runs_by_subproject"]


def test_the_cases_versions_share_run_as_a_group_first():
    """run_all_versions with a run_group: a case that versions of one driver share (the same name and
    arguments) goes to it first, two or more versions at once, the timed cases alone, the checks
    beside each other; what stands is handed to run_one as `premade`; the rest run as before."""
    from judge import student

    def rule(name, driver, args, speed=1, checks=()):
        cases = [rubric.Case("visible", args, timed=True)] + [rubric.Case(c, ["--n", "1"]) for c in checks]
        return rubric.VersionRule("sc", name, driver, 1, speed, [], [], cases)

    a, b = rule("a", "d1", ["--n", "5"], checks=["edge"]), rule("b", "d1", ["--n", "5"], checks=["edge"])
    c, d = rule("c", "d1", ["--n", "6"]), rule("e", "d2", ["--n", "5"])
    slow = rule("s", "d1", ["--n", "5"], speed=0)  # no speed points: its visible case is a check
    rules = [a, b, c, d, slow]
    timed = {r.key: [0] if r.speed else [] for r in rules}
    assert [[(r.version, i) for r, i in g] for g in student.case_groups(rules, timed)] == [[("a", 0), ("b", 0)]]
    grouped, given = [], {}

    def run_group(group, sharing):
        grouped.append(([(r.version, i) for r, i in group], sharing))
        return {group[0][0].key: f"{group[0][0].version}'s case {group[0][1]}"}  # the others' did not stand

    def one(r, only, prior, sharing, premade=None):
        given.setdefault(r.version, []).append(premade)
        return [CaseResult(name=r.cases[i].name, hidden=False, status=Status.CORRECT) for i in only]

    job = types.SimpleNamespace(rubric=types.SimpleNamespace(untimed_parallel=2), runs_per_gpu=1)
    student.run_all_versions(job, rules, {"COURSE_GRADER_CPUS": "0,1,2,3"}, one, run_group)
    assert grouped[0] == ([("a", 0), ("b", 0)], 1)  # the timed group alone
    assert grouped[1] == ([("a", 1), ("b", 1)], 2)  # the checks' group beside the others
    assert len(grouped) == 2
    assert given["a"] == [{0: "a's case 0"}, {1: "a's case 1"}] and given["b"] == [None, None]
    assert given["s"] == [None] and given["c"] == [None] and given["e"] == [None]
    assert student.group_key([(a, 0), (b, 0)]) == "timed\td1\tvisible\t--n\t5"
    assert student.group_key([(a, 1), (b, 1)]).startswith("check\td1\tedge\t")
    # a check kept out of the groups (a CPU version's) runs beside them: b's edge case has no group left
    grouped.clear()
    given.clear()
    student.run_all_versions(
        job, rules, {"COURSE_GRADER_CPUS": "0,1,2,3"}, one, run_group, lambda r, i: r.version == "a" and i == 1
    )
    assert grouped == [([("a", 0), ("b", 0)], 1)] and given["a"] == [{0: "a's case 0"}, None]
