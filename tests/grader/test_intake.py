"""The grader against hostile input and for its own state (issue 37, items 4 to 6), without a build:
submissions that are symlinks, FIFOs, devices, huge files and git configurations that run
programs; class folders whose names are class files, odd characters or symlinks; report fields
that carry terminal escapes, XML-forbidden characters and Markdown; and a tampered object cache,
reference record and shard report. Each test fails when its defence is taken out."""

import contextlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import time
import tracemalloc
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from test_units import RUB, case, make_tree, rule_for, sample_report

from conftest import ROOT
from judge import checker_splice as assemble
from judge import formats, intake, integrity, schedule, student
from judge import runner_build as build
from judge.model import CaseResult, KernelUse, Status

EX = "stream_compaction/src/v9_x.cu"


def student_copy(tmp_path, hand, name="student"):
    sub = tmp_path / name
    shutil.copytree(hand, sub)
    f = sub / EX
    f.write_text(f.read_text().replace("COURSE_NOT_IMPLEMENTED();", f"mine_{name}(a);"))
    return sub


def in_thread(fn, timeout=20):
    """fn() in a thread that must finish within timeout (a FIFO read without O_NONBLOCK never does)."""
    box = {}

    def go():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            box["error"] = e

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(timeout)
    return t.is_alive(), box


# ---- files the grader does not read ------------------------------------------------------------
def test_an_exercise_file_symlinked_to_a_classmates_is_not_graded_as_the_students(tmp_path):
    a, hand, files = make_tree(tmp_path)
    classmate = student_copy(tmp_path, hand, "classmate")
    sub = student_copy(tmp_path, hand, "copier")
    (sub / EX).unlink()
    (sub / EX).symlink_to(classmate / EX)
    sp = assemble.splice(a, str(sub), (hand, files))
    assert "mine_classmate" not in sp.files[EX] and "COURSE_NOT_IMPLEMENTED" in sp.files[EX]
    assert sp.unread[EX] == f"{EX} is a symlink"
    assert sp.problems == [f"{EX} is a symlink; its exercises are graded as not written"]


def test_a_symlinked_folder_above_the_exercise_file_is_not_followed(tmp_path):
    a, hand, files = make_tree(tmp_path)
    classmate = student_copy(tmp_path, hand, "classmate")
    sub = student_copy(tmp_path, hand, "copier")
    shutil.rmtree(sub / "stream_compaction" / "src")
    (sub / "stream_compaction" / "src").symlink_to(classmate / "stream_compaction" / "src")
    sp = assemble.splice(a, str(sub), (hand, files))
    assert "mine_classmate" not in sp.files[EX]
    assert "is in stream_compaction/src, which is a symlink" in sp.unread[EX]


def test_a_fifo_at_a_handout_path_does_not_hang_the_grader(tmp_path):
    a, hand, files = make_tree(tmp_path)
    sub = student_copy(tmp_path, hand)
    for rel in (EX, "stream_compaction/src/check.cpp"):
        (sub / rel).unlink()
        os.mkfifo(sub / rel)
    hung, box = in_thread(lambda: assemble.splice(a, str(sub), (hand, files)))
    if hung:  # release the blocked reader before failing
        for rel in (EX, "stream_compaction/src/check.cpp"):
            with contextlib.suppress(OSError):
                os.close(os.open(sub / rel, os.O_WRONLY | os.O_NONBLOCK))
    assert not hung, "the splice blocked on a FIFO"
    sp = box["value"]
    assert sp.unread[EX] == f"{EX} is a FIFO"
    assert "stream_compaction/src/check.cpp" in sp.edited_outside  # a FIFO is not the handout's file


def test_dev_zero_and_devices_behind_a_handout_path_are_never_read(tmp_path):
    a, hand, files = make_tree(tmp_path)
    sub = student_copy(tmp_path, hand)
    (sub / EX).unlink()
    (sub / EX).symlink_to("/dev/zero")
    hung, box = in_thread(lambda: assemble.splice(a, str(sub), (hand, files)), timeout=10)
    assert not hung and box["value"].unread[EX] == f"{EX} is a symlink"
    (sub / EX).unlink()
    try:
        os.mknod(sub / EX, 0o644 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero's numbers
    except (PermissionError, OSError):
        pytest.skip("no mknod here (not root, or the container forbids device nodes)")
    hung, box = in_thread(lambda: assemble.splice(a, str(sub), (hand, files)), timeout=10)
    assert not hung and box["value"].unread[EX] == f"{EX} is a character device"


def test_a_1_gib_file_is_refused_by_its_size_without_being_read(tmp_path):
    a, hand, files = make_tree(tmp_path)
    sub = student_copy(tmp_path, hand)
    for rel in (EX, "stream_compaction/src/check.cpp"):
        with open(sub / rel, "r+b") as fh:
            fh.truncate(1 << 30)  # sparse: nothing on disk, a gigabyte to read
    tracemalloc.start()
    t0 = time.time()
    sp = assemble.splice(a, str(sub), (hand, files))
    seconds = time.time() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert sp.unread[EX] == f"{EX} is 1.0 GiB, the cap is 1 MiB"
    assert "stream_compaction/src/check.cpp" in sp.edited_outside
    assert seconds < 5 and peak < 32 << 20, (seconds, peak)
    (sub / EX).write_bytes(b"x" * 2048)
    with pytest.raises(intake.Refused, match="is 2.0 KiB, the cap is 1 KiB"):
        intake.read_bytes(str(sub), EX, 1024)
    assert assemble.splice(a, str(sub), file_cap=1024).unread[EX] == f"{EX} is 2.0 KiB, the cap is 1 KiB"


def test_the_rubric_sets_the_file_cap():
    from judge import rubric

    real = rubric.load(os.path.join(os.path.dirname(__file__), "..", "..", "grading", "rubric.toml"), secret="")
    assert real.limits.file_limit_kb == 1024


def test_a_symlinked_handout_file_outside_the_exercises_is_listed_as_edited(tmp_path):
    """A symlink to the handout's own check.cpp has the same bytes: still not the student's file."""
    a, hand, files = make_tree(tmp_path)
    sub = student_copy(tmp_path, hand)
    (sub / "stream_compaction" / "src" / "check.cpp").unlink()
    (sub / "stream_compaction" / "src" / "check.cpp").symlink_to(Path(hand) / "stream_compaction" / "src" / "check.cpp")
    (sub / "escape").symlink_to("/")  # a folder symlink is an entry, never walked
    sp = assemble.splice(a, str(sub), (hand, files))
    assert "stream_compaction/src/check.cpp" in sp.edited_outside
    tree = intake.walk(str(sub))
    assert tree.others["escape"] == "a symlink" and not any(f.startswith("escape/") for f in tree.files)


def test_the_clean_tree_is_plain_copies_never_hard_links_to_the_instructors_files(tmp_path):
    a, hand, files = make_tree(tmp_path)
    sp = assemble.splice(a, hand, (hand, files))
    dest = tmp_path / "clean"
    assemble.clean_tree(a, sp.files, str(dest))
    for rel in ("stream_compaction/src/check.cpp", "CMakeLists.txt"):
        mine, theirs = os.stat(dest / rel), os.stat(tmp_path / "inst" / rel)
        assert mine.st_ino != theirs.st_ino and mine.st_nlink == 1, rel
    (dest / "stream_compaction" / "src" / "check.cpp").write_text("int check() { return 0; }\n")
    assert (tmp_path / "inst" / "stream_compaction" / "src" / "check.cpp").read_text() == "int check() { return 1; }\n"


# ---- git never runs with the submission's configuration ----------------------------------------
def git(cwd, *args):
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, HOME=str(cwd))
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def signed_repo(path, marker, pack=False):
    """A checkout whose HEAD is a (fake-)signed commit and whose .git/config makes any git that reads
    it run a script that writes `marker`: gpg.program with log.showSignature, core.fsmonitor,
    core.pager, diff.external, core.hooksPath, an alias."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    git(path, "-c", "user.name=s", "-c", "user.email=s@x", "commit", "-q", "--allow-empty", "-m", "one")
    tree = git(path, "rev-parse", "HEAD^{tree}")
    body = (
        f"tree {tree}\nauthor S <s@x> 1700000000 +0100\ncommitter S <s@x> 1700000000 +0100\n"
        "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\nsigned\n"
    )
    (path / "c.txt").write_text(body)
    sha = git(path, "hash-object", "-t", "commit", "-w", "c.txt")
    git(path, "update-ref", "refs/heads/" + git(path, "symbolic-ref", "--short", "HEAD"), sha)
    if pack:  # the ref in packed-refs, the objects in a pack
        git(path, "pack-refs", "--all")
        git(path, "-c", "gc.auto=0", "repack", "-adq")
    evil = path / "evil.sh"
    evil.write_text(f'#!/bin/sh\necho "$COURSE_GRADING_SECRET" >> {marker}\ncat > /dev/null\nexit 1\n')
    evil.chmod(0o755)
    with open(path / ".git" / "config", "a") as fh:
        fh.write(
            f"[gpg]\n\tprogram = {evil}\n[log]\n\tshowSignature = true\n[core]\n\tfsmonitor = {evil}\n"
            f"\tpager = {evil}\n\thooksPath = {path}\n[diff]\n\texternal = {evil}\n[alias]\n\tlog = !{evil}\n"
        )
    return sha


def test_git_never_runs_the_submissions_configuration(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_GRADING_SECRET", "s3cret")
    marker = tmp_path / "marker"
    sub = tmp_path / "student"
    sha = signed_repo(sub, marker)
    job = types.SimpleNamespace(assignment=types.SimpleNamespace(exercise_files=lambda: []))
    prov = student.submission_provenance(job, str(sub))
    assert prov["submission_commit"] == sha
    assert prov["submission_time"] == "2023-11-14T23:13:20+01:00"
    assert not marker.exists(), marker.read_text()
    assert "COURSE_GRADING_SECRET" not in intake.git_env(str(tmp_path), str(tmp_path))
    packed = tmp_path / "packed"
    sha = signed_repo(packed, marker, pack=True)
    assert not (packed / ".git" / "refs" / "heads" / "master").exists() or True
    prov = student.submission_provenance(job, str(packed))
    assert prov["submission_commit"] == sha and prov["submission_time"] == "2023-11-14T23:13:20+01:00"
    assert not marker.exists()


def test_a_git_file_or_symlink_is_not_followed(tmp_path):
    other = tmp_path / "classmate"
    sha = signed_repo(other, tmp_path / "marker")
    sub = tmp_path / "student"
    sub.mkdir()
    (sub / ".git").write_text(f"gitdir: {other / '.git'}\n")
    job = types.SimpleNamespace(assignment=types.SimpleNamespace(exercise_files=lambda: []))
    prov = student.submission_provenance(job, str(sub))
    assert sha not in prov["submission_commit"] and ".git is a regular file" in prov["submission_commit"]
    (sub / ".git").unlink()
    (sub / ".git").symlink_to(other / ".git")
    prov = student.submission_provenance(job, str(sub))
    assert sha not in prov["submission_commit"] and ".git is a symlink" in prov["submission_commit"]
    assert intake.commit_time(str(sub), sha) == ""
    (sub / ".git").unlink()
    (sub / ".git").mkdir()
    (sub / ".git" / "HEAD").write_text("ref: refs/heads/../../../../etc/passwd\n")
    assert intake.head_commit(str(sub))[0] == ""
    assert not (tmp_path / "marker").exists()


# ---- the class folder -------------------------------------------------------------------------
def test_student_folders_become_safe_ids_and_every_skipped_entry_says_why(tmp_path):
    cls = tmp_path / "students"
    cls.mkdir()
    for n in ("gradebook.csv", "grades.csv", "students", "Ana María López", "a b", "a_b", "A_B", "-rf", "bob"):
        (cls / n).mkdir()
    (cls / "linked").symlink_to(cls / "bob")
    (cls / ".hidden").mkdir()
    (cls / "notes.txt").write_text("x")
    os.mkfifo(cls / "pipe")
    (cls / "bad\x1b[31mname").mkdir()
    studs, skipped = intake.list_students(str(cls))
    ids = {os.path.basename(p): i for i, p in studs}
    assert len(ids) == 10 and len(set(ids.values())) == 10
    for i in ids.values():
        assert intake._UNSAFE.search(i) is None and 0 < len(i) <= intake.ID_MAX and i[0].isalnum(), i
    assert ids["bob"] == "bob" and ids["A_B"] == "A_B" and ids["a_b"] == "a_b-2"  # unique ignoring case
    assert ids["gradebook.csv"].startswith("gradebook_csv-") and ids["Ana María López"].startswith("Ana_Maria_Lopez-")
    assert intake.assign_ids(list(reversed(list(ids)))) == ids  # the same in every shard
    why = {s.name: s.why for s in skipped}
    assert set(why) == {"linked", ".hidden", "notes.txt", "pipe"}
    assert "symlink" in why["linked"] and "dot" in why[".hidden"]
    assert "a regular file" in why["notes.txt"] and "a FIFO" in why["pipe"]
    out = tmp_path / "out"
    formats.skipped_file(str(out), skipped, progress=lambda *_: None)
    rows = (out / "skipped.csv").read_text().strip().split("\n")
    assert rows[0] == "entry,reason" and len(rows) == 5
    studs2, _ = intake.list_students(str(cls), exclude=[str(cls / "bob")])
    assert "bob" not in {os.path.basename(p) for _, p in studs2}


def test_a_student_named_like_a_class_file_cannot_break_the_class_files(tmp_path):
    cls = tmp_path / "students"
    names = ("gradebook.csv", "grades.csv", "skipped.csv", "timing.json", "shards", "slurm", "Zoë Ünal")
    for n in names:
        (cls / n).mkdir(parents=True)
    studs, _ = intake.list_students(str(cls))
    out = tmp_path / "out"
    job = types.SimpleNamespace(out=str(out), instructor_commit="c" * 40, rubric=RUB, cache=str(out / ".grader"))
    reports = []
    for sid, path in studs:
        r = sample_report()
        r.student, r.display_name = sid, intake.display_name(os.path.basename(path))
        schedule.write_report(job, r)
        reports.append(r)
    formats.class_files(reports, str(out), [rule_for()])
    book = (out / "gradebook.csv").read_text(encoding="utf-8").strip().split("\n")
    assert (out / "gradebook.csv").is_file() and (out / "grades.csv").is_file()
    assert {line.split(",")[0] for line in book[2:]} == set(names)
    for sid, _ in studs:
        assert (out / "students" / sid / "report.md").is_file()


# ---- reports any reader parses ------------------------------------------------------------------
HOSTILE = (  # terminal escapes, C0 controls, XML's forbidden characters, a bidi override, Markdown structure
    "evil\x1b[31mRED\x1b[0m\x00\x01\x07\x0b\x0c\x1b]0;title\x07 ]]> <x> & 'q' \ud800\ufffe\u202e|\n## Pwned\n| a | b |"
)


def hostile_report():
    r = sample_report()
    r.display_name = '=HYPERLINK("http://x")\x1b[2J'
    g = r.grades[1]
    g.detail = HOSTILE
    g.static_findings = ["calls `x`` " + HOSTILE]
    g.cases[0].kernels = [KernelUse(name="k```\x1b[1m", launches=1, owner=HOSTILE, defined_in="[l](u)", allowed=False)]
    r.notes = [HOSTILE, "# heading"]
    r.build_error = HOSTILE
    r.edited_outside = ["a`b.cpp"]
    r.provenance.submission = "/x/" + HOSTILE
    return r


def test_junit_is_well_formed_whatever_the_details_hold(tmp_path):
    r = hostile_report()
    x = formats.junit(r)
    suite = ET.fromstring(x)
    msg = suite.find("testcase/failure").get("message")
    assert "\x1b" not in x and "\x00" not in x and "RED" in msg and "]]>" in msg and "\ud800" not in x


def test_report_md_has_no_escape_bytes_and_keeps_its_structure():
    r = hostile_report()
    text = formats.markdown(r)
    assert not any(ord(c) < 32 and c not in "\n" for c in text) and "\x7f" not in text and "\u202e" not in text
    lines = text.split("\n")
    assert sum(line.startswith("## ") for line in lines) == 2  # the report's own two sections
    assert sum(line.startswith("# ") for line in lines) == 1
    rows = [line for line in lines if line.startswith("| stream_compaction")]
    assert len(rows) == 2 and all(line.count(" | ") == 6 for line in rows), rows  # no cell split or added
    prose = re.sub(r"(`+)[^`].*?\1", "", text)  # what is outside code spans (a code span is literal)
    assert "<x>" not in prose and "[l](u)" not in prose and "<x>" in text


def test_results_json_and_the_class_files_carry_no_control_characters(tmp_path):
    r = hostile_report()
    res = formats.gradescope(r)
    blob = json.dumps(res, ensure_ascii=False)
    assert "\x1b" not in blob and "\\u001b" not in json.dumps(res)
    formats.class_files([r], str(tmp_path), [rule_for()])
    book = (tmp_path / "gradebook.csv").read_text(encoding="utf-8")
    assert "\x1b" not in book and book.split("\n")[2].startswith("\"'=HYPERLINK(")


def test_a_hidden_cases_arguments_are_in_no_report(tmp_path):
    rep = sample_report()
    secret_args = "--n 7 --seed 123456789"
    c = CaseResult(
        name="secret",
        hidden=True,
        status=Status.INCORRECT,
        visibility="hidden",
        detail="n=7: element 3 is 7, expected 8",
        command="stream_compaction --version scan_naive " + secret_args,
    )
    from judge import checker_score as score

    g = score.grade_version(rule_for(), [case(Status.CORRECT, ms=1.0), c], RUB, {"cases": {}})
    rep.grades = [g]
    formats.write_all(rep, str(tmp_path))
    for f in ("report.json", "report.md", "results.json", "junit.xml"):
        text = (tmp_path / f).read_text()
        assert "123456789" not in text and "element 3" not in text, f


# ---- the grader's own state ---------------------------------------------------------------------
def one_object(tmp_path, extra_deps=(), extra_args=()):
    """An instructor tree with one exercise file, the student's copy, and a "compiler" (a copy
    with a prefix) for it: the rule, and a compiler of the student's tree with an empty cache."""
    root, bdir, tree, out = (tmp_path / d for d in ("inst", "build", "tree", "out"))
    for d in (root / "stream_compaction", bdir, tree / "stream_compaction", out):
        d.mkdir(parents=True, exist_ok=True)
    src, mine = root / "stream_compaction" / "x.cu", tree / "stream_compaction" / "x.cu"
    src.write_text("the solution\n")
    mine.write_text("student code\n")
    copy = "import sys; open(sys.argv[3], 'wb').write(b'OBJ:' + open(sys.argv[1], 'rb').read())"
    rule = build.ObjectRule(
        output=str(bdir / "x.o"),
        source=str(src),
        directory=str(bdir),
        command=["python3", "-c", copy, str(src), "-o", str(bdir / "x.o"), *extra_args],
        deps={str(src), *map(str, extra_deps)},
    )
    plan = build.Plan(root=str(root), build=str(bdir))
    cache = tmp_path / "cache" / "objects"
    cache.mkdir(parents=True)
    comp = build._Compiler(plan, str(tree), str(out), str(cache), {str(src): str(mine)}, str(out / "log"), 60)
    return rule, comp, cache


def test_a_tampered_object_cache_entry_is_discarded_and_compiled_again(tmp_path, capsys):
    rule, comp, cache = one_object(tmp_path)
    _, dst, rc, hit, _ = comp.compile(rule)
    assert rc == 0 and not hit and Path(dst).read_bytes() == b"OBJ:student code\n"
    assert comp.compile(rule)[3]  # from the cache
    (entry,) = [p for p in cache.iterdir() if p.suffix == ".obj"]
    entry.write_bytes(entry.read_bytes().replace(b"OBJ:", b"BAD:"))  # every later student's object, poisoned
    _, dst, rc, hit, _ = comp.compile(rule)
    assert rc == 0 and not hit and Path(dst).read_bytes() == b"OBJ:student code\n"
    assert "does not match its signature" in capsys.readouterr().err
    assert comp.compile(rule)[3]  # compiled again, cached again
    for forged in (b"OBJ:forged", integrity.MAGIC + b"0" * 64 + b"\nOBJ:forged"):  # unsigned; signed by a guess
        entry.write_bytes(forged)
        _, dst, _, hit, _ = comp.compile(rule)
        assert not hit and Path(dst).read_bytes() == b"OBJ:student code\n"


def reference_job(tmp_path):
    return types.SimpleNamespace(
        cache=str(tmp_path / "cache"),
        out=str(tmp_path / "out"),
        instructor_commit="c" * 40,
        rubric=RUB,
        assignment=types.SimpleNamespace(digest=lambda: "d" * 64, root=str(tmp_path)),
        plan=types.SimpleNamespace(build=str(tmp_path)),
        rules=[],
        drivers=lambda: [],
    )


def test_a_tampered_reference_record_is_discarded_and_timed_again(tmp_path, capsys):
    job = reference_job(tmp_path)
    rec = student.reference_record(job, {}, "gpu-1", progress=lambda *_: None)
    assert rec["versions"] == {}
    (path,) = [p for p in Path(job.cache).iterdir() if p.name.startswith("reference-")]
    head, _, body = path.read_bytes().partition(b"\n")
    forged = json.loads(body)
    forged["versions"]["stream_compaction/scan_naive"] = {"status": "correct", "cases": {"visible": {"ms": 1e-9}}}
    path.write_bytes(head + b"\n" + json.dumps(forged).encode())  # everyone's speed point lost
    again = student.reference_record(job, {}, "gpu-1", progress=lambda *_: None)
    assert again["versions"] == {} and "does not match" in capsys.readouterr().err
    path.write_text(json.dumps(forged))  # the old, unsigned format
    assert student.reference_record(job, {}, "gpu-1", progress=lambda *_: None)["versions"] == {}
    assert student.reference_record(job, {}, "gpu-1", progress=lambda *_: None) == again


def test_a_reference_record_is_keyed_by_the_drivers_bytes(tmp_path):
    """A record cached by device, commit, rubric and assignment is the reference of one build: a
    driver rebuilt since (an edited tree, committed or not) makes another record's name."""
    job = reference_job(tmp_path)
    job.drivers = lambda: ["sc/sc"]
    (tmp_path / "sc").mkdir()
    (tmp_path / "sc" / "sc").write_bytes(b"driver 1")
    student.reference_record(job, {}, "gpu-1", progress=lambda *_: None)
    (tmp_path / "sc" / "sc").write_bytes(b"driver 2")
    student.reference_record(job, {}, "gpu-1", progress=lambda *_: None)
    assert len([p for p in Path(job.cache).iterdir() if p.name.startswith("reference-")]) == 2


def test_the_key_file_is_private_and_the_secret_derives_the_key(tmp_path, monkeypatch):
    monkeypatch.delenv("COURSE_GRADING_SECRET", raising=False)
    k = integrity.key_for(str(tmp_path / "c"))
    assert len(k) == 32 and stat.S_IMODE(os.stat(tmp_path / "c" / integrity.KEY_FILE).st_mode) == 0o600
    assert integrity.key_for(str(tmp_path / "c")) == k  # the same key for every later step
    os.chmod(tmp_path / "c" / integrity.KEY_FILE, 0o644)
    integrity._keys.clear()
    assert integrity.key_for(str(tmp_path / "c")) == k
    assert stat.S_IMODE(os.stat(tmp_path / "c" / integrity.KEY_FILE).st_mode) == 0o600
    monkeypatch.setenv("COURSE_GRADING_SECRET", "s")  # shards on other nodes: the same key from the secret
    assert integrity.key_for(str(tmp_path / "other")) == integrity.key_for(str(tmp_path / "c")) != k


def test_shards_that_start_at_once_share_one_key(tmp_path, monkeypatch):
    """The Slurm shards of a cold cache (no key file yet) start together: every process ends up with
    the first writer's key, so each shard's signed report verifies in the merge."""
    monkeypatch.delenv("COURSE_GRADING_SECRET", raising=False)
    code = "import sys; from judge import integrity; print(integrity.key_for(sys.argv[1]).hex())"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "grading"))
    cache = str(tmp_path / "cold")
    procs = [
        subprocess.Popen([sys.executable, "-c", code, cache], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(8)
    ]
    keys = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert len(keys) == 1 and len(next(iter(keys))) == 64
    assert bytes.fromhex(next(iter(keys))) == (tmp_path / "cold" / integrity.KEY_FILE).read_bytes()


def shard_job(tmp_path):
    return types.SimpleNamespace(
        out=str(tmp_path),
        rules=[rule_for()],
        instructor_commit="c" * 40,
        rubric=RUB,
        assignment=types.SimpleNamespace(exercise_files=lambda: []),
        cache=str(tmp_path / ".grader" / "cache"),
    )


def signed_shard(tmp_path, job):
    d = str(tmp_path / "shards" / "0")
    ref = {"versions": {r.key: {"status": "correct", "detail": ""} for r in job.rules}}
    schedule.write_references(job, [ref], out=d)
    for name in ("alice", "bob"):
        r = sample_report()
        r.grades = r.grades[:1]
        r.student = name
        r.grades[0].status, r.grades[0].points_correct, r.grades[0].points_speed = Status.INCORRECT, 0.0, 0.0
        schedule.write_report(job, r, out=d)
    return Path(d)


def test_a_forged_shard_report_is_refused_and_the_student_listed_for_a_regrade(tmp_path):
    job = shard_job(tmp_path)
    d = signed_shard(tmp_path, job)
    students = [("alice", str(tmp_path / "in" / "alice")), ("bob", str(tmp_path / "in" / "bob"))]
    p = d / "students" / "alice" / "report.json"
    rep = json.loads(p.read_text())
    rep["grades"][0].update(status="correct", points_correct=4.0, points_speed=2.0)
    p.write_text(json.dumps(rep))  # the forger's edit, signature left as it was
    shutil.copy(d / "students" / "alice" / "report.json.hmac", d / "students" / "bob" / "report.json.hmac")
    shutil.copy(p, d / "students" / "bob" / "report.json")  # and a report moved to another student
    reports, missing, lost = schedule.merge(job, 1, students, progress=lambda *_: None)
    assert missing == [] and sorted(lost) == ["alice", "bob"]
    for name in ("alice", "bob"):
        out = json.loads((tmp_path / "students" / name / "report.json").read_text())
        assert {g["status"] for g in out["grades"]} == {"harness error"} and out["points"] == 0
        assert "failed verification" in out["grades"][0]["detail"]
    book = (tmp_path / "gradebook.csv").read_text().strip().split("\n")
    assert book[2:] == ["alice,,", "bob,,"]


def test_a_forged_shard_references_file_is_refused(tmp_path):
    job = shard_job(tmp_path)
    d = signed_shard(tmp_path, job)
    (d / "references.json").write_text(json.dumps([{"versions": {}}]))  # drops every version for everyone
    _, missing, lost = schedule.merge(job, 1, [("alice", "a"), ("bob", "b")], progress=lambda *_: None)
    assert missing == [0]


def test_the_console_gets_no_escape_sequence_from_a_student():
    seen = []
    schedule.console(seen.append)("[grade] x: incorrect (" + HOSTILE + ")")
    assert "\x1b" not in seen[0] and "\x07" not in seen[0] and "RED" in seen[0]


def test_the_graders_cache_is_its_own_folder_never_inside_the_students(tmp_path):
    """--cache: a shared folder for jobs of one instructor tree (default OUT/.grader/cache), refused
    where it would sit in (or be) the folder of the students' checkouts, whose contents they wrote
    (an --out inside it is the grader's and skipped, as before), or in the instructor build, which
    the sandbox shows every compile."""
    from judge import cli

    studs = tmp_path / "students"
    studs.mkdir()
    a = cli.parse_args(["--students", str(studs), "--out", str(tmp_path / "out")])
    assert cli.cache_dir(a) == str(tmp_path / "out" / ".grader" / "cache")
    a = cli.parse_args(["--students", str(studs), "--out", str(studs / "grades")])
    assert cli.cache_dir(a) == str(studs / "grades" / ".grader" / "cache")
    a = cli.parse_args(["--students", str(studs), "--cache", str(tmp_path / "shared")])
    assert cli.cache_dir(a) == str(tmp_path / "shared")
    with pytest.raises(SystemExit, match="inside the instructor build"):
        cli.cache_dir(a, str(tmp_path / "shared" / ".."))
    (tmp_path / "link").symlink_to(studs)
    for bad in (studs, studs / "alice" / "cache", tmp_path / "link" / "c"):
        a = cli.parse_args(["--students", str(studs), "--cache", str(bad), "--out", str(tmp_path / "out")])
        with pytest.raises(SystemExit, match="inside --students"):
            cli.cache_dir(a)


def test_dependency_files_with_relative_paths_are_read_from_the_compiles_folder(tmp_path):
    """ccache with a base folder (as CI builds) writes an object's .d with paths relative to the
    compile's folder: they are its inputs all the same, found from compile_commands.json's
    "directory"; escaped spaces and dollars are part of a path."""
    d = tmp_path / "build" / "sub"
    d.mkdir(parents=True)
    (d / "x.o.d").write_text(
        "sub/x.o: \\\n ../../src/cpu.cpp /usr/include/stdio.h \\\n ../../my\\ dir/a$$b.h\n../../src/cpu.cpp:\n"
    )
    deps = build.read_depfile(str(d / "x.o.d"), str(d))
    assert deps == {str(tmp_path / "src" / "cpu.cpp"), "/usr/include/stdio.h", str(tmp_path / "my dir" / "a$b.h")}


def test_a_cached_object_is_keyed_by_every_input_not_only_the_students_files(tmp_path):
    """A cache shared between jobs (--cache): an edit of a harness header the object includes, or of
    the response file its command reads, gives another key (compiled again), never the object of
    the tree as it was."""
    header, rsp = tmp_path / "inst" / "stream_compaction" / "h.cuh", tmp_path / "build" / "inc.rsp"
    rsp.parent.mkdir(parents=True)
    header.parent.mkdir(parents=True)
    header.write_text("#define N 1\n")
    rsp.write_text("-I/a\n")
    rule, comp, _ = one_object(tmp_path, extra_deps=[header], extra_args=["--options-file", "inc.rsp"])
    assert not comp.compile(rule)[3] and comp.compile(rule)[3]
    header.write_text("#define N 2\n")
    assert not comp.compile(rule)[3] and comp.compile(rule)[3]
    rsp.write_text("-I/b\n")
    assert not comp.compile(rule)[3]


def test_an_instructor_build_that_does_not_list_an_exercise_file_is_refused(tmp_path):
    """Were an exercise file an input of no object the student's build recompiles (dependency files
    missing, or naming paths the grader does not resolve), every student would be graded on the
    instructor's objects: the job stops at once, naming the file and the exercise."""
    root, bdir = tmp_path / "inst", tmp_path / "build"
    plan = build.Plan(root=str(root), build=str(bdir))
    obj = str(bdir / "cpu.o")
    plan.archives[str(bdir / "libsc.a")] = [obj]
    rule = build.ObjectRule(
        output=obj, source=str(root / "sc" / "cpu.cpp"), directory=str(bdir), command=[], deps=set()
    )
    plan.objects[obj] = rule
    files = {"sc/cpu_compact_with_scan": ["sc/cpu.cpp"]}
    with pytest.raises(build.BuildError, match=r"lists sc/cpu.cpp \(exercise sc/cpu_compact_with_scan\)"):
        build.check_sources(plan, files)
    rule.deps = {str(root / "sc" / "cpu.cpp")}
    build.check_sources(plan, files)
    plan.archives.clear()  # an object of no graded driver's library: not what a student's build recompiles
    with pytest.raises(build.BuildError):
        build.check_sources(plan, files)


def test_a_value_that_would_start_a_list_has_its_marker_escaped_not_its_digits():
    # A backslash before a digit is shown as it is: "driver \580.159.04" was in every report.
    assert formats.md("580.159.04") == "580\\.159.04"
    assert formats.md("12) x") == "12\\) x" and formats.md("- x") == "\\- x" and formats.md("+ x") == "\\+ x"
    assert formats.md(".5 ms") == ".5 ms" and formats.md("a-b 3.") == "a-b 3."
