"""The out-of-process check (grading/judge/checker_evidence.py): a graded run's output records
against the reference solution's, with the reference's tolerance; and the records of the real
drivers, written to a pipe the grader holds, through the sandbox where bubblewrap runs."""

import os
import stat
import subprocess

import pytest

from conftest import ROOT
from judge import checker_evidence as ev
from judge import runner_run, runner_sandbox, student
from judge.model import CaseResult, Status, TestResult
from judge.rubric import Case

BUILD = os.environ.get("COURSE_BUILD_DIR", os.path.join(ROOT, "build", "release"))


def rec(*fields):
    return "\t".join(["E1", *fields])


REF_TEXT = "\n".join(
    [
        rec("exact", "scan_naive", "scan n=8", "32", "00000000deadbeef"),
        rec("close", "scan_naive", "forces n=4", "0.01", "0", "0", "3", "1,2,3"),
        rec("bits", "scan_naive", "labels", "1", "9", "a58"),
        rec("exact", "scan_cpu", "scan n=8", "32", "0000000000000001"),  # the harness's own run
    ]
)
REF = ev.for_record(REF_TEXT, False, "scan_naive")


def test_the_reference_keeps_the_graded_versions_records_only():
    assert len(REF) == 3 and all(k.startswith("scan_naive\t") for k in REF)


def test_matching_records_pass_and_each_kind_of_difference_is_named():
    good = "\n".join(REF_TEXT.split("\n")[:3])
    assert ev.compare(good, False, REF) == ""
    # within the reference's tolerance: 0.01 on each value; one label of nine may flip
    near = good.replace("1,2,3", "1.005,2,2.995").replace("a58", "a50")
    assert ev.compare(near, False, REF) == ""
    assert "differs from the reference" in ev.compare(good.replace("deadbeef", "deadbeee"), False, REF)
    assert "1 of 3 values out of tolerance" in ev.compare(good.replace("1,2,3", "1,2,3.5"), False, REF)
    assert "2 of 9 labels differ" in ev.compare(good.replace("a58", "a40"), False, REF)
    assert "out of tolerance" in ev.compare(good.replace("1,2,3", "1,2,nan"), False, REF)


def test_a_student_record_cannot_widen_the_tolerance_or_skip_a_case():
    wide = "\n".join(REF_TEXT.split("\n")[:3]).replace("0.01\t0\t0\t3\t1,2,3", "1e30\t1e30\t99\t3\t9,9,9")
    assert "out of tolerance" in ev.compare(wide, False, REF)
    assert "no record of its output for scan n=8" in ev.compare(REF_TEXT.split("\n", 1)[1], False, REF)
    assert "no record" in ev.compare("", False, REF)


def test_malformed_duplicated_or_overflowing_evidence_is_not_correct():
    good = "\n".join(REF_TEXT.split("\n")[:3])
    assert "not well-formed" in ev.compare(good + "\nE1\texact\tx", False, REF)
    assert "a second record" in ev.compare(good + "\n" + good.split("\n")[0], False, REF)
    assert "not well-formed" in ev.compare(good.replace("1,2,3", "1,2"), False, REF)
    assert "MiB" in ev.compare(good, True, REF)
    assert ev.compare("anything", False, {}) == ""  # no evidence expected: the in-run check alone
    with pytest.raises(ev.EvidenceError):
        ev.for_record("E1\tbogus\tv\tk\t1", False, "v")


def test_one_unusable_process_fails_only_what_it_alone_checked():
    """A resumed case has several processes: one whose evidence is malformed gives no record, so
    the outputs only it checked fail (with its reason), while the others' records stand."""
    lines = REF_TEXT.split("\n")
    first, second = lines[0], "\n".join(lines[1:3])
    wrong = ev.mismatches([(first, False), (second + "\nE1\texact\tx", False)], REF)
    assert set(wrong) == {"forces n=4", "labels"} and "not well-formed" in wrong["labels"], wrong
    assert ev.mismatches([(first, False), (second, False)], REF) == {}
    assert set(ev.mismatches([("E1\tx", False), ("", True)], REF)) == {""}  # none usable: the whole


def test_a_correct_case_without_matching_evidence_is_incorrect():
    cr = CaseResult(name="visible", hidden=False, status=Status.CORRECT)
    student.out_of_process_check(cr, [("", False)], "scan_naive", {"evidence": REF}, None)
    assert cr.status is Status.INCORRECT and "no record of its output reached the grader" in cr.detail
    kept = {}
    cr = CaseResult(name="visible", hidden=False, status=Status.CORRECT)
    student.out_of_process_check(cr, [(REF_TEXT, False)], "scan_naive", None, kept)
    assert cr.status is Status.CORRECT and kept == {"visible": REF}


def test_a_mismatch_fails_the_test_it_is_about_and_no_other():
    """A record's key names its size: the test of that size fails, the other sizes keep their
    points; evidence unusable as a whole fails every test."""
    ref = ev.for_record(
        rec("exact", "v", "scan n=8", "32", "00000000000000aa")
        + "\n"
        + rec("exact", "v", "scan n=0", "0", "cbf29ce484222325"),
        False,
        "v",
    )
    tests = [TestResult("n=0 op=scan", Status.CORRECT), TestResult("n=8 op=scan", Status.CORRECT)]
    cr = CaseResult(name="visible", hidden=False, status=Status.CORRECT, tests=tests)
    got = (
        rec("exact", "v", "scan n=8", "32", "00000000000000ab")
        + "\n"
        + rec("exact", "v", "scan n=0", "0", "cbf29ce484222325")
    )
    student.out_of_process_check(cr, [(got, False)], "v", {"evidence": ref}, None)
    assert [t.status for t in cr.tests] == [Status.CORRECT, Status.INCORRECT]
    assert cr.status is Status.INCORRECT and cr.detail.startswith("1 of 2 tests failed; n=8 op=scan")
    cr = CaseResult(name="visible", hidden=False, status=Status.CORRECT, tests=[TestResult("n=0", Status.CORRECT)])
    student.out_of_process_check(cr, [(got, True)], "v", {"evidence": ref}, None)
    assert cr.status is Status.INCORRECT and "MiB" in cr.tests[0].detail


CSV = (
    "subproject,kind,version,role,idea,n,params,median_ms,min_ms,max_ms,noise,samples,metric,metric_unit,"
    "pct_of_ceiling,ceiling,speedup_vs_cpu,speedup_vs_prev,speedup_vs_library,predicted_ms,metrics,status,"
    "detail,device,cuda,git_sha"
)


@pytest.mark.parametrize("sandboxed", [False, True])
def test_the_evidence_pipe_reaches_the_grader_and_a_forged_csv_does_not_pass(tmp_path, sandboxed):
    """A 'driver' that writes its CSV (every row passed) and one record to the descriptor it is
    given: the record comes back through the pipe (inside bubblewrap too), and a forged run that
    writes the CSV alone is incorrect once its evidence is compared."""
    if sandboxed:
        try:
            box = runner_sandbox.probe()
        except runner_sandbox.SandboxError as e:
            pytest.skip(f"bubblewrap cannot start a sandbox here: {e}")
    driver = tmp_path / "bin" / "driver"
    driver.parent.mkdir()
    driver.write_text(  # bash: dash cannot redirect to a descriptor above 9
        "#!/bin/bash\n"
        'out=""; fd=""; while [ $# -gt 0 ]; do\n'
        '  [ "$1" = --csv ] && out=$2; [ "$1" = --evidence-fd ] && fd=$2; shift\n'
        "done\n"
        f"printf '%s\\n' '{CSV}' > \"$out\"\n"
        "echo 'x,version,v,version,idea,5,,1,1,1,0,1,,,,,,,,,,pass,,cpu,13.0,abc' >> \"$out\"\n"
        '[ -z "$FORGE" ] && printf \'E1\\texact\\tv\\tn=5\\t4\\t00000000000000ff\\n\' >&"$fd"\n'
        "exit 0\n"
    )
    driver.chmod(driver.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    case = Case(name="visible", args=[], hidden=False)
    reference = None
    for forge in ("", "1"):
        spec = runner_run.RunSpec(
            driver=str(driver),
            version="v",
            args=[],
            workdir=str(tmp_path / f"runs{forge}"),
            name="x.v.0",
            time_limit_s=20,
            memory_limit_gb=4,
            output_limit_kb=64,
            env={**os.environ, "FORGE": forge},
            sandbox=box if sandboxed else None,
        )
        if sandboxed:  # the sandbox passes an allow-listed environment: the forger decides by its folder
            driver.write_text(driver.read_text().replace('[ -z "$FORGE" ]', '[ "${PWD%runs}" != "$PWD" ]'))
        raw = runner_run.execute(spec)
        cr = runner_run.judge(raw, "v", case, spec)
        assert cr.status is Status.CORRECT, cr.detail
        kept = {}
        student.out_of_process_check(cr, [(raw.evidence, False)], "v", reference, None if reference else kept)
        if reference is None:
            assert raw.evidence.startswith("E1\texact\tv\tn=5\t4\t"), raw.evidence
            reference = {"evidence": kept["visible"]}
        else:
            assert cr.status is Status.INCORRECT and "n=5: no record of its output reached the grader" in cr.detail


@pytest.mark.skipif(
    not os.path.exists(os.path.join(BUILD, "stream_compaction", "stream_compaction")),
    reason=f"no instructor build in {BUILD}",
)
def test_the_drivers_records_are_the_same_on_every_run_of_the_same_seed(tmp_path):
    """The real stream_compaction driver: two runs of a CPU version with the same arguments write
    the same records (what lets the grader compare a student's with the reference's), and another
    seed's differ."""

    def records(seed):
        r, w = os.pipe()
        exe = os.path.join(BUILD, "stream_compaction", "stream_compaction")
        args = [exe, "--version", "compact_cpu_scan", "--n", "1000,4096", "--reps", "1", "--seed", str(seed)]
        p = subprocess.Popen([*args, "--evidence-fd", str(w)], pass_fds=(w,), stdout=subprocess.DEVNULL)
        os.close(w)
        with os.fdopen(r) as fh:
            text = fh.read()
        assert p.wait() == 0
        return ev.for_record(text, False, "compact_cpu_scan")

    a, b, c = records(1), records(1), records(2)
    assert len(a) == 2 and a == b and a != c
    assert ev.compare("\n".join("\t".join(["E1", v[0], *k.split("\t"), *v[1:]]) for k, v in a.items()), False, b) == ""
