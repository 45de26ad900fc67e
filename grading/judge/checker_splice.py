"""A submission's exercise regions, spliced into a clean copy of the instructor's tree.

The instructor's tree (the solution) is the harness: drivers, checkers, tests, CMake, common/ and
the rubric all come from it. From a submission the grader takes only the lines between the
STUDENT markers of the assignment's exercise files (scripts/exercise_markers.py); each block
replaces the solution's region it stands for. Everything else the student changed is ignored and
listed ("edited outside the exercises")."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "scripts")  # exercise_markers.py
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import exercise_markers as em  # noqa: E402

if TYPE_CHECKING:
    from exercise_markers import Region, StudentRegion

# Files whose edits matter to grading (sources, build, scripts, the rubric); a student's README
# answers, results and plots are theirs to change.
CODE_EXT = (".cu", ".cuh", ".cpp", ".hpp", ".h", ".c", ".py", ".sh", ".toml", ".json", ".cmake", ".txt", ".in")
IGNORED_DIRS = {".git", "build", "grade", "__pycache__", ".cache", ".vscode", ".idea"}
IGNORED_PREFIX = ("results/", "images/", "data/")
SOURCE_DIRS = ("common", "stream_compaction", "nbody", "ground_seg", "ndt_graph", "grading")


@dataclass
class Assignment:
    """Which regions of the instructor's tree are the students' (HANDOUT.json's selection)."""

    root: str  # the instructor's tree (the solution)
    subprojects: list
    exercises: list  # ["stream_compaction/v1_naive", ...]; empty: every one of subprojects
    files: dict = field(default_factory=dict)  # exercise file -> its solution text

    @property
    def included(self) -> list[str]:
        return em.closure(self.subprojects)

    def assigned(self, path: str, region: Region) -> bool:
        return em.role(region, self.subprojects, self.included, self.exercises) == "assigned"

    def regions(self, path: str, text: str) -> list[Region]:
        """The file's regions, each resolved for this assignment's handout (its owner, for common/)."""
        return em.parse(path, text, self.included)

    def exercise_files(self) -> list[str]:
        return sorted(self.files)

    def handout_text(self, path: str) -> str:
        return em.stub_text(path, self.files[path], assigned=lambda r: self.assigned(path, r))[0]

    def digest(self) -> str:
        h = hashlib.sha256(json.dumps([self.subprojects, self.exercises]).encode())
        for f in self.exercise_files():
            h.update(f.encode() + b"\0" + self.files[f].encode() + b"\0")
        return h.hexdigest()


def tracked_files(root: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"], capture_output=True
    )
    if out.returncode == 0:
        return sorted(f for f in out.stdout.decode().split("\0") if f and os.path.isfile(os.path.join(root, f)))
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x not in IGNORED_DIRS]
        files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(files)


def load_assignment(
    root: str, subprojects: list[str], exercises: Sequence[str] = (), handout_manifest: str | None = None
) -> Assignment:
    """The assignment: from the instructor's HANDOUT.json when given (what was handed out), else
    every exercise of the sub-projects."""
    if handout_manifest:
        with open(handout_manifest, encoding="utf-8") as fh:
            man = json.load(fh)
        subprojects = man["subprojects"]
        exercises = sorted(man["exercises"])
    a = Assignment(root=os.path.abspath(root), subprojects=list(subprojects), exercises=list(exercises))
    for f in tracked_files(root):
        if (
            f.endswith(em.SOURCE_EXT)
            and not f.startswith("tests/")
            and (em.subproject_of(f) in a.subprojects or not em.subproject_of(f))
        ):
            text = Path(os.path.join(root, f)).read_text(encoding="utf-8")
            if "// EXERCISE BEGIN" in text and any(a.assigned(f, r) for r in a.regions(f, text)):
                a.files[f] = text
    return a


@dataclass
class Splice:
    files: dict  # exercise file -> the spliced text
    problems: list  # marker problems: the blocks of that file are graded as not written
    edited_outside: list  # files changed outside the exercises (ignored)
    added: list  # files the submission adds (ignored)
    deleted: list  # handout files the submission lacks (the instructor's are used)


def student_blocks(assignment: Assignment, f: str, path: str) -> tuple[dict[str, list[StudentRegion]], str]:
    """({exercise: [blocks]}, "") of a submitted exercise file, or ({}, why) when the file is missing,
    not UTF-8, or its STUDENT markers differ from the handout's."""
    if not os.path.isfile(path):
        return {}, f"{f}: missing from the submission"
    blocks = {}
    try:
        text = Path(path).read_text(encoding="utf-8", errors="strict")
        for b in em.parse_student(f, text):
            blocks.setdefault(b.exercise, []).append(b)
    except UnicodeDecodeError:
        return {}, f"{f}: not UTF-8 text"
    except em.MarkerError as e:
        return {}, str(e)
    expected = {}
    for r in assignment.regions(f, assignment.files[f]):
        if assignment.assigned(f, r):
            expected[r.exercise] = expected.get(r.exercise, 0) + 1
    got = {k: len(v) for k, v in blocks.items()}
    if got != expected:
        return {}, (
            f"{f}: STUDENT blocks {dict(sorted(got.items()))}, the handout has "
            f"{dict(sorted(expected.items()))}: the markers were changed"
        )
    return blocks, ""


def splice(
    assignment: Assignment,
    submission: str,
    handout_files: tuple[str, list[str]] | None = None,
    stubbed: frozenset[str] = frozenset(),
) -> Splice:
    """The assignment's exercise files with the submission's STUDENT blocks in place of the solution's
    regions. handout_files (relative paths of what the handout holds) lists the files compared for
    edits outside the exercises. Exercises in `stubbed` ("sub/name") keep the handout's starter body (their
    code did not compile)."""
    out = Splice(files={}, problems=[], edited_outside=[], added=[], deleted=[])
    for f in assignment.exercise_files():
        solution = assignment.files[f]
        path = os.path.join(submission, f)
        blocks, problem = student_blocks(assignment, f, path)
        if problem:
            out.problems.append(problem + "; its exercises are graded as not written")
            blocks = {}
        queues = {k: list(v) for k, v in blocks.items()}

        def replace(r: Region, queues: dict[str, list[StudentRegion]] = queues, f: str = f) -> list[str] | None:
            if not assignment.assigned(f, r):
                return None
            if r.exercise in queues and queues[r.exercise]:
                b = queues[r.exercise].pop(0)
                if r.key in stubbed:
                    return em.stub_lines(r)[1:-1]
                return b.lines
            return em.stub_lines(r)[1:-1]

        out.files[f], _ = em.rewrite(f, solution, replace)
        if not problem and os.path.isfile(path):
            mine = outside_text(f, Path(path).read_text(encoding="utf-8"))
            if mine != outside_text(f, assignment.handout_text(f)):
                out.edited_outside.append(f)
    if handout_files is not None:
        compare_tree(assignment, submission, handout_files, out)
    return out


STARTER_INCLUDES = ('#include "common/exercise.hpp"', '#include "common/exercise_device.cuh"')


def outside_text(path: str, text: str) -> str:
    """The text of a handout-shaped file without the inside of its STUDENT blocks."""
    lines, keep, inside = text.split("\n"), [], False
    for line in lines:
        if em.STUDENT_BEGIN in line:
            keep.append(line.strip().split(":")[0])  # the hint after the exercise name is free text
            inside = True
        elif em.STUDENT_END in line:
            keep.append(line.strip())
            inside = False
        elif not inside and line.strip() not in STARTER_INCLUDES and not line.startswith("COURSE_DEVICE_STUB_FILE("):
            keep.append(line.rstrip())  # the lines the starter bodies need are the handout's, not the student's
    while keep and not keep[-1]:
        keep.pop()
    return "\n".join(keep)


def compare_tree(
    assignment: Assignment, submission: str, handout_root_files: tuple[str, list[str]], out: Splice
) -> None:
    handout_root, files = handout_root_files
    have = set()
    for d, dirs, names in os.walk(submission):
        rel_d = os.path.relpath(d, submission)
        dirs[:] = [x for x in dirs if x not in IGNORED_DIRS and not (rel_d == "." and x in ("results", "images"))]
        for n in names:
            rel = os.path.normpath(os.path.join(rel_d, n))
            have.add(rel)
    for f in sorted(files):
        if f in assignment.files or not f.endswith(CODE_EXT) or f.startswith(IGNORED_PREFIX):
            continue
        p = os.path.join(submission, f)
        if f not in have:
            out.deleted.append(f)
        elif not same_file(p, os.path.join(handout_root, f)):
            out.edited_outside.append(f)
    for f in sorted(have - set(files)):
        if f.endswith(CODE_EXT) and not f.startswith(IGNORED_PREFIX):
            out.added.append(f)
    out.edited_outside.sort()


def same_file(a: str, b: str) -> bool:
    try:
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    except OSError:
        return False


def clean_tree(assignment: Assignment, spliced: dict, dest: str) -> None:
    """dest: the instructor's source folders (hard links where possible; never written through) with
    the spliced exercise files written in place of theirs."""
    if os.path.exists(dest):
        shutil.rmtree(dest)
    os.makedirs(dest)
    for d in SOURCE_DIRS:
        src = os.path.join(assignment.root, d)
        if os.path.isdir(src):
            shutil.copytree(
                src, os.path.join(dest, d), copy_function=link_or_copy, ignore=shutil.ignore_patterns("__pycache__")
            )
    for f in ("CMakeLists.txt", "CMakePresets.json"):
        if os.path.exists(os.path.join(assignment.root, f)):
            link_or_copy(os.path.join(assignment.root, f), os.path.join(dest, f))
    for f, text in spliced.items():
        p = os.path.join(dest, f)
        if os.path.exists(p):
            os.unlink(p)  # a hard link to the instructor's file: replace it, never write through it
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(text)


def link_or_copy(src: str, dst: str) -> str:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
    return dst
