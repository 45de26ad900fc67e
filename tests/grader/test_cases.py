"""Partial credit per case (checker_tests, runner_case, checker_score): each size a run checks is
a test with its own weight; a process that ends on a size is charged to that size and the sizes
after it run again in a fresh process; a version earns the share of its points its passed tests
weigh, and its speed where its timed size passed. A stand-in driver plays the student."""

import dataclasses
import os
import stat

import pytest

from judge import checker_score as score
from judge import checker_tests as ct
from judge import formats, runner_case
from judge import runner_run as run
from judge.model import CaseResult, Provenance, Status, StudentReport, TestResult
from judge.rubric import Case, Limits, Rubric, VersionRule

HEADER = (
    "subproject,kind,version,role,idea,n,params,median_ms,min_ms,max_ms,noise,samples,metric,metric_unit,"
    "pct_of_ceiling,ceiling,speedup_vs_cpu,speedup_vs_prev,speedup_vs_library,predicted_ms,metrics,status,"
    "detail,device,cuda,git_sha"
)


def test_sizes_are_read_as_the_drivers_read_them():
    assert [ct.size_value(s) for s in ("0", "1000", "2^20", "2^20-3", "2^16+5", "1<<4", "x", "2^")] == [
        0,
        1000,
        2**20,
        2**20 - 3,
        2**16 + 5,
        16,
        None,
        None,
    ]
    args = ["--op", "scan", "--n", "0,1,2^10-3", "--reps", "3"]
    assert ct.size_list(args) == (3, ["0", "1", "2^10-3"])
    assert ct.with_sizes(args, ["2^10-3"]) == ["--op", "scan", "--n", "2^10-3", "--reps", "3"]
    assert ct.with_sizes(["--n=5,6"], ["6"]) == ["--n=6"]
    assert ct.size_list(["--quick"]) is None


def test_a_test_says_what_it_checks_and_weighs_what_the_rubric_says():
    assert ct.what("n=0 op=scan") == "an empty input"
    assert ct.what("n=1 op=scan") == "one element"
    assert ct.what("n=1024 op=scan") == "a power of two (2^10)"
    assert ct.what("n=33 op=scan") == "not a power of two, around a warp"
    assert ct.what("n=1023 op=scan") == "not a power of two, around a block of 1024"
    assert ct.what("n=5000") == "not a power of two"
    assert ct.what("case=room_tutorial") == ""
    assert ct.what("n=1000 op=compact fill=zeros").startswith("every element 0: a compaction keeps none")
    assert ct.what("n=65541 op=compact fill=nonzero") == "no element 0: a compaction keeps every element"
    # an input of zeros is an edge: a body that writes zeros passes it, so it earns only beside a real test
    assert ct.is_edge("n=1000 op=compact fill=zeros") and not ct.is_edge("n=1000 op=compact fill=nonzero")
    zeros = [TestResult(f"n={n} op=scan fill=zeros", Status.CORRECT) for n in (1000, 65541)]
    assert ct.fraction(zeros + [TestResult("n=31 op=scan", Status.INCORRECT)]) == 0.0
    assert ct.fraction(zeros + [TestResult("n=31 op=scan", Status.CORRECT)]) == 1.0
    rub = Rubric("r", "x", Limits(), 0.8, 0.25, (), case_weights={"n=0": 0.5, "op=sort": 2})
    assert ct.weight("n=0 op=scan", rub) == 0.5 and ct.weight("n=0 op=sort", rub) == 2
    assert ct.weight("n=10 op=scan", rub) == 1.0


def driver(tmp_path, body):
    """A stand-in driver: for each size of --n, `body` (bash, $n the size) decides; a row is
    appended to the journal as the real drivers do, and the CSV is written at the end."""
    exe = tmp_path / "bin" / "driver"
    exe.parent.mkdir(exist_ok=True)
    exe.write_text(
        "#!/bin/bash\n"
        'csv=""; sizes=""; while [ $# -gt 0 ]; do case "$1" in --csv) csv=$2;; --n) sizes=$2;; esac; shift; done\n'
        f"echo '{HEADER}' > \"$csv.partial\"\n"
        "row() {\n"
        '  echo "x,version,v,version,idea,$1,op=scan,1,1,1,0,3,,,,,,,,,,$2,$3,dev,13.0,abc" >> "$csv.partial"\n'
        "}\n"
        'sticky=""\n'
        "for text in ${sizes//,/ }; do\n"
        "  n=$(( ${text//^/**} ))\n"
        '  if [ -n "$sticky" ]; then row $n skipped "device unusable after an earlier error ($sticky)"; continue; fi\n'
        f"{body}\n"
        "done\n"
        'mv "$csv.partial" "$csv"\n'
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


def spec(tmp_path, exe, limit=20):
    return run.RunSpec(
        driver=exe,
        version="v",
        args=[],
        workdir=str(tmp_path / "runs"),
        name="s.v.0",
        time_limit_s=limit,
        memory_limit_gb=4,
        output_limit_kb=64,
        env=dict(os.environ),
    )


SIZES = ["0", "1", "31", "1000", "2^12"]
CASE = Case("visible", ["--n", ",".join(SIZES), "--reps", "3"])


def test_a_crash_at_one_size_costs_that_size_only(tmp_path):
    exe = driver(tmp_path, '  if [ "$n" = 0 ]; then kill -SEGV $$; fi\n  row $n pass ""')
    done = runner_case.run_case(spec(tmp_path, exe), CASE, None)
    cr = done.result
    assert cr.runs == 2, cr
    assert [(t.name, t.status) for t in cr.tests] == [
        ("n=1 op=scan", Status.CORRECT),
        ("n=31 op=scan", Status.CORRECT),
        ("n=1000 op=scan", Status.CORRECT),
        ("n=4096 op=scan", Status.CORRECT),
        ("n=0", Status.CRASH),
    ]
    assert cr.status is Status.CRASH
    assert cr.detail.startswith("1 of 5 tests failed; n=0 (an empty input): crash: killed by signal SIGSEGV")
    # with the reference's tests the crashed size takes the reference's name, and the order
    expected = ["n=0 op=scan", "n=1 op=scan", "n=31 op=scan", "n=1000 op=scan", "n=4096 op=scan"]
    cr = runner_case.run_case(spec(tmp_path, exe), CASE, None, expected).result
    assert [t.name for t in cr.tests] == expected and cr.tests[0].status is Status.CRASH


def test_a_kernel_record_the_run_wrote_itself_is_no_record(tmp_path):
    """The run knows where its kernel record goes (the pipe $COURSE_KERNEL_FD, and the file the
    grader writes it to): it can write a record of its own into the pipe (its own kernels only) and
    plant one at the file's name. Only a record whose first line carries the run's nonce, which the
    recorder wipes from the environment before the run's code, is the recorder's; any other is
    removed, and so is what the run left at the file's name."""
    fake = (
        'printf "# course kernel record (run guess)\\n3\\t10\\tmine\\n" >&$COURSE_KERNEL_FD; '
        'printf "# course kernel record (run guess)\\n3\\t10\\tmine\\n" > "${csv%.csv}.kernels.tsv"'
    )
    exe = driver(tmp_path, f'  row $n pass ""\n  [ "$text" = "${{sizes##*,}}" ] && {{ {fake}; }}\n  true')
    done = runner_case.run_case(dataclasses.replace(spec(tmp_path, exe), recorder=str(exe)), CASE, None)
    assert all(t.status is Status.CRASH for t in done.result.tests), done.result.tests
    assert "left no record either" in done.result.tests[0].detail
    # the check itself: the nonce, and never a read of something that is not a plain file
    rec = tmp_path / "k.tsv"
    rec.write_text("# course kernel record (run abc123): ...\n1\t5\tk\n")
    assert run.kernel_record_is_genuine(str(rec), "abc123") and not run.kernel_record_is_genuine(str(rec), "abc12")
    assert not run.kernel_record_is_genuine(str(rec), "")
    fifo = tmp_path / "fifo.tsv"
    os.mkfifo(fifo)
    assert not run.kernel_record_is_genuine(str(fifo), "abc123")  # returns at once, no blocking read
    run.drop_forged_record(str(fifo), "abc123")
    assert not fifo.exists()


def test_the_recorded_rerun_is_what_is_graded_not_the_run_that_died(tmp_path):
    """A run that computes its output one way (fast, unrecorded: it dies after its rows) and another
    way when run again cannot keep the first run's rows: the rerun that records what ran is graded
    in its place (its verdicts, rows and evidence), and a test it fails is failed."""
    fast = '"x,version,v,version,idea,$n,op=scan,0.001,0.001,0.001,0,3,,,,,,,,,,pass,,dev,13.0,abc"'
    body = (
        '  if [ ! -e "${csv%/*}/first-done" ]; then\n'
        f'    echo {fast} >> "$csv.partial"\n'
        '    [ "$text" = "${sizes##*,}" ] && { touch "${csv%/*}/first-done"; kill -SEGV $$; }\n'
        "  else\n"
        '    if [ "$n" = 31 ]; then row $n fail "element 3 differs"; else row $n pass ""; fi\n'
        '    [ "$text" = "${sizes##*,}" ] && \\\n'
        '      printf "# course kernel record (run $COURSE_KERNEL_NONCE)\\n3\\t10\\tmine\\n"\\\n'
        "      >&$COURSE_KERNEL_FD\n"
        "  fi"
    )
    exe = driver(tmp_path, body)
    done = runner_case.run_case(dataclasses.replace(spec(tmp_path, exe), recorder=str(exe)), CASE, None)
    st = {t.name: t.status for t in done.result.tests}
    assert st["n=31 op=scan"] is Status.INCORRECT and st["n=4096 op=scan"] is Status.CORRECT, st
    assert {r["median_ms"] for r in done.rows if r.get("kind") == "version"} == {"1"}  # none of the first run's
    assert [runner_case.kernels.read_log(p) for p in done.kernel_logs] == [[("mine", 3)]]


def test_a_resumed_run_the_grader_could_not_make_is_a_regrade_not_a_fail(tmp_path):
    """The sizes after a crash run again in a fresh process; when that process fails on the grader's
    side (here the driver refuses the arguments, exit 2), the sizes it never ran are the grader's
    error: the case is flagged for a regrade, not paid in part."""
    body = (
        '  if [ "$n" = 31 ]; then kill -SEGV $$; fi\n'
        '  if [ "${sizes%%,*}" != 0 ]; then echo "usage: driver [--n N]"; exit 2; fi\n  row $n pass ""'
    )
    exe = driver(tmp_path, body)
    expected = ["n=0 op=scan", "n=1 op=scan", "n=31 op=scan", "n=1000 op=scan", "n=4096 op=scan"]
    cr = runner_case.run_case(spec(tmp_path, exe), CASE, None, expected).result
    st = {t.name: t.status for t in cr.tests}
    assert st["n=31 op=scan"] is Status.CRASH and st["n=1000 op=scan"] is Status.HARNESS_ERROR, st
    assert cr.status is Status.HARNESS_ERROR and "resumed run failed" in cr.detail, cr.detail
    # an exit 2 of the student's own, after rows (no usage text): a crash at that size, not a regrade
    exe = driver(tmp_path, '  if [ "$n" = 1000 ]; then exit 2; fi\n  row $n pass ""')
    cr = runner_case.run_case(spec(tmp_path, exe), CASE, None, expected).result
    st = {t.name: t.status for t in cr.tests}
    assert st["n=1000 op=scan"] is Status.CRASH and st["n=4096 op=scan"] is Status.CORRECT, st


def test_a_sticky_error_is_charged_once_and_the_rest_runs_again(tmp_path):
    exe = driver(
        tmp_path,
        '  if [ "$n" = 31 ] && [ ! -e "$csv.done31" ]; then touch "$csv.done31"; sticky=illegal;'
        ' row $n fail "CUDA error cudaErrorIllegalAddress"; continue; fi\n  row $n pass ""',
    )
    cr = runner_case.run_case(spec(tmp_path, exe), CASE, None).result
    assert cr.runs == 2
    st = {t.name: t.status for t in cr.tests}
    assert st["n=31 op=scan"] is Status.INCORRECT and sum(s is Status.CORRECT for s in st.values()) == 4


def test_a_hang_is_charged_to_its_size_and_timeouts_are_capped(tmp_path):
    exe = driver(tmp_path, '  if [ "$n" -ge 1000 ]; then sleep 30; fi\n  row $n pass ""')
    cr = runner_case.run_case(spec(tmp_path, exe, limit=2), CASE, None).result
    assert cr.runs == 2  # n=1000 timed out, then 2^12 alone timed out: no third process
    st = {t.name: t.status for t in cr.tests}
    assert st["n=1000"] is Status.TIMEOUT and st["n=4096"] is Status.TIMEOUT
    assert sum(s is Status.CORRECT for s in st.values()) == 3
    # a size neither process reached (three hang here, two timeouts allowed): the last end names it
    many = Case("visible", ["--n", "0,1000,2000,3000"])
    expected = ["n=0 op=scan", "n=1000 op=scan", "n=2000 op=scan", "n=3000 op=scan"]
    cr = runner_case.run_case(spec(tmp_path, exe, limit=2), many, None, expected).result
    last = cr.tests[-1]
    assert last.status is Status.TIMEOUT and last.detail.startswith("not run: the process ended (timeout: "), last


def test_tests_passed_before_a_crash_need_a_record_of_what_ran(tmp_path):
    """The kernel recorder writes at exit: a process that passed sizes and then crashed left no
    record, so those sizes run again in a fresh process whose record stands for them; a run that
    crashes every time (after its rows) earns nothing unrecorded."""
    last = '[ "$text" = "${sizes##*,}" ] && [ -n "$COURSE_KERNEL_FD" ]'
    record = (
        last + ' && printf "# course kernel record (run $COURSE_KERNEL_NONCE)\\n3\\t10\\tmine\\n" >&$COURSE_KERNEL_FD'
    )
    exe = driver(tmp_path, f'  if [ "$n" = 1000 ]; then kill -SEGV $$; fi\n  row $n pass ""\n  {record}')
    sp = dataclasses.replace(spec(tmp_path, exe), recorder=str(exe))
    done = runner_case.run_case(sp, CASE, None)
    st = {t.name: t.status for t in done.result.tests}
    assert st == {**{f"n={n} op=scan": Status.CORRECT for n in (0, 1, 31, 4096)}, "n=1000": Status.CRASH}, st
    logs = [runner_case.kernels.read_log(p) for p in done.kernel_logs]
    assert logs == [[("mine", 3)], [("mine", 3)]], logs  # the resumed run, and the rerun in the crashed one's place
    # a process that always dies after its rows: nothing it passed is shown to be its own work
    exe = driver(tmp_path, '  row $n pass ""\n  [ "$n" = 4096 ] && kill -SEGV $$\n  true')
    done = runner_case.run_case(dataclasses.replace(spec(tmp_path, exe), recorder=str(exe)), CASE, None)
    assert all(t.status is Status.CRASH for t in done.result.tests), done.result.tests
    assert "left no record either (crash: killed by signal SIGSEGV" in done.result.tests[0].detail


def test_points_follow_the_tests_and_speed_the_timed_size(tmp_path):
    exe = driver(
        tmp_path, '  if [ "$n" = 0 ]; then row $n fail "element 0: got 5 expected 0"; continue; fi\n  row $n pass ""'
    )
    rub = Rubric("r", "x", Limits(), 0.8, 0.25, (), case_weights={"n=0": 0.5})
    cr = runner_case.run_case(spec(tmp_path, exe), CASE, rub).result
    cr.timed_ms, cr.timed_case = 1.0, "n=4096 op=scan"
    rule = VersionRule("stream_compaction", "v", "d", 4, 2, [], [], [Case("visible", CASE.args, timed=True)])
    ref = {"cases": {"visible": {"ms": 1.0, "timed_case": "n=4096 op=scan"}}}
    g = score.grade_version(rule, [cr], rub, ref)
    assert g.status is Status.INCORRECT and g.points_correct == pytest.approx(4 * 4 / 4.5, abs=0.01)
    assert g.points_speed == 2 and g.detail.startswith("1 of 5 tests failed")
    rep = StudentReport("s", Provenance(*[""] * 10), [g])
    gs = formats.gradescope(rep)["tests"]
    assert [t["max_score"] for t in gs] == [0.44, 0.89, 0.89, 0.89, 0.89, 2]
    assert [t["score"] for t in gs] == [0, 0.89, 0.89, 0.89, 0.89, 2]
    assert "n=0 op=scan (an empty input)" in gs[0]["name"] and "got 5 expected 0" in gs[0]["output"]
    xml = formats.junit(rep)
    assert xml.count("<testcase") == 5 and xml.count("<failure") == 1
    md = formats.markdown(rep)
    assert "## Cases that failed" in md and "an empty input" in md and "incorrect: element 0: got 5 expected 0" in md
    # not its own work: nothing of it is credited
    cr.kernels = []
    g = score.grade_version(rule, [cr], rub, ref, static_findings=["calls cub::DeviceScan"])
    assert g.status is Status.NOT_OWN_WORK and g.points == 0
    # a library call in the object of an exercise it only builds on: the kernel record of its runs
    # decides (scan_lookback over a scan_warp_shuffle whose scan calls CUB); with no record, it counts
    built_on = ["v4_warp_shuffle.cu.o calls scan_cub (library_cub.cu), which launches library kernels"]
    assert score.grade_version(rule, [cr], rub, ref, run_checked=built_on).status is Status.NOT_OWN_WORK
    lost = dataclasses.replace(cr, status=Status.HARNESS_ERROR, detail="the kernel recorder left no record of this run")
    g = score.grade_version(rule, [lost], rub, ref, run_checked=built_on)
    assert g.status is Status.HARNESS_ERROR  # the grader's failure, regraded: not the student's
    cr.recorded = True  # its record: every kernel it ran, none of them a library's
    g = score.grade_version(rule, [cr], rub, ref, run_checked=built_on)
    assert g.status is Status.INCORRECT and g.points_speed == 2


def test_a_fault_is_reported_where_it_is():
    """A compaction that fails because the scan it builds on fails points at the scan; one whose
    scan passes says nothing more."""
    rules = [
        VersionRule("sc", "scan_naive", "d", 4, 1, ["v1_naive"], [], []),
        VersionRule("sc", "scan_work_efficient", "d", 4, 1, ["v2_work_efficient"], [], []),
        VersionRule("sc", "compact_naive", "d", 2, 0, ["compact_map_scan_scatter", "v1_naive"], [], []),
        VersionRule(
            "sc", "compact_work_efficient", "d", 2, 0, ["compact_map_scan_scatter", "v2_work_efficient"], [], []
        ),
    ]

    def g(version, status):
        return score.VersionGrade("sc", version, status, "kept count 9, expected 10", 0, 4, 0, 1)

    grades = [
        g("scan_naive", Status.INCORRECT),
        g("scan_work_efficient", Status.CORRECT),
        g("compact_naive", Status.INCORRECT),
        g("compact_work_efficient", Status.INCORRECT),
    ]
    score.point_at_building_blocks(grades, rules)
    assert grades[2].detail.startswith("builds on scan_naive (incorrect), which fails too: look there first.")
    assert grades[3].detail == "kept count 9, expected 10"
    assert grades[0].detail == "kept count 9, expected 10"


def test_a_time_written_rather_than_measured_earns_no_speed(tmp_path):
    """A run that writes its own CSV can write any median; the kernel recorder's GPU time (CUPTI,
    outside the version's reach) bounds it from below: a median far under what the version's own
    kernels took a run keeps its tests but loses its time."""
    from types import SimpleNamespace

    from judge import checker_kernels as ck
    from judge import student

    assert ck.runs_at_most(["--n", "5,6", "--reps", "10"], 2) == 2 * (1 + 3 * 12)
    assert ck.runs_at_most(["--quick"], 1) == 1 + 3 * 202
    assert ck.runs_at_most(["--n", "5", "--fill", "zeros,nonzero", "--reps", "3"], 1) == 2 * (1 + 3 * 5)
    assert ck.runs_at_most(["--block-sweep", "--reps", "3"], 1) == 1 + 3 * 5 + 7 * 5
    log = tmp_path / "k.tsv"
    log.write_text("# record\n25\t150000000\tmine\n40\t2000000\tharness\n")
    assert ck.read_log_entries(str(log)) == [("mine", 25, 150000000), ("harness", 40, 2000000)]
    assert ck.read_log(str(log)) == [("mine", 25), ("harness", 40)]
    assert ck.own_ns([str(log), str(tmp_path / "none.tsv")], {"mine"}) == 150000000
    # 150 ms of its own kernels over at most 37 runs: at least 4 ms a run
    assert ck.time_below_own_work(0.001, 150_000_000, 37).startswith("its reported time (0.001 ms) is under")
    assert ck.time_below_own_work(3.0, 150_000_000, 37) == ""  # within the slack (overlap, fewer runs)
    assert ck.time_below_own_work(0.001, 0, 37) == ""  # no kernel of its own: host_work's case
    own, other = SimpleNamespace(owner="own"), SimpleNamespace(owner="harness")
    case = Case("visible", ["--n", "1000", "--reps", "10"])
    cr = CaseResult(name="visible", hidden=False, status=Status.CORRECT, timed_ms=0.001, timed_case="n=1000")
    cr.kernel_symbols, cr.kernels = ["mine", "harness"], [own, other]
    student.forged_time(cr, [str(log)], case, ct.size_list(case.args))
    assert cr.timed_ms is None and "no time counted" in cr.detail and cr.status is Status.CORRECT
    rule = VersionRule("sc", "scan_naive", "d", 4, 1, [], [], [Case("visible", [], timed=True)])
    cr.kernels, cr.kernel_symbols = [], []
    g = score.grade_version(rule, [cr], Rubric("r", "x", Limits(), 0.8, 0.25, ()), None)
    assert g.points_speed == 0 and g.speed_note == cr.untimed and "kernel recorder" in g.speed_note
    cr = CaseResult(name="visible", hidden=False, status=Status.CORRECT, timed_ms=5.0, timed_case="n=1000")
    cr.kernel_symbols, cr.kernels = ["mine", "harness"], [own, other]
    student.forged_time(cr, [str(log)], case, ct.size_list(case.args))
    assert cr.timed_ms == 5.0  # an honest time stands


def test_memcheck_runs_a_partial_block_and_names_the_kernel_and_line():
    from judge import checker_memcheck as mc

    args = ["--n", "0,1,2,32,33,1000,2^26", "--reps", "10"]
    assert mc.small_args(args) == ["--n", "33", "--reps", "1"]
    assert mc.small_args(["--n", "0,1,2,64"]) == ["--n", "2"]
    assert mc.small_args(["--quick"]) is None
    log = (
        "========= COMPUTE-SANITIZER\n"
        "========= Invalid __global__ write of size 4 bytes\n"
        "=========     at StreamCompaction::Device::step_kernel(long, int *)+0x1a0 in "
        "/grades/.grader/work/ann/tree/stream_compaction/src/v1_naive.cu:22\n"
        "=========     by thread (40,0,0) in block (0,0,0)\n"
        "========= ERROR SUMMARY: 3 errors\n"
    )
    assert [str(e) for e in mc.errors(log)] == [
        "Invalid __global__ write of size 4 bytes at StreamCompaction::Device::step_kernel(long, int *) in "
        "stream_compaction/src/v1_naive.cu:22"
    ]
    assert mc.errors("========= ERROR SUMMARY: 0 errors\n") == []
    # the other forms compute-sanitizer versions print: "kernel():0x160 in file:line", "0x160 in file:line:kernel"
    for frame in (
        "step_kernel(long, int *):0x1a0 in /t/stream_compaction/src/v1_naive.cu:22",
        "0x000001a0 in /t/stream_compaction/src/v1_naive.cu:22:step_kernel(long, int *)",
    ):
        e = mc.errors(log.replace(log.split("\n")[2], "=========     at " + frame))
        assert [(x.kernel, x.source) for x in e] == [
            ("step_kernel(long, int *)", "stream_compaction/src/v1_naive.cu:22")
        ]
    assert mc.finished(log) and not mc.finished("========= COMPUTE-SANITIZER\n========= Error: Target application")
    # a run that never reached a version: no row of it, or only rows skipped after another's sticky error
    skipped = {"version": "b", "kind": "version", "detail": "device unusable after an earlier error (illegal address)"}
    assert mc.unreached([skipped], "b") and mc.unreached([], "b")
    assert not mc.unreached([skipped, {"version": "b", "kind": "version", "detail": ""}], "b")
    found = mc.errors(log + log.replace("v1_naive.cu:22", "v2_work_efficient.cu:9"))
    assert [e.source for e in found] == [
        "stream_compaction/src/v1_naive.cu:22",
        "stream_compaction/src/v2_work_efficient.cu:9",
    ]
    # compute-sanitizer 13 names the file by its basename: the one own file of that name
    bare = mc.errors(log.replace("/grades/.grader/work/ann/tree/stream_compaction/src/v1_naive.cu", "v1_naive.cu"))
    assert [e.source for e in bare] == ["v1_naive.cu:22"]
    assert mc.in_files(bare[0], {"stream_compaction/src/v1_naive.cu", "stream_compaction/src/cpu.cpp"})
    assert not mc.in_files(bare[0], {"stream_compaction/src/v2_work_efficient.cu"})
    assert not mc.in_files(bare[0], {"stream_compaction/src/v1_naive.cu", "stream_compaction/app/v1_naive.cu"})
    # a library's frame keeps its whole path: never a student's file of the same name
    lib = mc.errors(
        log.replace("/grades/.grader/work/ann/tree/stream_compaction/src/v1_naive.cu", "/usr/include/x/v1_naive.cu")
    )
    assert [e.source for e in lib] == ["/usr/include/x/v1_naive.cu:22"]
    assert not mc.in_files(lib[0], {"stream_compaction/src/v1_naive.cu"})
    assert mc.in_files(found[0], {"stream_compaction/src/v1_naive.cu"})
    assert not mc.in_files(found[0], {"nbody/src/v1_naive.cu"})
    assert mc.summary(found[:1], "33").startswith("1 memory errors at n=33: Invalid __global__ write of size 4 bytes")
    rub = Rubric("r", "x", Limits(), 0.8, 0.25, (), memcheck="points", memcheck_cost=0.5)
    rule = VersionRule("sc", "v", "d", 4, 0, [], [], [Case("visible", [])])
    from judge.model import CaseResult, TestResult

    cr = CaseResult("visible", False, Status.CORRECT, tests=[TestResult("n=33", Status.CORRECT)], memcheck="3 errors")
    g = score.grade_version(rule, [cr], rub, None)
    assert g.status is Status.CORRECT and g.points_correct == 2 and g.memcheck == "3 errors"
    rub.memcheck = "warning"
    assert score.grade_version(rule, [cr], rub, None).points_correct == 4


def test_no_speed_point_is_lost_inside_the_references_own_spread():
    from judge.model import CaseResult, TestResult

    rule = VersionRule("sc", "v", "d", 4, 2, [], [], [Case("visible", [], timed=True)])
    rub = Rubric("r", "x", Limits(), 0.8, 0.25, ())
    cr = CaseResult("visible", False, Status.CORRECT, tests=[TestResult("n=9", Status.CORRECT)])
    cr.timed_ms, cr.timed_case = 1.0 / 0.7, "n=9"  # 0.7x the reference: below speed_full
    quiet = {"cases": {"visible": {"ms": 1.0, "timed_case": "n=9", "spread": 0.0}}}
    noisy = {"cases": {"visible": {"ms": 1.0, "timed_case": "n=9", "spread": 0.25, "ms_runs": [1.0, 1.1, 1.25]}}}
    assert score.grade_version(rule, [cr], rub, quiet).points_speed == pytest.approx(2 * (0.7 - 0.25) / 0.55, 0.01)
    g = score.grade_version(rule, [cr], rub, noisy)
    assert g.points_speed == 2 and g.ratio_to_reference == 0.7 and "spread over 3 runs: 25%" in g.speed_note


def test_a_hidden_cases_tests_show_neither_sizes_nor_details():
    """A hidden case's tests are its sizes: report.json, report.md, results.json and junit.xml
    show their count and status, not their names or details."""
    from judge.model import CaseResult, TestResult

    secret = [TestResult("n=131083 op=scan", Status.INCORRECT, "element 7: got 3 expected 4", "not a power of two")]
    cases = [
        CaseResult("visible", False, Status.CORRECT, tests=[TestResult("n=8 op=scan", Status.CORRECT)]),
        CaseResult("secret", True, Status.INCORRECT, visibility="hidden", tests=secret),
    ]
    rule = VersionRule("sc", "v", "d", 4, 0, [], [], [Case("visible", []), Case("secret", [], hidden=True)])
    g = score.grade_version(rule, cases, Rubric("r", "x", Limits(), 0.8, 0.25, ()), None)
    rep = StudentReport("s", Provenance(*[""] * 10), [g])
    texts = [
        str(formats.report_json(rep)),
        formats.markdown(rep),
        str(formats.gradescope(rep)),
        formats.junit(rep),
    ]
    for text in texts:
        assert "131083" not in text and "got 3" not in text, text


def test_a_crash_after_a_failed_size_is_still_charged_to_its_own_size(tmp_path):
    """A size fails, the next crashes with a shell's exit status (what bubblewrap reports): the
    crash is charged to that size and the rest run again."""
    exe = driver(
        tmp_path,
        '  if [ "$n" = 0 ]; then row $n fail "element 0: got 1 expected 0"; continue; fi\n'
        '  if [ "$n" = 1 ]; then exit 139; fi\n  row $n pass ""',
    )
    cr = runner_case.run_case(spec(tmp_path, exe), CASE, None).result
    st = {t.name: t.status for t in cr.tests}
    assert cr.runs == 2 and st["n=1"] is Status.CRASH and st["n=0 op=scan"] is Status.INCORRECT
    assert sum(s is Status.CORRECT for s in st.values()) == 3


def test_a_case_not_its_own_work_is_never_paid_as_a_partial_one():
    from judge.model import CaseResult, TestResult

    rule = VersionRule("sc", "v", "d", 4, 2, [], [], [Case("visible", [], timed=True), Case("secret", [], hidden=True)])
    ok = [TestResult("n=9", Status.CORRECT)]
    cases = [
        CaseResult("visible", False, Status.CORRECT, tests=ok),
        CaseResult("secret", True, Status.NOT_OWN_WORK, detail="no kernel of its own ran", tests=ok),
    ]
    g = score.grade_version(rule, cases, Rubric("r", "x", Limits(), 0.8, 0.25, ()), None)
    assert g.status is Status.NOT_OWN_WORK and g.points == 0
    cases[1].status = Status.HARNESS_ERROR
    g = score.grade_version(rule, cases, Rubric("r", "x", Limits(), 0.8, 0.25, ()), None)
    assert g.status is Status.HARNESS_ERROR and g.points == 0


def test_a_building_block_is_looked_up_in_its_own_subproject():
    rules = [
        VersionRule("ndt_graph", "v1_naive", "d", 3, 1, ["v1_naive"], [], []),
        VersionRule("sc", "scan_naive", "d", 4, 1, ["v1_naive"], [], []),
        VersionRule("sc", "compact_naive", "d", 2, 0, ["compact_map_scan_scatter", "v1_naive"], [], []),
    ]
    grades = [
        score.VersionGrade("ndt_graph", "v1_naive", Status.INCORRECT, "x", 0, 3, 0, 1),
        score.VersionGrade("sc", "scan_naive", Status.CORRECT, "ok", 4, 4, 1, 1),
        score.VersionGrade("sc", "compact_naive", Status.INCORRECT, "kept count 9", 0, 2, 0, 0),
    ]
    score.point_at_building_blocks(grades, rules)
    assert grades[2].detail == "kept count 9"  # ndt_graph's v1_naive is another exercise


# A process of several versions (runner_case.run_group, checker_kernels.split_by_version).
def record_lines(ranges, kernels, names=("own_a", "own_b", "harness")):
    """A recorder's record with ranges: ranges [(thread, depth, push, pop, name)], kernels
    [(start, end, name index)]."""
    out = ["# course kernel record (run NONCE): ..."]
    counts = {i: sum(k[2] == i for k in kernels) for i in range(len(names))}
    out += [f"{c}\t0\t{names[i]}" for i, c in counts.items() if c]
    out += [f"R\t{t}\t{d}\t{p}\t{q}\t{n}" for t, d, p, q, n in ranges]
    out += [f"N\t{i}\t{n}" for i, n in enumerate(names)]
    out += [f"K\t{s}\t{e}\t{i}" for s, e, i in kernels]
    return "\n".join(out) + "\n"


def test_each_kernel_goes_to_the_version_whose_range_held_its_start(tmp_path):
    from judge import checker_kernels as ck

    ranges = [(0, 0, 0, 1000, "scan n=10"), (0, 1, 10, 100, "a"), (0, 2, 20, 30, "inner"), (0, 1, 200, 300, "b")]
    kernels = [(15, 40, 0), (25, 26, 0), (150, 160, 2), (210, 400, 1), (5, 6, 2)]
    p = tmp_path / "k.tsv"
    p.write_text(record_lines(ranges, kernels))
    r = ck.split_by_version(str(p), ["a", "b"])
    assert r.problem == ""
    assert r.per_version == {
        "a": [("own_a", 2, 26)],
        "b": [("own_b", 1, 190)],
    }  # b's runs past its range: started in it
    assert r.outside == [("harness", 2, 11)]
    assert r.pushes == [(0, 1, "a"), (0, 1, "b")]
    bad = {
        "a version range never closed": [(0, 1, 10, 0, "a"), (0, 1, 200, 300, "b")],
        "a version range inside another": [(0, 1, 10, 250, "a"), (0, 2, 200, 300, "b")],
        "version ranges on more than one thread": [(0, 1, 10, 100, "a"), (1, 1, 200, 300, "b")],
        "no version ranges": [(0, 0, 0, 1000, "scan n=10")],
    }
    for why, rs in bad.items():
        p.write_text(record_lines(rs, kernels))
        assert ck.split_by_version(str(p), ["a", "b"]).problem.startswith(why), why
    p.write_text(record_lines(ranges, kernels) + "# over the cap: ranges or kernel intervals not all kept\n")
    assert "cap" in ck.split_by_version(str(p), ["a", "b"]).problem
    p.write_text(record_lines(ranges, kernels) + "K\t1\tx\t0\n")
    assert "malformed" in ck.split_by_version(str(p), ["a", "b"]).problem
    p.write_text(record_lines(ranges, kernels + [(50, 60, 7)]))
    assert "names no kernel" in ck.split_by_version(str(p), ["a", "b"]).problem
    # lines added after the recorder's (a run that kept a copy of the pipe): an index named again,
    # or intervals its totals do not count, make the split untrusted
    p.write_text(record_lines(ranges, kernels) + "N\t1\town_a\n")
    assert "named twice" in ck.split_by_version(str(p), ["a", "b"]).problem
    p.write_text(record_lines(ranges, kernels) + "K\t220\t230\t0\n")
    assert "not its totals" in ck.split_by_version(str(p), ["a", "b"]).problem
    assert ck.split_by_version(str(tmp_path / "none.tsv"), ["a"]).problem == "no kernel record"


def group_driver(tmp_path, fail="", extra_push="", stray=False, nap=0.0):
    """A stand-in driver of several versions (--version a,b): rows for each version and size (the
    version `fail` fails n=31), and a record with a range per version and size, its kernel inside;
    `extra_push`: a range of that name pushed inside a's; `stray`: a kernel between versions."""
    exe = tmp_path / "bin" / "gdriver"
    exe.parent.mkdir(exist_ok=True)
    exe.write_text(
        "#!/bin/bash\n"
        f"sleep {nap}\n"
        'csv=""; sizes=""; vs=""; while [ $# -gt 0 ]; do case "$1" in --csv) csv=$2;; --n) sizes=$2;; '
        "--version) vs=$2;; esac; shift; done\n"
        f"echo '{HEADER}' > \"$csv.partial\"\n"
        'rec="# course kernel record (run $COURSE_KERNEL_NONCE): ...\\n"; t=100; ks=""\n'
        "for text in ${sizes//,/ }; do\n"
        "  n=$(( ${text//^/**} )); i=0\n"
        "  for v in ${vs//,/ }; do\n"
        '    st=pass; det=""; if [ "$v" = "'
        + fail
        + '" ] && [ "$n" = 31 ]; then st=fail; det="element 3 differs"; fi\n'
        '    echo "x,version,$v,version,idea,$n,op=scan,1,1,1,0,3,,,,,,,,,,$st,$det,dev,13.0,abc" >> "$csv.partial"\n'
        '    rec+="R\\t0\\t1\\t$t\\t$((t+50))\\t$v\\n"; ks+="K\\t$((t+10))\\t$((t+20))\\t$i\\n"\n'
        '    if [ "$v" = a ] && [ -n "'
        + extra_push
        + '" ]; then rec+="R\\t0\\t2\\t$((t+1))\\t$((t+2))\\t'
        + extra_push
        + '\\n"; fi\n'
        "    t=$((t+100)); i=$((i+1))\n"
        "  done\n"
        "done\n"
        + ('ks+="K\\t$((t+10))\\t$((t+20))\\t9\\n"\n' if stray else "")
        + 'names=""; j=0; for v in ${vs//,/ }; do names+="N\\t$j\\town_$v\\n"; j=$((j+1)); done\n'
        + 'names+="N\\t9\\tstray\\n"; ns=$(echo ${sizes//,/ } | wc -w); tot=""\n'
        + 'for v in ${vs//,/ }; do tot+="$ns\\t0\\town_$v\\n"; done\n'
        + ('tot+="1\\t0\\tstray\\n"\n' if stray else "")
        + 'printf "$rec$tot$names${ks}" >&$COURSE_KERNEL_FD\n'
        'mv "$csv.partial" "$csv"\n'
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


ARGS = ["--n", "1,31,1000", "--reps", "3"]


def test_a_group_keeps_the_clean_versions_and_sends_a_failing_one_to_a_process_of_its_own(tmp_path):
    exe = group_driver(tmp_path, fail="b")
    specs = {v: dataclasses.replace(spec(tmp_path, exe), version=v, recorder=exe, args=ARGS) for v in ("a", "b")}
    case = Case("visible", ARGS)
    got = runner_case.run_group(specs, case, None, {"a": None, "b": None}, "s.group.0")
    assert got.problem == "" and set(got.cases) == {"a"}, got.problem  # b failed n=31: it runs alone again
    a = got.cases["a"]
    assert [t.status for t in a.result.tests] == [Status.CORRECT] * 3 and a.result.status is Status.CORRECT
    assert (
        "--version a,b" in a.result.command and abs(a.result.seconds - got.seconds / 2) <= 0.011
    )  # its ranges and half the rest
    assert runner_case.kernels.read_log_entries(a.kernel_logs[0]) == [("own_a", 3, 30)]
    assert all(r["version"] == "a" for r in a.rows)
    assert got.pushes == [[0, 1, "a"], [0, 1, "b"]] * 3
    # the reference's record is the check of a student's: the same ranges, nothing new between them
    ref = {"pushes": got.pushes, "outside": []}
    ok = runner_case.run_group(specs, case, None, {"a": None, "b": None}, "s.group.0", ref)
    assert ok.problem == "" and set(ok.cases) == {"a"}
    exe = group_driver(tmp_path, extra_push="b")  # a range named after another version, inside a's
    specs = {v: dataclasses.replace(spec(tmp_path, exe), version=v, recorder=exe, args=ARGS) for v in ("a", "b")}
    forged = runner_case.run_group(specs, case, None, {"a": None, "b": None}, "s.group.0", ref)
    assert forged.cases == {} and forged.problem, forged.problem
    exe = group_driver(tmp_path, stray=True)  # a kernel between versions the reference never ran there
    specs = {v: dataclasses.replace(spec(tmp_path, exe), version=v, recorder=exe, args=ARGS) for v in ("a", "b")}
    stray = runner_case.run_group(specs, case, None, {"a": None, "b": None}, "s.group.0", ref)
    assert stray.cases == {} and "between versions" in stray.problem, stray.problem
    # a reference's test the group's run did not pass (here: not run) keeps the version out too
    want = ["n=1 op=scan", "n=31 op=scan", "n=1000 op=scan", "n=5 op=scan"]
    exe = group_driver(tmp_path)
    specs = {v: dataclasses.replace(spec(tmp_path, exe), version=v, recorder=exe, args=ARGS) for v in ("a", "b")}
    part = runner_case.run_group(specs, case, None, {"a": want, "b": None}, "s.group.0")
    assert set(part.cases) == {"b"}
    # the group's own limit (the reference's group time times the factor) ends it: every version alone
    exe = group_driver(tmp_path, nap=2)
    slow_specs = {v: dataclasses.replace(sp, driver=exe) for v, sp in specs.items()}
    short = runner_case.run_group(slow_specs, case, None, {"a": None, "b": None}, "s.group.0", None, 0.3)
    assert short.cases == {} and "timeout" in short.problem, short.problem
    # a version whose ranges took longer than its own limit runs alone, whatever the group's limit
    specs["a"] = dataclasses.replace(specs["a"], time_limit_s=1e-8)
    slow = runner_case.run_group(specs, case, None, {"a": None, "b": None}, "s.group.0")
    assert set(slow.cases) == {"b"} and set(slow.own) == {"a", "b"}


def test_a_version_that_ran_no_kernel_in_its_share_did_its_work_on_the_host(tmp_path):
    """A share of a group can hold no kernel (the harness's ran between versions): it is still
    classified, and a version whose reference ran kernels of its own is not its own work."""
    import types

    from judge import student

    log = tmp_path / "share.tsv"
    log.write_text("# course kernel record (version v of a process of 2): launches, total ns, mangled name\n")
    res = CaseResult(name="visible", hidden=False, status=Status.CORRECT, tests=[TestResult("n=5", Status.CORRECT)])
    done = runner_case.CaseRun(result=res, rows=[{"version": "v", "kind": "version", "n": "5"}], kernel_logs=[str(log)])
    rule = VersionRule("stream_compaction", "v", "d", 1, 0, [], [], [Case("visible", ["--n", "5"])])
    job = types.SimpleNamespace(exercise_files={}, rubric=types.SimpleNamespace(libraries=()), region_kernels={})
    ref = {"own_kernels": 3, "cases": {}}
    cr = student._graded_case(job, rule, done, rule.cases[0], ref, {"kernels": []}, set(), {}, None, None, True)
    assert cr.status is Status.NOT_OWN_WORK and "on the host" in cr.detail
    assert not student._clean(cr)


def test_only_one_whole_record_of_the_run_is_kept(tmp_path):
    """The recorder's pipe: a record goes to the case's file only where it is one record of this run
    (the nonce in its first line, no second header: a run that kept a copy of the descriptor and
    wrote after the recorder), and what the run left at the file's name never stays."""
    path = str(tmp_path / "r.tsv")

    def kept(data: bytes) -> str | None:
        p = run.EvidencePipe()
        p.data, p.thread = bytearray(data), types_thread()
        (tmp_path / "r.tsv").write_text("planted\n")
        run.keep_record(p, path, "n0nce")
        os.close(p.read_fd)
        os.close(p.write_fd)
        return (tmp_path / "r.tsv").read_text() if os.path.exists(path) else None

    good = b"# course kernel record (run n0nce): ...\n3\t10\tmine\n"
    assert kept(good) == good.decode()
    assert kept(good + b"# course kernel record (run n0nce): ...\n1\t1\tother\n") is None
    assert kept(b"1\t1\tx\n" + good) is None
    assert kept(good.replace(b"n0nce", b"guess")) is None
    assert kept(b"") is None


def types_thread():
    import threading

    t = threading.Thread(target=lambda: None)
    t.start()
    return t


def test_the_references_grouped_timed_case_is_timed_again_in_its_group(tmp_path):
    """The reference's band (three timed runs) comes from its group's process where its timed case
    ran in one, as a student's timed case runs: the group runs twice more, once for all its versions."""
    import types

    from judge import student

    exe = group_driver(tmp_path)
    rules = [VersionRule("sc", v, "d", 1, 1, [], [], [Case("visible", ARGS, timed=True)]) for v in ("a", "b")]
    job = types.SimpleNamespace(
        rules=rules, rubric=types.SimpleNamespace(limits=Limits()), runs_per_gpu=1, recorder="", sandbox=None
    )
    key = student.group_key([(rules[0], 0)])
    groups = {key: {"own": {"a": 0.1, "b": 0.1}, "stood": ["a", "b"], "seconds": 1.0}}
    cache: dict = {}
    env = dict(os.environ)
    got = student._group_retimes(job, rules[0], groups, {"d": exe}, str(tmp_path / "w"), env, cache)
    assert got == [1.0, 1.0] and len(cache[key]) == 2
    runs = sorted(f for f in os.listdir(tmp_path / "w") if f.endswith(".csv"))
    assert student._group_retimes(job, rules[1], groups, {"d": exe}, str(tmp_path / "w"), env, cache) == [1.0, 1.0]
    assert (
        sorted(f for f in os.listdir(tmp_path / "w") if f.endswith(".csv")) == runs and len(runs) == 2
    )  # once for both
    assert student._group_retimes(job, rules[0], {}, {"d": exe}, str(tmp_path / "w"), env, cache) is None
    alone = {key: dict(groups[key], stood=["b"])}  # a's share did not stand: a is re-timed alone
    assert student._group_retimes(job, rules[0], alone, {"d": exe}, str(tmp_path / "w"), env, {}) is None


def test_a_grouped_timed_case_about_to_lose_a_speed_point_runs_its_group_once_more(tmp_path):
    """A speed point about to be lost on a time from a group's process: the same group's process once
    more (one for all the group's losing versions), and the faster time counts only where the
    version's share of the second process stood."""
    from judge import student
    from judge.model import VersionGrade

    rules = [VersionRule("sc", v, "d", 1, 1, [], [], [Case("visible", ARGS, timed=True)]) for v in ("a", "b", "c")]
    key = student.group_key([(rules[0], 0)])
    members = {key: [(r, 0) for r in rules]}

    def case(ms: float) -> CaseResult:
        return CaseResult(
            "visible", False, Status.CORRECT, command="d --version a,b,c --n 1", timed_ms=ms, timed_case="n=1"
        )

    ran = {r.key: [case(ms)] for r, ms in zip(rules, (2.0, 2.0, 1.0))}

    def grade(rule: VersionRule) -> VersionGrade:
        ms = ran[rule.key][0].timed_ms
        speed = 1.0 if ms <= 1.2 else 0.0  # the reference's 1 ms
        return VersionGrade("sc", rule.version, Status.CORRECT, "", 1, 1, speed, 1, ms, 1.0, ms, "n=1")

    graded = {r.key: grade(r) for r in rules}
    calls = []

    def run_group(group, sharing, attempt=0):
        calls.append(([r.version for r, _ in group], attempt))
        return {r.key: runner_case.CaseRun(result=case(0.0)) for r, _ in group if r.version != "b"}  # b's fell

    def run_one(rule, only, prior, sharing, premade=None):
        assert only == [0] and premade
        return [case({"a": 1.1, "c": 0.9}[rule.version])]

    student.group_second_tries(rules, ran, graded, members, run_group, run_one, grade, lambda s: None)
    assert calls == [(["a", "b", "c"], 1)]  # once, the whole group, as the reference's runs were
    assert graded[rules[0].key].points_speed == 1.0 and ran[rules[0].key][0].timed_ms == 1.1
    assert "run twice (2 and 1.1 ms), the faster counted" in graded[rules[0].key].speed_note
    assert graded[rules[1].key].points_speed == 0.0 and not graded[rules[1].key].speed_note  # no second share
    assert graded[rules[2].key].points_speed == 1.0 and ran[rules[2].key][0].timed_ms == 1.0  # nothing lost
    alone = {r.key: [dataclasses.replace(c, command="d --version a --n 1") for c in ran[r.key]] for r in rules}
    graded = {r.key: grade(r) for r in rules}
    calls.clear()
    student.group_second_tries(rules, alone, graded, members, run_group, run_one, grade, lambda s: None)
    assert calls == []  # timed alone: second_try's, not this
    # a second run that does not stand as the graded one did (its share fell, its case ran alone and
    # launched CUB, a kernel the graded run never showed): its faster time does not count
    from judge.model import KernelUse

    ran = {r.key: [case(ms)] for r, ms in zip(rules, (2.0, 2.0, 1.0))}
    graded = {r.key: grade(r) for r in rules}

    def run_one_library(rule, only, prior, sharing, premade=None):
        fast = case(0.5)
        fast.kernels = [KernelUse("cub::DeviceScanKernel", 1, "a library: cub", "cub", allowed=False)]
        return [fast]

    student.group_second_tries(rules, ran, graded, members, run_group, run_one_library, grade, lambda s: None)
    assert ran[rules[0].key][0].timed_ms == 2.0 and graded[rules[0].key].points_speed == 0.0


def test_a_csv_written_over_with_another_versions_rows_says_so(tmp_path):
    """A run that exits 0 with only another version's rows in its CSV (forged_time's rewrite at exit,
    when the forged scan runs inside compact_naive): not gradable, and the detail says why."""
    other = (
        'echo "x,version,scan_naive,version,idea,$n,op=scan,1,1,1,0,3,,,,,,,,,,pass,,dev,13.0,abc" >> "$csv.partial"'
    )
    done = runner_case.run_case(spec(tmp_path, driver(tmp_path, "  " + other)), CASE, None)
    assert done.result.status is Status.NOT_GRADABLE, done.result
    assert "no row of v, only rows of scan_naive: something in the process wrote over" in done.result.detail
    # graded against the reference's tests: each test without a row gives the same reason, not another
    done = runner_case.run_case(spec(tmp_path, driver(tmp_path, "  " + other)), CASE, None, ["n=5 op=scan"])
    assert done.result.status is Status.NOT_GRADABLE and len(done.result.tests) == 1
    assert done.result.tests[0].detail == "not run: " + done.result.detail, done.result.tests[0]
