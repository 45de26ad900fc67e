"""The profile the grader attaches to each graded GPU version (checker_profile, student.profile_versions):
read from the student's run as hostile input, shown escaped, stated once when no version could be
profiled, bounded in time, and never a point. The driver is a stand-in script here (no GPU): the
rows it writes are the ones common/profile.cpp writes (tests/common/test_profile.cpp)."""

import json
import os
import textwrap
import types
from pathlib import Path

import pytest

from judge import checker_profile as profiles
from judge import formats, rubric, student
from judge.model import (
    CaseResult,
    KernelUse,
    Provenance,
    Status,
    StudentReport,
    VersionGrade,
    report_from_json,
    to_json,
)

HEAD = "subproject,kind,version,role,idea,n,params,metric,metric_unit,pct_of_ceiling,ceiling,metrics,status,detail\n"
# scan_shared_mem's six kernels on an H200 (tests/common/data/ncu_scan_nvtx_raw.csv, summed)
SHARED = (
    "kernels[]=6;duration[ms]=0.036896;dram[MB]=12.6321;achieved_occupancy[%]=62.0303;theoretical_occupancy[%]=100;"
    "registers[reg/thread]=20;spill_instructions[inst]=0;shared_memory[B]=2116;stall.barrier[cycles/issue]=4.61039;"
    "stall.long_scoreboard[cycles/issue]=6.61357;heaviest.block_scan_kernel[%]=77.5369"
)
DENIED = (
    "no permission to read GPU performance counters (NVreg_RestrictProfilingToAdminUsers): run as root or ask the admin"
)


def line(version, status="pass", detail="", metrics=SHARED, metric="342.369", pct="8.12649"):
    return (
        f"stream_compaction,profile,{version},version,idea,0,launches=40 args=--n 2^20 --reps 1,{metric},GB/s,{pct},"
        f'copy_bandwidth,"{metrics}",{status},"{detail}"\n'
    )


def write(path, text):
    Path(path).write_text(text) if isinstance(text, str) else Path(path).write_bytes(text)
    return str(path)


def test_the_rows_of_the_versions_asked_for_are_read_into_profiles(tmp_path):
    csv = write(
        tmp_path / "p.csv",
        HEAD
        + "stream_compaction,meta,,,,0,,,,,,copy_bandwidth[GB/s]=4213,pass,\n"
        + line("scan_shared_mem")
        + line("scan_tma", "skipped", "needs sm_90 (TMA bulk copy); this GPU is sm_86", "")
        + line("scan_shared_mem", metrics="kernels[]=99")  # a second row of a version: the first counts
        + line("scan_other"),  # not asked for
    )
    got, why = profiles.read(csv, ["scan_shared_mem", "scan_tma", "scan_never_run"])
    assert why == "" and sorted(got) == ["scan_shared_mem", "scan_tma"]
    p = got["scan_shared_mem"]
    assert p["status"] == "profiled" and p["kernels"] == 6 and p["registers"] == 20 and p["shared_memory"] == 2116
    assert p["dram_gbs"] == pytest.approx(342.369) and p["dram_pct_of_copy"] == pytest.approx(8.12649)
    assert p["stalls"] == [("long_scoreboard", 6.61357), ("barrier", 4.61039)]  # largest first
    assert p["heaviest"] == ["block_scan_kernel", 77.5369]
    assert got["scan_tma"] == {"status": "skipped", "detail": "needs sm_90 (TMA bulk copy); this GPU is sm_86"}
    text = profiles.line(p)
    assert text.startswith("6 kernels, 0.0369 ms; DRAM 342.4 GB/s (8.1% of the copy bandwidth); occupancy 62.0% of")
    assert "stalls long_scoreboard 6.61, barrier 4.61 cycles/issue" in text and "block_scan_kernel (78%)" in text


def test_a_killed_run_is_read_from_its_journal(tmp_path):
    write(tmp_path / "p.csv.partial", HEAD + line("scan_shared_mem"))
    got, why = profiles.read(str(tmp_path / "p.csv"), ["scan_shared_mem"])
    assert why == "" and got["scan_shared_mem"]["kernels"] == 6


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda p: write(p, b"x" * (profiles.MAX_BYTES + 1)), "over the"),
        (lambda p: os.symlink("/etc/passwd", p), "not a regular file"),
        (lambda p: os.mkfifo(p), "not a regular file"),  # never opened: a reader would block
        (lambda p: os.mkdir(p), "not a regular file"),
        (lambda p: write(p, HEAD.encode() + b"\xff\xfe broken"), "not UTF-8"),
        (lambda p: write(p, HEAD + "a,\x00b\n"), "NUL bytes"),
        (lambda p: write(p, "kind,version\nprofile,scan_naive\n"), "no column status"),
        (lambda p: write(p, HEAD + '"' + "x" * 200_000 + '"\n'), "not CSV"),
        (lambda p: None, "it wrote no CSV"),
        (lambda p: write(p, HEAD + "stream_compaction,version,scan_naive,,,,,,,,,,pass,\n"), "no profile row"),
    ],
)
def test_a_hostile_or_broken_file_gives_a_reason_never_an_exception(tmp_path, make, reason):
    path = str(tmp_path / "p.csv")
    make(path)
    got, why = profiles.read(path, ["scan_naive"])
    assert got == {} and reason in why, why


def test_values_out_of_range_and_names_that_are_not_identifiers_are_left_out(tmp_path):
    hostile = (
        "kernels[]=nan;duration[ms]=inf;achieved_occupancy[%]=250;theoretical_occupancy[%]=-1;registers[]=1e400;"
        "shared_memory[B]=abc;stall.a|b[x]=9;stall.</td><script>[x]=9;stall.ok_reason[x]=3;"
        f"heaviest.{'k' * 200}[%]=50;heaviest.fine_kernel[%]=150"
    )
    csv = write(
        tmp_path / "p.csv",
        HEAD
        + line("scan_naive", metrics=hostile, metric="1e999", pct="-5")
        + line("scan_lookback", status="PASS")
        + line("scan_tma", "skipped", "x" * 10_000, ""),
    )
    got, _ = profiles.read(csv, ["scan_naive", "scan_lookback", "scan_tma"])
    assert got["scan_naive"] == {"status": "profiled", "detail": "", "stalls": [("ok_reason", 3.0)]}
    assert got["scan_lookback"]["status"] == "failed" and "status" in got["scan_lookback"]["detail"]
    assert len(got["scan_tma"]["detail"]) == profiles.MAX_DETAIL
    assert profiles.line(got["scan_naive"]) == "stalls ok_reason 3.00 cycles/issue"


def test_metrics_that_are_not_items_are_left_out_never_an_exception(tmp_path):
    # "x]=[y" has a "[" and a "]=", in the wrong order; "a]=1[" likewise: neither is an item
    csv = write(tmp_path / "p.csv", HEAD + line("scan_naive", metrics="x]=[y;a]=1[;[]=;kernels[]=3"))
    got, why = profiles.read(csv, ["scan_naive"])
    assert why == "" and got["scan_naive"]["status"] == "profiled", why
    assert got["scan_naive"]["kernels"] == 3.0


def grade(version, profile=None, points=4.0):
    g = VersionGrade("stream_compaction", version, Status.CORRECT, "1 test passed", points, 4.0, 0.0, 0.0)
    g.profile = profile or {}
    return g


def report(grades, notes=()):
    prov = Provenance("s", "abc", "now", "def", "0" * 64, "NVIDIA H100", "580", "13.0", "now", "h")
    return StudentReport("alice", prov, grades, notes=list(notes))


def test_the_report_shows_each_versions_profile_escaped_and_it_round_trips(tmp_path):
    got, _ = profiles.read(
        write(tmp_path / "p.csv", HEAD + line("scan_shared_mem") + line("scan_tma", "fail", "| # <b>x</b> [l](u)", "")),
        ["scan_shared_mem", "scan_tma"],
    )
    rep = report([grade("scan_shared_mem", got["scan_shared_mem"]), grade("scan_tma", got["scan_tma"]), grade("v")])
    md = formats.markdown(rep)
    assert "## Profile of each version (Nsight Compute on the grading GPU, for information: no points)" in md
    assert "| `scan_shared_mem` | 6 | 0.0369 | 342.4 | 8.1 | 62.0 / 100.0 | 20 | 0 | 2,116 |" in md
    assert "long\\_scoreboard 6.61, barrier 4.61 | `block_scan_kernel` 78% |" in md
    assert "<b>" not in md and "\\| \\# \\<b\\>x\\</b\\> \\[l\\]\\(u\\)" in md  # the failure's detail, escaped
    assert "`v`" not in md.split("## Profile")[1]  # a version without a profile has no line
    gs = formats.gradescope(rep)
    out = gs["tests"][0]["output"]
    assert "profile (Nsight Compute, for information): 6 kernels, 0.0369 ms" in out
    assert gs["score"] == 12  # the points are the grades' own
    formats.write_all(rep, str(tmp_path / "alice"))
    back = report_from_json(json.loads((tmp_path / "alice" / "report.json").read_text()))
    assert to_json(back) == to_json(rep)


# ---- the run: one --profile process per driver, in the sandbox, after the graded cases

FAKE_DRIVER = textwrap.dedent("""\
    #!/usr/bin/env python3
    import os, sys, time
    open(os.environ["FAKE_ARGV"], "w").write(" ".join(sys.argv[1:]) + "\\nNCU=" + os.environ.get("COURSE_NCU", ""))
    mode = os.environ["FAKE_MODE"]
    csv = sys.argv[sys.argv.index("--csv") + 1]
    versions = sys.argv[sys.argv.index("--version") + 1].split(",")
    head = {head!r}
    if mode == "hang":
        open(csv + ".partial", "w").write(head + {first!r})
        time.sleep(60)
    if mode == "garbage":
        open(csv, "wb").write(bytes(range(256)) * 8)
        sys.exit(0)
    if mode == "crash":
        os.abort()
    rows = {first!r} if mode == "pass" else ""
    for v in versions[1 if mode == "pass" else 0:]:
        rows += "stream_compaction,profile," + v + ",version,i,0,,,,,,,skipped,{denied}\\n"
    open(csv, "w").write(head + rows)
    """).format(head=HEAD, first=line("scan_shared_mem"), denied=DENIED)


@pytest.fixture
def setup(tmp_path):
    drv = tmp_path / "driver"
    drv.write_text(FAKE_DRIVER)
    drv.chmod(0o755)
    ncu = tmp_path / "ncu"
    ncu.write_text("#!/bin/sh\n")
    ncu.chmod(0o755)
    versions = ("scan_shared_mem", "scan_tma")
    rules = [rubric.VersionRule("stream_compaction", v, "sc", 4, 0, [], [], []) for v in versions]
    job = types.SimpleNamespace(
        rubric=types.SimpleNamespace(profile=True, profile_timeout_s=20, limits=rubric.Limits()),
        rules=rules,
        sandbox=None,  # the unit tests' direct runs (runner_run.sandboxed): test_sandbox.py covers the sandbox
    )
    prep = types.SimpleNamespace(name="alice", build=types.SimpleNamespace(drivers={"sc": str(drv)}))
    own = [KernelUse("k", 1, "own")]
    grades = [grade(r.version) for r in rules] + [grade("scan_cpu")]
    for g in grades[:2]:
        g.cases = [CaseResult("visible", False, Status.CORRECT, kernels=own)]
    env = dict(os.environ, COURSE_GRADER_GPU="1", COURSE_NCU=str(ncu), FAKE_ARGV=str(tmp_path / "argv"))
    work = tmp_path / "runs"
    work.mkdir()
    return types.SimpleNamespace(job=job, prep=prep, grades=grades, env=env, work=str(work), tmp=tmp_path)


def profile(s, mode, **env):
    return student.profile_versions(s.job, s.prep, s.work, dict(s.env, FAKE_MODE=mode, **env), s.grades, lambda _: None)


def test_each_version_gets_its_profile_and_no_point_moves(setup):
    before = [(g.points, g.status) for g in setup.grades]
    assert profile(setup, "pass") == []
    shared, tma, cpu = setup.grades
    assert shared.profile["kernels"] == 6 and tma.profile == {"status": "skipped", "detail": DENIED}
    assert cpu.profile == {}  # ran no kernel of its own: not profiled
    assert [(g.points, g.status) for g in setup.grades] == before
    argv, ncu = (setup.tmp / "argv").read_text().split("\n")
    assert argv.startswith("--version scan_shared_mem,scan_tma --profile --csv ")
    assert "--fresh-inputs" not in argv and "--evidence-fd" not in argv  # not a graded run
    assert ncu == "NCU=" + setup.env["COURSE_NCU"]


def test_no_permission_for_every_version_is_one_note(setup):
    notes = profile(setup, "denied")
    assert notes == [f"profile (Nsight Compute, for information): skipped: {DENIED}"]
    assert all(g.profile == {} for g in setup.grades)
    md = formats.markdown(report(setup.grades, notes))
    assert md.count("NVreg") == 1 and "## Profile of each version" not in md


def test_a_profile_past_its_time_is_killed_and_keeps_what_finished(setup):
    setup.job.rubric.profile_timeout_s = 1
    assert profile(setup, "hang") == []
    shared, tma, _ = setup.grades
    assert shared.profile["kernels"] == 6  # from the journal
    assert tma.profile == {"status": "skipped", "detail": "the profile did not finish in 2 s (killed)"}


@pytest.mark.parametrize("mode, why", [("garbage", "not UTF-8"), ("crash", "it wrote no CSV: killed by signal")])
def test_a_broken_profile_run_is_a_reason_said_once(setup, mode, why):
    notes = profile(setup, mode)
    assert len(notes) == 1 and why in notes[0], notes
    assert all(g.profile == {} for g in setup.grades)


def test_nothing_runs_without_ncu_a_gpu_or_the_rubric(setup):
    env = {k: v for k, v in setup.env.items() if k != "COURSE_NCU"}
    notes = student.profile_versions(setup.job, setup.prep, setup.work, dict(env, PATH="/nonexistent"), setup.grades)
    assert notes == ["profile (Nsight Compute, for information): skipped: ncu not found on the grading machine's PATH"]
    assert profile(setup, "pass", COURSE_GRADER_GPU="0") == []
    setup.job.runs_per_gpu = 4  # a correctness pass with students side by side on each GPU
    assert "4 students' runs share each GPU" in profile(setup, "pass")[0]
    setup.job.runs_per_gpu = 1
    setup.job.rubric.profile = False
    assert profile(setup, "pass") == []
    assert not (setup.tmp / "argv").exists()  # the driver never ran


def test_the_rubric_turns_the_profile_off_and_bounds_it(tmp_path):
    base = '[stream_compaction]\ndriver = "d"\n[stream_compaction.scan_naive]\ncorrect = 1\n'
    p = tmp_path / "r.toml"
    p.write_text(base)
    r = rubric.load(str(p), secret="")
    assert r.profile is True and r.profile_timeout_s == 120
    p.write_text("[grading]\nprofile = false\nprofile_timeout_s = 30\n" + base)
    r = rubric.load(str(p), secret="")
    assert r.profile is False and r.profile_timeout_s == 30
    for bad in ('profile = "yes"', "profile_timeout_s = 5", "profile_timeout_s = true"):
        p.write_text(f"[grading]\n{bad}\n" + base)
        with pytest.raises(rubric.RubricError, match="profile"):
            rubric.load(str(p), secret="")


def test_the_sandbox_sees_the_toolkits_nsight_compute_where_it_really_is(tmp_path):
    # a container's toolkit: bin/ncu is the wrapper, nsight-compute-* a link to another folder
    toolkit, elsewhere = tmp_path / "cuda-13.0", tmp_path / "opt" / "nsight-compute" / "2025.3.1"
    (toolkit / "bin").mkdir(parents=True)
    elsewhere.mkdir(parents=True)
    (toolkit / "bin" / "ncu").write_text("#!/bin/sh\n")
    (toolkit / "nsight-compute-2025.3.1").symlink_to(elsewhere)
    (tmp_path / "cuda").symlink_to(toolkit)
    ncu = profiles.ncu_path({"COURSE_NCU": str(tmp_path / "cuda" / "bin" / "ncu")})
    assert ncu == ""  # not executable: no ncu
    (toolkit / "bin" / "ncu").chmod(0o755)
    ncu = profiles.ncu_path({"COURSE_NCU": str(tmp_path / "cuda" / "bin" / "ncu")})
    assert ncu == str(toolkit / "bin" / "ncu")  # the real program, the links followed
    folders = profiles.ncu_folders(ncu)
    assert str(toolkit / "bin") in folders
    assert str(elsewhere) in folders  # the wrapper looks through the link: its target must be there
    assert str(toolkit) not in folders and str(tmp_path) not in folders  # never a whole tree above bin/
    assert all(os.path.isdir(f) for f in folders)


def test_a_personal_bin_never_shows_the_home_folder(tmp_path):
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / ".ssh").mkdir()
    (home / "bin" / "ncu").write_text("#!/bin/sh\n")
    (home / "bin" / "ncu").chmod(0o755)
    folders = profiles.ncu_folders(profiles.ncu_path({"COURSE_NCU": str(home / "bin" / "ncu")}))
    assert str(home) not in folders and str(home / "bin") in folders
