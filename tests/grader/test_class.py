"""The grader end to end on this machine's build (CTest passes COURSE_BUILD_DIR): a generated
stream_compaction class graded in the instructor's tree (tampered checker, driver and CMake; a
submission that does not build; a hang; a crash; a printf flood), the static check of library and
other exercises' calls without a GPU, and the Slurm path on a single-node cluster."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from judge import cli, student

# a handout holds neither make_handout.py nor the class generator: these tests need the instructor's tree
classgen = pytest.importorskip("judge.classgen", reason="a handout: the class tests need the instructor's tree")

BUILD = os.environ.get("COURSE_BUILD_DIR", os.path.join(ROOT, "build", "release"))
KINDS = (
    "solution",
    "handout",
    "tamper_checker",
    "tamper_build",
    "no_build",
    "hang",
    "crash",
    "printf_flood",
    "cub_call",
    "nvtx_hide",
    "record_rewrite",
    "thrust_call",
    "library_version",
    "other_exercise",
    "symlink_exercise",
    "fifo_exercise",
    "huge_exercise",
    "git_config",
    "calls_reference",
    "static_ctor",
    "interpose",
    "macro_over_harness",
    "line_continuation",
    "closes_function",
    "include_solution",
    "real_crash_at_zero",
    "real_count_off_by_one",
    "real_device_vector",
)
# Folder names that must not break anything: class files' names, spaces and non-ASCII (the solution
# under each), and entries that are not graded, each reported in skipped.csv with the reason
ODD_NAMES = ("gradebook.csv", "Zoë Ünal (2nd try)")
SKIPPED = ("linked_to_solution", ".dot_folder", "notes.txt")
pytestmark = pytest.mark.skipif(
    not os.path.exists(os.path.join(BUILD, "compile_commands.json"))
    or not os.path.exists(os.path.join(BUILD, "stream_compaction", "stream_compaction")),
    reason=f"no instructor build in {BUILD}",
)


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    work = tmp_path_factory.mktemp("class")
    handout = work / "handout"
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
    for k in KINDS:
        classgen.make_student(str(handout), ROOT, str(work / "students" / k), k)
    for name in ODD_NAMES:
        classgen.make_student(str(handout), ROOT, str(work / "students" / name), "solution")
    (work / "students" / "linked_to_solution").symlink_to(work / "students" / "solution")
    classgen.make_student(str(handout), ROOT, str(work / "students" / ".dot_folder"), "solution")
    (work / "students" / "notes.txt").write_text("not a checkout\n")
    return work


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One grader cache for every job of this module (--cache), as an instructor's regrades share
    one: a file compiled for one job is not compiled again, the reference runs once."""
    return tmp_path_factory.mktemp("cache")


def grade(klass, out, cache, extra=()):
    args = [
        "--students",
        str(klass / "students"),
        "--handout",
        str(klass / "handout"),
        "--subproject",
        "stream_compaction",
        "--versions",
        "compact_cpu_scan,scan_naive",
        "--instructor-build",
        BUILD,
        "--out",
        str(out),
        "--gpus",
        "0",
        "--cache",
        str(cache),
    ] + list(extra)
    assert cli.main(args) == 0
    reports = [json.loads(p.read_text()) for p in (out / "students").glob("*/report.json")]
    by_name = {r["display_name"]: r for r in reports}
    assert len(by_name) == len(reports) == len(KINDS) + len(ODD_NAMES)
    return by_name


@pytest.fixture(scope="module")
def graded(klass, cache, tmp_path_factory):
    return grade(klass, tmp_path_factory.mktemp("out"), cache)


def status(rep, version="compact_cpu_scan"):
    return next(g["status"] for g in rep["grades"] if g["version"] == version)


def test_the_harness_is_the_instructors_whatever_the_student_edited(graded):
    assert status(graded["solution"]) == "correct"
    assert graded["solution"]["points"] == graded["solution"]["points_max"] > 0
    assert status(graded["handout"]) == "not written" and graded["handout"]["points"] == 0
    t = graded["tamper_checker"]
    assert status(t) == "incorrect" and "stream_compaction/src/check.cpp" in t["edited_outside"]
    b = graded["tamper_build"]
    assert status(b) == "correct" and {"CMakeLists.txt", "stream_compaction/app/main.cpp"} <= set(b["edited_outside"])


def test_failures_are_contained_and_the_maximum_is_the_same_for_everyone(graded):
    assert status(graded["hang"]) == "timeout"
    hang = next(g for g in graded["hang"]["grades"] if g["version"] == "compact_cpu_scan")
    # the first size timed out, the rest ran again in a fresh process and timed out too: no third
    assert hang["cases"][0]["runs"] == 2 and hang["cases"][0]["seconds"] < 250
    assert status(graded["crash"]) == "crash"
    assert status(graded["printf_flood"]) == "correct"
    assert status(graded["no_build"]) == "correct"  # its v1_naive does not build; the CPU exercise is graded
    assert len({r["points_max"] for r in graded.values()}) == 1
    for r in graded.values():
        assert r["provenance"]["rubric_sha256"] and r["provenance"]["instructor_commit"]


def test_class_files_an_lms_reads(graded, klass):
    out = None
    for d in klass.parent.iterdir():
        if (d / "gradebook.csv").exists():
            out = d
    book = (out / "gradebook.csv").read_text().strip().split("\n")
    assert book[0] == "Student,stream_compaction,Total" and book[1].startswith("Points Possible,")
    assert len(book) == 2 + len(KINDS) + len(ODD_NAMES)
    skipped = (out / "skipped.csv").read_text().strip().split("\n")
    assert skipped[0] == "entry,reason" and sorted(line.split(",")[0] for line in skipped[1:]) == sorted(SKIPPED)
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(Path(os.path.join(ROOT, "grading", "gradescope_results.schema.json")).read_text())
    for k in KINDS:
        jsonschema.validate(json.loads(Path(out / "students" / k / "results.json").read_text()), schema)


def test_hostile_folders_are_refused_by_name_and_nothing_of_theirs_runs(graded, klass):
    """A symlink to a classmate's file, a FIFO, a gigabyte: the exercise is not written, the reason
    names the file; the rest of the submission is graded. A .git/config that runs a script: never
    run. A folder named like a class file or with spaces and non-ASCII: graded as the solution."""
    cpu = "stream_compaction/src/cpu.cpp"
    for kind, why in (
        ("symlink_exercise", f"{cpu} is a symlink"),
        ("fifo_exercise", f"{cpu} is a FIFO"),
        ("huge_exercise", f"{cpu} is 1.0 GiB, the cap is 1 MiB"),
    ):
        rep = graded[kind]
        g = next(g for g in rep["grades"] if g["version"] == "compact_cpu_scan")
        assert g["status"] == "not written" and why in g["detail"], (kind, g["detail"])
        assert any(why in n for n in rep["notes"])
        others = {g["version"]: g["status"] for g in rep["grades"] if g["version"] != "compact_cpu_scan"}
        assert others == {v: status(graded["solution"], v) for v in others}  # the rest is graded
    git = graded["git_config"]
    assert not (klass / "students" / "git_config" / classgen.GIT_MARKER).exists()
    assert len(git["provenance"]["submission_commit"]) == 40 and git["provenance"]["submission_time"]
    assert status(git) == "correct"
    for name in ODD_NAMES:
        assert graded[name]["points"] == graded["solution"]["points"], graded[name]["build_error"]


def test_library_and_other_exercises_calls_are_found_without_a_gpu(klass, cache, graded, tmp_path):
    a = cli.parse_args(
        [
            "--handout",
            str(klass / "handout"),
            "--subproject",
            "stream_compaction",
            "--instructor-build",
            BUILD,
            "--out",
            str(tmp_path),
            "--cache",
            str(cache),
        ]
    )
    a.instructor = ROOT
    job = cli.load_job(a, str(tmp_path))
    found, run_checked = {}, {}
    for k in ("solution", "cub_call", "thrust_call", "library_version", "other_exercise"):
        prep = student.prepare_student(job, k, str(klass / "students" / k), progress=lambda *_: None)
        assert prep.build.ok, prep.build.error
        found[k] = {v: f for v, f in prep.static.items() if f}
        run_checked[k] = {v: f for v, f in prep.run_checked.items() if f}
    # scan_warp_shuffle's scan calls CUB; scan_lookback builds on that file (its block primitives):
    # there the call is left to the kernel record of scan_lookback's runs
    assert "stream_compaction/scan_lookback" not in found["library_version"]
    assert "scan_cub" in " ".join(run_checked["library_version"]["stream_compaction/scan_lookback"])
    assert run_checked["solution"] == {}
    assert found["solution"] == {}
    assert "cub::" in " ".join(found["cub_call"]["stream_compaction/scan_naive"])
    assert "library call" in " ".join(found["thrust_call"]["stream_compaction/scan_work_efficient"])  # Thrust runs CUB
    assert "scan_cub" in " ".join(found["library_version"]["stream_compaction/scan_warp_shuffle"])
    assert "another exercise" in " ".join(found["other_exercise"]["stream_compaction/scan_shared_mem"])


def test_objects_that_reach_the_checker_or_act_before_main_are_refused(graded):
    """The object rules (checker_symbols) without a GPU: a call of the checker's reference, a static
    constructor and a definition of a C library function are refused with the symbol and the rule.
    A static constructor or an interposed definition acts on the whole process: both sit in
    v1_naive.cu, and the CPU exercise (the one version graded without a GPU) is refused too."""
    refused = ("refused", "not its own work")
    cases = (
        ("calls_reference", "checker", "Host::compact_without_scan"),
        ("static_ctor", "init", "static constructor"),
        ("interpose", "interpose", "clock_gettime"),
    )
    for kind, rule, what in cases:
        g = next(g for g in graded[kind]["grades"] if g["version"] == "compact_cpu_scan")
        assert g["status"] in refused and g["points"] == 0, (kind, g["status"], g["detail"])
        assert what in g["detail"] and f"rule '{rule}'" in g["detail"], (kind, g["detail"])
        others = [x for x in graded[kind]["grades"] if x["version"] != "compact_cpu_scan"]
        if kind != "calls_reference":  # where a GPU grades scan_naive: refused as well
            assert all(x["status"] in refused for x in others), (kind, others)


def test_a_realistic_class_is_graded_per_case_as_a_ta_would(graded):
    """A compaction that crashes at n = 0 only loses that case (an edge case weighs half a size) and
    the report names the size and what it tests; one that drops the last kept element fails where
    the last element is kept, and the report says which element is missing; device_vector
    temporaries are a container, not a library algorithm (the static check)."""
    g = next(g for g in graded["real_crash_at_zero"]["grades"] if g["version"] == "compact_cpu_scan")
    tests = [t for c in g["cases"] for t in c["tests"]]
    assert g["status"] == "crash" and sum(t["status"] != "correct" for t in tests) == 1, g["detail"]
    assert "n=0 op=compact (an empty input): crash: killed by signal SIGSEGV" in g["detail"], g["detail"]
    assert g["cases"][0]["tests"][0]["what"] == "an empty input"
    weight = sum(t["weight"] for t in tests)
    assert g["points"] == pytest.approx(2 * (weight - 0.5) / weight, abs=0.01) and g["points"] < 2
    assert g["cases"][0]["runs"] == 2  # the sizes after n = 0 ran again in a fresh process
    g = next(g for g in graded["real_count_off_by_one"]["grades"] if g["version"] == "compact_cpu_scan")
    assert g["status"] == "incorrect" and "the last kept element is missing" in g["detail"], g["detail"]
    assert g["points"] < 2  # a quarter of the inputs' last elements are 0: the fresh inputs find it at every size
    assert graded["tamper_checker"]["points"] == 0  # returns 0: the empty input alone earns nothing


def test_device_vector_temporaries_are_a_container_not_a_library_algorithm(klass, cache, graded, tmp_path):
    """The static check without a GPU: the thrust::device_vector student's objects instantiate
    Thrust's fill kernels (container set-up, allowed); the CUB student's, CUB's scan (not)."""
    a = cli.parse_args(
        ["--handout", str(klass / "handout"), "--subproject", "stream_compaction", "--instructor-build", BUILD]
        + ["--out", str(tmp_path), "--cache", str(cache)]
    )
    a.instructor = ROOT
    job = cli.load_job(a, str(tmp_path))
    prep = student.prepare_student(job, "dv", str(klass / "students" / "real_device_vector"), progress=lambda *_: None)
    assert prep.build.ok, prep.build.error
    assert not prep.static.get("stream_compaction/scan_naive"), prep.static


def test_blocks_that_would_change_what_follows_them_are_refused(graded):
    """checker_blocks: a block that ends in a line splice, a body that closes its function, an
    #include of the instructor's or a classmate's file are refused with the file, the student's line
    and the rule, and only the versions of that exercise lose; a #define over a name the harness
    uses after the block ends with the block (the version is graded as written). scan_naive is
    graded where a GPU is."""

    def grade_of(kind, version):
        return next((g for g in graded[kind]["grades"] if g["version"] == version), None)

    cases = (
        ("line_continuation", "compact_cpu_scan", "line continuation"),
        ("closes_function", "compact_cpu_scan", "closes the function"),
        ("include_solution", "scan_naive", "#include"),
    )
    for kind, version, what in cases:
        g = grade_of(kind, version)
        if g is not None:
            assert g["status"] == "refused" and g["points"] == 0, (kind, g["status"], g["detail"])
            assert what in g["detail"] and "(a block may not change what follows it)" in g["detail"], g["detail"]
            assert g["detail"].startswith(("stream_compaction/src/cpu.cpp:", "stream_compaction/src/v1_naive.cu:"))
        for other in graded[kind]["grades"]:
            if other["version"] != version:  # only the versions of the refused exercise lose
                assert other["status"] == grade_of("solution", other["version"])["status"], (kind, other)
        assert any(what in n for n in graded[kind]["notes"]), graded[kind]["notes"]
    assert [g["status"] for g in graded["macro_over_harness"]["grades"]] == [
        g["status"] for g in graded["solution"]["grades"]
    ]


SLURM = shutil.which("sbatch") and shutil.which("slurmctld") and shutil.which("munged") and os.geteuid() == 0


@pytest.mark.skipif(not SLURM, reason="no Slurm here (Debian's slurm-wlm and munge, run as root, start one)")
def test_a_class_graded_as_a_slurm_job_array_and_merged(klass, cache, graded, tmp_path):
    cluster = tmp_path / "slurm"
    script = os.path.join(os.path.dirname(__file__), "slurm_single_node.sh")
    subprocess.run([script, "start", str(cluster)], check=True)
    os.environ["SLURM_CONF"] = str(cluster / "slurm.conf")
    try:
        studs = tmp_path / "students"
        studs.mkdir()
        for k in ("solution", "handout", "tamper_checker"):
            shutil.copytree(klass / "students" / k, studs / k)
        out = tmp_path / "out"
        assert (
            cli.main(
                [
                    "--students",
                    str(studs),
                    "--handout",
                    str(klass / "handout"),
                    "--subproject",
                    "stream_compaction",
                    "--versions",
                    "compact_cpu_scan",
                    "--instructor-build",
                    BUILD,
                    "--out",
                    str(out),
                    "--slurm",
                    "2",
                    "--slurm-gpus",
                    "0",
                    "--cache",
                    str(cache),
                ]
            )
            == 0
        )
        deadline = time.time() + 600
        while time.time() < deadline and not (out / "gradebook.csv").exists():
            time.sleep(2)
        logs = "".join(p.read_text() for p in (out / "slurm").glob("*.log"))
        assert (out / "gradebook.csv").exists(), logs[-3000:]
        book = (out / "gradebook.csv").read_text().strip().split("\n")
        assert book[1] == "Points Possible,2,2"
        rows = dict(line.split(",", 1) for line in book[2:])
        assert rows == {"handout": "0,0", "solution": "2,2", "tamper_checker": "0,0"}, logs[-3000:]
        assert len(list((out / "shards").iterdir())) == 2
    finally:
        subprocess.run([script, "stop", str(cluster)])
        os.environ.pop("SLURM_CONF", None)
